"""The consumer side (model/classic/member/__init__.py), one reaction at a time, against what Kafka's
AbstractCoordinator / ConsumerCoordinator (4.1) do."""

from __future__ import annotations

from typing import Any

import pytest

from model import events as ev
from model.classic import member as mb
from model.classic.member import Generation, JoinFuture, Member, MemberState
from model.messages import (
    ConsumerProtocolSubscription,
    Errors,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.network import Disconnect
from model.types import RebalanceProtocol, TopicPartition

T = "t"
META = ((T, 4),)


def tp(n: int, topic: str = T) -> TopicPartition:
    return TopicPartition(topic, n)


def new(assignors: tuple[str, ...] = ("range",), instance_id: str | None = None, **settings: Any) -> Member:
    config = mb.member_config("a", assignors, instance_id=instance_id, session_timeout_ms=10000,
                              heartbeat_interval_ms=3000, max_poll_interval_ms=30000, rebalance_timeout_ms=30000,
                              **settings)
    member, _ = mb.start(config, "a#1", (T,), 0)
    return member


def stable(assignors: tuple[str, ...] = ("range",), owned: tuple[int, ...] = (0, 1), generation: int = 3,
           instance_id: str | None = None, **settings: Any) -> Member:
    """A member that has synced ``generation`` and owns ``owned``."""
    m = new(assignors, instance_id, **settings)
    return mb._with(m, state=MemberState.STABLE, generation=Generation(generation, "a-1", assignors[0]),
                    rejoin_needed=False, needs_join_prepare=True, joined_subscription=(T,),
                    owned=frozenset(tp(n) for n in owned), heartbeat_due=3000, session_due=10000)


def rejoin(m: Member, now: int, meta: Any = META) -> tuple[Member, tuple[Any, ...], tuple[dict[str, Any], ...]]:
    """``poll()`` into a rejoin: when onJoinPrepare sends its auto-commit it waits for the answer (an
    accepted one here), and the JoinGroup goes out on the next poll. The requests and events of both."""
    m, requests, events = mb.poll(m, now, meta)
    if m.prepare_commit is mb.JoinPrepareCommit.IN_FLIGHT:
        assert [type(r) for r in requests][-1:] == [OffsetCommitRequest]
        m, more, answered = mb.receive(m, OffsetCommitResponse(Errors.NONE), now, meta)
        m, later, polled = mb.poll(m, now, meta)
        requests, events = requests + more + later, events + answered + polled
    return m, requests, events


def names(events: tuple[dict[str, Any], ...]) -> list[str]:
    return [e["name"] for e in events]


def joined(m: Member, generation: int = 4, leader: str = "b-2", members: tuple[JoinGroupMember, ...] = (),
           now: int = 10) -> tuple[Member, tuple[Any, ...], tuple[dict[str, Any], ...]]:
    """Poll into a rejoin, then deliver a successful JoinGroup answer."""
    m, requests, _ = rejoin(m, now)
    assert any(isinstance(r, JoinGroupRequest) for r in requests)
    response = JoinGroupResponse(Errors.NONE, generation=generation, protocol_name=m.config.assignors[0],
                                 leader=leader, member_id=m.generation.member_id or "a-1", members=members)
    return mb.receive(m, response, now, META)


# -- the rebalance protocol ------------------------------------------------------------------------


@pytest.mark.parametrize(("assignors", "protocol"), [
    (("range",), RebalanceProtocol.EAGER),
    (("cooperative-sticky",), RebalanceProtocol.COOPERATIVE),
    (("cooperative-sticky", "range"), RebalanceProtocol.EAGER),  # the first bounce of the upgrade path
    (("range", "cooperative-sticky"), RebalanceProtocol.EAGER),
    (("sticky",), RebalanceProtocol.EAGER),
])
def test_rebalance_protocol_is_the_highest_all_assignors_support(assignors: tuple[str, ...],
                                                                  protocol: RebalanceProtocol) -> None:
    assert mb.rebalance_protocol(assignors) is protocol


# -- joining ------------------------------------------------------------------------------------------


def test_first_poll_joins_with_no_member_id_and_a_protocol_per_assignor() -> None:
    m = new(("cooperative-sticky", "range"))
    m, requests, events = mb.poll(m, 0, META)
    (join,) = requests
    assert isinstance(join, JoinGroupRequest)
    assert join.member_id == "" and join.instance_id is None
    assert [name for name, _ in join.protocols] == ["cooperative-sticky", "range"]
    assert join.protocols[0][1] == ConsumerProtocolSubscription((T,), (), -1)
    assert (join.session_timeout_ms, join.rebalance_timeout_ms) == (10000, 30000)
    assert m.state is MemberState.PREPARING_REBALANCE and m.join is JoinFuture.JOIN
    assert events == ()  # generation -1 and nothing owned: no callback


def test_member_id_required_adopts_the_id_and_rejoins_without_callbacks() -> None:
    m, _, _ = mb.poll(new(), 0, META)
    m, requests, events = mb.receive(m, JoinGroupResponse(Errors.MEMBER_ID_REQUIRED, member_id="a-7"), 0, META)
    assert m.generation == Generation(-1, "a-7", None)
    m, requests, events = mb.poll(m, 0, META)
    (join,) = requests
    assert isinstance(join, JoinGroupRequest) and join.member_id == "a-7"
    assert events == ()


def test_a_follower_sends_an_empty_sync_and_the_leader_sends_the_assignment() -> None:
    m, requests, events = joined(new(), leader="b-2")
    (sync,) = requests
    assert isinstance(sync, SyncGroupRequest) and sync.assignments == () and sync.generation == 4
    assert names(events) == [ev.GROUP_JOINED]
    assert events[0]["leader"] == "b-2" and events[0]["member_id"] == "a-1"
    assert m.state is MemberState.COMPLETING_REBALANCE

    members = (JoinGroupMember("a-1", None, ConsumerProtocolSubscription((T,))),
               JoinGroupMember("b-2", None, ConsumerProtocolSubscription((T,))))
    leader, requests, _ = joined(new(), leader="a-1", members=members)
    (sync,) = requests
    assert dict(sync.assignments) == {"a-1": (tp(0), tp(1)), "b-2": (tp(2), tp(3))}  # range
    assert leader.is_leader and leader.assignment_snapshot == META


def test_static_leader_told_to_skip_the_assignment_sends_none_and_keeps_watching_metadata() -> None:
    m, _, _ = mb.poll(new(instance_id="a-i"), 0, META)
    members = (JoinGroupMember("a-1", "a-i", ConsumerProtocolSubscription((T,))),)
    r = JoinGroupResponse(Errors.NONE, generation=4, protocol_name="range", leader="a-1", member_id="a-1",
                          members=members, skip_assignment=True)
    m, requests, _ = mb.receive(m, r, 0, META)
    (sync,) = requests
    assert sync.assignments == ()
    assert m.is_leader and m.assignment_snapshot == META


def test_leader_leaves_partitions_the_assignor_withholds_to_nobody() -> None:
    m, _, _ = mb.poll(new(("cooperative-sticky",)), 0, META)
    members = (JoinGroupMember("a-1", None, ConsumerProtocolSubscription((T,), (tp(0), tp(1), tp(2), tp(3)), 3)),
               JoinGroupMember("b-2", None, ConsumerProtocolSubscription((T,), (), 3)))
    r = JoinGroupResponse(Errors.NONE, generation=4, protocol_name="cooperative-sticky", leader="a-1",
                          member_id="a-1", members=members)
    m, requests, _ = mb.receive(m, r, 0, META)
    (sync,) = requests
    given = [p for _, ps in sync.assignments for p in ps]
    assert len(given) == 2 and len(set(given)) == 2  # two partitions move to b: withheld this generation
    assert dict(sync.assignments)["b-2"] == ()


# -- callbacks ---------------------------------------------------------------------------------------


def test_eager_revokes_everything_before_rejoining_and_assigns_all_after_sync() -> None:
    m = mb._with(stable(), rejoin_needed=True)
    m, requests, events = rejoin(m, 10)
    assert names(events) == [ev.PARTITIONS_REVOKED]
    assert ev.partitions_of(events[0]) == [tp(0), tp(1)]
    assert m.owned == frozenset()
    assert isinstance(requests[0], OffsetCommitRequest)  # the auto-commit goes first, and is answered
    assert isinstance(requests[1], JoinGroupRequest)  # before the JoinGroup goes out
    m, _, _ = mb.receive(m, JoinGroupResponse(Errors.NONE, 4, "range", "b-2", "a-1"), 10, META)
    m, _, events = mb.receive(m, SyncGroupResponse(Errors.NONE, (tp(1), tp(2))), 10, META)
    assert names(events) == [ev.GROUP_SYNCED] and m.join is JoinFuture.SUCCEEDED
    m, _, events = rejoin(m, 10)
    assert names(events) == [ev.PARTITIONS_ASSIGNED]
    assert ev.partitions_of(events[0]) == [tp(1), tp(2)]
    assert m.owned == {tp(1), tp(2)} and m.state is MemberState.STABLE


def test_eager_revokes_even_an_empty_set() -> None:
    m = mb._with(stable(owned=()), rejoin_needed=True)
    _, _, events = rejoin(m, 10)
    assert names(events) == [ev.PARTITIONS_REVOKED] and events[0]["partitions"] == []


def test_cooperative_keeps_owned_partitions_while_rejoining_and_claims_them() -> None:
    m = mb._with(stable(("cooperative-sticky",)), rejoin_needed=True)
    m, requests, events = rejoin(m, 10)
    assert events == ()
    join = requests[-1]
    assert isinstance(join, JoinGroupRequest)
    assert join.protocols[0][1] == ConsumerProtocolSubscription((T,), (tp(0), tp(1)), 3)
    assert m.owned == {tp(0), tp(1)}


def test_cooperative_revokes_unsubscribed_topics_before_rejoining() -> None:
    m = mb._with(stable(("cooperative-sticky",)), owned=frozenset({tp(0), tp(1, "u")}), subscription=("t", "u"),
                 joined_subscription=("t", "u"))
    m = mb.subscribe(m, ("t",))
    assert mb.poll_has_work(m, META)  # the subscription changed since the last JoinGroup
    m, _, events = rejoin(m, 10)
    assert names(events) == [ev.PARTITIONS_REVOKED] and ev.partitions_of(events[0]) == [tp(1, "u")]
    assert m.owned == {tp(0)}


def test_cooperative_after_sync_revokes_owned_minus_assigned_then_assigns_the_rest_and_rejoins() -> None:
    m = mb._with(stable(("cooperative-sticky",)), rejoin_needed=True)
    m, _, _ = joined(m)
    m, _, _ = mb.receive(m, SyncGroupResponse(Errors.NONE, (tp(1), tp(2))), 10, META)
    m, requests, events = rejoin(m, 10)
    assert names(events) == [ev.PARTITIONS_REVOKED, ev.PARTITIONS_ASSIGNED]
    assert ev.partitions_of(events[0]) == [tp(0)]
    assert ev.partitions_of(events[1]) == [tp(2)]
    assert isinstance(requests[-1], JoinGroupRequest)  # requestRejoin: the follow-up rebalance
    assert m.owned == {tp(1), tp(2)}


def test_cooperative_assigned_callback_runs_once_even_when_empty() -> None:
    m = mb._with(stable(("cooperative-sticky",)), rejoin_needed=True)
    m, _, _ = joined(m)
    m, _, _ = mb.receive(m, SyncGroupResponse(Errors.NONE, (tp(0), tp(1))), 10, META)
    m, requests, events = rejoin(m, 10)
    assert names(events) == [ev.PARTITIONS_ASSIGNED] and events[0]["partitions"] == []
    assert requests == ()


def test_an_assignment_outside_the_subscription_is_not_applied_and_the_member_rejoins() -> None:
    m = mb._with(stable(("cooperative-sticky",)), rejoin_needed=True)
    m, _, _ = joined(m)
    m, _, _ = mb.receive(m, SyncGroupResponse(Errors.NONE, (tp(0), tp(0, "other"))), 10, META)
    m, requests, events = rejoin(m, 10)
    assert events == () and requests == ()  # no callback at all; the rejoin takes its round trip
    assert m.owned == {tp(0), tp(1)}
    assert mb.poll_due(m) == 10 + mb.REJOIN_ROUND_TRIP_MS and not mb.poll_has_work(m, META)
    m, requests, events = rejoin(m, 10 + mb.REJOIN_ROUND_TRIP_MS)
    assert isinstance(requests[-1], JoinGroupRequest)


def test_partitions_are_lost_not_revoked_after_a_generation_reset() -> None:
    m = stable(("cooperative-sticky",))
    m, _, _ = mb.receive(mb._with(m, heartbeats_in_flight=(m.generation,)),
                         HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID), 10, META)
    assert m.generation == mb.NO_GENERATION and m.state is MemberState.UNJOINED
    m, _, events = rejoin(m, 10)
    assert names(events) == [ev.PARTITIONS_LOST] and ev.partitions_of(events[0]) == [tp(0), tp(1)]


