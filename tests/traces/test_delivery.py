"""Offsets and delivery in `groupspec check`: no-gap, monotonic-consumption, commit-owned-only,
committed-not-ahead, and the measure handoff-duplicates, each held and broken on hand-made traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.traces.support import (
    REAL,
    committed,
    consumed,
    ev,
    findings,
    partitions_of,
    run,
    run_events,
    unchecked,
    write_jsonl,
)
from traces.report import check_events


def start(ts: int = 0, **fields: object) -> dict[str, object]:
    return ev("startup_complete", ts, **fields)


def assigned(ts: int, *parts: int, **fields: object) -> dict[str, object]:
    return ev("partitions_assigned", ts, parts=list(parts), **fields)


def revoked(ts: int, *parts: int, **fields: object) -> dict[str, object]:
    return ev("partitions_revoked", ts, parts=list(parts), **fields)


def stop(ts: int) -> dict[str, object]:
    return ev("shutdown_complete", ts)


def delivery(report: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = report["delivery"]
    return result


# ------------------------------------------------------------------ monotonic-consumption


def test_consecutive_polls_hold(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(), assigned(10, 0), consumed(20, 0, 0, 4), consumed(30, 0, 5, 9), committed(31, 0, 10),
              consumed(40, 0, 10, 19), committed(41, 0, 20), revoked(50, 0), stop(51)],
    })
    assert findings(report) == []
    assert report["opportunities"]["monotonic-consumption"] == 3
    assert "monotonic-consumption" in report["checked"]


def test_a_skip_within_one_ownership_is_a_violation(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(), assigned(10, 0), consumed(20, 0, 0, 4), consumed(30, 0, 8, 9), stop(40)],
    })
    [finding] = findings(report, "monotonic-consumption")
    assert finding["members"] == ["a"] and partitions_of(finding) == [("t", 0)]
    assert "5..7" in finding["message"] and "skipped" in finding["message"]
    assert finding["evidence"] == [f"{tmp_path / 'a.jsonl'}:4"]
    assert report["verdict"] == "violation"


def test_going_back_within_one_ownership_is_a_violation(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(), assigned(10, 0), consumed(20, 0, 0, 9), consumed(30, 0, 5, 12), stop(40)],
    })
    [finding] = findings(report, "monotonic-consumption")
    assert "went back" in finding["message"] and "5..12" in finding["message"]


def test_gap_slack_tolerates_transaction_markers(tmp_path: Path) -> None:
    events = {"a": [start(), assigned(10, 0), consumed(20, 0, 0, 4), consumed(30, 0, 6, 9), stop(40)]}
    assert findings(run_events(tmp_path / "slack", events, gap_slack=1)) == []
    assert len(findings(run_events(tmp_path / "strict", events), "monotonic-consumption")) == 1


def test_a_new_ownership_starts_over(tmp_path: Path) -> None:
    # Revoked and assigned again: the new ownership starts at the committed offset, not where it left off.
    report = run_events(tmp_path, {
        "a": [start(), assigned(10, 0), consumed(20, 0, 0, 9), committed(21, 0, 5), revoked(30, 0),
              assigned(40, 0), consumed(50, 0, 5, 14), committed(51, 0, 15), stop(60)],
    })
    assert findings(report, severity="violation") == []


def test_a_cooperative_member_keeps_its_position_across_generations(tmp_path: Path) -> None:
    coop = {"protocol": "cooperative"}
    report = run_events(tmp_path, {
        "a": [start(**coop), assigned(10, 0, 1, generation=1, **coop), consumed(20, 0, 0, 4, generation=1),
              revoked(30, 1, generation=2, **coop), assigned(31, generation=2, **coop),
              consumed(40, 0, 2, 9, generation=2), stop(50)],
    })
    [finding] = findings(report, "monotonic-consumption")  # partition 0 was kept: 2 is going back
    assert partitions_of(finding) == [("t", 0)]


# ------------------------------------------------------------------ commit-owned-only


def test_committing_a_partition_never_owned_is_commit_owned_only(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(), assigned(10, 0), consumed(20, 0, 0, 4), committed(21, 0, 5), committed(22, 1, 7), stop(30)],
    })
    [finding] = findings(report, "commit-owned-only")
    assert partitions_of(finding) == [("t", 1)] and "committed" in finding["message"]
    assert findings(report, "consume-owned-only") == []


def test_consuming_unowned_stays_consume_owned_only(tmp_path: Path) -> None:
    report = run_events(tmp_path, {"a": [start(), assigned(10, 0), consumed(20, 1, 0, 4), stop(30)]})
    assert len(findings(report, "consume-owned-only")) == 1
    assert findings(report, "commit-owned-only") == []


def test_commits_of_owned_partitions_hold(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(), assigned(10, 0, 1), consumed(20, 0, 0, 4), consumed(21, 1, 0, 2),
              ev("offsets_committed", 22, success=True, offsets=[{"topic": "t", "partition": 0, "offset": 5},
                                                                 {"topic": "t", "partition": 1, "offset": 3}]),
              stop(30)],
    })
    assert findings(report) == []
    assert report["opportunities"]["commit-owned-only"] == 2


# ------------------------------------------------------------------ committed-not-ahead


def test_committing_beyond_what_was_consumed_is_a_violation(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(), assigned(10, 0), consumed(20, 0, 0, 9), committed(21, 0, 15), stop(30)],
    })
    [finding] = findings(report, "committed-not-ahead")
    assert finding["members"] == ["a"] and "offset 15" in finding["message"] and "10..14" in finding["message"]
    assert report["verdict"] == "violation"


def test_committing_the_position_or_less_holds(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(), assigned(10, 0), consumed(20, 0, 0, 9), committed(21, 0, 10), committed(22, 0, 4),
              stop(30)],
    })
    assert findings(report) == []
    assert report["opportunities"]["committed-not-ahead"] == 2


def test_committing_ahead_of_the_committed_offset_without_consuming_is_a_violation(tmp_path: Path) -> None:
    first = [start(), assigned(10, 0), consumed(20, 0, 0, 9), committed(21, 0, 10), revoked(30, 0), stop(31)]
    ahead = run_events(tmp_path / "ahead", {"a": first, "b": [start(), assigned(40, 0), committed(50, 0, 12), stop(60)]})
    [finding] = findings(ahead, "committed-not-ahead")
    assert finding["members"] == ["b"] and "committed offset 10" in finding["message"]
    same = run_events(tmp_path / "same", {"a": first, "b": [start(), assigned(40, 0), committed(50, 0, 10), stop(60)]})
    assert findings(same) == []


def test_a_commit_with_no_committed_offset_known_is_not_judged(tmp_path: Path) -> None:
    # auto.offset.reset=latest puts the position at the log end: committing it without consuming is fine.
    report = run_events(tmp_path, {"a": [start(), assigned(10, 0), committed(20, 0, 40), stop(30)]})
    assert findings(report) == []
    note = unchecked(report)["committed-not-ahead"]
    assert note["partial"] and "1 commit(s)" in note["reason"]


# ------------------------------------------------------------------ no-gap and the reset policy


def _second_owner(first_offset: int, **fields: object) -> list[dict[str, object]]:
    return [start(**fields), assigned(10, 0), consumed(20, 0, first_offset, first_offset + 4), stop(30)]


def test_starting_at_zero_without_a_committed_offset_holds_whatever_the_policy(tmp_path: Path) -> None:
    report = run_events(tmp_path, {"a": _second_owner(0)})
    assert findings(report) == []
    assert report["opportunities"]["no-gap"] == 1
    assert "no-gap" not in unchecked(report)


def test_reset_earliest_from_the_trace_makes_a_late_start_a_gap(tmp_path: Path) -> None:
    report = run_events(tmp_path, {"a": _second_owner(5, auto_offset_reset="earliest")})
    [finding] = findings(report, "no-gap")
    assert "auto.offset.reset=earliest" in finding["message"] and "0..4" in finding["message"]
    assert "assuming the log starts at offset 0" in unchecked(report)["no-gap"]["reason"]


def test_reset_earliest_from_the_configuration(tmp_path: Path) -> None:
    report = run_events(tmp_path, {"a": _second_owner(5)}, auto_offset_reset="earliest")
    assert len(findings(report, "no-gap")) == 1


@pytest.mark.parametrize("policy", ["latest", "none", None])
def test_reset_latest_none_or_unknown_is_not_judged_and_says_so(tmp_path: Path, policy: str | None) -> None:
    fields = {"auto_offset_reset": policy} if policy else {}
    report = run_events(tmp_path, {"a": _second_owner(5, **fields)})
    assert findings(report) == []
    note = unchecked(report)["no-gap"]
    assert note["partial"] and f"1 under {policy or 'unknown'}" in note["reason"]


def test_a_bad_reset_policy_is_a_bad_field(tmp_path: Path) -> None:
    report = run_events(tmp_path, {"a": _second_owner(0, auto_offset_reset="sometimes")})
    assert report["input"]["skipped"] == {"bad-field": 1}
    assert "auto_offset_reset" in report["input"]["skipped_examples"][0]["detail"]


def test_a_line_with_a_bad_setting_is_refused_whole(tmp_path: Path) -> None:
    """A restart naming enable_auto_commit as a string is one bad-field line and nothing else (docs/check.md, "Input
    that cannot be used"): it does not end the process or clear what it owns first, so the poll of 7..9 after it is a
    skip from position 5 (monotonic-consumption), not a poll of a partition the member no longer owns."""
    events = [start(), assigned(10, 0), consumed(20, 0, 0, 4), start(30, enable_auto_commit="true"),
              consumed(40, 0, 7, 9), stop(50)]
    report = run_events(tmp_path, {"a": events})
    assert report["input"]["skipped"] == {"bad-field": 1}
    assert [f["invariant"] for f in findings(report)] == ["monotonic-consumption"]


def test_a_bad_setting_on_a_poll_the_hot_path_would_take_is_refused(tmp_path: Path) -> None:
    """The hot path (Checker.run) sends a poll naming a setting to the general path, which refuses a bad one: the
    next poll then skips 5..9."""
    events = [start(), assigned(10, 0), consumed(20, 0, 0, 4), consumed(21, 0, 5, 9, auto_commit_interval_ms=-1),
              consumed(22, 0, 10, 12), stop(40)]
    report = run_events(tmp_path, {"a": events})
    assert report["input"]["skipped"] == {"bad-field": 1}
    assert [f["invariant"] for f in findings(report)] == ["monotonic-consumption"]


def test_a_setting_on_a_poll_the_hot_path_would_take_is_read(tmp_path: Path) -> None:
    """... and reads a good one: auto.offset.reset=earliest named on a poll judges the member's next first poll."""
    events = [start(), assigned(10, 0), consumed(20, 0, 0, 4), consumed(21, 0, 5, 9, auto_offset_reset="earliest"),
              assigned(30, 1), consumed(31, 1, 5, 9), stop(40)]
    report = run_events(tmp_path, {"a": events})
    assert [f["invariant"] for f in findings(report)] == ["no-gap"]


def test_max_offset_below_min_offset_is_a_bad_field(tmp_path: Path) -> None:
    bad = ev("records_consumed", 20, partitions=[{"topic": "t", "partition": 0, "minOffset": 9, "maxOffset": 3}])
    report = run_events(tmp_path, {"a": [start(), assigned(10, 0), bad, stop(30)]})
    assert report["input"]["skipped"] == {"bad-field": 1}


def _entry(partition: object = 1, low: object = 5, high: object = 9, topic: object = "t") -> dict[str, object]:
    return {"topic": topic, "partition": partition, "minOffset": low, "maxOffset": high}


# what is wrong with the poll's second entry (t-1, at position 5), and the words the bad-field line says it in
WRONG_ENTRIES = {
    "a string offset": (_entry(low="5"), "minOffset / maxOffset of t-1 are not integers"),
    "a float offset the position equals": (_entry(low=5.0), "minOffset / maxOffset of t-1 are not integers"),
    "a boolean offset": (_entry(high=True), "minOffset / maxOffset of t-1 are not integers"),
    "one offset of two": ({"topic": "t", "partition": 1, "minOffset": 5}, "minOffset / maxOffset of t-1"),
    "maxOffset below minOffset at the position": (_entry(high=3), "maxOffset 3 of t-1 is below minOffset 5"),
    "no object": ("t-1", "partitions has an entry that is not an object"),
    "a topic that is no string": (_entry(topic=7), "partitions has an entry with a bad topic or partition"),
    "a boolean partition": (_entry(partition=True), "partitions has an entry with a bad topic or partition"),
}


def _refused_whole(tmp_path: Path, events: list[dict[str, object]], line: int, words: str) -> list[tuple[str, Any]]:
    """Check member a's ``events``: its line ``line`` is the one bad-field line, in ``words``, and no event; the
    findings as (invariant, partitions)."""
    report = run_events(tmp_path, {"a": events})
    assert report["input"]["skipped"] == {"bad-field": 1}
    [example] = report["input"]["skipped_examples"]
    assert example["where"].endswith(f"a.jsonl:{line}") and example["detail"].startswith(words)
    assert report["input"]["events"] == len(events) - 1
    return [(f["invariant"], partitions_of(f)) for f in findings(report)]


@pytest.mark.parametrize("wrong", sorted(WRONG_ENTRIES))
def test_a_poll_with_a_wrong_entry_is_refused_whole(tmp_path: Path, wrong: str) -> None:
    """A poll of t-0 5..9 and a wrong entry for t-1 is one bad-field line and nothing else (docs/check.md, "Input that
    cannot be used"): the reader refuses it before the checker sees it (traces.readers.jsonl.poll_field_error), so
    t-0 is still at 5 when a polls 10..12 (monotonic-consumption). The checker used to move t-0 to 10 and then refuse
    the line at t-1 (a string offset, one of two, no object), or take the whole poll (a float or boolean offset the
    hot path compared equal to the position, a maxOffset below it, a boolean partition equal to 1) or read the wrong
    entry as another partition (a topic 7: consume-owned-only)."""
    entry, words = WRONG_ENTRIES[wrong]
    poll = ev("records_consumed", 30, partitions=[_entry(0, 5, 9), entry])
    events = [start(), assigned(10, 0, 1), consumed(20, 0, 0, 4), consumed(21, 1, 0, 4), poll,
              consumed(40, 0, 10, 12), stop(50)]
    assert _refused_whole(tmp_path, events, 5, f"records_consumed: {words}") == [("monotonic-consumption", [("t", 0)])]


@pytest.mark.parametrize("partitions", [{"topic": "t", "partition": 0, "minOffset": 5, "maxOffset": 9}, "t-0", None])
def test_a_poll_whose_partitions_is_no_list_is_refused(tmp_path: Path, partitions: object) -> None:
    poll = ev("records_consumed", 30, partitions=partitions)
    report = run_events(tmp_path, {"a": [start(), assigned(10, 0), consumed(20, 0, 0, 4), poll,
                                         consumed(40, 0, 5, 9), stop(50)]})
    assert report["input"]["skipped"] == {"bad-field": 1}
    assert report["input"]["skipped_examples"][0]["detail"] == "records_consumed: partitions is not a list"
    assert findings(report) == []


def test_a_poll_entry_without_offsets_is_read(tmp_path: Path) -> None:
    """An entry that names neither offset (trace-format.md allows it) is no wrong shape: the member's position of
    the partition is unknown afterwards, so the next poll, from anywhere, is not judged."""
    poll = ev("records_consumed", 30, partitions=[{"topic": "t", "partition": 0}])
    report = run_events(tmp_path, {"a": [start(), assigned(10, 0), consumed(20, 0, 0, 4), poll,
                                         consumed(40, 0, 9, 12), stop(50)]})
    assert report["input"]["skipped"] == {}
    assert findings(report) == []


# a commit entry of the wrong shape beside a good one (t-0 at 9, past the position 5), and the words the bad-field line
# says it in
WRONG_COMMIT_ENTRIES = {
    "a topic that is no string": ({"topic": 7, "partition": 0, "offset": 5}, "offsets has an entry with a bad topic"),
    "no topic": ({"partition": 1, "offset": 5}, "offsets has an entry with a bad topic or partition"),
    "a partition that is a string": ({"topic": "t", "partition": "1", "offset": 5}, "offsets has an entry with a bad"),
    "a boolean partition": ({"topic": "t", "partition": True, "offset": 5}, "offsets has an entry with a bad topic"),
    "no partition": ({"topic": "t", "offset": 5}, "offsets has an entry with a bad topic or partition"),
    "a string offset": ({"topic": "t", "partition": 1, "offset": "5"}, "offset of t-1 is not an integer"),
}


@pytest.mark.parametrize("wrong", sorted(WRONG_COMMIT_ENTRIES))
def test_a_commit_with_a_wrong_entry_is_refused_whole(tmp_path: Path, wrong: str) -> None:
    """A commit of t-0 at 9 beside a wrong entry is one bad-field line and nothing else (docs/check.md, "Input that
    cannot be used"): the reader refuses it before the checker sees it (traces.readers.jsonl.commit_field_error), as
    ``groupspec corpus --from`` does, so no committed-not-ahead for t-0. The reader used to check only the offset: the
    checker read a topic 7 as a partition (7, 0) never owned (commit-owned-only), a partition "1" as (t, "1"), a
    boolean one as t-1 (equal to it), and took t-0 at 9 before a missing topic or partition refused the line."""
    entry, words = WRONG_COMMIT_ENTRIES[wrong]
    commit = ev("offsets_committed", 30, success=True, offsets=[{"topic": "t", "partition": 0, "offset": 9}, entry])
    events = [start(), assigned(10, 0, 1), consumed(20, 0, 0, 4), consumed(21, 1, 0, 4), commit,
              committed(40, 0, 5), stop(50)]
    assert _refused_whole(tmp_path, events, 5, f"offsets_committed: {words}") == []


@pytest.mark.parametrize("success", [1, 0, "true"])
def test_a_commit_whose_success_is_no_boolean_is_refused(tmp_path: Path, success: object) -> None:
    """``"success": 1`` equals true but is no boolean (trace-format.md): the reader refuses the commit, as the corpus
    does (it writes success only as a boolean). It used to pass the reader's `in (True, False)` test and count as a
    commit of 9 (committed-not-ahead: past the position 5)."""
    events = [start(), assigned(10, 0), consumed(20, 0, 0, 4), committed(21, 0, 9, success=success), stop(30)]  # type: ignore[arg-type]
    report = run_events(tmp_path, {"a": events})
    assert report["input"]["skipped"] == {"bad-field": 1}
    assert report["input"]["skipped_examples"][0]["detail"].startswith("offsets_committed: success is not true or false")
    assert findings(report) == []


def test_a_line_the_checker_refuses_is_no_event(tmp_path: Path) -> None:
    """input.events counts the events the check used: a line refused is counted under skipped only, whether the
    reader refused it (a commit of offset "ten") or the checker (a reset policy of no Kafka client), in the total and
    per source alike (docs/check.md, "Input that cannot be used")."""
    events = [start(), assigned(10, 0), consumed(20, 0, 0, 4),
              ev("offsets_committed", 21, success=True, offsets=[{"topic": "t", "partition": 0, "offset": "ten"}]),
              consumed(22, 0, 5, 9, auto_offset_reset="smallest"), stop(30)]
    report = run_events(tmp_path, {"a": events})
    assert report["input"]["skipped"] == {"bad-field": 2}
    assert report["input"]["events"] == len(events) - 2 == report["input"]["sources"][0]["events"]


# ------------------------------------------------------------------ handoff-duplicates


def _previous_owner(*after_consuming: dict[str, object], **fields: object) -> list[dict[str, object]]:
    """a consumes 0..9 of t-0, commits 5 (an earlier poll's position), then what the test adds."""
    return [start(**fields), assigned(10, 0), consumed(20, 0, 0, 4), committed(21, 0, 5), consumed(30, 0, 5, 9),
            *after_consuming]


def _next_owner() -> list[dict[str, object]]:
    """b is assigned t-0 and starts from the committed offset it fetched."""
    return [start(), assigned(200, 0)]


def _handoff(tmp_path: Path, a: list[dict[str, object]], b_first: int) -> dict[str, Any]:
    b = [*_next_owner(), consumed(210, 0, b_first, b_first + 9), committed(211, 0, b_first + 10), stop(300)]
    return run_events(tmp_path, {"a": a, "b": b})


def test_a_handoff_with_no_commit_on_revoke_counts_the_records_read_again(tmp_path: Path) -> None:
    report = _handoff(tmp_path, _previous_owner(revoked(100, 0), stop(101)), b_first=5)
    assert findings(report) == []  # allowed by at-least-once delivery: a measure, not a violation
    d = delivery(report)
    assert d["handoffs"] == 1 and d["duplicates"] == 5 and d["handoffs_with_duplicates"] == 1
    assert d["duplicates_by_cause"] == {"no-commit-on-revoke": 5}
    [h] = d["handoff_examples"]
    assert (h["from"], h["to"], h["start"], h["previous_position"], h["committed"]) == ("a", "b", 5, 10, 5)
    assert h["evidence"] == [f"{tmp_path / 'a.jsonl'}:6", f"{tmp_path / 'b.jsonl'}:3"]
    assert d["per_partition"] == [{"group": "default", "topic": "t", "partition": 0, "handoffs": 1,
                                   "duplicates": 5}]
    assert report["opportunities"]["handoff-duplicates"] == 1


def test_a_commit_in_on_partitions_revoked_leaves_no_duplicates(tmp_path: Path) -> None:
    # The commit callback may be printed after partitions_revoked: it still precedes the handoff.
    report = _handoff(tmp_path, _previous_owner(revoked(100, 0), committed(101, 0, 10), stop(102)), b_first=10)
    assert findings(report) == []
    d = delivery(report)
    assert d["handoffs"] == 1 and d["duplicates"] == 0 and d["handoff_examples"] == []


def test_duplicates_count_only_what_the_next_owner_consumed(tmp_path: Path) -> None:
    a = _previous_owner(revoked(100, 0), stop(101))
    b = [*_next_owner(), consumed(210, 0, 5, 6), revoked(220, 0), stop(230)]  # read 5..6 of 5..9, then lost it
    assert delivery(run_events(tmp_path, {"a": a, "b": b}))["duplicates"] == 2


def test_a_shutdown_without_commit_is_named(tmp_path: Path) -> None:
    d = delivery(_handoff(tmp_path, _previous_owner(ev("shutdown_complete", 100)), b_first=5))
    assert d["duplicates_by_cause"] == {"no-commit-on-close": 5}


def test_auto_commit_is_named_with_its_interval(tmp_path: Path) -> None:
    a = _previous_owner(revoked(100, 0), stop(101), enable_auto_commit=True, auto_commit_interval_ms=5000)
    [h] = delivery(_handoff(tmp_path, a, b_first=5))["handoff_examples"]
    assert h["cause"] == "auto-commit" and "auto.commit.interval.ms=5000" in h["detail"]


def test_a_failed_commit_is_named(tmp_path: Path) -> None:
    a = _previous_owner(revoked(100, 0),
                        committed(101, 0, 10, success=False, error="REBALANCE_IN_PROGRESS"), stop(102))
    [h] = delivery(_handoff(tmp_path, a, b_first=5))["handoff_examples"]
    assert h["cause"] == "commit-failed" and "REBALANCE_IN_PROGRESS" in h["detail"] and "offset 10" in h["detail"]


def test_a_killed_owner_is_a_zombie_and_a_restart_is_a_crash(tmp_path: Path) -> None:
    # a's trace just ends while it owns t-0 (SIGKILL); b gets t-0 later and starts from the commit.
    zombie = delivery(_handoff(tmp_path / "killed", _previous_owner(), b_first=5))
    assert zombie["duplicates_by_cause"] == {"zombie": 5}
    # a restarts (a new startup_complete without shutdown) and is given t-0 again: it re-reads itself.
    restart = run_events(tmp_path / "restart", {
        "a": [*_previous_owner(), start(100), assigned(110, 0), consumed(120, 0, 5, 12), stop(130)],
    })
    [h] = delivery(restart)["handoff_examples"]
    assert (h["from"], h["to"], h["cause"], h["duplicates"]) == ("a", "a", "crash", 5)


def test_an_eager_reassignment_to_the_same_member_counts_too(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [*_previous_owner(revoked(100, 0)), assigned(110, 0), consumed(120, 0, 5, 12), stop(130)],
    })
    d = delivery(report)
    assert d["duplicates"] == 5 and d["handoff_examples"][0]["from"] == "a"


