"""The classic group coordinator's state: the group, its members, its timers, and the state table.

This module holds values only: what ``ClassicGroup`` and ``ClassicGroupMember`` hold in Apache
Kafka 4.x (group-coordinator/src/main/java/org/apache/kafka/coordinator/group/classic/), written as
frozen dataclasses of tuples so that a state is hashable, plus the read-only questions Kafka asks of
them (``hasAllMembersJoined``, ``selectProtocol``, ``supportsProtocols``, ...). The transitions live
in ``model.classic.coordinator.ops`` (ClassicGroup's mutators), ``model.classic.coordinator.rebalance`` (the join /
sync phases of GroupMetadataManager), ``model.classic.coordinator.join``, ``model.classic.coordinator.requests`` and
``model.classic.coordinator.timers``; ``model.classic.coordinator`` is the public face.

Where Kafka keeps state in futures and timers, the model keeps it in the value:

- a parked JoinGroup / SyncGroup (``awaitingJoinFuture`` / ``awaitingSyncFuture``) is the connection
  id the request came on (``Member.awaiting_join`` / ``Member.awaiting_sync``); completing the future
  is sending a reply on that connection;
- each timer key of GroupMetadataManager is a deadline in the state: the per-member heartbeat key
  (``Member.heartbeat_deadline``, and ``PendingMember.deadline`` for KIP-394 pending members), the
  group's join key (``Group.join_timer``, initial delay or rebalance timeout) and its sync key
  (``Group.sync_timer``, KAFKA-12890). Scheduling a key replaces its deadline, cancelling clears it,
  and a timer that fires is cleared before its operation runs, as CoordinatorTimer does.

Iteration order. Kafka iterates ``HashMap``s (members, votes), an order no model can reproduce. The
model keeps members sorted by member id and iterates in that order wherever Kafka iterates the
member map: which member becomes leader when the leader leaves (``ClassicGroup.remove``), which
rejoined member is elected at join completion (``maybeElectNewJoinedLeader``), the member list the
leader receives. Ties in the protocol vote go to the smallest protocol name.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from model.messages import NO_GENERATION, ConsumerProtocolSubscription, JoinGroupMember, Response
from model.types import TopicPartition, tps_to_json

#: ``ConsumerProtocol.PROTOCOL_TYPE``. The model's JoinGroupRequest carries no protocol type: every
#: member is a consumer, so a protocol *type* mismatch cannot be expressed, only a protocol *name* one.
PROTOCOL_TYPE = "consumer"

Protocols = tuple[tuple[str, ConsumerProtocolSubscription], ...]


class InvalidTransition(RuntimeError):
    """A status change the table forbids (``ClassicGroup.assertValidTransition``'s IllegalStateException)."""


class ModelPreconditionError(ValueError):
    """A request the model does not cover because Kafka itself fails on it internally.

    Kafka answers such a request with UNKNOWN_SERVER_ERROR after an IllegalStateException rolls the
    write back (the model's ``Errors`` has no UNKNOWN_SERVER_ERROR), or, for a rebalance timeout below
    1 ms, would spin its join timer (the consumer's ``max.poll.interval.ms`` is at least 1).
    """


class GroupState(StrEnum):
    """``ClassicGroupState``: the status of a classic group; each member says how it answers.

    "Parks" means the request is held in the group (its connection remembered) and answered later.
    Each member's ``__doc__`` is its part of ClassicGroupState's javadoc, checked against the 4.x code.
    """

    def __new__(cls, value: str, doc: str) -> GroupState:
        state = str.__new__(cls, value)
        state._value_ = value
        state.__doc__ = doc
        return state

    EMPTY = ("Empty", """No members (KIP-394 pending members may exist). Also the state of a group used only for
    offset commits.

    JoinGroup: a new member is added (a dynamic one first gets MEMBER_ID_REQUIRED) -> PreparingRebalance
    with the initial delay; a non-empty member id -> UNKNOWN_MEMBER_ID.
    SyncGroup: UNKNOWN_MEMBER_ID. Heartbeat: UNKNOWN_MEMBER_ID. LeaveGroup: per member UNKNOWN_MEMBER_ID
    (a pending member is removed). OffsetCommit: generation -1 from outside the group is accepted (simple
    consumer); anything else UNKNOWN_MEMBER_ID.
    Goes to: PreparingRebalance (a member is added); Dead (unload, deletion: out of scope).
    """)

    PREPARING_REBALANCE = ("PreparingRebalance", """A rebalance is collecting JoinGroups.

    JoinGroup: parked, for new and existing members alike, until every member has rejoined and no
    pending member remains, or the join timer fires. SyncGroup: REBALANCE_IN_PROGRESS. Heartbeat:
    REBALANCE_IN_PROGRESS (the session timer is reset). LeaveGroup: the member is removed and the join
    phase may complete. OffsetCommit: accepted from members of the current (old) generation.
    Goes to: CompletingRebalance (join phase completes with members); Empty (it completes with none);
    Dead (out of scope).
    """)

    COMPLETING_REBALANCE = ("CompletingRebalance", """Generation chosen, JoinGroups answered; waiting for the leader's SyncGroup with the assignment.

    JoinGroup: same metadata -> answered at once with the current generation (the leader gets the member
    list); new member, changed metadata or a known static member with a new id -> PreparingRebalance.
    SyncGroup: parked; the leader's stores the assignment, answers every parked SyncGroup -> Stable.
    Heartbeat: NONE (ClassicGroupState's javadoc says REBALANCE_IN_PROGRESS; the 4.x handler answers
    NONE, since members may heartbeat between JoinGroup and SyncGroup). LeaveGroup: the member is
    removed -> PreparingRebalance. OffsetCommit: valid member and generation -> REBALANCE_IN_PROGRESS.
    Goes to: Stable (leader's SyncGroup); PreparingRebalance (join as above, leave, session expiry,
    pending-sync expiry); Dead (out of scope).
    """)

    STABLE = ("Stable", """The assignment is stored; members consume.

    JoinGroup: the leader's -> PreparingRebalance; a follower's with changed metadata, or a new member
    -> PreparingRebalance; a follower's with the same metadata -> answered with the current generation;
    a known static member with a new id -> its id replaced with no rebalance unless the selected
    protocol would change (KIP-345). SyncGroup: the stored assignment. Heartbeat: NONE.
    LeaveGroup: the member is removed -> PreparingRebalance. OffsetCommit: accepted from members of
    the current generation.
    Goes to: PreparingRebalance (joins as above, leave, session expiry, pending-sync expiry); Dead (out
    of scope).
    """)

    DEAD = ("Dead", """The group is being removed (unloaded or deleted); nothing in the protocol reaches it.

    JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit: COORDINATOR_NOT_AVAILABLE, so the client
    looks for the coordinator again. (ClassicGroupState's javadoc still says UNKNOWN_MEMBER_ID; the
    4.x handlers answer COORDINATOR_NOT_AVAILABLE.) Goes to: nowhere (Dead -> Dead only).
    """)


EMPTY = GroupState.EMPTY
PREPARING_REBALANCE = GroupState.PREPARING_REBALANCE
COMPLETING_REBALANCE = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

#: Keyed by the *target* state: the states a group may be in before it moves there. This is
#: ``ClassicGroupState``'s static block, checked on every status change (``assertValidTransition``).
ALLOWED_PREDECESSORS: dict[GroupState, frozenset[GroupState]] = {
    EMPTY: frozenset({PREPARING_REBALANCE}),
    PREPARING_REBALANCE: frozenset({STABLE, COMPLETING_REBALANCE, EMPTY}),
    COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
    STABLE: frozenset({COMPLETING_REBALANCE}),
    DEAD: frozenset({STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD}),
}


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """The broker settings the classic coordinator reads (``GroupCoordinatorConfig``)."""

    group_id: str = "group"
    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    max_group_size: int = 2**31 - 1  # group.max.size
    new_member_join_timeout_ms: int = 300000  # CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS (KAFKA-7610)
    offsets_topic_num_partitions: int = 50  # offsets.topic.num.partitions (model.classic.coordinator.home)


@dataclass(frozen=True, slots=True)
class Reply:
    """A response the coordinator sends, on the connection its request came from."""

    conn: str
    response: Response


@dataclass(frozen=True, slots=True)
class Member:
    """``ClassicGroupMember``: one member of the group, as the coordinator knows it.

    ``joined_generation`` is auxiliary (not in Kafka): the generation whose join phase last included
    this member (NO_GENERATION until its first). It lets invariants say "every member of a
    CompletingRebalance / Stable group belongs to the current generation".
    """

    member_id: str
    instance_id: str | None  # group.instance.id: static membership (KIP-345)
    client_id: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: Protocols  # supportedProtocols, in the member's order of preference
    assignment: tuple[TopicPartition, ...] = ()
    awaiting_join: str | None = None  # connection of the parked JoinGroup (awaitingJoinFuture)
    awaiting_sync: str | None = None  # connection of the parked SyncGroup (awaitingSyncFuture)
    is_new: bool = False  # added in the current join phase; its parked join does not satisfy heartbeats
    heartbeat_deadline: int | None = None  # the member's heartbeat timer key; None once fired or cancelled
    joined_generation: int = NO_GENERATION

    @property
    def is_static(self) -> bool:
        return self.instance_id is not None


@dataclass(frozen=True, slots=True)
class PendingMember:
    """A KIP-394 pending member: a member id handed out with MEMBER_ID_REQUIRED, not yet joined.

    ``deadline`` is its heartbeat timer key, scheduled for the request's session timeout
    (``classicGroupJoinNewDynamicMember``); when it fires the pending member is dropped.
    """

    member_id: str
    deadline: int


@dataclass(frozen=True, slots=True)
class JoinTimer:
    """The group's join key: when the join phase completes even if members are missing.

    ``initial`` is the initial delayed join (``tryCompleteInitialRebalanceElseSchedule``), which waits
    ``delay_ms`` and then, if a member was added meanwhile and ``remaining_ms`` is not 0, waits again;
    otherwise it is the rebalance timeout (``completeClassicGroupJoin``).
    """

    deadline: int
    initial: bool
    delay_ms: int = 0
    remaining_ms: int = 0


@dataclass(frozen=True, slots=True)
class SyncTimer:
    """The group's sync key (KAFKA-12890): members that have not sent SyncGroup by ``deadline`` are
    removed. ``generation`` is the generation it was scheduled for (``expirePendingSync``)."""

    deadline: int
    generation: int


@dataclass(frozen=True, slots=True)
class StoredMember:
    """One member as a group metadata record of ``__consumer_offsets`` stores it
    (``GroupMetadataValue.MemberMetadata``, written by ``GroupCoordinatorRecordHelpers.newGroupMetadataRecord``).

    Only the metadata for the group's selected protocol is stored (``subscription``), not the member's
    whole protocol list: a member loaded from the record supports that one protocol only.
    """

    member_id: str
    instance_id: str | None
    client_id: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: ConsumerProtocolSubscription
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class StoredGroup:
    """What the last group metadata record (``GroupMetadataValue``) of a classic group says.

    Kafka writes it at a few points only (see ``model.classic.coordinator.store``); between two writes the
    coordinator's in-memory group and its record diverge (a member that left or expired is still in
    the record). ``protocol_name`` and ``leader`` are None in a record of an empty group.
    """

    generation: int
    protocol_name: str | None
    leader: str | None
    members: tuple[StoredMember, ...] = ()


@dataclass(frozen=True, slots=True)
class Group:
    """``ClassicGroup``: the whole coordinator-side state of one classic group.

    ``members`` is sorted by member id; ``pending_members`` too. ``offsets`` holds committed offsets
    sorted by partition. ``member_id_seq`` counts generated member ids (see
    ``model.classic.coordinator.ops.generate_member_id``). ``stored`` is what the group's last metadata
    record in ``__consumer_offsets`` says (``model.classic.coordinator.store``): what a new coordinator would
    load. The static-member map of Kafka
    (``staticMembers``) is not stored: it is always {instance id: member id} of the static members,
    and :func:`static_member_id` reads it off ``members``.
    """

    group_id: str
    state: GroupState = EMPTY
    previous_state: GroupState = DEAD  # ClassicGroup's constructor starts previousState at DEAD
    generation: int = 0
    protocol_name: str | None = None
    leader: str | None = None
    members: tuple[Member, ...] = ()
    pending_members: tuple[PendingMember, ...] = ()
    pending_sync: frozenset[str] = field(default_factory=frozenset)
    new_member_added: bool = False
    join_timer: JoinTimer | None = None
    sync_timer: SyncTimer | None = None
    offsets: tuple[tuple[TopicPartition, int], ...] = ()
    member_id_seq: int = 0
    stored: StoredGroup | None = None  # the last group metadata record written, if any


# --- questions ClassicGroup / ClassicGroupMember answer -----------------------------------------


def member(group: Group, member_id: str) -> Member | None:
    """``ClassicGroup.member``: the member with this id, or None."""
    for m in group.members:
        if m.member_id == member_id:
            return m
    return None


def has_member(group: Group, member_id: str) -> bool:
    return member(group, member_id) is not None


def is_pending_member(group: Group, member_id: str) -> bool:
    """``ClassicGroup.isPendingMember``: a KIP-394 member id handed out but not joined yet."""
    return any(p.member_id == member_id for p in group.pending_members)


def static_member_id(group: Group, instance_id: str) -> str | None:
    """``ClassicGroup.staticMemberId``: the member id currently holding this group.instance.id."""
    for m in group.members:
        if m.instance_id == instance_id:
            return m.member_id
    return None


def is_leader(group: Group, member_id: str) -> bool:
    return group.leader is not None and group.leader == member_id


def can_rebalance(group: Group) -> bool:
    """``ClassicGroup.canRebalance``: the group may enter PreparingRebalance from where it is."""
    return group.state in ALLOWED_PREDECESSORS[PREPARING_REBALANCE]


def num_awaiting_join(group: Group) -> int:
    """``numMembersAwaitingJoinResponse``, derived rather than counted."""
    return sum(1 for m in group.members if m.awaiting_join is not None)


def has_all_members_joined(group: Group) -> bool:
    """``ClassicGroup.hasAllMembersJoined``: every member has a parked JoinGroup and no KIP-394
    pending member is outstanding (a pending member is expected to rejoin at once)."""
    return len(group.members) == num_awaiting_join(group) and not group.pending_members


def rebalance_timeout_ms(group: Group) -> int:
    """``ClassicGroup.rebalanceTimeoutMs``: the largest rebalance timeout of any member (0 if none)."""
    return max((m.rebalance_timeout_ms for m in group.members), default=0)


def has_satisfied_heartbeat(m: Member) -> bool:
    """``ClassicGroupMember.hasSatisfiedHeartbeat``: a member with a parked JoinGroup or SyncGroup
    needs no heartbeat (so during a rebalance the rebalance timeout applies, not the session
    timeout) -- except a new member, whose parked join can still expire (KAFKA-7610)."""
    if m.is_new:
        return False
    return m.awaiting_join is not None or m.awaiting_sync is not None


def matches(m: Member, protocols: Protocols) -> bool:
    """``ClassicGroupMember.matches``: the same protocols, in the same order, with the same metadata."""
    return m.protocols == protocols


def metadata(m: Member, protocol_name: str | None) -> ConsumerProtocolSubscription:
    """``ClassicGroupMember.metadata``: this member's metadata for the selected protocol."""
    for name, meta in m.protocols:
        if name == protocol_name:
            return meta
    raise InvalidTransition(f"member {m.member_id} does not support protocol {protocol_name}")


def supported_protocol_counts(group: Group) -> Counter[str]:
    """``ClassicGroup.supportedProtocols``: how many members list each protocol name."""
    return Counter([name for m in group.members for name, _ in m.protocols])


def supports_protocols(group: Group, protocols: Protocols) -> bool:
    """``ClassicGroup.supportsProtocols``: may a member with these protocols be in this group?

    An Empty group takes any non-empty list. Otherwise at least one of the protocols must be
    supported by every current member (the joining member's own current entry included, if it is
    one). A failure is INCONSISTENT_GROUP_PROTOCOL.
    """
    if group.state is EMPTY:
        return bool(protocols)
    counts = supported_protocol_counts(group)
    return any(counts[name] == len(group.members) for name, _ in protocols)


def vote(m: Member, candidates: frozenset[str]) -> str:
    """``ClassicGroupMember.vote``: the first protocol in the member's preference that is a candidate."""
    for name, _ in m.protocols:
        if name in candidates:
            return name
    raise InvalidTransition(f"member {m.member_id} supports none of {sorted(candidates)}")


def select_protocol(group: Group) -> str:
    """``ClassicGroup.selectProtocol``: the protocol (assignor) the group will use.

    Candidates are the protocols every member supports; each member votes for its most preferred
    candidate; the protocol with the most votes wins. Kafka breaks a tie by HashMap order; the model
    gives it to the smallest protocol name.
    """
    if not group.members:
        raise InvalidTransition("cannot select a protocol for a group with no members")
    counts = supported_protocol_counts(group)
    candidates = frozenset(name for name, n in counts.items() if n == len(group.members))
    votes = Counter(vote(m, candidates) for m in group.members)
    return min(votes, key=lambda name: (-votes[name], name))


def current_classic_group_members(group: Group) -> tuple[JoinGroupMember, ...]:
    """``ClassicGroup.currentClassicGroupMembers``: the member list only the leader is sent,
    each with its metadata for the selected protocol."""
    if group.state in (DEAD, PREPARING_REBALANCE):
        raise InvalidTransition(f"no member list for a group in state {group.state.value}")
    return tuple(JoinGroupMember(m.member_id, m.instance_id, metadata(m, group.protocol_name))
                 for m in group.members)


# --- read-only helpers for the system and the invariants ----------------------------------------


def state(group: Group) -> GroupState:
    return group.state


def generation(group: Group) -> int:
    return group.generation


def members(group: Group) -> tuple[Member, ...]:
    return group.members


def member_ids(group: Group) -> tuple[str, ...]:
    return tuple(m.member_id for m in group.members)


def leader(group: Group) -> str | None:
    return group.leader


def protocol_name(group: Group) -> str | None:
    return group.protocol_name


def pending_member_ids(group: Group) -> tuple[str, ...]:
    return tuple(p.member_id for p in group.pending_members)


def static_members(group: Group) -> tuple[tuple[str, str], ...]:
    """(instance id, member id) of every static member, sorted by instance id."""
    return tuple(sorted((m.instance_id, m.member_id) for m in group.members if m.instance_id is not None))


def assignment_of(group: Group, member_id: str) -> tuple[TopicPartition, ...] | None:
    """The assignment the coordinator stores for a member (None if it is not a member)."""
    m = member(group, member_id)
    return None if m is None else m.assignment


def committed(group: Group) -> dict[TopicPartition, int]:
    """Committed offsets, as a fresh dict."""
    return dict(group.offsets)


def assignment_json(group: Group) -> dict[str, list[dict[str, Any]]]:
    """The stored assignment per member id, in the trace format."""
    return {m.member_id: tps_to_json(m.assignment) for m in group.members}
