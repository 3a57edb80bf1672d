"""The checker on real Apache Kafka 4.1.1 captures: each sample directory's expected verdict, and one test per
defect class the first real runs showed (issue 13), each on the capture that shows it.

The captures are in tests/traces/samples/kafka-4.1.1-extra/ (how they were made: its README.md) and, from
the broker harness, tests/traces/samples/kafka-4.1.1/; every directory with an ``expected.json`` is checked.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from groupspec.commands.check import check
from tests.traces.support import SAMPLES
from traces.checker import CheckConfig
from traces.detect import plan
from traces.schema import TraceInputError

EXTRA = SAMPLES / "kafka-4.1.1-extra"
EXPECTED = sorted(SAMPLES.rglob("expected.json"))


def _report(paths: list[Path], **config: Any) -> dict[str, Any]:
    return check([str(p) for p in paths], CheckConfig(**config))


def _counts(report: dict[str, Any]) -> dict[str, int]:
    return dict(report["finding_counts"])


def _unchecked(report: dict[str, Any], invariant: str) -> list[str]:
    return [u["reason"] for u in report["unchecked"] if u["invariant"] == invariant]


def _members(report: dict[str, Any]) -> dict[str, list[str]]:
    return {g: sorted(m["member"] for m in body["members"]) for g, body in report["groups"].items() if body["members"]}


def _copy(case: str, names: list[str], tmp_path: Path) -> Path:
    for name in names:
        shutil.copy(EXTRA / case / name, tmp_path / name)
    return tmp_path


def test_there_are_real_captures_with_a_verdict() -> None:
    assert len([p for p in EXPECTED if p.parent.parent.name == "kafka-4.1.1-extra"]) >= 7
    assert len([p for p in EXPECTED if p.parent.parent.name == "kafka-4.1.1"]) >= 12


@pytest.mark.parametrize("expected_file", EXPECTED, ids=[str(p.parent.relative_to(SAMPLES)) for p in EXPECTED])
def test_each_capture_gets_the_verdict_a_correct_checker_gives(expected_file: Path) -> None:
    """expected.json as docs/kafka-broker.md defines it: the overall verdict (``warning`` allowed when every
    warning is an allowed one); per invariant held / violation / unchecked / unchecked-or-held; no violation of an
    invariant it does not list. This directory's captures add the exact finding counts, the groups' members and
    the files that are not traces."""
    expected = json.loads(expected_file.read_text(encoding="utf-8"))
    report = _report([expected_file.parent], **expected.get("config", {}))
    severities: dict[str, set[str]] = {}
    for finding in report["findings"]:
        severities.setdefault(finding["invariant"], set()).add(finding["severity"])
    warned = {i for i, s in severities.items() if "warning" in s}
    violated = {i for i, s in severities.items() if "violation" in s}
    if expected["verdict"] == "held" and report["verdict"] == "warning":
        assert warned <= set(expected.get("allowed_warnings", [])), report["findings"]
    else:
        assert report["verdict"] == expected["verdict"], report["findings"]
    invariants = expected.get("invariants", {})
    for invariant, body in invariants.items():
        want = body["expected"]
        if want == "violation":
            assert invariant in violated, (invariant, report["findings"])
        else:
            assert invariant not in violated, (invariant, report["findings"])
        if want == "unchecked":
            assert _unchecked(report, invariant), (invariant, report["unchecked"])
    assert violated <= {i for i, b in invariants.items() if b["expected"] == "violation"}, report["findings"]
    if "findings" in expected:
        assert _counts(report) == expected["findings"], report["findings"]
    if "members" in expected:
        assert _members(report) == expected["members"]
    if "ignored" in expected:
        ignored = {Path(i["path"]).name for i in report["input"]["ignored_files"]} - {"expected.json"}
        assert ignored == set(expected["ignored"])


# ------------------------------------------------------------------ pairing a consumer's output with its own log


def test_a_static_member_output_and_its_own_log_are_one_member_of_its_group() -> None:
    """A lone JVM's client id (consumer-g-st2-inst-1) appears in one log only: it used to make a second member,
    the output's landing in group "default"."""
    report = _report([EXTRA / "vc-static-restart"])
    assert _members(report) == {"g-st2": ["verifiable_consumer"]}
    assert report["verdict"] == "held"


