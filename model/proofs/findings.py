"""Findings: facts the proofs established that a reader of the catalogue must know.

A finding is not an obligation: it records where a catalogue predicate and the protocol part ways,
with a concrete run of the executable model that shows it, so the report can say exactly what is
proved instead (and the owners of the predicate can decide what the catalogue should say).

``static-member-stale-ownership``
    The catalogue's state form of ``single-owner`` (``model.invariants.protocol.single_owner``: no
    partition owned by two members the group still counts) fails on the *correct* model. A static
    member stalled past the rebalance timeout (but not past ``max.poll.interval.ms``) is kept by the
    coordinator -- static members are not removed at the rebalance timeout (KIP-345) -- while the next
    generation gives its partitions to another member: a zombie overlap, fenced by generation. If it
    then polls before a heartbeat or a commit tells it it is stale (no auto-commit), it rejoins with
    its old generation and is accepted into the next one still owning what was given away, and both
    are counted members until its SyncGroup answer makes it revoke. ``model.invariants.protocol``
    marks this as Kafka's own gap ``static-zombie-rejoin``; the symbolic proofs found the same
    overlap independently (``protocol-single-owner``'s tightness witness). What holds, and is proved
    for every number of consumers and partitions, is the per-generation form: the two owners always
    hold the partition from different generations' assignments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from model.invariants import protocol as pinv
from model.scenario import parse
from model.system_run import simulate

STALE_STATIC_SCENARIO: dict[str, Any] = {
    "topics": {"orders": 2},
    "config": {"session_timeout_ms": 10000, "rebalance_timeout_ms": 5000, "heartbeat_interval_ms": 3000,
               "initial_rebalance_delay_ms": 0, "max_poll_interval_ms": 60000, "enable_auto_commit": False},
    "steps": [
        {"at": 0, "do": "join", "member": "a", "assignors": ["cooperative-sticky"], "topics": ["orders"],
         "instance_id": "a1"},
        {"at": 1000, "do": "stall", "member": "a", "for_ms": 7500},
        {"at": 2000, "do": "join", "member": "b", "assignors": ["cooperative-sticky"], "topics": ["orders"]},
    ],
    "until": 20000,
}


def static_member_stale_ownership() -> dict[str, Any]:
    scenario = parse(STALE_STATIC_SCENARIO)
    monitor = pinv.Monitor(scenario.config)
    run = simulate(scenario, seed=1, observer=monitor.observe)
    violations = [v for v in monitor.violations if v.invariant == pinv.SINGLE_OWNER]
    first = violations[0] if violations else None
    events = [e for e in run.events if first is None or e["timestamp"] <= first.time]
    gap = f" (model.invariants.protocol marks it as Kafka's gap '{first.known_kafka_gap}')" \
        if first is not None and first.known_kafka_gap else ""
    return {
        "id": "static-member-stale-ownership",
        "invariant": "single-owner",
        "reproduced": first is not None,
        "statement": "model.invariants.protocol.single_owner (no partition owned by two members the group still "
                     "counts) does not hold in the correct model: "
                     + (f"{first.message} at {first.time} ms{gap}" if first else
                        "(not reproduced by this scenario on the current model)"),
        "explanation": "Static member a (no auto-commit) stalls for 7.5 s, longer than the 5 s rebalance timeout but "
                       "shorter than max.poll.interval.ms, while b joins. The coordinator completes the rebalance "
                       "without a and keeps it (static members are not removed at the rebalance timeout, KIP-345); "
                       "a's stored metadata claims nothing, so cooperative-sticky gives orders-1 to b at once: a "
                       "zombie overlap, fenced by generation. a then polls, rejoins with its old generation and is "
                       "accepted into generation 3 while it still owns orders-1, until its SyncGroup answer makes "
                       "it revoke. a holds orders-1 from generation 1, b from generation 2: the per-generation form "
                       "proved by protocol-single-owner holds throughout.",
        "counterexample": events,
        "scenario": STALE_STATIC_SCENARIO,
    }


def collect(obligation_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The findings relevant to the obligations that ran."""
    out: list[dict[str, Any]] = []
    if "protocol-single-owner" in obligation_ids:
        out.append(static_member_stale_ownership())
    return out
