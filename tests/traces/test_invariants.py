"""Each catalogue invariant the checker runs: one trace that violates it, one that does not."""

from __future__ import annotations

from pathlib import Path

from tests.traces.support import committed, consumed, ev, findings, partitions_of, run_events, unchecked


def start(ts: int = 0, **fields: object) -> dict[str, object]:
    return ev("startup_complete", ts, **fields)


# ------------------------------------------------------------------ single-owner


def test_single_owner_violation_when_new_owner_is_assigned_before_old_owner_revokes(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(), ev("partitions_assigned", 100, parts=[0, 1]), ev("partitions_revoked", 300, parts=[0, 1]),
              ev("shutdown_complete", 400)],
        "b": [start(), ev("partitions_assigned", 200, parts=[0]), ev("shutdown_complete", 500)],
    })
    [finding] = findings(report, "single-owner")
    assert finding["severity"] == "violation"
    assert finding["members"] == ["a", "b"]
    assert partitions_of(finding) == [("t", 0)]
    assert finding["window"] == [200, 300]
    assert finding["evidence"] == [f"{tmp_path / 'b.jsonl'}:2", f"{tmp_path / 'a.jsonl'}:3"]
    assert report["verdict"] == "violation"


def test_single_owner_holds_when_the_old_owner_revokes_first(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(), ev("partitions_assigned", 100, parts=[0, 1]), ev("partitions_revoked", 150, parts=[0, 1]),
              ev("partitions_assigned", 210, parts=[1]), ev("shutdown_complete", 400)],
        "b": [start(), ev("partitions_assigned", 200, parts=[0]), ev("shutdown_complete", 500)],
    })
    assert findings(report) == []
    assert report["verdict"] == "held"
    assert report["opportunities"]["single-owner"] >= 3


def test_single_owner_in_the_coordinators_stored_assignment(tmp_path: Path) -> None:
    stable = ev("coordinator_stable", 100, group="g", generation=3, members=["m1", "m2"],
                assignment={"m1": [{"topic": "t", "partition": 0}], "m2": [{"topic": "t", "partition": 0},
                                                                            {"topic": "t", "partition": 1}]})
    report = run_events(tmp_path, {"coordinator": [stable]})
    [finding] = findings(report, "single-owner")
    assert finding["members"] == ["m1", "m2"] and partitions_of(finding) == [("t", 0)]
    assert "generation 3" in finding["message"]


def test_a_partition_stored_for_three_member_ids_pairs_them_in_member_id_order(tmp_path: Path) -> None:
    """Each member id is paired with the last one before it given the partition, member ids taken sorted, whatever
    order the event lists them in: the Spark job reads them so (spark_analysis.coordinator_assignments)."""
    tp = [{"topic": "t", "partition": 0}]
    for order in (["c-1", "a-1", "b-1"], ["b-1", "c-1", "a-1"]):
        stable = ev("coordinator_stable", 100, group="g", generation=3, members=order,
                    assignment={m: tp for m in order})
        report = run_events(tmp_path / "-".join(order), {"coordinator": [stable]})
        assert [(f["members"], f["message"]) for f in findings(report, "single-owner")] == [
            (["a-1", "b-1"], "the coordinator stored generation 3's assignment with t-0 given to both a-1 and b-1"),
            (["b-1", "c-1"], "the coordinator stored generation 3's assignment with t-0 given to both b-1 and c-1")]


def test_single_owner_in_kip848_member_assignments(tmp_path: Path) -> None:
    def assignment(ts: int, member: str, assigned: list[int], pending: list[int]) -> dict[str, object]:
        return ev("coordinator_state", ts, group="g", detail="member-assignment", member_id=member, generation=2,
                  partitions=[{"topic": "t", "partition": p} for p in assigned],
                  pending_revocation=[{"topic": "t", "partition": p} for p in pending])

    held = run_events(tmp_path / "ok", {"c": [assignment(1, "m1", [0], [1]), assignment(2, "m2", [2], [])]})
    assert findings(held) == []
    broken = run_events(tmp_path / "bad", {"c": [assignment(1, "m1", [0], [1]), assignment(2, "m2", [1], [])]})
    [finding] = findings(broken, "single-owner")
    assert partitions_of(finding) == [("t", 1)]


