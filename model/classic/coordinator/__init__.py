"""The broker-side classic group coordinator of Apache Kafka 4.x, as an executable specification.

How a classic consumer group works, from the coordinator's side
----------------------------------------------------------------

A consumer group has one *coordinator*, a broker. Consumers talk to it with four requests:

- **JoinGroup** -- "I am in the group, with these assignors (protocols) and this subscription". The
  coordinator collects JoinGroups from all members (the *join phase*), then starts a new *generation*:
  it numbers it, picks the assignor every member supports (by vote), picks a *leader*, and answers
  every JoinGroup -- the leader's with the list of members and their subscriptions.
- **SyncGroup** -- the leader runs the assignor and sends the assignment in its SyncGroup; the others
  send an empty one and wait (the *sync phase*). When the leader's arrives, the coordinator stores the
  assignment and answers every SyncGroup with that member's share. The group is *Stable*.
- **Heartbeat** -- "I am alive". A member not heard from within its ``session.timeout.ms`` is removed,
  and the group rebalances. A heartbeat answered REBALANCE_IN_PROGRESS tells a member to JoinGroup again.
- **LeaveGroup** -- "I am leaving" (or, from an admin, "remove this static member"): a rebalance.

and commits offsets with **OffsetCommit**, which the coordinator accepts only from a member of the
current generation (a *zombie* from an older generation is fenced with ILLEGAL_GENERATION).

A rebalance is any return to the join phase: a member joins, leaves, fails, changes its subscription,
or the leader asks for one. Each member has a *rebalance timeout* (``max.poll.interval.ms``) to rejoin;
the group waits for the largest. Members that do not rejoin in time are dropped -- unless they are
*static* (KIP-345: they carry a ``group.instance.id``), which leave only by session expiry or by an
admin. A static member that restarts takes back its old place, and its assignment, without a
rebalance. A new dynamic member is first given a member id and asked to come back with it
(KIP-394, MEMBER_ID_REQUIRED), so that a client retrying after a timeout does not leave ghosts.

The group's statuses, their answers and their exits are documented on
:class:`~model.classic.coordinator.state.GroupState`; the legal exits are ``ALLOWED_PREDECESSORS``.

The interface (the protocol model contract)
-------------------------------------------

- :func:`initial_group` -- an Empty group, generation 0.
- :func:`receive` ``(group, conn, request, now, config, mutants)`` -> ``(group, replies, events)``:
  one request arriving on connection ``conn`` at time ``now``. A reply goes to the connection its
  request came on; a parked JoinGroup / SyncGroup is answered later, on its own connection, by
  whichever transition completes it.
- :func:`next_deadline` -- the earliest timer; :func:`expire` ``(group, now, ...)`` fires every timer
  due at or before ``now``, each at its own deadline, in deadline order. Callers should expire up to
  ``now`` before delivering a request at ``now``.
- Read-only helpers: :func:`state`, :func:`generation`, :func:`members`, :func:`member_ids`,
  :func:`leader`, :func:`protocol_name`, :func:`assignment_of`, :func:`committed`,
  :func:`pending_member_ids`, :func:`static_members`, :func:`stored`.
- OffsetFetch (``receive``): the committed offset of each partition asked for, ``NO_OFFSET`` where
  none (``model.classic.coordinator.requests.handle_offset_fetch``).
- :func:`error_response` ``(request, error)``: the answer carrying only ``error``, which a broker that
  is not (or no longer) the coordinator sends (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE).
- The persisted group (``model.classic.coordinator.store``): ``Group.stored`` is the group's last metadata
  record in ``__consumer_offsets``, written only where Kafka writes it. :func:`unload` (the old
  coordinator gives the group up) and :func:`load` / :func:`load_with_events` (a new coordinator
  rebuilds it from ``stored`` and the offsets) model a coordinator move (``model.classic.coordinator.load``).
- The coordinator's home (``model.classic.coordinator.home``): :func:`coordinator_partition` ``(group_id,
  num_partitions)`` = ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``, with
  :func:`java_string_hash`.

Trace events (``model.events``), each with ``group`` (never ``member``: the coordinator is not a
member): ``coordinator_rebalance`` (reason, ``generation`` = the old one), ``coordinator_state``
(into CompletingRebalance or Empty), ``coordinator_stable`` (generation, members, assignment per
member), ``coordinator_member_removed`` (member_id, reason: left / session-timeout /
rebalance-timeout / sync-timeout / fenced / pending-expired / group-max-size). Every status change
event carries ``state`` and ``previous_state``.

Mutants honoured here (``model.mutants``): ``commit-old-generation`` (OffsetCommit skips the
generation check) and ``static-rejoin-rebalances`` (a known static member rejoining a Stable group
always rebalances).

What the model leaves out: group deletion and offset expiry (with unload, the only ways into Dead;
Dead answers COORDINATOR_NOT_AVAILABLE -- OffsetFetch: NO_OFFSET everywhere -- but no request reaches
it, and only :func:`unload` puts a group there); failures to write the group's log (every append
succeeds); JoinGroup versions before v9; protocol types other than "consumer"; transactional commits
and ``requireStable``; the KIP-848 ``consumer`` protocol and conversions between the two.

Sources: Apache Kafka 4.1.1, group-coordinator/src/main/java/org/apache/kafka/coordinator/group/
GroupMetadataManager.java, OffsetMetadataManager.java, GroupCoordinatorService.java,
classic/ClassicGroup.java, classic/ClassicGroupMember.java, classic/ClassicGroupState.java; KIP-345,
KIP-394, KIP-814; KAFKA-7610, KAFKA-9801, KAFKA-12890.
"""

