"""Static membership (KIP-345): restarts replace the member id, the old id is fenced, and a restart
rebalances only where Kafka 4.x says (updateStaticMemberThenRebalanceOrCompleteJoin, KAFKA-9801)."""

from __future__ import annotations

from model import events as ev
from model.classic.coordinator import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    assignment_of,
    member,
    member_ids,
    static_members,
)
from model.messages import (
    Errors,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    SyncGroupResponse,
)
from tests.model.test_coordinator_harness import (
    RANGE_THEN_RR,
    REBALANCE,
    ROUNDROBIN,
    SESSION,
    Harness,
    tp,
)


def stable_with_static(session: int = SESSION) -> tuple[Harness, dict[str, str]]:
    """a-1 (dynamic, leader) and ic-2 (static, instance "ic"), Stable in generation 1."""
    h = Harness()
    ids = {"a#1": h.new_member("a#1", session=session)}
    h.join("c#1", instance_id="ic", session=session)
    ids["c#1"] = "ic-2"
    h.settle()
    h.finish_sync(ids)
    return h, ids


def test_new_static_member_joins_without_member_id_required() -> None:
    h = Harness()
    h.join("c#1", instance_id="ic")
    h.no_reply("c#1")  # parked straight away: static members skip KIP-394's extra round trip
    assert static_members(h.group) == (("ic", "ic-1"),)
    assert h.group.state is PREPARING_REBALANCE


def test_static_rejoin_in_stable_keeps_generation() -> None:
    h, _ = stable_with_static()
    before = assignment_of(h.group, "ic-2")
    assert before == (tp(1), tp(3))
    h.join("c#2", instance_id="ic")  # the static member restarted: no member id, same instance id
    assert h.reply("c#2") == JoinGroupResponse(Errors.NONE, 1, "range", "a-1", "ic-3")
    assert h.group.state is STABLE and h.group.generation == 1
    assert h.events_named(ev.COORDINATOR_REBALANCE) == []
    assert member(h.group, "ic-2") is None
    assert assignment_of(h.group, "ic-3") == before
    assert static_members(h.group) == (("ic", "ic-3"),)
    [fenced] = h.events_named(ev.COORDINATOR_MEMBER_REMOVED)
    assert (fenced["member_id"], fenced["reason"], fenced["instance_id"]) == ("ic-2", "fenced", "ic")
    h.sync("c#2", "ic-3", instance_id="ic")
    assert h.reply("c#2") == SyncGroupResponse(Errors.NONE, before, "range")


def test_old_static_member_id_is_fenced() -> None:
    h, _ = stable_with_static()
    h.join("c#2", instance_id="ic")
    h.heartbeat("c#1", "ic-2", instance_id="ic")
    assert h.reply("c#1") == HeartbeatResponse(Errors.FENCED_INSTANCE_ID)
    h.sync("c#1", "ic-2", instance_id="ic")
    assert h.reply("c#1") == SyncGroupResponse(Errors.FENCED_INSTANCE_ID)
    h.commit("c#1", "ic-2", 1, instance_id="ic")
    assert h.reply("c#1") == OffsetCommitResponse(Errors.FENCED_INSTANCE_ID, ((tp(0), Errors.FENCED_INSTANCE_ID),))
    h.join("c#1", "ic-2", instance_id="ic")
    assert h.reply("c#1") == JoinGroupResponse(Errors.FENCED_INSTANCE_ID, member_id="ic-2")
    h.leave("c#1", ("ic-2", "ic"))
    assert h.reply("c#1") == LeaveGroupResponse(Errors.NONE, (("ic-2", Errors.FENCED_INSTANCE_ID),))
    h.heartbeat("c#1", "ic-2")  # without its instance id the old id is simply unknown
    assert h.reply("c#1") == HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID)
    assert h.group.state is STABLE


def test_unknown_instance_id_with_a_member_id_is_unknown_member_id() -> None:
    h, ids = stable_with_static()
    h.heartbeat("a#1", ids["a#1"], instance_id="nope")
    assert h.reply("a#1") == HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID)


