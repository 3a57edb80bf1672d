"""A coordinator moving: the old one unloads the group, a new one loads it from ``__consumer_offsets``.

A group's coordinator is the leader of the group's partition of ``__consumer_offsets``
(``model.classic.coordinator.home``). When that leadership moves -- a broker shuts down or fails, a
reassignment -- the old coordinator *unloads* the partition and the new leader *loads* it: it replays
the partition's records and rebuilds every group from them (Kafka 4.1.1, GroupMetadataManager
``onUnloaded``, ``replay(GroupMetadataKey, GroupMetadataValue)`` and ``onLoaded``). In between, and
while loading, the group's requests get NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS and clients
look the coordinator up again; those answers are ``model.classic.coordinator.ops.error_response``, sent by
the system, not by a group.

What the new coordinator knows is exactly what the records say: the committed offsets (one record
per commit) and the **last** group metadata record (``model.classic.coordinator.store``). Everything that
happened to the membership after that record -- a member that left or was expired, a rebalance that
started, a join phase that completed with members -- is forgotten. The loaded group is the record's
generation, Stable with the record's members and assignments (Empty if it has none), and every member
gets a fresh session: its heartbeat timer is set to its session timeout from the load. So:

- a member that keeps heartbeating (to the new coordinator, once it has found it) stays, with the
  same generation and assignment: a failover costs no rebalance;
- a member that left or expired after the last record is back in the loaded group, as a ghost, until
  its session timeout expires it -- and that expiry starts a rebalance;
- a rebalance in progress when the coordinator moved is lost: the group is back in the record's (last
  completed) generation, and members that had rejoined for a newer one learn it from the errors their
  requests get (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS after a rebalance).
"""

from __future__ import annotations

from typing import Any

from model import events as ev
from model.classic.coordinator.ops import Effects, transition_to
from model.classic.coordinator.rebalance import prepare_rebalance
from model.classic.coordinator.state import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    CoordinatorConfig,
    Group,
    Member,
    Reply,
    StoredGroup,
)
from model.messages import Errors, JoinGroupResponse, SyncGroupResponse
from model.system_evolve import replace

Result = tuple[Group, tuple[Reply, ...], tuple[dict[str, Any], ...]]

LOADED = "loaded"  # the ``detail`` of the coordinator_state event a load emits
UNLOADED = "unloaded"


def loaded_group(group_id: str, record: StoredGroup | None, now: int) -> Group:
    """``GroupMetadataManager.replay(GroupMetadataKey, GroupMetadataValue)`` followed by the heartbeat
    part of ``onLoaded``: the classic group a group metadata record describes, as of ``now``.

    Each member supports exactly one protocol, the group's, with its stored subscription (the record
    keeps nothing else); it is not new, has no parked request, belongs to the record's generation, and
    its heartbeat timer is ``now`` + its session timeout (``rescheduleClassicGroupMemberHeartbeat``).
    The state is Stable with members, Empty without; the previous state is Dead, as for every freshly
    constructed ``ClassicGroup``. No join timer, no sync timer, nobody pending.
    """
    if record is None:
        return Group(group_id=group_id)
    members = tuple(sorted((
        Member(
            member_id=m.member_id,
            instance_id=m.instance_id,
            client_id=m.client_id,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            session_timeout_ms=m.session_timeout_ms,
            protocols=() if record.protocol_name is None else ((record.protocol_name, m.subscription),),
            assignment=m.assignment,
            heartbeat_deadline=now + m.session_timeout_ms,
            joined_generation=record.generation,
        )
        for m in record.members), key=lambda m: m.member_id))
    return Group(
        group_id=group_id,
        state=STABLE if members else EMPTY,
        previous_state=DEAD,
        generation=record.generation,
        protocol_name=record.protocol_name,
        leader=record.leader,
        members=members,
        stored=record,
    )


