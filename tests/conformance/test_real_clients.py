"""Real clients against the embedded coordinator: what a user of groupspec's conformance runs relies on.

Four short scenarios run once, concurrently (each with its own mock cluster, in its own thread), in a
module fixture; the tests then assert on what the clients wrote. Every consumer is a separate
process, stopped by the scenario's ``with`` block whatever happens (SIGTERM, then SIGKILL), and
every wait has a deadline. If a scenario fails, every test that reads it fails with its error and
the directory holding its traces and logs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conformance.drivers.process import owned_after, read_events
from conformance.drivers.scenario import GroupRun, RunConfig
from model.types import TopicPartition

pytestmark = pytest.mark.clients

ALL = {TopicPartition("orders", p) for p in range(6)}
SCENARIO_DEADLINE_S = 150


@dataclass
class Outcome:
    out_dir: Path
    stable: list[dict[str, set[TopicPartition]]] = field(default_factory=list)
    events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    marks: dict[str, int] = field(default_factory=dict)  # step -> wall-clock ms
    proxy: dict[str, Any] | None = None
    produced: dict[int, int] = field(default_factory=dict)  # partition -> end offset
    error: str | None = None

    def require(self) -> Outcome:
        if self.error is not None:
            pytest.fail(f"scenario failed: {self.error} (traces and logs in {self.out_dir})")
        return self


def _mark(outcome: Outcome, step: str) -> None:
    outcome.marks[step] = time.time_ns() // 1_000_000


def librdkafka_join_join_crash(run: GroupRun, outcome: Outcome) -> None:
    run.produce(2)
    run.join("m1")
    outcome.stable.append(run.wait_stable("m1 alone"))
    _mark(outcome, "m2_started")
    run.join("m2")
    outcome.stable.append(run.wait_stable("m1 and m2 sharing"))
    run.produce(2)
    run.wait_drained()
    _mark(outcome, "m2_killed")
    run.crash("m2")
    outcome.stable.append(run.wait_stable("m1 alone after m2's session expired"))


def three_then_one_leaves(run: GroupRun, outcome: Outcome) -> None:
    for member in ("p1", "p2", "p3"):
        run.join(member)
    outcome.stable.append(run.wait_stable("p1, p2, p3 sharing"))
    # Records only once the group is stable: a commit that fails because a member joined mid-poll is
    # not retried, and kafka-python >= 3.0 keeps its position across an eager rebalance (Java clears
    # it, ConsumerCoordinator.onJoinPrepare), so such records would never be committed
    # (docs/findings.md, kafka-python-eager-keeps-positions).
    run.produce(2)
    run.wait_drained()
    _mark(outcome, "p1_leaving")
    run.leave("p1")
    outcome.stable.append(run.wait_stable("p2 and p3 after p1 left"))
    run.produce(2)
    run.wait_drained()


def two_verifiable_consumers(run: GroupRun, outcome: Outcome) -> None:
    run.produce(2)
    run.join("v1")
    outcome.stable.append(run.wait_stable("v1 alone"))
    # The program commits on its next 1 s poll timeout and exits if that commit fails; the mock
    # refuses commits while a new member joins (test_mock_gaps), so let it commit first.
    run.wait_drained()
    run.join("v2")
    outcome.stable.append(run.wait_stable("v1 and v2 sharing"))
    run.produce(2)
    run.wait_drained()
    run.leave("v2")
    run.leave("v1")


SCENARIOS: dict[str, tuple[RunConfig, Callable[[GroupRun, Outcome], None]]] = {
    "librdkafka-eager": (RunConfig("confluent-kafka", "range"), librdkafka_join_join_crash),
    "librdkafka-cooperative": (RunConfig("confluent-kafka", "cooperative-sticky"), librdkafka_join_join_crash),
    "kafka-python": (RunConfig("kafka-python", "range", proxy=True), three_then_one_leaves),
    "aiokafka": (RunConfig("aiokafka", "range", proxy=True), three_then_one_leaves),
    "kafkatest": (RunConfig("kafkatest", "range"), two_verifiable_consumers),
}


def _run(name: str, base: Path, results: dict[str, Outcome]) -> None:
    config, scenario = SCENARIOS[name]
    outcome = Outcome(base / name)
    try:
        with GroupRun(config, outcome.out_dir) as run:
            try:
                scenario(run, outcome)
            finally:
                if run.proxy is not None:
                    outcome.proxy = dict(vars(run.proxy.stats))
                outcome.produced = dict(run.produced)
                members = dict(run.members)
        outcome.events = {m: read_events(p.config.events_path) for m, p in members.items()}
    except Exception as exc:
        outcome.error = f"{type(exc).__name__}: {exc}"
    results[name] = outcome


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    base = tmp_path_factory.mktemp("real-clients")
    results: dict[str, Outcome] = {}
    threads = [threading.Thread(target=_run, args=(name, base, results), name=name, daemon=True)
               for name in SCENARIOS]
    for t in threads:
        t.start()
    for t in threads:
        t.join(SCENARIO_DEADLINE_S)
    for name in SCENARIOS:
        results.setdefault(name, Outcome(base / name, error=f"did not finish within {SCENARIO_DEADLINE_S}s"))
    return results


def _named(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("name") == name]


def _tps(ev: dict[str, Any]) -> set[TopicPartition]:
    return {TopicPartition(p["topic"], p["partition"]) for p in ev.get("partitions", ())}


def _assert_split(owned: dict[str, set[TopicPartition]], members: set[str]) -> None:
    assert set(owned) == members
    union: set[TopicPartition] = set().union(*owned.values())
    assert union == ALL
    assert sum(len(s) for s in owned.values()) == len(ALL), f"a partition has two owners: {owned}"
    assert max(len(s) for s in owned.values()) - min(len(s) for s in owned.values()) <= 1


@pytest.mark.parametrize("name", ["librdkafka-eager", "librdkafka-cooperative"])
def test_librdkafka_members_split_six_partitions_without_overlap(outcomes: dict[str, Outcome], name: str) -> None:
    out = outcomes[name].require()
    assert out.stable[0] == {"m1": ALL}
    _assert_split(out.stable[1], {"m1", "m2"})
    # The traces agree with what the waits saw, and name the member ids and the generation.
    last = {m: _named(evs, "partitions_assigned")[-1] for m, evs in out.events.items() if m == "m2"}
    assert last["m2"]["member_id"] and last["m2"]["generation"] >= 2


def test_eager_member_revokes_everything_when_another_joins(outcomes: dict[str, Outcome]) -> None:
    out = outcomes["librdkafka-eager"].require()
    joined = out.marks["m2_started"]
    revokes = [e for e in _named(out.events["m1"], "partitions_revoked") if e["timestamp"] >= joined]
    assert revokes, "m1 revoked nothing after m2 joined"
    assert _tps(revokes[0]) == ALL
    assert all(e["protocol"] == "eager" for e in out.events["m1"] if "protocol" in e)


def test_cooperative_member_revokes_only_what_moves(outcomes: dict[str, Outcome]) -> None:
    out = outcomes["librdkafka-cooperative"].require()
    joined, killed = out.marks["m2_started"], out.marks["m2_killed"]
    m1_kept = out.stable[1]["m1"]
    moved = out.stable[1]["m2"]
    revoked: set[TopicPartition] = set()
    for ev in _named(out.events["m1"], "partitions_revoked"):
        if joined <= ev["timestamp"] < killed:
            revoked |= _tps(ev)
    assert revoked == moved, f"m1 revoked {sorted(revoked)}, but what moved to m2 was {sorted(moved)}"
    assert not revoked & m1_kept
    # m2 was given each partition only after m1 had let go of it (revoke before assign).
    revoke_time: dict[TopicPartition, int] = {}
    for ev in _named(out.events["m1"], "partitions_revoked"):
        for tp in _tps(ev):
            revoke_time.setdefault(tp, ev["timestamp"])  # the first revoke of each
    for ev in _named(out.events["m2"], "partitions_assigned"):
        for tp in _tps(ev):
            assert revoke_time[tp] <= ev["timestamp"], f"{tp} assigned to m2 before m1 revoked it"


@pytest.mark.parametrize("name", ["librdkafka-eager", "librdkafka-cooperative"])
def test_a_killed_member_is_a_zombie_until_its_session_expires(outcomes: dict[str, Outcome], name: str) -> None:
    out = outcomes[name].require()
    assert out.stable[2] == {"m1": ALL}
    m2 = out.events["m2"]
    assert not _named(m2, "shutdown_complete") and not _named(m2, "partitions_lost")
    assert owned_after(m2) == out.stable[1]["m2"], "the killed member's trace ends still owning its partitions"
    # m1 only took over m2's partitions after the kill, and kept consuming from them.
    taken = [e for e in _named(out.events["m1"], "partitions_assigned") if e["timestamp"] >= out.marks["m2_killed"]]
    assert taken and set().union(*(_tps(e) for e in taken)) >= out.stable[1]["m2"]


@pytest.mark.parametrize("name", ["kafka-python", "aiokafka"])
def test_python_clients_split_partitions_through_the_proxy(outcomes: dict[str, Outcome], name: str) -> None:
    out = outcomes[name].require()
    _assert_split(out.stable[0], {"p1", "p2", "p3"})
    _assert_split(out.stable[1], {"p2", "p3"})
    assert out.proxy is not None and out.proxy["leader_syncs_held"] >= 1
    logs = "".join((out.out_dir / f"{m}.log").read_text() for m in ("p1", "p2", "p3"))
    assert "InvalidRequestError" not in logs


@pytest.mark.parametrize("name", ["kafka-python", "aiokafka"])
def test_a_member_that_leaves_cleanly_says_so(outcomes: dict[str, Outcome], name: str) -> None:
    out = outcomes[name].require()
    p1 = out.events["p1"]
    assert p1[-1]["name"] == "shutdown_complete" and p1[-1]["failed"] is False
    assert owned_after(p1) == set()
    # Every produced record ends up committed. A commit may fail on the way, but only because a
    # rebalance was in progress: the mock refuses commits while members rejoin (test_mock_gaps).
    best: dict[int, int] = {}
    for member, events in out.events.items():
        for ev in _named(events, "offsets_committed"):
            if not ev["success"]:
                assert "rebalance" in ev["error"].lower(), f"{member}: {ev}"
                continue
            for o in ev["offsets"]:
                best[o["partition"]] = max(best.get(o["partition"], 0), o["offset"])
    assert best == out.produced


def test_kafkatest_verifiable_consumer_output(outcomes: dict[str, Outcome]) -> None:
    out = outcomes["kafkatest"].require()
    _assert_split(out.stable[1], {"v1", "v2"})
    for member in ("v1", "v2"):
        events = out.events[member]
        assert events and all("_time" in e and "timestamp" not in e for e in events)
        assert not _named(events, "startup_complete")  # the program does not print one
        assert _named(events, "records_consumed") and _named(events, "offsets_committed")
        assert events[-1]["name"] == "shutdown_complete" and events[-1]["failed"] is False
