"""JoinGroup: the join phase, its completion, protocol selection, and JoinGroup's error codes in
Kafka's check order (GroupMetadataManager.classicGroupJoin*, Kafka 4.1.1)."""

from __future__ import annotations

from dataclasses import replace

from model import events as ev
from model.classic.coordinator import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    CoordinatorConfig,
    JoinTimer,
    member,
    member_ids,
    pending_member_ids,
)
from model.messages import ConsumerProtocolSubscription, Errors, JoinGroupResponse, SyncGroupResponse
from tests.model.test_coordinator_harness import (
    RANGE,
    RANGE_THEN_RR,
    REBALANCE,
    ROUNDROBIN,
    RR_THEN_RANGE,
    SUB,
    SUB2,
    Harness,
)


def join_response(h: Harness, conn: str) -> JoinGroupResponse:
    r = h.reply(conn)
    assert isinstance(r, JoinGroupResponse), r
    return r


# --- KIP-394 and the initial rebalance -----------------------------------------------------


def test_member_id_required_two_step_join() -> None:
    h = Harness()
    h.join("a#1")
    first = join_response(h, "a#1")
    assert (first.error, first.member_id, first.generation) == (Errors.MEMBER_ID_REQUIRED, "a-1", -1)
    assert h.group.state is EMPTY
    assert pending_member_ids(h.group) == ("a-1",)
    assert member_ids(h.group) == ()

    h.join("a#1", "a-1")
    h.no_reply("a#1")  # parked until the join phase completes
    assert h.group.state is PREPARING_REBALANCE
    assert pending_member_ids(h.group) == ()
    a = member(h.group, "a-1")
    assert a is not None and a.awaiting_join == "a#1" and a.is_new


def test_empty_to_preparing_rebalance_on_first_join() -> None:
    h = Harness()
    h.new_member("a#1")
    [rebalance] = h.events_named(ev.COORDINATOR_REBALANCE)
    assert (rebalance["previous_state"], rebalance["generation"]) == ("Empty", 0)
    assert rebalance["reason"].startswith("Adding new member a-1 with group instance id null")
    # InitialDelayedJoin: the delay, with rebalance timeout - delay left to extend it by.
    assert h.group.join_timer == JoinTimer(3000, initial=True, delay_ms=3000, remaining_ms=REBALANCE - 3000)


def test_initial_delay_cannot_end_early() -> None:
    h = Harness()
    h.new_member("a#1")  # every member has joined, yet the initial delay runs its course
    h.advance(2999)
    assert h.group.state is PREPARING_REBALANCE
    h.no_reply("a#1")
    h.advance(1)
    assert h.group.state is COMPLETING_REBALANCE
    a = join_response(h, "a#1")
    assert (a.error, a.generation, a.leader, a.protocol_name) == (Errors.NONE, 1, "a-1", "range")
    assert [m.member_id for m in a.members] == ["a-1"]


def test_initial_delay_extended_by_min_delay_remaining_while_members_arrive() -> None:
    h = Harness()
    h.new_member("a#1", rebalance=10_000)  # t=0: wait 3000, remaining 7000
    h.advance(1000)
    h.new_member("b#1", rebalance=10_000)
    h.advance(2000)  # t=3000: b arrived -> wait min(3000, 7000), remaining 7000-3000
    assert h.group.join_timer == JoinTimer(6000, True, 3000, 4000)
    h.advance(1000)
    h.new_member("c#1", rebalance=10_000)
    h.advance(2000)  # t=6000
    assert h.group.join_timer == JoinTimer(9000, True, 3000, 1000)
    h.advance(2000)
    h.new_member("d#1", rebalance=10_000)
    h.advance(1000)  # t=9000: wait min(3000, 1000), nothing left after
    assert h.group.join_timer == JoinTimer(10_000, True, 1000, 0)
    h.advance(500)
    h.new_member("e#1", rebalance=10_000)
    h.advance(499)
    assert h.group.state is PREPARING_REBALANCE
    h.advance(1)  # t=10000 = the rebalance timeout: no time remains, complete
    assert h.group.state is COMPLETING_REBALANCE
    assert len(h.group.members) == 5 and h.group.generation == 1


