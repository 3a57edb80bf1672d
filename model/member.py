"""The consumer side of the classic group protocol: one member's ``ConsumerCoordinator``.

What a Kafka consumer does to stay in a group (Apache Kafka 4.1, clients/.../consumer/internals/
``AbstractCoordinator`` and ``ConsumerCoordinator``), as pure functions on a frozen :class:`Member`.

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

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from model import consumption as cs
from model import events as ev
from model.assignors import ASSIGNORS
from model.assignors import assign as run_assignor
from model.assignors.sticky_claims import StickyAssignorFailure
from model.consumption import Consumption, DeliveryConfig, Log
from model.messages import (
    NO_GENERATION as NO_GENERATION_ID,
)
from model.messages import (
    UNKNOWN_MEMBER_ID,
    ConsumerProtocolSubscription,
    Errors,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
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
from model.network import Disconnect
from model.system_evolve import evolver
from model.types import RebalanceProtocol, Subscription, TopicPartition

STALE_OWNED_AFTER_SYNC_REBALANCE = "stale-owned-after-sync-rebalance"

Metadata = tuple[tuple[str, int], ...]  # the cluster's topics and partition counts, sorted by topic
Event = dict[str, Any]
Output = tuple["Member", tuple[Request | Disconnect, ...], tuple[Event, ...]]

# Kafka's consumer defaults (ConsumerConfig, 4.x).
DEFAULT_SESSION_TIMEOUT_MS = 45000
DEFAULT_HEARTBEAT_INTERVAL_MS = 3000
DEFAULT_MAX_POLL_INTERVAL_MS = 300000
DEFAULT_ASSIGNORS = ("range", "cooperative-sticky")  # partition.assignment.strategy default
DEFAULT_RETRY_BACKOFF_MS = 100  # retry.backoff.ms
DEFAULT_METADATA_MAX_AGE_MS = 300000  # metadata.max.age.ms
# The model's messages take no time. The one loop in which a real consumer does nothing but exchange
# JoinGroup / SyncGroup with the coordinator -- rejoining at once because the assignment it got does
# not match its subscription, and getting the same one again -- would then never let time pass; the
# model gives each such rejoin the time its two round trips take on a real network.
REJOIN_ROUND_TRIP_MS = 10
STICKY = "sticky"  # the one assignor that keeps its own memory in userData (StickyAssignor)


class MemberState(StrEnum):
    """``AbstractCoordinator.MemberState``."""

    UNJOINED = "UNJOINED"  # not part of a group (yet, or any more)
    PREPARING_REBALANCE = "PREPARING_REBALANCE"  # JoinGroup sent, no answer yet
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"  # JoinGroup answered, SyncGroup sent
    STABLE = "STABLE"  # SyncGroup answered; heartbeating

    def has_not_joined(self) -> bool:
        """``hasNotJoinedGroup``: the heartbeat thread is off in these states."""
        return self is MemberState.UNJOINED or self is MemberState.PREPARING_REBALANCE


class JoinFuture(StrEnum):
    """Where ``joinFuture`` (the JoinGroup -> SyncGroup chain) stands."""

    NONE = "none"  # no rebalance attempt under way
    JOIN = "join"  # JoinGroup in flight
    SYNC = "sync"  # SyncGroup in flight
    SUCCEEDED = "succeeded"  # SyncGroup answered; the application thread has not handled it yet
    FAILED = "failed"  # an error answer; the application thread has not handled it yet


@dataclass(frozen=True, slots=True)
class Generation:
    """``AbstractCoordinator.Generation``."""

    generation_id: int = NO_GENERATION_ID
    member_id: str = UNKNOWN_MEMBER_ID
    protocol_name: str | None = None

    def has_reset(self) -> bool:
        """``hasGenerationReset``: ILLEGAL_GENERATION keeps the member id, so only these two."""
        return self.generation_id == NO_GENERATION_ID and self.protocol_name is None


NO_GENERATION = Generation()

UNJOINED_GROUP = "UnjoinedGroupException"  # retriable: the JoinGroup answer came after the member left


@dataclass(frozen=True, slots=True)
class Assignment:
    """The join future succeeded: the assignment the SyncGroup answer carried."""

    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class JoinFailure:
    """The join future failed (``RequestFuture.raise``): with a Kafka error, or with an exception the
    client raises itself -- :data:`UNJOINED_GROUP`, or ``IllegalStateException: ...`` when the
    leader's assignor throws."""

    error: Errors | None = None
    exception: str | None = None

    @property
    def cause(self) -> str:
        """The exception's name as ``joinGroupIfNeeded`` reports it ("rebalance failed due to ...")."""
        return self.exception if self.exception is not None else self.error.name if self.error is not None else ""

    def rejoins_at_once(self) -> bool:
        """``joinGroupIfNeeded``'s ``continue``: UnknownMemberId, IllegalGeneration, RebalanceInProgress,
        MemberIdRequired."""
        return self.error in _REJOIN_AT_ONCE

    def retriable(self) -> bool:
        """``future.isRetriable()``: retried after ``retry.backoff.ms``; anything else is thrown."""
        return self.error in _RETRIABLE or self.exception == UNJOINED_GROUP


