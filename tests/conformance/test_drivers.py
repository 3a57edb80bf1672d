"""The drivers' pieces that do not need a group: trace folding, summaries, metadata, process teardown."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import confluent_kafka
import pytest

from conformance.drivers.common import EventWriter, parse_args, summarize
from conformance.drivers.confluent_kafka import generation_of
from conformance.drivers.process import DriverConfig, owned_after, read_events, shared_once
from conformance.drivers.scenario import GroupRun, RunConfig
from model.types import TopicPartition

TP = TopicPartition


def test_owned_after_folds_eager_and_cooperative_traces() -> None:
    def ev(name: str, *parts: int) -> dict[str, object]:
        return {"name": name, "partitions": [{"topic": "t", "partition": p} for p in parts]}

    eager = [ev("partitions_assigned", 0, 1, 2), ev("partitions_revoked", 0, 1, 2), ev("partitions_assigned", 0, 1)]
    assert owned_after(eager) == {TP("t", 0), TP("t", 1)}
    cooperative = [ev("partitions_assigned", 0, 1, 2), ev("partitions_revoked", 2), ev("partitions_assigned")]
    assert owned_after(cooperative) == {TP("t", 0), TP("t", 1)}
    assert owned_after([*cooperative, ev("partitions_lost", 0)]) == {TP("t", 1)}
    assert owned_after([*cooperative, {"name": "shutdown_complete"}]) == set()


def test_a_group_is_settled_when_every_partition_is_owned_exactly_once() -> None:
    full = {TP("t", 0), TP("t", 1), TP("t", 2)}
    split = {"a": {TP("t", 0), TP("t", 1)}, "b": {TP("t", 2)}}
    assert shared_once(split, full) == split
    assert shared_once({"a": {TP("t", 0), TP("t", 1)}, "b": {TP("t", 1), TP("t", 2)}}, full) is None  # twice
    assert shared_once({"a": {TP("t", 0)}, "b": {TP("t", 2)}}, full) is None  # t-1 unowned
    assert shared_once({"a": full, "b": set()}, full) == {"a": full, "b": set()}


def test_read_events_skips_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text('{"name":"startup_complete","timestamp":1}\n{"name":"partitions_ass')
    assert read_events(path) == [{"name": "startup_complete", "timestamp": 1}]
    assert read_events(tmp_path / "missing.jsonl") == []


def test_summaries_are_verifiable_consumer_shaped() -> None:
    summary = summarize([("t", 1, 5), ("t", 0, 3), ("t", 1, 4), ("t", 1, 9)])
    assert [s.to_json() for s in summary] == [
        {"topic": "t", "partition": 0, "count": 1, "minOffset": 3, "maxOffset": 3},
        {"topic": "t", "partition": 1, "count": 3, "minOffset": 4, "maxOffset": 9},
    ]


def test_event_writer_writes_one_flushed_line_per_event(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    out = EventWriter(str(path), member="c1", group="g", generation=None)
    out.write("partitions_assigned", partitions=[TP("t", 1), TP("t", 0)], generation=3)
    out.write("records_consumed", count=1, partitions=[{"topic": "t", "partition": 0, "count": 1}])
    lines = [json.loads(line) for line in path.read_text().splitlines()]  # flushed without close()
    out.close()
    assert lines[0]["partitions"] == [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]
    assert (lines[0]["member"], lines[0]["group"], lines[0]["generation"]) == ("c1", "g", 3)
    assert lines[1]["partitions"] == [{"topic": "t", "partition": 0, "count": 1}]
    assert all(isinstance(line["timestamp"], int) for line in lines)


@pytest.mark.clients
def test_generation_is_read_from_librdkafkas_group_metadata() -> None:
    consumer = confluent_kafka.Consumer({"group.id": "g", "bootstrap.servers": "127.0.0.1:9", "log_level": 0})
    try:
        unjoined = consumer.consumer_group_metadata()
    finally:
        consumer.close()
    assert generation_of(unjoined) == -1
    assert generation_of(b"CGMDv2:" + struct.pack("=i", 17) + b"g\x00m\x00\x01") == 17
    assert generation_of(b"something else") is None


def test_driver_arguments_are_validated() -> None:
    with pytest.raises(SystemExit):
        parse_args("d", ["--bootstrap", "x", "--group", "g", "--topic", "t", "--member", "m", "--events", "e",
                         "-X", "no-equals-sign"])
    args = parse_args("d", ["--bootstrap", "x", "--group", "g", "--topic", "t", "--topic", "u", "--member", "m",
                            "--events", "e", "-X", "a=b=c"])
    assert args.topics == ("t", "u") and args.client_option == (("a", "b=c"),)
    with pytest.raises(ValueError, match="unknown client"):
        DriverConfig("nope", "m", "g", ("t",), "x", Path("e"), Path("l")).argv()


@pytest.mark.clients
def test_members_are_killed_when_the_run_fails(tmp_path: Path) -> None:
    """A scenario that raises still ends every process it started (and the mock cluster)."""
    pids: list[int] = []
    with pytest.raises(RuntimeError, match="scenario failed"), GroupRun(RunConfig("confluent-kafka"), tmp_path) as run:
        pids += [run.join("c1").pid, run.join("c2").pid]
        raise RuntimeError("scenario failed")
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # reaped: no such process
    assert run.cluster is not None and not run.cluster.running
