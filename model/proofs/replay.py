"""The tie between the symbolic model and the executable one: replaying concrete runs through Z3.

A proof about ``model.proofs.protocol_model`` is a proof about ``model.system`` only if every step
the executable model takes is a step the symbolic relation allows. This module checks exactly that
on runs of the executable model:

* **forward** (:func:`check_step`): for a concrete transition ``s -> s'``, the abstraction
  (``model.proofs.abstraction``) gives two valuations; Z3 must find a sequence of at most a few
  micro-steps of the kinds the concrete action can stand for (a delivered JoinGroup: one coordinator
  join step, then possibly the join phase completing; a timer: removals, a rebalance, a
  completion; a poll: finishing a chain, then sending a JoinGroup; ...) leading from the first
  valuation to the second, with every intermediate state free. A step whose abstraction does not
  change is a stutter. A step with no such sequence is a *divergence*: the encoding and the model
  disagree, and the check fails with both valuations and their difference.
* **converse** (:func:`check_converse`, on small bounds): for a concrete state, every micro-step the
  symbolic model can take from its abstraction is *realised* by some concrete action enabled there
  (or after the clock moves to the next deadline). What is not realised is the over-approximation
  (timers firing at any moment, assignments refused, ...), reported as counts per micro-step.

Runs come from :func:`random_run`: a seeded walk over ``model.system`` (enabled actions plus faults
from a small alphabet), so the same seed replays the same run.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import z3

from model import system as sy
from model.classic import coordinator as co
from model.classic import member as mb
from model.messages import (
    NO_GENERATION,
    Errors,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.proofs import protocol_model as pm
from model.proofs.abstraction import Tracker, Valuation, diff, elements, max_generation, valuation
from model.proofs.core import Outcome, RunConfig, obligation, outcome
from model.proofs.solver import Prover

Transition = tuple[sy.SystemState, sy.Action, sy.SystemState, tuple[dict[str, Any], ...]]

_COUNTER = itertools.count()


# -- pinning a valuation in a finite encoding ------------------------------------------------------

_ENUMS = {"gst": pm.GSt, "cst": pm.CSt, "fut": pm.Fut, "jrsp": pm.JR, "srsp": pm.SR, "crsp": pm.CR}


def _enum_value(sort: Any, name: str) -> Any:
    for i in range(sort.num_constructors()):
        c = sort.constructor(i)
        if c.name() == name:
            return c()
    raise KeyError(f"{name} is not a value of {sort}")


@dataclass
class Universe:
    sorts: pm.Sorts
    ks: dict[str, Any]
    ps: dict[str, Any]
    insts: dict[str, Any]

    @staticmethod
    def of(ks: Sequence[str], ps: Sequence[str], insts: Sequence[str], max_gen: int) -> Universe:
        tag = f"r{next(_COUNTER)}"
        sorts = pm.Sorts.finite(len(ks), len(ps), len(insts), max_gen + 2, tag=tag, expand=False)
        assert sorts.ks is not None and sorts.ps is not None and sorts.is_ is not None
        return Universe(sorts, dict(zip(ks, sorts.ks, strict=True)), dict(zip(ps, sorts.ps, strict=True)),
                        dict(zip(insts, sorts.is_, strict=True)))

    def arg(self, sort: Any, value: Any) -> Any:
        if sort == self.sorts.K:
            return self.ks[value]
        if sort == self.sorts.P:
            return self.ps[value]
        if sort == self.sorts.I:
            return self.insts[value]
        return z3.IntVal(value)

    def value(self, name: str, sort: Any, value: Any) -> Any:
        if name in _ENUMS:
            return _enum_value(_ENUMS[name], value)
        if sort == z3.BoolSort():
            return z3.BoolVal(bool(value))
        if sort == z3.IntSort():
            return z3.IntVal(int(value))
        return self.arg(sort, value)


def pin(state: pm.State, u: Universe, val: Valuation) -> list[Any]:
    out: list[Any] = []
    gens = set(u.sorts.gens or ())
    for name, table in val.fields.items():
        sig = state.sig[name]
        for args, value in table.items():
            if value is None:
                continue
            if any(isinstance(a, int) and not isinstance(a, bool) and a not in gens for a in args):
                continue
            term = state.f[name] if not args else state.f[name](*[u.arg(s, a) for s, a in zip(sig[:-1], args,
                                                                                              strict=True)])
            out.append(term == u.value(name, sig[-1], value))
    return out


# -- which micro-steps a concrete action can stand for ----------------------------------------------

Shape = list[tuple[tuple[str, ...], str | None]]  # per micro-step: allowed actions, fixed k (element) or free


def shapes(before: sy.SystemState, action: sy.Action, after: sy.SystemState) -> list[Shape]:
    """Candidate micro-step sequences for one concrete action, shortest first."""
    coordinator_followups = ("coordinator-complete-join", "coordinator-prepare-rebalance",
                             "coordinator-remove-member")
    if isinstance(action, sy.DeliverRequest):
        req = before.network.head_request(action.conn)
        k = action.conn
        if isinstance(req, HeartbeatRequest | FindCoordinatorRequest):  # coordinator discovery is not symbolic
            return [[]]
        first = {JoinGroupRequest: ("coordinator-join-new-dynamic", "coordinator-join-member",
                                    "coordinator-join-current", "coordinator-join-rejected",
                                    "coordinator-static-replace"),
                 SyncGroupRequest: ("coordinator-sync",),
                 LeaveGroupRequest: ("coordinator-leave",),
                 OffsetCommitRequest: ("coordinator-offset-commit",)}.get(type(req), ())
        return [[(first, k)], [(first, k), (coordinator_followups, None)]]
    if isinstance(action, sy.DeliverResponse):
        rsp = before.network.head_response(action.conn)
        k = action.conn
        if isinstance(rsp, HeartbeatResponse):
            resets: Shape = [(("heartbeat-illegal-generation", "heartbeat-unknown-member"), k)]
            return [resets] if forced(before, action) else [[], resets]
        if isinstance(rsp, LeaveGroupResponse | FindCoordinatorResponse):
            return [[]]
        kinds = {JoinGroupResponse: ("receive-join-ok", "receive-join-error"),
                 SyncGroupResponse: ("receive-sync-ok", "receive-sync-error"),
                 OffsetCommitResponse: ("receive-commit-answer",)}[type(rsp)]
        return [[(kinds, k)]]
    if isinstance(action, sy.MemberPolls):
        m = sy.running_member(before, action.member)
        k = m.conn if m is not None else ""
        polls = ("poll-complete-join", "poll-failed-join", "poll-join-prepare-commit", "poll-send-join", "die")
        return [[(polls, k)], [(polls, k), (polls, k)], [(polls, k), (polls, k), (polls, k)]]
    if isinstance(action, sy.HeartbeatThreadRuns):
        m = sy.running_member(before, action.member)
        k = m.conn if m is not None else ""
        return [[], [(("heartbeat-poll-timeout",), k)]]
    if isinstance(action, sy.CoordinatorTimerFires):
        timers = ("coordinator-remove-member", "coordinator-prepare-rebalance", "coordinator-complete-join")
        n = len(before.group.members) + len(before.group.pending_members) + 2
        return [[(timers, None)] * length for length in range(1, n + 1)]
    if isinstance(action, sy.MemberStarts):
        p = sy.process(after, action.member)
        started: Shape = [(("start",), p.member.conn if p and p.member else "")]
        return [started]
    if isinstance(action, sy.MemberCrashes):
        m = sy.running_member(before, action.member)
        return [[(("crash",), m.conn if m else "")]]
    if isinstance(action, sy.MemberRestarts):
        old = sy.running_member(before, action.member)
        new = sy.running_member(after, action.member)
        start: Shape = [(("start",), new.conn if new else "")]
        crashed: Shape = [(("crash",), old.conn)] if old is not None else []
        return [crashed + start]
    if isinstance(action, sy.MemberLeaves):
        # close() commits synchronously first: the commit (and whatever the closing consumer had queued
        # before it) is handled by the coordinator and its answers by the consumer, then the rest of close
        m = sy.running_member(before, action.member)
        k = m.conn if m else ""
        closing = ("close-commit", "coordinator-offset-commit", "receive-commit-answer",
                   "heartbeat-illegal-generation", "heartbeat-unknown-member", *coordinator_followups)
        # a commit the consumer queued before close() (onJoinPrepare's) is answered first: close waits for
        # pending commits (ConsumerCoordinator.close) -- so the chain may start with that commit's delivery
        first = ("close-commit", "coordinator-offset-commit", "receive-commit-answer")
        longer: list[Shape] = [[(first, k), *[(closing, None)] * n, (("close",), k)] for n in range(2, 6)]
        committed = m is not None and m.config.auto_commit and m.owned and m.state is mb.MemberState.STABLE
        alone: list[Shape] = [[(("close",), k)]]
        return longer + alone if committed else alone + longer
    return [[]]  # clock, stalls, resumes, subscriptions, partition counts: nothing symbolic changes


def forced(before: sy.SystemState, action: sy.Action) -> bool:
    """Does the coordinator's answer alone decide that this step is not a stutter? A heartbeat answered
    ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID about the generation the consumer still has must be the
    encoding's reset step (``AbstractCoordinator.HeartbeatResponseHandler``: resetGenerationOnResponseError),
    whatever the consumer did with it: the tie reads the answer and the consumer's state before it, never
    its reaction, so a consumer that fails to reset is a divergence rather than a stutter."""
    if not isinstance(action, sy.DeliverResponse):
        return False
    rsp = before.network.head_response(action.conn)
    m = sy.member_by_conn(before, action.conn)
    return (isinstance(rsp, HeartbeatResponse) and rsp.error in (Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID)
            and m is not None and bool(m.heartbeats_in_flight) and m.heartbeats_in_flight[0] == m.generation
            and m.generation.generation_id != NO_GENERATION)


@dataclass
class StepCheck:
    ok: bool
    action: str
    micro_steps: list[str] = field(default_factory=list)
    stutter: bool = False
    detail: str = ""
    result: str = "sat"


def _tracked(before: sy.SystemState, action: sy.Action, after: sy.SystemState, events: tuple[dict[str, Any], ...],
             tracker: Tracker) -> Tracker:
    nxt = tracker.copy()
    nxt.observe(before, action, after, events)
    return nxt


def check_step(before: sy.SystemState, action: sy.Action, after: sy.SystemState, events: tuple[dict[str, Any], ...],
               tracker: Tracker, after_tracker: Tracker, mutants: frozenset[str], timeout_ms: int) -> StepCheck:
    """Is ``before -> after`` (the concrete step ``action``) a sequence of symbolic micro-steps?"""
    ks, ps, insts = elements([before, after], after_tracker)
    top = max_generation([before, after], after_tracker)
    gens = range(pm.NO_GEN, top + 3)
    va = valuation(before, tracker, ks, ps, insts, gens)
    vb = valuation(after, after_tracker, ks, ps, insts, gens)
    name = sy.describe(before, action)
    if not diff(va, vb) and _same_free(va, vb) and not forced(before, action):
        return StepCheck(True, name, stutter=True)
    last = "unsat"
    for shape in shapes(before, action, after):
        if not shape:
            continue
        if any(fixed is not None and fixed not in ks for _, fixed in shape):
            continue
        chain = _chain(tuple(ks), tuple(ps), tuple(insts), top, len(shape))
        u = chain.named(ks, ps, insts)
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*chain.pin(0, va, u), *chain.pin(len(shape), vb, u))
        picks = []
        for i, (allowed, fixed) in enumerate(shape):
            options, choice, k = chain.step(i, allowed, mutants)
            if fixed is not None:
                solver.add(k == u.ks[fixed])
            solver.add(options)
            picks.append((choice, allowed, k))
        answer = solver.check()
        last = "unknown" if last == "unknown" else str(answer)  # an unknown on any shape is not a "no"
        if answer == z3.sat:
            model = solver.model()
            names = {str(el): n for n, el in u.ks.items()}
            steps = [f"{allowed[model.eval(ch).as_long()]}({names.get(str(model.eval(k)), str(model.eval(k)))})"
                     for ch, allowed, k in picks]
            return StepCheck(True, name, steps)
    changes = diff(va, vb)
    text = "; ".join(f"{f}{list(a)}: {x} -> {y}" for f, rows in changes.items() for a, x, y in rows[:4])
    return StepCheck(False, name, detail=text[:2000] or "only free fields changed", result=last)


@dataclass
class _Chain:
    """A finite universe and a chain of symbolic states over it, with the micro-step relations between
    consecutive states built once and reused by every step check of the same size: building the
    relation's terms, not solving, is what a step check costs."""

    universe: Universe
    states: list[pm.State]
    steps: dict[tuple[int, tuple[str, ...], frozenset[str]], tuple[Any, Any, Any]] = field(default_factory=dict)

    relations: dict[tuple[int, str, frozenset[str]], Any] = field(default_factory=dict)
    pins: dict[tuple[Any, ...], list[Any]] = field(default_factory=dict)

    def named(self, ks: Sequence[str], ps: Sequence[str], insts: Sequence[str]) -> Universe:
        """The chain's universe with these names for its elements (a chain serves every universe of its
        sizes: the elements are anonymous, only the names differ)."""
        s = self.universe.sorts
        assert s.ks is not None and s.ps is not None and s.is_ is not None
        return Universe(s, dict(zip(ks, s.ks, strict=True)), dict(zip(ps, s.ps, strict=True)),
                        dict(zip(insts, s.is_, strict=True)))

    def pin(self, i: int, val: Valuation, u: Universe) -> list[Any]:
        """:func:`pin` of state i in the named universe ``u``, each field's equation built once per chain
        (keyed by element positions, not names)."""
        where: dict[Any, tuple[str, int]] = {}
        for tag, names in (("K", val.ks), ("P", val.ps), ("I", val.insts)):
            for j, n in enumerate(names):
                where[n] = (tag, j)
        out: list[Any] = []
        for name, table in val.fields.items():
            for args, value in table.items():
                key = (i, name, tuple(where.get(a, a) if isinstance(a, str) else a for a in args),
                       where.get(value, value) if isinstance(value, str) else value)
                terms = self.pins.get(key)
                if terms is None:
                    terms = pin(self.states[i], u, Valuation(val.ks, val.ps, val.insts, {name: {args: value}}))
                    self.pins[key] = terms
                out += terms
        return out
    ks: dict[int, tuple[Any, Any]] = field(default_factory=dict)

    def step(self, i: int, allowed: tuple[str, ...], mutants: frozenset[str]) -> tuple[Any, Any, Any]:
        """The disjunction of the ``allowed`` micro-steps from state i to i+1, its choice variable and k.
        Each micro-step's relation from state i is built once (over one k and c per position) and shared
        by every disjunction it appears in."""
        key = (i, allowed, mutants)
        if key not in self.steps:
            if i not in self.ks:
                self.ks[i] = (z3.Const(f"k{i}_{next(_COUNTER)}", self.universe.sorts.K),
                              z3.Const(f"c{i}_{next(_COUNTER)}", self.universe.sorts.K))
            k, c = self.ks[i]
            choice = z3.Int(f"a{i}_{next(_COUNTER)}")
            options = z3.Or([z3.And(choice == j, self._relation(i, a, k, c, mutants)) for j, a in enumerate(allowed)])
            self.steps[key] = (options, choice, k)
        return self.steps[key]

    def _relation(self, i: int, name: str, k: Any, c: Any, mutants: frozenset[str]) -> Any:
        key = (i, name, mutants)
        if key not in self.relations:
            self.relations[key] = pm.action_by_name(name).relation(self.states[i], self.states[i + 1], k, c, None,
                                                                   mutants)
        return self.relations[key]