def test_a_short_list_of_handoffs_keeps_the_first_by_group_and_time(tmp_path: Path) -> None:
    """More handoffs with duplicates than max_findings: the list keeps the first by group, time, topic, partition and
    new owner (the Spark job's order, spark_analysis.handoff._summary), in that order, not the first the checker
    closes; the totals count them all. b reads t-3 first and lets it go last, t-0 the other way round."""
    a = [start(), assigned(10, 0, 1, 2, 3), *[consumed(20 + p, p, 0, 9) for p in range(4)], revoked(100, 0, 1, 2, 3),
         stop(101)]
    b = [start(150), assigned(200, 0, 1, 2, 3), *[consumed(240 - 10 * p, p, 0, 9) for p in range(4)],
         *[revoked(300 + 10 * p, p) for p in range(4)], stop(400)]
    paths = [write_jsonl(tmp_path / "a.jsonl", a), write_jsonl(tmp_path / "b.jsonl", b)]
    listed = {n: delivery(run(paths, max_findings=n)) for n in (2, 0, 10)}
    assert [(h["partition"], h["at"]) for h in listed[2]["handoff_examples"]] == [(3, 210), (2, 220)]
    assert listed[2]["handoffs_with_duplicates"] == 4 and listed[2]["duplicates"] == 40
    assert listed[2]["handoff_examples_truncated"]
    assert listed[0]["handoff_examples"] == [] and listed[0]["handoff_examples_truncated"]
    # all of them, in the same order, when the list holds them
    assert [h["partition"] for h in listed[10]["handoff_examples"]] == [3, 2, 1, 0]
    assert not listed[10]["handoff_examples_truncated"]