# ------------------------------------------------------------------ consume-owned-only


def test_consuming_a_partition_never_assigned_is_a_violation(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(), ev("partitions_assigned", 10, parts=[0]), consumed(20, 1, 0, 4), consumed(30, 1, 5, 9),
              consumed(40, 0, 0, 4)],
    })
    [finding] = findings(report, "consume-owned-only")
    assert partitions_of(finding) == [("t", 1)]
    assert finding["occurrences"] == 2  # one finding for the run of unowned polls
    assert finding["window"] == [20, 30]


def test_consuming_after_revocation_or_shutdown_is_a_violation(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(), ev("partitions_assigned", 10, parts=[0]), ev("partitions_revoked", 20, parts=[0]),
              consumed(25, 0, 0, 1), ev("shutdown_complete", 30), consumed(35, 0, 2, 3)],
    })
    [finding] = findings(report, "consume-owned-only")  # the same member and partition: one run
    assert finding["occurrences"] == 2


def test_late_commit_callback_for_what_was_consumed_is_accepted(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(), ev("partitions_assigned", 10, parts=[0]), consumed(20, 0, 0, 9),
              ev("partitions_revoked", 30, parts=[0]), committed(31, 0, 10)],
    })
    assert findings(report) == []


def test_commit_beyond_what_the_member_consumed_after_revocation_is_a_violation(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(), ev("partitions_assigned", 10, parts=[0]), consumed(20, 0, 0, 9),
              ev("partitions_revoked", 30, parts=[0]), committed(31, 0, 50)],
    })
    [finding] = findings(report, "commit-owned-only")
    assert "committed" in finding["message"]


def test_commit_accepted_with_a_stale_generation_is_a_violation(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(0, generation=3), ev("partitions_assigned", 10, parts=[0], generation=3),
              consumed(20, 0, 0, 4, generation=3), committed(500, 0, 5, generation=3)],
        "b": [start(0), ev("group_joined", 100, generation=4, member_id="b-1")],
    })
    [finding] = findings(report, "commit-owned-only")
    assert "generation 3" in finding["message"] and "generation 4" in finding["message"]
    # A commit the coordinator refused is what Kafka does: fine.
    refused = run_events(tmp_path / "refused", {
        "a": [start(0, generation=3), ev("partitions_assigned", 10, parts=[0], generation=3),
              committed(500, 0, 5, generation=3, success=False)],
        "b": [start(0), ev("group_joined", 100, generation=4, member_id="b-1")],
    })
    assert findings(refused) == []


# ------------------------------------------------------------------ no-gap


def _handover(first_offset: int) -> list[dict[str, object]]:
    return [start(), ev("partitions_assigned", 200, parts=[0]), consumed(210, 0, first_offset, first_offset + 4)]


def _first_owner() -> list[dict[str, object]]:
    return [start(), ev("partitions_assigned", 10, parts=[0]), consumed(20, 0, 0, 9), committed(21, 0, 10),
            ev("partitions_revoked", 100, parts=[0]), ev("shutdown_complete", 101)]


def test_no_gap_violation_when_the_next_owner_skips_offsets(tmp_path: Path) -> None:
    report = run_events(tmp_path, {"a": _first_owner(), "b": _handover(15)})
    [finding] = findings(report, "no-gap")
    assert "10..14" in finding["message"]
    assert finding["members"] == ["b"]


def test_no_gap_holds_from_the_committed_offset_and_on_redelivery(tmp_path: Path) -> None:
    assert findings(run_events(tmp_path / "exact", {"a": _first_owner(), "b": _handover(10)})) == []
    assert findings(run_events(tmp_path / "again", {"a": _first_owner(), "b": _handover(7)})) == []


def test_no_gap_slack_tolerates_markers(tmp_path: Path) -> None:
    report = run_events(tmp_path, {"a": _first_owner(), "b": _handover(11)}, gap_slack=1)
    assert findings(report) == []


# ------------------------------------------------------------------ generation-monotonic


