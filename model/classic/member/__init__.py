"""The consumer side of the classic group protocol: one member's ``ConsumerCoordinator``.

What a Kafka consumer does to stay in a group (Apache Kafka 4.1, clients/.../consumer/internals/
``AbstractCoordinator`` and ``ConsumerCoordinator``), as pure functions on a frozen :class:`Member`.

The model is split the way Kafka's classes split the consumer: ``model.classic.member.state`` (the record and
the state changes of ``AbstractCoordinator``: generation, member state, join future, rejoin/reset,
coordinator lookup), ``model.classic.member.subscription`` (``SubscriptionState`` and ``ConsumerMetadata``),
``model.classic.member.heartbeat`` (``HeartbeatThread`` and ``Heartbeat``), ``model.classic.member.consumption``
(records and offset commits), and this module, the ``ConsumerCoordinator`` itself: ``poll()`` and
``joinGroupIfNeeded``, ``onJoinPrepare`` / ``onJoinComplete`` and the callbacks, the leader's
assignment, the JoinGroup / SyncGroup handlers, ``close()``. This module is the public face: it
re-exports what the others define (``__all__``), so ``model.classic.member`` is all a caller imports.

**Two threads.** A ``KafkaConsumer`` has an *application thread*, which calls ``poll()``, and a
*heartbeat thread*. Joining, the rebalance callbacks (``onJoinPrepare``, ``onJoinComplete``) and
the leader's assignment all run inside ``poll()`` on the application thread
(``ConsumerCoordinator.poll`` -> ``ensureActiveGroup`` -> ``joinGroupIfNeeded``). The heartbeat
thread runs only once the member has a JoinGroup answer (states COMPLETING_REBALANCE and STABLE);
it sends a Heartbeat every ``heartbeat.interval.ms``, reads responses from the socket, and, if the
application has not called ``poll()`` for ``max.poll.interval.ms``, leaves the group on its behalf
(``handlePollTimeoutExpiry``). The model keeps that split: :func:`poll` is the application thread,
:func:`heartbeat_tick` the heartbeat thread, :func:`receive` the response handlers, which run on
whichever thread reads the socket (:func:`can_receive`). A *stalled* member (its application stuck
between two ``poll()`` calls) runs only its heartbeat thread.

**Member states** (``AbstractCoordinator.MemberState``): UNJOINED -> PREPARING_REBALANCE (JoinGroup
sent) -> COMPLETING_REBALANCE (JoinGroup answered, SyncGroup sent) -> STABLE (SyncGroup answered).
Any error answer, a reset or a poll timeout goes back to UNJOINED.

**Generation** (``AbstractCoordinator.Generation``): (generation id, member id, protocol name).
``NO_GENERATION`` is (-1, "", None). Errors reset it (``resetStateAndGeneration``):
UNKNOWN_MEMBER_ID resets all of it; ILLEGAL_GENERATION resets the generation id and protocol but
keeps the member id (KAFKA-13419); REBALANCE_IN_PROGRESS on SyncGroup resets nothing, the member
just rejoins (KAFKA-14639 reverted KAFKA-13891's reset). A reset is only applied when the answer
is for the generation the member still has (``generationUnchanged``).

**Rebalance protocol** (``ConsumerCoordinator`` constructor): the highest ``RebalanceProtocol``
that *all* configured assignors support, so ``[cooperative-sticky, range]`` runs EAGER (the first
step of the two-bounce upgrade to cooperative).

**Callbacks** (``onJoinPrepare`` / ``onJoinComplete``; ``ConsumerRebalanceListener`` javadoc):

* before rejoining, if the generation or member id was reset, everything owned is *lost*
  (``onPartitionsLost``, only when non-empty), for both protocols;
* otherwise EAGER revokes everything it owns, even an empty set, before it rejoins;
  COOPERATIVE revokes only partitions of topics it no longer subscribes to (callback only when
  non-empty);
* after SyncGroup, COOPERATIVE revokes ``owned - assigned`` (then asks to rejoin, so the
  partitions it gave up can be assigned in the next generation) and calls
  ``onPartitionsAssigned(assigned - owned)`` exactly once, possibly empty; EAGER calls
  ``onPartitionsAssigned(assigned)``. An assignment naming a topic the member no longer subscribes
  to is not applied: the member rejoins without any callback
  (``SubscriptionState.checkAssignmentMatchedSubscription``).

Each callback is a trace event (``partitions_lost``, ``partitions_revoked``,
``partitions_assigned``); a JoinGroup answer is ``group_joined`` and a SyncGroup answer
``group_synced``. Events carry the member's context (group, member, member_id, instance_id,
generation, protocol = eager / cooperative, assignor = the group's selected assignor).

**Leader** (``ConsumerCoordinator.onLeaderElected``): the member the JoinGroup answer names as
leader runs the selected assignor over the member list it got, with each member's subscription
(topics, owned partitions, generation; ConsumerProtocolSubscription v2) and instance id, and sends
the result in its SyncGroup. Partitions the assignor withholds (cooperative-sticky's
``partitionsTransferringOwnership``) go to nobody this generation. The leader keeps a snapshot of
the partition counts of the group's topics and rejoins when the metadata no longer matches it
(``assignmentSnapshot``), which is how added partitions reach the group. A static leader rejoining
a Stable group is told to skip the assignment (KIP-814) and keeps watching the metadata.

**Static members** (``group.instance.id``, KIP-345) never send LeaveGroup (``maybeLeaveGroup`` /
``isDynamicMember``); a restarted one joins with member id "" and its instance id.

**Offset commits**: ``enable.auto.commit`` (the default) commits what is owned before every
rebalance (``onJoinPrepare`` -> ``maybeAutoCommitOffsetsAsync``) and on ``close()``; an answer
UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION resets the member like a heartbeat error would.

**Records** (``MemberConfig.delivery``; ``model.consumption`` says what happens to them). With a
delivery configuration the member also reads records: after the group work of a ``poll()`` it
auto-commits when ``auto.commit.interval.ms`` has passed, asks the coordinator for the committed
offsets of partitions it was just assigned (OffsetFetch), fetches up to ``max.poll.records``
records, and commits as the application's policy says; every commit answer is an
``offsets_committed`` event and every processed poll a ``records_consumed`` event, in the format of
Kafka's VerifiableConsumer. Without one (``delivery=None``: the group-only model the proofs use) the
member reads nothing and a committed position is a stand-in, the commit's time.

**Coordinator discovery** (``AbstractCoordinator.ensureCoordinatorReady`` / ``lookupCoordinator``,
``markCoordinatorUnknown``): a member knows which broker coordinates its group
(``coordinator_node``). An answer NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE to any request makes
it unknown; until a FindCoordinator answer names the broker again (retried every
``retry.backoff.ms``), ``poll()`` sends no group request and neither does the heartbeat thread;
records of partitions that have a position are still fetched (fetches go to partition leaders).
A member starts knowing its coordinator: its first lookup has no effect the model could show.

**Client-side session expiry** (``Heartbeat.sessionTimeoutExpired``): answers can be late -- the
broker reads nothing behind a parked JoinGroup / SyncGroup (``model.network``) -- and a member whose
heartbeats get no answer for ``session.timeout.ms`` marks the coordinator unknown and disconnects
(:func:`heartbeat_tick`).

**Not modelled:** request timeouts (a retriable failure rejoins at the next poll), pattern
subscriptions, racks.

Mutants honoured here: ``stale-owned-after-sync-rebalance`` (see :func:`_sync_failed`);
``position-ignores-committed`` (``model.consumption.on_offsets_fetched``).
"""