def test_no_handoff_is_reported_as_unchecked(tmp_path: Path) -> None:
    report = run_events(tmp_path, {"a": [start(), assigned(10, 0), consumed(20, 0, 0, 4), stop(30)]})
    assert delivery(report)["handoffs"] == 0
    assert not unchecked(report)["handoff-duplicates"]["partial"]
    assert "handoff-duplicates" not in report["checked"]


# ------------------------------------------------------------------ real captures and the model's events


@pytest.mark.parametrize("sample", sorted(p.name for p in REAL.iterdir() if p.is_dir()))
def test_real_captures_hold_every_delivery_invariant(sample: str) -> None:
    report = run(REAL / sample)
    assert [f for f in report["findings"] if f["severity"] == "violation"] == []
    for invariant in ("no-gap", "monotonic-consumption", "commit-owned-only", "committed-not-ahead",
                      "handoff-duplicates"):
        assert report["opportunities"].get(invariant, 0) > 0, invariant
    assert delivery(report)["handoffs"] > 0


def test_in_memory_events_carry_the_delivery_section() -> None:
    events = [start(), assigned(10, 0), consumed(20, 0, 0, 9), committed(21, 0, 12)]
    report = check_events(events, label="sim")
    assert [f["invariant"] for f in report["findings"]] == ["committed-not-ahead"]
    assert report["findings"][0]["evidence"] == ["sim:4"]
    assert delivery(report)["handoffs"] == 0


