"""Unbounded proofs of the classic protocol's safety invariants, by induction over micro-steps.

The symbolic model is ``model.proofs.protocol_model`` (any number of consumers and partitions);
the invariants are ``model.proofs.protocol_invariants``. The inductive invariant is the
conjunction of *all* of them: the catalogue properties (single-owner in its per-generation form,
revoke-before-assign, generation-monotonic, eager-revoke-all, commits only from the current
generation) and the strengthening invariants that make them inductive. The proof is split into
groups, one obligation each, so that each stays small:

* **initiation** -- the initial state (no consumer, Empty group, generation 0) satisfies the group;
* **consecution** -- for every micro-step, a state satisfying the *whole* conjunction steps to one
  satisfying the group (so the groups together show the whole conjunction inductive: a standard
  split of one induction, not a circular argument -- every group is checked against every step
  under the same hypothesis);
* **step properties** where the catalogue property is about transitions (generation-monotonic,
  eager-revoke-all);
* **non-vacuity** -- for every micro-step, some state satisfying the invariant takes it (obligation
  ``protocol-steps-reachable``); a step whose guard contradicts the invariant would make its
  consecution query true for nothing.

What "single-owner" means here. The catalogue's state predicate (``model.invariants.protocol``:
no partition owned by two members the group still counts) is *not* an invariant of the classic
protocol: a static member that misses a rebalance (stalled past the rebalance timeout, kept
because it is static) still owns its partitions while the next generation gives them to another
member; it is still a member with its member id, so it is not a zombie in that sense. See the
finding ``static-member-stale-ownership`` in the report (``model.proofs.findings``). What holds, and
is proved here for every number of members and partitions, is the per-generation form: **no two
members the group still counts own a partition from the same generation's assignment** -- every
overlap is between owners from different generations, which Kafka resolves with the generation in
each claim (KIP-792) and fences with ILLEGAL_GENERATION.

Every query has Z3's timeout; ``unknown`` fails the obligation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import z3

from model.proofs import protocol_model as pm
from model.proofs.core import Obligation, Outcome, RunConfig, obligation, outcome
from model.proofs.protocol_invariants import INVARIANTS
from model.proofs.solver import Prover, consecution


@dataclass
class Frame:
    """One pre-state / post-state pair over uninterpreted sorts, with the step's chosen consumers."""

    sorts: pm.Sorts
    s: pm.State
    t: pm.State
    k: Any
    c: Any
    pre: list[Any]


def _frame() -> Frame:
    u = pm.Sorts.unbounded()
    s, t = pm.State(u, "_0"), pm.State(u, "_1")
    k, c = z3.Const("k", u.K), z3.Const("c", u.K)
    return Frame(u, s, t, k, c, [inv.build(s) for inv in INVARIANTS.values()])


StepProperty = Callable[[Frame, pm.Action], Any]


def _induction(prover: Prover, names: Sequence[str], mutants: frozenset[str],
               step_property: tuple[str, StepProperty] | None = None, f: Frame | None = None,
               keep: list[Any] | None = None) -> list[str]:
    """Initiation and consecution of the invariants ``names``; returns the micro-steps that break them.
    ``keep`` receives the solver holding the inductive hypothesis, for further queries."""
    f = f or _frame()
    group = z3.And([INVARIANTS[n].build(f.s) for n in names])
    prover.valid("initiation: the initial state satisfies " + ", ".join(names), group, [pm.initial(f.s)])
    post = z3.And([INVARIANTS[n].build(f.t) for n in names])
    solver = prover.incremental(f.pre)  # the inductive hypothesis, asserted once

    def relation(a: pm.Action) -> Any:
        return a.relation(f.s, f.t, f.k, f.c, None, mutants)

    across = None if step_property is None else (step_property[0], partial(step_property[1], f))
    broken = consecution(prover, solver, pm.ACTIONS, relation, post, "preserves them", across)
    if keep is not None:
        keep.append(solver)
    return broken


def _statement_facts(names: Sequence[str]) -> dict[str, Any]:
    return {"invariants": [f"{n}: {INVARIANTS[n].text}" for n in names]}