def test_generation_going_down_is_a_violation(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(), ev("group_joined", 10, generation=5), ev("partitions_assigned", 11, parts=[0], generation=5),
              ev("group_joined", 20, generation=4)],
    })
    [finding] = findings(report, "generation-monotonic")
    assert "from 5 to 4" in finding["message"]


def test_generation_may_drop_to_none_and_restart_resets(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(), ev("group_joined", 10, generation=5), ev("partitions_lost", 20, parts=[], generation=-1),
              ev("group_joined", 30, generation=7), ev("shutdown_complete", 40),
              start(50), ev("group_joined", 60, generation=2)],
    })
    assert findings(report, "generation-monotonic") == []
    assert "generation-monotonic" in report["checked"]


def _rejected_at_3(error: str = "ILLEGAL_GENERATION") -> list[dict[str, object]]:
    """A cooperative member that owns t-0..2 in generation 2, rejoins, and whose SyncGroup for
    generation 3 is refused with ``error``."""
    coop = {"protocol": "cooperative", "member_id": "a-1"}
    return [start(), ev("group_joined", 10, generation=2, **coop), ev("group_synced", 11, generation=2, **coop),
            ev("partitions_assigned", 12, parts=[0, 1, 2], generation=2, **coop),
            ev("group_joined", 100, generation=3, **coop),
            ev("group_synced", 110, generation=3, error=error, **coop)]


def test_revoking_after_the_generation_was_rejected_is_a_violation(tmp_path: Path) -> None:
    coop = {"protocol": "cooperative", "member_id": "a-1"}
    report = run_events(tmp_path, {"a": _rejected_at_3() + [
        ev("group_joined", 200, generation=5, **coop), ev("group_synced", 201, generation=5, **coop),
        ev("partitions_revoked", 202, parts=[2], generation=5, **coop)]})
    [finding] = findings(report, "generation-monotonic")
    assert finding["severity"] == "violation" and finding["members"] == ["a"]
    assert partitions_of(finding) == [("t", 2)]
    assert "rejected its generation 3" in finding["message"] and "ILLEGAL_GENERATION" in finding["message"]
    assert report["verdict"] == "violation"


def test_keeping_partitions_of_a_rejected_generation_into_the_next_is_a_violation(tmp_path: Path) -> None:
    coop = {"protocol": "cooperative", "member_id": "a-1"}
    report = run_events(tmp_path, {"a": _rejected_at_3("UNKNOWN_MEMBER_ID") + [
        ev("group_joined", 200, generation=5, **coop), ev("group_synced", 201, generation=5, **coop),
        ev("partitions_assigned", 202, parts=[3], generation=5, **coop)]})
    [finding] = findings(report, "generation-monotonic")
    assert partitions_of(finding) == [("t", 0), ("t", 1), ("t", 2)]
    assert "generation 3" in finding["message"] and "generation 5" in finding["message"]


def test_losing_what_a_rejected_generation_owned_holds(tmp_path: Path) -> None:
    coop = {"protocol": "cooperative", "member_id": "a-1"}
    report = run_events(tmp_path, {"a": _rejected_at_3() + [
        ev("partitions_lost", 150, parts=[0, 1, 2], generation=-1, **coop),
        ev("group_joined", 200, generation=5, **coop), ev("group_synced", 201, generation=5, **coop),
        ev("partitions_assigned", 202, parts=[0, 1], generation=5, **coop),
        ev("group_joined", 300, generation=6, **coop), ev("group_synced", 301, generation=6, **coop),
        ev("partitions_revoked", 302, parts=[1], generation=6, **coop)]})
    assert findings(report, "generation-monotonic") == []
    assert report["opportunities"]["generation-monotonic"] > 0


def test_revoking_after_a_sync_that_lost_the_race_holds(tmp_path: Path) -> None:
    """REBALANCE_IN_PROGRESS keeps the generation (KAFKA-13419): revoking later is right."""
    coop = {"protocol": "cooperative", "member_id": "a-1"}
    report = run_events(tmp_path, {"a": _rejected_at_3("REBALANCE_IN_PROGRESS") + [
        ev("group_joined", 200, generation=4, **coop), ev("group_synced", 201, generation=4, **coop),
        ev("partitions_revoked", 202, parts=[2], generation=4, **coop)]})
    assert findings(report, "generation-monotonic") == []


