"""JoinGroup: how the classic coordinator admits, re-admits and replaces members.

``classicGroupJoinToClassicGroup`` and the methods it calls (GroupMetadataManager, Kafka 4.x). The
model speaks JoinGroup v9, so KIP-394 applies (a dynamic member with no id is given one and must
rejoin with it) and KIP-814 applies (a static leader replaced in Stable gets ``skip_assignment``).

Checks, in Kafka's order; the first that fails is the answer:

1. session timeout outside the broker's bounds -> INVALID_SESSION_TIMEOUT (``GroupCoordinatorService``);
2. no room (``acceptJoiningMember``) -> GROUP_MAX_SIZE_REACHED, and the member, if it was one, is removed;
3. Dead -> COORDINATOR_NOT_AVAILABLE;
4. protocols the group cannot support -> INCONSISTENT_GROUP_PROTOCOL;
5. for a known member id: identity (FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID); an Empty group ->
   UNKNOWN_MEMBER_ID.

Then, with no member id: a static member whose instance id is known replaces its old entry
(``updateStaticMemberThenRebalanceOrCompleteJoin``); a new static member is added; a dynamic member is
made pending and told MEMBER_ID_REQUIRED with its new id. With a member id: a pending member is added;
an existing member is parked (PreparingRebalance), answered at once with the current generation (same
metadata in CompletingRebalance, or a follower with the same metadata in Stable), or makes the group
rebalance (changed metadata, or the leader in Stable).
"""

from __future__ import annotations

from model.classic.coordinator.ops import (
    Effects,
    add,
    add_pending_member,
    client_id_of,
    complete_join_future,
    generate_member_id,
    remove,
    replace_static_member,
    reschedule_heartbeat,
    update_member,
)
from model.classic.coordinator.rebalance import (
    maybe_complete_join_phase,
    maybe_prepare_rebalance_or_complete_join,
    prepare_rebalance,
)
from model.classic.coordinator.state import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    Group,
    InvalidTransition,
    Member,
    ModelPreconditionError,
    current_classic_group_members,
    is_leader,
    is_pending_member,
    matches,
    member,
    select_protocol,
    static_member_id,
    supports_protocols,
)
from model.classic.coordinator.store import store, store_if_created
from model.classic.coordinator.validation import (
    accept_joining_member,
    validate_member,
    validate_session_timeout,
)
from model.messages import UNKNOWN_MEMBER_ID, Errors, JoinGroupRequest, JoinGroupResponse
from model.system_evolve import replace

STATIC_REJOIN_REBALANCES = "static-rejoin-rebalances"  # model.mutants


def join_reason(request: JoinGroupRequest) -> str:
    """``JoinGroupRequest.joinReason``: the client's reason, or "not provided"."""
    return request.reason or "not provided"


def handle_join_group(group: Group, conn: str, request: JoinGroupRequest, fx: Effects) -> Group:
    """``GroupCoordinatorService.joinGroup`` + ``classicGroupJoinToClassicGroup``."""
    if request.rebalance_timeout_ms < 1:
        raise ModelPreconditionError(
            f"JoinGroup rebalance_timeout_ms={request.rebalance_timeout_ms}: the model needs at least 1 ms")
    error = validate_session_timeout(request, fx.config)
    if error is not None:
        fx.reply(conn, JoinGroupResponse(error, member_id=request.member_id))
        return group
    if not accept_joining_member(group, request.member_id, fx.config):
        group = remove(group, request.member_id, fx, "group-max-size")
        fx.reply(conn, JoinGroupResponse(Errors.GROUP_MAX_SIZE_REACHED, member_id=UNKNOWN_MEMBER_ID))
        return group
    if request.member_id == UNKNOWN_MEMBER_ID:
        # Only a JoinGroup without a member id creates a group; a new group's empty record is written.
        return store_if_created(group, join_new_member(group, conn, request, fx))
    return join_existing_member(group, conn, request, fx)


def _refusal(group: Group, request: JoinGroupRequest) -> Errors | None:
    """Checks 3 and 4 of the module docstring, with which ``classicGroupJoinNewMember`` and
    ``classicGroupJoinExistingMember`` both begin: the error to answer, or None to go on."""
    if group.state is DEAD:
        return Errors.COORDINATOR_NOT_AVAILABLE
    if not supports_protocols(group, request.protocols):
        return Errors.INCONSISTENT_GROUP_PROTOCOL
    return None