from __future__ import annotations

from model import consumption as cs
from model import events as ev
from model.assignors import assign as run_assignor
from model.assignors.sticky_claims import StickyAssignorFailure
from model.classic.member.consumption import (
    _commit_owned,
    _in_group,
    _on_offset_commit_response,
    _on_offset_fetch_response,
    _pending_revocation,
    _poll_records,
    _send_commit,
)
from model.classic.member.heartbeat import (
    _on_find_coordinator_response,
    _on_heartbeat_response,
    can_receive,
    heartbeat_deadline,
    heartbeat_tick,
    maybe_leave_group,
    poll_deadline,
)
from model.classic.member.state import (
    DEFAULT_ASSIGNORS,
    DEFAULT_HEARTBEAT_INTERVAL_MS,
    DEFAULT_MAX_POLL_INTERVAL_MS,
    DEFAULT_METADATA_MAX_AGE_MS,
    DEFAULT_RETRY_BACKOFF_MS,
    DEFAULT_SESSION_TIMEOUT_MS,
    NO_GENERATION,
    REJOIN_ROUND_TRIP_MS,
    STICKY,
    UNJOINED_GROUP,
    Assignment,
    Event,
    Generation,
    JoinFailure,
    JoinFuture,
    JoinPrepareCommit,
    JoinResult,
    Member,
    MemberConfig,
    MemberState,
    Metadata,
    Output,
    PendingCommit,
    PollThrew,
    _coordinator_unknown,
    _die,
    _lookup_coordinator,
    _own,
    _request_rejoin,
    _request_rejoin_if_necessary,
    _reset_state_and_rejoin,
    _with,
    member_config,
    member_event,
    rebalance_protocol,
    start,
)
from model.classic.member.subscription import (
    _group_topics,
    _metadata_for_assignment,
    _snapshot,
    leader_metadata,
    partitions_of,
    refresh_metadata,
    subscribe,
    subscription_of,
)
from model.consumption import Log
from model.messages import (
    NO_GENERATION as NO_GENERATION_ID,
)
from model.messages import (
    UNKNOWN_MEMBER_ID,
    ConsumerProtocolSubscription,
    Errors,
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    Request,
    Response,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.types import RebalanceProtocol, TopicPartition

# What model.classic.member offers: its own functions and those of the modules it is split into.
__all__ = [
    "Assignment",
    "DEFAULT_ASSIGNORS",
    "DEFAULT_HEARTBEAT_INTERVAL_MS",
    "DEFAULT_MAX_POLL_INTERVAL_MS",
    "DEFAULT_METADATA_MAX_AGE_MS",
    "DEFAULT_RETRY_BACKOFF_MS",
    "DEFAULT_SESSION_TIMEOUT_MS",
    "Event",
    "Generation",
    "JoinFailure",
    "JoinFuture",
    "JoinPrepareCommit",
    "JoinResult",
    "Member",
    "MemberConfig",
    "MemberState",
    "Metadata",
    "NO_GENERATION",
    "Output",
    "PendingCommit",
    "PollThrew",
    "REJOIN_ROUND_TRIP_MS",
    "STALE_OWNED_AFTER_SYNC_REBALANCE",
    "STICKY",
    "UNJOINED_GROUP",
    "_on_heartbeat_response",
    "_on_join_complete",
    "_request_rejoin",
    "_with",
    "can_receive",
    "close",
    "close_commit",
    "heartbeat_deadline",
    "heartbeat_tick",
    "leader_metadata",
    "maybe_leave_group",
    "member_config",
    "member_event",
    "partitions_of",
    "poll",
    "poll_deadline",
    "poll_due",
    "poll_has_work",
    "rebalance_protocol",
    "freeze",
    "receive",
    "refresh_metadata",
    "resume",
    "stall",
    "thaw",
    "start",
    "subscribe",
    "subscription_of",
]

STALE_OWNED_AFTER_SYNC_REBALANCE = "stale-owned-after-sync-rebalance"


def _rejoin_needed_or_pending(m: Member) -> tuple[Member, bool]:
    """``ConsumerCoordinator.rejoinNeededOrPending``: the leader's metadata snapshot (against the
    consumer's own ``metadata``, not the cluster's) and the subscription are checked first, each
    asking for a rejoin if it changed."""
    metadata = m.metadata
    if m.assignment_snapshot is not None and _snapshot(metadata, tuple(t for t, _ in m.assignment_snapshot)) \
            != m.assignment_snapshot:
        m = _request_rejoin_if_necessary(m, "cached metadata has changed")
        return m, True
    if m.joined_subscription is not None and m.joined_subscription != m.subscription:
        m = _request_rejoin_if_necessary(m, "subscription has changed")
        return m, True
    return m, m.rejoin_needed or m.join is not JoinFuture.NONE


def poll_has_work(m: Member, metadata: Metadata, log: Log = ()) -> bool:
    """Would ``poll()`` do anything now, whatever the time: handle a finished join, start a join,
    throw, ask for committed offsets, or read records? (Work that waits for a time is
    :func:`poll_due`.)"""
    if m.fatal is not None or m.stalled:
        return False
    if m.heartbeat_failure is not None or m.commit_fenced:
        return True
    c = m.consumption
    if c is not None and ((cs.records_available(c, log) and not _pending_revocation(m)) or (
            _in_group(m) and c.fetch_in_flight is None and cs.position_missing(c, m.owned))):
        return True
    if m.coordinator_node is None:
        return False  # the lookup waits for its time (poll_due); group work for the coordinator
    if m.join is JoinFuture.SUCCEEDED or m.join is JoinFuture.FAILED:
        return True
    if m.join is not JoinFuture.NONE or m.rejoin_not_before is not None or _join_blocked(m):
        return False  # waiting for the coordinator, the rejoin's time (poll_due) or a commit's answer
    return _rejoin_needed_or_pending(m)[1]


def _join_blocked(m: Member) -> bool:
    """The application thread waits for a commit's answer before it sends a JoinGroup:
    ``onJoinPrepare``'s auto-commit, or a ``commitSync`` in a revocation callback."""
    return m.prepare_commit is JoinPrepareCommit.IN_FLIGHT or any(p.blocks_join for p in m.commits_in_flight)


def poll_due(m: Member) -> int | None:
    """When ``poll()`` next has work that waits for a time: a coordinator lookup after its back-off,
    the auto-commit timer, an async batch finishing. None if there is none."""
    if m.fatal is not None or m.stalled:
        return None
    times: list[int] = []
    if m.coordinator_node is None and not m.finding_coordinator:
        times.append(m.lookup_after)
    if m.rejoin_not_before is not None:
        times.append(m.rejoin_not_before)
    if m.assignment_snapshot is not None:  # a leader looks at the refreshed metadata at once
        times.append(m.metadata_due)
    c = m.consumption
    if c is not None:
        if m.config.auto_commit and _in_group(m):
            times.append(c.auto_commit_due)
        batch = cs.next_batch_due(c)
        if batch is not None:
            times.append(batch)
    return min(times) if times else None


def poll(m: Member, now: int, metadata: Metadata, mutants: frozenset[str] = frozenset(), log: Log = ()) -> Output:
    """One call of ``KafkaConsumer.poll()``: first group membership (``ConsumerCoordinator.poll``
    -> ``joinGroupIfNeeded``): look up the coordinator if it is unknown; handle a finished
    JoinGroup/SyncGroup chain (``onJoinComplete``, or the failure), then, while a rejoin is needed,
    run ``onJoinPrepare`` (once per rebalance) and send JoinGroup. Returns at once while a request is
    in flight: the answer is handled by :func:`receive` and the next poll. Then, with records, the
    record work of :func:`_poll_records`.
    """
    if m.fatal is not None:
        return m, (), ()
    m = _with(refresh_metadata(m, now, metadata), last_poll=now)  # pollHeartbeat -> Heartbeat.poll
    if m.heartbeat_failure is not None:  # pollHeartbeat rethrows the heartbeat thread's failure
        return _die(m, m.heartbeat_failure.name, now)
    if m.commit_fenced:  # invokeCompletedOffsetCommitCallbacks throws FencedInstanceIdException
        return _die(m, Errors.FENCED_INSTANCE_ID.name, now)
    requests: list[Request] = []
    events: list[Event] = []
    if m.coordinator_node is None:  # coordinatorUnknownAndUnreadyAsync: look it up, no group work
        m = _lookup_coordinator(m, now, requests)
    elif m.rejoin_not_before is not None and now < m.rejoin_not_before and m.join is JoinFuture.NONE:
        pass  # the rejoin after a mismatched assignment is on its way (REJOIN_ROUND_TRIP_MS)
    else:
        if m.rejoin_not_before is not None:
            m = _with(m, rejoin_not_before=None)
        out = _join_group_if_needed(m, now, requests, events)
        if isinstance(out, PollThrew):
            return out.output
        m = out
    if m.consumption is not None and m.fatal is None:
        m = _poll_records(m, now, log, requests, events)
    return m, tuple(requests), tuple(events)


def _join_group_if_needed(m: Member, now: int, requests: list[Request], events: list[Event]) -> Member | PollThrew:
    """``AbstractCoordinator.joinGroupIfNeeded`` as far as it gets without waiting (``poll()`` runs
    it with a zero timer): while a rejoin is needed or pending, handle the finished join future
    (``onJoinComplete``, or the failure: rejoin at once, back off, or throw), else run
    ``onJoinPrepare`` once per rebalance and ``initiateJoinGroup``; return as soon as something has
    to be waited for (a request in flight, a commit's answer, a back-off)."""
    while True:
        result = m.join_result
        if m.join is JoinFuture.SUCCEEDED:
            assert isinstance(result, Assignment)
            m = _finish_join(_with(m, join=JoinFuture.NONE, join_result=None), result, now, events, requests)
        elif m.join is JoinFuture.FAILED:
            assert isinstance(result, JoinFailure)
            m = _with(m, join=JoinFuture.NONE, join_result=None)
            if result.error is not Errors.MEMBER_ID_REQUIRED:  # that one already asked for the rejoin
                m = _request_rejoin(m, f"rebalance failed due to {result.cause}")
            if not result.rejoins_at_once():
                if result.retriable():
                    return m  # back off: retry at the next poll
                dead, reqs, evs = _die(m, result.cause, now)
                return PollThrew((dead, tuple(requests) + reqs, tuple(events) + evs))
        elif m.join is not JoinFuture.NONE:
            return m  # the JoinGroup or SyncGroup is in flight: client.poll(future, 0) is not done
        if m.rejoin_not_before is not None or _join_blocked(m):
            return m  # the rejoin's round trip (REJOIN_ROUND_TRIP_MS), or a commitSync's answer
        m, needed = _rejoin_needed_or_pending(m)
        if not needed:
            return m
        if m.needs_join_prepare:
            m, prepared = _on_join_prepare(_with(m, needs_join_prepare=False), now, events, requests)
            if not prepared:  # onJoinPrepare returned false: waiting for its commit
                return _with(m, needs_join_prepare=True)
            if _join_blocked(m):
                return m  # the revocation callback's commitSync: the JoinGroup goes once it is answered
        return _send_join_group(m, requests)  # initiateJoinGroup; its future is not done yet


def _finish_join(m: Member, assignment: Assignment, now: int, events: list[Event], requests: list[Request]) -> Member:
    """joinGroupIfNeeded after its future succeeded: ``onJoinComplete`` unless the heartbeat
    thread reset the generation or state meanwhile, in which case the rebalance failed."""
    if not m.generation.has_reset() and m.state is MemberState.STABLE:
        m = _on_join_complete(m, assignment.partitions, now, events, requests)
        return _with(m, needs_join_prepare=True)
    return _reset_state_and_rejoin(m, "rebalance failed since the generation/state was modified by heartbeat "
                                      "thread before the rebalance callback triggered", True)


def _revoke(m: Member, revoked: frozenset[TopicPartition], now: int, events: list[Event],
            requests: list[Request]) -> Member:
    """``onPartitionsRevoked(revoked)`` (called even when empty by EAGER): with
    ``commit_on_revoke`` the application first commits what it processed of them (commitSync)."""
    d = m.config.delivery
    if d is not None and d.commit_on_revoke and not m.config.auto_commit and revoked and m.consumption is not None:
        # commitSync: the application thread waits for the answer before it goes on (no JoinGroup meanwhile)
        m = _send_commit(m, cs.application_offsets(m.consumption, d, revoked), False, now, requests, events,
                         blocks_join=True)
    events.append(member_event(m, ev.PARTITIONS_REVOKED, now, partitions=revoked))
    return _own(m, m.owned - revoked)


def _on_join_prepare(m: Member, now: int, events: list[Event], requests: list[Request]) -> tuple[Member, bool]:
    """``ConsumerCoordinator.onJoinPrepare``; false while it waits for its auto-commit.

    The auto-commit of what is owned is sent once (``autoCommitOffsetRequestFuture``) and awaited:
    ``poll()`` drives the join with a zero timer, so onJoinPrepare returns false and the JoinGroup
    goes out on a later pass, after the answer was handled; a retriable failure sends the commit
    again on that pass (after ``retry.backoff.ms``). The callbacks then run with the generation as
    it stands on that pass, which a rejected commit may have reset (everything owned is then lost).
    Not modelled: the rebalance-timeout bound on the wait (``joinPrepareTimer``)."""
    if m.config.auto_commit and m.prepare_commit is JoinPrepareCommit.NONE:
        sent = len(m.commits_in_flight)
        m = _commit_owned(m, now, requests, events, blocks_join=True)
        if len(m.commits_in_flight) > sent:
            m = _with(m, prepare_commit=JoinPrepareCommit.IN_FLIGHT)
    if m.prepare_commit is JoinPrepareCommit.IN_FLIGHT:
        return m, False
    if m.prepare_commit is JoinPrepareCommit.RETRY:
        return _with(m, prepare_commit=JoinPrepareCommit.NONE,
                     rejoin_not_before=now + m.config.retry_backoff_ms), False
    m = _with(m, prepare_commit=JoinPrepareCommit.NONE)
    gen = m.generation
    if gen.generation_id == NO_GENERATION_ID or gen.member_id == UNKNOWN_MEMBER_ID:
        if m.owned:  # everything owned is lost: the member was already out of the group
            events.append(member_event(m, ev.PARTITIONS_LOST, now, partitions=m.owned))
            m = _own(m, frozenset())
    elif m.config.protocol is RebalanceProtocol.EAGER:
        m = _revoke(m, m.owned, now, events, requests)
    else:
        subscribed = set(m.subscription)
        revoked = frozenset(tp for tp in m.owned if tp.topic not in subscribed)
        if revoked:
            m = _revoke(m, revoked, now, events, requests)
    return _with(m, is_leader=False), True


def _subscription_metadata(m: Member, assignor: str) -> ConsumerProtocolSubscription:
    """``ConsumerCoordinator.metadata``: one protocol per configured assignor.

    Owned partitions and generation are ConsumerProtocolSubscription v1/v2 fields, sent for every
    assignor and read by cooperative-sticky. The eager StickyAssignor reads its own userData
    instead (the partitions of its last assignment and that generation, kept across revocations).
    All of it is in the bytes the coordinator compares when a member rejoins (``matches``).
    """
    user_data = None
    if assignor == STICKY:
        user_data = m.sticky_memory if m.sticky_memory is not None else ((), NO_GENERATION_ID)
    return ConsumerProtocolSubscription(m.subscription, tuple(sorted(m.owned)), m.generation.generation_id,
                                        user_data=user_data)


def _send_join_group(m: Member, requests: list[Request]) -> Member:
    """``initiateJoinGroup`` -> ``sendJoinGroupRequest``."""
    c = m.config
    requests.append(JoinGroupRequest(
        member_id=m.generation.member_id, instance_id=c.instance_id, session_timeout_ms=c.session_timeout_ms,
        rebalance_timeout_ms=c.rebalance_timeout_ms,
        protocols=tuple((name, _subscription_metadata(m, name)) for name in c.assignors),
        reason=m.rejoin_reason))
    return _with(m, state=MemberState.PREPARING_REBALANCE, join=JoinFuture.JOIN,
                   join_sent_generation=m.generation, joined_subscription=m.subscription)


def _on_join_complete(m: Member, assignment: tuple[TopicPartition, ...], now: int,
                      events: list[Event], requests: list[Request]) -> Member:
    """``ConsumerCoordinator.onJoinComplete``."""
    if not m.is_leader:
        m = _with(m, assignment_snapshot=None)  # only the leader watches the metadata
    assigned = frozenset(assignment)
    subscribed = set(m.subscription)
    if any(tp.topic not in subscribed for tp in assigned):
        m = _request_rejoin(m, "received assignment does not match the current subscription")
        return _with(m, rejoin_not_before=now + REJOIN_ROUND_TRIP_MS)
    added = assigned - m.owned
    if m.config.protocol is RebalanceProtocol.COOPERATIVE:
        revoked = m.owned - assigned
        if revoked:
            m = _revoke(m, revoked, now, events, requests)
            m = _request_rejoin(m, "need to revoke partitions and re-join")
    if m.generation.protocol_name == STICKY:  # invokeOnAssignment on the selected assignor
        m = _with(m, sticky_memory=(tuple(sorted(assigned)), m.generation.generation_id))
    c, d = m.consumption, m.config.delivery
    if m.config.auto_commit and c is not None and d is not None:
        # "Reschedule the auto commit starting from now": nextAutoCommitTimer.updateAndReset
        m = _with(m, consumption=cs.auto_commit_reset(c, d, now))
    m = _own(m, assigned)
    events.append(member_event(m, ev.PARTITIONS_ASSIGNED, now, partitions=added))
    return m


def close_commit(m: Member, now: int) -> Output:
    """The first part of ``KafkaConsumer.close()``: ``ConsumerCoordinator.close`` ->
    ``maybeAutoCommitOffsetsSync``, a synchronous commit of what is owned. The caller delivers it
    and hands its answer to :func:`receive` before :func:`close` goes on (``model.system``), so a
    rejected commit's reset is what ``onLeavePrepare`` sees. One attempt: the retries of a
    retriable failure until the close timeout are not modelled."""
    events: list[Event] = []
    commits: list[Request] = []
    m = _commit_owned(m, now, commits, events)
    return m, tuple(commits), tuple(events)


def close(m: Member, now: int) -> Output:
    """The rest of ``KafkaConsumer.close()``, after :func:`close_commit` was answered:
    ``onLeavePrepare`` (revoked, or lost when the generation was reset or a rebalance is under way),
    then ``maybeLeaveGroup``, then the process ends."""
    events: list[Event] = []
    commits: list[Request] = []
    if m.owned:
        reset = m.generation.generation_id == NO_GENERATION_ID or m.generation.member_id == UNKNOWN_MEMBER_ID
        in_rebalance = m.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)
        if reset or in_rebalance:
            events.append(member_event(m, ev.PARTITIONS_LOST, now, partitions=m.owned))
            m = _own(m, frozenset())
        else:
            m = _revoke(m, m.owned, now, events, commits)
    left, requests, _ = maybe_leave_group(m, "the consumer is being closed", now)
    events.append(member_event(m, ev.SHUTDOWN_COMPLETE, now))
    return _with(left, join=JoinFuture.NONE, join_result=None), tuple(commits) + requests, tuple(events)