def test_static_leader_rejoin_in_stable_gets_skip_assignment_and_member_list() -> None:
    h = Harness()
    h.join("c#1", instance_id="ic")
    h.join("d#1", instance_id="id")
    h.settle()
    h.finish_sync({"c#1": "ic-1", "d#1": "id-2"})
    assert h.group.leader == "ic-1"
    h.join("c#2", instance_id="ic")
    r = h.reply("c#2")
    assert isinstance(r, JoinGroupResponse)
    assert (r.error, r.generation, r.leader, r.member_id, r.skip_assignment) == (Errors.NONE, 1, "ic-3", "ic-3", True)
    assert [(m.member_id, m.instance_id) for m in r.members] == [("ic-3", "ic"), ("id-2", "id")]
    assert h.group.state is STABLE and h.group.leader == "ic-3"


def test_static_rejoin_in_stable_with_protocol_change_rebalances() -> None:
    h = Harness()
    h.join("c#1", instance_id="ic", protocols=RANGE_THEN_RR)
    h.join("d#1", instance_id="id", protocols=RANGE_THEN_RR)
    h.settle()
    h.finish_sync({"c#1": "ic-1", "d#1": "id-2"})
    assert h.group.protocol_name == "range"
    h.join("c#2", instance_id="ic", protocols=ROUNDROBIN)  # the group would now select roundrobin
    assert h.group.state is PREPARING_REBALANCE
    h.no_reply("c#2")
    assert h.events_named(ev.COORDINATOR_REBALANCE)[0]["reason"].startswith(
        "Group's selectedProtocol will change because static member ic-3")


def test_static_rejoin_in_stable_rebalances_under_mutant() -> None:
    h = Harness(mutants={"static-rejoin-rebalances"})
    ids = {"a#1": h.new_member("a#1")}
    h.join("c#1", instance_id="ic")
    ids["c#1"] = "ic-2"
    h.settle()
    h.finish_sync(ids)
    h.join("c#2", instance_id="ic")
    assert h.group.state is PREPARING_REBALANCE
    h.no_reply("c#2")


def test_completing_rebalance_static_rejoin_rebalances() -> None:
    # KAFKA-9801: the leader's assignment would be keyed by the old member id.
    h = Harness()
    h.new_member("a#1")
    h.join("c#1", instance_id="ic")
    h.settle()
    assert h.group.state is COMPLETING_REBALANCE
    h.sync("c#1", "ic-2", instance_id="ic")  # parked
    h.join("c#2", instance_id="ic")
    assert h.reply("c#1") == SyncGroupResponse(Errors.FENCED_INSTANCE_ID)
    assert h.group.state is PREPARING_REBALANCE
    h.no_reply("c#2")
    assert member(h.group, "ic-3") is not None and member(h.group, "ic-2") is None


def test_static_rejoin_in_preparing_rebalance_replaces_id_and_fences_parked_join() -> None:
    h = Harness()
    ids = {"a#1": h.new_member("a#1"), "b#1": h.new_member("b#1")}
    h.join("c#1", instance_id="ic")
    ids["c#1"] = "ic-3"
    h.settle()
    h.finish_sync(ids)
    h.join("a#1", ids["a#1"])
    h.join("c#1", "ic-3", instance_id="ic")  # parked: b has not rejoined
    h.join("c#2", instance_id="ic")
    assert h.reply("c#1") == JoinGroupResponse(Errors.FENCED_INSTANCE_ID, member_id="ic-3")
    assert h.group.state is PREPARING_REBALANCE and h.group.generation == 1
    h.join("b#1", ids["b#1"])  # now everyone has joined
    assert h.group.state is COMPLETING_REBALANCE
    r = h.reply("c#2")
    assert isinstance(r, JoinGroupResponse) and (r.member_id, r.generation) == ("ic-4", 2)