JoinResult = Assignment | JoinFailure | None  # what the finished join future holds (None: not finished)


@dataclass(frozen=True, slots=True)
class PollThrew:
    """``poll()`` threw out of ``joinGroupIfNeeded`` (a fatal error): what the dying member did."""

    output: tuple[Member, tuple[Request | Disconnect, ...], tuple[Event, ...]]


def rebalance_protocol(assignors: tuple[str, ...]) -> RebalanceProtocol:
    """The highest protocol every configured assignor supports (``ConsumerCoordinator``'s
    constructor sorts the common ones and takes the last). ``ValueError`` if there is none."""
    common: set[RebalanceProtocol] | None = None
    for name in assignors:
        supported = set(ASSIGNORS[name].protocols)
        common = supported if common is None else common & supported
    if not common:
        raise ValueError(f"assignors {list(assignors)} have no commonly supported rebalance protocol")
    return RebalanceProtocol.COOPERATIVE if RebalanceProtocol.COOPERATIVE in common else RebalanceProtocol.EAGER


@dataclass(frozen=True, slots=True)
class MemberConfig:
    """A consumer's group configuration (``GroupRebalanceConfig`` + the assignor list).

    ``rebalance_timeout_ms`` is what JoinGroup carries; the Java consumer sets it to
    ``max.poll.interval.ms`` (``GroupRebalanceConfig``), and so does the scenario format unless
    told otherwise.
    """

    name: str  # the process name (trace field ``member``)
    assignors: tuple[str, ...] = DEFAULT_ASSIGNORS
    instance_id: str | None = None
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    rebalance_timeout_ms: int = DEFAULT_MAX_POLL_INTERVAL_MS
    heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS
    max_poll_interval_ms: int = DEFAULT_MAX_POLL_INTERVAL_MS
    group_id: str = "group"
    auto_commit: bool = True  # enable.auto.commit (Kafka's default)
    delivery: DeliveryConfig | None = None  # records and commits (model.consumption); None: group only
    retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS
    metadata_max_age_ms: int = DEFAULT_METADATA_MAX_AGE_MS
    protocol: RebalanceProtocol = RebalanceProtocol.EAGER  # derived: use :func:`member_config`

    @property
    def dynamic(self) -> bool:
        return self.instance_id is None


def member_config(name: str, assignors: tuple[str, ...] = DEFAULT_ASSIGNORS, **settings: Any) -> MemberConfig:
    """A :class:`MemberConfig` with its rebalance protocol derived from ``assignors``."""
    return MemberConfig(name=name, assignors=assignors, protocol=rebalance_protocol(assignors), **settings)


