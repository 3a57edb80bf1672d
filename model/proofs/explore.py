"""The proofs bound to the code that runs: an exhaustive, bounded exploration of ``model.system`` itself.

The protocol-* and delivery-* inductions are about the symbolic encodings (``model.proofs.protocol_model``,
``model.proofs.delivery``). They say something about the executable model only if the executable model
and the encoding take the same steps. The seeded replays of ``model.proofs.replay`` sample that; this
module checks it *exhaustively at stated bounds*:

* every reachable state of ``model.system`` is enumerated breadth first, states deduplicated, over every
  interleaving of the enabled system actions (deliveries in any order across connections, polls,
  heartbeats, timers, the clock moving to its next deadline) and every placement of up to ``faults``
  faults -- a consumer starting, crashing, leaving; in the stall case also stalling (``MemberStalls``); in
  the freeze case its whole process stopping (``MemberFreezes``, thawed by the model at its deadline);
  in the delivery case a producer appending records -- for every member count up to ``members``, from
  the empty group and (``Bounds.settled_roots``) from the settled groups of fewer consumers;
* in every reachable state and on every transition the catalogue's invariants are checked on the
  concrete state (``model.invariants.protocol``: single-owner, generation-monotonic, eager-revoke-all,
  commit fencing), a coordinator timer that fires must change something, and a frozen process must not
  change until its thaw (:func:`frozen_findings`);
* forward tie: every transition is checked against the encoding's transition relation through the
  abstraction function (``model.proofs.replay.check_step``), the micro-step forced by the coordinator's
  answer where the answer decides it. Transitions with the same pair of abstractions and the same
  candidate shapes are one Z3 query (cached); ``unknown`` fails; a client-side disconnect with group
  traffic in flight is counted and not checked (:func:`cut`);
* converse tie (``converse=True``): at every expanded state, every micro-step the encoding allows from
  the abstraction is taken by some transition of the model from that state or a stutter successor,
  outside the stated over-approximations (``_converse``);
* the delivery tie (``model-explore-delivery``): every transition with records goes through
  ``model.proofs.delivery.check_transition``.

The tie's history (``abstraction.Tracker``) is path dependent; a state reached twice keeps the
history of the first path to it, so each transition checked is a transition of a real run.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import z3

from model import system as sy
from model.classic import member as mb
from model.consumption import DeliveryConfig
from model.invariants import protocol as pinv
from model.messages import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
)
from model.proofs import delivery as dl
from model.proofs import protocol_model as pm
from model.proofs import replay as rp
from model.proofs.abstraction import Tracker, Valuation, elements, max_generation, valuation
from model.proofs.core import Outcome, RunConfig, obligation, outcome
from model.proofs.solver import Prover, Query
from model.types import TopicPartition

Transition = rp.Transition

GROUPS: tuple[tuple[str, ...], ...] = (("range",), ("cooperative-sticky",))


@dataclass(frozen=True)
class Bounds:
    members: int
    partitions: int
    faults: int  # faults on one path, consumer starts included
    depth: int  # steps on one path
    max_states: int  # a safety net: reaching it is reported as not exhaustive (a failure)
    stalls: tuple[int, ...] = ()  # stall lengths (ms) in the fault alphabet: a consumer that stops polling
    variant: int = 0  # the timeouts (model.proofs.replay.replay_config)
    statics: bool = False  # consumers have group.instance.id (static membership, KIP-345)
    settled_roots: bool = False  # also explore from the settled groups of 1..members-1 consumers
    produce: int = 0  # records a producer appends in one step (0: no producer in the fault alphabet)
    freezes: tuple[int, ...] = ()  # freeze lengths (ms) in the fault alphabet: the whole process stops (SIGSTOP)
    settled_all: bool = False  # the settled roots include the group of all ``members`` consumers


@dataclass
class Finding:
    kind: str  # "invariant" | "tie" | "timer"
    what: str
    path: tuple[str, ...]


@dataclass
class Exploration:
    states: int = 0
    transitions: int = 0
    tie_queries: int = 0
    tie_cached: int = 0
    stutters: int = 0
    frontier: int = 0  # states at the depth bound whose successors were not explored
    exhausted: bool = True  # max_states not reached
    unknown: int = 0
    forced: int = 0  # transitions the coordinator's answer forces (a rejected heartbeat to reset on)
    thaws_within: int = 0  # thaws of a process frozen for less than its session timeout
    thaws_past: int = 0  # thaws of a process whose session timer expired while it was frozen
    disconnects: int = 0  # the client's own session timer expired: it dropped its connection (markCoordinatorUnknown)
    cut: int = 0  # tie: disconnects with a group request or answer in flight, not checked nor expanded (see _cut)
    micro_steps: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    converse: Converse | None = None


@dataclass
class _Node:
    """What the converse needs of one expanded state: its abstraction, the encoding's first micro-steps
    its transitions realise, and its stutter successors (the clock, a stall ending, a heartbeat pass)."""

    tracker: Tracker
    faults_left: bool
    path: tuple[str, ...]
    heads: set[tuple[str, str]] = field(default_factory=set)
    stutters: list[sy.SystemState] = field(default_factory=list)


@dataclass
class Converse:
    states: int = 0  # expanded states checked
    near_bound: int = 0  # not decided: a stutter path from them reaches the depth bound, and a step is missing
    near_bound_checked: int = 0  # a stutter path reaches the depth bound, yet the explored part realises every step
    queries: int = 0
    cached: int = 0
    realised: int = 0  # (micro-step, consumer) pairs the encoding allows and the model realises
    deferred: int = 0  # stalled consumers whose poll() steps were not required (summed over the states)
    budget: int = 0  # states where the path's fault budget is spent (fault micro-steps not required)
    unknown: int = 0
    unmatched: dict[str, int] = field(default_factory=dict)


def _faults(state: sy.SystemState, names: Iterable[str], assignors: tuple[str, ...],
            stalls: tuple[int, ...] = (), statics: bool = False, produce: int = 0,
            freezes: tuple[int, ...] = ()) -> list[sy.Action]:
    out: list[sy.Action] = [sy.RecordsProduced("t", produce)] if produce else []
    for n in names:
        p = sy.process(state, n)
        if p is None or p.member is None:
            out.append(sy.MemberStarts(n, ("t",), assignors, f"{n}-i" if statics else None))
        else:
            out.append(sy.MemberCrashes(n))
            if p.member.frozen:  # a frozen process can only be killed (MemberFreezes); it thaws by itself
                continue
            out.append(sy.MemberLeaves(n))
            if not p.member.stalled:
                out += [sy.MemberStalls(n, ms) for ms in stalls]
            out += [sy.MemberFreezes(n, ms) for ms in freezes]
    return out


def _frozen(v: Valuation) -> tuple[Any, ...]:
    return tuple(sorted((name, tuple(sorted(table.items(), key=repr))) for name, table in v.fields.items()))


def settled(start: sy.SystemState, names: Iterable[str], assignors: tuple[str, ...], statics: bool,
            config: sy.SystemConfig, mutants: frozenset[str], timeout_ms: int, res: Exploration, tie: bool,
            produce: int = 0, limit: int = 200
            ) -> tuple[sy.SystemState, Tracker, tuple[str, ...]] | None:
    """A settled group of the consumers ``names``, reached by one run of the executable model: they start,
    then the first enabled system action is taken until only the clock can move and every consumer is
    Stable with nothing in flight (with ``produce``, a producer appends that many records first). Each step of that run is checked like an explored one (invariants and,
    through the tie's history, the encoding): the exploration from the root extends a real run.
    None when the run does not settle within ``limit`` steps (the correct model settles in about 15)."""
    state, tracker = start, Tracker()
    path: tuple[str, ...] = ()
    actions: list[sy.Action] = [sy.MemberStarts(n, ("t",), assignors, f"{n}-i" if statics else None) for n in names]
    if produce:  # records to read: the settled group has consumed (and, committing, committed) them
        actions.insert(0, sy.RecordsProduced("t", produce))
    for _ in range(limit):
        if not actions:
            members = sy.running(state)
            enabled = sy.enabled(state)
            if members and all(m.state is mb.MemberState.STABLE for m in members) and state.network.empty() \
                    and all(isinstance(a, sy.ClockAdvances) for a in enabled):
                return state, tracker, path
            first: list[sy.Action] = [a for a in enabled if not isinstance(a, sy.ClockAdvances)]
            actions = first[:1] or list(enabled[:1])
            if not actions:
                return None
        action = actions.pop(0)
        result = sy.step(state, action, config)
        if result is None:
            return None
        after, events = result
        path = (*path, sy.describe(state, action))
        for what in state_findings(state, action, after):
            res.findings.append(Finding("invariant", what, path))
        nxt = tracker.copy()
        nxt.observe(state, action, after, events)
        check = rp.check_step(state, action, after, events, tracker, nxt, mutants, timeout_ms) if tie else None
        if check is not None and not check.ok:
            res.findings.append(Finding("tie", f"{check.action}: no sequence of the encoding's micro-steps", path))
        state, tracker = after, nxt
    return None


def frozen_findings(before: sy.SystemState, action: sy.Action, after: sy.SystemState) -> list[str]:
    """What a frozen process (``MemberFreezes``: SIGSTOP, a VM pause) must keep on one transition: it is
    stopped, so nothing of its state changes -- no heartbeat or poll, nothing read from its socket --
    until it is thawed, killed or frozen again; and the thaw changes only that it is frozen: its timers
    are wall-clock deadlines (``Heartbeat``'s session, heartbeat and poll timers are read against
    ``time.milliseconds()`` by ``AbstractCoordinator.HeartbeatThread.run``), so after the thaw they see
    the time that passed, and a session or poll timeout that ran out during the freeze fires at once."""
    out: list[str] = []
    for name, p in before.processes:
        m = p.member
        if m is None or not m.frozen:
            continue
        if isinstance(action, sy.MemberCrashes | sy.MemberRestarts | sy.MemberFreezes) and action.member == name:
            continue
        n = sy.running_member(after, name)
        if isinstance(action, sy.MemberThaws) and action.member == name:
            if n != dataclasses.replace(m, frozen_until=None):
                out.append(f"frozen: {name}'s thaw changed more than that it is frozen (its timers are deadlines)")
        elif n != m:
            out.append(f"frozen: {name}'s process is frozen, yet its state changed ({sy.describe(before, action)})")
    return out


def disconnects(state: sy.SystemState, action: sy.Action) -> bool:
    """Does this heartbeat-thread pass find the client's own session timer expired (no heartbeat answered
    for session.timeout.ms, ``heartbeat.sessionTimeoutExpired``), so the consumer marks the coordinator
    unknown and drops its connection? After a freeze past the session this is the first pass at the thaw."""
    if not isinstance(action, sy.HeartbeatThreadRuns):
        return False
    m = sy.running_member(state, action.member)
    return m is not None and m.coordinator_node is not None and state.now >= m.session_due


#: What a dropped connection fails without a word to the coordinator that the encoding can speak about.
_SILENT = (HeartbeatRequest, HeartbeatResponse, FindCoordinatorRequest, FindCoordinatorResponse)


def cut(state: sy.SystemState, action: sy.Action) -> bool:
    """A transition the forward tie does not check (and the tie's exploration does not expand): the
    consumer drops its connection (:func:`disconnects`) while a group request or answer other than a
    heartbeat's is in flight on it, or a SyncGroup of it is parked at the coordinator. The executable model
    fails each of them on the consumer's side at once (``model.system._disconnect``: a DisconnectException
    seen as COORDINATOR_NOT_AVAILABLE) and drops the parked SyncGroup's later answer (it goes to the old
    socket); the encoding has no micro-step that turns an answer in flight into an error, nor a ghost for
    an answer that goes to a closed socket of a live incarnation. A disconnect with only heartbeats in
    flight changes nothing symbolic and is checked (a stutter)."""
    if not isinstance(action, sy.HeartbeatThreadRuns) or not disconnects(state, action):
        return False
    m = sy.running_member(state, action.member)
    assert m is not None
    conn = m.conn
    return (any(not isinstance(r, _SILENT) for r in state.network.requests_for(conn))
            or any(not isinstance(r, _SILENT) for r in state.network.responses_for(conn))
            or any(cm.awaiting_sync == conn for cm in state.group.members))


def state_findings(before: sy.SystemState, action: sy.Action, after: sy.SystemState) -> list[str]:
    """The catalogue's invariants on one concrete transition (those that need no run history), and
    what a frozen process must keep (:func:`frozen_findings`)."""
    changed = pinv._changed_members(before, after)
    found = [*pinv.generation_monotonic(before, after, changed), *pinv.eager_revoke_all(before, after, changed),
             *pinv.commits_fenced(before, action, after), *pinv.single_owner(after)]
    out = [f"{v.invariant}: {v.message}" for v in found if v.known_kafka_gap is None]
    out += frozen_findings(before, action, after)
    if isinstance(action, sy.CoordinatorTimerFires) and after.group == before.group:
        out.append("timer: the coordinator's timer fired and changed nothing (it would fire for ever)")
    return out


def explore(assignors: tuple[str, ...], bounds: Bounds, *, mutants: frozenset[str] = frozenset(),
            tie: bool = True, converse: bool = False, timeout_ms: int = 20_000, stop_after: int = 3,
            config: sy.SystemConfig | None = None, on_step: Callable[[Transition, tuple[str, ...]], list[str]] | None = None
            ) -> Exploration:
    """Every state reachable within ``bounds`` for a group whose consumers all use ``assignors``.
    ``config`` replaces the timeouts of ``bounds.variant``; ``on_step`` checks each transition further
    (the delivery tie) and returns what it found wrong."""
    config = config or rp.replay_config(mutants, bounds.variant)
    names = [chr(ord("a") + i) for i in range(bounds.members)]
    start = sy.initial_state(config, [("t", bounds.partitions)])
    res = Exploration()
    seen: dict[sy.SystemState, int] = {start: 0}
    queue: deque[tuple[sy.SystemState, Tracker, int, int, tuple[str, ...]]] = deque([(start, Tracker(), 0, 0, ())])
    if bounds.settled_roots:
        for size in range(1, bounds.members + (1 if bounds.settled_all else 0)):
            root = settled(start, names[:size], assignors, bounds.statics, config, mutants, timeout_ms, res, tie,
                          bounds.produce)
            if root is not None and root[0] not in seen:
                seen[root[0]] = 0
                queue.append((root[0], root[1], 0, 0, root[2]))
    cache: dict[tuple[Any, ...], rp.StepCheck] = {}
    nodes: dict[sy.SystemState, _Node] = {}
    while queue and len(res.findings) < stop_after:
        state, tracker, depth, faults, path = queue.popleft()
        if depth >= bounds.depth:
            res.frontier += 1
            continue
        node = nodes.get(state) or _Node(tracker, False, path)
        node.faults_left = node.faults_left or faults < bounds.faults  # a state expanded again with fewer faults
        if converse and tie:
            nodes[state] = node
        system = sy.enabled(state)
        actions: list[tuple[sy.Action, int]] = [(a, 0) for a in system]
        if faults < bounds.faults:
            actions += [(a, 1) for a in _faults(state, names, assignors, bounds.stalls, bounds.statics, bounds.produce,
                                                bounds.freezes)]
        for action, cost in actions:
            result = sy.step(state, action, config)
            if result is None:
                continue
            after, events = result
            res.transitions += 1
            if rp.forced(state, action):
                res.forced += 1
            if isinstance(action, sy.MemberThaws):
                thawed = sy.running_member(state, action.member)
                if thawed is not None and state.now >= thawed.session_due:
                    res.thaws_past += 1
                else:
                    res.thaws_within += 1
            if disconnects(state, action):
                res.disconnects += 1
            step_path = (*path, sy.describe(state, action))
            for what in state_findings(state, action, after):
                res.findings.append(Finding("timer" if what.startswith("timer") else "invariant", what, step_path))
            if on_step is not None:
                for what in on_step((state, action, after, tuple(events)), step_path):
                    res.findings.append(Finding("delivery", what, step_path))
            if tie and cut(state, action):
                res.cut += 1
                continue
            nxt_tracker = tracker.copy()
            nxt_tracker.observe(state, action, after, events)
            if tie:
                check = _tie(state, action, after, events, tracker, nxt_tracker, mutants, timeout_ms, cache, res)
                if isinstance(action, sy.MemberStarts):
                    node.heads.add(("start", "*"))  # a new incarnation's fresh connection: any start
                if check.stutter:
                    node.stutters.append(after)
                    res.stutters += 1
                elif not check.ok:
                    if check.result == "unknown":
                        res.unknown += 1
                    res.findings.append(Finding("tie", f"{check.action}: no sequence of the encoding's micro-steps "
                                                f"({check.result}); {check.detail}", step_path))
                else:
                    head = check.micro_steps[0]
                    node.heads.add((head.split("(")[0], head.split("(", 1)[1].rstrip(")")))
                    if isinstance(action, sy.MemberLeaves):
                        # close() waits for the commits it has in flight (ConsumerCoordinator.close) and reads
                        # their answers before it ends; the encoding's close may end first and drop the answer,
                        # which an incarnation that ends never reads: the same close, stated in the report
                        for step in check.micro_steps:
                            if step.startswith("close("):
                                node.heads.add(("close", step.split("(", 1)[1].rstrip(")")))
                    for s in check.micro_steps:
                        key = s.split("(")[0]
                        res.micro_steps[key] = res.micro_steps.get(key, 0) + 1
            nf = faults + cost
            if seen.get(after, 10**9) <= nf:
                continue
            if len(seen) >= bounds.max_states:
                res.exhausted = False
                continue
            seen[after] = nf
            queue.append((after, nxt_tracker, depth + 1, nf, step_path))
    res.states = len(seen)
    if converse and tie and len(res.findings) < stop_after:
        res.converse = _converse(nodes, mutants, timeout_ms, res, stop_after)
    return res


def _tie(before: sy.SystemState, action: sy.Action, after: sy.SystemState, events: tuple[dict[str, Any], ...],
         tracker: Tracker, nxt: Tracker, mutants: frozenset[str], timeout_ms: int,
         cache: dict[tuple[Any, ...], rp.StepCheck], res: Exploration) -> rp.StepCheck:
    ks, ps, insts = elements([before, after], nxt)
    top = max_generation([before, after], nxt)
    gens = range(-1, top + 3)
    va, vb = valuation(before, tracker, ks, ps, insts, gens), valuation(after, nxt, ks, ps, insts, gens)
    key = (_frozen(va), _frozen(vb), repr(rp.shapes(before, action, after)), rp.forced(before, action))
    hit = cache.get(key)
    if hit is not None:
        res.tie_cached += 1
        return hit
    res.tie_queries += 1
    check = rp.check_step(before, action, after, events, tracker, nxt, mutants, timeout_ms)
    cache[key] = check
    return check


#: Fault micro-steps: the encoding takes them at any moment, the exploration only while the path's fault
#: budget lasts (``Bounds.faults``).
FAULT_STEPS = frozenset({"start", "crash", "close-commit", "close"})


#: The application thread's steps (poll()): a stalled or frozen consumer takes them after its stall ends.
POLL_STEPS = frozenset({"poll-complete-join", "poll-failed-join", "poll-join-prepare-commit", "poll-send-join"})

#: close(): the application calls it, so not while the process is frozen (``model.system._member_leaves``).
CLOSE_STEPS = frozenset({"close-commit", "close"})

#: The consumer's steps that start a rejoin (see ``_converse``).
REJOIN = frozenset({"poll-join-prepare-commit", "poll-send-join"})


def _realised(nodes: Mapping[sy.SystemState, _Node]) -> dict[sy.SystemState, tuple[set[tuple[str, str]], bool]]:
    """Per expanded state: the first micro-steps its transitions realise, looking through its stutter
    successors (the same abstraction: the clock moving, a stall ending, a heartbeat request delivered),
    and whether that set is complete. It is not where a stutter path leaves the explored part (reaches the
    depth bound): the set then holds what the explored part shows, a lower bound."""
    memo: dict[sy.SystemState, tuple[set[tuple[str, str]], bool]] = {}
    for root in nodes:
        if root in memo:
            continue
        stack: list[tuple[sy.SystemState, int]] = [(root, 0)]
        on_path: set[sy.SystemState] = set()
        while stack:
            st, i = stack.pop()
            node = nodes[st]
            if i == 0:
                on_path.add(st)
            if i < len(node.stutters):
                stack.append((st, i + 1))
                nxt = node.stutters[i]
                if nxt in nodes and nxt not in memo and nxt not in on_path:
                    stack.append((nxt, 0))
                continue
            out = set(node.heads)
            complete = True
            for nxt in node.stutters:
                if nxt in on_path and nxt not in memo:
                    continue  # a stutter cycle adds nothing
                sub = memo.get(nxt) if nxt in nodes else None
                if sub is None:
                    complete = False
                    continue
                out |= sub[0]
                complete = complete and sub[1]
            memo[st] = (out, complete)
            on_path.discard(st)
    return memo


def _converse(nodes: Mapping[sy.SystemState, _Node], mutants: frozenset[str], timeout_ms: int, res: Exploration,
              stop_after: int) -> Converse:
    """The converse of the tie, at every expanded state: every micro-step (and consumer) the encoding
    allows from the state's abstraction is realised by a transition of the executable model from that
    state or from a stutter successor -- except the stated over-approximations (``rp.OVER_APPROXIMATIONS``:
    timers at any moment, a fatal error at any moment, heartbeat-thread steps, join refusals; and a
    request the coordinator handles although its connection is muted behind a parked JoinGroup /
    SyncGroup, ``model.system.muted``, which the encoding does not model), fault micro-steps once the
    path's fault budget is spent, and steps of a stalled consumer. One Z3 query per distinct (abstraction,
    realised set): is there an allowed (micro-step, consumer) outside them? Each pair found is a
    divergence (the encoding allows what the code cannot do there). All states of one exploration are
    read in one finite universe (the union of their elements; an element a state does not know is an
    unused slot), so the relation's terms are built once per micro-step and consumer."""
    out = Converse()
    realised = _realised(nodes)
    names = [a.name for a in pm.ACTIONS if a.name not in rp.OVER_APPROXIMATIONS]
    own: dict[sy.SystemState, tuple[list[str], int]] = {}
    all_ks: set[str] = set()
    all_ps: set[str] = set()
    all_insts: set[str] = set()
    top = 0
    for state, node in nodes.items():
        ks, ps, insts = elements([state], node.tracker)
        gen = max_generation([state], node.tracker)
        own[state] = (ks, gen)
        all_ks.update(ks)
        all_ps.update(ps)
        all_insts.update(insts)
        top = max(top, gen)
    u = _Universe(sorted(all_ks), sorted(all_ps), sorted(all_insts), top, mutants)
    cache: dict[tuple[Any, ...], list[tuple[str, str]] | None] = {}
    for state, node in nodes.items():
        done, complete = realised[state]
        ks, _ = own[state]
        va = valuation(state, node.tracker, u.ks, u.ps, u.insts, u.gens)
        # a stalled consumer's application thread is stopped: its poll() steps wait for the stall's end; it
        # reads its answers only while a thread of it reads the socket -- the heartbeat thread once joined
        # (AbstractCoordinator.HeartbeatThread.run polls the client unless hasNotJoinedGroup() or failed),
        # stated here from Kafka, not read from the model's mb.can_receive; a frozen one reads nothing and
        # cannot close() either
        stalled = frozenset(m.conn for m in sy.running(state) if m.stalled)
        deaf = frozenset(m.conn for m in sy.running(state)
                         if m.frozen or m.fatal is not None or (m.stalled and not m.heartbeat_thread_enabled))
        frozen = frozenset(m.conn for m in sy.running(state) if m.frozen)
        # requests the executable model cannot deliver now: muted connections, and all of them while a
        # coordinator timer is due (the model fires due timers first; the encoding interleaves freely)
        parked = set(ks) if sy.coordinator_due(state) else sy.muted(state.group, state.network)
        # the encoding lets a consumer start a rejoin at any moment (it has no rejoin-needed flag: a
        # subscription or metadata change would do it, and those are outside the exploration's alphabet)
        settled = {m.conn for m in sy.running(state) if not m.rejoin_needed}
        started = ("start", "*") in done
        skip = {(n, k) for n in names for k in ks
                if (n, k) in done or (n == "start" and started) or (n in FAULT_STEPS and not node.faults_left)
                or (k in stalled and n in POLL_STEPS) or (k in deaf and n.startswith("receive-"))
                or (k in frozen and n in CLOSE_STEPS)
                or (k in parked and n.startswith("coordinator-")) or (k in settled and n in REJOIN)}
        candidates = [(n, k) for n in names for k in ks if (n, k) not in skip]
        key = (_frozen(va), tuple(candidates))
        if key in cache:
            out.cached += 1
            found = cache[key]
        else:
            out.queries += 1
            found = u.unmatched(va, candidates, timeout_ms)
            cache[key] = found
        if found is None:
            out.unknown += 1
            res.findings.append(Finding("converse", "a converse query answered unknown", node.path))
            continue
        if not complete:
            # a stutter path reaches the depth bound: what the explored part realises may already cover every
            # allowed step (checked); if not, the rest may lie past the bound -- not decidable here, not a finding
            if found:
                out.near_bound += 1
                continue
            out.near_bound_checked += 1
        out.states += 1
        out.realised += sum(1 for n, k in done if n in names)
        out.budget += 0 if node.faults_left else 1
        out.deferred += len(stalled)
        for n, k in found:
            out.unmatched[n] = out.unmatched.get(n, 0) + 1
            if len(res.findings) < stop_after:
                res.findings.append(Finding("converse", f"the encoding allows {n}({k}) from the abstraction of this "
                                            "state; no transition of the executable model from it (or after the "
                                            "clock, a stall ending or a heartbeat) takes that step", node.path))
    return out