def test_initial_delay_not_extended_without_new_members() -> None:
    h = Harness()
    h.new_member("a#1")
    h.advance(3000)
    assert h.group.state is COMPLETING_REBALANCE


def test_pending_member_expiry_ends_the_initial_delay_early() -> None:
    # Kafka quirk, kept: removePendingMemberAndUpdateClassicGroup completes the join phase directly,
    # without maybeCompleteJoinPhase's initial-rebalance guard.
    h = Harness(CoordinatorConfig(initial_rebalance_delay_ms=10_000))
    h.new_member("a#1")
    h.join("b#1", session=6000)  # b never comes back with its id
    h.advance(5999)
    assert h.group.state is PREPARING_REBALANCE
    h.advance(1)
    assert h.group.state is COMPLETING_REBALANCE and h.now == 6000


def test_new_member_in_a_later_rebalance_is_not_an_initial_delay() -> None:
    h = Harness()
    h.stable_group(dynamic=["a#1"])
    h.new_member("b#1")
    assert h.group.state is PREPARING_REBALANCE and h.group.previous_state is STABLE
    assert h.group.join_timer == JoinTimer(h.now + REBALANCE, initial=False)
    assert not h.group.new_member_added


# --- completing the join phase -------------------------------------------------------------


def test_stable_to_preparing_rebalance_on_new_member_join() -> None:
    h = Harness()
    h.stable_group(dynamic=["a#1", "b#1"])
    h.new_member("c#1")
    assert h.group.state is PREPARING_REBALANCE
    [rebalance] = h.events_named(ev.COORDINATOR_REBALANCE)
    assert (rebalance["previous_state"], rebalance["generation"]) == ("Stable", 1)


def test_preparing_rebalance_to_completing_rebalance_when_all_members_rejoined() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    c = h.new_member("c#1")
    h.join("a#1", ids["a#1"])
    assert h.group.state is PREPARING_REBALANCE
    h.join("b#1", ids["b#1"])  # the last one: no timer needed
    assert h.group.state is COMPLETING_REBALANCE and h.group.generation == 2
    a, b, cc = join_response(h, "a#1"), join_response(h, "b#1"), join_response(h, "c#1")
    assert {a.generation, b.generation, cc.generation} == {2}
    assert {a.leader, b.leader, cc.leader} == {"a-1"}
    # Only the leader gets the member list, with each member's metadata for the chosen protocol.
    assert [m.member_id for m in a.members] == ["a-1", "b-2", c]
    assert all(m.metadata == SUB for m in a.members)
    assert b.members == () and cc.members == ()
    assert h.group.pending_sync == frozenset({"a-1", "b-2", c})
    assert h.group.sync_timer is not None and h.group.sync_timer.deadline == h.now + REBALANCE


def test_preparing_rebalance_to_completing_rebalance_at_rebalance_timeout_removes_dynamic_laggards() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.heartbeat("b#1", ids["b#1"])
    h.join("a#1", ids["a#1"])  # the leader rejoins: a rebalance; b keeps heartbeating but never rejoins
    for _ in range(3):
        h.advance(9000)
        h.heartbeat("b#1", ids["b#1"])
    h.advance(REBALANCE - 27_000)
    assert h.group.state is COMPLETING_REBALANCE
    assert member_ids(h.group) == ("a-1",)
    removed = h.events_named(ev.COORDINATOR_MEMBER_REMOVED)
    assert [(e["member_id"], e["reason"]) for e in removed] == [("b-2", "rebalance-timeout")]


