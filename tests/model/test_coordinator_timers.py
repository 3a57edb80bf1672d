"""Timers: session expiry, the heartbeat a parked request satisfies, pending-sync expiry (KAFKA-12890),
and the semantics of ``expire`` itself."""

from __future__ import annotations

from model import events as ev
from model.classic.coordinator import (
    COMPLETING_REBALANCE,
    PREPARING_REBALANCE,
    STABLE,
    expire,
    member,
    member_ids,
    next_deadline,
)
from model.messages import Errors, SyncGroupResponse
from tests.model.test_coordinator_harness import REBALANCE, SESSION, Harness


def removed(h: Harness, everything: bool = False) -> list[tuple[str, str]]:
    evs = h.all_events if everything else h.events
    return [(e["member_id"], e["reason"]) for e in evs if e["name"] == ev.COORDINATOR_MEMBER_REMOVED]


def test_session_expiry_in_stable() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    stable_at = h.now
    h.advance(6000)
    h.heartbeat("b#1", ids["b#1"])
    h.advance(SESSION - 6000 - 1)
    assert h.group.state is STABLE
    h.advance(1)  # a's session ends 10 s after its SyncGroup was answered
    assert removed(h) == [("a-1", "session-timeout")]
    assert h.group.state is PREPARING_REBALANCE and h.group.leader == "b-2"
    [rebalance] = h.events_named(ev.COORDINATOR_REBALANCE)
    assert rebalance["reason"] == "removing member a-1 on heartbeat expiration."
    assert rebalance["timestamp"] == stable_at + SESSION


def test_member_awaiting_join_satisfies_heartbeat() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("a#1", ids["a#1"])  # a parks its JoinGroup and sends no more heartbeats; so does b
    h.advance(SESSION)
    # a's parked join keeps it in; b, neither parked nor heartbeating, expires -- and since
    # everyone left has joined, the join phase completes at once.
    assert removed(h, everything=True) == [("b-2", "session-timeout")]
    assert h.group.state is COMPLETING_REBALANCE and member_ids(h.group) == ("a-1",)
    a = member(h.group, "a-1")
    assert a is not None and a.heartbeat_deadline == h.now + SESSION  # restarted at join completion


def test_new_member_awaiting_join_does_not_satisfy_heartbeat_but_existing_does() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"], session=60_000)
    h.join("a#1", ids["a#1"], session=60_000)
    c = h.new_member("c#1")
    joined_at = h.now
    c_member = member(h.group, c)
    assert c_member is not None and c_member.is_new
    assert c_member.heartbeat_deadline == joined_at + 300_000  # the new-member join timeout
    a = member(h.group, "a-1")
    assert a is not None and not a.is_new


def test_member_awaiting_sync_satisfies_heartbeat() -> None:
    h = Harness()
    ids = {c: h.new_member(c) for c in ("a#1", "b#1")}
    h.settle()
    h.sync("b#1", ids["b#1"])  # parked: the leader is slow
    h.advance(5000)
    h.heartbeat("a#1", ids["a#1"])
    h.advance(SESSION - 5000)  # b's session timer fires, but its parked SyncGroup satisfies it
    assert member_ids(h.group) == ("a-1", "b-2")
    b = member(h.group, "b-2")
    assert b is not None and b.heartbeat_deadline is None  # fired; restarted when its sync is answered
    h.sync("a#1", ids["a#1"], assignments=(("b-2", ()),))
    b = member(h.group, "b-2")
    assert b is not None and b.heartbeat_deadline == h.now + SESSION


def test_pending_sync_expiry_removes_member() -> None:
    h = Harness()
    ids = {c: h.new_member(c, session=60_000) for c in ("a#1", "b#1")}
    h.settle()
    completed_at = h.now
    h.sync("b#1", ids["b#1"])  # b syncs; the leader a never does
    h.advance(REBALANCE - 1)
    assert h.group.state is COMPLETING_REBALANCE
    h.advance(1)
    assert removed(h) == [("a-1", "sync-timeout")]
    assert h.reply("b#1") == SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS)
    assert h.group.state is PREPARING_REBALANCE and h.now == completed_at + REBALANCE
    [rebalance] = h.events_named(ev.COORDINATOR_REBALANCE)
    assert rebalance["reason"] == "Removing [a-1] on pending sync request expiration"


def test_pending_sync_expiry_in_stable_removes_a_follower_that_never_synced() -> None:
    h = Harness()
    ids = {c: h.new_member(c, session=60_000) for c in ("a#1", "b#1")}
    h.settle()
    h.sync("a#1", ids["a#1"], assignments=(("a-1", ()), ("b-2", ())))
    assert h.group.state is STABLE
    h.advance(REBALANCE)
    assert removed(h) == [("b-2", "sync-timeout")]
    assert h.group.state is PREPARING_REBALANCE


def test_timers_fire_at_their_own_deadlines_when_expired_late() -> None:
    h = Harness()
    h.stable_group(dynamic=["a#1", "b#1"])
    stable_at = h.now
    h.advance(1_000_000)
    assert [e["timestamp"] for e in h.all_events if e["name"] == ev.COORDINATOR_MEMBER_REMOVED] == [
        stable_at + SESSION, stable_at + SESSION]


def test_expiring_at_once_equals_expiring_deadline_by_deadline() -> None:
    at_once, in_steps = Harness(), Harness()
    for h in (at_once, in_steps):
        ids = h.stable_group(dynamic=["a#1", "b#1", "c#1"])
        h.join("a#1", ids["a#1"])
        h.heartbeat("b#1", ids["b#1"])
    at_once.advance(200_000)
    end = at_once.now
    steps = 0
    while (d := next_deadline(in_steps.group)) is not None and d <= end:
        in_steps.advance(d - in_steps.now)
        steps += 1
    in_steps.advance(end - in_steps.now)
    assert steps >= 2
    assert at_once.group == in_steps.group
    assert at_once.all_events == in_steps.all_events


def test_next_deadline_is_the_earliest_timer() -> None:
    h = Harness()
    assert next_deadline(h.group) is None
    h.join("a#1", session=7000)  # pending until 7000
    assert next_deadline(h.group) == 7000
    h.join("a#1", "a-1")  # joined: initial delay at 3000, new-member timeout at 300000
    assert next_deadline(h.group) == 3000


def test_expire_before_any_deadline_changes_nothing() -> None:
    h = Harness()
    h.new_member("a#1")
    group, replies, events = expire(h.group, 2999, h.config)
    assert (group, replies, events) == (h.group, (), ())
