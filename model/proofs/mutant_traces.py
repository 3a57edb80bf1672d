"""Concrete counterexamples for the protocol mutants: from a failed induction to a trace of model.system.

When a mutant breaks the induction of ``model.proofs.protocol``, Z3 names the micro-step that breaks
which invariant -- a counterexample to induction, which may be unreachable. Refuting the mutant needs
more: a run of the *executable* model, with the mutant switched on, that reaches the violation. This
module finds one and ties it back to the symbolic model:

1. **search** -- seeded random runs of ``model.system`` with the mutant (``replay.random_run``; the
   run's shape -- consumers, their configurations, faults -- varies with the seed), stopping at the
   first step where the *concrete* form of the broken invariant fails. Each invariant has its
   concrete check below, stated on the executable model's own states and events (the catalogue
   predicates of ``model.invariants.protocol`` where they exist);
2. **replay** -- every step of that run, up to the violation, is checked against the symbolic
   relation *with the same mutant* (``replay.check_step``), and Z3 confirms that the abstraction of
   the violating state breaks the invariant (``pins and invariant`` is unsat);
3. **trace** -- the run's trace events (what the executable model printed) are the counterexample;
   the numbered list of actions that reproduces it goes into the facts.

The search is bounded (``SEARCH_RUNS`` runs); not finding a run is reported, never hidden.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from model import events as ev
from model import system as sy
from model.invariants import protocol as pinv
from model.messages import NO_GENERATION, Errors, OffsetCommitRequest, OffsetCommitResponse, SyncGroupResponse
from model.proofs import protocol_model as pm
from model.proofs import replay as rp
from model.proofs.abstraction import Tracker, elements, max_generation, valuation
from model.proofs.core import RunConfig
from model.proofs.protocol_invariants import INVARIANTS
from model.proofs.solver import Query

SEARCH_RUNS = 4000

Transition = rp.Transition
Detector = Callable[[Sequence[Transition], int], str | None]


@dataclass
class Found:
    summary: str
    queries: list[Query] = field(default_factory=list)
    counterexample: tuple[dict[str, Any], ...] = ()
    violated: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)


# -- concrete forms of the invariants -----------------------------------------------------------------

def _kept_rejected_generation(run: Sequence[Transition], i: int) -> str | None:
    """rejected-generation-dropped: told ILLEGAL_GENERATION for its SyncGroup, a consumer must reset."""
    before, action, after, _ = run[i]
    if not isinstance(action, sy.DeliverResponse):
        return None
    r = before.network.head_response(action.conn)
    m0, m1 = sy.member_by_conn(before, action.conn), sy.member_by_conn(after, action.conn)
    if not isinstance(r, SyncGroupResponse) or r.error is not Errors.ILLEGAL_GENERATION or m0 is None or m1 is None:
        return None
    gen = m0.generation.generation_id
    if m0.join.name == "SYNC" and gen != NO_GENERATION and m1.generation.generation_id == gen:
        return (f"{m0.name} ({action.conn}) was told its generation {gen} is illegal (SyncGroup answered "
                f"ILLEGAL_GENERATION) and kept it, with {len(m1.owned)} partition(s) it will claim under it")
    return None


def _old_generation_commit(run: Sequence[Transition], i: int) -> str | None:
    """commits-from-current-generation: an OffsetCommit carrying an old generation must be refused."""
    before, action, after, _ = run[i]
    if not isinstance(action, sy.DeliverRequest):
        return None
    q = before.network.head_request(action.conn)
    if not isinstance(q, OffsetCommitRequest) or q.generation < 0 or q.generation == before.group.generation:
        return None
    answers = dict(after.network.responses).get(action.conn, ())
    if any(isinstance(a, OffsetCommitResponse) and a.error is Errors.NONE for a in answers):
        parts = ", ".join(f"{tp.topic}-{tp.partition}" for tp, _ in q.offsets)
        return (f"the coordinator (generation {before.group.generation}) accepted an OffsetCommit of {parts} from "
                f"{action.conn} carrying generation {q.generation}")
    return None


def _observed(name: str, step: Transition) -> tuple[dict[str, Any], ...]:
    """The violating step as an event, when the model prints none for it: an accepted OffsetCommit is
    VerifiableConsumer's ``offsets_committed`` (built from the step's own request and answer)."""
    before, action, after, _ = step
    if name != "commits-from-current-generation" or not isinstance(action, sy.DeliverRequest):
        return ()
    q = before.network.head_request(action.conn)
    if not isinstance(q, OffsetCommitRequest):
        return ()
    return (ev.event(ev.OFFSETS_COMMITTED, after.now, member=action.conn.split("#", 1)[0], member_id=q.member_id,
                     generation=q.generation, success=True, group_generation=before.group.generation,
                     offsets=[{"topic": tp.topic, "partition": tp.partition, "offset": off} for tp, off in q.offsets]),)


def _monitor_detector(invariant: str) -> Detector:
    """A catalogue predicate of model.invariants.protocol, watched along the run."""

    def detect(run: Sequence[Transition], i: int) -> str | None:
        monitor = pinv.Monitor(rp.replay_config())
        for before, action, after, events in run[: i + 1]:
            monitor.observe(before, action, after, events)
        found = [v for v in monitor.violations if v.invariant == invariant]
        return found[0].message if found else None

    return detect


# The shape of the runs searched for each property: (members, partitions, steps, fault rate, config variant).
RUN_SHAPES: dict[str, tuple[int, int, int, float, int | None]] = {
    "rejected-generation-dropped": (3, 3, 200, 0.12, None),
    "commits-from-current-generation": (2, 2, 150, 0.15, 1),  # rebalance timeout < max.poll.interval.ms
    "added-only-to-its-assignee": (3, 3, 150, 0.1, None),
    "static-rejoin": (3, 2, 150, 0.12, None),
}

# Which concrete check stands for which symbolic invariant, and its catalogue id.
DETECTORS: dict[str, tuple[str, Detector, bool]] = {
    "rejected-generation-dropped": ("generation-monotonic", _kept_rejected_generation, False),
    "commits-from-current-generation": ("commit-owned-only", _old_generation_commit, False),
    "added-only-to-its-assignee": ("revoke-before-assign", _monitor_detector(pinv.REVOKE_BEFORE_ASSIGN), True),
    "static-rejoin": ("static-rejoin", _monitor_detector(pinv.STATIC_REJOIN), True),
}


def search(mutants: frozenset[str], detector: Detector, seed: int, runs: int = SEARCH_RUNS,
           per_step: bool = True, shape: tuple[int, int, int, float, int | None] = (3, 3, 200, 0.12, None)
           ) -> tuple[list[Transition], int, str] | None:
    """The first seeded run (with the mutants) whose step violates the detector's property."""
    members, partitions, steps, faults, variant = shape
    for n in range(runs):
        run = rp.random_run(seed * 100_000 + n, members=members, partitions=partitions, steps=steps, faults=faults,
                            mutants=mutants, variant=variant)
        if per_step:
            for i in range(len(run)):
                why = detector(run, i)
                if why:
                    return run[: i + 1], seed * 100_000 + n, why
        else:
            why = detector(run, len(run) - 1)
            if why:
                # shortest prefix that still shows it
                lo, hi = 0, len(run) - 1
                while lo < hi:
                    mid = (lo + hi) // 2
                    if detector(run, mid):
                        hi = mid
                    else:
                        lo = mid + 1
                return run[: lo + 1], seed * 100_000 + n, detector(run, lo) or why
    return None