class _Universe:
    """One finite universe for the converse queries of an exploration, with the terms it needs (pinned
    fields, micro-step relations) built once: building z3 terms, not solving, is what these queries cost."""

    def __init__(self, ks: list[str], ps: list[str], insts: list[str], top: int, mutants: frozenset[str]) -> None:
        self.ks, self.ps, self.insts, self.mutants = ks, ps, insts, mutants
        self.gens = range(pm.NO_GEN, top + 3)
        self.u = rp.Universe.of(ks, ps, insts, top)
        self.s0, self.s1 = pm.State(self.u.sorts, "_cx0"), pm.State(self.u.sorts, "_cx1")
        self.c = z3.Const("converse_c", self.u.sorts.K)
        self.pins: dict[tuple[str, tuple[Any, ...], Any], Any] = {}
        self.relations: dict[tuple[str, str], Any] = {}

    def pin(self, v: Valuation) -> list[Any]:
        out: list[Any] = []
        for name, table in v.fields.items():
            for args, value in table.items():
                key = (name, args, value)
                term = self.pins.get(key)
                if term is None:
                    one = Valuation(v.ks, v.ps, v.insts, {name: {args: value}})
                    terms = rp.pin(self.s0, self.u, one)
                    term = terms[0] if terms else z3.BoolVal(True)
                    self.pins[key] = term
                out.append(term)
        return out

    def relation(self, name: str, k: str) -> Any:
        if (name, k) not in self.relations:
            self.relations[(name, k)] = pm.action_by_name(name).relation(self.s0, self.s1, self.u.ks[k], self.c, None,
                                                                         self.mutants)
        return self.relations[(name, k)]

    def unmatched(self, v: Valuation, candidates: list[tuple[str, str]], timeout_ms: int
                  ) -> list[tuple[str, str]] | None:
        """The (micro-step, consumer) pairs among ``candidates`` the encoding allows from ``v``; None on unknown."""
        if not candidates:
            return []
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*self.pin(v))
        choice = z3.Int("converse_choice")
        solver.add(z3.Or([z3.And(choice == i, self.relation(n, k)) for i, (n, k) in enumerate(candidates)]))
        found: list[tuple[str, str]] = []
        while True:
            answer = solver.check()
            if answer == z3.unknown:
                return None
            if answer == z3.unsat:
                return found
            i = solver.model().eval(choice).as_long()
            found.append(candidates[i])
            solver.add(choice != i)


