"""Contracts of the executable model's transition functions, checked at every state seeded runs reach.

The explorations (``model.proofs.explore``) check invariants of whole reachable states; the tie checks that
each step is a step of the encoding. Neither asks what the coordinator *answers* to a request the runs
happen not to send in a given state, or how a member reacts to an answer it happens not to get there.
Mutation testing (docs/proofs.md, "Mutation testing") found bugs of exactly that kind that every
obligation let through: a JoinGroup retried during CompletingRebalance that starts a new rebalance, a
static member rejoining outside Stable that takes the Stable fast path, a coordinator that gives the group
up without answering its parked SyncGroups, a sync timer cancelled while members are still pending, a
member that resets the wrong part of its identity on a heartbeat error, and one that never looks its
coordinator up again once it has found it.

These obligations take the other way round: they collect every distinct coordinator group and every
distinct member that seeded random runs of the executable model reach (``model.proofs.replay.random_run``:
3 consumers, static and dynamic, eager and cooperative, crashes, restarts, leaves and stalls), and at each
one apply the model's own transition function (``model.classic.coordinator.receive`` / ``unload``,
``model.classic.member.receive`` / ``poll``) to the request or answer the contract is about, and check the
result against what Kafka does (the source named in each contract). So the contract is checked at every
reached state where its precondition holds, not only where a run took that step. A contract whose
precondition held nowhere is a failure (vacuous), so a change of the runs that stops reaching a case is
seen.

Bounds: the seeds and run length below; the states are those the runs reach, not every reachable state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from model import system as sy
from model.classic import coordinator as co
from model.classic import member as mb
from model.classic.coordinator.state import COMPLETING_REBALANCE, PREPARING_REBALANCE, STABLE, Group, Reply
from model.classic.coordinator.state import Member as GroupMember
from model.classic.coordinator.state import member as group_member
from model.classic.member.state import Member, MemberState, Metadata
from model.messages import (
    NO_GENERATION as NO_GENERATION_ID,
)
from model.messages import (
    UNKNOWN_MEMBER_ID,
    Errors,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
)
from model.proofs.core import Outcome, RunConfig, obligation, outcome
from model.proofs.replay import random_run
from model.proofs.solver import Prover

#: Where a contract was broken: the contract, what was wrong, and the step that reached the state.
Breach = tuple[str, str, str]


@dataclass
class Reached:
    """The distinct groups and members the runs reached (with the time and config they were reached at)."""

    groups: dict[Group, tuple[int, sy.SystemConfig, str]] = field(default_factory=dict)
    members: dict[Member, tuple[int, sy.SystemConfig, str]] = field(default_factory=dict)
    metadata: Metadata = ()
    steps: int = 0
    raised: list[str] = field(default_factory=list)  # runs in which the model raised, and what


def reach(seeds: Iterable[int], steps: int, mutants: frozenset[str] = frozenset()) -> Reached:
    """Every group and member state that the seeded runs pass through."""
    out = Reached()
    for seed in seeds:
        try:
            run = random_run(seed, steps=steps, mutants=mutants)
        except Exception as exc:  # noqa: BLE001 -- the model raising where Kafka answers is a finding, said as one
            out.raised.append(f"seed {seed}: {type(exc).__name__}: {exc}")
            continue
        for before, action, after, _ in run:
            out.steps += 1
            where = f"seed {seed}, after {sy.describe(before, action)} at {after.now} ms"
            config = _config_of(seed, mutants)
            out.groups.setdefault(after.group, (after.now, config, where))
            out.metadata = after.metadata
            for _, p in after.processes:
                if p.member is not None:
                    out.members.setdefault(p.member, (after.now, config, where))
    return out


def _config_of(seed: int, mutants: frozenset[str]) -> sy.SystemConfig:
    from model.proofs.replay import replay_config

    return replay_config(mutants, seed % 2)  # random_run's choice of variant


# -- the coordinator's contracts ------------------------------------------------------------------------

CONN = "contract#9"  # a connection no run uses


def _join(m: GroupMember, member_id: str) -> JoinGroupRequest:
    return JoinGroupRequest(member_id, m.instance_id, m.session_timeout_ms, m.rebalance_timeout_ms, m.protocols)


def _answers(replies: Iterable[Reply], conn: str) -> list[Any]:
    return [r.response for r in replies if r.conn == conn]


def join_retry_in_sync_phase(g: Group, now: int, config: sy.SystemConfig) -> Iterator[str]:
    """A member of a CompletingRebalance group that sends JoinGroup again with the same protocols (it lost the
    answer) gets the current generation back, and the group neither rebalances nor changes generation.
    ``GroupMetadataManager.classicGroupJoinExistingMember`` (COMPLETING_REBALANCE, ``isEqual`` protocols)."""
    if g.state is not COMPLETING_REBALANCE:
        return
    for m in g.members:
        after, replies, _ = co.receive(g, CONN, _join(m, m.member_id), now, config.coordinator, config.mutants)
        got = _answers(replies, CONN)
        ok = (len(got) == 1 and isinstance(got[0], JoinGroupResponse) and got[0].error is Errors.NONE
              and got[0].generation == g.generation)
        if not ok or after.state is not COMPLETING_REBALANCE or after.generation != g.generation:
            yield (f"{m.member_id} rejoining generation {g.generation} with the same protocols: answered "
                   f"{got}, group now {after.state.value} generation {after.generation}")


def static_rejoin_by_state(g: Group, now: int, config: sy.SystemConfig) -> Iterator[str]:
    """A static member's new incarnation (JoinGroup with no member id, same group.instance.id and protocols):
    in Stable it is answered at once with the current generation and the group stays Stable (KIP-345's fast
    path); in CompletingRebalance the group rebalances (KAFKA-9801); in PreparingRebalance it only joins the
    phase. Outside Stable it never gets the current generation back. ``GroupMetadataManager
    .updateStaticMemberThenRebalanceOrCompleteJoin``."""
    if g.state not in (STABLE, COMPLETING_REBALANCE, PREPARING_REBALANCE):
        return
    for m in g.members:
        if m.instance_id is None:
            continue
        after, replies, _ = co.receive(g, CONN, _join(m, UNKNOWN_MEMBER_ID), now, config.coordinator,
                                       config.mutants)
        got = [r for r in _answers(replies, CONN) if isinstance(r, JoinGroupResponse)]
        if g.state is STABLE and g.protocol_name == co.protocol_name(after):
            ok = (len(got) == 1 and got[0].error is Errors.NONE and got[0].generation == g.generation
                  and after.state is STABLE)
        elif g.state is COMPLETING_REBALANCE:
            rebalanced = after.state is PREPARING_REBALANCE or after.generation > g.generation
            ok = rebalanced and not any(r.generation == g.generation for r in got)
        elif g.state is PREPARING_REBALANCE:
            ok = not any(r.error is Errors.NONE and r.generation <= g.generation for r in got)
        else:
            continue
        if not ok:
            yield (f"static {m.instance_id} rejoining a {g.state.value} group (generation {g.generation}): answered "
                   f"{[(r.error.name, r.generation) for r in got]}, group now {after.state.value}")


def unload_answers_parked(g: Group, now: int, config: sy.SystemConfig) -> Iterator[str]:
    """When the coordinator gives the group up, every parked JoinGroup and SyncGroup is answered
    NOT_COORDINATOR (so its client looks for the new coordinator), once, and nothing else is sent.
    ``GroupMetadataManager.onUnloaded``."""
    _, replies, _ = co.unload(g, now, config.coordinator)
    expected = sorted([(m.awaiting_join, "JoinGroupResponse") for m in g.members if m.awaiting_join is not None]
                      + [(m.awaiting_sync, "SyncGroupResponse") for m in g.members if m.awaiting_sync is not None])
    got = sorted((r.conn, type(r.response).__name__) for r in replies)
    wrong = [r for r in replies if r.response.error is not Errors.NOT_COORDINATOR]
    if got != expected or wrong:
        yield f"unloading a {g.state.value} group: parked {expected}, answered {got}, not NOT_COORDINATOR: {wrong}"


def sync_timer_while_pending(g: Group, now: int, config: sy.SystemConfig) -> Iterator[str]:
    """While members of a CompletingRebalance or Stable group still owe their SyncGroup, the pending-sync
    timer runs (a member that never syncs is removed after the rebalance timeout, the group does not wait
    for it forever); also just after one of them syncs. ``ClassicGroup.removePendingSyncMember``,
    ``GroupMetadataManager.schedulePendingSync``."""
    if g.state not in (COMPLETING_REBALANCE, STABLE) or not g.pending_sync:
        return
    if g.sync_timer is None:
        yield f"{g.state.value} group with {sorted(g.pending_sync)} pending sync has no sync timer"
        return
    if len(g.pending_sync) < 2:
        return
    for member_id in sorted(g.pending_sync):
        if member_id == g.leader:
            continue  # the leader's SyncGroup completes the phase: another contract's business
        m = group_member(g, member_id)
        if m is None or m.awaiting_sync is not None:
            continue
        request = SyncGroupRequest(member_id, m.instance_id, g.generation, g.protocol_name)
        after, _, _ = co.receive(g, CONN, request, now, config.coordinator, config.mutants)
        if after.pending_sync and after.state in (COMPLETING_REBALANCE, STABLE) and after.sync_timer is None:
            yield (f"after {member_id}'s SyncGroup in {g.state.value}, {sorted(after.pending_sync)} still pending "
                   f"but the sync timer is cancelled")


# -- the member's contracts -------------------------------------------------------------------------------

def heartbeat_error_identity(m: Member, now: int, config: sy.SystemConfig, metadata: Metadata) -> Iterator[str]:
    """A heartbeat of the member's current generation answered ILLEGAL_GENERATION resets the generation but
    keeps the member id (the member rejoins as itself); UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID reset both
    (it rejoins with no member id). Both request a rejoin. ``AbstractCoordinator.HeartbeatResponseHandler
    .handle`` -> ``resetStateAndRejoin(reason, shouldResetMemberId)``."""
    if not m.heartbeats_in_flight or m.heartbeats_in_flight[0] != m.generation or m.fatal is not None:
        return
    if m.generation.generation_id == NO_GENERATION_ID:
        return
    for error in (Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_INSTANCE_ID):
        after, _, _ = mb.receive(m, HeartbeatResponse(error), now, metadata, config.mutants)
        keep = error is Errors.ILLEGAL_GENERATION
        want_id = m.generation.member_id if keep else UNKNOWN_MEMBER_ID
        if (after.generation.generation_id != NO_GENERATION_ID or after.generation.member_id != want_id
                or not after.rejoin_needed):
            yield (f"{m.name} (generation {m.generation.generation_id}, id {m.generation.member_id}) after a "
                   f"heartbeat's {error.name}: generation {after.generation.generation_id}, id "
                   f"{after.generation.member_id!r} (want {want_id!r}), rejoin_needed {after.rejoin_needed}")


def _lookups(m: Member, now: int, metadata: Metadata, config: sy.SystemConfig) -> tuple[Member, bool]:
    """The member loses its coordinator (an answer NOT_COORDINATOR) and polls past the back-off: does it send
    FindCoordinator?"""
    lost, _, _ = mb.receive(m, HeartbeatResponse(Errors.NOT_COORDINATOR), now, metadata, config.mutants)
    at = max(now, lost.lookup_after, lost.last_poll)
    polled, requests, _ = mb.poll(lost, at, metadata, config.mutants)
    return polled, any(isinstance(r, FindCoordinatorRequest) for r in requests)


def coordinator_found_again(m: Member, now: int, config: sy.SystemConfig, metadata: Metadata) -> Iterator[str]:
    """A member that loses its coordinator looks it up (FindCoordinator), takes the broker the answer names,
    and, when it loses that one too, looks it up again: every coordinator move is followed by a lookup.
    ``AbstractCoordinator.lookupCoordinator`` / ``FindCoordinatorResponseHandler.onSuccess`` (clears
    ``findCoordinatorFuture``) / ``markCoordinatorUnknown``."""
    if (m.fatal is not None or m.stalled or m.frozen or m.coordinator_node is None or m.finding_coordinator
            or m.state is not MemberState.STABLE):
        return
    first, sent = _lookups(m, now, metadata, config)
    if not sent:
        return  # this state does not poll now (another contract's business); the next reached state will
    found = mb.receive(first, FindCoordinatorResponse(Errors.NONE, node=7), first.last_poll, metadata,
                       config.mutants)[0]
    if found.coordinator_node != 7 or found.finding_coordinator:
        yield (f"{m.name}: after FindCoordinator named broker 7: coordinator {found.coordinator_node}, "
               f"lookup in flight {found.finding_coordinator}")
        return
    _, again = _lookups(found, max(now, found.last_poll), metadata, config)
    if not again:
        yield f"{m.name}: found its coordinator once, lost it again, and never sends FindCoordinator again"


GroupContract = Callable[[Group, int, sy.SystemConfig], Iterator[str]]
MemberContract = Callable[[Member, int, sy.SystemConfig, Metadata], Iterator[str]]
GROUP_CONTRACTS: dict[str, GroupContract] = {
    "join-retry-in-sync-phase": join_retry_in_sync_phase,
    "static-rejoin-by-state": static_rejoin_by_state,
    "unload-answers-parked": unload_answers_parked,
    "sync-timer-while-pending": sync_timer_while_pending,
}
MEMBER_CONTRACTS: dict[str, MemberContract] = {
    "heartbeat-error-identity": heartbeat_error_identity,
    "coordinator-found-again": coordinator_found_again,
}


def _preconditions(name: str, g: Group | None, m: Member | None) -> bool:
    """Where a contract has something to check (for the vacuity count)."""
    if g is not None:
        return {"join-retry-in-sync-phase": g.state is COMPLETING_REBALANCE and bool(g.members),
                "static-rejoin-by-state": g.state in (STABLE, COMPLETING_REBALANCE, PREPARING_REBALANCE)
                and any(x.instance_id is not None for x in g.members),
                "unload-answers-parked": any(x.awaiting_join or x.awaiting_sync for x in g.members),
                "sync-timer-while-pending": g.state in (COMPLETING_REBALANCE, STABLE) and len(g.pending_sync) > 1,
                }[name]
    assert m is not None
    return {"heartbeat-error-identity": bool(m.heartbeats_in_flight) and m.heartbeats_in_flight[0] == m.generation
            and m.generation.generation_id != NO_GENERATION_ID,
            "coordinator-found-again": m.state is MemberState.STABLE and not m.stalled and not m.frozen,
            }[name]


def _check(cfg: RunConfig, defaults: dict[str, int], contracts: dict[str, Any], on_groups: bool) -> Outcome:
    bounds = {**defaults, **(cfg.bounds or {})}
    reached = reach(range(bounds["seeds"]), bounds["steps"], cfg.mutants)
    prover = Prover(cfg.timeout_ms)
    facts: dict[str, Any] = {"run_steps": reached.steps, "groups": len(reached.groups),
                             "members": len(reached.members), "checked_at": {}, "raised": len(reached.raised)}
    prover.record(f"runs: the {bounds['seeds']} seeded runs of the executable model complete (no transition raises)",
                  not reached.raised, "; ".join(reached.raised[:2]))
    for name, contract in contracts.items():
        breaches: list[str] = []
        applies = 0
        states: dict[Any, tuple[int, sy.SystemConfig, str]] = reached.groups if on_groups else reached.members
        for state, (now, config, where) in states.items():
            applies += _preconditions(name, state if on_groups else None, None if on_groups else state)
            args = (state, now, config) if on_groups else (state, now, config, reached.metadata)
            try:
                breaches += [f"{b} ({where})" for b in contract(*args)]
            except Exception as exc:  # noqa: BLE001 -- the model raising on a request Kafka answers is a breach
                breaches.append(f"the transition function raised {type(exc).__name__}: {exc} ({where})")
                facts["raised"] += 1
        facts["checked_at"][name] = applies
        note = "; ".join(breaches[:2]) if breaches else ("" if applies else "vacuous: no reached state applies")
        prover.record(f"{name}: at {applies} reached {'groups' if on_groups else 'members'} "
                      f"({(contract.__doc__ or '').split('.')[0]})", not breaches and applies > 0, note)
    ok = prover.status.value == "proved"
    kind = "coordinator groups" if on_groups else "members"
    text = (f"every contract holds at the {len(reached.groups if on_groups else reached.members)} distinct {kind} "
            f"{bounds['seeds']} seeded runs reach" if ok else "a transition function breaks its contract (see the query)")
    return outcome(prover, text, bounds=bounds, facts=facts)


def _deepen(b: Any) -> dict[str, int]:
    return {"seeds": 2 * int(b["seeds"]), "steps": int(b["steps"])}


_BOUNDS = {"seeds": 80, "steps": 120}


@obligation(
    id="model-coordinator-contracts", invariant="converges", scope="bounded",
    statement="at every coordinator group state that seeded runs of the executable model reach, the coordinator's "
              "own transition function answers as Kafka's does: a JoinGroup retried with the same protocols during "
              "CompletingRebalance gets the current generation and starts no rebalance; a static member's new "
              "incarnation takes the no-rebalance fast path in Stable only (a rebalance in CompletingRebalance, "
              "never the current generation outside Stable); giving the group up answers every parked JoinGroup "
              "and SyncGroup NOT_COORDINATOR and nothing else; the pending-sync timer runs while a member owes its "
              "SyncGroup",
    source="GroupMetadataManager.classicGroupJoinExistingMember, updateStaticMemberThenRebalanceOrCompleteJoin "
           "(KIP-345, KAFKA-9801), onUnloaded, schedulePendingSync; ClassicGroup.removePendingSyncMember",
    assumptions=("fifo-per-connection",),
    bounds=_BOUNDS,
    deepen=_deepen,
)
def model_coordinator_contracts(cfg: RunConfig) -> Outcome:
    return _check(cfg, _BOUNDS, GROUP_CONTRACTS, on_groups=True)


@obligation(
    id="model-member-contracts", invariant="converges", scope="bounded",
    statement="at every member state that seeded runs of the executable model reach, the member's own transition "
              "function reacts as Kafka's client does: a heartbeat answered ILLEGAL_GENERATION resets the generation "
              "and keeps the member id, UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID reset both, each asks for a "
              "rejoin; a member that loses its coordinator looks it up, takes the broker named, and looks it up "
              "again when it loses that one too",
    source="AbstractCoordinator.HeartbeatResponseHandler.handle, resetStateAndRejoin, lookupCoordinator, "
           "FindCoordinatorResponseHandler.onSuccess, markCoordinatorUnknown",
    assumptions=("fifo-per-connection",),
    bounds=_BOUNDS,
    deepen=_deepen,
)
def model_member_contracts(cfg: RunConfig) -> Outcome:
    return _check(cfg, _BOUNDS, MEMBER_CONTRACTS, on_groups=False)


OBLIGATIONS = (model_coordinator_contracts, model_member_contracts)