class JoinPrepareCommit(StrEnum):
    """Where ``onJoinPrepare``'s auto-commit (``autoCommitOffsetRequestFuture``) stands."""

    NONE = "none"  # no future: the next onJoinPrepare sends one (if there is anything to commit)
    IN_FLIGHT = "in_flight"  # sent, not answered: onJoinPrepare returns false, no JoinGroup yet
    DONE = "done"  # answered (succeeded, or failed for good): the next onJoinPrepare goes on
    RETRY = "retry"  # failed with a retriable error: the next onJoinPrepare sends it again


@dataclass(frozen=True, slots=True)
class PendingCommit:
    """An OffsetCommit in flight: the generation it was sent with (``sentGeneration``), what it
    commits, and whether the application thread waits for its answer before it sends a JoinGroup
    (``onJoinPrepare``'s auto-commit, or a ``commitSync`` in ``onPartitionsRevoked``)."""

    generation: Generation
    offsets: tuple[tuple[TopicPartition, int], ...]
    blocks_join: bool = False


@dataclass(frozen=True, slots=True)
class Member:
    """One consumer process incarnation's group-membership state.

    ``owned`` is ``SubscriptionState.assignedPartitions()``: what the application holds, from
    ``onPartitionsAssigned`` until ``onPartitionsRevoked`` / ``onPartitionsLost``.
    """

    config: MemberConfig
    conn: str  # this incarnation's connection id
    subscription: tuple[str, ...]  # SubscriptionState.subscription(), sorted
    state: MemberState = MemberState.UNJOINED
    generation: Generation = NO_GENERATION
    rejoin_needed: bool = True
    rejoin_reason: str = ""
    needs_join_prepare: bool = True
    join: JoinFuture = JoinFuture.NONE
    join_sent_generation: Generation = NO_GENERATION  # the generation the JoinGroup/SyncGroup went with
    join_result: JoinResult = None  # SUCCEEDED: the assignment; FAILED: why
    joined_subscription: tuple[str, ...] | None = None  # the subscription the last JoinGroup carried
    owned: frozenset[TopicPartition] = frozenset()
    is_leader: bool = False
    assignment_snapshot: Metadata | None = None  # leader only: metadata the assignment used
    sticky_memory: tuple[tuple[TopicPartition, ...], int] | None = None  # StickyAssignor userData
    heartbeat_due: int = 0  # the heartbeat timer (meaningful while the heartbeat thread runs)
    session_due: int = 0  # the client's session timer (Heartbeat.sessionTimer): no heartbeat answer since
    heartbeats_in_flight: tuple[Generation, ...] = ()  # sentGeneration of each unanswered Heartbeat
    commits_in_flight: tuple[PendingCommit, ...] = ()  # each unanswered OffsetCommit, oldest first
    prepare_commit: JoinPrepareCommit = JoinPrepareCommit.NONE  # onJoinPrepare's auto-commit
    commit_fenced: bool = False  # an async commit was answered FENCED_INSTANCE_ID (asyncCommitFenced)
    heartbeat_failure: Errors | None = None  # the heartbeat thread died (FENCED_INSTANCE_ID)
    last_poll: int = 0  # the poll timer's start (Heartbeat.poll / resetTimeouts)
    stalled_until: int | None = None  # the application thread is busy until then
    fatal: str | None = None  # what poll() threw that killed the consumer (an error code or exception name)
    consumption: Consumption | None = None  # records (config.delivery set)
    coordinator_node: int | None = 0  # the broker the member sends group requests to; None: unknown
    finding_coordinator: bool = False  # a FindCoordinator is in flight
    lookup_after: int = 0  # retry.backoff.ms after a failed lookup
    rejoin_not_before: int | None = None  # a rejoin after a mismatched assignment: see REJOIN_ROUND_TRIP_MS
    metadata: Metadata = ()  # the consumer's metadata snapshot (ConsumerMetadata): partition counts it knows
    metadata_due: int = 0  # its next refresh (metadata.max.age.ms after the last one)

    # -- views ---------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def stalled(self) -> bool:
        return self.stalled_until is not None

    @property
    def heartbeat_thread_enabled(self) -> bool:
        return not self.state.has_not_joined() and self.heartbeat_failure is None and self.fatal is None


