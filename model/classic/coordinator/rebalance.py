"""The rebalance machinery of the classic coordinator: starting, completing and abandoning phases.

A classic rebalance has two phases, both driven by the coordinator (GroupMetadataManager, Kafka 4.x):

1. **Join phase** (PreparingRebalance). ``prepareRebalance`` enters it: parked SyncGroups of an
   unfinished CompletingRebalance are answered REBALANCE_IN_PROGRESS, the sync timer is cancelled, and
   the join timer is set -- to the initial delay if the group was Empty (``InitialDelayedJoin``), else
   to the group's rebalance timeout (the largest of its members'). The phase completes
   (``completeClassicGroupJoin``) when every member has a parked JoinGroup and no KIP-394 pending member
   is left -- except during the initial delay, which can only end by its timer -- or when the join
   timer fires. Completion removes the dynamic members that did not rejoin (static ones stay),
   re-elects the leader among those that did, then ``initNextGeneration``: generation + 1, the protocol
   chosen by vote, and CompletingRebalance (or Empty if no member is left; the generation still goes
   up). Every parked JoinGroup is answered; only the leader gets the member list.
2. **Sync phase** (CompletingRebalance). Every member is now "pending sync" and the sync timer
   (KAFKA-12890) is set to the rebalance timeout; members that have not sent SyncGroup when it fires
   are removed and a new rebalance starts. The leader's SyncGroup stores the assignment, answers all
   parked SyncGroups and makes the group Stable.
"""

from __future__ import annotations

from collections.abc import Mapping

from model.classic.coordinator.ops import (
    UNKNOWN_MEMBER_JOIN_RESPONSE,
    Effects,
    complete_join_future,
    complete_sync_future,
    remove,
    reschedule_heartbeat,
    set_assignments,
    transition_to,
    update,
)
from model.classic.coordinator.state import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    Group,
    InvalidTransition,
    JoinTimer,
    SyncTimer,
    can_rebalance,
    current_classic_group_members,
    has_all_members_joined,
    is_leader,
    member,
    rebalance_timeout_ms,
    select_protocol,
)
from model.classic.coordinator.store import store
from model.messages import Errors, JoinGroupResponse, SyncGroupResponse
from model.system_evolve import replace
from model.types import TopicPartition

# --- entering the join phase ----------------------------------------------------------------


def maybe_prepare_rebalance_or_complete_join(group: Group, reason: str, fx: Effects) -> Group:
    """``maybePrepareRebalanceOrCompleteJoin``: start a rebalance if the state allows one, otherwise
    (already PreparingRebalance) see whether the join phase can complete now."""
    if can_rebalance(group):
        return prepare_rebalance(group, reason, fx)
    return maybe_complete_join_phase(group, fx)


def prepare_rebalance(group: Group, reason: str, fx: Effects) -> Group:
    """``prepareRebalance``: enter PreparingRebalance.

    From CompletingRebalance the stored assignment is wiped and parked SyncGroups are answered
    REBALANCE_IN_PROGRESS. The pending-sync set and timer are dropped. From Empty the join timer is the
    initial delay, ``group.initial.rebalance.delay.ms``, with ``remaining = max(rebalance timeout -
    delay, 0)`` left to extend it by; otherwise the join phase completes at once if everyone has
    already joined, or the join timer is set to the rebalance timeout.
    """
    if group.state is COMPLETING_REBALANCE:
        group = reset_and_propagate_assignment_with_error(group, Errors.REBALANCE_IN_PROGRESS, fx)
    group = remove_sync_expiration(group)
    initial = group.state is EMPTY
    if initial:
        delay = fx.config.initial_rebalance_delay_ms
        remaining = max(rebalance_timeout_ms(group) - delay, 0)
        group = replace(group, join_timer=JoinTimer(fx.now + delay, initial=True, delay_ms=delay,
                                                    remaining_ms=remaining))
    group = transition_to(group, PREPARING_REBALANCE, fx, reason=reason)
    return group if initial else maybe_complete_join_else_schedule(group, fx)


