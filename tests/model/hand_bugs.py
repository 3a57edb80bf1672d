"""Plausible bugs put into the executable model by hand, *not* registered as mutants (model/mutants.py).

Each is a monkeypatch of one function of ``model.classic`` -- what a slip in an edit of that function
would do. They exist to measure whether ``groupspec prove`` is about the code that runs: docs/proofs.md
has the table of which obligations catch which, and tests/model/test_proofs_explore.py applies some.
``apply(name, mp)`` takes anything with ``setattr(obj, name, value)`` (pytest's ``MonkeyPatch``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from model import consumption as cs
from model import system as sy
from model.classic import coordinator as _co_pkg
from model.classic import member as mb
from model.classic.coordinator import rebalance, requests, timers
from model.classic.member import state as mstate
from model.messages import Errors, HeartbeatResponse
from model.system_evolve import replace
from model.types import RebalanceProtocol


def _sync_before_store(mp: Any) -> None:
    """The coordinator answers the parked SyncGroups before it stores the leader's assignment."""
    def set_and_propagate(group: Any, assignment: Any, fx: Any) -> Any:
        group = rebalance.propagate_assignment(group, Errors.NONE, fx)
        return rebalance.set_assignments(group, assignment)
    mp.setattr(rebalance, "set_and_propagate_assignment", set_and_propagate)


def _eager_keeps_partitions(mp: Any) -> None:
    """An eager consumer keeps what it owns across the JoinGroup (onJoinPrepare revokes nothing)."""
    original = mb._on_join_prepare

    def on_join_prepare(m: Any, now: int, events: Any, reqs: Any) -> Any:
        if m.config.protocol is RebalanceProtocol.EAGER and m.generation.generation_id >= 0:
            m2, ok = original(m, now, events, reqs)
            if ok:  # put back what was revoked, and drop the callback's event
                events[:] = [e for e in events if e["name"] != "partitions_revoked"]
                return mstate._own(m2, m.owned), ok
            return m2, ok
        return original(m, now, events, reqs)
    mp.setattr(mb, "_on_join_prepare", on_join_prepare)


def _heartbeat_illegal_generation_kept(mp: Any) -> None:
    """ILLEGAL_GENERATION on a heartbeat is handled without resetting the generation (only a rejoin)."""
    original = mb._on_heartbeat_response

    def on_heartbeat_response(m: Any, r: Any, now: int) -> Any:
        if r.error is Errors.ILLEGAL_GENERATION and m.heartbeats_in_flight and m.heartbeats_in_flight[0] == m.generation:
            m = mstate._with(m, heartbeats_in_flight=m.heartbeats_in_flight[1:])
            return mstate._request_rejoin(m, "ILLEGAL_GENERATION"), (), ()
        return original(m, r, now)
    mp.setattr(mb, "_on_heartbeat_response", on_heartbeat_response)


def _expired_member_kept(mp: Any) -> None:
    """A member whose session expired is not removed: the heartbeat timer is cleared, nothing else."""
    original = timers.expire_heartbeat

    def expire_heartbeat(group: Any, member_id: str, fx: Any) -> Any:
        if timers.member(group, member_id) is not None:  # a pending member is still removed
            return timers.update(group, member_id, heartbeat_deadline=None)
        return original(group, member_id, fx)
    mp.setattr(timers, "expire_heartbeat", expire_heartbeat)


def _generation_not_bumped(mp: Any) -> None:
    """Completing the join phase does not start a new generation (the generation stays)."""
    original = rebalance.init_next_generation

    def init_next_generation(group: Any, fx: Any) -> Any:
        group = original(group, fx)
        return replace(group, generation=max(group.generation - 1, 1))
    mp.setattr(rebalance, "init_next_generation", init_next_generation)


def _cooperative_keeps_revoked(mp: Any) -> None:
    """A cooperative consumer takes its new assignment but keeps the partitions it should revoke."""
    original = mb._on_join_complete

    def on_join_complete(m: Any, assignment: Any, now: int, events: Any, reqs: Any) -> Any:
        owned = m.owned
        m2 = original(m, assignment, now, events, reqs)
        if m.config.protocol is RebalanceProtocol.COOPERATIVE:
            return mstate._own(m2, m2.owned | owned)
        return m2
    mp.setattr(mb, "_on_join_complete", on_join_complete)


def _leave_ignored(mp: Any) -> None:
    """The coordinator answers a LeaveGroup but keeps the member."""
    def handle_leave_group(group: Any, conn: str, request: Any, fx: Any) -> Any:
        fx.reply(conn, requests.LeaveGroupResponse(Errors.NONE, member_errors=tuple(
            (mid, Errors.NONE) for mid, _ in request.members)))
        return group
    mp.setattr(_co_pkg, "handle_leave_group", handle_leave_group)


