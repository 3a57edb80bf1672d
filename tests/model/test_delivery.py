"""Records through the model: what a rebalance does to them, per the behaviour Kafka documents.

Each test runs a scenario with producers through the whole system (model.system_run), with the
invariant monitor on, and counts what happened to the records (model.records). The trace checker
must reach the same verdict on the same trace.
"""

from __future__ import annotations

from typing import Any

import pytest

from model import events as ev
from model import records as rec
from model import system as sy
from model.classic.coordinator.home import coordinator_partition
from model.scenario import ScenarioError, parse
from tests.model.test_system_support import Outcome, join, run_doc, scenario
from traces.report import check_events

RANGE = ["range"]
COOP = ["cooperative-sticky"]


def stream(every_ms: int = 500, records: int = 4, until: int = 60000) -> dict[str, Any]:
    return {"at": 0, "do": "produce", "topic": "t", "records": records, "every_ms": every_ms, "until": until}


def counts(out: Outcome) -> rec.PartitionRecords:
    return rec.totals(rec.summarize(out.events, out.final.log))


def agree(out: Outcome) -> set[str]:
    """The invariants the monitor found violated, after checking the trace checker finds the same."""
    model = {v.invariant for v in out.failed()}
    report = check_events(out.events, label="model")
    checker = {f["invariant"] for f in report["findings"] if f["severity"] == "violation"}
    assert model == checker, (model, checker)
    return model


def test_commit_sync_in_on_partitions_revoked_gives_a_clean_handoff_without_duplicates() -> None:
    doc = scenario({"t": 4}, [stream(), join(0, "a", ["t"], RANGE), join(8000, "b", ["t"], RANGE),
                              {"at": 30000, "do": "leave", "member": "a"}], 60000,
                   enable_auto_commit=False, commit="async", commit_on_revoke=True, auto_offset_reset="earliest")
    out = run_doc(doc)
    total = counts(out)
    assert total.produced == total.consumed == 4 * 4 * 121
    assert total.duplicated == 0 and total.skipped == 0
    assert len(out.named(ev.PARTITIONS_REVOKED, "a")) >= 2  # two handoffs happened
    assert agree(out) == set()


def test_without_a_commit_on_revoke_the_new_owner_reads_again_what_was_not_committed() -> None:
    doc = scenario({"t": 4}, [stream(), join(0, "a", ["t"], RANGE), join(8000, "b", ["t"], RANGE)], 30000,
                   enable_auto_commit=False, commit="none", auto_offset_reset="earliest")
    total = counts(run_doc(doc))
    assert total.duplicated > 0 and total.skipped == 0


def auto_commit_crash(interval: int) -> rec.PartitionRecords:
    doc = scenario({"t": 4}, [stream(every_ms=1000, records=10), join(0, "a", ["t"], COOP),
                              join(0, "b", ["t"], COOP), {"at": 25000, "do": "crash", "member": "a"}], 60000,
                   auto_commit_interval_ms=interval, auto_offset_reset="earliest")
    out = run_doc(doc)
    assert agree(out) == set()  # duplicates are allowed: at least once
    return counts(out)


def test_auto_commit_with_a_long_interval_reads_records_again_after_a_crash() -> None:
    long, short = auto_commit_crash(30000), auto_commit_crash(1000)
    assert long.skipped == short.skipped == 0
    # a's two partitions: everything since its last auto-commit (up to 30 s of 10 records a second each)
    assert long.duplicated >= 2 * 10 * 20
    assert short.duplicated < long.duplicated


@pytest.mark.parametrize("processing", ["async", "sync"])
def test_auto_commit_with_async_processing_loses_records_when_the_consumer_dies(processing: str) -> None:
    doc = scenario({"t": 2}, [stream(every_ms=1000, records=10), join(0, "a", ["t"], RANGE),
                              join(0, "b", ["t"], RANGE), {"at": 20000, "do": "crash", "member": "a"}], 45000,
                   auto_commit_interval_ms=1000, processing=processing, processing_ms=4000,
                   auto_offset_reset="earliest")
    out = run_doc(doc)
    total = counts(out)
    found = agree(out)
    if processing == "async":
        assert total.lost > 0
        assert "committed-not-ahead" in found
        assert all(v.known_kafka_gap == "auto-commit-async-processing" for v in out.failed())
    else:
        assert total.lost == 0 and found == set()


def new_group(reset: str) -> Outcome:
    steps = [{"at": 0, "do": "produce", "topic": "t", "records": 25}, join(1000, "a", ["t"], RANGE),
             {"at": 20000, "do": "produce", "topic": "t", "records": 5}]
    return run_doc(scenario({"t": 2}, steps, 30000, auto_offset_reset=reset))


def test_reset_earliest_on_a_new_group_reads_from_the_log_start() -> None:
    out = new_group("earliest")
    total = counts(out)
    assert total.consumed == 60 and total.before_start == 0
    first = out.named(ev.RECORDS_CONSUMED, "a")[0]
    assert {p["minOffset"] for p in first["partitions"]} == {0}


def test_reset_latest_on_a_new_group_starts_at_the_log_end() -> None:
    total = counts(new_group("latest"))
    assert total.before_start == 50 and total.consumed == 10 and total.lost == 0


def test_reset_none_on_a_new_group_fails_the_consumer() -> None:
    out = new_group("none")
    down = out.named(ev.SHUTDOWN_COMPLETE, "a")
    assert [e.get("error") for e in down] == ["NoOffsetForPartitionException"]
    assert counts(out).consumed == 0


