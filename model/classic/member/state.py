"""The consumer's group state: what ``AbstractCoordinator`` (and ``ConsumerCoordinator``'s fields) hold.

The frozen :class:`Member` record of one consumer process incarnation, its configuration
(``GroupRebalanceConfig``), ``MemberState``, ``Generation``, the join future and what it holds, and the
state changes every part of the consumer uses: ``requestRejoin``, ``resetStateAndRejoin``,
``markCoordinatorUnknown`` / ``lookupCoordinator``, and a fatal error thrown out of ``poll()``. The
behaviour is in ``model.classic.member`` (the ``ConsumerCoordinator``: poll, join, callbacks, responses),
``model.classic.member.heartbeat`` (the heartbeat thread), ``model.classic.member.subscription`` (subscription and
metadata) and ``model.classic.member.consumption`` (records and offset commits); ``model.classic.member`` is the
public face and re-exports all of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from model import consumption as cs
from model import events as ev
from model.assignors import ASSIGNORS
from model.consumption import Consumption, DeliveryConfig
from model.messages import (
    NO_GENERATION as NO_GENERATION_ID,
)
from model.messages import (
    UNKNOWN_MEMBER_ID,
    Errors,
    FindCoordinatorRequest,
    Request,
)
from model.network import Disconnect
from model.system_evolve import evolver
from model.types import RebalanceProtocol, TopicPartition

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
    frozen_until: int | None = None  # the whole process is stopped (SIGSTOP, a VM pause) until then
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
    def frozen(self) -> bool:
        return self.frozen_until is not None

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


def member_event(m: Member, name: str, now: int, **fields: Any) -> Event:
    gen = m.generation
    return ev.event(name, now, group=m.config.group_id, member=m.config.name, member_id=gen.member_id or None,
                    instance_id=m.config.instance_id, generation=gen.generation_id,
                    protocol=m.config.protocol.value, assignor=gen.protocol_name, **fields)


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


def _own(m: Member, owned: frozenset[TopicPartition]) -> Member:
    """``owned`` becomes the assignment; positions of partitions given up go with them."""
    c = m.consumption
    if c is None:
        return _with(m, owned=owned)
    return _with(m, owned=owned, consumption=cs.retain(c, owned))


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