# ------------------------------------------------------------------ what people read


def test_the_summary_and_the_report_show_where_duplicates_came_from(tmp_path: Path) -> None:
    from groupspec.commands.check import document, summary
    from groupspec.render import to_markdown

    report = _handoff(tmp_path, _previous_owner(revoked(100, 0), stop(101)), b_first=5)
    text = summary(report)
    assert "delivery: 1 handoff(s), 5 record(s) consumed again in 1 of them" in text
    assert "no-commit-on-revoke 5" in text
    markdown = to_markdown(document(report))
    assert "Delivery: records consumed again at a handoff" in markdown
    assert "no commitSync in onPartitionsRevoked" in markdown
    assert f"{tmp_path / 'a.jsonl'}:6" in markdown


def test_verbose_record_data_followed_by_its_summary_is_one_poll(tmp_path: Path) -> None:
    # VerifiableConsumer --verbose prints record_data per record, then the poll's records_consumed.
    def record(ts: int, offset: int) -> dict[str, object]:
        return ev("record_data", ts, topic="t", partition=0, offset=offset, key=None, value="v")

    report = run_events(tmp_path, {
        "a": [start(), assigned(10, 0), record(20, 0), record(20, 1), record(20, 2), consumed(20, 0, 0, 2),
              record(30, 3), record(30, 4), consumed(30, 0, 3, 4), committed(31, 0, 5), stop(40)],
    })
    assert findings(report) == []
    skipping = run_events(tmp_path / "skip", {
        "a": [start(), assigned(10, 0), record(20, 0), consumed(20, 0, 0, 0), record(30, 4), consumed(30, 0, 4, 4),
              stop(40)],
    })
    assert len(findings(skipping, "monotonic-consumption")) == 1