def maybe_complete_join_else_schedule(group: Group, fx: Effects) -> Group:
    """``maybeCompleteJoinElseSchedule``: complete now, or wait at most the rebalance timeout."""
    if has_all_members_joined(group):
        return complete_join(group, fx)
    return replace(group, join_timer=JoinTimer(fx.now + rebalance_timeout_ms(group), initial=False))


def maybe_complete_join_phase(group: Group, fx: Effects) -> Group:
    """``maybeCompleteJoinPhase``: complete the join phase if it is one, it is not the initial
    rebalance (whose delay cannot be cut short), and everyone has joined."""
    if group.state is not PREPARING_REBALANCE:
        return group
    if group.previous_state is EMPTY:
        return group
    if not has_all_members_joined(group):
        return group
    return complete_join(group, fx)


# --- completing the join phase --------------------------------------------------------------


def complete_join(group: Group, fx: Effects) -> Group:
    """``completeClassicGroupJoin``: end the join phase and start the next generation.

    The join timer is cancelled. Dynamic members without a parked JoinGroup are removed (reason
    ``rebalance-timeout``); static members stay. If members remain but none rejoined, the phase waits
    another rebalance timeout. Otherwise ``initNextGeneration``; if members remain, each one's parked
    JoinGroup is answered (the leader with the member list), its session timer restarts, it stops
    being new, it becomes pending sync, and the sync timer is set.
    """
    group = replace(group, join_timer=None)
    for m in group.members:
        if m.awaiting_join is None and not m.is_static:
            group = remove(group, m.member_id, fx, "rebalance-timeout")
    if group.state is DEAD:
        return group
    elected, group = maybe_elect_new_joined_leader(group)
    if not elected and group.members:
        return replace(group, join_timer=JoinTimer(fx.now + rebalance_timeout_ms(group), initial=False))
    group = init_next_generation(group, fx)
    if group.state is EMPTY:
        return group
    member_list = current_classic_group_members(group)
    for m in group.members:
        response = JoinGroupResponse(
            Errors.NONE,
            generation=group.generation,
            protocol_name=group.protocol_name,
            leader=group.leader or "",
            member_id=m.member_id,
            members=member_list if is_leader(group, m.member_id) else (),
        )
        group = complete_join_future(group, m.member_id, response, fx)
        group = reschedule_heartbeat(group, m.member_id, fx)
        group = update(group, m.member_id, is_new=False, joined_generation=group.generation)
        group = replace(group, pending_sync=group.pending_sync | {m.member_id})
    return schedule_pending_sync(group, fx)


def maybe_elect_new_joined_leader(group: Group) -> tuple[bool, Group]:
    """``ClassicGroup.maybeElectNewJoinedLeader``: keep the leader if it rejoined, else elect the
    first member (member-id order) that did. False if there is no leader or nobody rejoined."""
    if group.leader is None:
        return False, group
    current = member(group, group.leader)
    if current is not None and current.awaiting_join is not None:
        return True, group
    for m in group.members:
        if m.awaiting_join is not None:
            return True, replace(group, leader=m.member_id)
    return False, group


def init_next_generation(group: Group, fx: Effects) -> Group:
    """``ClassicGroup.initNextGeneration``: generation + 1 (even when the group is left empty), the
    protocol chosen by vote, and CompletingRebalance -- or Empty with no protocol if no member is left.
    """
    group = replace(group, generation=group.generation + 1)
    if group.members:
        group = replace(group, protocol_name=select_protocol(group))
        group = transition_to(group, COMPLETING_REBALANCE, fx)
    else:
        group = replace(group, protocol_name=None)
        group = transition_to(group, EMPTY, fx)
        # completeClassicGroupJoin persists the empty generation (``model.classic.coordinator.store``, point 2).
        group = store(group)
    return replace(group, pending_sync=frozenset())


# --- the sync phase -------------------------------------------------------------------------


def schedule_pending_sync(group: Group, fx: Effects) -> Group:
    """``schedulePendingSync`` (KAFKA-12890): members have one rebalance timeout to send SyncGroup."""
    return replace(group, sync_timer=SyncTimer(fx.now + rebalance_timeout_ms(group), group.generation))