_CHAINS: dict[tuple[Any, ...], _Chain] = {}


def _chain(ks: tuple[str, ...], ps: tuple[str, ...], insts: tuple[str, ...], top: int, length: int) -> _Chain:
    """A chain for universes of these sizes (name it with :meth:`_Chain.named`)."""
    key = (len(ks), len(ps), len(insts), top, length)
    if key not in _CHAINS:
        if len(_CHAINS) > 64:  # a long run meets many sizes; keep the memory bounded
            _CHAINS.clear()
        u = Universe.of(list(ks), list(ps), list(insts), top)
        _CHAINS[key] = _Chain(u, [pm.State(u.sorts, f"_{i}_{next(_COUNTER)}") for i in range(length + 1)])
    return _CHAINS[key]


def _same_free(va: Valuation, vb: Valuation) -> bool:
    """Both valuations pin the same entries (a field that became meaningful is a change)."""
    return all(set(va.fields.get(f, {})) == set(vb.fields.get(f, {})) for f in set(va.fields) | set(vb.fields))


# -- runs of the executable model -------------------------------------------------------------------

def replay_config(mutants: frozenset[str] = frozenset(), variant: int = 0) -> sy.SystemConfig:
    """Short timeouts, so that sessions expire, rebalances time out and polls stall within short runs.
    Variant 1 has a rebalance timeout well below max.poll.interval.ms, so that a stalled static member
    can miss a whole rebalance without leaving."""
    if variant == 1:
        return sy.SystemConfig(coordinator=co.CoordinatorConfig(initial_rebalance_delay_ms=0),
                               session_timeout_ms=10000, rebalance_timeout_ms=3000, heartbeat_interval_ms=1000,
                               max_poll_interval_ms=8000, mutants=mutants)
    return sy.SystemConfig(coordinator=co.CoordinatorConfig(initial_rebalance_delay_ms=0),
                           session_timeout_ms=6000, rebalance_timeout_ms=4000, heartbeat_interval_ms=1000,
                           max_poll_interval_ms=4000, mutants=mutants)