def test_with_group_the_static_member_is_still_one_member() -> None:
    """--group used to put both halves of the one consumer in g-st2: false single-owner violations."""
    report = _report([EXTRA / "vc-static-restart"], default_group="g-st2")
    assert _members(report) == {"g-st2": ["verifiable_consumer"]}
    assert report["verdict"] == "held", report["findings"]


def test_a_member_is_in_its_group_from_its_first_assignment(tmp_path: Path) -> None:
    """c1's first assignment and its log's first group line have the same millisecond; the output (a file of
    lower rank) came first and made the member in "default", where it stayed while it owned partitions."""
    trace = _copy("vc-consumer-protocol", ["c1.jsonl", "c1.log"], tmp_path)
    first = json.loads(next(line for line in (trace / "c1.jsonl").read_text().splitlines() if "partitions_assigned" in line))
    report = _report([trace])
    assert list(report["groups"]) == ["g-cp"]
    spans = report["groups"]["g-cp"]["timeline"]["cp1-0"]
    assert spans[0][0] == first["timestamp"] and spans[0][2] == "c1"


# ------------------------------------------------------------------ auto-commits VerifiableConsumer does not print


def test_a_start_at_an_unprinted_auto_commit_is_unchecked_not_a_gap() -> None:
    report = _report([EXTRA / "vc-mixed-autocommit"])
    assert "no-gap" not in _counts(report), report["findings"]
    [reason] = [r for r in _unchecked(report, "no-gap") if "auto-commit" in r]
    assert "--enable-autocommit" in reason


def test_a_start_beyond_every_position_is_still_a_gap(tmp_path: Path) -> None:
    """The bound that replaces the unseen commit: no commit passes what its committer consumed. A real capture
    whose new owner's first poll is moved past every offset anyone consumed must still be reported."""
    trace = _copy("vc-mixed-autocommit", ["c1.jsonl", "c2.jsonl"], tmp_path)
    lines = (trace / "c1.jsonl").read_text().splitlines()
    late = [i for i, line in enumerate(lines) if '"partition":0,"count"' in line and '"minOffset":250' in line]
    assert late, "the capture's restart of ma3-0 at offset 250"
    event = json.loads(lines[late[0]])
    part = event["partitions"][0]
    shift = 1000
    part["minOffset"] += shift
    part["maxOffset"] += shift
    lines[late[0]] = json.dumps(event)
    (trace / "c1.jsonl").write_text("\n".join(lines) + "\n")
    report = _report([trace])
    [finding] = [f for f in report["findings"] if f["invariant"] == "no-gap"]
    assert "1250" in finding["message"]


# ------------------------------------------------------------------ zombies and late revokers


def test_without_member_ids_a_removed_member_overlap_is_unchecked_not_a_violation(tmp_path: Path) -> None:
    """VerifiableConsumer output carries no member id: server.log's removal cannot be matched to c1."""
    trace = _copy("vc-stall-zombie", ["c1.jsonl", "c2.jsonl", "server.log"], tmp_path)
    report = _report([trace])
    assert "single-owner" not in _counts(report), report["findings"]
    [reason] = _unchecked(report, "single-owner")
    assert "no member id" in reason and "c1.log" in reason


def test_with_the_client_logs_the_zombie_is_named() -> None:
    report = _report([EXTRA / "vc-stall-zombie"])
    zombies = [f for f in report["findings"] if f["invariant"] == "zombie-overlap"]
    assert any("the coordinator had removed c1 (member id consumer-g-zs-1-" in f["message"] for f in zombies)
    assert not _unchecked(report, "single-owner")


