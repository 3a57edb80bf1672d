"""A certificate for the stickiness oracle: the optimum k it reports is reachable, and k+1 is not.

``model.stickiness`` measures how sticky an assignment is against the best one possible under the
same balance constraint: a min-cost flow gives ``optimum_kept = k``. A flow solver's answer is one
number; this module checks it independently, with Z3, on each instance:

* **k is reachable** -- Z3 finds an assignment that keeps k partitions with their valid owner and
  respects the constraint (``sat``). The witness is decoded into a concrete assignment and
  measured again with ``model.stickiness``'s own counting, so the encoding cannot drift from the
  oracle's definitions.
* **k+1 is not** -- no such assignment keeps k+1 (``unsat``).

No optimisation engine is used (Z3's Optimize stalls at these sizes); the two feasibility questions
are enough.

The encoding is reduced by symmetry. Partitions never appear: those of one *topic class* (topics
with the same subscribers, ``model.stickiness.TopicClass``) are interchangeable except for who
validly owns them, so the unknowns are counts -- ``x[m][c]``, the partitions of class c member m
gets, and ``y[m][c] <= x[m][c]``, how many of those are m's own (at most ``keepable[m][c]``). A class
can hold all its assignees iff ``sum_m x[m][c] <= size(c)`` (own partitions are distinct between
members, the rest are filled from the others). Members with the same subscriptions and the same
keepable counts are interchangeable too; their totals are ordered to break that symmetry.

The balance constraint is the oracle's (``Quota``: every partition assigned, each member at
minQuota or maxQuota, at most ``num_max`` at maxQuota; ``Counts``: each member exactly its count).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import z3

from model.proofs import concrete
from model.proofs.core import Outcome, RunConfig, obligation, outcome
from model.proofs.solver import Prover, model_int
from model.stickiness import Counts, OracleProblem, Quota, oracle_problem, solve, stickiness
from model.types import Subscription, TopicPartition


def _encode(problem: OracleProblem, tag: str) -> tuple[list[Any], Any, dict[tuple[str, int], tuple[Any, Any]]]:
    """Constraints, the kept total, and the (x, y) variables per (member, class)."""
    constraints: list[Any] = []
    xy: dict[tuple[str, int], tuple[Any, Any]] = {}
    totals: dict[str, Any] = {}
    for m in problem.members:
        terms = []
        for c, cls in enumerate(problem.classes):
            if m not in cls.subscribers:
                continue
            x, y = z3.Int(f"x{tag}[{m}][{c}]"), z3.Int(f"y{tag}[{m}][{c}]")
            own = problem.keepable[m].get(c, 0)
            constraints += [x >= 0, y >= 0, y <= x, y <= own]
            xy[(m, c)] = (x, y)
            terms.append(x)
        totals[m] = z3.Sum(terms) if terms else z3.IntVal(0)
    for c, cls in enumerate(problem.classes):
        assigned = [xy[(m, c)][0] for m in problem.members if (m, c) in xy]
        total = z3.Sum(assigned) if assigned else z3.IntVal(0)
        if isinstance(problem.constraint, Quota):
            constraints.append(total == cls.size)  # every partition assigned
        else:
            constraints.append(total <= cls.size)
    constraint = problem.constraint
    if isinstance(constraint, Quota):
        at_max = []
        for m in problem.members:
            constraints.append(z3.Or(totals[m] == constraint.min_quota, totals[m] == constraint.max_quota))
            at_max.append(z3.If(totals[m] == constraint.max_quota, 1, 0))
        if constraint.max_quota != constraint.min_quota:
            constraints.append(z3.Sum(at_max) <= constraint.num_max)
    else:
        for m in problem.members:
            constraints.append(totals[m] == constraint.counts[m])
    # symmetry: interchangeable members take their totals in a fixed (descending) order
    profile: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    for m in problem.members:
        subs = tuple(c for c, cls in enumerate(problem.classes) if m in cls.subscribers)
        key = (subs, tuple(sorted(problem.keepable[m].items())),
               constraint.counts[m] if isinstance(constraint, Counts) else None)
        profile[key].append(m)
    for group in profile.values():
        for a, b in zip(group, group[1:], strict=False):
            constraints.append(totals[a] >= totals[b])
    kept = z3.Sum([y for _, y in xy.values()]) if xy else z3.IntVal(0)
    return constraints, kept, xy


def _decode(problem: OracleProblem, partitions_per_topic: Mapping[str, int], owner: Mapping[TopicPartition, str],
            model: Any, xy: Mapping[tuple[str, int], tuple[Any, Any]]) -> dict[str, list[TopicPartition]]:
    """A concrete assignment realising the witness: own partitions first, then the rest of the class."""
    out: dict[str, list[TopicPartition]] = {m: [] for m in problem.members}
    for c, cls in enumerate(problem.classes):
        parts = [TopicPartition(t, i) for t in cls.topics for i in range(partitions_per_topic[t])]
        free = [tp for tp in parts if owner.get(tp) not in cls.subscribers]
        own: dict[str, list[TopicPartition]] = defaultdict(list)
        for tp in parts:
            if owner.get(tp) in cls.subscribers:
                own[owner[tp]].append(tp)
        leftovers: list[TopicPartition] = []
        wants: list[tuple[str, int]] = []
        for m in problem.members:
            if (m, c) not in xy:
                leftovers += own.get(m, [])
                continue
            x, y = (model_int(model, v) for v in xy[(m, c)])
            mine = own.get(m, [])
            out[m] += mine[:y]
            leftovers += mine[y:]
            wants.append((m, x - y))
        pool = leftovers + free
        for m, n in wants:
            out[m] += pool[:n]
            pool = pool[n:]
    return out


def certify(partitions_per_topic: Mapping[str, int], subs: Sequence[Subscription],
            assignment: Mapping[str, Sequence[TopicPartition]], prover: Prover, label: str) -> tuple[int, bool]:
    """Certify the oracle's optimum on one instance. Returns (k, certified)."""
    from model.invariants.assignment import valid_claims

    problem = oracle_problem(partitions_per_topic, subs, assignment)
    k = solve(problem)
    constraints, kept, xy = _encode(problem, label)
    model = prover.witness(f"{label}: k={k} kept partitions are reachable under the oracle's constraint",
                           [*constraints, kept >= k])
    ok = model is not None
    if model is not None:
        claims = valid_claims(partitions_per_topic, subs)
        decoded = _decode(problem, partitions_per_topic, claims.owner, model, xy)
        measured = stickiness(partitions_per_topic, subs, decoded)
        same_constraint = measured.constraint == problem.constraint or isinstance(problem.constraint, Counts)
        agree = measured.kept >= k and same_constraint
        prover.record(f"{label}: the witness, decoded into an assignment, keeps {measured.kept} by "
                      "model.stickiness's own count", agree)
        ok = ok and agree
    none = prover.expect_unsat(f"{label}: no assignment under the constraint keeps k+1={k + 1}",
                               [*constraints, kept >= k + 1])
    ok = ok and prover.last.ok
    del none
    return k, ok


