"""Each reader on its samples: real captures where the program runs here (librdkafka, kafka-python,
kafkatest, Apache Kafka 4.1.1's broker and VerifiableConsumer in samples/kafka-4.1.1-extra), else samples
written from the format strings of the Apache Kafka source (the Scala coordinator, Kafka 3.x and cooperative
Java client logs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.traces.support import REAL, SAMPLES, findings, run
from traces.detect import plan
from traces.merge import merged
from traces.readers.logtime import java_tp_list, leading_timestamp, parse_zone, zone_text
from traces.schema import InputStats, TraceInputError


def read(*paths: Path) -> tuple[list[dict[str, Any]], InputStats]:
    p = plan([str(x) for x in paths], naive_offset_ms=0)
    stats = InputStats()
    return [item[4] for item in merged(p.sources, stats)], stats


def names(events: list[dict[str, Any]]) -> list[str]:
    return [e["name"] for e in events]


def parts(event: dict[str, Any]) -> list[tuple[str, int]]:
    return [(p["topic"], p["partition"]) for p in event.get("partitions", ())]


# ------------------------------------------------------------------ shared pieces


def test_log_timestamps() -> None:
    assert leading_timestamp("[2024-05-02 10:00:00,001] INFO x", 0) == (1714644000001, 25)
    assert leading_timestamp("2024-05-02 10:00:00,5 INFO", 0)[0] == 1714644000500  # type: ignore[index]
    assert leading_timestamp("2024-05-02T12:00:00.001+02:00 x", None)[0] == 1714644000001  # type: ignore[index]
    assert leading_timestamp("2024-05-02T10:00:00Z", 3_600_000)[0] == 1714644000000  # type: ignore[index]
    assert leading_timestamp("2024-05-02 11:00:00,000", 3_600_000)[0] == 1714644000000  # type: ignore[index]
    assert leading_timestamp("INFO no time here") is None
    assert parse_zone("UTC") == 0 and parse_zone("local") is None and parse_zone("-05:30") == -19_800_000
    # the text corpus --from records as its --log-timezone (input.json's read_with) reads back as the same zone
    for offset in (None, 0, -19_800_000, 7_200_000):
        assert parse_zone(zone_text(offset)) == offset
    with pytest.raises(ValueError):
        parse_zone("Mars/Olympus")


def test_java_partition_lists() -> None:
    assert java_tp_list("[orders-0, my-topic-12]") == [("orders", 0), ("my-topic", 12)]
    assert java_tp_list("orders-0, orders-1") == [("orders", 0), ("orders", 1)]
    assert java_tp_list("[]") == [] and java_tp_list("") == []
    with pytest.raises(ValueError):
        java_tp_list("[orders]")


# ------------------------------------------------------------------ JSON Lines


def test_verifiable_consumer_json() -> None:
    events, stats = read(SAMPLES / "verifiable-consumer" / "consumer-1.json")
    assert names(events)[:4] == ["startup_complete", "partitions_assigned", "records_consumed", "offsets_committed"]
    assert events[0]["timestamp"] == 1714644000000
    assert not stats.skipped


def test_kafkatest_time_is_read_in_the_given_zone() -> None:
    events, _ = read(SAMPLES / "kafkatest" / "vc1.json")
    assert events[0]["timestamp"] == 1767605400100  # 2026-01-05 09:30:00.100 read as UTC
    assert names(events) == ["partitions_assigned", "records_consumed", "offsets_committed", "partitions_revoked",
                             "shutdown_complete"]


def test_verifiable_consumer_trace_set_with_a_zombie() -> None:
    report = run([SAMPLES / "verifiable-consumer"])
    assert report["input"]["files"] == 2
    assert [f["invariant"] for f in findings(report)] == ["zombie-overlap", "zombie-overlap"]
    assert "generation-monotonic" in {u["invariant"] for u in report["unchecked"]}


# ------------------------------------------------------------------ broker server.log


def test_broker_log_scala_coordinator() -> None:
    events, stats = read(SAMPLES / "broker" / "server-scala-3.7.log")
    assert not stats.skipped
    rebalances = [e for e in events if e["name"] == "coordinator_rebalance"]
    assert [e["generation"] for e in rebalances] == [0, 1, 2, 3, 4, 5]
    assert rebalances[2]["reason"] == ("removing member consumer-orders-group-1-77c2e5a4-1b3c-4f1e-8d6a-0c9b8a7f6e02 "
                                       "on heartbeat expiration")
    stable = [e for e in events if e["name"] == "coordinator_stable"]
    assert [(e["generation"], e["member_count"], e["static_count"]) for e in stable] == \
        [(1, 1, 0), (2, 2, 0), (3, 1, 0), (4, 2, 1), (5, 1, 1)]
    removed = [(e["member_id"], e["reason"]) for e in events if e["name"] == "coordinator_member_removed"]
    assert removed == [
        ("consumer-orders-group-1-77c2e5a4-1b3c-4f1e-8d6a-0c9b8a7f6e02", "session-timeout"),
        ("billing-1-0f6a2e3b-9c7d-4a1b-8e5f-2d3c4b5a6978", "fenced"),
        ("consumer-orders-group-1-5e1a8c1e-6a0f-4d8e-9f52-2b8f2d1c1a01", "left"),
        ("consumer-orders-group-1-ghost", "rebalance-timeout"),
        ("billing-1-0f6a2e3b-9c7d-4a1b-8e5f-2d3c4b5a6978", "sync-timeout"),
    ]
    states = [(e.get("state"), e.get("detail")) for e in events if e["name"] == "coordinator_state"]
    assert ("Empty", None) in states and (None, "static-rejoin-without-rebalance") in states
    assert all(e["group"] == "orders-group" for e in events)


def test_broker_log_scala_coordinator_holds_its_invariants() -> None:
    report = run(SAMPLES / "broker" / "server-scala-3.7.log")
    assert findings(report) == []
    assert report["opportunities"]["static-rejoin"] == 1
    assert report["opportunities"]["converges"] == 6
    group = report["groups"]["orders-group"]
    assert group["rebalance_count"] == 6 and group["source"] == "coordinator"
    assert group["rebalances"][0]["reasons"][0].startswith("Adding new member consumer-orders-group-1-5e1a8c1e")


def test_broker_log_java_coordinator() -> None:
    """A real Kafka 4.1.1 server.log of a cooperative classic group (other groups' lines in it too)."""
    events, stats = read(SAMPLES / "kafka-4.1.1-extra" / "vc-cooperative-stall" / "server.log")
    assert not stats.skipped
    group = [e for e in events if e.get("group") == "g-cs"]
    assert names(group).count("coordinator_rebalance") == 9
    assert names(group).count("coordinator_stable") == 8
    left = [e for e in group if e["name"] == "coordinator_member_removed" and e["reason"] == "left"]
    assert len(left) == 4 and left[0]["client_reason"] == "the consumer is being closed"
    rebalances = [e for e in group if e["name"] == "coordinator_rebalance"]
    assert rebalances[2]["reason"].startswith("Leader consumer-g-cs-1-9897ff5a") and rebalances[2]["generation"] == 2
    follow_up = rebalances[4]  # the cooperative follow-up: a member rejoins to give up what it revoked
    assert follow_up["reason"].startswith("Updating metadata for member") and follow_up["generation"] == 4


def test_broker_log_kip848() -> None:
    """A real Kafka 4.1.1 server.log of a consumer-protocol group (GroupMetadataManager at DEBUG)."""
    log = SAMPLES / "kafka-4.1.1-extra" / "vc-consumer-protocol" / "server.log"
    events, stats = read(log)
    assert not stats.skipped
    epochs = [e["epoch"] for e in events if e["name"] == "coordinator_rebalance" and e["group"] == "g-cp"]
    assert epochs == [1, 2, 3, 4, 5, 6]
    assignments = [e for e in events if e.get("detail") == "member-assignment"]
    # c1 (G3r7Y9...) keeps partitions 0 and 1 and is asked to revoke 2 and 3 for c2 (KIP-848's incremental moves)
    shrink = assignments[3]
    assert shrink["member_id"] == "G3r7Y91gSOKPn3rRRBcA4g" and [p for _t, p in parts(shrink)] == [0, 1]
    assert [p["partition"] for p in shrink["pending_revocation"]] == [2, 3]
    removed = [e for e in events if e["name"] == "coordinator_member_removed"]
    assert [(e["member_id"], e["reason"]) for e in removed] == [("DelmzB7vQgCFlMZ4tm_9vQ", "left"),
                                                                ("RCqPZNkcQuyDQsuinx28tw", "session-timeout"),
                                                                ("G3r7Y91gSOKPn3rRRBcA4g", "left")]
    # The coordinator never gave a partition to a member while another still held it.
    report = run(log)
    assert findings(report) == [] and report["opportunities"]["single-owner"] >= 10
    [converges] = [u for u in report["unchecked"] if u["invariant"] == "converges"]
    assert converges["partial"] and "KIP-848" in converges["reason"]


def test_broker_log_line_that_starts_like_a_coordinator_message_but_does_not_parse(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text("[2024-05-02 10:00:00,001] INFO [GroupCoordinator 1]: Startup complete. "
                    "(kafka.coordinator.group.GroupCoordinator)\n"
                    "[2024-05-02 10:00:01,000] INFO [GroupCoordinator 1]: Preparing to rebalance group g in state "
                    "PreparingRebalance with old generation x (kafka.coordinator.group.GroupCoordinator)\n")
    with pytest.raises(TraceInputError, match=r"no event read: 1 line\(s\) skipped \(unparsed-log-line 1; first at "
                                              r".*server\.log:2\)"):
        run(path)  # nothing but that line: nothing was checked, which is no pass


# ------------------------------------------------------------------ Java consumer logs


COOPERATIVE = SAMPLES / "kafka-4.1.1-extra" / "vc-cooperative-stall"  # a real 4.1.1 cooperative-sticky group


def test_java_consumer_log_cooperative() -> None:
    events, stats = read(COOPERATIVE / "c1.log")
    assert not stats.skipped
    assert names(events)[:13] == ["group_joined", "group_synced", "group_synced", "partitions_assigned",
                                  "group_joined", "group_synced", "group_synced", "partitions_revoked",
                                  "partitions_assigned", "group_joined", "group_synced", "group_synced",
                                  "partitions_assigned"]
    assert names(events)[-1] == "shutdown_complete"
    joined = events[0]
    assert (joined["generation"], joined["member_id"], joined["assignor"], joined["member"]) == \
        (1, "consumer-g-cs-1-9897ff5a-09f6-4cd1-a07c-ca17d512d5c8", "cooperative-sticky", "consumer-g-cs-1")
    assert joined["reason"].startswith("need to re-join with the given member-id")
    assert joined["subscription"] == ["cs1"]
    block = events[2]  # the "Updating assignment with" block of generation 1
    assert block["protocol"] == "cooperative" and block["owned"] == []
    assert [(p["topic"], p["partition"]) for p in block["assignment"]] == [("cs1", p) for p in range(6)]
    assert parts(events[7]) == [("cs1", 3), ("cs1", 4), ("cs1", 5)]


def test_java_consumer_logs_with_the_broker_log() -> None:
    """Four JVMs' client logs (each client id consumer-g-cs-1) and the broker's log, without the outputs."""
    report = run([COOPERATIVE / f"c{n}.log" for n in range(1, 5)] + [COOPERATIVE / "server.log"])
    assert findings(report) == []
    for invariant in ("revoke-before-assign", "revoke-only-moved", "subscribed-only", "converges"):
        assert invariant in report["checked"], invariant
    members = {m["member"]: m for m in report["groups"]["g-cs"]["members"]}
    assert set(members) == {"c1", "c2", "c3", "c4"} and all(m["shutdown"] for m in members.values())
    assert [r["moved"] for r in report["groups"]["g-cs"]["rebalances"]][2] == 3


def test_java_consumer_log_older_format() -> None:
    events, _ = read(SAMPLES / "java-consumer" / "legacy-3.x.log")
    assert parts(events[2]) == [("clicks", 0), ("clicks", 1)]
    assert events[-1]["instance_id"] == "legacy-static-1" and parts(events[-1]) == [("clicks", 1)]


# ------------------------------------------------------------------ librdkafka


def test_librdkafka_lost_assignment() -> None:
    events, _ = read(SAMPLES / "librdkafka" / "lost.log")
    assert names(events) == ["group_joined", "partitions_assigned", "partitions_lost", "group_joined",
                             "partitions_assigned", "partitions_revoked", "shutdown_complete"]
    assert events[0]["protocol"] == "cooperative" and events[0]["member"] == "lr1"
    assert events[3]["reason"] == "heartbeat failed: Broker: Unknown member"
    assert events[3]["member_id"] == "lr1-77e2"


def _real(name: str) -> Path:
    path = REAL / name
    if not path.is_dir():
        pytest.skip(f"no real capture {name} (run python -m conformance.capture)")
    return path


def test_librdkafka_real_log_agrees_with_the_callback_trace() -> None:
    """The cgrp log alone says who owned what; it must match what the callbacks said."""
    directory = _real("confluent-kafka-range")
    for member in ("c1", "c3"):
        log_events, log_stats = read(directory / f"{member}.log")
        callback_events, _ = read(directory / f"{member}.jsonl")
        assert not log_stats.skipped
        log_owned: set[tuple[str, int]] = set()
        for e in log_events:
            if e["name"] == "partitions_assigned":
                log_owned |= set(parts(e))
            elif e["name"] in ("partitions_revoked", "partitions_lost"):
                log_owned -= set(parts(e))
        assigned_log = [sorted(parts(e)) for e in log_events if e["name"] == "partitions_assigned" and parts(e)]
        assigned_cb = [sorted(parts(e)) for e in callback_events if e["name"] == "partitions_assigned" and parts(e)]
        assert assigned_log == assigned_cb
        joined = [e["generation"] for e in log_events if e["name"] == "group_joined"]
        assert joined == sorted(joined) and joined


def test_librdkafka_mock_coordinator_log() -> None:
    events, _ = read(_real("confluent-kafka-range") / "mock-coordinator.log")
    kinds = set(names(events))
    assert {"coordinator_rebalance", "coordinator_stable", "coordinator_member_removed"} <= kinds
    reasons = {e["reason"] for e in events if e["name"] == "coordinator_rebalance"}
    assert "member join" in reasons
    removed = {e["reason"] for e in events if e["name"] == "coordinator_member_removed"}
    assert removed == {"left", "session-timeout"}


# ------------------------------------------------------------------ kafka-python


def test_kafka_python_real_log() -> None:
    directory = _real("kafka-python-range")
    events, stats = read(directory / "k2.log")
    assert not stats.skipped
    joined = [e for e in events if e["name"] == "group_joined"]
    assert joined and all(e["group"] == "orders-group" and e["assignor"] == "range" for e in joined)
    assigned = [e for e in events if e["name"] == "partitions_assigned"]
    assert assigned and all(e["subscription"] == ["orders"] for e in assigned)


def test_kafka_python_older_format() -> None:
    events, _ = read(SAMPLES / "kafka-python" / "legacy-1.4.log")
    assert names(events) == ["group_joined", "partitions_assigned", "partitions_revoked", "group_joined",
                             "partitions_assigned"]
    assert events[0]["generation"] == 12 and events[0]["subscription"] == ["clicks"]
    assert parts(events[1]) == [("clicks", 0), ("clicks", 1)]


# ------------------------------------------------------------------ the real captures, whole


@pytest.mark.parametrize("name", ["confluent-kafka-range", "confluent-kafka-cooperative-sticky",
                                  "kafka-python-range", "kafkatest-range", "aiokafka-range"])
def test_real_capture_has_no_violation_and_its_killed_member_is_a_zombie(name: str) -> None:
    directory = _real(name)
    report = run(directory, skew_ms=20)
    assert findings(report, severity="violation") == [], findings(report, severity="violation")
    zombie = findings(report, "zombie-overlap")
    assert zombie, "the member killed with SIGKILL overlaps its successor until its session expires"
    killed = {"confluent-kafka-range": "c2", "confluent-kafka-cooperative-sticky": "c2", "kafka-python-range": "k2",
              "kafkatest-range": "v2", "aiokafka-range": "a2"}[name]
    assert {f["members"][0] for f in zombie} == {killed}  # the second member is the one killed
    assert report["input"]["skipped"] == {}
    assert "converges" in report["checked"]  # the mock coordinator's log gives the coordinator's view