_evolve_member = evolver(Member)


def _with(m: Member, **changes: Any) -> Member:
    """``m`` with ``changes`` (``dataclasses.replace``, faster: ``model.system_evolve``)."""
    return _evolve_member(m, changes)


def start(config: MemberConfig, conn: str, topics: tuple[str, ...], now: int,
          coordinator_node: int | None = 0) -> tuple[Member, tuple[Event, ...]]:
    """A new incarnation: ``subscribe(topics)``; it joins at its first :func:`poll`. With records,
    its ``startup_complete`` says how it commits and resets (the trace checker reads that)."""
    d = config.delivery
    member = Member(config=config, conn=conn, subscription=tuple(sorted(set(topics))), last_poll=now,
                    consumption=None if d is None else cs.start(d, now), coordinator_node=coordinator_node,
                    lookup_after=now, metadata_due=now)
    if d is None:
        return member, (member_event(member, ev.STARTUP_COMPLETE, now),)
    return member, (member_event(member, ev.STARTUP_COMPLETE, now, auto_offset_reset=d.auto_offset_reset,
                                 enable_auto_commit=config.auto_commit,
                                 auto_commit_interval_ms=d.auto_commit_interval_ms),)


# -- events ------------------------------------------------------------------------------------


def member_event(m: Member, name: str, now: int, **fields: Any) -> Event:
    gen = m.generation
    return ev.event(name, now, group=m.config.group_id, member=m.config.name, member_id=gen.member_id or None,
                    instance_id=m.config.instance_id, generation=gen.generation_id,
                    protocol=m.config.protocol.value, assignor=gen.protocol_name, **fields)


# -- the application thread: poll() ---------------------------------------------------------------


def _snapshot(metadata: Metadata, topics: frozenset[str] | tuple[str, ...]) -> Metadata:
    """``MetadataSnapshot``: partition counts of ``topics`` (0 when the topic does not exist)."""
    counts = dict(metadata)
    return tuple((t, counts.get(t, 0)) for t in sorted(set(topics)))


def refresh_metadata(m: Member, now: int, metadata: Metadata) -> Member:
    """The consumer's metadata snapshot is what the cluster says as of its last refresh, which comes
    ``metadata.max.age.ms`` after the previous one (``Metadata.timeToNextUpdate``, driven by
    ``NetworkClient.poll``), or at once after a new subscription (``requestUpdateForNewTopics``).
    The model refreshes when the member acts (:func:`poll`, a JoinGroup answer) at or after the due
    time; only a leader's snapshot decides anything (it is the assignment's input and
    ``rejoinNeededOrPending`` compares it), and a leader polls at its refresh times
    (:func:`poll_due`). Not modelled: refreshes on errors (e.g. UNKNOWN_TOPIC_OR_PARTITION)."""
    if now < m.metadata_due:
        return m
    return _with(m, metadata=metadata, metadata_due=now + m.config.metadata_max_age_ms)


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


def _request_rejoin(m: Member, reason: str) -> Member:
    return _with(m, rejoin_needed=True, rejoin_reason=reason)


def _request_rejoin_if_necessary(m: Member, reason: str) -> Member:
    return m if m.rejoin_needed else _request_rejoin(m, reason)


def _reset_state_and_rejoin(m: Member, reason: str, reset_member_id: bool) -> Member:
    """``resetStateAndRejoin``: back to UNJOINED with the generation reset (member id kept when
    ``reset_member_id`` is false), rejoin requested, ``onJoinPrepare`` to run again."""
    generation = NO_GENERATION if reset_member_id else Generation(NO_GENERATION_ID, m.generation.member_id, None)
    return _with(m, state=MemberState.UNJOINED, generation=generation, rejoin_needed=True,
                   rejoin_reason=reason, needs_join_prepare=True)