# a record_data of offset 5 of the wrong shape, and the words the bad-field line says it in
WRONG_RECORDS = {
    "a topic that is no string": ({"topic": 7, "partition": 0, "offset": 5}, "topic / partition is not"),
    "a boolean partition": ({"topic": "t", "partition": True, "offset": 5}, "topic / partition is not"),
    "no partition": ({"topic": "t", "offset": 5}, "topic / partition is not a topic-partition"),
    "a float offset": ({"topic": "t", "partition": 0, "offset": 5.0}, "offset of t-0 is not an integer"),
    "a string offset": ({"topic": "t", "partition": 0, "offset": "5"}, "offset of t-0 is not an integer"),
}


@pytest.mark.parametrize("wrong", sorted(WRONG_RECORDS))
def test_a_record_data_of_the_wrong_shape_is_refused(tmp_path: Path, wrong: str) -> None:
    """VerifiableConsumer.RecordData prints a String topic, an int partition and a long offset: the reader refuses a
    record_data of another shape (traces.readers.jsonl.record_field_error), as ``groupspec corpus --from`` does, so
    t-0 is still at 5 when the record of 6 comes (monotonic-consumption) and nothing else is read of it. The checker
    used to take a topic 7 as a partition (7, 0) and a boolean partition as t-1, neither owned (consume-owned-only),
    and a float offset as 5 (no skip); it refused a string offset or a missing partition itself, which the corpus
    wrote as a row and counted as an event."""
    fields, words = WRONG_RECORDS[wrong]
    record = ev("record_data", 30, key=None, value="v", **fields)
    events = [start(), assigned(10, 0), consumed(20, 0, 0, 4), record,
              ev("record_data", 40, topic="t", partition=0, offset=6, key=None, value="v"), consumed(40, 0, 5, 6),
              stop(50)]
    assert _refused_whole(tmp_path, events, 4, f"record_data: {words}") == [("monotonic-consumption", [("t", 0)])]