ASSIGNOR_CHOICES = (("cooperative-sticky",), ("range",), ("cooperative-sticky", "range"), ("roundrobin",),
                    ("sticky",))


def random_run(seed: int, *, members: int = 3, partitions: int = 3, steps: int = 120, faults: float = 0.08,
               mutants: frozenset[str] = frozenset(), statics: bool = True, variant: int | None = None
               ) -> list[Transition]:
    """A seeded walk over the executable model: enabled system actions, and now and then a fault."""
    rng = random.Random(seed)
    config = replay_config(mutants, seed % 2 if variant is None else variant)
    state = sy.initial_state(config, [("t", partitions)])
    names = [chr(ord("a") + i) for i in range(members)]
    coop_group = rng.random() < 0.6
    picks = {n: (("cooperative-sticky",) if coop_group else rng.choice(ASSIGNOR_CHOICES)) for n in names}
    statics_of = {n: (f"{n}-i" if statics and rng.random() < 0.5 else None) for n in names}
    out: list[Transition] = []
    for _ in range(steps):
        action: sy.Action
        if rng.random() < faults or not state.processes:
            n = rng.choice(names)
            p = sy.process(state, n)
            if p is None or p.member is None:
                action = sy.MemberStarts(n, ("t",), picks[n], statics_of[n])
            else:
                faults_of: list[sy.Action] = [sy.MemberCrashes(n), sy.MemberRestarts(n), sy.MemberLeaves(n),
                                              sy.MemberStalls(n, rng.choice([2000, 5000, 9000])),
                                              sy.MemberStalls(n, rng.choice([2000, 5000, 9000]))]
                action = rng.choice(faults_of)
        else:
            enabled: list[sy.Action] = list(sy.enabled(state))
            if not enabled:
                continue
            action = rng.choice(enabled)
        result = sy.step(state, action, config)
        if result is None:
            continue
        after, events = result
        out.append((state, action, after, tuple(events)))
        state = after
    return out