_COORDINATOR_GONE = (Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE)


def receive(m: Member, response: Response, now: int, metadata: Metadata,
            mutants: frozenset[str] = frozenset(), log: Log = ()) -> Output:
    """Handle one response from the coordinator (the ``*ResponseHandler.handle`` methods). Every
    handler first marks the coordinator unknown on NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE."""
    if m.fatal is not None:
        return m, (), ()
    if isinstance(response, FindCoordinatorResponse):
        return _on_find_coordinator_response(m, response, now), (), ()
    if response.error in _COORDINATOR_GONE:
        m = _coordinator_unknown(m, now)
    if isinstance(response, OffsetFetchResponse):
        return _on_offset_fetch_response(m, response, now, log, mutants)
    if isinstance(response, HeartbeatResponse):
        return _on_heartbeat_response(m, response, now)
    if isinstance(response, JoinGroupResponse):
        return _on_join_group_response(m, response, now, metadata, mutants)
    if isinstance(response, SyncGroupResponse):
        return _on_sync_group_response(m, response, now, mutants)
    if isinstance(response, OffsetCommitResponse):
        return _on_offset_commit_response(m, response, now)
    if isinstance(response, LeaveGroupResponse):
        return m, (), ()  # LeaveGroupResponseHandler only logs
    raise TypeError(f"unexpected response {response!r}")