def summary(results: Mapping[str, Exploration]) -> dict[str, Any]:
    return {name: {"states": r.states, "transitions": r.transitions, "tie_queries": r.tie_queries,
                   "rejected_heartbeats": r.forced,
                   **({"thaws_within_session": r.thaws_within, "thaws_past_session": r.thaws_past,
                       "client_disconnects": r.disconnects, "disconnects_not_checked": r.cut}
                      if r.thaws_within or r.thaws_past else {}),
                   "tie_cached": r.tie_cached, "stutters": r.stutters, "depth_frontier": r.frontier,
                   "exhaustive_within_bounds": r.exhausted}
            for name, r in results.items()}


# -- the obligations ----------------------------------------------------------------------------------

#: What ``--deep`` adds first, before any size grows: the parts the default run leaves out for time (the
#: freeze case's converse, both assignors in the stall and freeze cases, the freeze case from the settled
#: group of every consumer). The driver cannot interrupt an attempt, so the first one must stay small.
_DEEP_FIRST = {"converse_freeze": 1, "stall_groups": len(GROUPS), "freeze_groups": len(GROUPS), "freeze_all_roots": 1}


def _deepen(b: Any) -> dict[str, int]:
    if any(b.get(k) != v for k, v in _DEEP_FIRST.items()):
        return {**b, **_DEEP_FIRST, "max_states": b["max_states"] * 2}  # the roots of every consumer add states
    return {**b, "members": b["members"] + (1 if b["members"] < 3 else 0), "partitions": b["partitions"] + 1,
            "faults": b["faults"] + 1, "depth": b["depth"] + 10, "max_states": b["max_states"] * 4,
            "stall_members": b["stall_members"] + (1 if b["stall_members"] < 3 else 0),
            "stall_partitions": b["stall_partitions"] + 1, "stall_faults": b["stall_faults"] + 1,
            "stall_depth": b["stall_depth"] + 6,
            **({"freeze_partitions": b["freeze_partitions"] + 1, "freeze_faults": b["freeze_faults"] + 1,
                "freeze_depth": b["freeze_depth"] + 6} if b.get("freeze_members") else {})}