# ------------------------------------------------------------------ eager-revoke-all


def test_eager_member_assigned_while_still_owning_is_a_violation(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(protocol="eager"), ev("partitions_assigned", 10, parts=[0, 1], generation=1),
              ev("partitions_revoked", 20, parts=[0]), ev("partitions_assigned", 30, parts=[2], generation=2)],
    })
    [finding] = findings(report, "eager-revoke-all")
    assert partitions_of(finding) == [("t", 1)]


def test_eager_member_that_revokes_everything_holds(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(protocol="eager"), ev("partitions_assigned", 10, parts=[0, 1], generation=1),
              ev("partitions_revoked", 20, parts=[0, 1]), ev("group_joined", 25, generation=2),
              ev("partitions_assigned", 30, parts=[1, 2], generation=2)],
    })
    assert findings(report) == []
    assert report["opportunities"]["eager-revoke-all"] == 2


def test_eager_member_joining_a_new_generation_while_owning_is_a_violation(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(assignor="range"), ev("partitions_assigned", 10, parts=[0], generation=1),
              ev("group_joined", 20, generation=2)],
    })
    [finding] = findings(report, "eager-revoke-all")
    assert "joined generation 2" in finding["message"]


def test_a_protocol_or_assignor_named_on_a_poll_or_commit_is_read(tmp_path: Path) -> None:
    """Member.protocol is the last protocol a member names (else its first assignor's kind), also when only a poll or
    a commit the hot path (Checker.run) would take names it: a, eager, polls naming cooperative and is not judged
    eager after; b names no protocol and polls naming range, which makes it eager; c names eager only on a commit; d
    names its own protocol on every poll, as the project's drivers do (no change: judged eager)."""
    report = run_events(tmp_path, {
        "a": [start(protocol="eager"), ev("partitions_assigned", 10, parts=[0], generation=1),
              consumed(20, 0, 0, 4, protocol="cooperative"), ev("partitions_assigned", 30, parts=[1], generation=2)],
        "b": [start(), ev("partitions_assigned", 10, parts=[2], generation=1), consumed(20, 2, 0, 4, assignor="range"),
              ev("partitions_assigned", 30, parts=[3], generation=2)],
        "c": [start(), ev("partitions_assigned", 10, parts=[4], generation=1), consumed(20, 4, 0, 4),
              committed(25, 4, 5, protocol="eager"), ev("partitions_assigned", 30, parts=[5], generation=2)],
        "d": [start(protocol="eager"), ev("partitions_assigned", 10, parts=[6], generation=1),
              consumed(20, 6, 0, 4, protocol="eager"), ev("partitions_assigned", 30, parts=[7], generation=2)],
    })
    assert sorted(f["members"][0] for f in findings(report, "eager-revoke-all")) == ["b", "c", "d"]
    assert "eager-revoke-all" not in unchecked(report), "every member's protocol is known"


# ------------------------------------------------------------------ cooperative


def test_revoke_before_assign_same_generation_is_a_violation(tmp_path: Path) -> None:
    coop = {"protocol": "cooperative"}
    report = run_events(tmp_path, {
        "a": [start(**coop), ev("partitions_assigned", 10, parts=[0, 1], generation=1),
              ev("group_joined", 100, generation=2), ev("partitions_revoked", 101, parts=[1], generation=2),
              ev("partitions_assigned", 102, parts=[], generation=2)],
        "b": [start(**coop), ev("group_joined", 100, generation=2),
              ev("partitions_assigned", 105, parts=[1], generation=2)],
    })
    [finding] = findings(report, "revoke-before-assign")
    assert finding["members"] == ["a", "b"] and partitions_of(finding) == [("t", 1)]
    assert findings(report, "single-owner") == []  # revoked before: no overlap in time