# Errors after which joinGroupIfNeeded rejoins at once (the `continue` in its loop).
_REJOIN_AT_ONCE = frozenset({Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION, Errors.REBALANCE_IN_PROGRESS,
                             Errors.MEMBER_ID_REQUIRED})
# Errors joinGroupIfNeeded retries after a back-off (RetriableException); the rest are thrown.
_RETRIABLE = frozenset({Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE,
                        Errors.NOT_COORDINATOR})


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


def _pending_revocation(m: Member) -> bool:
    """``maybeMarkPartitionsPendingRevocation``: an EAGER member that sent onJoinPrepare's auto-commit
    fetches nothing more from what it owns until the callbacks ran (all of it will be revoked)."""
    return m.config.protocol is RebalanceProtocol.EAGER and m.prepare_commit is not JoinPrepareCommit.NONE


def _in_group(m: Member) -> bool:
    """``ConsumerCoordinator.poll`` would return true: coordinator known, no rebalance under way
    (only then does ``poll()`` auto-commit and fetch committed offsets)."""
    return m.coordinator_node is not None and m.join is JoinFuture.NONE and not m.rejoin_needed \
        and m.state is MemberState.STABLE


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


def _lookup_coordinator(m: Member, now: int, requests: list[Request]) -> Member:
    """``lookupCoordinator``: a FindCoordinator, unless one is in flight or the back-off runs."""
    if m.finding_coordinator or now < m.lookup_after:
        return m
    requests.append(FindCoordinatorRequest(m.config.group_id))
    return _with(m, finding_coordinator=True)


def _coordinator_unknown(m: Member, now: int) -> Member:
    """``markCoordinatorUnknown``: group requests wait for a new lookup."""
    if m.coordinator_node is None:
        return m
    return _with(m, coordinator_node=None, lookup_after=now)


def _poll_records(m: Member, now: int, log: Log, requests: list[Request], events: list[Event]) -> Member:
    """The record part of ``poll()`` (``model.consumption``): when in the group, the periodic
    auto-commit (``maybeAutoCommitOffsetsAsync(now)``) and an OffsetFetch for partitions without a
    position (``updateFetchPositions``); then the records (``pollForFetches``), processed at once or
    handed to the async worker; the worker's finished batches; the application's commit."""
    c = m.consumption
    d = m.config.delivery
    assert c is not None and d is not None
    if _in_group(m):
        if m.config.auto_commit and cs.auto_commit_due(c, now):
            m = _with(m, consumption=cs.auto_commit_reset(c, d, now))
            m = _send_commit(m, cs.all_consumed(c), True, now, requests, events)
            c = m.consumption
            assert c is not None
        if c.fetch_in_flight is None and cs.position_missing(c, m.owned):
            pending = cs.awaiting_position(c, m.owned)
            requests.append(OffsetFetchRequest(pending))
            c = cs.fetch_sent(c, pending)
    polled: cs.Polled = ()
    if not _pending_revocation(m):
        c, polled = cs.poll_records(c, log, d, now)
    done: cs.Polled = polled
    if d.processing == "async":
        c, done = cs.process_due(c, now)
    m = _with(m, consumption=c)
    if done:
        events.append(_records_consumed(m, done, now))
        if not m.config.auto_commit and d.commit != "none":
            m = _send_commit(m, cs.application_offsets(c, d), False, now, requests, events)
    return m


def _records_consumed(m: Member, polled: cs.Polled, now: int) -> Event:
    """VerifiableConsumer's ``records_consumed``: per partition count, minOffset, maxOffset."""
    parts = [{"topic": tp.topic, "partition": tp.partition, "count": last - first + 1, "minOffset": first,
              "maxOffset": last} for tp, first, last in polled]
    event = member_event(m, ev.RECORDS_CONSUMED, now, count=sum(last - first + 1 for _, first, last in polled))
    event["partitions"] = parts  # as VerifiableConsumer prints them, after the count
    return event


