"""ClassicGroup's mutators, as functions from a group to a new group.

Each function here is one method of ``ClassicGroup`` / ``ClassicGroupMember`` (Kafka 4.x,
group-coordinator/.../classic/ClassicGroup.java) or one small helper of ``GroupMetadataManager``
(``rescheduleClassicGroupMemberHeartbeat``), taking the frozen :class:`~model.classic.coordinator.state.Group`
and returning the next one. What a transition *emits* -- replies to parked requests and trace events --
goes into an :class:`Effects` buffer passed along, the way a stateright actor writes its sends into an
output buffer and Kafka's coordinator returns a ``CoordinatorResult``. ``Effects`` also carries the
transition's inputs: the time, the broker config and the mutants switched on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from model import events as ev
from model.classic.coordinator.state import (
    ALLOWED_PREDECESSORS,
    COMPLETING_REBALANCE,
    PREPARING_REBALANCE,
    STABLE,
    CoordinatorConfig,
    Group,
    GroupState,
    InvalidTransition,
    Member,
    PendingMember,
    Protocols,
    Reply,
    assignment_json,
    is_leader,
    member,
)
from model.messages import (
    UNKNOWN_MEMBER_ID,
    Errors,
    HeartbeatRequest,
    HeartbeatResponse,
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
from model.system_evolve import replace
from model.types import TopicPartition


@dataclass
class Effects:
    """The inputs and the output buffer of one coordinator transition.

    ``now`` is the time the transition happens at (for a timer: its deadline). ``replies`` and
    ``events`` are appended in the order Kafka would complete futures and log.
    """

    now: int
    config: CoordinatorConfig
    mutants: frozenset[str] = frozenset()
    replies: list[Reply] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def reply(self, conn: str, response: Response) -> None:
        self.replies.append(Reply(conn, response))

    def emit(self, name: str, group: Group, **fields: Any) -> None:
        self.events.append(ev.event(name, self.now, group=group.group_id, **fields))


# --- the member map -------------------------------------------------------------------------


def put_member(group: Group, m: Member) -> Group:
    """Insert or replace a member, keeping ``members`` sorted by member id."""
    members = group.members
    for i, x in enumerate(members):
        if x.member_id == m.member_id:
            return replace(group, members=members[:i] + (m,) + members[i + 1:])
        if x.member_id > m.member_id:
            return replace(group, members=members[:i] + (m,) + members[i:])
    return replace(group, members=members + (m,))


def update(group: Group, member_id: str, **changes: Any) -> Group:
    """Change fields of one member (which must exist)."""
    m = member(group, member_id)
    if m is None:
        raise InvalidTransition(f"no member {member_id} in group {group.group_id}")
    return put_member(group, replace(m, **changes))


def generate_member_id(group: Group, client_id: str, instance_id: str | None) -> tuple[Group, str]:
    """``ClassicGroup.generateMemberId``: ``<group.instance.id or client.id>-<uuid>``.

    The model must be deterministic, so the uuid is a counter kept in the group
    (``member_id_seq``): the n-th id this group hands out ends in ``-n``. The client id is the
    connection id up to its ``#`` (connection "a#2" is client "a", second incarnation).
    """
    seq = group.member_id_seq + 1
    prefix = instance_id if instance_id is not None else client_id
    return replace(group, member_id_seq=seq), f"{prefix}-{seq}"


def client_id_of(conn: str) -> str:
    return conn.split("#", 1)[0]


# --- status ---------------------------------------------------------------------------------


def transition_to(group: Group, target: GroupState, fx: Effects, **fields: Any) -> Group:
    """``ClassicGroup.transitionTo``: change status, checked against ``ALLOWED_PREDECESSORS``.

    Every status change emits one trace event carrying ``state`` and ``previous_state``:
    ``coordinator_rebalance`` into PreparingRebalance (with the reason and the *old* generation),
    ``coordinator_stable`` into Stable (with the stored assignment), ``coordinator_state`` otherwise.
    """
    if group.state not in ALLOWED_PREDECESSORS[target]:
        raise InvalidTransition(
            f"group {group.group_id} should be in one of "
            f"{sorted(s.value for s in ALLOWED_PREDECESSORS[target])} before moving to {target.value}; "
            f"it is in {group.state.value}")
    after = replace(group, state=target, previous_state=group.state)
    common = {"state": target.value, "previous_state": group.state.value, "generation": after.generation}
    if target is PREPARING_REBALANCE:
        fx.emit(ev.COORDINATOR_REBALANCE, after, **common, **fields)
    elif target is STABLE:
        fx.emit(ev.COORDINATOR_STABLE, after, **common, leader=after.leader, assignor=after.protocol_name,
                members=[m.member_id for m in after.members], assignment=assignment_json(after), **fields)
    elif target is COMPLETING_REBALANCE:
        fx.emit(ev.COORDINATOR_STATE, after, **common, leader=after.leader, assignor=after.protocol_name,
                members=[m.member_id for m in after.members], **fields)
    else:
        fx.emit(ev.COORDINATOR_STATE, after, **common, **fields)
    return after


# --- membership -----------------------------------------------------------------------------


def add(group: Group, m: Member) -> Group:
    """``ClassicGroup.add``: a new member joins the member map.

    The first member of a leaderless group becomes leader; a pending member with this id stops
    being pending. (Kafka's checks -- a static instance id already present, a protocol type or list
    the group cannot support -- are guaranteed by the callers, as in Kafka.)
    """
    if m.instance_id is not None and any(x.instance_id == m.instance_id for x in group.members):
        raise InvalidTransition(f"static member {m.instance_id} is already a member")
    if group.leader is None:
        group = replace(group, leader=m.member_id)
    group = put_member(group, m)
    return replace(group, pending_members=tuple(p for p in group.pending_members if p.member_id != m.member_id))


def remove(group: Group, member_id: str, fx: Effects, reason: str) -> Group:
    """``ClassicGroup.remove``: drop a member (or a pending member) from the group.

    If it was the leader, the first remaining member (in member-id order) becomes leader, or none.
    It also stops being pending-join and pending-sync. Emits ``coordinator_member_removed`` with
    ``reason`` when a member or pending member was actually dropped. Callers answer the member's
    parked JoinGroup first where Kafka does; a parked SyncGroup of a removed member is never answered.
    """
    gone = member(group, member_id)
    was_pending = any(p.member_id == member_id for p in group.pending_members)
    remaining = tuple(x for x in group.members if x.member_id != member_id)
    new_leader = group.leader
    if is_leader(group, member_id):
        new_leader = remaining[0].member_id if remaining else None
    group = replace(
        group,
        members=remaining,
        leader=new_leader,
        pending_members=tuple(p for p in group.pending_members if p.member_id != member_id),
        pending_sync=group.pending_sync - {member_id},
    )
    if gone is not None or was_pending:
        fx.emit(ev.COORDINATOR_MEMBER_REMOVED, group, member_id=member_id,
                instance_id=None if gone is None else gone.instance_id, reason=reason,
                generation=group.generation)
    return group


def add_pending_member(group: Group, member_id: str, deadline: int) -> Group:
    """``ClassicGroup.addPendingMember`` together with its heartbeat timer key."""
    if member(group, member_id) is not None:
        raise InvalidTransition(f"pending member {member_id} is already a member")
    pending = (*(p for p in group.pending_members if p.member_id != member_id), PendingMember(member_id, deadline))
    return replace(group, pending_members=tuple(sorted(pending, key=lambda p: p.member_id)))


def update_member(group: Group, member_id: str, protocols: Protocols, rebalance_timeout_ms: int,
                  session_timeout_ms: int, awaiting_join: str | None) -> Group:
    """``ClassicGroup.updateMember``: new protocols and timeouts, and the (new) parked JoinGroup.

    A JoinGroup parked before on another connection is simply replaced: Kafka drops the old future
    without answering it.
    """
    return update(group, member_id, protocols=protocols, rebalance_timeout_ms=rebalance_timeout_ms,
                  session_timeout_ms=session_timeout_ms, awaiting_join=awaiting_join)


def replace_static_member(group: Group, instance_id: str, old_member_id: str, new_member_id: str,
                          fx: Effects) -> Group:
    """``ClassicGroup.replaceStaticMember`` (KIP-345): a restarted static member takes over its entry.

    The old member id's parked JoinGroup and SyncGroup, if any, are answered FENCED_INSTANCE_ID; the
    entry is re-keyed to the new id, keeping everything else (its assignment in particular, but not
    its parked requests); the leadership follows it. The old id is *not* taken out of the pending-sync
    set, exactly as in Kafka: if it was pending, the sync timer will still find it missing.
    """
    old = member(group, old_member_id)
    if old is None:
        raise InvalidTransition(f"cannot replace non-existing member id {old_member_id}")
    if old.awaiting_join is not None:
        fx.reply(old.awaiting_join, JoinGroupResponse(Errors.FENCED_INSTANCE_ID, member_id=old_member_id))
    if old.awaiting_sync is not None:
        fx.reply(old.awaiting_sync, SyncGroupResponse(Errors.FENCED_INSTANCE_ID))
    new = replace(old, member_id=new_member_id, awaiting_join=None, awaiting_sync=None, is_new=False,
                  heartbeat_deadline=None)
    leader = new_member_id if is_leader(group, old_member_id) else group.leader
    group = replace(group, members=tuple(x for x in group.members if x.member_id != old_member_id), leader=leader)
    group = put_member(group, new)
    fx.emit(ev.COORDINATOR_MEMBER_REMOVED, group, member_id=old_member_id, instance_id=instance_id,
            reason="fenced", generation=group.generation, replaced_by=new_member_id)
    return group


# --- parked requests and heartbeats ---------------------------------------------------------


def complete_join_future(group: Group, member_id: str, response: JoinGroupResponse, fx: Effects) -> Group:
    """``ClassicGroup.completeJoinFuture``: answer the member's parked JoinGroup, if it has one."""
    m = member(group, member_id)
    if m is None or m.awaiting_join is None:
        return group
    fx.reply(m.awaiting_join, response)
    return put_member(group, replace(m, awaiting_join=None))