def cases(bounds: Mapping[str, int]) -> list[tuple[str, tuple[str, ...], Bounds]]:
    """The explored cases: from the empty group, 1..members dynamic consumers that start, crash and
    leave; and the stall case: static consumers (variant-1 timeouts: a rebalance timeout below the
    session timeout, so a stalled static member stays in the group while a rebalance completes without
    it, KIP-345), explored also from the settled groups of fewer consumers, with stalls of ``stall_ms`` in
    the fault alphabet -- the way a consumer misses a rebalance and then hears ILLEGAL_GENERATION."""
    out: list[tuple[str, tuple[str, ...], Bounds]] = []
    for members in range(1, bounds["members"] + 1):
        b = Bounds(members, bounds["partitions"], bounds["faults"], bounds["depth"], bounds["max_states"])
        for group in GROUPS:
            out.append((f"{members} consumer(s) x {b.partitions} partitions, {group[0]}, {b.faults} faults, "
                        f"{b.depth} steps", group, b))
    if bounds.get("stall_members", 0):
        b = Bounds(bounds["stall_members"], bounds["stall_partitions"], bounds["stall_faults"], bounds["stall_depth"],
                   bounds["max_states"], stalls=(bounds["stall_ms"],), variant=1, statics=True, settled_roots=True)
        for group in GROUPS[:bounds["stall_groups"]]:
            out.append((f"{b.members} static consumer(s) x {b.partitions} partitions, {group[0]}, from the empty "
                        f"and the settled groups, stalls of {bounds['stall_ms']} ms, {b.faults} faults, "
                        f"{b.depth} steps", group, b))
    if bounds.get("freeze_members", 0):
        within, past = bounds["freeze_ms"], bounds["freeze_past_ms"]
        b = Bounds(bounds["freeze_members"], bounds["freeze_partitions"], bounds["freeze_faults"],
                   bounds["freeze_depth"], bounds["max_states"], freezes=(within, past), variant=1, statics=True,
                   settled_roots=True, settled_all=bool(bounds.get("freeze_all_roots", 0)))
        for group in GROUPS[:bounds["freeze_groups"]]:
            out.append((f"{b.members} static consumer(s) x {b.partitions} partition(s), {group[0]}, from the empty and "
                        f"the settled groups, freezes of {within} ms (within the session) and {past} ms (past the "
                        f"session and the poll timeout), {b.faults} faults, {b.depth} steps", group, b))
    return out