# --- no member id: a new member, or a static member restarting ------------------------------


def join_new_member(group: Group, conn: str, request: JoinGroupRequest, fx: Effects) -> Group:
    """``classicGroupJoinNewMember``."""
    if (refused := _refusal(group, request)) is not None:
        fx.reply(conn, JoinGroupResponse(refused, member_id=UNKNOWN_MEMBER_ID))
        return group
    group, new_member_id = generate_member_id(group, client_id_of(conn), request.instance_id)
    if request.instance_id is not None:
        existing = static_member_id(group, request.instance_id)
        if existing is not None:
            return update_static_member_then_rebalance_or_complete_join(
                group, conn, request, existing, new_member_id, fx)
        return add_member_then_rebalance_or_complete_join(group, conn, request, new_member_id, fx)
    # KIP-394 (JoinGroup v4+, requiresKnownMemberId): hand out the id and wait for the member to come
    # back with it; meanwhile it is pending, blocks the join phase, and expires after its session timeout.
    group = add_pending_member(group, new_member_id, fx.now + request.session_timeout_ms)
    fx.reply(conn, JoinGroupResponse(Errors.MEMBER_ID_REQUIRED, member_id=new_member_id))
    return group


def add_member_then_rebalance_or_complete_join(group: Group, conn: str, request: JoinGroupRequest,
                                               member_id: str, fx: Effects) -> Group:
    """``addMemberThenRebalanceOrCompleteJoin``: a member enters the group with its JoinGroup parked.

    It is *new*: until the join phase completes, its parked JoinGroup does not satisfy its heartbeat,
    and its heartbeat timer is the new-member join timeout (KAFKA-7610), since a client whose
    request timed out would otherwise leave a defunct member behind. During the initial rebalance the
    arrival is noted (``newMemberAdded``, Kafka 4.x: previous state Empty) so that the initial delay
    is extended.
    """
    m = Member(
        member_id=member_id,
        instance_id=request.instance_id,
        client_id=client_id_of(conn),
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        session_timeout_ms=request.session_timeout_ms,
        protocols=request.protocols,
        awaiting_join=conn,
        is_new=True,
    )
    if group.state is PREPARING_REBALANCE and group.previous_state is EMPTY:
        group = replace(group, new_member_added=True)
    group = add(group, m)
    group = reschedule_heartbeat(group, member_id, fx, fx.config.new_member_join_timeout_ms)
    instance = request.instance_id if request.instance_id is not None else "null"
    return maybe_prepare_rebalance_or_complete_join(
        group, f"Adding new member {member_id} with group instance id {instance}; "
               f"client reason: {join_reason(request)}", fx)


def update_static_member_then_rebalance_or_complete_join(
        group: Group, conn: str, request: JoinGroupRequest, old_member_id: str, new_member_id: str,
        fx: Effects) -> Group:
    """``updateStaticMemberThenRebalanceOrCompleteJoin`` (KIP-345): a static member restarted.

    Its entry (assignment included) moves to the new id; requests of the old id are fenced. Then, by
    state: **Stable** -- if the protocol the group would now select is the one it uses, no rebalance:
    the member is answered at once with the current generation (a leader, JoinGroup v9+, also gets the
    member list and ``skip_assignment``, KIP-814, so it keeps watching metadata without reassigning),
    and the group's record is rewritten with the new id (``model.classic.coordinator.store``, write point 4);
    otherwise a rebalance. **CompletingRebalance** -- always a rebalance (KAFKA-9801: the leader's
    assignment, keyed by the old id, would leave the new id empty-handed). **PreparingRebalance** --
    only the id changes, and the join phase may now be complete.
    """
    instance_id = request.instance_id
    assert instance_id is not None
    group = replace_static_member(group, instance_id, old_member_id, new_member_id, fx)
    group = reschedule_heartbeat(group, new_member_id, fx)
    group = update_member(group, new_member_id, request.protocols, request.rebalance_timeout_ms,
                          request.session_timeout_ms, awaiting_join=conn)
    if group.state is STABLE:
        unchanged = group.protocol_name == select_protocol(group)
        if unchanged and STATIC_REJOIN_REBALANCES not in fx.mutants:
            leads = is_leader(group, new_member_id)
            response = current_generation_response(group, new_member_id, with_members=leads, skip_assignment=leads)
            # The replaced id (and the new timeouts and subscription) are persisted at once.
            return complete_join_future(store(group), new_member_id, response, fx)
        return maybe_prepare_rebalance_or_complete_join(
            group, f"Group's selectedProtocol will change because static member {new_member_id} with "
                   f"instance id {instance_id} joined with change of protocol; "
                   f"client reason: {join_reason(request)}", fx)
    if group.state is COMPLETING_REBALANCE:
        return prepare_rebalance(
            group, f"Updating metadata for static member {new_member_id} with instance id {instance_id}; "
                   f"client reason: {join_reason(request)}", fx)
    if group.state in (EMPTY, DEAD):
        raise InvalidTransition(f"a known static member cannot rejoin a group in state {group.state.value}")
    return maybe_complete_join_phase(group, fx)