def _fail_join(m: Member, error: Errors | None = None, exception: str | None = None) -> Member:
    """The join future fails (``RequestFuture.raise``)."""
    return _with(m, join=JoinFuture.FAILED, join_result=JoinFailure(error, exception))


def _on_join_group_response(m: Member, r: JoinGroupResponse, now: int, metadata: Metadata,
                            mutants: frozenset[str]) -> Output:
    """``JoinGroupResponseHandler.handle``."""
    if m.join is not JoinFuture.JOIN:
        return m, (), ()  # an answer for a chain the member abandoned (closed, restarted)
    error = r.error
    if error is Errors.NONE:
        if m.state is not MemberState.PREPARING_REBALANCE:  # left the group meanwhile
            return _fail_join(m, exception=UNJOINED_GROUP), (), ()
        generation = Generation(r.generation, r.member_id, r.protocol_name)
        # The heartbeat thread is enabled: Heartbeat.resetTimeouts restarts its timers.
        m = _with(m, state=MemberState.COMPLETING_REBALANCE, generation=generation,
                    heartbeat_due=now + m.config.heartbeat_interval_ms, last_poll=now,
                    session_due=now + m.config.session_timeout_ms)
        # The subscription this JoinGroup carried: what the trace checker judges subscribed-only by.
        events: tuple[Event, ...] = (member_event(m, ev.GROUP_JOINED, now, leader=r.leader,
                                                  subscription=list(m.joined_subscription or m.subscription)),)
        if r.leader == r.member_id:
            try:
                m, assignments = _on_leader_elected(_metadata_for_assignment(m, r, now, metadata), r, mutants)
            except StickyAssignorFailure as exc:  # onLeaderElected throws: the join future fails
                return _fail_join(_with(m, is_leader=True), exception=f"IllegalStateException: {exc}"), (), events
        else:
            assignments = ()
        request = SyncGroupRequest(generation.member_id, m.config.instance_id, generation.generation_id,
                                   generation.protocol_name, assignments)
        return _with(m, join=JoinFuture.SYNC, join_sent_generation=generation), (request,), events
    if error is Errors.UNKNOWN_MEMBER_ID:
        if m.generation == m.join_sent_generation:
            m = _reset_state_and_rejoin(m, "encountered UNKNOWN_MEMBER_ID from JOIN_GROUP response", True)
        return _fail_join(m, error), (), ()
    if error is Errors.MEMBER_ID_REQUIRED:  # KIP-394: adopt the id the coordinator made, rejoin
        m = _with(m, generation=Generation(NO_GENERATION_ID, r.member_id, None))
        m = _request_rejoin(m, f"need to re-join with the given member-id: {r.member_id}")
        return _fail_join(m, error), (), ()
    return _fail_join(m, error), (), ()  # REBALANCE_IN_PROGRESS retries; FENCED_INSTANCE_ID etc. are fatal