def _run(cfg: RunConfig, defaults: Mapping[str, int], tie: bool) -> Outcome:
    bounds = dict(defaults)
    bounds.update(cfg.bounds or {})
    prover = Prover(cfg.timeout_ms)
    results: dict[str, Exploration] = {}
    for label, group, b in cases(bounds):
        kind = "freeze" if b.freezes else "stall" if b.stalls else "fresh"
        converse = tie and bool(bounds.get("converse" if kind == "fresh" else f"converse_{kind}"))
        r = explore(group, b, mutants=cfg.mutants, tie=tie, converse=converse, timeout_ms=cfg.timeout_ms)
        results[label] = r
        note = "; ".join(f"{f.kind}: {f.what[:400]} (after {' / '.join(f.path[-4:])})" for f in r.findings[:2])
        if not r.exhausted:
            note = (note + "; " if note else "") + f"state limit {b.max_states} reached: not exhaustive"
        what = ("every transition is a sequence of the encoding's micro-steps" if tie else
                "the catalogue's invariants hold in every reachable state and on every transition")
        if r.converse is not None:
            what += (f"; converse: at {r.converse.states} states every micro-step the encoding allows is taken by "
                     f"the model (through stutters), outside the stated over-approximations "
                     f"({r.converse.near_bound} states near the depth bound not checked)")
        prover.record(f"{label}: {r.states} states, {r.transitions} transitions -- {what}",
                      not r.findings and r.exhausted, note)
        if r.unknown:
            prover.queries.append(Query(f"{label}: {r.unknown} tie queries answered unknown", "unsat", "unknown"))
    frozen = [results[label] for label, _, b in cases(bounds) if b.freezes and label in results]
    if frozen:
        within, past = sum(r.thaws_within for r in frozen), sum(r.thaws_past for r in frozen)
        dropped = sum(r.disconnects for r in frozen)
        prover.record("the freeze case reaches frozen consumers thawing within the session and past it, and the "
                      "client's own session timer expiring at the thaw (it drops its connection)",
                      min(within, past, dropped) > 0,
                      f"thaws within the session {within}, past it {past}, client disconnects {dropped}")
    states = sum(r.states for r in results.values())
    transitions = sum(r.transitions for r in results.values())
    facts: dict[str, Any] = {"states": states, "transitions": transitions,
                             "rejected_heartbeats_reached": sum(r.forced for r in results.values()),
                             "per_case": summary(results)}
    if tie:
        used: dict[str, int] = {}
        for r in results.values():
            for key, n in r.micro_steps.items():
                used[key] = used.get(key, 0) + n
        facts["micro_steps_used"] = dict(sorted(used.items()))
        facts["tie_queries"] = sum(r.tie_queries for r in results.values())
        cv = [r.converse for r in results.values() if r.converse is not None]
        if cv:
            facts["converse"] = {"states_checked": sum(c.states for c in cv),
                                 "states_near_depth_bound": sum(c.near_bound for c in cv),
                                 "near_bound_states_checked": sum(c.near_bound_checked for c in cv),
                                 "queries": sum(c.queries for c in cv),
                                 "realised_pairs": sum(c.realised for c in cv),
                                 "states_with_fault_budget_spent": sum(c.budget for c in cv),
                                 "stalled_consumers_skipped": sum(c.deferred for c in cv),
                                 "over_approximations": sorted(rp.OVER_APPROXIMATIONS) + [
                                     "coordinator steps on a muted connection or while a timer is due",
                                     "a rejoin started by a consumer that has none pending",
                                     "poll() steps of a stalled consumer (the model's once its stall ends)",
                                     "answers to a consumer no thread of which reads its socket (stalled "
                                     "before it joined, or frozen)",
                                     "close() of a frozen process"]}
        facts["disconnects_not_checked"] = sum(r.cut for r in results.values())
    ok = prover.status.value == "proved"
    text = (f"{states} reachable states, {transitions} transitions of the executable model, "
            + ("every one a step of the encoding" if tie else "no invariant broken") if ok else
            "the executable model breaks the claim at these bounds (see the failing case)")
    return outcome(prover, text, bounds=bounds, facts=facts)