def instances(seed: int, count: int, max_members: int, max_partitions: int) -> list[tuple[dict[str, int], list[Subscription], str]]:
    """Generated rounds: equal and unequal subscriptions, claims with stale and conflicting generations."""
    rng = random.Random(seed)
    out: list[tuple[dict[str, int], list[Subscription], str]] = []
    for k in range(count):
        n = rng.randint(2, max_members)
        ntopics = rng.randint(1, 4)
        budget = rng.randint(ntopics, max_partitions)
        sizes = [max(0, budget // ntopics + rng.randint(-2, 2)) for _ in range(ntopics)]
        topics = {f"t{i}": s for i, s in enumerate(sizes)}
        equal = k % 2 == 0
        subs = []
        for x in range(n):
            tops = tuple(topics) if equal else tuple(t for t in topics if rng.random() < 0.6) or ("t0",)
            owned = tuple(TopicPartition(t, p) for t in topics for p in range(topics[t]) if rng.random() < 1.5 / n)
            subs.append(Subscription(member_id=f"m{x:03d}", topics=tops, owned=owned, generation=rng.randint(1, 3)))
        strategy = ("sticky", "cooperative-sticky", "range", "roundrobin")[k % 4]
        out.append((topics, subs, strategy))
    return out


@obligation(
    id="stickiness-optimum", invariant="stickiness-gap", scope="bounded",
    statement="the stickiness oracle's optimum k (min-cost flow) is exact on generated rounds: an "
              "assignment under the same balance constraint keeping k partitions with their valid owner "
              "exists, and none keeps k+1",
    source="model.stickiness (optimum_kept); the balance constraints of ConstrainedAssignmentBuilder",
    bounds={"instances": 24, "max_members": 40, "max_partitions": 400},
    deepen=lambda b: {"instances": b["instances"], "max_members": b["max_members"] * 2,
                      "max_partitions": b["max_partitions"] * 2},
)
def stickiness_optimum(cfg: RunConfig) -> Outcome:
    bounds = dict(stickiness_optimum.bounds)
    bounds.update(cfg.bounds or {})
    prover = Prover(cfg.timeout_ms)
    certified = 0
    ks: list[int] = []
    largest = (0, 0)
    for i, (topics, subs, strategy) in enumerate(instances(cfg.seed, bounds["instances"], bounds["max_members"],
                                                           bounds["max_partitions"])):
        try:
            result = concrete.run_assignor(strategy, topics, subs)
        except Exception as exc:  # a crashing assignor is a finding, reported, not a dead run
            prover.record(f"instance {i}: {strategy} ran", False, f"{type(exc).__name__}: {exc}")
            continue
        k, ok = certify(topics, subs, result.assignment, prover, f"instance {i} ({strategy}, {len(subs)} members, "
                                                                 f"{sum(topics.values())} partitions)")
        ks.append(k)
        if ok:
            certified += 1
            largest = max(largest, (len(subs), sum(topics.values())))
    return outcome(prover, f"the oracle's optimum is certified on {certified} of {bounds['instances']} generated rounds",
                   bounds=bounds, facts={"certified": certified, "optima": ks,
                                         "largest_members": largest[0], "largest_partitions": largest[1]})