@dataclass
class ReplayResult:
    steps: int = 0
    stutters: int = 0
    checked: int = 0
    micro_steps: dict[str, int] = field(default_factory=dict)
    failures: list[StepCheck] = field(default_factory=list)


def replay(run: Iterable[Transition], mutants: frozenset[str] = frozenset(), timeout_ms: int = 20_000,
           stop_at_first: bool = True) -> ReplayResult:
    """Check every step of a run against the symbolic relation."""
    result = ReplayResult()
    tracker = Tracker()
    for before, action, after, events in run:
        nxt = tracker.copy()
        nxt.observe(before, action, after, events)
        check = check_step(before, action, after, events, tracker, nxt, mutants, timeout_ms)
        result.steps += 1
        if check.stutter:
            result.stutters += 1
        elif check.ok:
            result.checked += 1
            for s in check.micro_steps:
                key = s.split("(")[0]
                result.micro_steps[key] = result.micro_steps.get(key, 0) + 1
        else:
            result.failures.append(check)
            if stop_at_first:
                break
        tracker = nxt
    return result


# -- the obligation -----------------------------------------------------------------------------------

def _deepen(b: Any) -> dict[str, int]:
    return {"runs": b["runs"], "members": b["members"] + 1, "partitions": b["partitions"] + 1,
            "steps": b["steps"] * 2}