@obligation(
    id="model-explore-invariants", invariant="single-owner", scope="bounded",
    statement="the executable model itself (model.system), explored exhaustively at the bounds: from the empty "
              "group, every interleaving of deliveries, polls, heartbeats, timers and the clock, with up to the "
              "stated number of faults (a consumer starting, crashing or leaving; in the stall case stalling; in "
              "the freeze case its whole process stopped within or past its session) anywhere, for an eager "
              "(range) and a cooperative (cooperative-sticky) group: in every reachable state no partition has two "
              "counted owners, and on every transition generations only go up (or reset), an eager consumer owns "
              "nothing when it sends JoinGroup, the coordinator accepts commits only from its generation, a "
              "coordinator timer that fires changes something, and a frozen process changes in nothing until its "
              "thaw, which changes only that it is frozen (its timers are deadlines that see the elapsed time)",
    source="model.system.enabled / step; model.invariants.protocol (single_owner, generation_monotonic, "
           "eager_revoke_all, commits_fenced)",
    assumptions=("fifo-per-connection", "one-coordinator", "no-commits"),
    bounds={"members": 2, "partitions": 2, "faults": 3, "depth": 40, "max_states": 60000, "stall_members": 2,
            "stall_partitions": 2, "stall_faults": 3, "stall_depth": 26, "stall_ms": 5000, "stall_groups": 2,
            "freeze_members": 2, "freeze_partitions": 2, "freeze_faults": 2, "freeze_depth": 26, "freeze_ms": 5000,
            "freeze_past_ms": 12000, "freeze_groups": 2},
    deepen=_deepen,
)
def model_explore_invariants(cfg: RunConfig) -> Outcome:
    return _run(cfg, model_explore_invariants.bounds, tie=False)