def complete_sync_future(group: Group, member_id: str, response: SyncGroupResponse, fx: Effects) -> Group:
    """``ClassicGroup.completeSyncFuture``: answer the member's parked SyncGroup, if it has one."""
    m = member(group, member_id)
    if m is None or m.awaiting_sync is None:
        return group
    fx.reply(m.awaiting_sync, response)
    return put_member(group, replace(m, awaiting_sync=None))


def reschedule_heartbeat(group: Group, member_id: str, fx: Effects, timeout_ms: int | None = None) -> Group:
    """``rescheduleClassicGroupMemberHeartbeat``: the member must be heard from again within
    ``timeout_ms`` (default: its session timeout), or it is expired."""
    m = member(group, member_id)
    if m is None:
        return group
    timeout = m.session_timeout_ms if timeout_ms is None else timeout_ms
    return put_member(group, replace(m, heartbeat_deadline=fx.now + timeout))


def set_assignments(group: Group, assignment: Mapping[str, tuple[TopicPartition, ...]]) -> Group:
    """Store each member's assignment; members missing from ``assignment`` get an empty one."""
    return replace(group, members=tuple(replace(m, assignment=tuple(sorted(assignment.get(m.member_id, ()))))
                                        for m in group.members))


UNKNOWN_MEMBER_JOIN_RESPONSE = JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID, member_id=UNKNOWN_MEMBER_ID)
"""What a removed member's parked JoinGroup is answered with (``removeMemberAndUpdateClassicGroup``,
``removeCurrentMemberFromClassicGroup``), so that a live consumer rejoins from scratch."""