@obligation(
    id="replay-tie", invariant="single-owner", scope="bounded",
    statement="the symbolic model is the executable one: every step of seeded random runs of model.system "
              "(consumers joining, crashing, restarting, leaving, stalling; timers; any delivery order) is a "
              "sequence of the symbolic model's micro-steps between the two abstractions",
    source="model.system.step; model.proofs.abstraction",
    assumptions=("timers-any-time",),
    bounds={"runs": 4, "members": 3, "partitions": 3, "steps": 100},
    deepen=_deepen,
)
def replay_tie(cfg: RunConfig) -> Outcome:
    bounds = dict(replay_tie.bounds)
    bounds.update(cfg.bounds or {})
    prover = Prover(cfg.timeout_ms)
    totals = ReplayResult()
    for i in range(bounds["runs"]):
        run = random_run(cfg.seed * 1000 + i, members=bounds["members"], partitions=bounds["partitions"],
                         steps=bounds["steps"])
        res = replay(run, timeout_ms=cfg.timeout_ms)
        totals.steps += res.steps
        totals.stutters += res.stutters
        totals.checked += res.checked
        for key, n in res.micro_steps.items():
            totals.micro_steps[key] = totals.micro_steps.get(key, 0) + n
        ok = not res.failures
        note = "" if ok else f"{res.failures[0].action}: {res.failures[0].detail}"
        prover.record(f"run {i} (seed {cfg.seed * 1000 + i}): {res.steps} concrete steps, {res.checked} matched by "
                      f"micro-steps, {res.stutters} stutters", ok, note)
    unused = sorted(a.name for a in pm.ACTIONS if a.name not in totals.micro_steps)
    return outcome(prover, f"{totals.steps} concrete steps replayed: {totals.checked} matched, {totals.stutters} "
                           "stutters, no divergence" if prover.status.value == "proved" else
                           "the symbolic relation does not match some step of the executable model",
                   bounds=bounds, facts={"micro_steps_used": dict(sorted(totals.micro_steps.items())),
                                         "micro_steps_not_exercised": unused})


