"""Proofs about the four client assignors' *algorithms*, for every number of members and partitions.

Each assignor is encoded as the loop Kafka runs, over symbolic sizes, and the claim is proved by
induction over the loop: an initial query, a step query (the loop body preserves the loop
invariant and does what the claim needs), and an exit query. The encodings speak about counts
and index arithmetic only where the algorithm itself does (range's ``P/C`` split, roundrobin's
circular iterator, the sticky constrained builder's quotas), and about sets over uninterpreted
sorts where the algorithm manipulates sets (the sticky claim resolution, cooperative-sticky's
withholding rule). No quantifier ranges over integers.

An encoding proves something about the real assignor only if it *is* the real assignor. So every
obligation also runs the executable assignors of ``model.assignors`` on concrete instances and
checks that what they return is a model of the encoding (the solver's values for the concrete
sizes), which it records as ``sat`` witnesses.

Sources (Apache Kafka 4.1.1): clients/.../consumer/RangeAssignor.java (``assignRanges``,
``TopicAssignmentState.maxAssignable``), RoundRobinAssignor.java (``assign``, the
``CircularIterator``), consumer/internals/AbstractStickyAssignor.java (``allSubscriptionsEqual``,
``ConstrainedAssignmentBuilder.assignOwnedPartitions`` / ``assignRoundRobin`` /
``assignNewPartition``), CooperativeStickyAssignor.java (``adjustAssignment``,
``computePartitionsTransferringOwnership``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import z3

from model.assignors.order import sorted_members
from model.proofs import concrete
from model.proofs.core import Obligation, Outcome, RunConfig, obligation, outcome
from model.proofs.logic import Universe
from model.proofs.solver import Prover, model_bool, model_int
from model.types import GroupAssignment, Subscription, TopicPartition

Z = Any  # a z3 expression


def _If(c: Z, a: Z, b: Z) -> Z:  # noqa: N802 - z3 style
    return z3.If(c, a, b)


def _min(a: Z, b: Z) -> Z:
    return z3.If(a < b, a, b)


def _b2i(c: Z) -> Z:
    return z3.If(c, 1, 0)


def _try_assign(prover: Prover, name: str, strategy: str, ppt: dict[str, int], subs: Sequence[Subscription],
                mutants: frozenset[str] = frozenset()) -> GroupAssignment | None:
    """Run an executable assignor, recording a failed check (not a crash) when it is missing or raises."""
    try:
        return concrete.run_assignor(strategy, ppt, subs, mutants)
    except Exception as exc:  # an exception from the model is a finding, shown in the report
        prover.record(name, False, f"{strategy} raised {type(exc).__name__}: {exc}")
        return None


# =============================================================================================
# range
# =============================================================================================

def _range_split(P: Z, C: Z) -> tuple[Z, Z, list[Z]]:
    """``q = P / C`` and ``r = P % C`` as the defining constraints (C >= 1)."""
    q, r = z3.Ints("q r")
    return q, r, [C >= 1, P >= 0, q >= 0, q * C + r == P, r >= 0, r < C]


def _range_inv(i: Z, nxt: Z, extra: Z, q: Z, r: Z, C: Z) -> Z:
    """After ``i`` subscribers: partitions ``0..nxt-1`` are handed out, ``extra`` of P%C remain."""
    done_extra = _min(i, r)
    return z3.And(i >= 0, i <= C, nxt == i * q + done_extra, extra == r - done_extra)


def _range_step(q: Z, P: Z, nxt: Z, extra: Z, mutants: frozenset[str] = frozenset(), r: Z = None) -> tuple[Z, Z, Z]:
    """One subscriber's turn in ``assignRanges``: ``(n, nxt', extra')``.

    ``maxAssignable = numPartitionsPerConsumer + (remainingConsumersWithExtraPartition > 0 ? 1 : 0)
    - numAssigned`` (numAssigned is 0 before the subscriber's turn in plain range); it takes that
    many from the front of the unassigned partitions (``limit``), and ``onAssigned`` decrements the
    extra count when it took more than ``numPartitionsPerConsumer``. Mutant ``range-ceil-quota``:
    every subscriber may take ``ceil(P/C)`` while partitions are left.
    """
    if "range-ceil-quota" in mutants:
        max_assignable = q + _b2i(r > 0)
    else:
        max_assignable = q + _b2i(extra > 0)
    n = _min(max_assignable, P - nxt)
    return n, nxt + n, extra - _b2i(n > q)


def _range_prove(prover: Prover, mutants: frozenset[str] = frozenset()) -> None:
    P, C, i, nxt, extra = z3.Ints("P C i nxt extra")
    q, r, split = _range_split(P, C)
    n, nxt2, extra2 = _range_step(q, P, nxt, extra, mutants, r)
    prover.valid("init: before the first subscriber nothing is assigned and P%C extras remain",
                 _range_inv(z3.IntVal(0), z3.IntVal(0), r, q, r, C), split)
    inv = _range_inv(i, nxt, extra, q, r, C)
    prover.witness("non-vacuous: a subscriber's turn is reachable (invariant and i < C satisfiable)",
                   [*split, inv, i < C])
    prover.valid("step: subscriber i takes q+1 partitions if i < P%C else q, right after the previous range",
                 z3.And(_range_inv(i + 1, nxt2, extra2, q, r, C), n == q + _b2i(i < r)),
                 [*split, inv, i < C])
    prover.valid("exit: after the last subscriber the ranges cover partitions 0..P-1 and no extra is left",
                 z3.And(nxt == P, extra == 0), [*split, _range_inv(C, nxt, extra, q, r, C)])


def _range_unrolled(P: int, C: int, mutants: frozenset[str], timeout_ms: int) -> list[tuple[int, int]] | None:
    """The encoding unrolled over C subscribers for concrete P: (start, count) per subscriber."""
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    q, r = z3.Ints("q r")
    solver.add(q == P // C, r == P % C)
    nxt, extra = z3.IntVal(0), r
    spans = []
    for _ in range(C):
        n, nxt2, extra2 = _range_step(q, z3.IntVal(P), nxt, extra, mutants, r)
        spans.append((nxt, n))
        nxt, extra = nxt2, extra2
    if solver.check() != z3.sat:
        return None
    model = solver.model()
    return [(model_int(model, a), model_int(model, b)) for a, b in spans]


def _range_crosscheck(prover: Prover, sizes: Sequence[tuple[int, int]]) -> int:
    """Concrete instances: the unrolled encoding's model against model.assignors.range."""
    checked = 0
    for P, C in sizes:
        spans = _range_unrolled(P, C, frozenset(), prover.timeout_ms)
        if spans is None:
            prover.record(f"range encoding has a model for P={P}, C={C}", False)
            return checked
        # Members whose member ids and instance ids sort differently, so member order matters.
        subs = [Subscription(member_id=f"c{(C - k) % C}", topics=("t",),
                             instance_id=(f"i{k}" if k % 2 == 0 else None)) for k in range(C)]
        order = sorted_members(subs)
        expected = {s.member_id: tuple(TopicPartition("t", x) for x in range(spans[k][0], spans[k][0] + spans[k][1]))
                    for k, s in enumerate(order)}
        got = _try_assign(prover, "range cross-check", "range", {"t": P}, subs)
        if got is None:
            return checked
        if {m: tuple(sorted(v)) for m, v in got.assignment.items()} != expected:
            prover.record(f"range encoding agrees with model.assignors.range on P={P}, C={C}", False,
                          f"encoding {expected} vs model {dict(got.assignment)}")
            return checked
        checked += 1
    return checked


def _range_crosscheck_unequal(prover: Prover) -> int:
    """Unequal subscriptions: each topic split over its own subscribers (RangeAssignorTest example)."""
    subs = [Subscription("c1", ("t1",)), Subscription("c2", ("t1", "t2")), Subscription("c3", ("t1",))]
    got = _try_assign(prover, "range cross-check (unequal)", "range", {"t1": 3, "t2": 2}, subs)
    if got is None:
        return 0
    want = {"c1": (TopicPartition("t1", 0),),
            "c2": (TopicPartition("t1", 1), TopicPartition("t2", 0), TopicPartition("t2", 1)),
            "c3": (TopicPartition("t1", 2),)}
    ok = {m: tuple(sorted(v)) for m, v in got.assignment.items()} == want
    prover.record("range: per-topic split over each topic's own subscribers (RangeAssignorTest example)", ok,
                  "" if ok else f"model gave {dict(got.assignment)}")
    return 1 if ok else 0


_RANGE_SIZES = [(p, c) for c in range(1, 6) for p in range(0, 11)]


def _range_counterexample(prover: Prover, cfg: RunConfig) -> Outcome:
    """Under a mutant: the smallest (P, C) whose unrolled encoding is unbalanced, replayed on the model."""
    for P, C in sorted(_RANGE_SIZES, key=lambda pc: (pc[0] + pc[1], pc)):
        spans = _range_unrolled(P, C, cfg.mutants, cfg.timeout_ms)
        if spans is None or max(n for _, n in spans) - min(n for _, n in spans) <= 1:
            continue
        subs = [Subscription(member_id=f"c{k}", topics=("t",)) for k in range(C)]
        found = _replay_assignor(prover, "range", "balanced", {"t": P}, subs, cfg.mutants, "eager")
        if found is not None:
            return found
    return outcome(prover, "the encoding is unbalanced under the mutant, but model.assignors.range did not "
                           "reproduce it")


def _replay_assignor(prover: Prover, strategy: str, invariant: str, ppt: dict[str, int],
                     subs: Sequence[Subscription], mutants: frozenset[str], protocol: str) -> Outcome | None:
    """Run the executable assignor with the mutant on a candidate; an Outcome if the invariant fails."""
    got = _try_assign(prover, f"{strategy} with {sorted(mutants)}", strategy, ppt, subs, mutants)
    if got is None:
        return None
    found = concrete.verdict(invariant, strategy, ppt, subs, got)
    if found.held:
        return None
    prover.record(f"replayed on model.assignors ({strategy}): {invariant} fails", False,
                  concrete.findings_text(found))
    return outcome(prover, f"refuted: {concrete.findings_text(found)}",
                   counterexample=tuple(concrete.round_events(strategy, subs, got, protocol)), violated=invariant)


@obligation(
    id="range-balance", invariant="balanced", scope="unbounded",
    statement="range: for every topic and any P >= 0 partitions and C >= 1 subscribers, each subscriber "
              "gets P/C or P/C+1 of the topic's partitions (the first P%C get one more), so per-topic "
              "counts differ by at most one",
    source="RangeAssignor.assignRanges, TopicAssignmentState.maxAssignable / onAssigned",
    assumptions=("no-racks",),
    bounds={"cross_checked_max_partitions": 10, "cross_checked_max_members": 5},
    mutants=("range-ceil-quota",),
)
def range_balance(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    _range_prove(prover, cfg.mutants)
    if cfg.mutants:
        return _range_counterexample(prover, cfg)
    P, C, i, j = z3.Ints("P C i j")
    q, r, split = _range_split(P, C)
    ni, nj = q + _b2i(i < r), q + _b2i(j < r)
    prover.valid("balance: any two subscribers' counts of the topic differ by at most one",
                 z3.And(ni - nj <= 1, nj - ni <= 1), [*split, i >= 0, i < C, j >= 0, j < C])
    prover.witness("tight: some topic gives two subscribers different counts",
                   [*split, i >= 0, i < C, j >= 0, j < C, ni != nj])
    checked = _range_crosscheck(prover, _RANGE_SIZES) + _range_crosscheck_unequal(prover)
    prover.record(f"encoding agrees with model.assignors.range on {checked} concrete instances",
                  checked == len(_RANGE_SIZES) + 1)
    return outcome(prover, "range's per-topic split is balanced for every P and C (induction over the "
                           "subscribers of a topic)", facts={"cross_checked": checked})


@obligation(
    id="range-exact-cover", invariant="complete", scope="unbounded",
    statement="range: for every topic, the subscribers' ranges are contiguous and disjoint and cover "
              "partitions 0..P-1 exactly, for any P >= 0 and C >= 1",
    source="RangeAssignor.assignRanges",
    assumptions=("no-racks",),
)
def range_exact_cover(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    _range_prove(prover)
    # Contiguity (step: next start = start + n) and the exit (last end = P) give an exact tiling;
    # n >= 0 makes the ranges disjoint.
    P, C, nxt, extra = z3.Ints("P C nxt extra")
    q, r, split = _range_split(P, C)
    n, _, _ = _range_step(q, P, nxt, extra)
    prover.valid("ranges never overlap: every subscriber takes n >= 0 partitions from the front",
                 n >= 0, [*split, nxt >= 0, nxt <= P])
    checked = _range_crosscheck(prover, _RANGE_SIZES[::3])
    prover.record(f"encoding agrees with model.assignors.range on {checked} concrete instances",
                  checked == len(_RANGE_SIZES[::3]))
    return outcome(prover, "range's ranges tile each topic's partitions exactly", facts={"cross_checked": checked})


# =============================================================================================
# roundrobin
# =============================================================================================

def _rr_step(pos: Z, N: Z, new_topic: Z = None, mutants: frozenset[str] = frozenset()) -> tuple[Z, Z]:
    """One partition in ``RoundRobinAssignor.assign`` under equal subscriptions.

    The skip loop ``while (!subscribed(assigner.peek())) assigner.next()`` never runs (every member
    subscribes to every topic), so the partition goes to ``assigner.next()``: the member at
    ``pos``; the CircularIterator then moves to ``pos + 1``, wrapping to 0. ``new_topic`` says the
    partition is the first of its topic; the iterator ignores that -- except under the mutant
    ``roundrobin-reset-per-topic``, which starts every topic at the first member.
    """
    if "roundrobin-reset-per-topic" in mutants and new_topic is not None:
        pos = _If(new_topic, z3.IntVal(0), pos)
    return pos, _If(pos + 1 == N, z3.IntVal(0), pos + 1)


def _rr_inv(k: Z, qk: Z, rk: Z, pos: Z, cnt: Z, i: Z, N: Z) -> Z:
    """After ``k`` partitions (``k = qk*N + rk`` ghost split): the iterator is at ``rk`` and member
    ``i`` has ``qk`` partitions, plus one if ``i < rk``."""
    return z3.And(k == qk * N + rk, qk >= 0, rk >= 0, rk < N, pos == rk, cnt == qk + _b2i(i < rk))


@obligation(
    id="roundrobin-balance", invariant="balanced", scope="unbounded",
    statement="roundrobin: under equal subscriptions, for any N >= 1 members and T >= 0 partitions "
              "(all topics together), every member gets T/N or T/N+1 partitions",
    source="RoundRobinAssignor.assign (CircularIterator over sorted members, never reset)",
    assumptions=("equal-subscriptions",),
    bounds={"cross_checked_max_partitions": 12, "cross_checked_max_members": 5},
    mutants=("roundrobin-reset-per-topic",),
)
def roundrobin_balance(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    N, k, qk, rk, pos, cnt, i = z3.Ints("N k qk rk pos cnt i")
    dom = [N >= 1, i >= 0, i < N, k >= 0]
    prover.valid("init: no partition yet, iterator at the first member",
                 _rr_inv(z3.IntVal(0), z3.IntVal(0), z3.IntVal(0), z3.IntVal(0), z3.IntVal(0), i, N), dom)
    inv = _rr_inv(k, qk, rk, pos, cnt, i, N)
    owner, pos2 = _rr_step(pos, N, z3.Bool("first_of_topic"), cfg.mutants)
    cnt2 = cnt + _b2i(owner == i)
    qk2 = _If(rk + 1 == N, qk + 1, qk)
    rk2 = _If(rk + 1 == N, z3.IntVal(0), rk + 1)
    prover.witness("non-vacuous: the loop invariant is satisfiable", [*dom, inv])
    prover.valid("step: partition k goes to member k mod N and the iterator advances",
                 _rr_inv(k + 1, qk2, rk2, pos2, cnt2, i, N), [*dom, inv])
    j, cj = z3.Ints("j cj")
    prover.valid("exit: any two members' counts differ by at most one",
                 z3.And(cnt - cj <= 1, cj - cnt <= 1),
                 [*dom, j >= 0, j < N, inv, _rr_inv(k, qk, rk, pos, cj, j, N)])
    prover.witness("tight: two members can get different counts",
                   [*dom, j >= 0, j < N, inv, _rr_inv(k, qk, rk, pos, cj, j, N), cnt != cj])
    if cfg.mutants:
        return _rr_counterexample(prover, cfg)
    checked = 0
    sizes = [(t0, t1, n) for n in range(1, 6) for t0 in range(0, 7) for t1 in (0, 2, 5)]
    for t0, t1, n in sizes:
        total = t0 + t1
        subs = [Subscription(member_id=f"m{(7 * x) % 11}", topics=("b", "a"),
                             instance_id=(f"s{x}" if x % 3 == 1 else None)) for x in range(n)]
        order = sorted_members(subs)
        solver = z3.Solver()
        solver.set("timeout", cfg.timeout_ms)
        p = z3.IntVal(0)
        owners = []
        for _ in range(total):
            o, p = _rr_step(p, z3.IntVal(n))
            owners.append(o)
        solver.check()
        model = solver.model()
        partitions = [TopicPartition("a", x) for x in range(t0)] + [TopicPartition("b", x) for x in range(t1)]
        expected: dict[str, list[TopicPartition]] = {s.member_id: [] for s in subs}
        for tp, o in zip(partitions, owners, strict=True):
            expected[order[model_int(model, o)].member_id].append(tp)
        got = _try_assign(prover, "roundrobin cross-check", "roundrobin", {"a": t0, "b": t1}, subs)
        if got is None:
            break
        if {m: sorted(v) for m, v in got.assignment.items()} != expected:
            prover.record(f"roundrobin encoding agrees with model.assignors.roundrobin on {t0}+{t1} x {n}", False,
                          f"encoding {expected} vs model {dict(got.assignment)}")
            break
        checked += 1
    prover.record(f"encoding agrees with model.assignors.roundrobin on {checked} concrete instances",
                  checked == len(sizes))
    return outcome(prover, "roundrobin is balanced under equal subscriptions for every N and T "
                           "(induction over the partitions)", facts={"cross_checked": checked})


def _rr_counterexample(prover: Prover, cfg: RunConfig) -> Outcome:
    """Under a mutant: two topics and N members whose unrolled encoding is unbalanced, replayed."""
    for total in range(2, 9):
        for t0 in range(1, total):
            for n in range(2, 5):
                counts = [0] * n
                pos: Z = z3.IntVal(0)
                owners = []
                for x in range(total):
                    o, pos = _rr_step(pos, z3.IntVal(n), z3.BoolVal(x in (0, t0)), cfg.mutants)
                    owners.append(z3.simplify(o).as_long())
                for o in owners:
                    counts[o] += 1
                if max(counts) - min(counts) <= 1:
                    continue
                subs = [Subscription(member_id=f"m{x}", topics=("a", "b")) for x in range(n)]
                found = _replay_assignor(prover, "roundrobin", "balanced", {"a": t0, "b": total - t0}, subs,
                                         cfg.mutants, "eager")
                if found is not None:
                    return found
    return outcome(prover, "the encoding is unbalanced under the mutant, but model.assignors.roundrobin did not "
                           "reproduce it")


# =============================================================================================
# sticky: claim resolution (AbstractStickyAssignor.allSubscriptionsEqual)
# =============================================================================================

class _Claims:
    """The state of the claim-resolution loop, as functions over members and partitions.

    ``claim(m, p)``: m lists p in its owned partitions; ``gen(m)``: the generation it claims with;
    ``kept(m, p)``: p is in ``consumerToOwnedPartitions[m]``; ``has(p)`` / ``owner(p)``:
    ``allPreviousPartitionsToOwner``; ``multi(p)``: ``partitionsWithMultiplePreviousOwners``;
    ``done(m, p)``: the claim was processed.
    """

    def __init__(self, u: Universe, tag: str) -> None:
        M, Pt, B = u.member, u.partition, z3.BoolSort()
        self.u = u
        self.kept = z3.Function(f"kept{tag}", M, Pt, B)
        self.has = z3.Function(f"has{tag}", Pt, B)
        self.owner = z3.Function(f"owner{tag}", Pt, M)
        self.multi = z3.Function(f"multi{tag}", Pt, B)
        self.done = z3.Function(f"done{tag}", M, Pt, B)


def _claims_inv(s: _Claims, claim: Any) -> Z:
    u, M, Pt = s.u, s.u.member, s.u.partition
    return z3.And(
        # I1: a kept partition is kept by the one member the owner map names (so by at most one).
        u.forall([M, Pt], lambda m, p: z3.Implies(s.kept(m, p), z3.And(s.has(p), s.owner(p) == m))),
        # I2: a member keeps only what it claimed.
        u.forall([M, Pt], lambda m, p: z3.Implies(s.kept(m, p), claim(m, p))),
        # I3: a processed claim leaves its partition in the owner map ...
        u.forall([M, Pt], lambda m, p: z3.Implies(s.done(m, p), z3.And(claim(m, p), s.has(p)))),
        # I4: ... kept by the named owner, unless it was claimed twice in one generation.
        u.forall([Pt], lambda p: z3.Implies(s.has(p), z3.Or(s.kept(s.owner(p), p), s.multi(p)))),
        u.forall([Pt], lambda p: z3.Implies(s.has(p), s.done(s.owner(p), p))),
    )


def _claims_init(s: _Claims) -> Z:
    u, M, Pt = s.u, s.u.member, s.u.partition
    return z3.And(u.forall([M, Pt], lambda m, p: z3.And(z3.Not(s.kept(m, p)), z3.Not(s.done(m, p)))),
                  u.forall([Pt], lambda p: z3.And(z3.Not(s.has(p)), z3.Not(s.multi(p)))))


def _claims_step(s: _Claims, t: _Claims, m: Z, p: Z, gen: Any, mutants: frozenset[str]) -> dict[str, Z]:
    """Processing the claim (m, p): one formula per branch of the loop body, keyed by branch name."""
    u, M, Pt = s.u, s.u.member, s.u.partition
    o = s.owner(p)

    def frame(kept: Callable[[Z, Z], Z], has_p: Z, owner_p: Z, multi_p: Z) -> Z:
        return z3.And(
            u.forall([M, Pt], lambda x, y: t.kept(x, y) == kept(x, y)),
            u.forall([M, Pt], lambda x, y: t.done(x, y) == z3.Or(s.done(x, y), z3.And(x == m, y == p))),
            u.forall([Pt], lambda y: t.has(y) == _If(y == p, has_p, s.has(y))),
            u.forall([Pt], lambda y: t.owner(y) == _If(y == p, owner_p, s.owner(y))),
            u.forall([Pt], lambda y: t.multi(y) == _If(y == p, multi_p, s.multi(y))))

    def set_kept(who: Z, value: Z) -> Callable[[Z, Z], Z]:
        return lambda x, y: _If(z3.And(x == who, y == p), value, s.kept(x, y))

    def set_two(a: Z, va: Z, b: Z, vb: Z) -> Callable[[Z, Z], Z]:
        return lambda x, y: _If(z3.And(x == a, y == p), va, _If(z3.And(x == b, y == p), vb, s.kept(x, y)))

    same_gen_keeps_both = "double-claim-both-keep" in mutants
    return {
        "first claimer keeps it": z3.And(z3.Not(s.has(p)), frame(set_kept(m, z3.BoolVal(True)),
                                                               z3.BoolVal(True), m, s.multi(p))),
        "same generation: neither keeps it": z3.And(
            s.has(p), gen(m) == gen(o),
            frame(set_two(o, z3.BoolVal(same_gen_keeps_both), m, z3.BoolVal(same_gen_keeps_both)),
                  z3.BoolVal(True), m, z3.BoolVal(True))),
        "higher generation takes it over": z3.And(
            s.has(p), gen(m) > gen(o),
            frame(set_two(o, z3.BoolVal(False), m, z3.BoolVal(True)), z3.BoolVal(True), m, s.multi(p))),
        "lower generation loses it": z3.And(
            s.has(p), gen(m) < gen(o), frame(lambda x, y: s.kept(x, y), s.has(p), o, s.multi(p))),
    }


def _claims_single_owner(s: _Claims) -> Z:
    u, M, Pt = s.u, s.u.member, s.u.partition
    return u.forall([M, M, Pt], lambda a, b, p: z3.Implies(z3.And(s.kept(a, p), s.kept(b, p)), a == b))


def _claims_bmc(mutants: frozenset[str], timeout_ms: int) -> Any:
    """Smallest reachable double keep: a finite run of the claim loop (2 members, 1 partition)."""
    u = Universe.finite(2, 1, tag="claims")
    M, Pt, Int, B = u.member, u.partition, z3.IntSort(), z3.BoolSort()
    claim = z3.Function("claim_b", M, Pt, B)
    gen = z3.Function("gen_b", M, Int)
    steps = 2
    states = [_Claims(u, f"_b{k}") for k in range(steps + 1)]
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(_claims_init(states[0]))
    picks = []
    for k in range(steps):
        m, p = z3.Const(f"pick_m{k}", M), z3.Const(f"pick_p{k}", Pt)
        picks.append((m, p))
        solver.add(claim(m, p), z3.Not(states[k].done(m, p)))
        solver.add(z3.Or(list(_claims_step(states[k], states[k + 1], m, p, gen, mutants).values())))
    solver.add(z3.Not(_claims_single_owner(states[steps])))
    if solver.check() != z3.sat:
        return None
    model = solver.model()
    order = [u.name_of(model, m).split("_")[0] for m, _ in picks]
    gens = {u.name_of(model, x).split("_")[0]: model_int(model, gen(x)) for x in u.members or ()}
    claims = {u.name_of(model, x).split("_")[0]: [int(u.name_of(model, y).split("_")[0][1:])
                                                  for y in u.partitions or () if model_bool(model, claim(x, y))]
              for x in u.members or ()}
    return order, gens, claims


@obligation(
    id="sticky-claims-single-owner", invariant="single-owner", scope="unbounded",
    statement="sticky / cooperative-sticky: resolving the members' owned-partition claims "
              "(first claimer keeps it; same generation: nobody keeps it; higher generation takes it "
              "over; lower loses) never leaves a partition with two previous owners, for any members, "
              "partitions, claims, generations and processing order",
    source="AbstractStickyAssignor.allSubscriptionsEqual (KAFKA-12984)",
    assumptions=("claims-are-sets",),
    mutants=("double-claim-both-keep",),
)
def sticky_claims_single_owner(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    u = Universe.unbounded("claims")
    M, Pt, Int, B = u.member, u.partition, z3.IntSort(), z3.BoolSort()
    claim = z3.Function("claim", M, Pt, B)
    gen = z3.Function("gen", M, Int)
    s, t = _Claims(u, "0"), _Claims(u, "1")
    m, p = z3.Const("m", M), z3.Const("p", Pt)
    prover.valid("init: before any claim is processed the loop invariant holds",
                 _claims_inv(s, claim), [_claims_init(s)])
    inv = _claims_inv(s, claim)
    guard = [inv, claim(m, p), z3.Not(s.done(m, p))]
    for branch, rel in _claims_step(s, t, m, p, gen, cfg.mutants).items():
        prover.witness(f"non-vacuous: branch '{branch}' is taken from some state satisfying the invariant",
                       [*guard, rel])
        prover.valid(f"step ({branch}) preserves the loop invariant", _claims_inv(t, claim), [*guard, rel])
    prover.valid("the invariant implies: no partition is kept by two members",
                 _claims_single_owner(s), [inv])
    facts: dict[str, Any] = {"strengthening": [
        "a kept partition is kept by the member the owner map names",
        "a member keeps only what it claimed",
        "a processed claim leaves its partition in the owner map, kept by the named owner unless "
        "claimed twice in one generation"]}
    facts["cross_checked"] = 0 if cfg.mutants else _sticky_claims_crosscheck(prover, cfg)
    if prover.status.value == "proved" or not cfg.mutants:
        return outcome(prover, "claim resolution keeps every partition with at most one previous owner "
                               "(induction over the claims, any order)", facts=facts)
    return _claims_counterexample(prover, cfg, facts)


def _claims_counterexample(prover: Prover, cfg: RunConfig, facts: dict[str, Any]) -> Outcome:
    """Under a mutant: a reachable double keep from the finite loop, replayed on the executable assignors."""
    found = _claims_bmc(cfg.mutants, cfg.timeout_ms)
    if found is None:
        return outcome(prover, "the induction step fails under the mutant, but no reachable double keep "
                               "was found within 2 members x 1 partition", facts=facts)
    _, gens, claims = found
    npart = 1 + max((x for xs in claims.values() for x in xs), default=0)
    for strategy, protocol in (("sticky", "eager"), ("cooperative-sticky", "cooperative")):
        subs = [Subscription(member_id=mm, topics=("t",), owned=tuple(TopicPartition("t", x) for x in xs),
                             generation=gens[mm]) for mm, xs in sorted(claims.items())]
        # one more partition than claimed, so that each claimer stays within its quota
        ppt = {"t": npart + len(subs) - 1}
        got = _try_assign(prover, f"{strategy} with {sorted(cfg.mutants)}", strategy, ppt, subs, cfg.mutants)
        if got is None:
            continue
        found = concrete.verdict("single-owner", strategy, ppt, subs, got)
        if not found.held:
            prover.record(f"replayed on model.assignors ({strategy}): single-owner fails", False,
                          concrete.findings_text(found))
            trace = concrete.round_events(strategy, subs, got, protocol)
            return outcome(prover, f"refuted: {strategy} gives a doubly claimed partition to both claimers",
                           counterexample=tuple(trace), violated="single-owner", facts=facts)
    return outcome(prover, "the solver found a double keep but the executable assignors did not reproduce it",
                   facts=facts)


def _sticky_claims_crosscheck(prover: Prover, cfg: RunConfig) -> int:
    """Conflicting claims on concrete instances: the executable assignors keep every partition single-owned."""
    rng = random.Random(cfg.seed)
    checked = 0
    for _ in range(40):
        n = rng.randint(2, 5)
        parts = rng.randint(1, 8)
        subs = []
        for x in range(n):
            owned = tuple(TopicPartition("t", y) for y in sorted(rng.sample(range(parts), rng.randint(0, parts))))
            subs.append(Subscription(member_id=f"m{x}", topics=("t",), owned=owned, generation=rng.randint(1, 3)))
        for strategy in ("sticky", "cooperative-sticky"):
            got = _try_assign(prover, f"{strategy} on conflicting claims", strategy, {"t": parts}, subs, cfg.mutants)
            if got is None:
                return checked
            found = concrete.verdict("single-owner", strategy, {"t": parts}, subs, got)
            if not found.held:
                prover.record(f"{strategy} keeps partitions single-owned on conflicting claims", False,
                              f"input {subs}: {concrete.findings_text(found)}")
                return checked
            checked += 1
    prover.record(f"model.assignors sticky / cooperative-sticky keep single owners on {checked} concrete "
                  "instances with conflicting claims", checked == 80)
    return checked


# =============================================================================================
# sticky: the constrained builder's quota promise (equal subscriptions)
# =============================================================================================

def _quota_split(P: Z, N: Z) -> tuple[Z, Z, Z, list[Z]]:
    minq, maxq, r = z3.Ints("minQuota maxQuota r")
    return minq, maxq, r, [N >= 1, P >= 0, minq >= 0, minq * N + r == P, r >= 0, r < N,
                           maxq == minq + _b2i(r > 0)]


class _QuotaState:
    """After ``i`` members of step 1 (assignOwnedPartitions): ``c`` members kept maxQuota
    (currentNumMembersWithOverMinQuotaPartitions), ``K`` partitions kept in all, ``D`` partitions
    still missing to bring the under-minQuota members to minQuota, ``U`` under-minQuota members,
    ``E`` members on unfilledMembersWithExactlyMinQuotaPartitions."""

    def __init__(self, tag: str) -> None:
        self.i, self.c, self.K, self.D, self.U, self.E = z3.Ints(" ".join(f"{v}{tag}" for v in "icKDUE"))


def _quota_member(o: Z, c: Z, minq: Z, maxq: Z, r: Z) -> tuple[Z, Z, Z, Z]:
    """One member of step 1 with ``o`` valid owned partitions: (under, keeper, other, kept)."""
    under = o < minq
    keeper = z3.And(z3.Not(under), o >= maxq, c < r)
    other = z3.And(z3.Not(under), z3.Not(keeper))
    kept = _If(under, o, _If(keeper, maxq, minq))
    return under, keeper, other, kept


def _quota_step(s: _QuotaState, t: _QuotaState, o: Z, minq: Z, maxq: Z, r: Z) -> Z:
    under, keeper, other, kept = _quota_member(o, s.c, minq, maxq, r)
    c2 = s.c + _b2i(keeper)
    return z3.And(
        t.i == s.i + 1, t.c == c2, s.K + kept == t.K, s.D + _If(under, minq - o, 0) == t.D,
        s.U + _b2i(under) == t.U,
        # keeper reaching the expected number clears the exactly-min list; an "other" member is
        # added to it while the expected number is not reached.
        _If(z3.And(keeper, c2 == r), 0, s.E + _b2i(z3.And(other, s.c < r))) == t.E)


def _quota_inv(s: _QuotaState, minq: Z, r: Z) -> Z:
    return z3.And(s.i >= 0, s.c >= 0, s.c <= r, s.c <= s.i, s.D >= 0, s.U >= 0, s.i - s.c >= s.U,
                  s.i * minq + s.c == s.K + s.D,
                  z3.Implies(s.c < r, s.i - s.c - s.U == s.E), z3.Implies(s.c >= r, s.E == 0))


def _quota_prove(prover: Prover) -> None:
    P, N, o = z3.Ints("P N o")
    minq, maxq, r, split = _quota_split(P, N)
    s0, s, t = _QuotaState("0"), _QuotaState(""), _QuotaState("'")
    init = z3.And(s0.i == 0, s0.c == 0, s0.K == 0, s0.D == 0, s0.U == 0, s0.E == 0)
    prover.valid("init: the step-1 loop invariant holds before the first member", _quota_inv(s0, minq, r),
                 [*split, init])
    pre = [*split, _quota_inv(s, minq, r), s.i < N, o >= 0, _quota_step(s, t, o, minq, maxq, r)]
    for label, cond in (("under minQuota", o < minq), ("keeps maxQuota", z3.And(o >= maxq, s.c < r, o >= minq)),
                        ("keeps minQuota, joins the exactly-min list", z3.And(o >= minq, z3.Not(z3.And(o >= maxq, s.c < r)), s.c < r)),
                        ("keeps minQuota, all maxQuota slots taken", z3.And(o >= minq, s.c >= r))):
        prover.witness(f"non-vacuous: step-1 branch '{label}' is reachable", [*pre, cond])
    prover.valid("step: assignOwnedPartitions preserves the loop invariant, and the maxQuota count never "
                 "goes down", z3.And(_quota_inv(t, minq, r), t.c >= s.c), pre)
    # Exit: step 3 (assignRoundRobin) can always finish, with exactly P % N members at maxQuota.
    L = P - s.K
    prover.valid("exit: the unassigned partitions fill every under-minQuota member to minQuota, and what "
                 "is left (r - c) fits the exactly-minQuota members, one each; so verifyUnfilledMembers "
                 "never throws and exactly P % N members end at maxQuota",
                 z3.And(L >= s.D, r - s.c == L - s.D, z3.Implies(s.c < r, r - s.c <= s.E + s.U)),
                 [*split, _quota_inv(s, minq, r), s.i == N])


def _quota_member_claim(prover: Prover) -> None:
    """Kafka's promise for one arbitrary member j, given the loop lemmas."""
    P, N, oj, cj, cN = z3.Ints("P N o_j c_j c_N")
    polled = z3.Bool("polled_j")
    minq, maxq, r, split = _quota_split(P, N)
    under, keeper, other, kept = _quota_member(oj, cj, minq, maxq, r)
    cj2 = cj + _b2i(keeper)
    in_exactly_min = z3.Or(under,  # filled to minQuota in step 3, then moved to the exactly-min list
                           z3.And(other, cj < r, cN < r))  # added in step 1 and never cleared
    final = _If(keeper, maxq, minq) + _b2i(polled)
    premises = [*split, oj >= 0, cj >= 0, cj <= r,  # the loop invariant before j
                cj2 <= cN, cN <= r,  # the maxQuota count only grows, up to r (step lemma)
                z3.Implies(polled, z3.And(in_exactly_min, cN < r))]  # only r - c_N > 0 polls remain
    prover.witness("non-vacuous: a member can be polled for the extra partition", [*premises, polled])
    prover.valid("each member ends at minQuota or maxQuota and keeps min(valid owned, its quota) of its "
                 "owned partitions", z3.And(z3.Or(final == minq, final == maxq), kept == _min(oj, final)),
                 premises)


def _quota_crosscheck(prover: Prover, cfg: RunConfig) -> int:
    """The executable sticky assignor on concrete instances is a model of the unrolled encoding.

    Each instance: one topic of P partitions, N members with equal subscriptions, member x owning
    ``o[x]`` distinct partitions in one generation. The executable result's kept and final counts
    must satisfy the unrolled step-1 loop for *some* processing order (Kafka's order is HashMap
    iteration; the model documents its own) and the step-3 rule.
    """
    rng = random.Random(cfg.seed + 1)
    checked = 0
    total = 30
    for _ in range(total):
        n = rng.randint(1, 5)
        P = rng.randint(0, 12)
        pool = list(range(P))
        rng.shuffle(pool)
        owned: list[list[int]] = []
        for _x in range(n):
            k = rng.randint(0, len(pool))
            owned.append(sorted(pool[:k]))
            pool = pool[k:]
        subs = [Subscription(member_id=f"m{x}", topics=("t",),
                             owned=tuple(TopicPartition("t", y) for y in owned[x]), generation=1) for x in range(n)]
        got = _try_assign(prover, "sticky cross-check", "sticky", {"t": P}, subs)
        if got is None:
            return checked
        kept = [len(set(got.assignment.get(f"m{x}", ())) & set(subs[x].owned)) for x in range(n)]
        final = [len(got.assignment.get(f"m{x}", ())) for x in range(n)]
        solver = z3.Solver()
        solver.set("timeout", cfg.timeout_ms)
        minq, maxq, r = P // n, -(-P // n), P % n
        order = [z3.Int(f"order{k}") for k in range(n)]
        solver.add(z3.Distinct(order), *[z3.And(x >= 0, x < n) for x in order])
        c = z3.IntVal(0)
        polled = [z3.Bool(f"polled{x}") for x in range(n)]
        cs_before: list[Any] = []
        for k in range(n):
            o_k = z3.IntVal(0)
            for x in range(n):
                o_k = _If(order[k] == x, len(owned[x]), o_k)
            cs_before.append(c)
            _, keeper, _, kept_k = _quota_member(o_k, c, minq, maxq, r)
            for x in range(n):
                solver.add(z3.Implies(order[k] == x, kept_k == kept[x]))
            c = c + _b2i(keeper)
        cN = c
        for k in range(n):
            for x in range(n):
                o = len(owned[x])
                under, keeper, other, _ = _quota_member(z3.IntVal(o), cs_before[k], minq, maxq, r)
                in_list = z3.Or(under, z3.And(other, cs_before[k] < r, cN < r))
                solver.add(z3.Implies(order[k] == x, z3.And(
                    z3.Implies(polled[x], in_list),
                    final[x] == _If(keeper, maxq, minq) + _b2i(polled[x]))))
        solver.add(z3.Sum([_b2i(b) for b in polled]) == r - cN)
        if solver.check() != z3.sat:
            prover.record("sticky's result is a model of the constrained-builder encoding", False,
                          f"P={P}, owned={owned}, model kept={kept}, final={final}")
            return checked
        checked += 1
    prover.record(f"model.assignors.sticky's results are models of the encoding on {checked} concrete instances",
                  checked == total)
    return checked


@obligation(
    id="sticky-quota", invariant="sticky", scope="unbounded",
    statement="sticky / cooperative-sticky under equal subscriptions, any N >= 1 members and P >= 0 "
              "partitions: every member ends with minQuota = P/N or maxQuota = ceil(P/N) partitions, "
              "exactly P % N of them at maxQuota, every partition is assigned, and each member keeps "
              "min(|valid owned|, its quota) of the partitions it owned",
    source="AbstractStickyAssignor.ConstrainedAssignmentBuilder (assignOwnedPartitions, assignRoundRobin, "
           "verifyUnfilledMembers)",
    assumptions=("equal-subscriptions", "no-racks", "claims-are-sets"),
    bounds={"cross_checked_max_partitions": 12, "cross_checked_max_members": 5},
)
def sticky_quota(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    _quota_prove(prover)
    _quota_member_claim(prover)
    checked = _quota_crosscheck(prover, cfg)
    return outcome(prover, "the constrained builder keeps Kafka's quota promise for every N and P "
                           "(induction over step 1, counting argument for step 3)",
                   facts={"cross_checked": checked,
                          "strengthening": ["K + D = i * minQuota + c (kept plus missing partitions)",
                                            "c <= r, and the exactly-min list has i - c - U members while "
                                            "c < r, none once c = r"]})


# =============================================================================================
# cooperative-sticky: the withholding rule (KIP-429)
# =============================================================================================

def _withhold_formulas(u: Universe, mutants: frozenset[str], tag: str) -> tuple[list[Z], Z, dict[str, Any]]:
    """The constrained builder's transfer rule over sets, on top of the claim-resolution lemma.

    ``claim``: raw claims (Subscription.ownedPartitions). ``kept``/``owner``/``multi``: what claim
    resolution left, constrained only by its proved invariant. ``keep``: step 1 keeps a subset of
    kept, never a doubly claimed one; ``mr``: maybeRevokedPartitions (a kept partition not kept in
    step 1 is recorded with its previous owner). ``newA``: step 3 gives each partition nobody
    kept to at most one member -- any choice, so the proof covers every fill order.
    ``assignNewPartition`` marks a newly assigned partition as transferring when it was
    maybe-revoked from another member or doubly claimed; ``adjustAssignment`` removes it.
    """
    M, Pt, B = u.member, u.partition, z3.BoolSort()
    f = {name: z3.Function(f"{name}{tag}", *sig) for name, sig in {
        "claim": (M, Pt, B), "kept": (M, Pt, B), "has": (Pt, B), "owner": (Pt, M), "multi": (Pt, B),
        "keep": (M, Pt, B), "hasMr": (Pt, B), "mr": (Pt, M), "newA": (M, Pt, B)}.items()}
    claim, kept, has, owner, multi = f["claim"], f["kept"], f["has"], f["owner"], f["multi"]
    keep, hasMr, mr, newA = f["keep"], f["hasMr"], f["mr"], f["newA"]
    facts = [
        # claim resolution (obligation sticky-claims-single-owner), after every claim is processed
        u.forall([M, Pt], lambda m, p: z3.Implies(kept(m, p), z3.And(has(p), owner(p) == m, claim(m, p)))),
        u.forall([M, Pt], lambda m, p: z3.Implies(claim(m, p), has(p))),
        u.forall([Pt], lambda p: z3.Implies(has(p), z3.Or(kept(owner(p), p), multi(p)))),
        # step 1
        u.forall([M, Pt], lambda m, p: z3.Implies(keep(m, p), z3.And(kept(m, p), z3.Not(multi(p))))),
        u.forall([M, Pt], lambda m, p: z3.Implies(z3.And(kept(m, p), z3.Not(keep(m, p)), z3.Not(multi(p))),
                                                  z3.And(hasMr(p), mr(p) == m))),
        u.forall([Pt], lambda p: z3.Implies(hasMr(p), z3.And(kept(mr(p), p), z3.Not(keep(mr(p), p))))),
        # step 3: only partitions nobody kept, each to at most one member
        u.forall([M, M, Pt], lambda a, b, p: z3.Implies(z3.And(newA(a, p), keep(b, p)), z3.BoolVal(False))),
        u.forall([M, M, Pt], lambda a, b, p: z3.Implies(z3.And(newA(a, p), newA(b, p)), a == b)),
    ]

    def transferring(m: Z, p: Z) -> Z:
        if "coop-no-withhold" in mutants:
            return z3.BoolVal(False)
        return z3.And(newA(m, p), z3.Or(z3.And(hasMr(p), mr(p) != m), multi(p)))

    def assigned(m: Z, p: Z) -> Z:
        return z3.Or(keep(m, p), z3.And(newA(m, p), z3.Not(transferring(m, p))))

    no_overlap = u.forall([M, M, Pt], lambda a, b, p: z3.Not(z3.And(
        a != b, assigned(a, p), z3.Not(claim(a, p)), claim(b, p), z3.Not(assigned(b, p)))))
    no_overlap_valid = u.forall([M, M, Pt], lambda a, b, p: z3.Not(z3.And(
        a != b, assigned(a, p), z3.Not(kept(a, p)), kept(b, p), z3.Not(assigned(b, p)))))
    return facts, z3.And(no_overlap, no_overlap_valid), {"assigned": assigned, **f}


def _withhold_general(u: Universe, mutants: frozenset[str]) -> tuple[list[Z], Z]:
    """General builder: transferring = (U added) & (U revoked) of the target, removed from its new owner."""
    M, Pt, B = u.member, u.partition, z3.BoolSort()
    claim, target = z3.Function("gclaim", M, Pt, B), z3.Function("gtarget", M, Pt, B)
    facts = [u.forall([M, M, Pt], lambda a, b, p: z3.Implies(z3.And(target(a, p), target(b, p)), a == b))]

    def added_somewhere(p: Z) -> Z:
        return u.exists([M], lambda m: z3.And(target(m, p), z3.Not(claim(m, p))))

    def revoked_somewhere(p: Z) -> Z:
        return u.exists([M], lambda m: z3.And(claim(m, p), z3.Not(target(m, p))))

    def assigned(m: Z, p: Z) -> Z:
        if "coop-no-withhold" in mutants:
            return target(m, p)
        return z3.And(target(m, p), z3.Not(z3.And(z3.Not(claim(m, p)), added_somewhere(p), revoked_somewhere(p))))

    no_overlap = u.forall([M, M, Pt], lambda a, b, p: z3.Not(z3.And(
        a != b, assigned(a, p), z3.Not(claim(a, p)), claim(b, p), z3.Not(assigned(b, p)))))
    return facts, no_overlap


def _withhold_crosscheck(prover: Prover, cfg: RunConfig) -> tuple[int, list[str]]:
    """cooperative-sticky = sticky's target minus what is transferring, and nothing added is revoked.

    Equal subscriptions (constrained builder): both forms of the rule must hold. Unequal ones
    (general builder): the raw-claims form, which is how Kafka computes the transfer; where the
    executable check of ``model.invariants.assignment`` still fails there, the instance is returned
    as an observed divergence.
    """
    rng = random.Random(cfg.seed + 2)
    checked = 0
    divergences: list[str] = []
    total = 40
    for k in range(total):
        n = rng.randint(1, 5)
        topics = {"a": rng.randint(0, 6), "b": rng.randint(0, 6)}
        equal = k % 2 == 0
        subs = []
        for x in range(n):
            tops = ("a", "b") if equal else rng.choice([("a",), ("b",), ("a", "b")])
            owned = [TopicPartition(tp, y) for tp in tops for y in range(topics[tp]) if rng.random() < 0.4]
            subs.append(Subscription(member_id=f"m{x}", topics=tops, owned=tuple(owned), generation=rng.randint(1, 2)))
        target = _try_assign(prover, "sticky target", "sticky", topics, subs)
        coop = _try_assign(prover, "cooperative-sticky", "cooperative-sticky", topics, subs)
        if target is None or coop is None:
            return checked, divergences
        expected = {m: tuple(sorted(set(v) - coop.transferring)) for m, v in target.assignment.items()}
        got = {m: tuple(sorted(v)) for m, v in coop.assignment.items()}
        raw = concrete.added_and_revoked_raw(subs, coop)
        valid = concrete.verdict("revoke-before-assign", "cooperative-sticky", topics, subs, coop)
        if got != expected or raw or (equal and not valid.held):
            prover.record("cooperative-sticky is sticky's target minus the transferring partitions, and "
                          "revoke-before-assign holds", False,
                          f"input {subs}: target {dict(target.assignment)}, cooperative {got}; raw overlap "
                          f"{sorted(raw)}; {concrete.findings_text(valid)}")
            return checked, divergences
        if not valid.held:
            divergences.append(f"{concrete.findings_text(valid)} (input: {subs})")
        checked += 1
    prover.record(f"model.assignors.cooperative_sticky agrees with the rule on {checked} concrete instances "
                  "(equal and unequal subscriptions)", checked == total)
    return checked, divergences


@obligation(
    id="coop-withhold", invariant="revoke-before-assign", scope="unbounded",
    statement="cooperative-sticky: no partition is added to one member and revoked from another in the same "
              "assignment, for any members, partitions, claims and any target the builders choose "
              "(constrained builder, equal subscriptions: maybe-revoked or doubly claimed partitions are "
              "withheld, and the rule holds on raw and on valid claims; general builder: added & revoked "
              "over the raw claims is withheld, as Kafka computes it)",
    source="CooperativeStickyAssignor.adjustAssignment / computePartitionsTransferringOwnership; "
           "ConstrainedAssignmentBuilder.assignNewPartition; KIP-429",
    assumptions=("no-racks", "claims-are-sets"),
    mutants=("coop-no-withhold",),
)
def coop_withhold(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    u = Universe.unbounded("coop")
    facts, no_overlap, fs = _withhold_formulas(u, cfg.mutants, "")
    a, b, p = z3.Const("a", u.member), z3.Const("b", u.partition), z3.Const("p", u.partition)
    prover.witness("non-vacuous: a partition can be maybe-revoked from one member and assigned to another",
                   [*facts, fs["hasMr"](p), fs["newA"](a, p), fs["mr"](p) != a])
    cex_model = prover.valid("constrained builder: (U added) & (U revoked) is empty, with owned read as the raw "
                             "claims and as the claims that survive resolution", no_overlap, facts)
    gfacts, gclaim = _withhold_general(u, cfg.mutants)
    prover.valid("general builder: (U added) & (U revoked) over the raw claims (Kafka's own computation) is "
                 "empty after removing added & revoked", gclaim, gfacts)
    del b
    checked, divergences = _withhold_crosscheck(prover, cfg) if not cfg.mutants else (0, [])
    summary = "cooperative-sticky never adds a partition that another member is revoking in the same generation"
    if cex_model is None or not cfg.mutants:
        found: dict[str, Any] = {"cross_checked": checked}
        if divergences:
            found["general_builder_valid_claims_divergences"] = divergences[:3]
            found["general_builder_valid_claims_divergence_count"] = len(divergences)
        return outcome(prover, summary, facts=found)
    return _withhold_counterexample(prover, cfg)


def _withhold_counterexample(prover: Prover, cfg: RunConfig) -> Outcome:
    """Under a mutant: instances where the count-level encoding predicts a move, replayed on the model."""
    P, N = z3.Ints("P N")
    minq, maxq, r, split = _quota_split(P, N)
    o = [z3.Int(f"o{x}") for x in range(4)]
    solver = z3.Solver()
    solver.set("timeout", cfg.timeout_ms)
    solver.add(*split, N >= 2, N <= 4, P <= 8, *[x >= 0 for x in o], z3.Sum(o) <= P)
    solver.add(*[z3.Implies(x >= N, o[x] == 0) for x in range(4)])
    # someone owns more than maxQuota (must give some up) while someone is under minQuota (takes them)
    solver.add(z3.Or([o[x] > maxq for x in range(4)]), z3.Or([z3.And(x < N, o[x] < minq) for x in range(4)]))
    for _ in range(20):
        if solver.check() != z3.sat:
            break
        model = solver.model()
        n, parts = model_int(model, N), model_int(model, P)
        owned = [model_int(model, o[x]) for x in range(n)]
        solver.add(z3.Or(n != N, parts != P, *[o[x] != owned[x] for x in range(n)]))
        nxt = 0
        subs = []
        for x in range(n):
            subs.append(Subscription(member_id=f"m{x}", topics=("t",),
                                     owned=tuple(TopicPartition("t", y) for y in range(nxt, nxt + owned[x])),
                                     generation=1))
            nxt += owned[x]
        got = _try_assign(prover, "cooperative-sticky with the mutant", "cooperative-sticky", {"t": parts}, subs,
                          cfg.mutants)
        if got is None:
            break
        found = concrete.verdict("revoke-before-assign", "cooperative-sticky", {"t": parts}, subs, got)
        if not found.held:
            prover.record("replayed on model.assignors.cooperative_sticky: revoke-before-assign fails", False,
                          concrete.findings_text(found))
            return outcome(prover, "refuted: cooperative-sticky hands a partition to its new owner in the "
                                   "generation its old owner revokes it",
                           counterexample=tuple(concrete.round_events("cooperative-sticky", subs, got,
                                                                      "cooperative")),
                           violated="revoke-before-assign")
    return outcome(prover, "the solver refutes the rule under the mutant, but no concrete instance "
                           "reproduced it")


OBLIGATIONS: tuple[Obligation, ...] = (range_balance, range_exact_cover, roundrobin_balance,
                                       sticky_claims_single_owner, sticky_quota, coop_withhold)
