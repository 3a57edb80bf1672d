"""A coordinator move: the group's persisted record (written where Kafka 4.1 GroupMetadataManager writes
it), the group a new coordinator loads from it (replay + onLoaded), the old coordinator's unload
(onUnloaded), and the error-only answers a broker that is not the coordinator sends."""

from __future__ import annotations

from dataclasses import replace

import pytest

from model import events as ev
from model.classic.coordinator import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    Group,
    StoredGroup,
    StoredMember,
    error_response,
    load,
    load_with_events,
    member,
    next_deadline,
    unload,
)
from model.classic.coordinator.store import EMPTY_GROUP_RECORD
from model.messages import (
    NO_OFFSET,
    ConsumerProtocolSubscription,
    Errors,
    FindCoordinatorRequest,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Request,
    Response,
    SyncGroupRequest,
    SyncGroupResponse,
)
from tests.model.test_coordinator_harness import RANGE, RANGE_THEN_RR, REBALANCE, SESSION, SUB, Harness, tp

SUB_TU = ConsumerProtocolSubscription(topics=("t", "u"))


def two_member_group() -> tuple[Harness, dict[str, str]]:
    """Stable, generation 1: a-1 (leader) owns t-0, t-2; b-2 owns t-1, t-3."""
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    assert ids == {"a#1": "a-1", "b#1": "b-2"} and h.group.leader == "a-1"
    return h, ids


def gen1_record() -> StoredGroup:
    return StoredGroup(generation=1, protocol_name="range", leader="a-1", members=(
        StoredMember("a-1", None, "a", REBALANCE, SESSION, SUB, (tp(0), tp(2))),
        StoredMember("b-2", None, "b", REBALANCE, SESSION, SUB, (tp(1), tp(3))),
    ))


def error_of(h: Harness, conn: str) -> Errors:
    r = h.reply(conn)
    assert isinstance(r, (HeartbeatResponse, SyncGroupResponse, JoinGroupResponse, OffsetCommitResponse)), r
    return r.error


# --- error_response ---------------------------------------------------------------------------

REQUESTS: list[tuple[Request, Response]] = [
    (JoinGroupRequest("a-1", None, SESSION, REBALANCE, RANGE), JoinGroupResponse(Errors.NOT_COORDINATOR)),
    (SyncGroupRequest("a-1", None, 1, "range", (("a-1", (tp(0),)),)), SyncGroupResponse(Errors.NOT_COORDINATOR)),
    (HeartbeatRequest("a-1", None, 1), HeartbeatResponse(Errors.NOT_COORDINATOR)),
    (LeaveGroupRequest((("a-1", None),)), LeaveGroupResponse(Errors.NOT_COORDINATOR)),
    (OffsetCommitRequest("a-1", None, 1, ((tp(0), 5), (tp(1), 6))),
     OffsetCommitResponse(Errors.NOT_COORDINATOR, ((tp(0), Errors.NOT_COORDINATOR), (tp(1), Errors.NOT_COORDINATOR)))),
    (OffsetFetchRequest((tp(0), tp(1))), OffsetFetchResponse(Errors.NOT_COORDINATOR)),
]


@pytest.mark.parametrize(("request_", "expected"), REQUESTS, ids=lambda x: type(x).__name__)
def test_error_response_carries_only_the_error(request_: Request, expected: Response) -> None:
    assert error_response(request_, Errors.NOT_COORDINATOR) == expected
    unavailable = error_response(request_, Errors.COORDINATOR_NOT_AVAILABLE)
    assert type(unavailable) is type(expected)
    assert unavailable.error is Errors.COORDINATOR_NOT_AVAILABLE


def test_error_response_refuses_find_coordinator() -> None:
    with pytest.raises(TypeError, match="FindCoordinatorRequest"):
        error_response(FindCoordinatorRequest("group"), Errors.NOT_COORDINATOR)