_ = replace


# -- the converse, on small bounds --------------------------------------------------------------------

#: Micro-steps the symbolic model may take at moments the executable model cannot (yet): timers fire at
#: any time (the clock must first reach the deadline), a consumer may die or refuse an assignment at
#: any time, heartbeat answers are not modelled as messages. The converse check counts them apart.
OVER_APPROXIMATIONS = frozenset({
    "coordinator-remove-member", "coordinator-prepare-rebalance", "coordinator-complete-join", "die",
    "heartbeat-poll-timeout", "heartbeat-illegal-generation", "heartbeat-unknown-member",
    "coordinator-join-rejected",  # INVALID_SESSION_TIMEOUT, INCONSISTENT_GROUP_PROTOCOL, ... are not modelled apart
})


def _faults_for(state: sy.SystemState, names: Sequence[str], assignors: dict[str, tuple[str, ...]],
                statics: dict[str, str | None]) -> list[sy.Action]:
    out: list[sy.Action] = []
    for n in names:
        p = sy.process(state, n)
        if p is None or p.member is None:
            out.append(sy.MemberStarts(n, ("t",), assignors[n], statics[n]))
        else:
            out += [sy.MemberCrashes(n), sy.MemberLeaves(n), sy.MemberSubscribes(n, ("t", "u"))]
    return out