@obligation(
    id="model-explore-tie", invariant="single-owner", scope="bounded",
    statement="every transition of the executable model reachable at the bounds (the same exhaustive exploration, "
              "smaller bounds) is a sequence of the encoding's micro-steps between the two abstractions, the "
              "micro-step forced by the coordinator's answer where the answer decides it; so, at these bounds, the "
              "protocol-* inductions are about the code that runs",
    source="model.system.step; model.proofs.abstraction; model.proofs.replay.check_step",
    assumptions=("timers-any-time", "fifo-per-connection", "one-coordinator"),
    bounds={"members": 2, "partitions": 2, "faults": 2, "depth": 14, "max_states": 5000, "stall_members": 2,
            "stall_partitions": 1, "stall_faults": 2, "stall_depth": 20, "stall_ms": 5000, "stall_groups": 1,
            "freeze_members": 2, "freeze_partitions": 1, "freeze_faults": 2, "freeze_depth": 12, "freeze_ms": 5000,
            "freeze_past_ms": 12000, "freeze_groups": 1, "converse": 1, "converse_stall": 1},
    deepen=_deepen,
)
def model_explore_tie(cfg: RunConfig) -> Outcome:
    return _run(cfg, model_explore_tie.bounds, tie=True)



# -- the delivery layer, explored ------------------------------------------------------------------------

