"""The consumer's heartbeat thread: ``AbstractCoordinator.HeartbeatThread`` and ``Heartbeat``.

Runs only once the member has a JoinGroup answer (COMPLETING_REBALANCE and STABLE). One pass
(:func:`heartbeat_tick`) in Kafka's order: an unknown coordinator is looked up, then the client's
session timer, then the poll timeout (``max.poll.interval.ms``: :func:`maybe_leave_group`), then a
Heartbeat when due; the heartbeat and FindCoordinator answers are handled here too. The thread also
reads the socket while the application is stalled (:func:`can_receive`).
"""

from __future__ import annotations

from model.classic.member.state import (
    Member,
    MemberState,
    Output,
    _coordinator_unknown,
    _lookup_coordinator,
    _request_rejoin,
    _reset_state_and_rejoin,
    _with,
)
from model.messages import (
    UNKNOWN_MEMBER_ID,
    Errors,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    LeaveGroupRequest,
    Request,
)
from model.network import Disconnect


def poll_deadline(m: Member) -> int | None:
    """When the poll timer expires: only a stalled application misses its polls."""
    return m.last_poll + m.config.max_poll_interval_ms if m.stalled else None


def heartbeat_deadline(m: Member) -> int | None:
    """The next time the heartbeat thread acts (a heartbeat, a coordinator lookup, the poll
    timeout), or None. While the coordinator is unknown the thread only looks it up: it checks the
    poll timeout once the coordinator is known again (``HeartbeatThread.run``)."""
    if not m.heartbeat_thread_enabled or m.frozen:  # a frozen process runs no thread at all
        return None
    if m.coordinator_node is None:
        return None if m.finding_coordinator else m.lookup_after
    deadline = poll_deadline(m)
    due = min(m.heartbeat_due, m.session_due)
    return due if deadline is None else min(due, deadline)


def heartbeat_tick(m: Member, now: int) -> Output:
    """One pass of ``AbstractCoordinator.HeartbeatThread.run`` at ``now`` (>= :func:`heartbeat_deadline`),
    in Kafka's order: an unknown coordinator is looked up first (nothing else happens in that pass);
    then the client's session timer: no heartbeat answered for ``session.timeout.ms`` (they can be
    late: queued behind a parked SyncGroup, ``model.network``) marks the coordinator unknown and
    disconnects (``markCoordinatorUnknown`` -> ``disconnectAsync``; the system fails what was in
    flight, :class:`model.network.Disconnect`); then the poll timeout, then the heartbeat timer."""
    if m.coordinator_node is None:  # coordinatorUnknown(): look it up instead of heartbeating
        requests: list[Request] = []
        m = _lookup_coordinator(m, now, requests)
        return m, tuple(requests), ()
    if now >= m.session_due:  # heartbeat.sessionTimeoutExpired
        return _coordinator_unknown(m, now), (Disconnect(),), ()
    deadline = poll_deadline(m)
    if deadline is not None and now >= deadline:  # pollTimeoutExpired -> handlePollTimeoutExpiry
        return maybe_leave_group(m, "consumer poll timeout has expired.", now)
    if now >= m.heartbeat_due:
        c = m.config
        request = HeartbeatRequest(m.generation.member_id, c.instance_id, m.generation.generation_id)
        return _with(m, heartbeat_due=now + c.heartbeat_interval_ms,
                       heartbeats_in_flight=m.heartbeats_in_flight + (m.generation,)), (request,), ()
    return m, (), ()


def maybe_leave_group(m: Member, reason: str, now: int) -> Output:
    """``AbstractCoordinator.maybeLeaveGroup``: a dynamic member that is in the group sends
    LeaveGroup, when it knows its coordinator (``shouldSendLeaveGroupRequest``: not
    ``coordinatorUnknown()``, not UNJOINED, a member id); static members never do. Either way the
    generation and member id are reset, so the next ``onJoinPrepare`` declares everything owned lost."""
    requests: tuple[Request, ...] = ()
    if m.state is not MemberState.UNJOINED and m.generation.member_id != UNKNOWN_MEMBER_ID and m.config.dynamic \
            and m.coordinator_node is not None:
        requests = (LeaveGroupRequest(((m.generation.member_id, None),), reason),)
    return _reset_state_and_rejoin(m, "consumer pro-actively leaving the group", True), requests, ()


def can_receive(m: Member) -> bool:
    """Does some thread read this member's socket now? The application thread does unless it is
    stalled; the heartbeat thread does while it runs (``client.pollNoWakeup`` in its loop). In a
    frozen process no thread runs: what arrives waits in the socket's buffer until the thaw."""
    return m.fatal is None and not m.frozen and (not m.stalled or m.heartbeat_thread_enabled)


def _on_heartbeat_response(m: Member, r: HeartbeatResponse, now: int) -> Output:
    """``HeartbeatResponseHandler.handle`` and the heartbeat thread's listener."""
    if not m.heartbeats_in_flight:
        return m, (), ()
    sent = m.heartbeats_in_flight[0]
    m = _with(m, heartbeats_in_flight=m.heartbeats_in_flight[1:])
    error = r.error
    if error is Errors.NONE or error is Errors.REBALANCE_IN_PROGRESS:  # heartbeat.receiveHeartbeat()
        m = _with(m, session_due=now + m.config.session_timeout_ms)
    if error is Errors.REBALANCE_IN_PROGRESS:
        if m.state is MemberState.STABLE:
            m = _request_rejoin(m, "group is already rebalancing")
    elif error in (Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_INSTANCE_ID) \
            and m.generation == sent:  # an answer about a generation we already left is ignored
        m = _reset_state_and_rejoin(m, f"encountered {error.name} from HEARTBEAT response",
                                    error is not Errors.ILLEGAL_GENERATION)
        if error is Errors.FENCED_INSTANCE_ID:
            m = _with(m, heartbeat_failure=error)
    return m, (), ()


def _on_find_coordinator_response(m: Member, r: FindCoordinatorResponse, now: int) -> Member:
    """``FindCoordinatorResponseHandler``: the broker named is the coordinator from now on; an
    error is retried after ``retry.backoff.ms``."""
    if not m.finding_coordinator:
        return m
    if r.error is Errors.NONE:  # heartbeat.resetSessionTimeout()
        return _with(m, finding_coordinator=False, coordinator_node=r.node, session_due=now + m.config.session_timeout_ms)
    return _with(m, finding_coordinator=False, lookup_after=now + m.config.retry_backoff_ms)