def error_response(request: Request, error: Errors) -> Response:
    """The answer to a group request that carries nothing but ``error``.

    The coordinator's own refusals build it (a Dead group's COORDINATOR_NOT_AVAILABLE, an identity or
    generation check failing), and so does a broker that is not, or no longer, the group's coordinator:
    Kafka's ``GroupCoordinatorService`` answers NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE /
    COORDINATOR_LOAD_IN_PROGRESS through ``handleOperationException`` with an otherwise empty response
    (JoinGroup: no member id, no generation), ``OffsetCommitResponse.getErrorResponse`` (the error on
    every partition of the request) and ``OffsetFetchResponse.groupError`` (v8+: a group-level error,
    no partitions). FindCoordinator is not a group request (any broker answers it).
    """
    if isinstance(request, JoinGroupRequest):
        return JoinGroupResponse(error)
    if isinstance(request, SyncGroupRequest):
        return SyncGroupResponse(error)
    if isinstance(request, HeartbeatRequest):
        return HeartbeatResponse(error)
    if isinstance(request, LeaveGroupRequest):
        return LeaveGroupResponse(error)
    if isinstance(request, OffsetCommitRequest):
        return OffsetCommitResponse(error, tuple((tp, error) for tp, _ in request.offsets))
    if isinstance(request, OffsetFetchRequest):
        return OffsetFetchResponse(error)
    raise TypeError(f"not a group request: {type(request).__name__}")