# ------------------------------------------------------------------ commits the trace does not show


def _commit(ts: int, partition: int, offset: int) -> dict[str, Any]:
    return ev("offsets_committed", ts, success=True, offsets=[{"topic": "t", "partition": partition, "offset": offset}])


def test_an_auto_committer_that_restarts_still_bounds_where_the_next_owner_may_start(tmp_path: Path) -> None:
    """VerifiableConsumer output: b commits after each poll (shown), a polls twice with no commit between
    (--enable-autocommit: its commits are not printed). a consumed up to 19 and restarted; b then starts at 20,
    where a's unprinted auto-commit may have put the committed offset: not a gap, whatever b last committed (5)."""
    b = [start(0), assigned(10, 0), consumed(20, 0, 0, 4), _commit(21, 0, 5), revoked(30, 0),
         assigned(200, 0), consumed(210, 0, 20, 24), _commit(211, 0, 25), stop(300)]
    a = [start(35), assigned(40, 0), consumed(50, 0, 5, 9), consumed(60, 0, 10, 19), start(100), assigned(110),
         stop(400)]
    report = run_events(tmp_path, {"a": a, "b": b})
    assert findings(report, "no-gap") == []
    [reason] = [u["reason"] for u in report["unchecked"] if u["invariant"] == "no-gap" and "auto-commit" in u["reason"]]
    assert "1 first consumption(s)" in reason
    # ... and a start beyond anything anyone consumed is still a gap
    b[6] = consumed(210, 0, 30, 34)
    assert len(findings(run_events(tmp_path / "beyond", {"a": a, "b": b}), "no-gap")) == 1
