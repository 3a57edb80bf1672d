"""SyncGroup, Heartbeat, LeaveGroup and OffsetCommit on a classic group (GroupMetadataManager /
OffsetMetadataManager, Kafka 4.x).

- **SyncGroup** (``classicGroupSyncToClassicGroup``): after the checks of ``validate_sync_group``,
  PreparingRebalance answers REBALANCE_IN_PROGRESS (the member must rejoin); CompletingRebalance parks
  the request and, for the leader, stores the assignment it carries, answers every parked SyncGroup and
  becomes Stable; Stable answers with the stored assignment.
- **Heartbeat** (``classicGroupHeartbeatToClassicGroup``): keeps the session alive. Empty ->
  UNKNOWN_MEMBER_ID; PreparingRebalance -> REBALANCE_IN_PROGRESS (the member learns it must rejoin;
  its session timer is still reset); CompletingRebalance and Stable -> NONE.
- **LeaveGroup** (``classicGroupLeaveToClassicGroup``, v3+ batch): each (member id, instance id) is
  answered on its own: member id "" with a known instance id is an administrative removal of that
  static member; a pending member is dropped; otherwise the identity checks, then removal. If anyone
  left, Stable / CompletingRebalance rebalance and PreparingRebalance may complete its join phase.
- **OffsetCommit** (``OffsetMetadataManager.commitOffset``): ``validate_offset_commit``, then the
  offsets are stored; in Stable and PreparingRebalance the commit also resets the session timer.
- **OffsetFetch** (``OffsetMetadataManager.fetchOffsets``): the committed offset of each partition
  asked for, NO_OFFSET where there is none. A read: no effect on the group, no event.
"""

from __future__ import annotations

from model.classic.coordinator.ops import (
    UNKNOWN_MEMBER_JOIN_RESPONSE,
    Effects,
    complete_join_future,
    error_response,
    remove,
    reschedule_heartbeat,
    update,
)
from model.classic.coordinator.rebalance import (
    complete_sync_phase,
    maybe_complete_join_phase,
    maybe_prepare_rebalance_or_complete_join,
    remove_pending_sync_member,
)
from model.classic.coordinator.state import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    Group,
    InvalidTransition,
    is_leader,
    is_pending_member,
    member,
    static_member_id,
)
from model.classic.coordinator.validation import (
    offset_commit_keeps_session,
    validate_heartbeat,
    validate_member,
    validate_offset_commit,
    validate_sync_group,
)
from model.messages import (
    NO_OFFSET,
    UNKNOWN_MEMBER_ID,
    Errors,
    HeartbeatRequest,
    HeartbeatResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.system_evolve import replace


def handle_sync_group(group: Group, conn: str, request: SyncGroupRequest, fx: Effects) -> Group:
    """``classicGroupSync`` / ``classicGroupSyncToClassicGroup``."""
    error = validate_sync_group(group, request)
    if error is not None:
        fx.reply(conn, error_response(request, error))
        return group
    member_id = request.member_id
    if group.state is PREPARING_REBALANCE:
        fx.reply(conn, SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS))
        return group
    if group.state is COMPLETING_REBALANCE:
        group = update(group, member_id, awaiting_sync=conn)
        group = remove_pending_sync_member(group, member_id)
        if not is_leader(group, member_id):
            return group
        # The leader's assignment; a member id listed twice keeps its last entry (Java Map.put), members
        # it leaves out get an empty assignment, ids that are not members are ignored.
        assignment = dict(request.assignments)
        return complete_sync_phase(group, request.generation, assignment, fx)
    if group.state is STABLE:
        group = remove_pending_sync_member(group, member_id)
        m = member(group, member_id)
        assert m is not None
        fx.reply(conn, SyncGroupResponse(Errors.NONE, assignment=m.assignment, protocol_name=group.protocol_name))
        return group
    raise InvalidTransition(f"SyncGroup reached a group in state {group.state.value}")


def handle_heartbeat(group: Group, conn: str, request: HeartbeatRequest, fx: Effects) -> Group:
    """``classicGroupHeartbeatToClassicGroup``."""
    error = validate_heartbeat(group, request.member_id, request.instance_id, request.generation)
    if error is not None:
        fx.reply(conn, error_response(request, error))
        return group
    if group.state is EMPTY:
        fx.reply(conn, HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID))
        return group
    group = reschedule_heartbeat(group, request.member_id, fx)
    if group.state is PREPARING_REBALANCE:
        fx.reply(conn, HeartbeatResponse(Errors.REBALANCE_IN_PROGRESS))
    else:
        # CompletingRebalance too: members may heartbeat between their JoinGroup and SyncGroup.
        fx.reply(conn, HeartbeatResponse(Errors.NONE))
    return group


