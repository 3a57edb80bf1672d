"""Seeded random walks through the whole system, invariants checked at every step.

The hypothesis machine (test_stateful.py) shrinks a failure to a small program; these walks are
its wide, deterministic complement: long runs (hundreds of actions, faults mixed in) with every
assignor configuration, replayable by seed. The correct model may only show warnings
(zombie-overlap) and the violations Kafka itself commits (``known_kafka_gap``); the walks must also
really rebalance, or they would prove nothing.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from model import events as ev
from model import system as sy
from model.classic import coordinator as co
from model.invariants.protocol import Monitor

ASSIGNOR_LISTS = (("range",), ("roundrobin",), ("sticky",), ("cooperative-sticky",), ("cooperative-sticky", "range"))
NAMES = ("a", "b", "c")
TOPICS = ("t", "u")


def fault(rng: random.Random, state: sy.SystemState, assignors: tuple[str, ...]) -> sy.Action:
    name = rng.choice(NAMES)
    kind = rng.randrange(7)
    topics = tuple(sorted(rng.sample(TOPICS, rng.randint(1, 2))))
    if kind == 0:
        return sy.MemberStarts(name, topics, assignors, f"{name}-i" if rng.random() < 0.5 else None)
    if kind == 1:
        return sy.MemberCrashes(name)
    if kind == 2:
        return sy.MemberRestarts(name)
    if kind == 3:
        return sy.MemberLeaves(name)
    if kind == 4:
        return sy.MemberStalls(name, rng.choice([1000, 15000, 25000]))
    if kind == 5:
        return sy.MemberSubscribes(name, topics)
    topic = rng.choice(TOPICS)
    return sy.PartitionsAdded(topic, dict(state.metadata).get(topic, 0) + rng.randint(1, 2))


def walk(seed: int, assignors: tuple[str, ...], mutants: frozenset[str] = frozenset(), steps: int = 400,
         fault_rate: float = 0.08, from_scratch: bool = False) -> tuple[Monitor, Counter[str]]:
    """``steps`` random enabled actions with faults mixed in, then the faults stop and the system runs
    on until it settles (or the convergence horizon passes). The same seed gives the same walk;
    ``from_scratch`` is the monitor's (:class:`Monitor`)."""
    monitor, seen, _ = walk_to_end(seed, assignors, mutants, steps, fault_rate, from_scratch)
    return monitor, seen


def walk_to_end(seed: int, assignors: tuple[str, ...], mutants: frozenset[str] = frozenset(), steps: int = 400,
                fault_rate: float = 0.08, from_scratch: bool = False) -> tuple[Monitor, Counter[str], sy.SystemState]:
    """:func:`walk`, also returning the state it ended in (the golden comparison digests it)."""
    rng = random.Random(seed)
    config = sy.SystemConfig(coordinator=co.CoordinatorConfig(initial_rebalance_delay_ms=rng.choice([0, 3000])),
                             session_timeout_ms=10000, rebalance_timeout_ms=20000, max_poll_interval_ms=20000,
                             heartbeat_interval_ms=3000, auto_commit=rng.random() < 0.7, mutants=mutants)
    state = sy.initial_state(config, [("t", 4), ("u", 2)])
    monitor = Monitor(config, from_scratch=from_scratch)
    seen: Counter[str] = Counter()

    def take(action: sy.Action) -> None:
        nonlocal state
        result = sy.step(state, action, config)
        if result is not None:
            after, events = result
            monitor.observe(state, action, after, events)
            seen.update(e["name"] for e in events)
            state = after

    for _ in range(steps):
        actions = sy.enabled(state)
        if not actions or rng.random() < fault_rate:
            take(fault(rng, state, assignors))
        else:
            take(rng.choice(actions))
    end = state.now + 2_000_000
    while state.now < end:
        actions = sy.enabled(state)
        if not actions:
            break
        take(rng.choice(actions))
    monitor.finish(state)
    return monitor, seen, state


@pytest.mark.parametrize("assignors", ASSIGNOR_LISTS, ids=lambda a: "+".join(a))
def test_random_walks_keep_every_invariant(assignors: tuple[str, ...]) -> None:
    seen: Counter[str] = Counter()
    for seed in range(12):
        monitor, events = walk(seed, assignors)
        seen += events
        unexpected = [v for v in monitor.failed() if v.known_kafka_gap is None]
        assert not unexpected, f"seed {seed}: " + "; ".join(f"{v.invariant} at {v.time}: {v.message}"
                                                            for v in unexpected[:3])
    # the walks did exercise the protocol
    assert seen[ev.COORDINATOR_REBALANCE] > 50 and seen[ev.PARTITIONS_ASSIGNED] > 50
    assert seen[ev.COORDINATOR_MEMBER_REMOVED] > 5 and seen[ev.PARTITIONS_REVOKED] > 5