def _on_leader_elected(m: Member, r: JoinGroupResponse,
                       mutants: frozenset[str]) -> tuple[Member, tuple[tuple[str, tuple[TopicPartition, ...]], ...]]:
    """``ConsumerCoordinator.onLeaderElected``: run the selected assignor on the member list, over
    the leader's own metadata snapshot (:func:`_metadata_for_assignment`)."""
    protocol = r.protocol_name
    assert protocol is not None
    subscriptions = [subscription_of(jm) for jm in r.members]
    group_topics = _group_topics(m, r)
    metadata = m.metadata
    m = _with(m, is_leader=True, assignment_snapshot=_snapshot(metadata, tuple(group_topics)))
    if r.skip_assignment:  # KIP-814: a static leader rejoining a Stable group keeps what it has
        return m, ()
    result = run_assignor(protocol, dict(metadata), subscriptions, mutants=mutants)
    withheld = result.transferring
    assignments = tuple(sorted(
        (member_id, tuple(sorted(tp for tp in tps if tp not in withheld)))
        for member_id, tps in result.assignment.items()))
    return m, assignments


def _on_sync_group_response(m: Member, r: SyncGroupResponse, now: int, mutants: frozenset[str]) -> Output:
    """``SyncGroupResponseHandler.handle``."""
    if m.join is not JoinFuture.SYNC:
        return m, (), ()
    error = r.error
    if error is Errors.NONE:
        if m.generation.has_reset() or m.state is not MemberState.COMPLETING_REBALANCE:
            return _fail_join(m, Errors.ILLEGAL_GENERATION), (), ()  # the heartbeat thread reset it
        if r.protocol_name is not None and r.protocol_name != m.generation.protocol_name:
            return _fail_join(m, Errors.INCONSISTENT_GROUP_PROTOCOL), (), ()
        m = _with(m, state=MemberState.STABLE, rejoin_needed=False, rejoin_reason="",
                    join=JoinFuture.SUCCEEDED, join_result=Assignment(tuple(sorted(r.assignment))))
        return m, (), (member_event(m, ev.GROUP_SYNCED, now, partitions=r.assignment),)
    if error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION, Errors.REBALANCE_IN_PROGRESS):
        return _sync_failed(m, error, mutants), (), (_sync_error_event(m, error, now),)
    return _fail_join(m, error), (), ()  # FENCED_INSTANCE_ID and the unexpected ones are fatal