def test_revoke_before_assign_holds_across_the_follow_up_rebalance(tmp_path: Path) -> None:
    coop = {"protocol": "cooperative"}
    report = run_events(tmp_path, {
        "a": [start(**coop), ev("partitions_assigned", 10, parts=[0, 1], generation=1),
              ev("group_joined", 100, generation=2), ev("partitions_revoked", 101, parts=[1], generation=2),
              ev("partitions_assigned", 102, parts=[], generation=2), ev("group_joined", 200, generation=3),
              ev("partitions_assigned", 202, parts=[], generation=3)],
        "b": [start(**coop), ev("group_joined", 100, generation=2), ev("partitions_assigned", 105, parts=[], generation=2),
              ev("group_joined", 200, generation=3), ev("partitions_assigned", 205, parts=[1], generation=3)],
    })
    assert findings(report) == []
    assert report["opportunities"]["revoke-before-assign"] >= 1


def test_cooperative_assignment_before_the_revocation_in_the_same_generation(tmp_path: Path) -> None:
    coop = {"protocol": "cooperative"}
    report = run_events(tmp_path, {
        "a": [start(**coop), ev("partitions_assigned", 10, parts=[0, 1], generation=1),
              ev("group_joined", 100, generation=2), ev("partitions_revoked", 110, parts=[1], generation=2)],
        "b": [start(**coop), ev("group_joined", 100, generation=2),
              ev("partitions_assigned", 105, parts=[1], generation=2)],
    })
    assert len(findings(report, "revoke-before-assign")) == 1
    assert len(findings(report, "single-owner")) == 1


def test_revoke_only_moved_revoked_and_reassigned_in_the_same_generation(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(protocol="cooperative"), ev("partitions_assigned", 10, parts=[0, 1], generation=1),
              ev("group_joined", 100, generation=2), ev("partitions_revoked", 101, parts=[0, 1], generation=2),
              ev("partitions_assigned", 102, parts=[0, 1], generation=2)],
    })
    [finding] = findings(report, "revoke-only-moved")
    assert "same generation 2" in finding["message"]


def test_revoke_only_moved_revoked_before_rejoining_and_given_back(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(protocol="cooperative"), ev("partitions_assigned", 10, parts=[0, 1], generation=1),
              ev("partitions_revoked", 90, parts=[0, 1], generation=1), ev("group_joined", 100, generation=2),
              ev("partitions_assigned", 102, parts=[0, 1], generation=2)],
    })
    [finding] = findings(report, "revoke-only-moved")
    assert partitions_of(finding) == [("t", 0), ("t", 1)]
    assert "before rejoining" in finding["message"]


def test_revoke_only_moved_holds_when_the_partition_really_moved(tmp_path: Path) -> None:
    coop = {"protocol": "cooperative"}
    report = run_events(tmp_path, {
        "a": [start(**coop), ev("partitions_assigned", 10, parts=[0, 1], generation=1),
              ev("group_joined", 100, generation=2), ev("partitions_revoked", 101, parts=[1], generation=2),
              ev("partitions_assigned", 102, parts=[], generation=2), ev("group_joined", 300, generation=4),
              ev("partitions_assigned", 302, parts=[1], generation=4)],
        "b": [start(**coop), ev("group_joined", 200, generation=3), ev("partitions_assigned", 201, parts=[1], generation=3),
              ev("partitions_revoked", 250, parts=[1], generation=3), ev("shutdown_complete", 260)],
    })
    assert findings(report) == []


def test_cooperative_checks_need_generations(tmp_path: Path) -> None:
    report = run_events(tmp_path, {"a": [start(protocol="cooperative"), ev("partitions_assigned", 1, parts=[0])]})
    notes = unchecked(report)
    assert notes["revoke-only-moved"]["partial"] is False
    assert notes["revoke-before-assign"]["partial"] is True
    assert "generation" in notes["generation-monotonic"]["reason"]


# ------------------------------------------------------------------ subscribed-only


def test_subscribed_only(tmp_path: Path) -> None:
    report = run_events(tmp_path, {
        "a": [start(subscription=["t"]), ev("partitions_assigned", 10, parts=[0]),
              ev("partitions_assigned", 20, partitions=[{"topic": "payments", "partition": 3}])],
    })
    [finding] = findings(report, "subscribed-only")
    assert partitions_of(finding) == [("payments", 3)]
    assert "subscribed-only" not in unchecked(report)