def handle_leave_group(group: Group, conn: str, request: LeaveGroupRequest, fx: Effects) -> Group:
    """``classicGroupLeaveToClassicGroup``. ``member_errors`` lists one entry per requested member,
    in request order, keyed by the member id as sent ("" for an administrative removal)."""
    if group.state is DEAD:
        fx.reply(conn, error_response(request, Errors.COORDINATOR_NOT_AVAILABLE))
        return group
    results: list[tuple[str, Errors]] = []
    left: list[str] = []
    for member_id, instance_id in request.members:
        if member_id == UNKNOWN_MEMBER_ID:
            holder = None if instance_id is None else static_member_id(group, instance_id)
            if holder is None:
                results.append((member_id, Errors.UNKNOWN_MEMBER_ID))
                continue
            group = remove_current_member(group, holder, fx)
        elif is_pending_member(group, member_id):
            group = remove(group, member_id, fx, "left")
        else:
            error = validate_member(group, member_id, instance_id)
            if error is not None:
                results.append((member_id, error))
                continue
            group = remove_current_member(group, member_id, fx)
        results.append((member_id, Errors.NONE))
        left.append(member_id)
    if left:
        if group.state in (STABLE, COMPLETING_REBALANCE):
            reason = f"explicit `LeaveGroup` request for ({', '.join(left)}) members."
            group = maybe_prepare_rebalance_or_complete_join(group, reason, fx)
        elif group.state is PREPARING_REBALANCE:
            group = maybe_complete_join_phase(group, fx)
    fx.reply(conn, LeaveGroupResponse(Errors.NONE, member_errors=tuple(results)))
    return group


def remove_current_member(group: Group, member_id: str, fx: Effects) -> Group:
    """``removeCurrentMemberFromClassicGroup``: its parked JoinGroup is answered UNKNOWN_MEMBER_ID
    (a parked SyncGroup is dropped unanswered, as in Kafka), then it is removed."""
    group = complete_join_future(group, member_id, UNKNOWN_MEMBER_JOIN_RESPONSE, fx)
    return remove(group, member_id, fx, "left")


def handle_offset_commit(group: Group, conn: str, request: OffsetCommitRequest, fx: Effects) -> Group:
    """``OffsetMetadataManager.commitOffset`` for a classic group. Every partition gets the request's
    error (or NONE); on success the offsets are stored, the last offset for a partition winning."""
    error = validate_offset_commit(group, request, fx.mutants)
    if error is not None:
        fx.reply(conn, error_response(request, error))
        return group
    if offset_commit_keeps_session(group) and member(group, request.member_id) is not None:
        group = reschedule_heartbeat(group, request.member_id, fx)
    offsets = dict(group.offsets)  # in partition order
    adds_partitions = any(tp not in offsets for tp, _ in request.offsets)
    offsets.update(request.offsets)  # known partitions keep their place, new ones go last
    stored = tuple(offsets.items())
    group = replace(group, offsets=tuple(sorted(stored)) if adds_partitions else stored)
    fx.reply(conn, OffsetCommitResponse(Errors.NONE, tuple((tp, Errors.NONE) for tp, _ in request.offsets)))
    return group


def handle_offset_fetch(group: Group, conn: str, request: OffsetFetchRequest, fx: Effects) -> Group:
    """``OffsetMetadataManager.fetchOffsets`` (Kafka 4.1.1) for a classic consumer.

    OffsetFetch v8, the classic consumer's, carries no member id and no generation (v9 adds a member
    id and epoch for KIP-848 groups only), so nothing about the asker is checked: any client may read
    a group's offsets, in any state. Each requested partition is answered, in request order, with its
    committed offset or ``NO_OFFSET`` (``INVALID_OFFSET``, -1) if the group has committed none.

    A Dead group fails ``ClassicGroup.validateOffsetFetch`` with GroupIdNotFoundException, which
    ``fetchOffsets`` turns into ``failAllPartitions``: every partition ``NO_OFFSET``, with *no* error
    (not COORDINATOR_NOT_AVAILABLE, which the other requests get). A broker that is not the group's
    coordinator answers the request-level error of :func:`~model.classic.coordinator.ops.error_response`.
    ``requireStable`` (the Java consumer sets it) only waits for pending transactional offsets, which
    the model does not have.
    """
    stored = {} if group.state is DEAD else dict(group.offsets)
    offsets = tuple((tp, stored.get(tp, NO_OFFSET)) for tp in request.partitions)
    fx.reply(conn, OffsetFetchResponse(Errors.NONE, offsets))
    return group