def _sync_error_event(m: Member, error: Errors, now: int) -> Event:
    """``group_synced`` for a SyncGroup the coordinator refused: ``error`` (the Errors name) and the
    generation and member id the SyncGroup was sent with (``join_sent_generation``), whatever the
    member resets afterwards. The Java client logs these in ``SyncGroupResponseHandler.handle``
    ("SyncGroup failed: ...")."""
    sent = m.join_sent_generation
    event = member_event(m, ev.GROUP_SYNCED, now, error=error.name)
    event["generation"] = sent.generation_id
    if sent.member_id:
        event["member_id"] = sent.member_id
    return event


def _sync_failed(m: Member, error: Errors, mutants: frozenset[str]) -> Member:
    """SyncGroup answered UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION or REBALANCE_IN_PROGRESS.

    Kafka 4.x: REBALANCE_IN_PROGRESS just rejoins (the generation from the JoinGroup answer is
    kept, and owned partitions are claimed with it: KAFKA-14639 makes the assignor settle such
    claims by generation); UNKNOWN_MEMBER_ID resets generation and member id; ILLEGAL_GENERATION
    resets the generation only (KAFKA-13419), so the next ``onJoinPrepare`` declares everything
    owned lost. Resets apply only if the generation is still the one the SyncGroup went with.

    Mutant ``stale-owned-after-sync-rebalance``: ILLEGAL_GENERATION resets nothing either, so the
    member keeps its partitions and rejoins claiming them with the generation it was just told
    is stale (KAFKA-13419's bug).
    """
    mutated = error is Errors.ILLEGAL_GENERATION and STALE_OWNED_AFTER_SYNC_REBALANCE in mutants
    if error is not Errors.REBALANCE_IN_PROGRESS and m.generation == m.join_sent_generation and not mutated:
        m = _reset_state_and_rejoin(m, f"encountered {error.name} from SYNC_GROUP response",
                                    error is not Errors.ILLEGAL_GENERATION)
    return _fail_join(m, error)