def _heartbeat_rebalance_ignored(mp: Any) -> None:
    """A Stable consumer answered REBALANCE_IN_PROGRESS on a heartbeat does not rejoin."""
    original = mb._on_heartbeat_response

    def on_heartbeat_response(m: Any, r: Any, now: int) -> Any:
        if r.error is Errors.REBALANCE_IN_PROGRESS:
            r = HeartbeatResponse(Errors.NONE)
        return original(m, r, now)
    mp.setattr(mb, "_on_heartbeat_response", on_heartbeat_response)


def _failed_join_not_retried(mp: Any) -> None:
    """poll() never handles a failed JoinGroup / SyncGroup (a slip in ``poll_has_work``: only a succeeded
    join is work), so a consumer whose join was refused is stuck until something else wakes it."""
    original = mb.poll_has_work

    def poll_has_work(m: Any, metadata: Any, log: Any = ()) -> bool:
        if m.join is mb.JoinFuture.FAILED:
            return False
        return original(m, metadata, log)
    mp.setattr(mb, "poll_has_work", poll_has_work)


def _committed_offset_ignored(mp: Any) -> None:
    """The OffsetFetch answer is ignored: a new owner always starts where ``auto.offset.reset`` says (the
    slip the registered mutant ``position-ignores-committed`` names, put in by hand: the encoding does not
    know about it)."""
    original = cs.on_offsets_fetched

    def on_offsets_fetched(c: Any, committed: Any, owned: Any, log: Any, config: Any, mutants: Any) -> Any:
        return original(c, committed, owned, log, config, frozenset(mutants) | {cs.POSITION_IGNORES_COMMITTED})
    mp.setattr(cs, "on_offsets_fetched", on_offsets_fetched)


def _frozen_heartbeats(mp: Any) -> None:
    """The heartbeat thread of a frozen process goes on (the frozen check placed after the heartbeat's in
    ``urgent_actions``, and ``heartbeat_deadline`` not asking): a SIGSTOPped consumer keeps its session alive."""
    deadline = mb.heartbeat_deadline
    urgent = sy.urgent_actions

    def heartbeat_deadline(m: Any) -> Any:
        return deadline(dataclasses.replace(m, frozen_until=None))

    def urgent_actions(state: Any) -> Any:
        actions = urgent(state)
        for _, p in state.processes:
            m = p.member
            if m is not None and m.frozen:
                due = heartbeat_deadline(m)
                if due is not None and due <= state.now:
                    actions.append(sy.HeartbeatThreadRuns(m.name))
        return actions
    mp.setattr(mb, "heartbeat_deadline", heartbeat_deadline)
    mp.setattr(sy, "urgent_actions", urgent_actions)


def _thaw_timers_restarted(mp: Any) -> None:
    """The thaw restarts the consumer's timers from the moment it runs again, as if no time had passed
    (a heartbeat answer just received, a poll just made): a consumer frozen past its session does not
    find its session timer expired, nor its poll timer."""
    original = mb.thaw

    def thaw(m: Any, now: int) -> Any:
        m = original(m, now)
        return mstate._with(m, session_due=now + m.config.session_timeout_ms, heartbeat_due=now, last_poll=now)
    mp.setattr(mb, "thaw", thaw)


def _stalled_consumer_deaf(mp: Any) -> None:
    """A stalled consumer reads nothing from its socket (``can_receive`` forgets that the heartbeat thread
    reads it too while the application thread is stopped): a SyncGroup or OffsetCommit answer waits for
    the stall's end."""
    def can_receive(m: Any) -> bool:
        return m.fatal is None and not m.frozen and not m.stalled
    mp.setattr(mb, "can_receive", can_receive)


BUGS: dict[str, Callable[[Any], None]] = {
    "sync-before-store": _sync_before_store,
    "eager-keeps-partitions": _eager_keeps_partitions,
    "heartbeat-illegal-generation-kept": _heartbeat_illegal_generation_kept,
    "expired-member-kept": _expired_member_kept,
    "generation-not-bumped": _generation_not_bumped,
    "cooperative-keeps-revoked": _cooperative_keeps_revoked,
    "leave-ignored": _leave_ignored,
    "heartbeat-rebalance-ignored": _heartbeat_rebalance_ignored,
    "failed-join-not-retried": _failed_join_not_retried,
    "committed-offset-ignored": _committed_offset_ignored,
    "frozen-heartbeats": _frozen_heartbeats,
    "thaw-timers-restarted": _thaw_timers_restarted,
    "stalled-consumer-deaf": _stalled_consumer_deaf,
}


def apply(name: str, mp: Any) -> None:
    BUGS[name](mp)