# -- error answers -------------------------------------------------------------------------------------


def synced_failing(error: Errors, mutants: frozenset[str] = frozenset()) -> Member:
    m = mb._with(stable(("cooperative-sticky",), instance_id="a-i"), rejoin_needed=True)
    m, _, _ = joined(m)
    m, _, _ = mb.receive(m, SyncGroupResponse(error), 10, META, mutants)
    return m


def test_sync_rebalance_in_progress_rejoins_keeping_generation_and_owned() -> None:
    m = synced_failing(Errors.REBALANCE_IN_PROGRESS)
    assert m.generation == Generation(4, "a-1", "cooperative-sticky")
    m, requests, events = rejoin(m, 10)
    assert events == ()  # no onJoinPrepare on this retry
    join = requests[-1]
    assert isinstance(join, JoinGroupRequest) and join.member_id == "a-1"
    assert join.protocols[0][1].owned == (tp(0), tp(1)) and join.protocols[0][1].generation == 4


def test_sync_illegal_generation_resets_the_generation_but_keeps_the_member_id() -> None:
    m = synced_failing(Errors.ILLEGAL_GENERATION)
    assert m.generation == Generation(-1, "a-1", None)
    m, requests, events = rejoin(m, 10)
    assert names(events) == [ev.PARTITIONS_LOST]
    join = requests[-1]
    assert isinstance(join, JoinGroupRequest) and join.member_id == "a-1"
    assert join.protocols[0][1].owned == () and join.protocols[0][1].generation == -1