from __future__ import annotations

from typing import Any

from model.classic.coordinator.home import coordinator_partition, java_string_hash
from model.classic.coordinator.join import handle_join_group
from model.classic.coordinator.load import load, load_with_events, loaded_group, unload
from model.classic.coordinator.ops import Effects, error_response
from model.classic.coordinator.requests import (
    handle_heartbeat,
    handle_leave_group,
    handle_offset_commit,
    handle_offset_fetch,
    handle_sync_group,
)
from model.classic.coordinator.state import (
    ALLOWED_PREDECESSORS,
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    PROTOCOL_TYPE,
    STABLE,
    CoordinatorConfig,
    Group,
    GroupState,
    InvalidTransition,
    JoinTimer,
    Member,
    ModelPreconditionError,
    PendingMember,
    Reply,
    StoredGroup,
    StoredMember,
    SyncTimer,
    assignment_of,
    committed,
    generation,
    leader,
    member,
    member_ids,
    members,
    pending_member_ids,
    protocol_name,
    state,
    static_members,
)
from model.classic.coordinator.timers import fire_next, next_deadline
from model.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Request,
    SyncGroupRequest,
)
from model.mutants import validate

__all__ = [
    "ALLOWED_PREDECESSORS", "COMPLETING_REBALANCE", "DEAD", "EMPTY", "PREPARING_REBALANCE", "PROTOCOL_TYPE",
    "STABLE", "CoordinatorConfig", "Group", "GroupState", "InvalidTransition", "JoinTimer", "Member",
    "ModelPreconditionError", "PendingMember", "Reply", "StoredGroup", "StoredMember", "SyncTimer", "assignment_of",
    "committed", "coordinator_partition", "error_response", "expire", "generation", "initial_group",
    "java_string_hash", "leader", "load", "load_with_events", "loaded_group", "member", "member_ids", "members",
    "next_deadline", "pending_member_ids", "protocol_name", "receive", "state", "static_members", "stored",
    "unload",
]

Result = tuple[Group, tuple[Reply, ...], tuple[dict[str, Any], ...]]


def initial_group(config: CoordinatorConfig) -> Group:
    """A group the coordinator has just created: Empty, generation 0, no members, no offsets."""
    return Group(group_id=config.group_id)


def stored(group: Group) -> StoredGroup | None:
    """What the group's last metadata record in ``__consumer_offsets`` says (None: never written)."""
    return group.stored


def receive(group: Group, conn: str, request: Request, now: int, config: CoordinatorConfig,
            mutants: frozenset[str] = frozenset()) -> Result:
    """One request arrives on connection ``conn`` at time ``now``.

    Returns the next group state, the replies sent (to this request, unless it is parked, and to any
    parked requests this one completed), and the trace events. Raises ``ModelPreconditionError`` for a
    request Kafka itself fails on internally (see its docstring).
    """
    fx = Effects(now, config, validate(mutants))
    if isinstance(request, JoinGroupRequest):
        group = handle_join_group(group, conn, request, fx)
    elif isinstance(request, SyncGroupRequest):
        group = handle_sync_group(group, conn, request, fx)
    elif isinstance(request, HeartbeatRequest):
        group = handle_heartbeat(group, conn, request, fx)
    elif isinstance(request, LeaveGroupRequest):
        group = handle_leave_group(group, conn, request, fx)
    elif isinstance(request, OffsetCommitRequest):
        group = handle_offset_commit(group, conn, request, fx)
    elif isinstance(request, OffsetFetchRequest):
        group = handle_offset_fetch(group, conn, request, fx)
    else:
        raise TypeError(f"not a group request: {type(request).__name__}")
    return group, tuple(fx.replies), tuple(fx.events)


def expire(group: Group, now: int, config: CoordinatorConfig, mutants: frozenset[str] = frozenset()) -> Result:
    """Fire every timer due at or before ``now``, each at its own deadline, earliest first (including
    timers that firing schedules, if they too are due by ``now``)."""
    mutants = validate(mutants)
    replies: list[Reply] = []
    events: list[dict[str, Any]] = []
    deadline = next_deadline(group)
    while deadline is not None and deadline <= now:
        fx = Effects(deadline, config, mutants)
        group = fire_next(group, fx)
        replies.extend(fx.replies)
        events.extend(fx.events)
        deadline = next_deadline(group)
    return group, tuple(replies), tuple(events)