def test_leader_reelected_when_leader_did_not_rejoin() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1", "c#1"], session=60_000)
    h.join("c#1", ids["c#1"], protocols=(("range", SUB2),), session=60_000)  # new subscription: rebalance
    h.join("b#1", ids["b#1"], session=60_000)
    h.advance(REBALANCE)  # a (the leader) never rejoined, and is removed
    assert h.group.state is COMPLETING_REBALANCE
    assert [(e["member_id"], e["reason"]) for e in h.events_named(ev.COORDINATOR_MEMBER_REMOVED)] == [
        ("a-1", "rebalance-timeout")]
    assert h.group.leader == "b-2"  # the first rejoined member in member-id order
    b = join_response(h, "b#1")
    assert b.leader == "b-2" and [m.member_id for m in b.members] == ["b-2", "c-3"]


def test_no_member_rejoined_reschedules_join_phase() -> None:
    h = Harness()
    h.join("s#1", instance_id="s", session=100_000)  # a static member with a long session
    h.new_member("d#1")
    h.settle()
    ids = {"s#1": "s-1", "d#1": "d-2"}
    h.finish_sync(ids)
    stable_at = h.now
    h.leave("d#1", ("d-2", None))  # the static member does not rejoin
    assert h.group.state is PREPARING_REBALANCE
    h.advance(REBALANCE)
    assert h.group.state is PREPARING_REBALANCE and h.group.generation == 1  # nobody to complete with
    assert member_ids(h.group) == ("s-1",)
    assert h.group.join_timer == JoinTimer(h.now + REBALANCE, initial=False)
    h.advance(stable_at + 100_000 - h.now)  # its session expires; the join phase completes, empty
    assert h.group.state is EMPTY and h.group.generation == 2


def test_preparing_rebalance_to_empty_when_all_members_left() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.leave("a#1", (ids["a#1"], None))
    assert h.group.state is PREPARING_REBALANCE
    h.leave("b#1", (ids["b#1"], None))
    assert h.group.state is EMPTY
    assert h.group.generation == 2  # initNextGeneration runs even when nobody is left
    assert h.group.protocol_name is None and h.group.leader is None
    [empty] = h.events_named(ev.COORDINATOR_STATE)
    assert (empty["state"], empty["previous_state"], empty["generation"]) == ("Empty", "PreparingRebalance", 2)


def test_empty_group_joined_again_waits_the_initial_delay_again() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1"])
    h.leave("a#1", (ids["a#1"], None))
    assert h.group.state is EMPTY
    h.new_member("a#2")
    assert h.group.join_timer is not None and h.group.join_timer.initial
    h.settle()
    assert h.group.generation == 3


# --- protocol selection ----------------------------------------------------------------------


def complete_with(*protocol_lists: tuple[tuple[str, ConsumerProtocolSubscription], ...]) -> Harness:
    h = Harness()
    for i, protocols in enumerate(protocol_lists):
        h.new_member(f"m{i}#1", protocols=protocols)
    h.settle()
    return h


def test_protocol_selected_by_vote() -> None:
    h = complete_with(RANGE_THEN_RR, RR_THEN_RANGE, RR_THEN_RANGE)
    assert h.group.protocol_name == "roundrobin"


def test_protocol_vote_tie_goes_to_smallest_name() -> None:
    assert complete_with(RR_THEN_RANGE, RANGE_THEN_RR).group.protocol_name == "range"
    assert complete_with(RANGE_THEN_RR, RR_THEN_RANGE).group.protocol_name == "range"


def test_protocol_candidates_are_those_every_member_supports() -> None:
    h = complete_with(RR_THEN_RANGE, RANGE)  # the first member prefers roundrobin, only range is common
    assert h.group.protocol_name == "range"


def test_join_with_unsupported_protocol_is_inconsistent_group_protocol() -> None:
    h = Harness()
    h.stable_group(dynamic=["a#1"])
    h.join("b#1", protocols=ROUNDROBIN)
    assert join_response(h, "b#1") == JoinGroupResponse(Errors.INCONSISTENT_GROUP_PROTOCOL, member_id="")
    assert h.group.state is STABLE