@pytest.mark.parametrize("request_", [r for r, _ in REQUESTS[1:5]], ids=lambda x: type(x).__name__)
def test_a_dead_group_answers_what_error_response_builds(request_: Request) -> None:
    h = Harness()
    h.group = replace(h.group, state=DEAD)
    h.send("a#1", request_)
    assert h.reply("a#1") == error_response(request_, Errors.COORDINATOR_NOT_AVAILABLE)


# --- the persisted record: written where Kafka writes it, and only there -----------------------


def test_a_group_never_joined_has_no_record() -> None:
    assert Harness().group.stored is None


def test_the_first_join_writes_the_empty_record() -> None:
    h = Harness()
    h.join("a#1")  # MEMBER_ID_REQUIRED: the group is created, its empty record appended
    assert h.group.stored == EMPTY_GROUP_RECORD == StoredGroup(0, None, None, ())


def test_a_join_that_creates_no_group_writes_nothing() -> None:
    h = Harness()
    h.join("a#1", "a-9")  # a member id on a group that does not exist: UNKNOWN_MEMBER_ID, no group
    assert error_of(h, "a#1") is Errors.UNKNOWN_MEMBER_ID
    h.join("a#1", session=1)  # the session timeout is checked before the group is looked up
    assert error_of(h, "a#1") is Errors.INVALID_SESSION_TIMEOUT
    assert h.group.stored is None


def test_a_rejected_first_join_still_creates_the_group() -> None:
    h = Harness()
    h.join("a#1", protocols=())
    assert error_of(h, "a#1") is Errors.INCONSISTENT_GROUP_PROTOCOL
    assert h.group.stored == EMPTY_GROUP_RECORD


def test_a_group_created_by_a_simple_commit_gets_no_empty_record_on_its_first_join() -> None:
    h = Harness()
    h.commit("s#1", "", -1)
    h.join("a#1")
    assert h.group.stored is None


def test_completing_the_join_phase_with_members_writes_nothing() -> None:
    h = Harness()
    h.new_member("a#1")
    h.settle()
    assert h.group.state is COMPLETING_REBALANCE and h.group.generation == 1
    assert h.group.stored == EMPTY_GROUP_RECORD


def test_the_leaders_sync_writes_the_generation_with_its_assignment() -> None:
    h, _ = two_member_group()
    assert h.group.stored == gen1_record()


def test_the_record_keeps_each_members_subscription_for_the_selected_protocol_only() -> None:
    h = Harness()
    protocols = (("range", SUB), ("roundrobin", SUB_TU))
    ids = {"a#1": h.new_member("a#1", protocols=protocols), "b#1": h.new_member("b#1", protocols=protocols)}
    h.settle()
    leader = h.group.leader
    follower = ids["b#1"] if leader == ids["a#1"] else ids["a#1"]
    h.sync("x", follower)
    h.sync("y", leader, assignments=((leader, (tp(0),)),))  # the follower is left out
    record = h.group.stored
    assert record is not None and record.protocol_name == "range"
    assert {m.member_id: (m.subscription, m.assignment) for m in record.members} == {
        leader: (SUB, (tp(0),)), follower: (SUB, ())}


def test_leaving_expiring_heartbeating_and_committing_write_nothing() -> None:
    h, ids = two_member_group()
    h.heartbeat("a#1", ids["a#1"])
    h.commit("a#1", ids["a#1"], 1)
    h.leave("b#1", (ids["b#1"], None))  # a rebalance starts
    assert h.group.state is PREPARING_REBALANCE
    assert h.group.stored == gen1_record()
    h.advance(SESSION + 1)  # a-1 never rejoins: expired, and the join phase ends with nobody
    assert h.group.members == () and h.group.state is EMPTY
    assert h.group.stored == StoredGroup(2, None, None, ())


def test_a_join_phase_ending_empty_writes_the_empty_generation() -> None:
    h, ids = two_member_group()
    h.leave("a#1", (ids["a#1"], None), (ids["b#1"], None))
    assert h.group.state is EMPTY and h.group.generation == 2
    assert h.group.stored == StoredGroup(2, None, None, ())