def test_the_consumer_protocol_members_ids_come_from_its_epoch_lines() -> None:
    """AsyncKafkaConsumer logs no JoinGroup: its member id is in 'Member M with epoch E transitioned ...'."""
    report = _report([EXTRA / "vc-consumer-protocol"])
    ids = {m["member"]: m["member_id"] for m in report["groups"]["g-cp"]["members"]}
    assert all(ids.values()), ids
    fenced = [f for f in report["findings"] if f["invariant"] == "zombie-overlap"]
    assert fenced and all(f"member id {ids['c2']}, session-timeout" in f["message"] for f in fenced)


# ------------------------------------------------------------------ what is a trace


def test_a_readme_quoting_coordinator_lines_is_no_broker_log() -> None:
    for readme in sorted(EXTRA.glob("*/README.md")):
        assert "[GroupCoordinator" in readme.read_text()
        with pytest.raises(TraceInputError, match="cannot tell the format"):
            plan([str(readme)])


def test_a_verifiable_producer_output_is_no_consumer() -> None:
    producer = EXTRA / "vc-consumer-protocol" / "verifiable_producer.stdout"
    assert '"name":"startup_complete"' in producer.read_text()
    with pytest.raises(TraceInputError, match="cannot tell the format"):
        plan([str(producer)])


# ------------------------------------------------------------------ the broker's lines


def test_kafka_41_group_unload_and_load_are_read_as_the_coordinator_moving() -> None:
    from traces.readers.broker_log import read
    from traces.schema import InputStats, Source

    log = SAMPLES / "kafka-4.1.1" / "broker-restart" / "server.log"  # w13-broker's capture of the same case
    stats = InputStats()
    events = [e for *_rest, e in read(Source(0, log, str(log), "broker-log", "server"), stats)]
    moves = [(e["detail"], e["group"]) for e in events if e.get("detail") in ("loaded", "unloaded")]
    assert moves[:2] == [("unloaded", "broker-restart"), ("loaded", "broker-restart")]
    assert not stats.skipped, stats.examples


def test_converges_from_server_log_alone_says_what_it_cannot_know(tmp_path: Path) -> None:
    """server.log lists no generation's members: a run of rebalances past the bound is unchecked, with why."""
    from traces.checker import Checker
    from traces.merge import merged
    from traces.schema import InputStats

    log = _copy("vc-stall-zombie", ["server.log"], tmp_path) / "server.log"
    p = plan([str(log)])
    stats = InputStats()
    checker = Checker(p.sources, CheckConfig(default_protocol="eager"), stats, p.callback_members)
    checker.run(merged(p.sources, stats))
    gs = checker.groups["g-zs"]
    assert gs.coordinator and checker.opportunities["converges"] >= 5
    # what it can know: the rebalances and why; a membership change (a join, a removal) restarts the count
    assert gs.streak == 1


# ------------------------------------------------------------------ delivery


def test_the_delivery_section_counts_what_a_zombie_consumed_after_the_handoff() -> None:
    """c1 consumed zc1-1 offset 202 after c2 had started there; c2 read it too. The handoff used to be closed
    when c2 first polled, with c1's position then (202): 0 duplicates."""
    report = _report([EXTRA / "vc-zombie-consumes"])
    delivery = report["delivery"]
    assert delivery["duplicates_by_cause"] == {"zombie": 2}
    handoffs = {(h["from"], h["to"], h["partition"]): h for h in delivery["handoff_examples"]}
    c1_to_c2 = handoffs[("c1", "c2", 1)]
    assert (c1_to_c2["start"], c1_to_c2["previous_position"], c1_to_c2["duplicates"]) == (202, 203, 1)