# --- rejoining members outside PreparingRebalance ------------------------------------------


def completing(h: Harness) -> dict[str, str]:
    ids = {"a#1": h.new_member("a#1"), "b#1": h.new_member("b#1")}
    h.settle()
    assert h.group.state is COMPLETING_REBALANCE
    return ids


def test_completing_rebalance_join_with_same_metadata_is_answered_with_current_generation() -> None:
    h = Harness()
    ids = completing(h)
    h.join("b#1", ids["b#1"])
    assert join_response(h, "b#1") == JoinGroupResponse(Errors.NONE, 1, "range", "a-1", "b-2")
    h.join("a#1", ids["a#1"])
    assert [m.member_id for m in join_response(h, "a#1").members] == ["a-1", "b-2"]
    assert h.group.state is COMPLETING_REBALANCE and h.group.generation == 1


def test_completing_rebalance_to_preparing_rebalance_on_new_member() -> None:
    h = Harness()
    ids = completing(h)
    h.sync("b#1", ids["b#1"])  # parked, waiting for the leader
    h.new_member("c#1")
    assert h.group.state is PREPARING_REBALANCE
    assert h.reply("b#1") == SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS)
    assert h.group.pending_sync == frozenset() and h.group.sync_timer is None


def test_completing_rebalance_to_preparing_rebalance_on_metadata_change() -> None:
    h = Harness()
    ids = completing(h)
    h.join("b#1", ids["b#1"], protocols=(("range", SUB2),))
    assert h.group.state is PREPARING_REBALANCE
    h.no_reply("b#1")


def test_stable_follower_join_with_same_metadata_is_answered_with_current_generation() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("b#1", ids["b#1"])
    assert join_response(h, "b#1") == JoinGroupResponse(Errors.NONE, 1, "range", "a-1", "b-2")
    assert h.group.state is STABLE


def test_stable_to_preparing_rebalance_on_leader_join() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("a#1", ids["a#1"])  # same metadata, but the leader may want new topic metadata assigned
    assert h.group.state is PREPARING_REBALANCE
    assert h.events_named(ev.COORDINATOR_REBALANCE)[0]["reason"].startswith("Leader a-1 re-joining group")


def test_stable_to_preparing_rebalance_on_follower_metadata_change() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("b#1", ids["b#1"], protocols=(("range", SUB2),))
    assert h.group.state is PREPARING_REBALANCE
    h.no_reply("b#1")


def test_join_in_preparing_rebalance_replaces_a_parked_join_without_answering_it() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("a#1", ids["a#1"])
    h.join("a#2", ids["a#1"])  # the client retried on a new connection
    h.no_reply("a#1")
    h.join("b#1", ids["b#1"])
    assert {r.conn for r in h.replies} == {"a#2", "b#1"}


# --- pending members ---------------------------------------------------------------------------


def test_pending_member_blocks_join_completion() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("a#1", ids["a#1"])
    h.join("c#1")  # MEMBER_ID_REQUIRED: c-3 is pending
    h.join("b#1", ids["b#1"])
    assert h.group.state is PREPARING_REBALANCE  # every member rejoined, but c-3 is pending
    h.join("c#1", "c-3")
    assert h.group.state is COMPLETING_REBALANCE
    assert member_ids(h.group) == ("a-1", "b-2", "c-3")


def test_pending_member_expires_after_session_timeout() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("a#1", ids["a#1"])
    h.join("c#1", session=7000)
    h.join("b#1", ids["b#1"])
    h.advance(6999)
    assert h.group.state is PREPARING_REBALANCE
    h.advance(1)
    assert pending_member_ids(h.group) == ()
    assert [(e["member_id"], e["reason"]) for e in h.events_named(ev.COORDINATOR_MEMBER_REMOVED)] == [
        ("c-3", "pending-expired")]
    assert h.group.state is COMPLETING_REBALANCE  # long before the rebalance timeout


