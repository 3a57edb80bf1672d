"""The classic coordinator's timers, as actions: what fires when, and what it does.

Kafka's coordinator schedules keyed timer tasks (``CoordinatorTimer``); the model keeps each key's
deadline in the group state and fires it here:

- **heartbeat** (one per member, ``classicGroupHeartbeatKey``): ``expireClassicGroupMemberHeartbeat``.
  A pending member is dropped; a member that has not satisfied its heartbeat (no parked JoinGroup or
  SyncGroup, or new) is removed as ``session-timeout`` and the group rebalances; a member that has
  satisfied it stays, with no timer until something reschedules one (join completion, a heartbeat, a
  commit, its SyncGroup answered).
- **join** (``classicGroupJoinKey``): the initial delay (``tryCompleteInitialRebalanceElseSchedule``:
  extended by ``min(delay, remaining)`` while new members keep arriving and time remains) or the
  rebalance timeout (``completeClassicGroupJoin``).
- **sync** (``classicGroupSyncKey``, KAFKA-12890): ``expirePendingSync`` removes the members that
  have not sent SyncGroup for the generation it was set for, and starts a rebalance.

Each timer fires at its own deadline (the transition's time is the deadline, not the time ``expire``
was asked about), so expiring up to ``now`` is the same as expiring at every deadline in turn. Timers
due at the same instant fire heartbeat keys first (by member id), then the join key, then the sync
key; Kafka leaves that order to its timer wheel.
"""

from __future__ import annotations

from model.classic.coordinator.ops import Effects, remove, update
from model.classic.coordinator.rebalance import (
    complete_join,
    prepare_rebalance,
    remove_member_and_update,
    remove_pending_member_and_update,
)
from model.classic.coordinator.state import (
    COMPLETING_REBALANCE,
    DEAD,
    STABLE,
    Group,
    JoinTimer,
    SyncTimer,
    has_satisfied_heartbeat,
    is_pending_member,
    member,
)
from model.system_evolve import replace

HEARTBEAT, JOIN, SYNC = 0, 1, 2


def timers(group: Group) -> list[tuple[int, int, str]]:
    """Every pending timer as (deadline, kind, member id or ""), in firing order."""
    due: list[tuple[int, int, str]] = []
    for m in group.members:
        if m.heartbeat_deadline is not None:
            due.append((m.heartbeat_deadline, HEARTBEAT, m.member_id))
    for p in group.pending_members:
        due.append((p.deadline, HEARTBEAT, p.member_id))
    if group.join_timer is not None:
        due.append((group.join_timer.deadline, JOIN, ""))
    if group.sync_timer is not None:
        due.append((group.sync_timer.deadline, SYNC, ""))
    return sorted(due)


def next_deadline(group: Group) -> int | None:
    """The earliest pending timer, or None when nothing is scheduled (the first deadline of
    :func:`timers`, without building and sorting the list)."""
    deadlines = [m.heartbeat_deadline for m in group.members if m.heartbeat_deadline is not None]
    deadlines.extend(p.deadline for p in group.pending_members)
    if group.join_timer is not None:
        deadlines.append(group.join_timer.deadline)
    if group.sync_timer is not None:
        deadlines.append(group.sync_timer.deadline)
    return min(deadlines, default=None)


def fire_next(group: Group, fx: Effects) -> Group:
    """Fire the earliest timer; ``fx.now`` must be its deadline."""
    deadline, kind, member_id = timers(group)[0]
    assert deadline == fx.now
    if kind == HEARTBEAT:
        return expire_heartbeat(group, member_id, fx)
    if kind == JOIN:
        assert group.join_timer is not None
        timer, group = group.join_timer, replace(group, join_timer=None)
        return expire_join(group, timer, fx)
    assert group.sync_timer is not None
    sync, group = group.sync_timer, replace(group, sync_timer=None)
    return expire_pending_sync(group, sync, fx)


def expire_heartbeat(group: Group, member_id: str, fx: Effects) -> Group:
    """``expireClassicGroupMemberHeartbeat``."""
    if member(group, member_id) is not None:
        group = update(group, member_id, heartbeat_deadline=None)
    if group.state is DEAD:
        return group
    if is_pending_member(group, member_id):
        return remove_pending_member_and_update(group, member_id, fx)
    m = member(group, member_id)
    if m is None or has_satisfied_heartbeat(m):
        return group
    return remove_member_and_update(group, member_id, "session-timeout",
                                    f"removing member {member_id} on heartbeat expiration.", fx)


def expire_join(group: Group, timer: JoinTimer, fx: Effects) -> Group:
    """The join key fired: the initial delay (maybe extended) or the rebalance timeout."""
    if timer.initial:
        return try_complete_initial_rebalance_else_schedule(group, timer, fx)
    return complete_join(group, fx)


def try_complete_initial_rebalance_else_schedule(group: Group, timer: JoinTimer, fx: Effects) -> Group:
    """``tryCompleteInitialRebalanceElseSchedule``: if a new member arrived during the delay and time
    remains, wait ``min(delay, remaining)`` more with ``remaining - delay`` (floored at 0) left; else
    complete the join phase. Kafka 4.x clears ``newMemberAdded`` only here, so a flag left set by a
    completion with no time remaining carries over to the group's next initial rebalance."""
    if group.new_member_added and timer.remaining_ms != 0:
        delay = min(fx.config.initial_rebalance_delay_ms, timer.remaining_ms)
        remaining = max(timer.remaining_ms - timer.delay_ms, 0)
        return replace(group, new_member_added=False,
                       join_timer=JoinTimer(fx.now + delay, initial=True, delay_ms=delay, remaining_ms=remaining))
    return complete_join(group, fx)


def expire_pending_sync(group: Group, timer: SyncTimer, fx: Effects) -> Group:
    """``expirePendingSync``: remove the members of the timer's generation that never sent SyncGroup,
    and rebalance. A stale timer (other generation) or a group no longer syncing does nothing."""
    if timer.generation != group.generation or group.state not in (COMPLETING_REBALANCE, STABLE):
        return group
    if not group.pending_sync:
        return group
    missing = sorted(group.pending_sync)
    for member_id in missing:
        group = remove(group, member_id, fx, "sync-timeout")
    return prepare_rebalance(group, f"Removing [{', '.join(missing)}] on pending sync request expiration", fx)
