"""Telling a real violation from what Kafka allows: zombies, and the clock skew between files."""

from __future__ import annotations

from pathlib import Path

from tests.traces.support import committed, consumed, ev, findings, run_events


def owner_then_silence(**extra: object) -> list[dict[str, object]]:
    """a owns partition 0 from t=10 and its trace ends at t=50 (SIGKILL: no shutdown_complete)."""
    return [ev("startup_complete", 0, **extra), ev("partitions_assigned", 10, parts=[0], **extra),
            consumed(50, 0, 0, 9, **extra)]


def new_owner(at: int = 100, **extra: object) -> list[dict[str, object]]:
    return [ev("startup_complete", 0), ev("partitions_assigned", at, parts=[0], **extra), consumed(at + 10, 0, 10, 19),
            ev("partitions_revoked", at + 100, parts=[0]), ev("shutdown_complete", at + 101)]


def test_killed_member_overlap_is_a_zombie_overlap_warning(tmp_path: Path) -> None:
    report = run_events(tmp_path, {"a": owner_then_silence(), "b": new_owner()})
    assert findings(report, severity="violation") == []
    [warning] = findings(report, "zombie-overlap")
    assert warning["severity"] == "warning"
    assert warning["members"] == ["a", "b"]
    assert "without shutdown_complete" in warning["message"]
    assert report["verdict"] == "warning"


def test_killed_member_that_kept_consuming_after_the_new_owner_got_the_partition(tmp_path: Path) -> None:
    a = owner_then_silence() + [consumed(150, 0, 10, 12)]
    report = run_events(tmp_path, {"a": a, "b": new_owner()})
    [finding] = findings(report, "single-owner")
    assert finding["severity"] == "violation"
    assert "zombie a consumed t-0" in finding["message"]
    assert f"{tmp_path / 'a.jsonl'}:4" in finding["evidence"]


def test_lost_partitions_make_a_zombie(tmp_path: Path) -> None:
    a = [ev("startup_complete", 0), ev("partitions_assigned", 10, parts=[0]), consumed(50, 0, 0, 9),
         ev("partitions_lost", 300, parts=[0]), ev("shutdown_complete", 310)]
    report = run_events(tmp_path, {"a": a, "b": new_owner()})
    [warning] = findings(report)
    assert warning["invariant"] == "zombie-overlap" and "partitions_lost" in warning["message"]
    assert warning["window"] == [100, 300]


def test_zombie_that_committed_after_the_new_owner_got_the_partition(tmp_path: Path) -> None:
    a = [ev("startup_complete", 0), ev("partitions_assigned", 10, parts=[0]), consumed(50, 0, 0, 9),
         committed(150, 0, 10), ev("partitions_lost", 300, parts=[0])]
    report = run_events(tmp_path, {"a": a, "b": new_owner()})
    [finding] = findings(report, "single-owner")
    assert "zombie a committed" in finding["message"]
    # The same commit refused by the coordinator (fenced) is what Kafka does.
    fenced = a[:3] + [committed(150, 0, 10, success=False), a[4]]
    assert findings(run_events(tmp_path / "fenced", {"a": fenced, "b": new_owner()}), severity="violation") == []


def test_a_late_revocation_is_a_violation_unless_the_coordinator_had_removed_the_member(tmp_path: Path) -> None:
    # VerifiableConsumer prints onPartitionsLost as partitions_revoked: without the coordinator's view a
    # late "revoked" is an owner that overlapped the next one.
    a = [ev("startup_complete", 0, member_id="a-1"), ev("partitions_assigned", 10, parts=[0]),
         ev("partitions_revoked", 300, parts=[0]), ev("shutdown_complete", 310)]
    plain = run_events(tmp_path / "plain", {"a": a, "b": new_owner()})
    assert [f["invariant"] for f in findings(plain)] == ["single-owner"]
    removed = [ev("coordinator_member_removed", 90, member_id="a-1", reason="session-timeout")]
    with_broker = run_events(tmp_path / "broker", {"a": a, "b": new_owner(), "server": removed})
    assert [f["invariant"] for f in findings(with_broker)] == ["zombie-overlap"]
    assert "the coordinator had removed a" in findings(with_broker)[0]["message"]