def _send_commit(m: Member, offsets: tuple[tuple[TopicPartition, int], ...], auto: bool, now: int,
                 requests: list[Request], events: list[Event], blocks_join: bool = False) -> Member:
    """``sendOffsetCommitRequest``: only a STABLE member (``generationIfStable``) with a known
    coordinator sends; otherwise an application commit fails at once (CommitFailedException, or
    RebalanceInProgressException during a rebalance) and the auto-commit only logs."""
    if not offsets:
        return m
    if m.state is not MemberState.STABLE or m.coordinator_node is None:
        if not auto:
            error = ("RebalanceInProgressException" if m.state in (MemberState.PREPARING_REBALANCE,
                                                                   MemberState.COMPLETING_REBALANCE)
                     else "CommitFailedException" if m.coordinator_node is not None else "COORDINATOR_NOT_AVAILABLE")
            events.append(_offsets_committed(m, m.generation, offsets, None, error, now))
        return m
    requests.append(OffsetCommitRequest(m.generation.member_id, m.config.instance_id, m.generation.generation_id,
                                        offsets))
    return _with(m, commits_in_flight=m.commits_in_flight + (PendingCommit(m.generation, offsets, blocks_join),))


def _offsets_committed(m: Member, sent: Generation, offsets: tuple[tuple[TopicPartition, int], ...],
                       partition_errors: dict[TopicPartition, Errors] | None, error: str | None, now: int) -> Event:
    """VerifiableConsumer's ``offsets_committed`` (``success``, ``error``), with the generation and
    member id the commit was sent with."""
    items: list[dict[str, Any]] = []
    for tp, offset in offsets:
        item: dict[str, Any] = {"topic": tp.topic, "partition": tp.partition, "offset": offset}
        perr = (partition_errors or {}).get(tp, Errors.NONE)
        if perr is not Errors.NONE:
            item["error"] = perr.name
        items.append(item)
    event = member_event(m, ev.OFFSETS_COMMITTED, now, success=error is None, error=error)
    event["offsets"] = items
    event["generation"] = sent.generation_id
    if sent.member_id:
        event["member_id"] = sent.member_id
    return event


def _finish_join(m: Member, assignment: Assignment, now: int, events: list[Event], requests: list[Request]) -> Member:
    """joinGroupIfNeeded after its future succeeded: ``onJoinComplete`` unless the heartbeat
    thread reset the generation or state meanwhile, in which case the rebalance failed."""
    if not m.generation.has_reset() and m.state is MemberState.STABLE:
        m = _on_join_complete(m, assignment.partitions, now, events, requests)
        return _with(m, needs_join_prepare=True)
    return _reset_state_and_rejoin(m, "rebalance failed since the generation/state was modified by heartbeat "
                                      "thread before the rebalance callback triggered", True)


def _commit_owned(m: Member, now: int, requests: list[Request], events: list[Event],
                  blocks_join: bool = False) -> Member:
    """``maybeAutoCommitOffsetsAsync``: commit the position of every owned partition, sent only
    while the member is STABLE (``sendOffsetCommitRequest`` uses ``generationIfStable`` and fails
    locally otherwise). Without records a position is a stand-in: the time."""
    if not m.config.auto_commit or not m.owned:
        return m
    offsets = cs.all_consumed(m.consumption) if m.consumption is not None else \
        tuple((tp, now) for tp in sorted(m.owned))
    return _send_commit(m, offsets, True, now, requests, events, blocks_join)


def _own(m: Member, owned: frozenset[TopicPartition]) -> Member:
    """``owned`` becomes the assignment; positions of partitions given up go with them."""
    c = m.consumption
    if c is None:
        return _with(m, owned=owned)
    return _with(m, owned=owned, consumption=cs.retain(c, owned))


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


