"""The protocol invariants: predicates over the transition system's states and transitions.

Each predicate returns the :class:`Violation` values it found (empty when it holds), tagged with a
catalogue id (``model.invariants.catalogue``). Three shapes:

* **state predicates** (``always``) look at one :class:`~model.system.SystemState`:
  :func:`single_owner` (with :func:`zombie_overlap` apart), :func:`complete` (only in a settled
  state, see :func:`settled`);
* **transition predicates** (``step``) look at ``(before, action, after, events)``:
  :func:`generation_monotonic`, :func:`eager_revoke_all`, :func:`subscribed_only`,
  :func:`commits_fenced` (``commit-owned-only``);
* **history properties** need more than one transition and live in :class:`Monitor`, which watches a
  run transition by transition: ``revoke-before-assign`` (same generation, any order),
  ``eager-revoke-all`` (the revocation callback between an assignment and the next JoinGroup),
  ``static-rejoin`` and ``converges`` (bounded), the history half of ``generation-monotonic`` (a
  generation the coordinator rejected is dropped: the member loses, never revokes or re-claims,
  what it owned in it; :meth:`Monitor._rejected_generation_kept`), each leader's assignor round
  judged by what its assignor promises (``model.invariants.assignment``), and every predicate above.

Ownership. A running member *owns* what its application holds (``Member.owned``: from
``onPartitionsAssigned`` until ``onPartitionsRevoked`` / ``onPartitionsLost`` / shutdown; a crashed
process owns nothing). A *zombie* is an owner the group has already let go of: the client reset its
generation or member id (poll timeout, an error answer) and will report its partitions lost at its
next ``poll()``; or the coordinator no longer has its member id (expired, removed, replaced by a
restarted static member); or the coordinator formed a newer generation without it
(:func:`is_zombie`). Kafka fences a zombie's commits, and allows it to overlap the new owner for a
while, so overlap with a zombie is ``zombie-overlap``, a warning; only overlap between two members
the group still counts is a ``single-owner`` violation.

The model is faithful to Kafka, gaps included: :data:`KNOWN_GAPS` lists the violations Kafka 4.1
itself commits; the monitor marks them (``Violation.known_kafka_gap``) instead of hiding them.
docs/protocol-model.md states every invariant precisely.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from model import events as ev
from model import system as sy
from model.assignors import assign as run_assignor
from model.assignors.sticky_claims import StickyAssignorFailure
from model.classic import coordinator as co
from model.classic import member as mb
from model.classic.member import Member, MemberState
from model.invariants import assignment as asg
from model.invariants import delivery as dl
from model.messages import (
    NO_GENERATION,
    UNKNOWN_MEMBER_ID,
    Errors,
    HeartbeatResponse,
    JoinGroupResponse,
    OffsetCommitRequest,
    SyncGroupResponse,
)
from model.system import Action, SystemState
from model.types import RebalanceProtocol, TopicPartition

Event = dict[str, Any]

SINGLE_OWNER = "single-owner"
ZOMBIE_OVERLAP = "zombie-overlap"
SUBSCRIBED_ONLY = "subscribed-only"
COMPLETE = "complete"
REVOKE_BEFORE_ASSIGN = "revoke-before-assign"
EAGER_REVOKE_ALL = "eager-revoke-all"
GENERATION_MONOTONIC = "generation-monotonic"
STATIC_REJOIN = "static-rejoin"
CONVERGES = "converges"
COMMIT_OWNED_ONLY = "commit-owned-only"
REBALANCE_WITHIN_TIMEOUT = "rebalance-within-timeout"
LIVE_MEMBER_KEPT = "live-member-kept"
SETTLED_GROUP_READS = "settled-group-reads"

#: The invariants this module checks (all catalogue ids; zombie-overlap is a warning). Each
#: leader's assignor round is also judged by what its assignor promises (``balanced``, ``sticky``,
#: ``revoke-only-moved``, ... from ``model.invariants.assignment``).
CHECKED = (SINGLE_OWNER, ZOMBIE_OVERLAP, SUBSCRIBED_ONLY, COMPLETE, REVOKE_BEFORE_ASSIGN, EAGER_REVOKE_ALL,
           GENERATION_MONOTONIC, STATIC_REJOIN, CONVERGES, COMMIT_OWNED_ONLY, REBALANCE_WITHIN_TIMEOUT,
           LIVE_MEMBER_KEPT, SETTLED_GROUP_READS, "balanced", "sticky", "revoke-only-moved")
WARNINGS = frozenset({ZOMBIE_OVERLAP})


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: str  # catalogue id
    time: int
    message: str
    members: tuple[str, ...] = ()
    partitions: tuple[TopicPartition, ...] = ()
    known_kafka_gap: str | None = None  # set when Kafka itself behaves this way (see KNOWN_GAPS)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"invariant": self.invariant, "time": self.time, "message": self.message,
                               "members": list(self.members), "partitions": [tp.to_json() for tp in self.partitions]}
        if self.known_kafka_gap is not None:
            out["known_kafka_gap"] = self.known_kafka_gap
        return out


#: Violations the model finds in Kafka's own behaviour (it is faithful to Kafka, gaps included).
KNOWN_GAPS = {
    "static-rejoin-keeps-stale-assignment":
        "a static member restarting into a Stable group takes its old place without a rebalance unless the "
        "selected assignor would change (KIP-345; GroupMetadataManager."
        "updateStaticMemberThenRebalanceOrCompleteJoin). The group keeps an assignment computed for an earlier "
        "situation: partitions added since (a restarted leader skips the assignment and snapshots the new "
        "metadata, KIP-814), topics the member now subscribes to, or partitions a cooperative member had "
        "revoked for a follow-up rebalance that died with it stay without an owner until some other rebalance",
    "static-zombie-rejoin": "a static member whose application stalled across a rebalance boundary is kept by the "
                            "coordinator but left out of the new generation (a zombie); if it polls again before a "
                            "heartbeat or commit tells it so, it rejoins with its old generation, is accepted into the "
                            "next one, and only then revokes -- not loses -- the partitions given away meanwhile, so "
                            "for a moment the group counts two owners (without enable.auto.commit; the auto-commit in "
                            "onJoinPrepare is answered ILLEGAL_GENERATION and makes it lose them instead). Found by "
                            "this model; reproduced on Apache Kafka 4.1.1 (python -m conformance.kafka.findings "
                            "static-zombie-rejoin; evidence in tests/traces/samples/kafka-4.1.1-findings/"
                            "static-zombie-rejoin)",
    "load-forgets-generation":
        "a generation formed when the coordinator moved, but not yet stored (the leader's SyncGroup not yet "
        "handled), is forgotten: the new coordinator loads the last group metadata record, so the group's "
        "generation goes back and the next rebalance reuses the number (GroupMetadataManager replay / onLoaded). "
        "Members of the lost generation own nothing from it (it had no assignment) and are told "
        "ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID when they next ask",
    "rebalance-timeout-too-short":
        "a rebalance timeout shorter than max.poll.interval.ms (a client that lets the two differ) or no longer "
        "than heartbeat.interval.ms (a Java consumer with max.poll.interval.ms that low) is accepted by the client "
        "and the coordinator alike, and then a live member cannot rejoin before the join key fires: it learns of "
        "the rebalance at its next heartbeat and rejoins at its next poll. completeClassicGroupJoin removes it "
        "(rebalance timeout), its next poll rejoins, and the group rebalances again (live-member-kept, "
        "rebalance-within-timeout)",
    **dl.KNOWN_GAPS,
}


def short_rebalance_timeout(config: sy.SystemConfig) -> bool:
    """Is the rebalance timeout too short for a live member to rejoin in time (``rebalance-timeout-too-short``)?"""
    return config.rebalance_timeout_ms < config.max_poll_interval_ms \
        or config.rebalance_timeout_ms <= config.heartbeat_interval_ms


# -- ownership --------------------------------------------------------------------------------------


def is_zombie(state: SystemState, m: Member) -> bool:
    """Has the group already let go of this member (see the module docstring)?

    True when the client reset its generation or member id, when the coordinator no longer has its
    member id, or when the coordinator has formed a newer generation without it (its generation is
    older than the coordinator's and no JoinGroup answer for the current generation is on its way
    to it). Kafka fences such a member's commits (UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION).
    """
    gen = m.generation
    if gen.generation_id == NO_GENERATION or gen.member_id == UNKNOWN_MEMBER_ID:
        return True
    group = state.group
    if co.member(group, gen.member_id) is None:
        return True
    if gen.generation_id < group.generation:
        return not any(isinstance(r, JoinGroupResponse) and r.generation == group.generation
                       for r in state.network.responses_for(m.conn))
    return False


def owners(state: SystemState) -> dict[TopicPartition, list[Member]]:
    """Every owned partition with the running members that own it."""
    result: dict[TopicPartition, list[Member]] = {}
    for m in sy.running(state):
        for tp in m.owned:
            result.setdefault(tp, []).append(m)
    return result


def _overlaps(state: SystemState) -> tuple[list[Violation], list[Violation]]:
    single: list[Violation] = []
    zombie: list[Violation] = []
    held = [m.owned for m in sy.running(state) if m.owned]
    if sum(map(len, held)) == len(frozenset().union(*held)):
        return single, zombie  # no partition has two owners (the usual case, checked without sorting)
    for tp, ms in sorted(owners(state).items()):
        if len(ms) < 2:
            continue
        live = [m.name for m in ms if not is_zombie(state, m)]
        names = tuple(m.name for m in ms)
        if len(live) >= 2:
            single.append(Violation(SINGLE_OWNER, state.now, f"{tp} is owned by {', '.join(live)} at once",
                                    tuple(live), (tp,)))
        else:
            zombie.append(Violation(ZOMBIE_OVERLAP, state.now,
                                    f"{tp} is owned by {', '.join(names)}; all but {live[0] if live else 'none'} "
                                    "are zombies the group already let go", names, (tp,)))
    return single, zombie


def single_owner(state: SystemState) -> list[Violation]:
    """``single-owner``: no partition is owned by two members the group still counts."""
    return _overlaps(state)[0]


def zombie_overlap(state: SystemState) -> list[Violation]:
    """``zombie-overlap`` (warning): a zombie still owns a partition another member owns."""
    return _overlaps(state)[1]


# -- settled states -----------------------------------------------------------------------------------


def settled(state: SystemState) -> bool:
    """The group has converged: nothing is in flight or pending, the coordinator is Stable (or
    Empty with nobody running), every running member is STABLE in the coordinator's generation
    with exactly what the coordinator stored for it, no member wants to rejoin, no one is stalled,
    and the coordinator counts no member whose process is gone."""
    if not state.network.empty():
        return False
    group = state.group
    ms = sy.running(state)
    if not ms:
        return group.state is co.EMPTY and not group.members and not group.pending_members
    if group.state is not co.STABLE or group.pending_members:
        return False
    ids = set()
    stored_by_id = {cm.member_id: cm.assignment for cm in group.members}
    for m in ms:
        if m.stalled or m.state is not MemberState.STABLE or m.join is not mb.JoinFuture.NONE \
                or m.coordinator_node != state.home.leader:  # it still has to find its coordinator
            return False
        if m.generation.generation_id != group.generation or mb.poll_has_work(m, state.metadata) \
                or m.rejoin_not_before is not None:  # a rejoin waiting for its round trip
            return False
        stored = stored_by_id.get(m.generation.member_id)
        if stored is None or frozenset(stored) != m.owned:
            return False
        ids.add(m.generation.member_id)
    return ids == set(co.member_ids(group))


def _quiet_except(state: SystemState, name: str) -> bool:
    """Is the group at rest apart from member ``name`` (whose process may be down)? The coordinator
    is Stable with no pending member, no other connection has a message in flight, and every other
    running member is STABLE with nothing to do."""
    if state.group.state is not co.STABLE or state.group.pending_members or sy.coordinator_due(state):
        return False
    p = sy.process(state, name)
    own = p.member.conn if p is not None and p.member is not None else None
    if any(c != own for c in state.network.request_conns()) or any(c != own for c in state.network.response_conns()):
        return False
    for m in sy.running(state):
        if m.name == name:
            continue
        if m.stalled or m.state is not MemberState.STABLE or m.join is not mb.JoinFuture.NONE \
                or mb.poll_has_work(m, state.metadata):
            return False
    return True


def complete(state: SystemState) -> list[Violation]:
    """``complete``: in a settled state every partition of every topic some running member
    subscribes to (and that exists, as far as the leader's metadata snapshot knows) is owned.
    Partitions added since the leader's last refresh (``metadata.max.age.ms``) wait for it in
    Kafka too: a group is Stable with them unowned for up to that long."""
    return _unowned(state) if settled(state) else []


def _unowned(state: SystemState) -> list[Violation]:
    """:func:`complete` for a state known to be settled."""
    topics = sorted({t for m in sy.running(state) for t in m.subscription})
    leader = next((m for m in sy.running(state) if m.is_leader), None)
    wanted = mb.partitions_of(state.metadata if leader is None else leader.metadata, tuple(topics))
    owned = frozenset(tp for m in sy.running(state) for tp in m.owned)
    missing = tuple(sorted(wanted - owned))
    if not missing:
        return []
    return [Violation(COMPLETE, state.now, f"stable generation {state.group.generation} leaves "
                      f"{', '.join(map(str, missing))} without an owner", (), missing)]


# -- transition predicates ------------------------------------------------------------------------------


MemberChange = tuple[Member | None, Member | None]  # a process's running member before and after (None: down)


def _process_changes(before: SystemState, after: SystemState) -> list[MemberChange] | None:
    """The running member before and after of every process entry this transition replaced, or
    None when a process was added (the entries no longer line up). States share the entries of
    unchanged processes, so an entry that is the very same object holds the very same member."""
    if after.processes is before.processes:
        return []
    if len(after.processes) != len(before.processes):
        return None
    return [(p.member, q.member) for (_, p), (_, q) in zip(before.processes, after.processes, strict=True)
            if p is not q]


def _changed_members(before: SystemState, after: SystemState,
                     changes: list[MemberChange] | None = None) -> list[tuple[Member, Member]]:
    """(before, after) of every member that runs in both states, as the same incarnation, and
    whose value this transition changed (``changes``: :func:`_process_changes`, when the caller has
    it; None is also what it says when the entries do not line up, and then they are looked up by name)."""
    pairs = _process_changes(before, after) if changes is None else changes
    if pairs is None:
        pairs = [(m, sy.running_member(after, m.name)) for m in sy.running(before)]
    return [(m, n) for m, n in pairs if m is not None and n is not None and n is not m and n.conn == m.conn]


def _ownership_changed(changes: list[MemberChange] | None) -> bool:
    """Do the running members own anything other than before (a process started or ended, or a
    member's owned partitions changed)? ``changes``: :func:`_process_changes`."""
    return changes is None or any((m.owned if m else frozenset()) != (n.owned if n else frozenset())
                                  for m, n in changes)


def generation_monotonic(before: SystemState, after: SystemState,
                         changed: list[tuple[Member, Member]] | None = None) -> list[Violation]:
    """``generation-monotonic``: the coordinator's generation never goes down; a member's never
    goes down except to none (-1) when the member is reset. (``changed``: the transition's
    :func:`_changed_members`, when the caller has it.)"""
    out: list[Violation] = []
    if after.group.generation < before.group.generation:
        moved = after.home is not before.home  # a new coordinator loaded the group from the log
        out.append(Violation(GENERATION_MONOTONIC, after.now, f"the coordinator's generation went from "
                             f"{before.group.generation} to {after.group.generation}",
                             known_kafka_gap="load-forgets-generation" if moved else None))
    for m, n in _changed_members(before, after) if changed is None else changed:
        old, new = m.generation.generation_id, n.generation.generation_id
        if new < old and new != NO_GENERATION:
            out.append(Violation(GENERATION_MONOTONIC, after.now,
                                 f"{m.name}'s generation went from {old} to {new}", (m.name,)))
    return out


def _joined(before: Member, after: Member) -> bool:
    """Did this transition send a JoinGroup for this member?"""
    return after.join is mb.JoinFuture.JOIN and (before.join is not mb.JoinFuture.JOIN
                                                 or after.join_sent_generation != before.join_sent_generation
                                                 or after.joined_subscription != before.joined_subscription)


def eager_revoke_all(before: SystemState, after: SystemState,
                     changed: list[tuple[Member, Member]] | None = None) -> list[Violation]:
    """``eager-revoke-all`` (state part): an eager member owns nothing when it sends JoinGroup."""
    out: list[Violation] = []
    for m, n in _changed_members(before, after) if changed is None else changed:
        if m.config.protocol is not RebalanceProtocol.EAGER or not _joined(m, n) or not n.owned:
            continue
        out.append(Violation(EAGER_REVOKE_ALL, after.now,
                             f"{m.name} (eager) rejoins still owning {', '.join(map(str, sorted(n.owned)))}",
                             (m.name,), tuple(sorted(n.owned))))
    return out


def subscribed_only(after: SystemState, events: Iterable[Event]) -> list[Violation]:
    """``subscribed-only``: a member is assigned (by its own callback, or in the coordinator's
    stored assignment) only partitions of topics it subscribes to."""
    out: list[Violation] = []
    for e in events:
        name = e["name"]
        if name == ev.PARTITIONS_ASSIGNED:
            m = sy.running_member(after, e["member"])
            if m is None:
                continue
            wrong = tuple(tp for tp in ev.partitions_of(e) if tp.topic not in m.subscription)
            if wrong:
                out.append(Violation(SUBSCRIBED_ONLY, e["timestamp"], f"{m.name} is assigned "
                                     f"{', '.join(map(str, wrong))} of topics it does not subscribe to",
                                     (m.name,), wrong))
        elif name == ev.COORDINATOR_STABLE:
            group = after.group
            for member_id, tps in e.get("assignment", {}).items():
                cm = co.member(group, member_id)
                if cm is None:
                    continue
                topics = {t for pname, meta in cm.protocols if pname == group.protocol_name for t in meta.topics}
                wrong = tuple(TopicPartition(p["topic"], p["partition"]) for p in tps if p["topic"] not in topics)
                if wrong:
                    out.append(Violation(SUBSCRIBED_ONLY, e["timestamp"], f"generation {group.generation} "
                                         f"assigns {member_id} {', '.join(map(str, wrong))} of topics it does "
                                         "not subscribe to", (member_id,), wrong))
    return out


def commits_fenced(before: SystemState, action: Action, after: SystemState) -> list[Violation]:
    """``commit-owned-only``: an OffsetCommit the coordinator accepts comes from a
    member the group still counts (not a zombie), for partitions no other running member owns.
    (The model consumes no records, so the consuming half has nothing to look at.) A commit that
    arrives after its sender closed is not judged: it was sent while the sender owned them."""
    if not isinstance(action, sy.DeliverRequest):
        return []
    request = before.network.head_request(action.conn)
    if not isinstance(request, OffsetCommitRequest) or after.group.offsets == before.group.offsets:
        return []
    committer = sy.member_by_conn(after, action.conn)
    if committer is None:
        return []
    tps = tuple(tp for tp, _ in request.offsets)
    if is_zombie(after, committer):
        return [Violation(COMMIT_OWNED_ONLY, after.now, f"the coordinator accepted {committer.name}'s commit of "
                          f"{', '.join(map(str, tps))} at generation {request.generation}, though the group "
                          f"is at generation {after.group.generation} without it", (committer.name,), tps)]
    others = [(m.name, tp) for m in sy.running(after) if m.name != committer.name and not is_zombie(after, m)
              for tp in tps if tp in m.owned]
    if others:
        return [Violation(COMMIT_OWNED_ONLY, after.now, f"{committer.name} committed "
                          f"{', '.join(str(tp) for _, tp in others)} while {others[0][0]} owns them",
                          (committer.name, others[0][0]), tuple(tp for _, tp in others))]
    return []


# -- the monitor --------------------------------------------------------------------------------------


def rebalance_bound(state: SystemState) -> int:
    """``converges``' base bound: 1 rebalance for an eager group, 2 when any member is cooperative
    (the first withholds moving partitions, the second hands them out).

    The :class:`Monitor` adds one for every generation in which a SyncGroup was answered
    REBALANCE_IN_PROGRESS after the last disturbance: that member's sync lost the race against
    another member's follow-up JoinGroup, so it learns what to revoke one round later (Kafka 4.x
    rejoins without resetting, KAFKA-14639). Kafka's cooperative protocol really does take that
    extra round; the model finds it whenever deliveries interleave that way.
    """
    if any(m.config.protocol is RebalanceProtocol.COOPERATIVE for m in sy.running(state)):
        return 2
    return 1


def membership(state: SystemState) -> frozenset[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """The group's membership as the coordinator sees it: (member id, subscribed topics, assignor
    names) of every member. Owned partitions and generations in the metadata are left out: a
    cooperative member rejoining with fewer partitions is not a membership change."""
    return frozenset((m.member_id, tuple(sorted({t for _, meta in m.protocols for t in meta.topics})),
                      tuple(name for name, _ in m.protocols)) for m in state.group.members)


# Not producing records (sy.GROUP_FAULTS): with a producer every few hundred ms, the converges count
# would restart at every append and a pending static-rejoin check would be dropped at the next one.
# A frozen process thawing is a disturbance as a stalled one resuming is (its timers fire at once).
_DISTURBING = (*sy.GROUP_FAULTS, sy.MemberResumes, sy.MemberThaws)


def _disturbed(before: SystemState, action: Action, after: SystemState, events: tuple[Event, ...]) -> bool:
    """Is this transition a *disturbance* for ``converges``: a fault or operator action other than
    producing records, a stalled member coming back or leaving on its poll timeout, a leader seeing
    changed metadata at its refresh (``metadata.max.age.ms``: Kafka's group learns of added
    partitions only then), or any change of the coordinator's membership (a member added, removed
    or replaced, a subscription changed)?"""
    if isinstance(action, _DISTURBING):
        return True
    if isinstance(action, sy.HeartbeatThreadRuns):
        m, n = sy.running_member(before, action.member), sy.running_member(after, action.member)
        if m is not None and n is not None and n.generation.has_reset() and not m.generation.has_reset():
            return True  # the poll timeout made it leave
    if isinstance(action, sy.MemberPolls):
        m, n = sy.running_member(before, action.member), sy.running_member(after, action.member)
        if m is not None and n is not None and m.assignment_snapshot is not None and m.metadata != n.metadata:
            return True  # the leader's metadata refresh brought news (partitions added since its last one)
    if isinstance(action, sy.DeliverRequest | sy.CoordinatorTimerFires):
        old, new = before.group.members, after.group.members
        if old is new:
            return False
        if len(old) == len(new) and all(a is b or (a.member_id == b.member_id and a.protocols == b.protocols)
                                        for a, b in zip(old, new, strict=True)):
            return False  # the same members with the same protocols (a heartbeat, say): same membership
        return membership(before) != membership(after)
    return False


def convergence_horizon(config: sy.SystemConfig) -> int:
    """How long a fault-free group may take to settle before ``converges`` fails: the coordinator
    noticing a dead member (session timeout), then per allowed rebalance a heartbeat to notice it,
    the initial delay, the join phase and the sync phase (each up to the rebalance timeout)."""
    per_rebalance = (config.heartbeat_interval_ms + config.coordinator.initial_rebalance_delay_ms
                     + 2 * config.rebalance_timeout_ms)
    return config.session_timeout_ms + 2 * per_rebalance + config.max_poll_interval_ms


def _log_ends(state: SystemState) -> dict[TopicPartition, int]:
    """The log end offset of every partition that has records."""
    return dict(state.log)


def _in_settled_generation(state: SystemState, m: Member) -> bool:
    """Is ``m`` settled in the group's current generation: STABLE in it, with nothing to rejoin for and
    owning what the coordinator stored for it? (Heartbeats and commits may be in flight.)"""
    if m.state is not MemberState.STABLE or m.join is not mb.JoinFuture.NONE or m.rejoin_not_before is not None \
            or m.generation.generation_id != state.group.generation:
        return False
    cm = co.member(state.group, m.generation.member_id)
    return cm is not None and cm.assignment is not None and frozenset(cm.assignment) == m.owned


def all_alive(state: SystemState) -> bool:
    """Is every member alive, as ``rebalance-within-timeout`` needs: the group has a coordinator
    that every running member has found, no running member's application is stalled, and every
    member the coordinator counts is held by a running member (none crashed, left on its poll
    timeout, or restarted under a new id while the old one waits for its session to expire)."""
    leader = state.home.leader
    if leader is None:
        return False
    held = set()
    for _, p in state.processes:  # sy.running, unrolled: this runs at every transition of a rebalance
        m = p.member
        if m is None:
            continue
        if m.stalled_until is not None or m.coordinator_node != leader:
            return False
        held.add(m.generation.member_id)
    return all(cm.member_id in held for cm in state.group.members)


def rebalance_deadline(config: sy.SystemConfig) -> int:
    """``rebalance-within-timeout``'s bound: how long a rebalance may keep the group out of Stable
    when every member is alive. Kafka's classic coordinator bounds each phase by the group's rebalance
    timeout: the join phase ends when every member has rejoined or when the join key fires, one
    rebalance timeout after ``prepareRebalance`` (``GroupMetadataManager.prepareRebalance`` /
    ``completeClassicGroupJoin``; the first rebalance of an empty group waits
    group.initial.rebalance.delay.ms more, ``InitialDelayedJoin``), and the sync phase ends when
    the leader's SyncGroup stores the assignment or the pending-sync key fires one rebalance timeout
    after ``completeClassicGroupJoin`` (``schedulePendingSync``, KAFKA-12890)."""
    return config.coordinator.initial_rebalance_delay_ms + 2 * config.rebalance_timeout_ms


#: Removals for a timeout (``coordinator_member_removed`` reasons), as opposed to a LeaveGroup, a
#: static member replaced, or a KIP-394 pending member.
_TIMEOUT_REMOVALS = frozenset({"session-timeout", "rebalance-timeout", "sync-timeout"})


def live_members_removed(config: sy.SystemConfig, before: SystemState, events: Iterable[Event],
                         rebalance_started: int) -> list[Violation]:
    """``live-member-kept``: the coordinator removes no member for a timeout while that member is
    alive: its process runs, it has not left or reset its generation, its application polled within
    max.poll.interval.ms, and the coordinator's own heartbeat timer for it has not expired (it kept
    heartbeating).

    Why Kafka keeps such a member: the Java consumer sends max.poll.interval.ms as its rebalance
    timeout (``ConsumerCoordinator``, ``GroupRebalanceConfig``), its heartbeat thread learns of a
    rebalance (REBALANCE_IN_PROGRESS) and its next ``poll()``, due within max.poll.interval.ms of the
    last, rejoins -- before the join key fires (``completeClassicGroupJoin`` removes only members
    that have not rejoined); it sends SyncGroup as soon as its JoinGroup is answered (the
    pending-sync key); each heartbeat reschedules its heartbeat key, so the session expiration
    (``onMemberHeartbeatExpiration``) does not fire. That promise needs the last poll to come before
    the rebalance started (``rebalance_started``): a member that polled just after it, before its
    heartbeat told it, and then spent its poll interval busy rejoins after the join key fired, and
    Kafka removes it rightly. So a member whose application is busy (stalled) at the removal counts
    as alive only if it last polled before the rebalance started. A rebalance timeout shorter than the poll
    interval (possible only where the client lets the two differ) breaks that: a stable member busy
    between polls is kicked out by someone else's join, and its next poll rejoins and rebalances again.
    So does a rebalance timeout shorter than heartbeat.interval.ms (a Java consumer with
    max.poll.interval.ms below it): members learn of a rebalance only at their next heartbeat, after
    the join key fired, and the group thrashes. Both are configurations Kafka accepts and a group a
    person would call thrashing; the invariant says so.
    """
    out: list[Violation] = []
    for e in events:
        if e["name"] != ev.COORDINATOR_MEMBER_REMOVED or e.get("reason") not in _TIMEOUT_REMOVALS:
            continue
        cm = co.member(before.group, e["member_id"])
        m = next((m for m in sy.running(before) if m.generation.member_id == e["member_id"]), None)
        if cm is None or m is None or m.generation.has_reset():
            continue
        if cm.heartbeat_deadline is None or cm.heartbeat_deadline <= before.now \
                or before.now - m.last_poll >= config.max_poll_interval_ms \
                or (m.stalled and m.last_poll >= rebalance_started):
            continue  # dead, or its poll timer expired (Timer.isExpired: at the deadline), or busy too late
        out.append(Violation(LIVE_MEMBER_KEPT, e["timestamp"], f"the coordinator removed {m.name} "
                             f"({e['member_id']}, {e['reason']}) although it was alive: it polled "
                             f"{before.now - m.last_poll} ms before (max.poll.interval.ms "
                             f"{config.max_poll_interval_ms}) and its heartbeat timer runs until "
                             f"{cm.heartbeat_deadline} ms (rebalance timeout {config.rebalance_timeout_ms} ms)",
                             (m.name,), tuple(sorted(m.owned)),
                             "rebalance-timeout-too-short" if short_rebalance_timeout(config) else None))
    return out


_FENCING = frozenset({Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_INSTANCE_ID})
_REJECTING = frozenset({Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID})


@dataclass(frozen=True, slots=True)
class _Rejection:
    """The coordinator told ``member`` that ``generation`` is no longer its own (see
    :meth:`Monitor._rejected_generation`): what it owned then, and how it was told."""

    member: str
    generation: int
    owned: frozenset[TopicPartition]
    told: str  # e.g. "SyncGroup answered ILLEGAL_GENERATION at 43000 ms"


@dataclass
class _StaticCheck:
    member: str
    expected: frozenset[TopicPartition]
    since: int


@dataclass
class Monitor:
    """Checks every invariant of this module along one run; feed it each transition.

    ``violations`` collects everything found (warnings included, see :data:`WARNINGS`); a repeated
    state violation (the same invariant, members and partitions as in the previous state) is
    recorded once, when it starts. Call :meth:`finish` at the end of the run for the bounded
    properties.
    """

    config: sy.SystemConfig
    violations: list[Violation] = field(default_factory=list)
    rebalances_since_disturbance: int = 0
    raced_generations: set[int] = field(default_factory=set)  # SyncGroups answered REBALANCE_IN_PROGRESS
    last_disturbance: int = 0
    settled_since_disturbance: bool = False
    bound: int = 1
    max_rebalances_after_faults: int = 0
    _ongoing: set[tuple[str, tuple[str, ...], tuple[TopicPartition, ...]]] = field(default_factory=set)
    _assigned: dict[tuple[TopicPartition, int], str] = field(default_factory=dict)
    _revoked: dict[tuple[TopicPartition, int], str] = field(default_factory=dict)
    _must_revoke: dict[str, bool] = field(default_factory=dict)  # eager conn -> assigned something since last revoke
    _static: dict[str, _StaticCheck] = field(default_factory=dict)
    _told_stale: set[str] = field(default_factory=set)  # conns answered a fencing error while owning
    _rejections: dict[str, _Rejection] = field(default_factory=dict)  # conn -> its rejected generation
    _reported_at: int = -1  # the disturbance a converges violation was last reported for
    _static_rejoined_generation: int = -1  # last generation a static member rejoined with no rebalance
    _generation: int = 0
    _delivery: dl.DeliveryMonitor | None = None
    _unsettled_since: int | None = None  # rebalance-within-timeout: start of the judged rebalance window
    _stuck_reported: bool = False  # ... a violation was reported for the current window
    _rebalance_started: int = 0  # when the coordinator last entered PreparingRebalance
    # settled-group-reads: (member, partition) -> (position, since when it has lagged at that position,
    # reported already)
    _lagging: dict[tuple[str, TopicPartition], tuple[int, int, bool]] = field(default_factory=dict)
    _lag_inputs: tuple[Any, ...] | None = None  # the values _lag last looked at, and what lagged then
    _lag_found: list[tuple[str, TopicPartition, int]] = field(default_factory=list)
    _lag_sampled_at: int = -1
    _alive_inputs: tuple[Any, ...] | None = None  # the values all_alive last looked at, and its answer
    _alive: bool = False
    _owners_changed: bool = False  # some member's owned partitions changed since the last state check
    # Look at every member after every transition instead of only at those the transition changed (the
    # definition the shortcuts must agree with: tests/model/test_monitor_incremental.py runs both).
    from_scratch: bool = False

    def __post_init__(self) -> None:
        d = self.config.delivery
        if d is not None:  # records are modelled: their invariants are checked too (model.invariants.delivery)
            self._delivery = dl.DeliveryMonitor(d.auto_offset_reset, self.config.auto_commit and d.processing == "async")

    @property
    def checked(self) -> tuple[str, ...]:
        """The invariants this monitor checks: the protocol's, and the delivery ones for a run with records."""
        return CHECKED + (dl.CHECKED if self._delivery is not None else ())

    def failed(self) -> list[Violation]:
        return [v for v in self.violations if v.invariant not in WARNINGS]

    # -- per transition --------------------------------------------------------------------------

    def observe(self, before: SystemState, action: Action, after: SystemState, events: tuple[Event, ...]) -> None:
        found: list[Violation] = []
        changes = None if self.from_scratch else _process_changes(before, after)
        changed = _changed_members(before, after, changes)
        found += generation_monotonic(before, after, changed)
        found += eager_revoke_all(before, after, changed)
        found += subscribed_only(after, events)
        found += commits_fenced(before, action, after)
        found += self._history(before, action, after, events)
        if self._delivery is not None and events:
            seen = len(self._delivery.findings)
            self._delivery.observe(events, dict(after.group.offsets))
            found += [Violation(f.invariant, f.time, f.message, (f.member,), (f.tp,), f.known_gap)
                      for f in self._delivery.findings[seen:]]
        self.violations.extend(found)
        if not self._owners_changed:
            self._owners_changed = _ownership_changed(changes)
        # Ownership only changes with a callback, a shutdown or the coordinator's events (and who
        # counts as a zombie matters only while partitions overlap): unless an overlap is ongoing
        # or some member's partitions changed since the last look, the answer is still "none".
        if events and (self._ongoing or self._owners_changed):
            self._owners_changed = False
            self._state_checks(after)
        self._convergence(before, action, after, events)
        # a removal is judged against the rebalance under way before this transition started another
        self.violations.extend(live_members_removed(self.config, before, events, self._rebalance_started))
        if any(e["name"] == ev.COORDINATOR_REBALANCE for e in events):
            self._rebalance_started = after.now
        self._rebalance_window(action, after, events)
        if self._delivery is not None:
            # Sampled once per simulated ms (the first transition that reaches it): a window only
            # starts later that way, and whatever would restart one between two samples -- a
            # rebalance, a fault -- is seen at its own transition here.
            if after.group.state is not co.STABLE or isinstance(action, sy.GROUP_FAULTS):
                self._lagging.clear()
            elif after.now != self._lag_sampled_at:
                self._lag_sampled_at = after.now
                self._lag(after, after.now)

    def _state_checks(self, state: SystemState) -> None:
        single, zombie = _overlaps(state)
        single = [self._carried_over(v) for v in single]
        current = single + zombie
        keys = {(v.invariant, v.members, v.partitions) for v in current}
        for v in current:
            if (v.invariant, v.members, v.partitions) not in self._ongoing:
                self.violations.append(v)
        self._ongoing = keys

    def _carried_over(self, v: Violation) -> Violation:
        """A single-owner overlap that was, just before, a zombie overlap of the same members and
        partitions: the zombie was let back in without losing them (``static-zombie-rejoin``)."""
        if any(name in self._told_stale for name in v.members):
            return v  # it was told it is stale (an error answer) and kept them anyway: not Kafka's gap
        if (ZOMBIE_OVERLAP, tuple(sorted(v.members)), v.partitions) in {
                (i, tuple(sorted(ms)), ps) for i, ms, ps in self._ongoing}:
            return replace(v, known_kafka_gap="static-zombie-rejoin")
        return v

    def _history(self, before: SystemState, action: Action, after: SystemState,
                 events: tuple[Event, ...]) -> list[Violation]:
        out: list[Violation] = []
        self._generation = after.group.generation
        if self._rejections:
            out += self._rejected_generation_kept(before, after, events)
        if isinstance(action, sy.DeliverResponse):
            out += self._assignor_round(before, action)
            self._note_rejection(before, action)
            r = before.network.head_response(action.conn)
            m = sy.member_by_conn(before, action.conn)
            if m is not None and m.owned and r is not None and r.error in _FENCING:
                self._told_stale.add(m.name)
        if self._told_stale:
            for m in sy.running(after):
                if m.name in self._told_stale and not m.owned:
                    self._told_stale.discard(m.name)
        if before.group.state is co.STABLE and after.group.state is co.STABLE and any(
                e["name"] == ev.COORDINATOR_MEMBER_REMOVED and e.get("reason") == "fenced" for e in events):
            self._static_rejoined_generation = after.group.generation
        for e in events:
            name = e["name"]
            member = e.get("member")
            if name in (ev.PARTITIONS_ASSIGNED, ev.PARTITIONS_REVOKED) and e.get("protocol") == "cooperative":
                out += self._revoke_before_assign(e)
            if member is None:
                continue
            m = sy.running_member(after, member) or sy.running_member(before, member)
            conn = m.conn if m is not None else member
            if name == ev.PARTITIONS_ASSIGNED and e.get("protocol") == "eager" and ev.partitions_of(e):
                # Only an assignment of something obliges a callback: a member whose generation was reset (a
                # poll timeout's LeaveGroup, a fencing error) and that owns nothing rejoins with none, since
                # ConsumerCoordinator.onJoinPrepare calls onPartitionsLost only for a non-empty set (its
                # valid-generation eager path calls onPartitionsRevoked, empty or not)
                self._must_revoke[conn] = True
            elif name in (ev.PARTITIONS_REVOKED, ev.PARTITIONS_LOST, ev.SHUTDOWN_COMPLETE):
                self._must_revoke.pop(conn, None)
            if name == ev.PARTITIONS_ASSIGNED and member in self._static:
                check = self._static.pop(member)
                got = frozenset(ev.partitions_of(e))
                if got != check.expected:
                    out.append(Violation(STATIC_REJOIN, e["timestamp"], f"static member {member} restarted at "
                                         f"{check.since} ms and got {sorted(map(str, got))} back instead of "
                                         f"{sorted(map(str, check.expected))}", (member,),
                                         tuple(sorted(got ^ check.expected))))
            if name == ev.GROUP_JOINED and self._must_revoke.get(conn):
                out.append(Violation(EAGER_REVOKE_ALL, e["timestamp"], f"{member} (eager) rejoined without "
                                     "revoking what it was assigned (no onPartitionsRevoked/Lost)", (member,)))
                self._must_revoke.pop(conn, None)
            if name == ev.PARTITIONS_REVOKED and m is not None:
                b = sy.running_member(before, member)
                if b is not None and b.generation.generation_id == NO_GENERATION and b.owned:
                    out.append(Violation(GENERATION_MONOTONIC, e["timestamp"], f"{member} reset its generation "
                                         "but revoked (rather than lost) what it owned", (member,)))
        if isinstance(action, sy.GROUP_FAULTS):
            # Another fault -- a leave or a coordinator move may make the coordinator rebalance in this
            # very transition -- and the static-rejoin promise no longer applies.
            self._static.clear()
        if any(e["name"] == ev.COORDINATOR_REBALANCE for e in events):
            for member, check in list(self._static.items()):
                self._static.pop(member)
                out.append(Violation(STATIC_REJOIN, after.now, f"static member {member} restarted at "
                                     f"{check.since} ms and the group rebalanced before it got its assignment "
                                     "back", (member,), tuple(sorted(check.expected))))
        if isinstance(action, sy.MemberRestarts):
            self._arm_static(before, action.member)
        return out

    # -- generation-monotonic: a rejected generation is dropped ---------------------------------------

    def _note_rejection(self, before: SystemState, action: sy.DeliverResponse) -> None:
        """Arm :meth:`_rejected_generation_kept` when a SyncGroup or Heartbeat answer rejects the
        generation the member still holds (the one the request went with; an answer about a
        generation the member already left changes nothing, ``generationUnchanged``)."""
        r = before.network.head_response(action.conn)
        m = sy.member_by_conn(before, action.conn)
        if m is None or r is None or r.error not in _REJECTING:
            return
        if isinstance(r, SyncGroupResponse) and m.join is mb.JoinFuture.SYNC:
            sent, what = m.join_sent_generation, "SyncGroup"
        elif isinstance(r, HeartbeatResponse) and m.heartbeats_in_flight:
            sent, what = m.heartbeats_in_flight[0], "Heartbeat"
        else:
            return
        if sent.generation_id == NO_GENERATION or m.generation != sent:
            return
        self._rejections[action.conn] = _Rejection(m.name, sent.generation_id, m.owned,
                                                   f"{what} answered {r.error.name} at {before.now} ms")

    def _rejected_generation_kept(self, before: SystemState, after: SystemState,
                                  events: tuple[Event, ...]) -> list[Violation]:
        """``generation-monotonic``, the part the proofs call *a rejected generation is dropped*.

        Once a SyncGroup or Heartbeat answer ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID has rejected
        generation ``g`` of a member that still held it, until that member reaches a newer
        generation (a JoinGroup answer already on its way) or its process ends:

        * it reports none of the partitions it owned at ``g`` as *revoked* -- they are lost; and
        * its next JoinGroup claims neither generation ``g`` (its subscription's generation, the
          member's own, is -1) nor any of those partitions (it owns none of them any more).

        Kafka: ``AbstractCoordinator`` -- ``SyncGroupResponseHandler`` / ``HeartbeatResponseHandler``
        call ``resetGenerationOnResponseError`` (generation to -1; UNKNOWN_MEMBER_ID also drops the
        member id) and ``resetStateAndRejoin`` sets ``needsJoinPrepare``; the next
        ``ConsumerCoordinator.onJoinPrepare`` sees the reset generation and calls
        ``onPartitionsLost`` for everything assigned (KAFKA-13419); ``ConsumerCoordinator.metadata``
        then builds the subscription from the reset generation and nothing owned. The eager sticky
        assignor's own memory of its last assignment is not a claim of the member's generation and
        is not judged here.
        """
        out: list[Violation] = []
        for conn, rej in list(self._rejections.items()):
            n = sy.member_by_conn(after, conn)
            if n is None:
                del self._rejections[conn]
                continue
            revoked = sorted(tp for e in events if e["name"] == ev.PARTITIONS_REVOKED and e.get("member") == rej.member
                             for tp in ev.partitions_of(e) if tp in rej.owned)
            b = sy.member_by_conn(before, conn)
            joined = b is not None and _joined(b, n)
            if revoked:
                out.append(Violation(GENERATION_MONOTONIC, after.now, f"{rej.member} revoked "
                                     f"{', '.join(map(str, revoked))}, owned in generation {rej.generation}, after "
                                     f"the coordinator rejected generation {rej.generation} ({rej.told}); a member "
                                     "whose generation was rejected reports its partitions lost", (rej.member,),
                                     tuple(revoked)))
                del self._rejections[conn]
            elif joined:
                kept = tuple(sorted(n.owned & rej.owned))
                if n.generation.generation_id == rej.generation or kept:
                    claims = f"claiming generation {n.generation.generation_id}" + (
                        f" and still owning {', '.join(map(str, kept))}" if kept else "")
                    out.append(Violation(GENERATION_MONOTONIC, after.now, f"{rej.member} rejoined {claims} after "
                                         f"the coordinator rejected generation {rej.generation} ({rej.told}); it "
                                         "must rejoin with generation -1, its partitions reported lost",
                                         (rej.member,), kept))
                del self._rejections[conn]
            elif n.generation.generation_id > rej.generation:
                del self._rejections[conn]
        return out

    def _assignor_round(self, before: SystemState, action: sy.DeliverResponse) -> list[Violation]:
        """When a leader gets the member list, judge the round it is about to run by what its
        assignor promises (``model.invariants.assignment``): the same inputs, the same assignor and
        mutants, so the same result the leader sends in its SyncGroup."""
        r = before.network.head_response(action.conn)
        if not isinstance(r, JoinGroupResponse) or r.error is not Errors.NONE or r.leader != r.member_id \
                or r.skip_assignment or r.protocol_name is None:
            return []
        subscriptions = [mb.subscription_of(jm) for jm in r.members]
        leader = sy.member_by_conn(before, action.conn)
        known = before.metadata if leader is None else mb.leader_metadata(leader, r, before.now, before.metadata)
        problem = asg.AssignmentProblem.of(dict(known), subscriptions)
        try:
            result = run_assignor(r.protocol_name, problem.partitions_per_topic, subscriptions,
                                  mutants=self.config.mutants)
        except StickyAssignorFailure:
            return []  # the leader fails as Kafka's does; the member model handles that
        verdicts = asg.check_round(r.protocol_name, problem, result)
        out: list[Violation] = []
        for inv in asg.violated(r.protocol_name, problem, result, verdicts):
            for finding in verdicts[inv].findings[:3]:
                out.append(Violation(inv, before.now, f"generation {r.generation}, {r.protocol_name}: "
                                     f"{finding.message}", finding.members, finding.partitions))
        return out

    def _arm_static(self, before: SystemState, name: str) -> None:
        p = sy.process(before, name)
        if p is None or p.config.instance_id is None or not _quiet_except(before, name):
            return
        member_id = dict(co.static_members(before.group)).get(p.config.instance_id)
        cm = None if member_id is None else co.member(before.group, member_id)
        if cm is None:
            return
        topics = {t for name, meta in cm.protocols if name == before.group.protocol_name for t in meta.topics}
        restart_topics = p.member.subscription if p.member is not None else p.topics
        if topics != set(restart_topics) or tuple(name for name, _ in cm.protocols) != p.config.assignors:
            return  # it comes back with another subscription: the promise is about the same member
        stored = cm.assignment
        self._static[name] = _StaticCheck(name, frozenset(stored or ()), before.now)

    def _revoke_before_assign(self, e: Event) -> list[Violation]:
        generation = e.get("generation", NO_GENERATION)
        who = e["member"]
        out: list[Violation] = []
        mine, other = (self._assigned, self._revoked) if e["name"] == ev.PARTITIONS_ASSIGNED else \
            (self._revoked, self._assigned)
        for tp in ev.partitions_of(e):
            key = (tp, generation)
            mine[key] = who
            peer = other.get(key)
            if peer is not None and peer != who:
                giver, taker = (peer, who) if e["name"] == ev.PARTITIONS_ASSIGNED else (who, peer)
                out.append(Violation(REVOKE_BEFORE_ASSIGN, e["timestamp"], f"{tp} is revoked by {giver} and "
                                     f"assigned to {taker} in the same generation {generation}",
                                     (giver, taker), (tp,)))
        if len(self._assigned) + len(self._revoked) > 100_000:  # keep the recent generations only
            floor = generation - 2
            self._assigned = {k: v for k, v in self._assigned.items() if k[1] >= floor}
            self._revoked = {k: v for k, v in self._revoked.items() if k[1] >= floor}
        return out

    # -- converges ---------------------------------------------------------------------------------

    def _convergence(self, before: SystemState, action: Action, after: SystemState,
                     events: tuple[Event, ...]) -> None:
        disturbed = _disturbed(before, action, after, events)
        if disturbed:
            self.last_disturbance = after.now
            self.rebalances_since_disturbance = 0
            self.raced_generations = set()
            self.settled_since_disturbance = False
        if isinstance(action, sy.DeliverResponse):
            r = before.network.head_response(action.conn)
            m = sy.member_by_conn(before, action.conn)
            if isinstance(r, SyncGroupResponse) and r.error is Errors.REBALANCE_IN_PROGRESS and m is not None:
                self.raced_generations.add(m.generation.generation_id)
        rebalances = sum(1 for e in events if e["name"] == ev.COORDINATOR_REBALANCE)
        if disturbed:
            # A fault that makes the coordinator handle several requests at once (a close waiting for
            # its JoinGroup and LeaveGroup to be answered) changes the membership once per request,
            # each a disturbance of its own: only the last rebalance is after the last disturbance.
            rebalances = min(rebalances, 1)
        if rebalances:  # a settled group that rebalances again, with no disturbance, keeps counting
            self.rebalances_since_disturbance += rebalances
            self.settled_since_disturbance = False
        if not self.settled_since_disturbance and after.network.empty() and settled(after):
            self.settled_since_disturbance = True
            bound = rebalance_bound(after) + len(self.raced_generations)
            self.max_rebalances_after_faults = max(self.max_rebalances_after_faults,
                                                   self.rebalances_since_disturbance)
            if self.rebalances_since_disturbance > bound and self._reported_at != self.last_disturbance:
                self._reported_at = self.last_disturbance
                self.violations.append(Violation(
                    CONVERGES, after.now, f"the group took {self.rebalances_since_disturbance} rebalances to "
                    f"settle after the last disturbance at {self.last_disturbance} ms (bound {bound})"))
            self.violations.extend(self._classify(v) for v in _unowned(after))

    # -- stuck or thrashing groups -----------------------------------------------------------------

    def _rebalance_window(self, action: Action, after: SystemState, events: tuple[Event, ...]) -> None:
        """``rebalance-within-timeout``: once a rebalance starts, the group settles (:func:`settled`)
        within :func:`rebalance_deadline` per rebalance the protocol needs (:func:`rebalance_bound`,
        plus one per generation whose SyncGroup lost the race, as for ``converges``), unless
        something disturbs it. The window opens at the coordinator's ``coordinator_rebalance`` and
        closes when the group has settled; a rebalance that follows another before the group settled
        (a thrashing group) stays in the same window. It restarts at every fault or operator action
        (a join, crash, leave, stall, subscription change, coordinator move ...) and at every state in
        which some member is not alive (:func:`all_alive`): only a group whose members are all alive
        is held to the bound."""
        if self._unsettled_since is None:
            if any(e["name"] == ev.COORDINATOR_REBALANCE for e in events):
                self._unsettled_since, self._stuck_reported = after.now, False
            else:
                return
        if after.network.empty() and settled(after):
            self._unsettled_since, self._stuck_reported = None, False
            return
        if isinstance(action, sy.GROUP_FAULTS) or not self._all_alive(after):
            self._unsettled_since, self._stuck_reported = after.now, False
            return
        self._judge_window(after.now, after)

    def _all_alive(self, state: SystemState) -> bool:
        """:func:`all_alive`, reused while the processes, the group and the home are the same objects."""
        seen = self._alive_inputs
        if seen is None or seen[0] is not state.processes or seen[1] is not state.group or seen[2] is not state.home:
            self._alive_inputs = (state.processes, state.group, state.home)
            self._alive = all_alive(state)
        return self._alive

    def _judge_window(self, now: int, state: SystemState) -> None:
        if self._unsettled_since is None or self._stuck_reported:
            return
        rebalances = rebalance_bound(state) + len(self.raced_generations)
        allowed = rebalances * rebalance_deadline(self.config)
        if now - self._unsettled_since > allowed:
            self._stuck_reported = True
            self.violations.append(Violation(
                REBALANCE_WITHIN_TIMEOUT, now, f"the group has been rebalancing ({state.group.state}, generation "
                f"{state.group.generation}) since {self._unsettled_since} ms with every member alive and no "
                f"fault, {now - self._unsettled_since} ms without settling; {rebalances} rebalance(s) complete "
                f"within {allowed} ms (the join phase and the sync phase, each within the rebalance timeout "
                f"{self.config.rebalance_timeout_ms} ms)",
                tuple(sorted(m.name for m in sy.running(state))), (),
                "rebalance-timeout-too-short" if short_rebalance_timeout(self.config) else None))

    def _lag(self, state: SystemState, now: int) -> None:
        """``settled-group-reads``: while the group is Stable with every member alive
        (:func:`all_alive`), no member settled in the current generation (:func:`_in_settled_generation`;
        heartbeats and commits may be in flight) keeps its position on a partition it owns below the log
        end for longer than max.poll.interval.ms. An alive member calls ``poll()`` at least that
        often, and a poll fetches from every assigned partition with a position
        (``KafkaConsumer.poll`` / ``FetchCollector``, rotating partitions so none starves); the
        clock restarts whenever the position moves, the group is not settled or a member is not
        alive. Partitions with no position yet (an OffsetFetch on its way, or auto.offset.reset=none
        with nothing committed) and partitions no member owns (``complete``'s business) are not judged."""
        # What lags depends on the group, the processes, the log and the coordinator's home only (not on
        # the messages in flight): states share those values until one changes, so the last answer is
        # reused while they are the very same objects (most transitions deliver a message).
        seen = self._lag_inputs
        if seen is not None and seen[0] is state.group and seen[1] is state.processes and seen[2] is state.log \
                and seen[3] is state.home:
            lagging = self._lag_found
        else:
            lagging = []
            if state.group.state is co.STABLE and self._all_alive(state):
                ends = _log_ends(state)
                for m in sy.running(state):
                    c = m.consumption
                    if c is None or not c.positions or not _in_settled_generation(state, m):
                        continue
                    lagging += [(m.name, tp, pos) for tp, pos in c.positions
                                if tp in m.owned and pos < ends.get(tp, 0)]
            self._lag_inputs = (state.group, state.processes, state.log, state.home)
            self._lag_found = lagging
        if not lagging:
            self._lagging.clear()
            return
        ends = _log_ends(state)
        now_lagging: dict[tuple[str, TopicPartition], tuple[int, int, bool]] = {}
        for name, tp, pos in lagging:
            old = self._lagging.get((name, tp))
            since, reported = (old[1], old[2]) if old is not None and old[0] == pos else (now, False)
            if not reported and now - since > self.config.max_poll_interval_ms:
                reported = True
                self.violations.append(Violation(
                    SETTLED_GROUP_READS, now, f"{name} has left {tp} unread at offset {pos} (log end "
                    f"{ends.get(tp, 0)}) for {now - since} ms while it is settled in the stable group and every "
                    f"member alive (max.poll.interval.ms {self.config.max_poll_interval_ms})", (name,), (tp,)))
            now_lagging[(name, tp)] = (pos, since, reported)
        self._lagging = now_lagging

    def _classify(self, v: Violation) -> Violation:
        """Mark a ``complete`` violation in a generation a static member rejoined without a
        rebalance (``static-rejoin-keeps-stale-assignment``)."""
        if self._static_rejoined_generation != self._generation:
            return v
        return replace(v, known_kafka_gap="static-rejoin-keeps-stale-assignment")

    def finish(self, final: SystemState) -> list[Violation]:
        """End of the run: a group that has had time to settle since the last disturbance but did
        not fails ``converges``; a pending static-rejoin check that never completed fails too if
        the member had a session timeout's worth of time."""
        out: list[Violation] = []
        horizon = convergence_horizon(self.config)
        if not self.settled_since_disturbance and final.now - self.last_disturbance > horizon:
            out.append(Violation(CONVERGES, final.now, f"the group has not settled {final.now - self.last_disturbance}"
                                 f" ms after the last disturbance at {self.last_disturbance} ms "
                                 f"(allowed {horizon} ms)"))
        seen = len(self.violations)
        self._judge_window(final.now, final)
        if self._delivery is not None:
            self._lag(final, final.now)
        out += self.violations[seen:]
        del self.violations[seen:]
        for member, check in self._static.items():
            if final.now - check.since > self.config.session_timeout_ms:
                out.append(Violation(STATIC_REJOIN, final.now, f"static member {member} restarted at "
                                     f"{check.since} ms and never got its assignment back", (member,)))
        self.violations.extend(out)
        return out