def test_sync_unknown_member_id_resets_generation_and_member_id() -> None:
    m = synced_failing(Errors.UNKNOWN_MEMBER_ID)
    assert m.generation == mb.NO_GENERATION
    m, requests, events = rejoin(m, 10)
    assert names(events) == [ev.PARTITIONS_LOST]
    assert requests[-1].member_id == ""


def test_mutant_stale_owned_after_sync_rebalance_keeps_partitions_after_illegal_generation() -> None:
    m = synced_failing(Errors.ILLEGAL_GENERATION, frozenset({"stale-owned-after-sync-rebalance"}))
    assert m.generation == Generation(4, "a-1", "cooperative-sticky")
    m, requests, events = rejoin(m, 10)
    assert events == ()  # nothing lost
    claim = requests[-1].protocols[0][1]
    assert claim.owned == (tp(0), tp(1)) and claim.generation == 4  # claimed with the stale generation


def test_fenced_instance_id_on_sync_is_fatal_and_loses_everything() -> None:
    m = synced_failing(Errors.FENCED_INSTANCE_ID)
    m, requests, events = rejoin(m, 10)
    assert m.fatal == "FENCED_INSTANCE_ID"
    assert names(events) == [ev.PARTITIONS_LOST, ev.SHUTDOWN_COMPLETE]
    assert requests == ()
    assert not mb.poll_has_work(m, META) and not mb.can_receive(m)