def _die(m: Member, error: str, now: int) -> Output:
    """A fatal error thrown out of ``poll()`` (FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL,
    ...): the application gives up and closes without leaving the group. Whatever it owned is
    lost: another incarnation has its instance id, or it was never accepted."""
    events: list[Event] = []
    if m.owned:
        events.append(member_event(m, ev.PARTITIONS_LOST, now, partitions=m.owned))
    dead = _with(_own(m, frozenset()), fatal=error, state=MemberState.UNJOINED)
    events.append(member_event(dead, ev.SHUTDOWN_COMPLETE, now, error=error))
    return dead, (), tuple(events)


# -- the heartbeat thread ---------------------------------------------------------------------------


def poll_deadline(m: Member) -> int | None:
    """When the poll timer expires: only a stalled application misses its polls."""
    return m.last_poll + m.config.max_poll_interval_ms if m.stalled else None


def heartbeat_deadline(m: Member) -> int | None:
    """The next time the heartbeat thread acts (a heartbeat, a coordinator lookup, the poll
    timeout), or None. While the coordinator is unknown the thread only looks it up: it checks the
    poll timeout once the coordinator is known again (``HeartbeatThread.run``)."""
    if not m.heartbeat_thread_enabled:
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


# -- response handlers --------------------------------------------------------------------------------


def can_receive(m: Member) -> bool:
    """Does some thread read this member's socket now? The application thread does unless it is
    stalled; the heartbeat thread does while it runs (``client.pollNoWakeup`` in its loop)."""
    return m.fatal is None and (not m.stalled or m.heartbeat_thread_enabled)


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


def subscription_of(jm: JoinGroupMember) -> Subscription:
    """What the leader's assignor reads of a member: its subscription, and the one (owned,
    generation) pair the model's assignors take (``model.types.Subscription``) -- the v1/v2 fields,
    or, for the sticky assignor, its userData."""
    meta = jm.metadata
    owned, generation = (meta.owned, meta.generation) if meta.user_data is None else meta.user_data
    return Subscription(member_id=jm.member_id, topics=meta.topics, owned=owned, generation=generation,
                        instance_id=jm.instance_id, rack=meta.rack)


def _group_topics(m: Member, r: JoinGroupResponse) -> frozenset[str]:
    """Every topic some member of the JoinGroup answer (or the leader itself) subscribes to."""
    return frozenset(t for jm in r.members for t in jm.metadata.topics) | frozenset(m.subscription)


def _metadata_for_assignment(m: Member, r: JoinGroupResponse, now: int, cluster: Metadata) -> Member:
    """The leader's metadata snapshot as its assignment will see it: refreshed if due, and refreshed
    anyway when the group subscribes to a topic the leader does not (``updateGroupSubscription``:
    ``groupSubscribe`` is true, ``requestUpdateForNewTopics``, then ``ensureFreshMetadata``)."""
    m = refresh_metadata(m, now, cluster)
    if not _group_topics(m, r) <= frozenset(m.subscription):
        m = _with(m, metadata=cluster, metadata_due=now + m.config.metadata_max_age_ms)
    return m


def leader_metadata(m: Member, r: JoinGroupResponse, now: int, cluster: Metadata) -> Metadata:
    """The metadata the leader ``m`` runs its assignor on when it handles ``r`` at ``now`` (what the
    invariant monitor judges the assignment by)."""
    return _metadata_for_assignment(m, r, now, cluster).metadata


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