def _abstract_violation(run: Sequence[Transition], invariant: str, mutants: frozenset[str],
                        timeout_ms: int) -> tuple[int, int, str]:
    """Replay the run under the mutant; return (steps matched, stutters, Z3's verdict on the last state)."""
    tracker = Tracker()
    matched = stutters = 0
    for before, action, after, events in run:
        nxt = tracker.copy()
        nxt.observe(before, action, after, events)
        check = rp.check_step(before, action, after, events, tracker, nxt, mutants, timeout_ms)
        if not check.ok:
            return matched, stutters, f"divergence at '{check.action}': {check.detail}"
        stutters += check.stutter
        matched += not check.stutter
        tracker = nxt
    if not invariant:
        return matched, stutters, "replayed"
    last = run[-1][2]
    ks, ps, insts = elements([last], tracker)
    top = max_generation([last], tracker)
    u = rp.Universe.of(ks, ps, insts, top)
    st = pm.State(u.sorts, "_cex")
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(*rp.pin(st, u, valuation(last, tracker, ks, ps, insts, range(pm.NO_GEN, top + 3))))
    solver.add(INVARIANTS[invariant].build(st))
    return matched, stutters, str(solver.check())


def refute(mutants: frozenset[str], names: Sequence[str], cfg: RunConfig) -> Found:
    """Find and replay a concrete counterexample for one of the invariants ``names`` under ``mutants``."""
    targets = [n for n in names if n in DETECTORS]
    if not targets:
        return Found(f"no concrete check is defined for {', '.join(names)}")
    for name in targets:
        catalogue_id, detector, whole_run = DETECTORS[name]
        hit = search(mutants, detector, cfg.seed, per_step=not whole_run, shape=RUN_SHAPES[name])
        if hit is None:
            continue
        run, seed, why = hit
        queries: list[Query] = []
        matched, stutters, verdict = _abstract_violation(run, name if not whole_run else "", mutants,
                                                         cfg.timeout_ms)
        if verdict.startswith("divergence"):
            queries.append(Query("the concrete counterexample replays through the symbolic relation", "pass", "fail",
                                 verdict))
        elif whole_run:
            queries.append(Query(f"the concrete counterexample replays through the symbolic relation under "
                                 f"{', '.join(sorted(mutants))} ({matched} steps matched, {stutters} stutters)",
                                 "pass", "pass"))
        else:
            queries.append(Query(f"the abstraction of the violating state breaks {name} (replayed {matched} steps, "
                                 f"{stutters} stutters, under {', '.join(sorted(mutants))})", "unsat", verdict))
        events = tuple(e for _, _, _, evs in run for e in evs) + _observed(name, run[-1])
        actions = [f"{i}: {sy.describe(b, a)}" for i, (b, a, _, _) in enumerate(run)]
        return Found(f"refuted: {why}", queries=queries, counterexample=events, violated=catalogue_id,
                     facts={"run_seed": seed, "run_steps": len(run), "actions": actions[-40:]})
    return Found(f"no run out of {SEARCH_RUNS} seeded runs reached a violation")