def test_join_unknown_member_id_resets_only_if_the_generation_is_unchanged() -> None:
    m, _, _ = rejoin(mb._with(stable(), rejoin_needed=True), 10)
    reset, _, _ = mb.receive(m, JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID), 10, META)
    assert reset.generation == mb.NO_GENERATION
    moved = mb._with(m, generation=Generation(9, "a-1", "range"))  # the generation changed meanwhile
    kept, _, _ = mb.receive(moved, JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID), 10, META)
    assert kept.generation == Generation(9, "a-1", "range")


def test_heartbeat_rebalance_in_progress_asks_a_stable_member_to_rejoin() -> None:
    m = stable()
    m, requests, _ = mb.heartbeat_tick(m, 3000)
    (hb,) = requests
    assert isinstance(hb, HeartbeatRequest) and hb.generation == 3 and hb.member_id == "a-1"
    assert m.heartbeat_due == 6000
    m, _, _ = mb.receive(m, HeartbeatResponse(Errors.REBALANCE_IN_PROGRESS), 3000, META)
    assert m.rejoin_needed and m.generation.generation_id == 3


@pytest.mark.parametrize(("error", "member_id"), [(Errors.ILLEGAL_GENERATION, "a-1"), (Errors.UNKNOWN_MEMBER_ID, "")])
def test_heartbeat_generation_errors_reset_the_member(error: Errors, member_id: str) -> None:
    m, _, _ = mb.heartbeat_tick(stable(), 3000)
    m, _, _ = mb.receive(m, HeartbeatResponse(error), 3000, META)
    assert m.generation == Generation(-1, member_id, None) and m.state is MemberState.UNJOINED