def _on_offset_commit_response(m: Member, r: OffsetCommitResponse, now: int) -> Output:
    """``OffsetCommitResponseHandler.handle``; with records, the answer is an ``offsets_committed``
    event (VerifiableConsumer prints one per commit callback)."""
    if not m.commits_in_flight:
        return m, (), ()
    pending = m.commits_in_flight[0]
    sent = pending.generation
    m = _with(m, commits_in_flight=m.commits_in_flight[1:])
    if pending.blocks_join and m.prepare_commit is JoinPrepareCommit.IN_FLIGHT:
        m = _with(m, prepare_commit=JoinPrepareCommit.RETRY if r.error in _RETRIABLE else JoinPrepareCommit.DONE)
    events: tuple[Event, ...] = ()
    if m.consumption is not None and pending.offsets:
        errors = dict(r.partition_errors)
        failed = [e for e in (r.error, *errors.values()) if e is not Errors.NONE]
        events = (_offsets_committed(m, sent, pending.offsets, errors, failed[0].name if failed else None, now),)
    error = r.error
    if error is Errors.FENCED_INSTANCE_ID:
        return (_with(m, commit_fenced=True) if m.generation == sent else m), (), events
    if error is Errors.REBALANCE_IN_PROGRESS:
        return _request_rejoin(m, "offset commit failed since group is already rebalancing"), (), events
    if error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
        if m.generation != sent and m.state is MemberState.PREPARING_REBALANCE:
            return m, (), events  # already in another rebalance with a new generation: nothing to reset
        return _reset_state_and_rejoin(m, f"encountered {error.name} from OFFSET_COMMIT response",
                                       error is not Errors.ILLEGAL_GENERATION), (), events
    return m, (), events


def _on_offset_fetch_response(m: Member, r: OffsetFetchResponse, now: int, log: Log,
                              mutants: frozenset[str]) -> Output:
    """``OffsetFetchResponseHandler`` then ``SubscriptionState``: positions from the committed
    offsets or ``auto.offset.reset`` (``model.consumption.on_offsets_fetched``); ``none`` with
    nothing committed makes ``poll()`` throw NoOffsetForPartitionException, which ends the
    application."""
    c, d = m.consumption, m.config.delivery
    if c is None or d is None or c.fetch_in_flight is None:
        return m, (), ()
    if r.error is not Errors.NONE:
        return _with(m, consumption=cs.fetch_failed(c)), (), ()
    c, error = cs.on_offsets_fetched(c, r.offsets, m.owned, log, d, mutants)
    m = _with(m, consumption=c)
    if error is not None:
        return _die(m, error, now)
    return m, (), ()


def _on_find_coordinator_response(m: Member, r: FindCoordinatorResponse, now: int) -> Member:
    """``FindCoordinatorResponseHandler``: the broker named is the coordinator from now on; an
    error is retried after ``retry.backoff.ms``."""
    if not m.finding_coordinator:
        return m
    if r.error is Errors.NONE:  # heartbeat.resetSessionTimeout()
        return _with(m, finding_coordinator=False, coordinator_node=r.node, session_due=now + m.config.session_timeout_ms)
    return _with(m, finding_coordinator=False, lookup_after=now + m.config.retry_backoff_ms)


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


# -- faults and application calls -------------------------------------------------------------------


def stall(m: Member, now: int, for_ms: int) -> Member:
    """The application stops calling ``poll()`` for ``for_ms`` (a long record batch, a GC pause)."""
    until = now + for_ms
    if m.stalled_until is not None:
        return _with(m, stalled_until=max(until, m.stalled_until))
    return _with(m, stalled_until=until, last_poll=now)


def resume(m: Member, now: int) -> Member:
    return _with(m, stalled_until=None, last_poll=now)


def subscribe(m: Member, topics: tuple[str, ...]) -> Member:
    """``KafkaConsumer.subscribe(topics)``: the next poll sees the change and rejoins, with its
    metadata refreshed first (``requestUpdateForNewTopics``)."""
    return _with(m, subscription=tuple(sorted(set(topics))), metadata_due=0)


def partitions_of(metadata: Metadata | Mapping[str, int], topics: tuple[str, ...]) -> frozenset[TopicPartition]:
    counts = dict(metadata)
    return frozenset(TopicPartition(t, p) for t in topics for p in range(counts.get(t, 0)))