def test_max_poll_records_bounds_each_poll() -> None:
    steps = [{"at": 0, "do": "produce", "topic": "t", "records": 400}, join(0, "a", ["t"], RANGE)]
    out = run_doc(scenario({"t": 2}, steps, 10000, max_poll_records=150, auto_offset_reset="earliest"))
    polls = out.named(ev.RECORDS_CONSUMED, "a")
    assert max(e["count"] for e in polls) == 150 and sum(e["count"] for e in polls) == 800
    assert agree(out) == set()


def failover(kind: dict[str, Any]) -> Outcome:
    steps = [stream(every_ms=1000), *(join(0, m, ["t"], COOP) for m in "abc"), {"at": 15000, **kind}]
    return run_doc(scenario({"t": 6}, steps, 45000, auto_offset_reset="earliest"))


@pytest.mark.parametrize("kind", [{"do": "move_coordinator"}, {"do": "fail_coordinator", "for_ms": 4000},
                                  {"do": "fail_coordinator", "for_ms": 25000}],
                         ids=["move", "fail-4s", "fail-past-session-timeout"])
def test_a_coordinator_failover_costs_no_rebalance_to_members_that_keep_heartbeating(kind: dict[str, Any]) -> None:
    out = failover(kind)
    stable = out.named(ev.COORDINATOR_STABLE)
    assert stable and all(e["timestamp"] < 15000 for e in stable)  # no generation after the failover
    assert not out.named(ev.PARTITIONS_LOST) and not out.named(ev.PARTITIONS_REVOKED, since=15000)
    assert not out.named(ev.COORDINATOR_REBALANCE, since=15000)
    loaded = [e for e in out.named(ev.COORDINATOR_STATE) if e.get("detail") == "loaded"]
    assert loaded and loaded[0]["generation"] == stable[-1]["generation"] and loaded[0]["state"] == "Stable"
    after = [e for e in out.named(ev.OFFSETS_COMMITTED, since=loaded[0]["timestamp"]) if e["success"]]
    assert {e["member"] for e in after} == {"a", "b", "c"}  # they found the new coordinator and commit to it
    total = counts(out)
    assert total.duplicated == 0 and total.skipped == 0
    assert agree(out) == set()
    assert out.final.home.leader != failover({"do": "stall", "member": "a", "for_ms": 1}).final.home.leader


def test_the_coordinator_is_the_leader_of_the_groups_offsets_partition() -> None:
    config = parse(scenario({"t": 1}, [], 0)).config
    home = sy.initial_state(config, [("t", 1)]).home
    assert home.partition == coordinator_partition("group", 50) == 47
    assert home.leader == 47 % config.brokers


@pytest.mark.parametrize(("config", "steps", "message"), [
    ({"commit": "sync"}, [], "config.commit: the application commits only with enable_auto_commit false"),
    ({"auto_offset_reset": "smallest"}, [], "config.auto_offset_reset: expected one of earliest, latest, none"),
    ({}, [{"at": 0, "do": "produce", "topic": "x", "records": 1}], "steps[0].topic: no topic x"),
    ({}, [{"at": 0, "do": "produce", "topic": "t", "records": 1, "partition": 3}],
     "steps[0].partition: topic t has 2 partitions here"),
    ({}, [{"at": 0, "do": "produce", "topic": "t", "records": 1, "every_ms": 10}],
     'steps[0].every_ms: a periodic producer needs an "until"'),
    ({}, [{"at": 0, "do": "fail_coordinator"}], 'steps[0]: "fail_coordinator" needs "for_ms"'),
])
def test_bad_delivery_settings_name_the_place(config: dict[str, Any], steps: list[dict[str, Any]], message: str) -> None:
    doc: dict[str, Any] = {"topics": {"t": 2}, "config": config, "steps": steps}
    with pytest.raises(ScenarioError) as err:
        parse(doc)
    assert str(err.value).startswith(message)


def test_a_scenario_without_records_models_group_membership_only() -> None:
    assert parse(scenario({"t": 1}, [join(0, "a", ["t"], RANGE)], 1000)).config.delivery is None
    produced = parse(scenario({"t": 1}, [{"at": 0, "do": "produce", "topic": "t", "records": 1}], 1000))
    assert produced.config.delivery is not None and produced.config.delivery.auto_offset_reset == "latest"


@pytest.mark.parametrize("kind", [{"do": "move_coordinator"}, {"do": "fail_coordinator", "for_ms": 2500}],
                         ids=["move", "fail"])
@pytest.mark.parametrize("assignors", [RANGE, COOP], ids=["eager", "cooperative"])
def test_a_failover_at_any_point_of_a_rebalance_ends_in_one_stable_group(kind: dict[str, Any],
                                                                         assignors: list[str]) -> None:
    """Whatever the coordinator was doing -- JoinGroups parked, a SyncGroup awaited, commits in flight --
    its members find the new one, rejoin if they must, and the group settles with every partition owned
    once (a parked JoinGroup answered by the broker's death must not leave its member waiting)."""
    for at in range(9000, 16000, 700):
        steps = [stream(every_ms=700, records=2, until=40000), join(0, "a", ["t"], assignors),
                 join(0, "b", ["t"], assignors),
                 *sorted([join(10000, "c", ["t"], assignors), {"at": at, **kind}], key=lambda s: int(s["at"]))]
        out = run_doc(scenario({"t": 6}, steps, 40000, auto_offset_reset="earliest"))
        assert agree(out) == set(), at  # the checker counts a load as a disturbance too
        members = sy.running(out.final)
        assert {m.generation.generation_id for m in members} == {out.final.group.generation}, at
        owned = [tp for m in members for tp in m.owned]
        assert sorted(owned) == sorted(set(owned)) and len(owned) == 6, at
        assert counts(out).skipped == 0, at