def test_a_heartbeat_answer_about_a_generation_already_left_is_ignored() -> None:
    m, _, _ = mb.heartbeat_tick(stable(), 3000)
    m = mb._with(m, generation=Generation(5, "a-1", "range"))
    m, _, _ = mb.receive(m, HeartbeatResponse(Errors.ILLEGAL_GENERATION), 3000, META)
    assert m.generation == Generation(5, "a-1", "range")


def test_the_client_session_timer_marks_the_coordinator_unknown_and_disconnects() -> None:
    """HeartbeatThread.run: no heartbeat answered for session.timeout.ms -> markCoordinatorUnknown,
    which disconnects; an answer (even REBALANCE_IN_PROGRESS) restarts the timer."""
    m = stable()
    assert mb.heartbeat_deadline(m) == 3000
    m, _, _ = mb.heartbeat_tick(m, 3000)
    m, _, _ = mb.receive(m, HeartbeatResponse(Errors.REBALANCE_IN_PROGRESS), 3000, META)
    assert m.session_due == 13000
    m = mb._with(m, heartbeat_due=20000)
    assert mb.heartbeat_deadline(m) == 13000
    m, requests, _ = mb.heartbeat_tick(m, 13000)
    assert requests == (Disconnect(),) and m.coordinator_node is None


def test_heartbeat_fenced_instance_id_kills_the_consumer_at_its_next_poll() -> None:
    m, _, _ = mb.heartbeat_tick(stable(instance_id="a-i"), 3000)
    m, _, _ = mb.receive(m, HeartbeatResponse(Errors.FENCED_INSTANCE_ID), 3000, META)
    assert mb.poll_has_work(m, META)
    m, _, events = mb.poll(m, 3000, META)
    assert m.fatal == "FENCED_INSTANCE_ID" and names(events)[-1] == ev.SHUTDOWN_COMPLETE


def test_offset_commit_illegal_generation_resets_the_generation() -> None:
    m = mb._with(stable(), rejoin_needed=True)
    m, requests, _ = mb.poll(m, 10, META)
    assert [type(r) for r in requests] == [OffsetCommitRequest] and requests[0].generation == 3
    assert [tpo for tpo, _ in requests[0].offsets] == [tp(0), tp(1)]
    m = mb._with(m, state=MemberState.PREPARING_REBALANCE)
    m2 = mb._with(m, generation=Generation(3, "a-1", "range"))
    m2 = mb.receive(m2, OffsetCommitResponse(Errors.ILLEGAL_GENERATION), 10, META)[0]
    assert m2.generation == Generation(-1, "a-1", None)


def test_no_auto_commit_when_disabled() -> None:
    m = mb._with(stable(auto_commit=False), rejoin_needed=True)
    _, requests, _ = rejoin(m, 10)
    assert [type(r) for r in requests] == [JoinGroupRequest]


# -- poll timeout and leaving ---------------------------------------------------------------------------------