#: The record-layer configurations the delivery exploration runs: a commit policy of each kind the
#: delivery proofs speak about (auto-commit, commitSync after each poll and in onPartitionsRevoked), and
#: both reset policies that place a position without a committed offset.
DELIVERY_CASES: tuple[tuple[str, bool, DeliveryConfig], ...] = (
    ("auto-commit every 1500 ms, latest", True,
     DeliveryConfig(auto_offset_reset="latest", auto_commit_interval_ms=1500, max_poll_records=2)),
    ("commitSync after each poll and on revoke, earliest", False,
     DeliveryConfig(auto_offset_reset="earliest", commit="sync", commit_on_revoke=True, max_poll_records=2)),
    # beyond the first two (bound ``policies``): commitAsync with async processing -- the commit carries the
    # processed offset while batches are still in the worker -- and commitSync after each poll only
    ("commitAsync after each poll, async processing of 700 ms, earliest", False,
     DeliveryConfig(auto_offset_reset="earliest", commit="async", processing="async", processing_ms=700,
                    max_poll_records=2)),
    ("commitSync after each poll, not on revoke, latest", False,
     DeliveryConfig(auto_offset_reset="latest", commit="sync", max_poll_records=2)),
)


def _delivery_config(auto_commit: bool, delivery: DeliveryConfig, mutants: frozenset[str]) -> sy.SystemConfig:
    return dataclasses.replace(rp.replay_config(mutants), auto_commit=auto_commit, delivery=delivery)


@obligation(
    id="model-explore-delivery", invariant="no-gap", scope="bounded",
    statement="the delivery proofs are about the executable model at the bounds: the same exhaustive exploration "
              "of model.system with records (a producer appending in the fault alphabet; positions, fetches, "
              "OffsetFetch answers, commits and their answers) for an auto-commit and a commitSync consumer "
              "group: every transition's change of the partition's record state is a sequence of the symbolic "
              "delivery steps (Z3 on both abstractions), every records_consumed entry continues exactly from the "
              "consumer's processed offset, and every OffsetCommit sent is of an owned partition with a "
              "position, carrying the position (auto-commit) or the processed offset",
    source="model.system.step; model.consumption; model.proofs.delivery.abstract / check_transition",
    assumptions=("delivery-one-log", "fifo-per-connection"),
    bounds={"members": 2, "partitions": 2, "faults": 3, "produce": 2, "depth": 16, "max_states": 20000, "policies": 2},
    deepen=lambda b: {**b, "policies": len(DELIVERY_CASES)} if b["policies"] < len(DELIVERY_CASES) else
    {**b, "faults": b["faults"] + 1, "depth": b["depth"] + 6, "max_states": b["max_states"] * 4},
)
def model_explore_delivery(cfg: RunConfig) -> Outcome:
    bounds = {**model_explore_delivery.bounds, **(cfg.bounds or {})}
    prover = Prover(cfg.timeout_ms)
    total = dl.TieResult()
    per_case: dict[str, Exploration] = {}
    partitions = [TopicPartition("t", p) for p in range(bounds["partitions"])]
    for name, auto_commit, delivery in DELIVERY_CASES[:bounds.get("policies", 2)]:
        config = _delivery_config(auto_commit, delivery, cfg.mutants)
        chains = dl.Chains(config, min(cfg.timeout_ms, 5000))
        for members in range(1, bounds["members"] + 1):
            result = dl.TieResult()
            label = (f"{name}: {members} consumer(s) x {bounds['partitions']} partition(s), {bounds['faults']} faults "
                     f"(a producer appending {bounds['produce']} records is one), {bounds['depth']} steps")

            def on_step(t: Transition, path: tuple[str, ...], chains: dl.Chains = chains,
                        result: dl.TieResult = result, auto_commit: bool = auto_commit) -> list[str]:
                seen = len(result.divergences)
                dl.check_transition(*t, partitions, chains, auto_commit, result, "explored")
                return result.divergences[seen:]

            b = Bounds(members, bounds["partitions"], bounds["faults"], bounds["depth"], bounds["max_states"],
                       produce=bounds["produce"], settled_roots=True)
            r = explore(("range",), b, mutants=cfg.mutants, tie=False, config=config, on_step=on_step)
            per_case[label] = r
            for key in ("transitions", "changed", "explained", "unknown", "consumed_checked", "commits_checked",
                        "commits_stored", "placed_from_committed", "placed_by_reset"):
                setattr(total, key, getattr(total, key) + getattr(result, key))
            total.deepest = max(total.deepest, result.deepest)
            note = "; ".join(f"{f.kind}: {f.what[:400]} (after {' / '.join(f.path[-4:])})" for f in r.findings[:2])
            if not r.exhausted:
                note = (note + "; " if note else "") + f"state limit {b.max_states} reached: not exhaustive"
            prover.record(f"{label}: {r.states} states, {r.transitions} transitions -- every record-layer change is a "
                          f"sequence of symbolic delivery steps ({result.changed} changes checked)",
                          not r.findings and r.exhausted and not result.unknown, note)
    prover.record("the exploration exercises the record layer (consumption, stored commits, positions from a "
                  "committed offset and from auto.offset.reset)",
                  min(total.consumed_checked, total.commits_stored, total.commits_checked,
                      total.placed_from_committed, total.placed_by_reset) > 0,
                  f"consumed {total.consumed_checked}, stored {total.commits_stored}, sent {total.commits_checked}, "
                  f"from committed {total.placed_from_committed}, by reset {total.placed_by_reset}")
    ok = prover.status.value == "proved"
    states = sum(r.states for r in per_case.values())
    return outcome(prover, f"{states} reachable states with records: every record step is a step of the delivery "
                           "encoding" if ok else "the executable model's record layer leaves the delivery encoding "
                           "at these bounds (see the failing case)", bounds=bounds,
                   facts={"states": states, "transitions": total.transitions, "changes": total.changed,
                          "consumed_entries": total.consumed_checked, "commits_sent_checked": total.commits_checked,
                          "commits_stored": total.commits_stored, "placed_from_committed": total.placed_from_committed,
                          "placed_by_reset": total.placed_by_reset, "most_steps_per_transition": total.deepest,
                          "per_case": summary(per_case)})


OBLIGATIONS = (model_explore_invariants, model_explore_tie, model_explore_delivery)