# --- with a member id: a pending member, or an existing one rejoining -----------------------


def join_existing_member(group: Group, conn: str, request: JoinGroupRequest, fx: Effects) -> Group:
    """``classicGroupJoinExistingMember``."""
    member_id = request.member_id
    if (refused := _refusal(group, request)) is not None:
        fx.reply(conn, JoinGroupResponse(refused, member_id=member_id))
        return group
    if is_pending_member(group, member_id):
        if request.instance_id is not None:
            # Kafka throws IllegalStateException here; the request fails with UNKNOWN_SERVER_ERROR.
            fx.reply(conn, JoinGroupResponse(Errors.UNKNOWN_SERVER_ERROR, member_id=member_id))
            return group
        return add_member_then_rebalance_or_complete_join(group, conn, request, member_id, fx)
    error = validate_member(group, member_id, request.instance_id)
    if error is not None:
        fx.reply(conn, JoinGroupResponse(error, member_id=member_id))
        return group
    m = member(group, member_id)
    assert m is not None
    if group.state is PREPARING_REBALANCE:
        return update_member_then_rebalance_or_complete_join(
            group, conn, request, f"Member {member_id} is joining group during {group.state.value}", fx)
    if group.state is COMPLETING_REBALANCE:
        if matches(m, request.protocols):
            # It probably lost the JoinGroup response: answer again for the current generation.
            fx.reply(conn, current_generation_response(group, member_id, with_members=is_leader(group, member_id)))
            return group
        return update_member_then_rebalance_or_complete_join(
            group, conn, request, f"Updating metadata for member {member_id} during {group.state.value}", fx)
    if group.state is STABLE:
        if is_leader(group, member_id):
            # The leader may rejoin to have the assignment redone for reasons outside the member
            # metadata (e.g. topic metadata changed): always a rebalance.
            return update_member_then_rebalance_or_complete_join(
                group, conn, request, f"Leader {member_id} re-joining group during {group.state.value}", fx)
        if not matches(m, request.protocols):
            return update_member_then_rebalance_or_complete_join(
                group, conn, request, f"Updating metadata for member {member_id} during {group.state.value}", fx)
        fx.reply(conn, current_generation_response(group, member_id, with_members=False))
        return group
    # Empty: the member belongs to a generation the group has left; it must reset and rejoin.
    fx.reply(conn, JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID, member_id=member_id))
    return group


def update_member_then_rebalance_or_complete_join(group: Group, conn: str, request: JoinGroupRequest,
                                                  reason: str, fx: Effects) -> Group:
    """``updateMemberThenRebalanceOrCompleteJoin``: park the JoinGroup with the new metadata, then
    rebalance (or, already rebalancing, see whether the join phase is complete)."""
    group = update_member(group, request.member_id, request.protocols, request.rebalance_timeout_ms,
                          request.session_timeout_ms, awaiting_join=conn)
    return maybe_prepare_rebalance_or_complete_join(group, f"{reason}; client reason: {join_reason(request)}", fx)


def current_generation_response(group: Group, member_id: str, *, with_members: bool,
                                skip_assignment: bool = False) -> JoinGroupResponse:
    """A JoinGroup answered at once with the current generation (no rebalance); ``skip_assignment``
    for a static leader replaced in Stable (KIP-814)."""
    return JoinGroupResponse(
        Errors.NONE,
        generation=group.generation,
        protocol_name=group.protocol_name,
        leader=group.leader or "",
        member_id=member_id,
        members=current_classic_group_members(group) if with_members else (),
        skip_assignment=skip_assignment,
    )