def test_a_stalled_dynamic_member_leaves_at_the_poll_timeout_and_loses_its_partitions_later() -> None:
    m = mb.stall(stable(), 1000, 60000)
    assert mb.heartbeat_deadline(m) == 3000
    m, _, _ = mb.heartbeat_tick(m, 3000)
    assert mb.poll_deadline(m) == 31000
    m = mb._with(m, heartbeats_in_flight=(), heartbeat_due=33000, session_due=40000)  # heartbeats answered
    m, requests, _ = mb.heartbeat_tick(m, 31000)
    assert requests == (LeaveGroupRequest((("a-1", None),), "consumer poll timeout has expired."),)
    assert m.generation == mb.NO_GENERATION and m.owned == {tp(0), tp(1)}  # lost only at the next poll
    assert not mb.poll_has_work(m, META)  # still stalled
    m = mb.resume(m, 61000)
    m, _, events = mb.poll(m, 61000, META)
    assert names(events) == [ev.PARTITIONS_LOST]


def test_a_stalled_static_member_sends_no_leave_group_at_the_poll_timeout() -> None:
    m = mb.stall(stable(instance_id="a-i"), 1000, 60000)
    m = mb._with(m, heartbeat_due=40000, session_due=40000)
    m, requests, _ = mb.heartbeat_tick(m, 31000)
    assert requests == ()
    assert m.generation == mb.NO_GENERATION


def test_a_stalled_member_reads_responses_only_while_its_heartbeat_thread_runs() -> None:
    assert mb.can_receive(mb.stall(stable(), 0, 1000))
    preparing = mb._with(stable(), state=MemberState.PREPARING_REBALANCE)
    assert mb.can_receive(preparing)
    assert not mb.can_receive(mb.stall(preparing, 0, 1000))


def test_close_commits_first_then_revokes_and_leaves_dynamic_and_just_stops_static() -> None:
    m, requests, _ = mb.close_commit(stable(), 50)
    assert [type(r) for r in requests] == [OffsetCommitRequest]
    m, _, _ = mb.receive(m, OffsetCommitResponse(Errors.NONE), 50, META)
    m, requests, events = mb.close(m, 50)
    assert names(events) == [ev.PARTITIONS_REVOKED, ev.SHUTDOWN_COMPLETE]
    assert [type(r) for r in requests] == [LeaveGroupRequest]
    _, requests, _ = mb.close(stable(instance_id="a-i"), 50)
    assert requests == ()


def test_close_during_a_rebalance_reports_the_partitions_lost() -> None:
    m = mb._with(stable(("cooperative-sticky",)), state=MemberState.COMPLETING_REBALANCE)
    _, _, events = mb.close(m, 50)
    assert names(events) == [ev.PARTITIONS_LOST, ev.SHUTDOWN_COMPLETE]


# -- the sticky assignor's memory --------------------------------------------------------------------------------


def test_eager_sticky_claims_its_last_assignment_from_memory_even_after_revoking() -> None:
    m = mb._with(stable(("sticky",)), sticky_memory=((tp(0), tp(1)), 3), rejoin_needed=True)
    m, requests, _ = rejoin(m, 10)
    assert m.owned == frozenset()
    claim = requests[-1].protocols[0][1]
    assert claim.user_data == ((tp(0), tp(1)), 3)  # StickyAssignor's userData: its memory
    assert claim.owned == () and claim.generation == m.generation.generation_id  # the v1/v2 fields: the truth
    jm = JoinGroupMember("a-1", None, claim)
    assert mb.subscription_of(jm).owned == (tp(0), tp(1)) and mb.subscription_of(jm).generation == 3


def test_events_carry_the_members_context() -> None:
    m = mb._with(stable(("cooperative-sticky",), instance_id="a-i"), rejoin_needed=True)
    m, _, events = joined(m)
    e = events[0]
    assert {k: e[k] for k in ("group", "member", "member_id", "instance_id", "generation", "protocol", "assignor")} == \
        {"group": "group", "member": "a", "member_id": "a-1", "instance_id": "a-i", "generation": 4,
         "protocol": "cooperative", "assignor": "cooperative-sticky"}