# ------------------------------------------------------------------ converges


def _coordinator(protocol_assignor: str, extra_rebalances: int) -> list[dict[str, object]]:
    events = [ev("coordinator_rebalance", 100, group="g", generation=1, reason="Adding new member m2"),
              ev("coordinator_stable", 200, group="g", generation=2, members=["m1", "m2"], assignor=protocol_assignor)]
    ts = 300
    for i in range(extra_rebalances):
        events += [ev("coordinator_rebalance", ts, group="g", generation=2 + i,
                      reason="Updating metadata for member m2 during Stable; client reason: need to revoke partitions"),
                   ev("coordinator_stable", ts + 50, group="g", generation=3 + i, members=["m1", "m2"],
                      assignor=protocol_assignor)]
        ts += 100
    return events


def test_converges_eager_allows_one_rebalance(tmp_path: Path) -> None:
    assert findings(run_events(tmp_path / "ok", {"c": _coordinator("range", 0)})) == []
    report = run_events(tmp_path / "bad", {"c": _coordinator("range", 1)})
    [finding] = findings(report, "converges")
    assert "eager" in finding["message"] and "within 1" in finding["message"]


def test_converges_cooperative_allows_the_follow_up(tmp_path: Path) -> None:
    assert findings(run_events(tmp_path / "ok", {"c": _coordinator("cooperative-sticky", 1)})) == []
    report = run_events(tmp_path / "bad", {"c": _coordinator("cooperative-sticky", 2)})
    assert len(findings(report, "converges")) == 1


def _synced_all(extra_rebalances: int, skip: tuple[str, int] | None = None,
                late: dict[str, object] | None = None) -> dict[str, list[dict[str, object]]]:
    """One file per member with its SyncGroup answer for each stable generation of ``_coordinator``
    (but ``skip``), plus ``late`` (an answer of m2's) in time order."""
    times = {2: 250, **{3 + i: 370 + 100 * i for i in range(extra_rebalances)}}
    files = {m: [ev("group_synced", t, group="g", member_id=m, generation=g)
                 for g, t in times.items() if (m, g) != skip] for m in ("m1", "m2")}
    if late is not None:
        files["m2"] = sorted([*files["m2"], late], key=lambda e: int(str(e["timestamp"])))
    return files


def test_converges_bound_grows_by_one_for_a_syncgroup_that_lost_the_race(tmp_path: Path) -> None:
    # m2's SyncGroup of generation 3 arrived after the next rebalance had started: it learns (and
    # revokes) one rebalance late, so a third rebalance is within the catalogue's bound.
    late_sync = ev("group_synced", 360, group="g", member_id="m2", generation=3, error="REBALANCE_IN_PROGRESS")
    syncs = _synced_all(2, skip=("m2", 3), late=late_sync)
    assert findings(run_events(tmp_path / "race", {"c": _coordinator("cooperative-sticky", 2), **syncs})) == []
    # ... but only by one: a fourth rebalance is still a violation.
    syncs = _synced_all(3, skip=("m2", 3), late=late_sync)
    report = run_events(tmp_path / "bad", {"c": _coordinator("cooperative-sticky", 3), **syncs})
    [finding] = findings(report, "converges")
    assert "counting 1 SyncGroup(s) that lost a race" in finding["message"]


def test_converges_counts_a_member_that_never_synced_its_generation(tmp_path: Path) -> None:
    # Generation 3 lists m1 and m2, but m2 never reports its SyncGroup answer before the next rebalance
    # (it stalled, or its SyncGroup lost the race): m2 learns its assignment one rebalance late.
    coordinator = _coordinator("cooperative-sticky", 2)
    late = _synced_all(2, skip=("m2", 3))
    assert findings(run_events(tmp_path / "late", {"c": coordinator, **late})) == []
    # When every member of each generation reports its SyncGroup answer, the plain bound applies.
    report = run_events(tmp_path / "all", {"c": coordinator, **_synced_all(2)})
    assert len(findings(report, "converges")) == 1