def remove_sync_expiration(group: Group) -> Group:
    """``removeSyncExpiration``: forget who is pending sync and cancel the sync timer."""
    return replace(group, pending_sync=frozenset(), sync_timer=None)


def remove_pending_sync_member(group: Group, member_id: str) -> Group:
    """``removePendingSyncMember``: this member has sent SyncGroup; cancel the sync timer when
    nobody is pending any more (or the group is no longer in a sync phase)."""
    pending = group.pending_sync - {member_id}
    group = replace(group, pending_sync=pending)
    if group.state in (DEAD, EMPTY, PREPARING_REBALANCE) or not pending:
        group = replace(group, sync_timer=None)
    return group


def set_and_propagate_assignment(group: Group, assignment: Mapping[str, tuple[TopicPartition, ...]],
                                 fx: Effects) -> Group:
    """``setAndPropagateAssignment``: store the leader's assignment (empty for members it left out)
    and answer every parked SyncGroup with it."""
    if group.state is not COMPLETING_REBALANCE:
        raise InvalidTransition("the assignment is set only in CompletingRebalance")
    return propagate_assignment(set_assignments(group, assignment), Errors.NONE, fx)


def reset_and_propagate_assignment_with_error(group: Group, error: Errors, fx: Effects) -> Group:
    """``resetAndPropagateAssignmentWithError``: wipe every stored assignment and answer every parked
    SyncGroup with ``error``."""
    if group.state is not COMPLETING_REBALANCE:
        raise InvalidTransition("the assignment is reset only in CompletingRebalance")
    return propagate_assignment(set_assignments(group, {}), error, fx)


def propagate_assignment(group: Group, error: Errors, fx: Effects) -> Group:
    """``propagateAssignment``: answer each parked SyncGroup (with the member's assignment, and the
    protocol name on success) and restart that member's session timer."""
    for m in group.members:
        if m.awaiting_sync is None:
            continue
        response = SyncGroupResponse(error, assignment=m.assignment,
                                     protocol_name=group.protocol_name if error is Errors.NONE else None)
        group = complete_sync_future(group, m.member_id, response, fx)
        group = reschedule_heartbeat(group, m.member_id, fx)
    return group


def complete_sync_phase(group: Group, generation: int, assignment: Mapping[str, tuple[TopicPartition, ...]],
                        fx: Effects) -> Group:
    """The leader's SyncGroup is persisted: if the group is still CompletingRebalance in the same
    generation, store and propagate the assignment and become Stable (``classicGroupSyncToClassicGroup``'s
    append callback; the model's log append always succeeds)."""
    if group.state is COMPLETING_REBALANCE and generation == group.generation:
        group = set_and_propagate_assignment(group, assignment, fx)
        group = store(group)  # the record carrying the assignment (``model.classic.coordinator.store``, point 3)
        group = transition_to(group, STABLE, fx)
    return group


# --- removing members -----------------------------------------------------------------------


def remove_member_and_update(group: Group, member_id: str, removal: str, reason: str, fx: Effects) -> Group:
    """``removeMemberAndUpdateClassicGroup``: a member fails (heartbeat expiry).

    Its parked JoinGroup is answered UNKNOWN_MEMBER_ID, it is removed, and then: from Stable or
    CompletingRebalance a rebalance starts; in PreparingRebalance the join phase completes if everyone
    left has joined (this path does not spare the initial delay).
    """
    group = complete_join_future(group, member_id, UNKNOWN_MEMBER_JOIN_RESPONSE, fx)
    group = remove(group, member_id, fx, removal)
    if group.state in (STABLE, COMPLETING_REBALANCE):
        return maybe_prepare_rebalance_or_complete_join(group, reason, fx)
    if group.state is PREPARING_REBALANCE and has_all_members_joined(group):
        return complete_join(group, fx)
    return group


def remove_pending_member_and_update(group: Group, member_id: str, fx: Effects) -> Group:
    """``removePendingMemberAndUpdateClassicGroup``: a KIP-394 pending member never came back."""
    group = remove(group, member_id, fx, "pending-expired")
    if group.state is PREPARING_REBALANCE and has_all_members_joined(group):
        return complete_join(group, fx)
    return group
