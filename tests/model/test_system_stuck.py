"""Stuck or thrashing groups (issue 17): ``rebalance-within-timeout``, ``live-member-kept`` and
``settled-group-reads`` fire on the runs a person would call stuck, and stay quiet on the correct
ones -- every example of examples/ (the golden set checks all their seeds and the seeded walks)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from model import consumption as cs
from model import events as ev
from model.invariants import CATALOGUE
from model.invariants.protocol import (
    LIVE_MEMBER_KEPT,
    REBALANCE_WITHIN_TIMEOUT,
    SETTLED_GROUP_READS,
    all_alive,
    rebalance_deadline,
)
from model.scenario import parse
from tests.model.test_system_support import join, run_doc, scenario

ROOT = Path(__file__).resolve().parents[2]
NEW = (REBALANCE_WITHIN_TIMEOUT, LIVE_MEMBER_KEPT, SETTLED_GROUP_READS)
STUCK_EXAMPLES = ("scenario-scale-out-kicks-stable.json", "scenario-rebalance-thrash.json")
RANGE = ["range"]


def example(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((ROOT / "examples" / name).read_text(encoding="utf-8"))
    return doc


def found(doc: dict[str, Any], invariant: str, seed: int = 0) -> list[Any]:
    return [v for v in run_doc(doc, seed=seed).failed() if v.invariant == invariant]


def test_the_new_ids_are_in_the_catalogue() -> None:
    for inv in NEW:
        assert inv in CATALOGUE and CATALOGUE[inv].statement


def test_a_scale_out_that_kicks_a_stable_member_out_fails_live_member_kept() -> None:
    doc = example("scenario-scale-out-kicks-stable.json")
    out = run_doc(doc)
    kicked = [v for v in out.failed() if v.invariant == LIVE_MEMBER_KEPT]
    assert [(v.members, v.time) for v in kicked] == [(("a",), 24000)]
    removed = out.named(ev.COORDINATOR_MEMBER_REMOVED)
    assert [(e["member_id"], e["reason"]) for e in removed] == [("a-2", "rebalance-timeout")]
    # a was stalled (busy between polls) but alive: it is not a stuck rebalance, and nothing else fails
    assert {v.invariant for v in out.failed()} == {LIVE_MEMBER_KEPT}


def test_the_same_scale_out_with_javas_rebalance_timeout_keeps_everyone() -> None:
    """The Java consumer's rebalance timeout is max.poll.interval.ms: the stalled member rejoins in time."""
    doc = example("scenario-scale-out-kicks-stable.json")
    config = {k: v for k, v in doc["config"].items() if k != "rebalance_timeout_ms"}
    out = run_doc({**doc, "config": config})
    assert out.failed() == []
    assert out.named(ev.COORDINATOR_MEMBER_REMOVED) == []


def test_a_stall_past_max_poll_is_a_leave_not_a_kick() -> None:
    out = run_doc(example("scenario-stall-past-max-poll.json"))
    assert [v for v in out.failed() if v.invariant in NEW] == []


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_a_group_thrashing_under_a_rebalance_timeout_below_the_heartbeat_interval_fails(seed: int) -> None:
    doc = example("scenario-rebalance-thrash.json")
    stuck = found(doc, REBALANCE_WITHIN_TIMEOUT, seed)
    assert stuck, "the group never settles after c joins, with every member alive"
    bound = rebalance_deadline(parse(doc).config)
    assert all(f"within {bound} ms" in v.message for v in stuck)
    assert found(doc, LIVE_MEMBER_KEPT, seed)


def test_the_same_group_with_a_rebalance_timeout_above_the_heartbeat_interval_settles() -> None:
    doc = example("scenario-rebalance-thrash.json")
    out = run_doc({**doc, "config": {**doc["config"], "rebalance_timeout_ms": 8000}})
    assert [v for v in out.failed() if v.invariant in NEW] == []


def test_a_crashed_member_is_not_alive_and_the_wait_for_its_session_is_not_stuck() -> None:
    steps = [join(0, "a", ["t"], RANGE), join(0, "b", ["t"], RANGE), {"at": 20000, "do": "crash", "member": "b"}]
    out = run_doc(scenario({"t": 4}, steps, 60000, rebalance_timeout_ms=6000, max_poll_interval_ms=6000),
                  keep_transitions=True)
    assert [v for v in out.failed() if v.invariant in NEW] == []
    assert any(not all_alive(after) for _, _, after, _ in out.transitions if after.now > 20000)


def test_a_member_busy_since_just_after_the_rebalance_began_may_be_removed() -> None:
    """Seeded walk 38: c polls 4 s after a rebalance began (before a heartbeat told it), then stalls 25 s
    with a 20 s poll interval; the join key removes it at 191 s, 16 s after its last poll. Kafka does the
    same: its next poll would come after the key fired. Not a live-member-kept violation."""
    from tests.model.test_stateful_walks import walk
    monitor, seen = walk(38, ("range",))
    assert seen[ev.COORDINATOR_MEMBER_REMOVED] > 0
    assert [v for v in monitor.failed() if v.invariant in NEW] == []


def test_every_correct_example_stays_quiet() -> None:
    for path in sorted((ROOT / "examples").glob("scenario-*.json")):
        if path.name in STUCK_EXAMPLES:
            continue
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert [v for v in run_doc(doc).failed() if v.invariant in NEW] == [], path.name


def test_a_member_that_stops_reading_its_partitions_fails_settled_group_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hand-made bug, not a registered mutant: the fetch skips one partition for good."""
    doc = example("scenario-delivery-commit-on-revoke.json")
    doc = {**doc, "config": {**doc["config"], "max_poll_interval_ms": 10000}, "until": 80000}
    assert found(doc, SETTLED_GROUP_READS) == []
    real = cs.log_ends

    def hide_orders_0(log: cs.Log) -> dict[Any, int]:
        ends = dict(real(log))
        for tp in ends:
            if tp.topic == "orders" and tp.partition == 0:
                ends[tp] = 0  # the consumer never sees records on orders-0
        return ends

    monkeypatch.setattr(cs, "log_ends", hide_orders_0)
    monkeypatch.setattr(cs, "log_end", lambda log, tp: hide_orders_0(log).get(tp, 0))
    lagging = found(doc, SETTLED_GROUP_READS)
    assert lagging and {tp.partition for v in lagging for tp in v.partitions} == {0}


def test_the_monitor_names_the_new_invariants_as_checked() -> None:
    from model.invariants.protocol import Monitor
    config = parse(example("scenario-brief.json")).config
    assert set(NEW) <= set(Monitor(replace(config)).checked)