# -- faults and application calls -------------------------------------------------------------------


def stall(m: Member, now: int, for_ms: int) -> Member:
    """The application stops calling ``poll()`` for ``for_ms`` (a long record batch, a GC pause)."""
    until = now + for_ms
    if m.stalled_until is not None:
        return _with(m, stalled_until=max(until, m.stalled_until))
    return _with(m, stalled_until=until, last_poll=now)


def resume(m: Member, now: int) -> Member:
    return _with(m, stalled_until=None, last_poll=now)


def freeze(m: Member, now: int, for_ms: int) -> Member:
    """The whole process stops for ``for_ms`` (SIGSTOP then SIGCONT, a VM or container pause, a
    stop-the-world GC): unlike :func:`stall`, the heartbeat thread stops too, and nothing reads the
    socket. Nothing of the member's state changes while it is frozen; its timers are wall-clock
    deadlines (``Heartbeat``'s session, heartbeat and poll ``Timer`` objects are updated from
    ``time.milliseconds()`` when a thread next looks at them), so on the thaw they see the time that
    has passed: ``AbstractCoordinator.HeartbeatThread.run`` finds ``heartbeat.sessionTimeoutExpired``
    (no answer for ``session.timeout.ms``: coordinator unknown, reconnect) or
    ``pollTimeoutExpired``, and the coordinator, which heard nothing, has expired the member in the
    meantime. The application thread is stopped with the process: it is stalled until the thaw
    (a stall already longer goes on), and comes back at the thaw as from a stall (:func:`resume`)."""
    until = now + for_ms
    frozen_until = until if m.frozen_until is None else max(until, m.frozen_until)
    return _with(stall(m, now, for_ms), frozen_until=frozen_until)


def thaw(m: Member, now: int) -> Member:
    """SIGCONT: the threads run again (the application thread's stall ends at its own time)."""
    return _with(m, frozen_until=None)
