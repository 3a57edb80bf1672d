"""The classic group's persisted record: when the coordinator writes it, and what it says.

The coordinator is the leader of one partition of ``__consumer_offsets``, and everything it must not
forget goes into that partition as records: one record per committed offset (``OffsetCommitKey``),
and for a classic group one *group metadata record* (``GroupMetadataKey`` / ``GroupMetadataValue``)
holding the generation, the selected protocol, the leader and, per member, its ids, timeouts, its
subscription for the selected protocol and its assignment. Each new group metadata record replaces
the previous one (the partition is compacted by key). A coordinator taking over the partition rebuilds
the group from the last one (``model.classic.coordinator.load``).

The group metadata record is *not* rewritten on every change. Kafka 4.1 (group-coordinator/.../
GroupMetadataManager.java) appends it at exactly these points, each modelled here:

1. **A JoinGroup creates the group** (``classicGroupJoinToClassicGroup``: ``isNewGroup`` and nothing
   else to write): an empty record, generation 0, no protocol, no leader, no members
   (``GroupCoordinatorRecordHelpers.newEmptyGroupMetadataRecord``). Only a JoinGroup without a member
   id creates a group (``getOrMaybeCreateClassicGroup(groupId, isUnknownMember)``); a rejected one
   (INCONSISTENT_GROUP_PROTOCOL) still does.
2. **A join phase completes with no member left** (``completeClassicGroupJoin``, the group is Empty
   after ``initNextGeneration``): the new generation, no protocol, no leader, no members
   (``newGroupMetadataRecord(group, Map.of())``).
3. **The leader's SyncGroup** (``classicGroupSyncToClassicGroup`` in CompletingRebalance): the
   generation with the leader's assignment, members it left out with an empty one. The model's
   append always succeeds, so the group also becomes Stable at once.
4. **A static member's id replaced in Stable without a rebalance**
   (``updateStaticMemberThenRebalanceOrCompleteJoin``, KIP-345): the same generation and assignment,
   with the member under its new id and its new timeouts and subscription.

(``ClassicGroup.createClassicGroupRecords`` also writes one when a KIP-848 consumer group is converted
back to a classic group; conversions are out of the model's scope.) Nothing else writes it: in
particular a member that leaves or is expired, a rebalance starting, or a join phase completing with
members (the group is then CompletingRebalance) leaves the last record as it was.

Committed offsets need nothing here: each accepted OffsetCommit is already its own record, and the
model's ``Group.offsets`` is exactly what those records say.
"""

from __future__ import annotations

from model.classic.coordinator.state import (
    EMPTY,
    Group,
    StoredGroup,
    StoredMember,
    metadata,
)
from model.system_evolve import replace

#: ``newEmptyGroupMetadataRecord``: the record of a group a JoinGroup has just created.
EMPTY_GROUP_RECORD = StoredGroup(generation=0, protocol_name=None, leader=None, members=())


def group_record(group: Group) -> StoredGroup:
    """``GroupCoordinatorRecordHelpers.newGroupMetadataRecord``: the group as its record would say it.

    Each member is stored with its metadata for the selected protocol (``member.metadata(protocolName)``)
    and its assignment. The callers pass the group with the assignment the record carries already in
    place (the leader's, completed with empty ones; or the stored one). A member that does not support
    the selected protocol fails (Kafka's IllegalStateException), as does a group with members but no
    protocol.
    """
    members = tuple(
        StoredMember(
            member_id=m.member_id,
            instance_id=m.instance_id,
            client_id=m.client_id,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            session_timeout_ms=m.session_timeout_ms,
            subscription=metadata(m, group.protocol_name),
            assignment=m.assignment,
        )
        for m in group.members
    )
    return StoredGroup(generation=group.generation, protocol_name=group.protocol_name, leader=group.leader,
                       members=members)


def store(group: Group) -> Group:
    """Append the group's metadata record (write points 2, 3 and 4 above): ``stored`` becomes it."""
    return replace(group, stored=group_record(group))


def group_exists(group: Group) -> bool:
    """Would Kafka's coordinator have this group in its map (``groups.containsKey(groupId)``)?

    A group exists once a record created it (``stored``), once a simple consumer's commit created it
    (``offsets``; ``OffsetMetadataManager.validateOffsetCommit`` creates it in memory), or, defensively,
    whenever it has any state of its own.
    """
    return (group.stored is not None or bool(group.offsets) or bool(group.members) or bool(group.pending_members)
            or group.generation != 0 or group.state is not EMPTY)


def store_if_created(group_before: Group, group_after: Group) -> Group:
    """Write point 1: a JoinGroup without a member id reached a group that did not exist yet.

    ``group_after`` is the group the JoinGroup left; if ``group_before`` did not exist, the empty
    record is appended (the JoinGroup itself never writes a record for a new group: a first dynamic
    member only gets MEMBER_ID_REQUIRED, a first static member starts the initial delay).
    """
    if group_exists(group_before):
        return group_after
    return replace(group_after, stored=EMPTY_GROUP_RECORD)