def load_with_events(group: Group, now: int, config: CoordinatorConfig,
                     mutants: frozenset[str] = frozenset()) -> Result:
    """A new coordinator loads the group at ``now``: :func:`load`, with what it sends and logs.

    Emits one ``coordinator_state`` event with ``detail="loaded"`` (state, generation, leader, assignor,
    members). If the loaded group has more members than ``group.max.size`` (the setting changed),
    ``onLoaded`` starts a rebalance at once, which emits its own ``coordinator_rebalance``. A load
    sends no replies: the group has no parked requests.
    """
    fx = Effects(now, config, mutants)
    loaded = loaded_group(group.group_id, group.stored, now)
    loaded = replace(loaded, offsets=group.offsets, member_id_seq=group.member_id_seq)
    fx.emit(ev.COORDINATOR_STATE, loaded, detail=LOADED, state=loaded.state.value,
            previous_state=loaded.previous_state.value, generation=loaded.generation, leader=loaded.leader,
            assignor=loaded.protocol_name, members=[m.member_id for m in loaded.members])
    if len(loaded.members) > config.max_group_size:
        loaded = prepare_rebalance(
            loaded, f"Freshly-loaded group {loaded.group_id} (size {len(loaded.members)}) is over capacity "
                    f"{config.max_group_size}. Rebalancing in order to give a chance for consumers to commit "
                    f"offsets", fx)
    return loaded, tuple(fx.replies), tuple(fx.events)


def load(group: Group, now: int, config: CoordinatorConfig) -> Group:
    """The group a NEW coordinator builds when it loads the group's ``__consumer_offsets`` partition at
    ``now``, from what the old one persisted (``group.stored`` and ``group.offsets``).

    With a stored record: that record's generation, protocol, leader, members and assignments; Stable
    if it has members, else Empty; every member's session timer restarted at ``now`` + its session
    timeout (``onLoaded``); no parked JoinGroup / SyncGroup, no member new, no join or sync timer, no
    KIP-394 pending member, nobody pending sync. Never stored: a fresh Empty group. Either way the
    committed offsets are kept (their own records are replayed), and ``member_id_seq`` too (it only
    keeps the model's generated member ids unique; Kafka's are random UUIDs).

    In Kafka, a member removed after the last record (it left, or its session or rebalance timeout
    expired) is in the loaded group again, with its old assignment, until its new session timeout
    expires it and the group rebalances; a generation that was being formed when the coordinator moved
    is lost, and the group is back in the last stored one. Over ``group.max.size``, the loaded group
    starts a rebalance at once (see :func:`load_with_events`).
    """
    return load_with_events(group, now, config)[0]


def unload(group: Group, now: int, config: CoordinatorConfig) -> Result:
    """``GroupMetadataManager.onUnloaded``: the old coordinator gives the group up at ``now``.

    The group becomes Dead. Parked requests are answered NOT_COORDINATOR, so their clients look for
    the new coordinator: a group that was PreparingRebalance answers its parked JoinGroups, one that
    was CompletingRebalance or Stable its parked SyncGroups. Every timer goes with the partition's
    runtime (the model clears them), so the Dead group never fires anything. Emits ``coordinator_state``
    with ``detail="unloaded"``. The old coordinator's group is useless afterwards except as the input
    of :func:`load` (its ``stored`` record and ``offsets``).
    """
    fx = Effects(now, config)
    previous = group.state
    for m in group.members:
        if previous is PREPARING_REBALANCE and m.awaiting_join is not None:
            fx.reply(m.awaiting_join, JoinGroupResponse(Errors.NOT_COORDINATOR, member_id=m.member_id))
        elif previous in (COMPLETING_REBALANCE, STABLE) and m.awaiting_sync is not None:
            fx.reply(m.awaiting_sync, SyncGroupResponse(Errors.NOT_COORDINATOR))
    group = replace(
        group,
        members=tuple(replace(m, awaiting_join=None, awaiting_sync=None, heartbeat_deadline=None)
                      for m in group.members),
        pending_members=(),
        pending_sync=frozenset(),
        join_timer=None,
        sync_timer=None,
    )
    group = transition_to(group, DEAD, fx, detail=UNLOADED)
    return group, tuple(fx.replies), tuple(fx.events)