def test_a_mixed_group_of_four_clients_is_read_whole() -> None:
    """Java, librdkafka, kafka-python 3.x and aiokafka against one 4.1.1 broker: every line read (kafka-python 3.x
    writes '... for group g-mix on close', which used to be an unparsed line), each log paired with its trace."""
    report = _report([EXTRA / "mixed-clients"])
    assert report["input"]["skipped"] == {}
    members = {s["member"] for s in report["input"]["sources"]}
    assert members == {"a1", "d1", "j1", "k1", "server"}


# ------------------------------------------------------------------ a commit the killed member's trace never showed

KILLED = "vc-bounce-killed-commit"
TRACES = ["m1.jsonl", "m1.2.jsonl", "m2.jsonl", "m2.2.jsonl", "m3.jsonl", "m3.2.jsonl"]


def test_the_broker_log_reads_the_commits_the_coordinator_took() -> None:
    from traces.readers.broker_log import message_of, parse_message

    line = next(ln for ln in (EXTRA / KILLED / "server.log").read_text().splitlines()
                if "Committing offsets 6 for partition" in ln and "orders-3" in ln)
    [event] = parse_message(message_of(line, line.index("]") + 1), {}) or [None]
    assert event == {"name": "coordinator_offset_commit", "group": "consumer-bounce",
                     "member_id": "m3-e36481e9-e626-40d4-9225-fbc429127364",
                     "offsets": [{"topic": "orders", "partition": 3, "offset": 6}]}


def test_a_member_killed_before_its_commit_line_is_judged_on_the_brokers_commits() -> None:
    """consumer-bounce --hard: m3 was killed after the coordinator took its commit of orders-3 offset 6 and before
    its driver wrote the line; its next process started at 6. With server.log: held, judged (no unchecked note)."""
    report = _report([EXTRA / KILLED])
    assert "no-gap" not in _counts(report), report["findings"]
    assert not [r for r in _unchecked(report, "no-gap") if "killed" in r]
    assert "no-gap" in report["checked"]


def test_without_server_log_a_start_at_the_killed_members_unseen_commit_is_unchecked(tmp_path: Path) -> None:
    report = _report([_copy(KILLED, TRACES, tmp_path)])
    assert "no-gap" not in _counts(report), report["findings"]
    [reason] = [r for r in _unchecked(report, "no-gap") if "killed" in r]
    assert "server.log" in reason


def test_a_start_past_the_brokers_committed_offset_is_still_a_gap(tmp_path: Path) -> None:
    """The same capture with the coordinator's line for m3's commit of 6 taken out: the broker's committed offset
    is then 4 and the restarted m3 skipped 4..5, which server.log proves."""
    trace = _copy(KILLED, TRACES, tmp_path)
    lines = (EXTRA / KILLED / "server.log").read_text().splitlines(keepends=True)
    kept = [ln for ln in lines if not ("Committing offsets 6 for partition" in ln and "orders-3" in ln)]
    assert len(kept) == len(lines) - 1
    (trace / "server.log").write_text("".join(kept))
    report = _report([trace])
    [finding] = [f for f in report["findings"] if f["invariant"] == "no-gap"]
    assert "broker's committed offset was 4" in finding["message"]
    assert any("server.log" in e for e in finding["evidence"])


def test_a_server_log_without_the_partitions_commits_does_not_decide_it(tmp_path: Path) -> None:
    """server.log with none of orders-3's commit lines (a slice that does not cover them): not the broker's word,
    so the killed owner's position bounds the start and it stays unchecked, as without server.log."""
    trace = _copy(KILLED, TRACES, tmp_path)
    lines = (EXTRA / KILLED / "server.log").read_text().splitlines(keepends=True)
    (trace / "server.log").write_text("".join(ln for ln in lines if not ("Committing offsets" in ln and "orders-3" in ln)))
    report = _report([trace])
    assert "no-gap" not in _counts(report), report["findings"]
    assert [r for r in _unchecked(report, "no-gap") if "killed" in r]
