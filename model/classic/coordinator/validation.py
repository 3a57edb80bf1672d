"""The coordinator's validations, each a small named guard returning an error code or None.

Kafka checks a request in a fixed order, and the first failing check is the answer: the group's
status (Dead), then the member's identity (``validateMember``), then its generation, then what the
state allows. The order matters to clients -- a consumer resets its member id on UNKNOWN_MEMBER_ID
but only its generation on ILLEGAL_GENERATION (KAFKA-13419) -- so each guard here mirrors one Kafka
method and the handlers call them in Kafka's order.
"""

from __future__ import annotations

from model.classic.coordinator.state import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    CoordinatorConfig,
    Group,
    has_member,
    member,
    static_member_id,
)
from model.messages import Errors, JoinGroupRequest, OffsetCommitRequest, SyncGroupRequest

COMMIT_OLD_GENERATION = "commit-old-generation"  # model.mutants


def validate_session_timeout(request: JoinGroupRequest, config: CoordinatorConfig) -> Errors | None:
    """``GroupCoordinatorService.joinGroup``: the session timeout must lie within
    [group.min.session.timeout.ms, group.max.session.timeout.ms], checked before the group is read."""
    if not config.min_session_timeout_ms <= request.session_timeout_ms <= config.max_session_timeout_ms:
        return Errors.INVALID_SESSION_TIMEOUT
    return None


def accept_joining_member(group: Group, member_id: str, config: CoordinatorConfig) -> bool:
    """``acceptJoiningMember``: does ``group.max.size`` leave room for this JoinGroup?

    Empty and Dead groups accept everyone. In PreparingRebalance a member that already has a parked
    JoinGroup is accepted, anyone else only while fewer than max-size JoinGroups are parked (which lets
    the last rejoiners of an oversized group be kicked out). In CompletingRebalance and Stable an
    existing member is accepted, a new one only while the group is below max size.
    """
    if group.state in (EMPTY, DEAD):
        return True
    if group.state is PREPARING_REBALANCE:
        m = member(group, member_id)
        awaiting = sum(1 for x in group.members if x.awaiting_join is not None)
        return (m is not None and m.awaiting_join is not None) or awaiting < config.max_group_size
    return has_member(group, member_id) or len(group.members) < config.max_group_size


def validate_member(group: Group, member_id: str, instance_id: str | None) -> Errors | None:
    """``ClassicGroup.validateMember``: is this (member id, group.instance.id) a current member?

    With an instance id: unknown instance -> UNKNOWN_MEMBER_ID; the instance is held by another member
    id -> FENCED_INSTANCE_ID (a restarted static member replaced this one, KIP-345). Then the member id
    must be a member -> else UNKNOWN_MEMBER_ID.
    """
    if instance_id is not None:
        holder = static_member_id(group, instance_id)
        if holder is None:
            return Errors.UNKNOWN_MEMBER_ID
        if holder != member_id:
            return Errors.FENCED_INSTANCE_ID
    if not has_member(group, member_id):
        return Errors.UNKNOWN_MEMBER_ID
    return None


def validate_sync_group(group: Group, request: SyncGroupRequest) -> Errors | None:
    """``classicGroupSync`` + ``validateSyncGroup``: Empty -> UNKNOWN_MEMBER_ID (checked first, by
    ``group.isEmpty()``); Dead -> COORDINATOR_NOT_AVAILABLE; identity; generation -> ILLEGAL_GENERATION;
    a protocol name other than the group's -> INCONSISTENT_GROUP_PROTOCOL (no name: no check)."""
    if group.state is EMPTY:
        return Errors.UNKNOWN_MEMBER_ID
    if group.state is DEAD:
        return Errors.COORDINATOR_NOT_AVAILABLE
    error = validate_member(group, request.member_id, request.instance_id)
    if error is not None:
        return error
    if request.generation != group.generation:
        return Errors.ILLEGAL_GENERATION
    if (request.protocol_name is not None and group.protocol_name is not None
            and request.protocol_name != group.protocol_name):
        return Errors.INCONSISTENT_GROUP_PROTOCOL
    return None


def validate_heartbeat(group: Group, member_id: str, instance_id: str | None, generation: int) -> Errors | None:
    """``validateClassicGroupHeartbeat``: Dead -> COORDINATOR_NOT_AVAILABLE; identity; generation ->
    ILLEGAL_GENERATION. (So in PreparingRebalance a member of the current generation is told
    REBALANCE_IN_PROGRESS by the state check that follows, an older one ILLEGAL_GENERATION.)"""
    if group.state is DEAD:
        return Errors.COORDINATOR_NOT_AVAILABLE
    error = validate_member(group, member_id, instance_id)
    if error is not None:
        return error
    if generation != group.generation:
        return Errors.ILLEGAL_GENERATION
    return None


def validate_offset_commit(group: Group, request: OffsetCommitRequest, mutants: frozenset[str]) -> Errors | None:
    """``ClassicGroup.validateOffsetCommit`` (non-transactional), Kafka 4.x.

    Dead -> COORDINATOR_NOT_AVAILABLE. Generation < 0 on an Empty group: accepted (the admin client or
    a consumer that assigns partitions itself: a "simple" group). Otherwise, if the request names a
    generation >= 0, a member id or an instance id: identity checks, then the generation must be the
    group's -> else ILLEGAL_GENERATION (skipped by the ``commit-old-generation`` mutant); a request
    naming none of them is accepted only by an Empty group -> else UNKNOWN_MEMBER_ID. Finally a valid
    commit during CompletingRebalance -> REBALANCE_IN_PROGRESS.
    """
    if group.state is DEAD:
        return Errors.COORDINATOR_NOT_AVAILABLE
    if request.generation < 0 and group.state is EMPTY:
        return None
    if request.generation >= 0 or request.member_id or request.instance_id is not None:
        error = validate_member(group, request.member_id, request.instance_id)
        if error is not None:
            return error
        if request.generation != group.generation and COMMIT_OLD_GENERATION not in mutants:
            return Errors.ILLEGAL_GENERATION
    elif group.state is not EMPTY:
        return Errors.UNKNOWN_MEMBER_ID
    if group.state is COMPLETING_REBALANCE:
        return Errors.REBALANCE_IN_PROGRESS
    return None


def offset_commit_keeps_session(group: Group) -> bool:
    """``OffsetMetadataManager.commitOffset``: in the classic protocol a commit accepted in Stable or
    PreparingRebalance also counts as a heartbeat."""
    return group.state in (STABLE, PREPARING_REBALANCE)