def test_static_member_kept_at_join_completion() -> None:
    h, ids = stable_with_static()
    h.join("a#1", ids["a#1"])  # the static member does not rejoin, but stays alive
    for _ in range(3):
        h.heartbeat("c#1", "ic-2", instance_id="ic")
        assert h.reply("c#1") == HeartbeatResponse(Errors.REBALANCE_IN_PROGRESS)
        h.advance(9000)
    h.heartbeat("c#1", "ic-2", instance_id="ic")
    h.advance(REBALANCE - 27_000)
    assert h.group.state is COMPLETING_REBALANCE and h.group.generation == 2
    assert member_ids(h.group) == ("a-1", "ic-2")
    c = member(h.group, "ic-2")
    assert c is not None and c.joined_generation == 2
    assert "ic-2" in h.group.pending_sync


def test_static_member_that_never_rejoins_is_removed_by_pending_sync_expiry() -> None:
    # Kept at join completion, it is pending sync like every member: a live member would rejoin (its
    # heartbeat answers ILLEGAL_GENERATION) and sync; a dead one is dropped by the sync timer.
    h, ids = stable_with_static(session=60_000)
    h.join("a#1", ids["a#1"], session=60_000)
    h.advance(REBALANCE)
    assert h.group.state is COMPLETING_REBALANCE
    h.sync("a#1", ids["a#1"], assignments=(("a-1", (tp(0),)), ("ic-2", (tp(1),))))
    assert h.group.state is STABLE
    h.heartbeat("c#1", "ic-2", 1, instance_id="ic")
    assert h.reply("c#1") == HeartbeatResponse(Errors.ILLEGAL_GENERATION)
    h.advance(REBALANCE)
    removed = [(e["member_id"], e["reason"]) for e in h.all_events if e["name"] == ev.COORDINATOR_MEMBER_REMOVED]
    assert ("ic-2", "sync-timeout") in removed


def test_static_rejoin_before_sync_in_stable_still_rebalances_at_sync_deadline() -> None:
    # Kafka 4.x quirk, kept: replaceStaticMember leaves the old id in the pending-sync set.
    h = Harness()
    ids = {"a#1": h.new_member("a#1", session=60_000)}
    h.join("c#1", instance_id="ic", session=60_000)
    h.settle()
    h.sync("a#1", ids["a#1"], assignments=(("a-1", (tp(0),)), ("ic-2", (tp(1),))))
    assert h.group.state is STABLE and h.group.pending_sync == frozenset({"ic-2"})
    h.join("c#2", instance_id="ic", session=60_000)
    h.sync("c#2", "ic-3", instance_id="ic")
    assert h.reply("c#2") == SyncGroupResponse(Errors.NONE, (tp(1),), "range")
    assert h.group.pending_sync == frozenset({"ic-2"})  # the old id, which will never sync
    h.advance(REBALANCE)
    assert h.group.state is PREPARING_REBALANCE
    [rebalance] = h.events_named(ev.COORDINATOR_REBALANCE)
    assert rebalance["reason"] == "Removing [ic-2] on pending sync request expiration"
    assert h.events_named(ev.COORDINATOR_MEMBER_REMOVED) == []  # nobody actually removed


def test_session_expiry_removes_a_static_member() -> None:
    h, ids = stable_with_static()
    for _ in range(3):
        h.advance(4000)
        h.heartbeat("a#1", ids["a#1"])
    removed = [(e["member_id"], e["reason"]) for e in h.all_events if e["name"] == ev.COORDINATOR_MEMBER_REMOVED]
    assert removed == [("ic-2", "session-timeout")]
    assert h.group.state is PREPARING_REBALANCE


def test_admin_leave_by_instance_id() -> None:
    h, _ = stable_with_static()
    h.leave("admin#1", ("", "ic"), ("", "nope"), ("", None))
    assert h.reply("admin#1") == LeaveGroupResponse(
        Errors.NONE, (("", Errors.NONE), ("", Errors.UNKNOWN_MEMBER_ID), ("", Errors.UNKNOWN_MEMBER_ID)))
    assert member(h.group, "ic-2") is None
    assert h.group.state is PREPARING_REBALANCE


def test_static_member_leaving_an_empty_group_after_everyone_left() -> None:
    h, ids = stable_with_static()
    h.leave("admin#1", ("", "ic"))
    h.leave("a#1", (ids["a#1"], None))
    assert h.group.state is EMPTY and static_members(h.group) == ()