def test_converges_bound_is_not_stretched_when_the_trace_has_no_sync_answers(tmp_path: Path) -> None:
    # Without any group_synced event nothing says a member missed its sync: the plain bound applies.
    report = run_events(tmp_path, {"c": _coordinator("cooperative-sticky", 2)})
    assert len(findings(report, "converges")) == 1


def test_converges_count_restarts_on_membership_change(tmp_path: Path) -> None:
    events = _coordinator("range", 0) + [
        ev("coordinator_member_removed", 400, group="g", member_id="m2", reason="session-timeout"),
        ev("coordinator_rebalance", 401, group="g", generation=2, reason="removing member m2 on heartbeat expiration"),
        ev("coordinator_stable", 450, group="g", generation=3, members=["m1"], assignor="range")]
    assert findings(run_events(tmp_path, {"c": events})) == []


def test_converges_not_checked_without_the_coordinator(tmp_path: Path) -> None:
    report = run_events(tmp_path, {"a": [start(), ev("partitions_assigned", 1, parts=[0])]})
    assert "coordinator" in unchecked(report)["converges"]["reason"]


# ------------------------------------------------------------------ static-rejoin


def _static(reason_after: str | None) -> list[dict[str, object]]:
    events = [ev("coordinator_stable", 100, group="g", generation=4, members=["s1-a", "m2"], state="Stable"),
              ev("coordinator_member_removed", 200, group="g", member_id="s1-a", instance_id="s1", reason="fenced",
                 replaced_by="s1-b")]
    if reason_after is not None:
        events.append(ev("coordinator_rebalance", 201, group="g", generation=4, reason=reason_after))
    return events


def test_static_rejoin_in_stable_must_not_rebalance(tmp_path: Path) -> None:
    report = run_events(tmp_path, {"c": _static("Updating metadata for static member s1-b with instance id s1")})
    [finding] = findings(report, "static-rejoin")
    assert finding["members"] == ["s1"]


def test_static_rejoin_without_rebalance_holds(tmp_path: Path) -> None:
    assert findings(run_events(tmp_path / "quiet", {"c": _static(None)})) == []
    protocol = "Group's selectedProtocol will change because static member s1-b with instance id s1 joined"
    assert findings(run_events(tmp_path / "protocol", {"c": _static(protocol)}), "static-rejoin") == []
    other = "Adding new member m3 with group instance id None; client reason: not provided"
    assert findings(run_events(tmp_path / "other", {"c": _static(other)}), "static-rejoin") == []


def _server_log_shape(events: list[dict[str, object]]) -> list[dict[str, object]]:
    """The same coordinator events as a broker's server.log gives them: member counts, no member lists."""
    out = []
    for e in events:
        e = dict(e)
        members = e.pop("members", None)
        if isinstance(members, list):
            e["member_count"] = len(members)
        out.append(e)
    return out


def test_converges_from_a_server_log_alone_is_unchecked_not_violated(tmp_path: Path) -> None:
    # server.log lists no generation's members and only the leader's SyncGroup: whether a member got its answer
    # late (one more rebalance allowed each time) is unknowable, so a long run is not a violation it can show.
    report = run_events(tmp_path, {"c": _server_log_shape(_coordinator("cooperative-sticky", 2))})
    assert findings(report, "converges") == []
    [reason] = [u["reason"] for u in report["unchecked"] if u["invariant"] == "converges"]
    assert "server.log names neither" in reason


def test_converges_from_a_server_log_counts_the_members_sync_answers(tmp_path: Path) -> None:
    # With the members' logs (group_synced), the generation's member count says how many answers to wait for.
    coordinator = _server_log_shape(_coordinator("cooperative-sticky", 2))
    report = run_events(tmp_path / "all", {"c": coordinator, **_synced_all(2)})
    assert len(findings(report, "converges")) == 1
    # one answer of generation 3 missing: one more rebalance is allowed
    assert findings(run_events(tmp_path / "late", {"c": coordinator, **_synced_all(2, skip=("m2", 3))})) == []