def _config_for(run: Sequence[Transition]) -> sy.SystemConfig:
    """The configuration a run of :func:`random_run` used (variant 0)."""
    return replay_config()


def _realised(state: sy.SystemState, tracker: Tracker, faults: list[sy.Action], config: sy.SystemConfig,
              mutants: frozenset[str], timeout_ms: int, depth: int = 8, breadth: int = 200) -> set[tuple[str, str]]:
    """The first micro-steps (name, consumer) the executable model takes from ``state``, looking through
    stutter steps (clock, stalls ending, heartbeats, subscription changes) up to ``depth`` steps."""
    found: set[tuple[str, str]] = set()
    frontier: list[tuple[sy.SystemState, Tracker, int]] = [(state, tracker, 0)]
    seen = 0
    while frontier and seen < breadth:
        st, tr, d = frontier.pop(0)
        actions: list[sy.Action] = list(sy.enabled(st)) + (faults if d == 0 else [])
        for a in actions:
            res = sy.step(st, a, config)
            if res is None:
                continue
            nxt, evs = res
            nt = tr.copy()
            nt.observe(st, a, nxt, evs)
            chk = check_step(st, a, nxt, evs, tr, nt, mutants, timeout_ms)
            seen += 1
            if chk.ok and chk.micro_steps:
                head = chk.micro_steps[0]
                found.add((head.split("(")[0], head.split("(")[1].rstrip(")")))
            elif chk.stutter and d + 1 < depth:
                frontier.append((nxt, nt, d + 1))
    return found


def _stalled(state: sy.SystemState, conn: str) -> bool:
    m = sy.member_by_conn(state, conn)
    return m is not None and m.stalled


def check_converse(run: Sequence[Transition], *, sample: int, mutants: frozenset[str] = frozenset(),
                   timeout_ms: int = 20_000) -> dict[str, dict[str, int]]:
    """For sampled states of a run: which symbolic micro-steps (per consumer) are enabled at the
    abstraction, and whether the executable model realises one (through stutter steps: the clock
    moving, a stall ending, a subscription change). Returns {micro-step: {"enabled": n, "realised": n}}."""
    if not run:
        return {}
    config = _config_for(run)
    names = sorted({n for st, _, _, _ in run for n, _ in st.processes})
    assignors = {n: p.config.assignors for st, _, _, _ in run for n, p in st.processes}
    statics = {n: p.config.instance_id for st, _, _, _ in run for n, p in st.processes}
    counts: dict[str, dict[str, int]] = {a.name: {"enabled": 0, "realised": 0, "deferred": 0} for a in pm.ACTIONS}
    trackers = [Tracker()]
    for before, action, after, events in run:
        t = trackers[-1].copy()
        t.observe(before, action, after, events)
        trackers.append(t)
    picks = sorted({int(i * (len(run) - 1) / max(1, sample - 1)) for i in range(sample)})
    for i in picks:
        state, tracker = run[i][0], trackers[i]
        realised = _realised(state, tracker, _faults_for(state, names, assignors, statics), config, mutants,
                             timeout_ms)
        ks, ps, insts = elements([state], tracker)
        top = max_generation([state], tracker)
        u = Universe.of(ks, ps, insts, top)
        s0, s1 = pm.State(u.sorts, "_cv0"), pm.State(u.sorts, "_cv1")
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*pin(s0, u, valuation(state, tracker, ks, ps, insts, range(pm.NO_GEN, top + 3))))
        c = z3.Const("c_cv", u.sorts.K)
        for act in pm.ACTIONS:
            for kname, kel in u.ks.items():
                solver.push()
                solver.add(act.relation(s0, s1, kel, c, None, mutants))
                enabled = solver.check() == z3.sat
                solver.pop()
                if not enabled:
                    continue
                counts[act.name]["enabled"] += 1
                # a new incarnation gets a fresh connection name: any start realises a symbolic start
                fresh = act.name == "start" and any(r[0] == "start" for r in realised)
                if (act.name, kname) in realised or fresh:
                    counts[act.name]["realised"] += 1
                elif _stalled(state, kname):
                    counts[act.name]["deferred"] += 1  # it acts once its stall ends (time is abstracted)
    return counts


