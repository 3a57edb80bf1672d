"""SyncGroup, Heartbeat and LeaveGroup: transitions and error codes in Kafka's check order
(GroupMetadataManager.classicGroupSync* / classicGroupHeartbeat* / classicGroupLeave*, Kafka 4.1.1)."""

from __future__ import annotations

from dataclasses import replace

from model import events as ev
from model.classic.coordinator import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    assignment_of,
    member,
    member_ids,
    pending_member_ids,
)
from model.messages import (
    Errors,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    SyncGroupResponse,
)
from tests.model.test_coordinator_harness import SESSION, Harness, tp


def completing(h: Harness) -> dict[str, str]:
    """a-1 (leader), b-2, c-3 in CompletingRebalance, generation 1."""
    ids = {c: h.new_member(c) for c in ("a#1", "b#1", "c#1")}
    h.settle()
    assert h.group.state is COMPLETING_REBALANCE
    return ids


# --- SyncGroup ----------------------------------------------------------------------------------


def test_completing_rebalance_to_stable_on_leader_sync() -> None:
    h = Harness()
    completing(h)
    h.sync("b#1", "b-2")
    h.no_reply("b#1")  # followers wait for the leader
    assert h.group.state is COMPLETING_REBALANCE
    # The leader leaves c-3 out and names a non-member: c-3 gets an empty assignment.
    h.sync("a#1", "a-1", assignments=(("a-1", (tp(1), tp(0))), ("b-2", (tp(2),)), ("zz", (tp(3),))))
    assert h.group.state is STABLE
    assert h.reply("a#1") == SyncGroupResponse(Errors.NONE, (tp(0), tp(1)), "range")
    assert h.reply("b#1") == SyncGroupResponse(Errors.NONE, (tp(2),), "range")
    h.no_reply("c#1")  # it has not sent its SyncGroup yet
    assert assignment_of(h.group, "c-3") == ()
    [stable] = h.events_named(ev.COORDINATOR_STABLE)
    assert stable["generation"] == 1 and stable["members"] == ["a-1", "b-2", "c-3"]
    assert stable["assignment"]["b-2"] == [{"topic": "t", "partition": 2}]
    assert h.group.pending_sync == frozenset({"c-3"}) and h.group.sync_timer is not None
    h.sync("c#1", "c-3")
    assert h.reply("c#1") == SyncGroupResponse(Errors.NONE, (), "range")
    assert h.group.sync_timer is None  # everyone synced


def test_stable_sync_returns_stored_assignment() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.sync("b#1", ids["b#1"])
    assert h.reply("b#1") == SyncGroupResponse(Errors.NONE, (tp(1), tp(3)), "range")


def test_sync_in_preparing_rebalance_answers_rebalance_in_progress() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("a#1", ids["a#1"])
    h.sync("b#1", ids["b#1"])
    assert h.reply("b#1") == SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS)


def test_sync_on_empty_group_is_unknown_member_id_first() -> None:
    h = Harness()
    h.sync("a#1", "a-1", generation=7, protocol_name="other")
    assert h.reply("a#1") == SyncGroupResponse(Errors.UNKNOWN_MEMBER_ID)


def test_sync_on_dead_group_is_coordinator_not_available() -> None:
    h = Harness()
    completing(h)
    h.group = replace(h.group, state=DEAD)
    h.sync("x#1", "nobody", generation=9)
    assert h.reply("x#1") == SyncGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE)


def test_sync_error_order_identity_then_generation_then_protocol() -> None:
    h = Harness()
    completing(h)
    h.sync("x#1", "nobody", generation=9, protocol_name="other")
    assert h.reply("x#1") == SyncGroupResponse(Errors.UNKNOWN_MEMBER_ID)
    h.sync("b#1", "b-2", generation=9, protocol_name="other")
    assert h.reply("b#1") == SyncGroupResponse(Errors.ILLEGAL_GENERATION)
    h.sync("b#1", "b-2", protocol_name="other")
    assert h.reply("b#1") == SyncGroupResponse(Errors.INCONSISTENT_GROUP_PROTOCOL)
    h.sync("b#1", "b-2", protocol_name="range")
    h.no_reply("b#1")  # valid: parked


# --- Heartbeat ----------------------------------------------------------------------------------


def test_heartbeat_in_preparing_rebalance_answers_rebalance_in_progress() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("a#1", ids["a#1"])
    h.advance(4000)
    h.heartbeat("b#1", ids["b#1"])
    assert h.reply("b#1") == HeartbeatResponse(Errors.REBALANCE_IN_PROGRESS)
    b = member(h.group, ids["b#1"])
    assert b is not None and b.heartbeat_deadline == h.now + SESSION  # the session timer was reset


def test_heartbeat_with_older_generation_in_preparing_rebalance_is_illegal_generation() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("a#1", ids["a#1"])
    h.heartbeat("b#1", ids["b#1"], generation=0)
    assert h.reply("b#1") == HeartbeatResponse(Errors.ILLEGAL_GENERATION)