def test_an_old_owner_that_never_reached_the_new_generation_is_a_zombie(tmp_path: Path) -> None:
    a = [ev("startup_complete", 0), ev("partitions_assigned", 10, parts=[0], generation=3),
         ev("partitions_revoked", 300, parts=[0], generation=3)]
    report = run_events(tmp_path, {"a": a, "b": new_owner(generation=4)})
    [warning] = findings(report)
    assert warning["invariant"] == "zombie-overlap" and "never reached generation 4" in warning["message"]
    # ...and one that had reached it is not.
    a_current = [ev("startup_complete", 0), ev("partitions_assigned", 10, parts=[0], generation=3),
                 ev("group_joined", 99, generation=4), ev("partitions_revoked", 300, parts=[0], generation=4)]
    report = run_events(tmp_path / "current", {"a": a_current, "b": new_owner(generation=4)})
    assert [f["invariant"] for f in findings(report)] == ["single-owner"]


def test_a_restart_ends_the_old_incarnation_as_a_zombie(tmp_path: Path) -> None:
    a = owner_then_silence() + [ev("startup_complete", 500), ev("partitions_assigned", 510, parts=[1])]
    report = run_events(tmp_path, {"a": a, "b": new_owner()})
    [warning] = findings(report)
    assert warning["invariant"] == "zombie-overlap" and "was restarted" in warning["message"]
    assert report["groups"]["default"]["members"][0]["restarts"] == 1


def test_a_trace_ending_without_shutdown_is_a_zombie_unless_its_generation_says_otherwise(tmp_path: Path) -> None:
    a = [ev("startup_complete", 0), ev("partitions_assigned", 10, parts=[0, 1]), consumed(400, 1, 0, 3)]
    report = run_events(tmp_path / "plain", {"a": a, "b": new_owner()})
    assert [f["invariant"] for f in findings(report)] == ["zombie-overlap"]
    # With generations: a was a member of generation 4, in which b was given partition 0.
    a = [ev("startup_complete", 0), ev("partitions_assigned", 10, parts=[0, 1], generation=4), consumed(400, 1, 0, 3)]
    report = run_events(tmp_path / "generations", {"a": a, "b": new_owner(generation=4)})
    [finding] = findings(report)
    assert finding["invariant"] == "single-owner" and "when its trace ended" in finding["message"]


# ------------------------------------------------------------------ clock skew between files


def _pair(revoke_at: int) -> dict[str, list[dict[str, object]]]:
    return {"a": [ev("startup_complete", 0), ev("partitions_assigned", 10, parts=[0]),
                  ev("partitions_revoked", revoke_at, parts=[0]), ev("shutdown_complete", 400)],
            "b": [ev("startup_complete", 0), ev("partitions_assigned", 100, parts=[0]),
                  ev("shutdown_complete", 500)]}


def test_overlap_within_the_skew_between_files_is_tolerated(tmp_path: Path) -> None:
    report = run_events(tmp_path, _pair(130), skew_ms=50)
    assert findings(report) == []
    assert report["input"]["tolerated_overlaps"] == 1
    assert report["config"]["skew_ms"] == 50


def test_overlap_beyond_the_skew_is_a_violation(tmp_path: Path) -> None:
    assert [f["invariant"] for f in findings(run_events(tmp_path / "beyond", _pair(160), skew_ms=50))] == \
        ["single-owner"]
    assert [f["invariant"] for f in findings(run_events(tmp_path / "none", _pair(130), skew_ms=0))] == \
        ["single-owner"]


def test_equal_timestamps_in_two_files_are_not_an_overlap(tmp_path: Path) -> None:
    assert findings(run_events(tmp_path, _pair(100), skew_ms=0)) == []


def test_skew_never_excuses_an_overlap_within_one_file(tmp_path: Path) -> None:
    one_file = [ev("startup_complete", 0, member="a"), ev("startup_complete", 0, member="b"),
                ev("partitions_assigned", 10, parts=[0], member="a"),
                ev("partitions_assigned", 100, parts=[0], member="b"),
                ev("partitions_revoked", 130, parts=[0], member="a")]
    report = run_events(tmp_path, {"trace": one_file}, skew_ms=50)
    assert [f["invariant"] for f in findings(report)] == ["single-owner"]


def test_zombie_activity_within_the_skew_does_not_count(tmp_path: Path) -> None:
    a = owner_then_silence() + [consumed(120, 0, 10, 12)]
    report = run_events(tmp_path, {"a": a, "b": new_owner()}, skew_ms=50)
    assert [f["invariant"] for f in findings(report)] == ["zombie-overlap"]