@obligation(
    id="replay-converse", invariant="single-owner", scope="bounded",
    statement="the converse of the replay tie, on small bounds: every micro-step the symbolic model can take "
              "from the abstraction of a concrete state is a step the executable model can take there (or "
              "once the clock reaches its next deadline) -- except the documented over-approximations (timers "
              "at any moment, a consumer dying or refusing an assignment at any moment, heartbeat answers), "
              "which are counted",
    source="model.system.enabled / step; model.proofs.abstraction",
    assumptions=("timers-any-time",),
    bounds={"runs": 2, "members": 2, "partitions": 2, "steps": 60, "states": 5},
)
def replay_converse(cfg: RunConfig) -> Outcome:
    bounds = dict(replay_converse.bounds)
    bounds.update(cfg.bounds or {})
    prover = Prover(cfg.timeout_ms)
    totals: dict[str, dict[str, int]] = {a.name: {"enabled": 0, "realised": 0, "deferred": 0} for a in pm.ACTIONS}
    for i in range(bounds["runs"]):
        run = random_run(cfg.seed * 1000 + 500 + i, members=bounds["members"], partitions=bounds["partitions"],
                         steps=bounds["steps"], variant=0)
        for name, c in check_converse(run, sample=bounds["states"], timeout_ms=cfg.timeout_ms).items():
            for key in ("enabled", "realised", "deferred"):
                totals[name][key] += c[key]
    for name, c in sorted(totals.items()):
        if c["enabled"] == 0:
            continue
        if name in OVER_APPROXIMATIONS:
            prover.record(f"{name}: {c['realised']} of {c['enabled']} symbolic successors realised now (an "
                          "over-approximation by design)", True)
        else:
            done = c["realised"] + c["deferred"]
            deferred = f", {c['deferred']} once a stalled consumer's stall ends" if c["deferred"] else ""
            prover.record(f"{name}: every symbolic successor ({c['enabled']}) is realised by the executable model"
                          f"{deferred}", done == c["enabled"],
                          "" if done == c["enabled"] else f"{c['enabled'] - done} not realised")
    over = {n: c for n, c in totals.items() if n in OVER_APPROXIMATIONS and c["enabled"]}
    return outcome(prover, "outside the documented over-approximations, the symbolic model takes only steps the "
                           "executable model takes", bounds=bounds,
                   facts={"enabled_and_realised": {n: f"{c['realised']}/{c['enabled']}"
                                                   + (f" (+{c['deferred']} after a stall)" if c["deferred"] else "")
                                                   for n, c in totals.items() if c["enabled"]},
                          "over_approximation": {n: f"{c['realised']}/{c['enabled']}" for n, c in over.items()}})


OBLIGATIONS = (replay_tie, replay_converse)