def _finish(prover: Prover, cfg: RunConfig, names: Sequence[str], broken: list[str], summary: str) -> Outcome:
    facts = _statement_facts(names)
    if broken:
        facts["broken_by"] = sorted(set(broken))
    if cfg.mutants and broken:
        from model.proofs import mutant_traces

        found = mutant_traces.refute(cfg.mutants, names, cfg)
        for q in found.queries:
            prover.queries.append(q)
        if found.counterexample:
            return outcome(prover, found.summary, counterexample=found.counterexample, violated=found.violated,
                           facts={**facts, **found.facts})
        return outcome(prover, f"the induction fails under the mutant (at {', '.join(sorted(set(broken)))}) "
                               f"but no concrete counterexample was found: {found.summary}", facts=facts)
    return outcome(prover, summary, facts=facts)


# -- single-owner ----------------------------------------------------------------------------------

SINGLE_OWNER = ("single-owner", "owned-from-assignment", "succeeded-from-assignment", "sync-answer-from-assignment",
                "stable-assignment-recorded", "no-assignment-before-sync", "sync-request-generation",
                "parked-sync-only-completing", "ownership-generation-at-most-group")


@obligation(
    id="protocol-single-owner", invariant="single-owner", scope="unbounded",
    statement="no two members the group still counts (member id a member, generation not reset) own a "
              "partition from the same generation's assignment, for any number of consumers, partitions and "
              "steps; strengthened by: every counted owner holds what its ownership generation's stored "
              "assignment gave it, and so do its SyncGroup answers in flight",
    source="GroupMetadataManager classicGroupSync / setAndPropagateAssignment; ConsumerCoordinator."
           "onJoinComplete; AbstractCoordinator SyncGroupResponseHandler (generation checks)",
    assumptions=("fifo-per-connection", "one-coordinator", "timers-any-time", "zombie-stops",
                 "leader-runs-model-assignor"),
    mutants=(),
)
def protocol_single_owner(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    f = _frame()
    kept: list[Any] = []
    broken = _induction(prover, SINGLE_OWNER, cfg.mutants, f=f, keep=kept)
    j, p = z3.Const("j", f.sorts.K), z3.Const("p", f.sorts.P)
    two_owners = z3.And(f.k != j, f.s.alive(f.k), f.s.alive(j), f.s.owns(f.k, p), f.s.owns(j, p),
                        z3.Not(pm.zombie(f.s, f.k)), z3.Not(pm.zombie(f.s, j)), f.s.og(f.k) != f.s.og(j))
    prover.valid_in(kept[0], "tight: two counted members can own one partition from different generations (so "
                             "the per-generation qualifier is needed; see finding static-member-stale-ownership)",
                    z3.Not(two_owners))
    last = prover.queries.pop()
    prover.queries.append(type(last)(last.name, "sat", last.result, last.note))
    return _finish(prover, cfg, SINGLE_OWNER, broken,
                   "per-generation single ownership is inductive for every number of consumers and partitions")


# -- revoke-before-assign --------------------------------------------------------------------------

REVOKE_BEFORE_ASSIGN = ("added-only-to-its-assignee", "added-recorded-with-assignment", "stable-claims-respect-adds",
                        "claims-are-owned-during-the-chain", "completing-claims-are-owned",
                        "answered-claims-respect-adds", "completing-members-are-syncing",
                        "cooperative-group-members-support-it", "cooperative-consumers-run-cooperative-sticky")


@obligation(
    id="protocol-revoke-before-assign", invariant="revoke-before-assign", scope="unbounded",
    statement="cooperative: a partition that a generation's assignment adds to a member (one it did not claim) "
              "is owned by no other member of that generation the group still counts -- its previous owner "
              "has revoked it first -- for any number of consumers and partitions",
    source="KIP-429; CooperativeStickyAssignor withholding (obligation coop-withhold); ConsumerCoordinator."
           "onJoinPrepare / onJoinComplete",
    assumptions=("fifo-per-connection", "one-coordinator", "timers-any-time", "zombie-stops",
                 "leader-runs-model-assignor"),
    mutants=("coop-no-withhold",),
)
def protocol_revoke_before_assign(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    broken = _induction(prover, REVOKE_BEFORE_ASSIGN, cfg.mutants)
    return _finish(prover, cfg, REVOKE_BEFORE_ASSIGN, broken,
                   "no counted member of a generation owns a partition that generation added to another member")


# -- generation-monotonic --------------------------------------------------------------------------

GENERATIONS = ("member-generation-at-most-group", "join-answer-generation", "generations-well-formed",
               "rejected-generation-dropped", "rejected-generation-in-the-past")


def _monotonic(f: Frame, a: pm.Action) -> Any:
    u, s, t = f.sorts, f.s, f.t
    return z3.And(t.ggen >= s.ggen, u.forall([u.K], lambda x: z3.Implies(
        z3.And(s.alive(x), t.alive(x)), z3.Or(t.cgen(x) >= s.cgen(x), t.cgen(x) == pm.NO_GEN))))


@obligation(
    id="protocol-generation-monotonic", invariant="generation-monotonic", scope="unbounded",
    statement="the coordinator's generation never goes down; a consumer's never goes down except to none "
              "(-1, a reset); and a consumer never keeps a generation the coordinator rejected with "
              "ILLEGAL_GENERATION, so it reports what it owned lost rather than claiming it under that "
              "generation (KAFKA-13419)",
    source="ClassicGroup.initNextGeneration; AbstractCoordinator JoinGroupResponseHandler, "
           "SyncGroupResponseHandler, HeartbeatResponseHandler (resetGenerationOnResponseError)",
    assumptions=("fifo-per-connection", "one-coordinator", "timers-any-time"),
    mutants=("stale-owned-after-sync-rebalance",),
)
def protocol_generation_monotonic(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    broken = _induction(prover, GENERATIONS, cfg.mutants, ("generations never go down", _monotonic))
    return _finish(prover, cfg, GENERATIONS, broken,
                   "generations only go up (or to none on a reset), and a rejected generation is dropped")


# -- eager-revoke-all ------------------------------------------------------------------------------

EAGER = ("eager-idle-owns-nothing", "chain-after-prepare", "joining-has-prepared")


def _eager_rejoin(f: Frame, a: pm.Action) -> Any:
    if a.name != "poll-send-join":
        return z3.BoolVal(True)
    u, s, t, k = f.sorts, f.s, f.t, f.k
    return z3.Implies(z3.Not(s.coop(k)), u.forall([u.P], lambda p: z3.Not(t.owns(k, p))))


@obligation(
    id="protocol-eager-revoke-all", invariant="eager-revoke-all", scope="unbounded",
    statement="eager: a consumer owns nothing when it sends JoinGroup (it revoked or lost everything in "
              "onJoinPrepare), and owns nothing again until its next SyncGroup answer",
    source="ConsumerCoordinator.onJoinPrepare (EAGER: revoke all owned partitions)",
    assumptions=("fifo-per-connection", "timers-any-time"),
)
def protocol_eager_revoke_all(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    broken = _induction(prover, EAGER, cfg.mutants, ("eager JoinGroup owns nothing", _eager_rejoin))
    return _finish(prover, cfg, EAGER, broken, "an eager consumer rejoins owning nothing")


# -- commits ----------------------------------------------------------------------------------------

COMMITS = ("commits-from-current-generation",)


@obligation(
    id="protocol-commit-fencing", invariant="commit-owned-only", scope="unbounded",
    statement="the coordinator accepts an OffsetCommit only from a member of its current generation, so a "
              "consumer the group moved on from cannot commit for partitions that now belong to another member",
    source="OffsetMetadataManager.validateOffsetCommit / ClassicGroup.validateOffsetCommit (ILLEGAL_GENERATION)",
    assumptions=("one-coordinator", "timers-any-time", "no-commits"),
    mutants=("commit-old-generation",),
)
def protocol_commit_fencing(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    broken = _induction(prover, COMMITS, cfg.mutants)
    return _finish(prover, cfg, COMMITS, broken, "every accepted commit comes from the current generation")


# -- structure, and non-vacuity ---------------------------------------------------------------------

_GROUPED = set(SINGLE_OWNER) | set(REVOKE_BEFORE_ASSIGN) | set(GENERATIONS) | set(EAGER) | set(COMMITS)
_REST = tuple(n for n in INVARIANTS if n not in _GROUPED)
#: Bookkeeping about the consumer's JoinGroup/SyncGroup chain and its messages ...
CHAINS = tuple(n for n in _REST if n in {
    "futures-match-messages", "one-chain-message", "commit-before-its-join", "joining-consumer-state",
    "unused-incarnations-idle", "alive-were-started", "generations-well-formed"})
#: ... and about member entries, member ids and what a reset consumer still owns.
MEMBERSHIP = tuple(n for n in _REST if n not in CHAINS)


@obligation(
    id="protocol-structure-chains", invariant="single-owner", scope="unbounded",
    statement="the bookkeeping the other protocol proofs rest on, part 1: each consumer has one "
              "JoinGroup/SyncGroup chain at a time and every message or answer of it has the future that waits "
              "for it; an auto-commit is answered before the JoinGroup goes out; consumer states match",
    source="AbstractCoordinator (joinFuture, MemberState, generationIfStable); ConsumerCoordinator.onJoinPrepare",
    assumptions=("fifo-per-connection", "one-coordinator", "timers-any-time"),
)
def protocol_structure_chains(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    broken = _induction(prover, CHAINS, cfg.mutants)
    return _finish(prover, cfg, CHAINS, broken, "the consumers' request chains are well formed")


@obligation(
    id="protocol-structure-membership", invariant="single-owner", scope="unbounded",
    statement="the bookkeeping the other protocol proofs rest on, part 2: member entries follow member ids "
              "(KIP-394 pending members, static replacement, abandoned ids, LeaveGroup before the next "
              "JoinGroup), one entry per static instance, and a consumer that reset its generation or member "
              "id loses what it owns before it joins again",
    source="GroupMetadataManager classicGroupJoin* (KIP-345, KIP-394); AbstractCoordinator.resetStateAndRejoin",
    assumptions=("fifo-per-connection", "one-coordinator", "timers-any-time"),
)
def protocol_structure_membership(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    broken = _induction(prover, MEMBERSHIP, cfg.mutants)
    return _finish(prover, cfg, MEMBERSHIP, broken, "member entries and member ids stay consistent")


@obligation(
    id="protocol-steps-reachable", invariant="single-owner", scope="unbounded",
    statement="non-vacuity: every micro-step of the symbolic model is taken from some state satisfying the "
              "inductive invariant, and the invariant is satisfiable together with two members owning "
              "partitions, so no consecution query above holds only because its premises contradict",
    source="the symbolic model's guards (model.proofs.protocol_model)",
    assumptions=("timers-any-time",),
)
def protocol_steps_reachable(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    f = _frame()
    solver = prover.incremental(f.pre)
    for a in pm.ACTIONS:
        # a witness is a failed validity check of "not enabled"
        prover.valid_in(solver, f"{a.name} is enabled in some state satisfying the invariant",
                        z3.Not(a.relation(f.s, f.t, f.k, f.c, None, cfg.mutants)))
        last = prover.queries.pop()
        prover.queries.append(type(last)(last.name, "sat", last.result, last.note))
    j, p, q = z3.Const("j", f.sorts.K), z3.Const("p", f.sorts.P), z3.Const("q", f.sorts.P)
    prover.witness("the invariant allows a Stable cooperative group with two counted members each owning a "
                   "partition of the current generation",
                   [*f.pre, f.s.gst == pm.STABLE, f.s.gcoop, f.k != j, p != q, f.s.alive(f.k), f.s.alive(j),
                    z3.Not(pm.zombie(f.s, f.k)), z3.Not(pm.zombie(f.s, j)), f.s.owns(f.k, p), f.s.owns(j, q),
                    f.s.og(f.k) == f.s.ggen, f.s.og(j) == f.s.ggen])
    return outcome(prover, f"all {len(pm.ACTIONS)} micro-steps are enabled under the invariant",
                   facts={"micro_steps": [f"{a.name} ({a.kind}): {a.doc}" for a in pm.ACTIONS]})


OBLIGATIONS: tuple[Obligation, ...] = (protocol_single_owner, protocol_revoke_before_assign,
                                       protocol_generation_monotonic, protocol_eager_revoke_all,
                                       protocol_commit_fencing, protocol_structure_chains,
                                       protocol_structure_membership, protocol_steps_reachable)