def test_a_static_member_replaced_in_stable_is_written_under_its_new_id() -> None:
    h = Harness()
    h.stable_group(dynamic=["a#1"], static=[("c#1", "ic")])
    old = h.group.stored
    assert old is not None and [m.member_id for m in old.members] == ["a-1", "ic-2"]
    h.join("c#2", instance_id="ic", session=SESSION + 500)
    assert h.group.state is STABLE and h.group.generation == 1  # no rebalance
    record = h.group.stored
    assert record is not None and record.generation == 1
    assert [(m.member_id, m.instance_id, m.client_id, m.session_timeout_ms, m.assignment) for m in record.members] == [
        ("a-1", None, "a", SESSION, old.members[0].assignment),
        ("ic-3", "ic", "c", SESSION + 500, old.members[1].assignment),
    ]


def test_a_static_rejoin_that_rebalances_writes_nothing_at_the_join() -> None:
    h = Harness(mutants={"static-rejoin-rebalances"})
    h.stable_group(dynamic=["a#1"], static=[("c#1", "ic")])
    old = h.group.stored
    h.join("c#2", instance_id="ic")
    assert h.group.state is PREPARING_REBALANCE
    assert h.group.stored == old


# --- load: what a new coordinator rebuilds -----------------------------------------------------


def test_loading_a_stable_group_keeps_generation_and_assignment_and_restarts_sessions() -> None:
    h, ids = two_member_group()
    h.commit("a#1", ids["a#1"], 1, offsets=((tp(0), 5), (tp(2), 8)))
    h.advance(4000)
    loaded = load(h.group, h.now, h.config)
    assert loaded.state is STABLE and loaded.previous_state is DEAD
    assert (loaded.generation, loaded.protocol_name, loaded.leader) == (1, "range", "a-1")
    assert [(m.member_id, m.assignment, m.protocols) for m in loaded.members] == [
        ("a-1", (tp(0), tp(2)), RANGE), ("b-2", (tp(1), tp(3)), RANGE)]
    assert all(m.heartbeat_deadline == h.now + SESSION for m in loaded.members)
    assert all(m.awaiting_join is None and m.awaiting_sync is None and not m.is_new for m in loaded.members)
    assert loaded.join_timer is None and loaded.sync_timer is None
    assert loaded.pending_members == () and loaded.pending_sync == frozenset()
    assert loaded.offsets == h.group.offsets and loaded.member_id_seq == h.group.member_id_seq
    assert loaded.stored == h.group.stored