def test_heartbeat_in_completing_rebalance_and_stable_is_none() -> None:
    h = Harness()
    ids = completing(h)
    h.heartbeat("b#1", ids["b#1"])
    assert h.reply("b#1") == HeartbeatResponse(Errors.NONE)
    h.sync("b#1", ids["b#1"])
    h.sync("c#1", ids["c#1"])
    h.sync("a#1", ids["a#1"])
    h.heartbeat("b#1", ids["b#1"])
    assert h.reply("b#1") == HeartbeatResponse(Errors.NONE)


def test_heartbeat_on_empty_group_is_unknown_member_id() -> None:
    h = Harness()
    h.heartbeat("a#1", "a-1", generation=0)
    assert h.reply("a#1") == HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID)


def test_heartbeat_error_order_dead_identity_generation() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1"])
    h.heartbeat("x#1", "nobody", generation=5)
    assert h.reply("x#1") == HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID)
    h.heartbeat("a#1", ids["a#1"], generation=5)
    assert h.reply("a#1") == HeartbeatResponse(Errors.ILLEGAL_GENERATION)
    h.group = replace(h.group, state=DEAD)
    h.heartbeat("x#1", "nobody", generation=5)
    assert h.reply("x#1") == HeartbeatResponse(Errors.COORDINATOR_NOT_AVAILABLE)


def test_heartbeat_from_pending_member_is_unknown_member_id() -> None:
    h = Harness()
    h.join("a#1")
    h.heartbeat("a#1", "a-1", generation=0)
    assert h.reply("a#1") == HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID)


# --- LeaveGroup -----------------------------------------------------------------------------------


def test_stable_to_preparing_rebalance_on_leave() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.leave("b#1", (ids["b#1"], None))
    assert h.reply("b#1") == LeaveGroupResponse(Errors.NONE, ((ids["b#1"], Errors.NONE),))
    assert h.group.state is PREPARING_REBALANCE
    [removed] = h.events_named(ev.COORDINATOR_MEMBER_REMOVED)
    assert (removed["member_id"], removed["reason"]) == ("b-2", "left")
    [rebalance] = h.events_named(ev.COORDINATOR_REBALANCE)
    assert rebalance["reason"] == "explicit `LeaveGroup` request for (b-2) members."


def test_completing_rebalance_to_preparing_rebalance_on_leave() -> None:
    h = Harness()
    ids = completing(h)
    h.sync("b#1", ids["b#1"])
    h.leave("c#1", (ids["c#1"], None))
    assert h.group.state is PREPARING_REBALANCE
    assert h.reply("b#1") == SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS)


def test_leave_batch_answers_each_member_in_order() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("p#1")  # p-3 is pending
    h.leave("admin#1", ("nobody", None), (ids["b#1"], None), ("p-3", None), (ids["b#1"], None))
    assert h.reply("admin#1") == LeaveGroupResponse(Errors.NONE, (
        ("nobody", Errors.UNKNOWN_MEMBER_ID), ("b-2", Errors.NONE), ("p-3", Errors.NONE),
        ("b-2", Errors.UNKNOWN_MEMBER_ID)))
    assert member_ids(h.group) == ("a-1",) and pending_member_ids(h.group) == ()
    assert h.group.state is PREPARING_REBALANCE


def test_leave_of_only_a_pending_member_in_stable_still_rebalances() -> None:
    # Kafka counts the pending member among the valid leavers, and a Stable group rebalances.
    h = Harness()
    h.stable_group(dynamic=["a#1"])
    h.join("p#1")
    h.leave("p#1", ("p-2", None))
    assert h.group.state is PREPARING_REBALANCE


def test_leader_leave_elects_first_remaining_member() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1", "c#1"])
    h.leave("a#1", (ids["a#1"], None))
    assert h.group.leader == "b-2"


def test_leave_in_preparing_rebalance_completes_join_phase() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("a#1", ids["a#1"])
    h.leave("b#1", (ids["b#1"], None))  # the one member that had not rejoined
    assert h.group.state is COMPLETING_REBALANCE and member_ids(h.group) == ("a-1",)


def test_leave_during_initial_rebalance_does_not_complete_join_phase() -> None:
    h = Harness()
    h.new_member("a#1")
    h.new_member("b#1")
    h.leave("b#1", ("b-2", None))
    assert h.group.state is PREPARING_REBALANCE  # the initial delay cannot be cut short


def test_leave_answers_a_parked_join_unknown_member_id() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("a#1", ids["a#1"])
    h.leave("a#2", (ids["a#1"], None))
    assert h.reply("a#1") == JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID, member_id="")
    assert h.reply("a#2") == LeaveGroupResponse(Errors.NONE, (("a-1", Errors.NONE),))


def test_leave_on_empty_group_is_unknown_member_id() -> None:
    h = Harness()
    h.leave("a#1", ("a-1", None))
    assert h.reply("a#1") == LeaveGroupResponse(Errors.NONE, (("a-1", Errors.UNKNOWN_MEMBER_ID),))
    assert h.group.state is EMPTY


def test_leave_on_dead_group_is_coordinator_not_available() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1"])
    h.group = replace(h.group, state=DEAD)
    h.leave("a#1", (ids["a#1"], None))
    assert h.reply("a#1") == LeaveGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE)
    assert member_ids(h.group) == ("a-1",)

