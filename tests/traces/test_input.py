"""What the checker does with its input: bad lines counted by reason and located, --strict, detection."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.traces.support import SAMPLES, ev, findings, run, write_jsonl
from traces.detect import plan
from traces.schema import TraceInputError

GOOD = [ev("startup_complete", 0), ev("partitions_assigned", 10, parts=[0]), ev("shutdown_complete", 20)]


def _bad_file(tmp_path: Path) -> Path:
    path = tmp_path / "bad.jsonl"
    lines = [json.dumps(GOOD[0]).encode(),
             b"{not json",
             b"\x00\x01\x02 garbage",
             b"\xff\xfe\xfa not utf-8",
             json.dumps({"timestamp": 5, "name": "partitions_teleported"}).encode(),
             json.dumps({"timestamp": 5}).encode(),
             b"[1, 2]",
             json.dumps({"name": "startup_complete", "timestamp": "yesterday"}).encode(),
             json.dumps({"name": "partitions_assigned", "timestamp": 6, "partitions": "t-0"}).encode(),
             b"",
             json.dumps(GOOD[1]).encode(),
             json.dumps(GOOD[2]).encode(),
             b'{"timestamp": 30, "name": "records_consu']  # the last line, cut short: a killed writer
    path.write_bytes(b"\n".join(lines))
    return path


def test_bad_lines_are_counted_by_reason_with_their_location(tmp_path: Path) -> None:
    report = run(_bad_file(tmp_path))
    inp = report["input"]
    assert inp["skipped"] == {"bad-field": 1, "bad-timestamp": 1, "binary": 2, "invalid-json": 1,
                              "missing-name": 1, "not-an-object": 1, "truncated": 1, "unknown-event": 1}
    where = {e["where"].rsplit(":", 1)[1]: e["reason"] for e in inp["skipped_examples"]}
    assert where == {"2": "invalid-json", "3": "binary", "4": "binary", "5": "unknown-event", "6": "missing-name",
                     "7": "not-an-object", "8": "bad-timestamp", "9": "bad-field", "13": "truncated"}
    # the good lines: the bad-field line reached the checker, which refused it, and a refused line is no event
    assert inp["events"] == 3 == inp["sources"][0]["events"]
    assert report["verdict"] == "held"


def test_strict_makes_the_first_bad_line_an_error(tmp_path: Path) -> None:
    with pytest.raises(TraceInputError, match=r"bad\.jsonl:2: invalid-json"):
        run(_bad_file(tmp_path), strict=True)


def test_examples_are_capped_but_counts_are_not(tmp_path: Path) -> None:
    path = tmp_path / "noisy.jsonl"
    path.write_text(json.dumps(GOOD[0]) + "\n" + "oops\n" * 500 + "".join(json.dumps(e) + "\n" for e in GOOD[1:]))
    inp = run(path)["input"]
    assert inp["skipped"] == {"invalid-json": 500}
    assert len(inp["skipped_examples"]) == 20


def test_gzip_files_are_read(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        fh.writelines(json.dumps(e) + "\n" for e in GOOD)
    report = run(path)
    assert report["input"]["events"] == 3
    assert report["input"]["sources"][0]["member"] == "a"


# ------------------------------------------------------------------ detection


@pytest.mark.parametrize(("sample", "fmt"), [
    ("verifiable-consumer/consumer-1.json", "verifiable-consumer"),
    ("kafkatest/vc1.json", "kafkatest"),
    ("broker/server-scala-3.7.log", "broker-log"),
    ("kafka-4.1.1-extra/vc-cooperative-stall/server.log", "broker-log"),
    ("kafka-4.1.1-extra/vc-consumer-protocol/server.log", "broker-log"),
    ("kafka-4.1.1-extra/vc-consumer-protocol/c1.log", "java-consumer-log"),
    ("kafka-4.1.1-extra/vc-consumer-protocol/c1.jsonl", "verifiable-consumer"),
    ("kafka-4.1.1-extra/vc-cooperative-stall/c1.log", "java-consumer-log"),
    ("java-consumer/legacy-3.x.log", "java-consumer-log"),
    ("kafka-python/legacy-1.4.log", "kafka-python-log"),
    ("librdkafka/lost.log", "librdkafka-log"),
])
def test_each_sample_is_detected(sample: str, fmt: str) -> None:
    [source] = plan([str(SAMPLES / sample)]).sources
    assert source.format == fmt


def test_groupspec_jsonl_is_detected_by_its_context_fields(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [ev("startup_complete", 0, member="c1", group="g")])
    [source] = plan([str(path)]).sources
    assert source.format == "groupspec" and source.members == frozenset({"c1"})


def test_a_named_file_of_unknown_format_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\nworld\n")
    with pytest.raises(TraceInputError, match=r"notes\.txt: cannot tell the format \(first line: 'hello'\)"):
        plan([str(path)])


def test_a_directory_skips_what_is_not_a_trace(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "c1.jsonl", GOOD)
    (tmp_path / "README.md").write_text("# captured on Tuesday\n")
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / ".hidden.jsonl").write_text("garbage\n")
    p = plan([str(tmp_path)])
    assert [s.member for s in p.sources] == ["c1"]
    assert {i["path"].rsplit("/", 1)[1]: i["why"] for i in p.ignored} == {
        "README.md": "not a trace format groupspec reads", "empty.jsonl": "empty"}


def test_missing_paths_and_empty_sets_are_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceInputError, match="no such file or directory"):
        plan([str(tmp_path / "nope.jsonl")])
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(TraceInputError, match="no trace files"):
        plan([str(tmp_path)])


def test_format_can_be_forced(tmp_path: Path) -> None:
    path = tmp_path / "mostly-garbage.log"
    path.write_text("x\ny\n" + json.dumps(GOOD[0]) + "\n")
    with pytest.raises(TraceInputError):
        plan([str(path)])
    [source] = plan([str(path)], forced="verifiable-consumer").sources
    assert source.format == "verifiable-consumer"
    report = run(path, fmt="verifiable-consumer")
    assert report["input"]["skipped"] == {"invalid-json": 2}


def test_same_file_names_in_two_directories_are_two_members(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "run1" / "consumer.json", GOOD)
    write_jsonl(tmp_path / "run2" / "consumer.json", [ev("startup_complete", 0), ev("partitions_assigned", 15, parts=[0])])
    report = run([tmp_path / "run1", tmp_path / "run2"], merge_runs=True)
    members = {m["member"] for m in report["groups"]["default"]["members"]}
    assert members == {str(tmp_path / "run1" / "consumer"), str(tmp_path / "run2" / "consumer")}
    assert [f["invariant"] for f in findings(report)] == ["single-owner"]


def test_repeated_client_ids_across_logs_name_members_by_file(tmp_path: Path) -> None:
    """Every JVM calls its first consumer consumer-<group>-1: the files are the members then."""
    logs = SAMPLES / "kafka-4.1.1-extra" / "vc-cooperative-stall"
    p = plan([str(logs / "c1.log"), str(logs / "c2.log")])
    assert [(s.member, s.named_by_file) for s in p.sources] == [("c1", True), ("c2", True)]
    alone = plan([str(logs / "c1.log")]).sources[0]
    assert alone.member_name("consumer-g-cs-1") == "consumer-g-cs-1"


@pytest.mark.parametrize("last", [
    ev("partitions_revoked", 99, partitions="t-0"),
    ev("records_consumed", 99, count=1, auto_offset_reset="smallest",
       partitions=[{"topic": "t", "partition": 0, "count": 1, "minOffset": 0, "maxOffset": 0}]),
    ev("coordinator_stable", 99, group="g", generation=1, members="a"),
], ids=["ownership", "poll-context", "coordinator"])
def test_the_time_window_is_that_of_the_events_used(last: dict[str, object], tmp_path: Path) -> None:
    """A line the checker refuses is no event (docs/check.md, "Input that cannot be used"): a trace whose first and
    last lines are refused reports the times of its first and last events used, not theirs."""
    events = [ev("partitions_assigned", 5, partitions="t-0"), ev("startup_complete", 10),
              ev("partitions_assigned", 15, parts=[0]), ev("shutdown_complete", 20), last]
    inp = run(write_jsonl(tmp_path / "a.jsonl", events))["input"]
    assert inp["skipped"] == {"bad-field": 2} and inp["events"] == 3
    assert (inp["first_timestamp"], inp["last_timestamp"]) == (10, 20)