def test_new_member_join_timeout_answers_parked_join_unknown_member_id() -> None:
    h = Harness(CoordinatorConfig(new_member_join_timeout_ms=5000))
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("a#1", ids["a#1"])
    c = h.new_member("c#1")  # parked, new; b never rejoins, so the phase lasts the rebalance timeout
    h.advance(5000)
    assert h.reply("c#1") == JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID, member_id="")
    assert member(h.group, c) is None
    assert h.group.state is PREPARING_REBALANCE


# --- error codes, in Kafka's order ---------------------------------------------------------


def test_join_invalid_session_timeout_is_checked_first() -> None:
    h = Harness()
    h.group = replace(h.group, state=DEAD)
    h.join("a#1", "x", session=5999, protocols=())
    assert join_response(h, "a#1") == JoinGroupResponse(Errors.INVALID_SESSION_TIMEOUT, member_id="x")
    h.join("a#1", session=1_800_001)
    assert join_response(h, "a#1").error is Errors.INVALID_SESSION_TIMEOUT
    h.join("a#1", session=1_800_000)
    assert join_response(h, "a#1").error is Errors.COORDINATOR_NOT_AVAILABLE


def test_join_group_max_size_reached_before_protocol_check() -> None:
    h = Harness(CoordinatorConfig(max_group_size=2))
    h.stable_group(dynamic=["a#1", "b#1"])
    h.join("c#1", protocols=ROUNDROBIN)
    assert join_response(h, "c#1") == JoinGroupResponse(Errors.GROUP_MAX_SIZE_REACHED, member_id="")


def test_join_group_max_size_removes_a_member_that_rejoins_too_late() -> None:
    h = Harness(CoordinatorConfig(max_group_size=2))
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("a#1", ids["a#1"])
    h.new_member("c#1")  # PreparingRebalance counts parked joins: c's is the second of 2
    h.join("b#1", ids["b#1"])
    assert join_response(h, "b#1") == JoinGroupResponse(Errors.GROUP_MAX_SIZE_REACHED, member_id="")
    assert member(h.group, ids["b#1"]) is None
    assert [(e["member_id"], e["reason"]) for e in h.events_named(ev.COORDINATOR_MEMBER_REMOVED)] == [
        ("b-2", "group-max-size")]
    assert h.group.state is PREPARING_REBALANCE  # Kafka does not try to complete the join phase here


def test_join_dead_group_is_coordinator_not_available_before_protocol_check() -> None:
    h = Harness()
    h.group = replace(h.group, state=DEAD)
    h.join("a#1", protocols=())
    assert join_response(h, "a#1") == JoinGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE, member_id="")
    h.join("a#1", "a-7", protocols=())
    assert join_response(h, "a#1") == JoinGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE, member_id="a-7")


def test_join_protocol_mismatch_is_checked_before_member_identity() -> None:
    h = Harness()
    h.stable_group(dynamic=["a#1"])
    h.join("x#1", "nobody", protocols=ROUNDROBIN)
    assert join_response(h, "x#1").error is Errors.INCONSISTENT_GROUP_PROTOCOL
    h.join("x#1", "nobody")
    assert join_response(h, "x#1") == JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID, member_id="nobody")


def test_join_empty_group_with_a_member_id_is_unknown_member_id() -> None:
    h = Harness()
    h.join("a#1", "a-1")
    assert join_response(h, "a#1").error is Errors.UNKNOWN_MEMBER_ID
    assert h.group.state is EMPTY


def test_join_with_no_protocols_is_inconsistent_group_protocol() -> None:
    h = Harness()
    h.join("a#1", protocols=())
    assert join_response(h, "a#1").error is Errors.INCONSISTENT_GROUP_PROTOCOL
    assert h.group.state is EMPTY and h.group.member_id_seq == 0