def test_a_failover_costs_no_rebalance_for_members_that_keep_heartbeating() -> None:
    h, ids = two_member_group()
    h.commit("a#1", ids["a#1"], 1, offsets=((tp(0), 5),))
    h.advance(7000)
    h.group = load(h.group, h.now, h.config)
    for _ in range(6):
        h.advance(SESSION // 2)
        for conn in ("a#1", "b#1"):
            h.heartbeat(conn, ids[conn], 1)
            assert error_of(h, conn) is Errors.NONE
    h.commit("b#1", ids["b#1"], 1, offsets=((tp(1), 3),))
    assert error_of(h, "b#1") is Errors.NONE
    h.send("b#1", OffsetFetchRequest((tp(0), tp(1), tp(2))))
    assert h.reply("b#1") == OffsetFetchResponse(Errors.NONE, ((tp(0), 5), (tp(1), 3), (tp(2), NO_OFFSET)))
    assert h.group.state is STABLE and h.group.generation == 1
    assert not [e for e in h.all_events if e["name"] == ev.COORDINATOR_REBALANCE and e["timestamp"] > 7000]


def test_a_follower_rejoining_a_loaded_group_with_its_full_protocol_list_rebalances() -> None:
    """The record keeps only the selected protocol's metadata, so a follower whose JoinGroup lists more
    protocols no longer matches its loaded entry (ClassicGroupMember.matches)."""
    h = Harness()
    ids = {"a#1": h.new_member("a#1", protocols=RANGE_THEN_RR), "b#1": h.new_member("b#1", protocols=RANGE_THEN_RR)}
    h.settle()
    h.finish_sync(ids)
    follower = "b#1" if h.group.leader == ids["a#1"] else "a#1"
    h.join(follower, ids[follower], protocols=RANGE_THEN_RR)
    assert isinstance(h.reply(follower), JoinGroupResponse) and h.group.state is STABLE  # before: no rebalance
    h.group = load(h.group, h.now, h.config)
    h.join(follower, ids[follower], protocols=RANGE)  # the stored protocol alone still matches
    assert isinstance(h.reply(follower), JoinGroupResponse) and h.group.state is STABLE
    h.join(follower, ids[follower], protocols=RANGE_THEN_RR)
    h.no_reply(follower)
    assert h.group.state is PREPARING_REBALANCE


def test_a_member_that_left_after_the_last_record_is_back_until_its_session_expires() -> None:
    h, ids = two_member_group()
    h.leave("b#1", (ids["b#1"], None))
    assert h.group.state is PREPARING_REBALANCE and member(h.group, ids["b#1"]) is None
    h.advance(1000)
    h.group = load(h.group, h.now, h.config)
    assert h.group.state is STABLE and h.group.generation == 1
    assert member(h.group, ids["b#1"]) is not None
    loaded_at = h.now
    h.advance(SESSION // 2)
    h.heartbeat("a#1", ids["a#1"], 1)
    assert error_of(h, "a#1") is Errors.NONE
    h.advance(loaded_at + SESSION - h.now)  # b-2's fresh session ends
    removed = h.events_named(ev.COORDINATOR_MEMBER_REMOVED)
    assert [(e["member_id"], e["reason"]) for e in removed] == [(ids["b#1"], "session-timeout")]
    assert h.group.state is PREPARING_REBALANCE
    h.heartbeat("a#1", ids["a#1"], 1)
    assert error_of(h, "a#1") is Errors.REBALANCE_IN_PROGRESS


def test_a_member_expired_after_the_last_record_is_back_too() -> None:
    h, ids = two_member_group()
    for _ in range(3):  # only a-1 heartbeats: b-2 is expired and a rebalance starts
        h.advance(SESSION // 2)
        h.heartbeat("a#1", ids["a#1"], h.group.generation)
    assert member(h.group, ids["b#1"]) is None
    loaded = load(h.group, h.now, h.config)
    assert [m.member_id for m in loaded.members] == ["a-1", "b-2"] and loaded.generation == 1


def test_a_rebalance_in_progress_is_lost_and_the_group_is_back_in_the_last_stored_generation() -> None:
    h, ids = two_member_group()
    h.join("a#1", ids["a#1"])
    h.join("b#1", ids["b#1"])
    assert h.group.state is COMPLETING_REBALANCE and h.group.generation == 2
    h.group = load(h.group, h.now, h.config)
    assert h.group.state is STABLE and h.group.generation == 1
    h.sync("b#1", ids["b#1"], 2)
    assert error_of(h, "b#1") is Errors.ILLEGAL_GENERATION
    h.heartbeat("a#1", ids["a#1"], 2)
    assert error_of(h, "a#1") is Errors.ILLEGAL_GENERATION


def test_loading_a_preparing_rebalance_drops_parked_joins_and_pending_members() -> None:
    h, ids = two_member_group()
    h.join("a#1", ids["a#1"])  # parked
    h.join("c#1")  # a KIP-394 pending member
    assert h.group.pending_members and h.group.state is PREPARING_REBALANCE
    loaded = load(h.group, h.now, h.config)
    assert loaded.pending_members == () and loaded.join_timer is None
    assert all(m.awaiting_join is None for m in loaded.members)
    assert next_deadline(loaded) == h.now + SESSION


def test_loading_a_group_whose_first_join_never_completed_gives_generation_zero() -> None:
    h = Harness()
    h.new_member("a#1")
    h.settle()
    assert h.group.generation == 1
    loaded = load(h.group, h.now, h.config)
    assert (loaded.state, loaded.generation, loaded.members) == (EMPTY, 0, ())
    h.group = loaded
    h.sync("a#1", "a-1", 1)
    assert error_of(h, "a#1") is Errors.UNKNOWN_MEMBER_ID


def test_loading_an_emptied_group_gives_the_empty_generation() -> None:
    h, ids = two_member_group()
    h.commit("a#1", ids["a#1"], 1)
    h.leave("a#1", (ids["a#1"], None), (ids["b#1"], None))
    loaded = load(h.group, h.now, h.config)
    assert (loaded.state, loaded.generation, loaded.leader, loaded.protocol_name) == (EMPTY, 2, None, None)
    assert loaded.offsets == h.group.offsets and next_deadline(loaded) is None


def test_loading_a_group_never_stored_gives_a_fresh_empty_group_with_its_offsets() -> None:
    h = Harness()
    h.commit("s#1", "", -1, offsets=((tp(0), 42),))
    assert load(h.group, 50, h.config) == Group(group_id=h.config.group_id, offsets=((tp(0), 42),))


def test_a_loaded_group_over_max_size_rebalances_at_once() -> None:
    h, _ = two_member_group()
    group, replies, events = load_with_events(h.group, h.now, replace(h.config, max_group_size=1))
    assert group.state is PREPARING_REBALANCE and replies == ()
    assert group.join_timer is not None and group.join_timer.deadline == h.now + REBALANCE
    assert [e["name"] for e in events] == [ev.COORDINATOR_STATE, ev.COORDINATOR_REBALANCE]


def test_a_load_emits_one_loaded_state_event() -> None:
    h, _ = two_member_group()
    group, replies, events = load_with_events(h.group, 1234, h.config)
    assert replies == ()
    assert events == ({"name": ev.COORDINATOR_STATE, "timestamp": 1234, "group": h.config.group_id,
                       "detail": "loaded", "state": "Stable", "previous_state": "Dead", "generation": 1,
                       "leader": "a-1", "assignor": "range", "members": ["a-1", "b-2"]},)
    assert group == load(h.group, 1234, h.config)
    assert hash(group) == hash(load(h.group, 1234, h.config))


# --- unload: what the old coordinator does ---------------------------------------------------


def test_unload_answers_parked_joins_not_coordinator_and_stops_every_timer() -> None:
    h, ids = two_member_group()
    h.join("a#1", ids["a#1"])
    h.no_reply("a#1")
    before = h.group
    group, replies, events = unload(h.group, h.now, h.config)
    assert [(r.conn, r.response) for r in replies] == [
        ("a#1", JoinGroupResponse(Errors.NOT_COORDINATOR, member_id=ids["a#1"]))]
    assert group.state is DEAD and group.previous_state is PREPARING_REBALANCE
    assert next_deadline(group) is None
    assert [(e["name"], e["state"], e["detail"]) for e in events] == [(ev.COORDINATOR_STATE, "Dead", "unloaded")]
    assert load(group, h.now + 10, h.config) == load(before, h.now + 10, h.config)


def test_unload_answers_parked_syncs_not_coordinator() -> None:
    h = Harness()
    a, b = h.new_member("a#1"), h.new_member("b#1")
    h.settle()
    follower = b if h.group.leader == a else a
    conn = "b#1" if follower == b else "a#1"
    h.sync(conn, follower)
    h.no_reply(conn)
    _, replies, _ = unload(h.group, h.now, h.config)
    assert [(r.conn, r.response) for r in replies] == [(conn, SyncGroupResponse(Errors.NOT_COORDINATOR))]
