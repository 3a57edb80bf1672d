"""The stickiness oracle: how many partitions could have stayed with their owner, and did not.

Kafka's sticky assignors promise balance first and stickiness second, and only two stickiness facts
are formal (``model.invariants.assignment``, invariant ``sticky``). Everything beyond is a *measure*:
the **stickiness gap** of a round is ``optimum_kept - achieved_kept`` where

* ``achieved_kept`` counts the partitions that stayed with their *valid* owner: the pairs
  (member, partition) with the partition in the member's keepable set (a valid claim, see
  ``valid_claims``, of a topic the member still subscribes to) and in its new assignment;
* ``optimum_kept`` is the most partitions any assignment could keep with their valid owner while
  respecting the same *balance constraint* (below), the members' subscriptions, and one owner per
  partition.

The balance constraint
----------------------

Which assignments count as "as balanced" as the one produced? groupspec uses one of two, and says
which in :attr:`OracleProblem.constraint`:

``Quota`` (equal subscriptions)
    When every member subscribes to the same existing topics, P partitions over N members, Kafka's
    constrained builder gives every member ``minQuota = P // N`` or ``maxQuota = ceil(P / N)``
    partitions, exactly ``P % N`` of them maxQuota, and assigns every partition. That is the
    constraint -- provided the achieved assignment respects it (no member above maxQuota, at most
    ``P % N`` at maxQuota), as cooperative-sticky's intermediate rounds do (they hold *fewer*). The
    optimum has a closed form, :func:`quota_optimum`: ``sum_m min(k_m, minQuota) + min(P % N,
    #{m: k_m >= maxQuota})`` with k_m the member's keepable count, because every partition is
    subscribed by everyone, so the remaining ones can always fill the quotas.
``Counts`` (everything else)
    Unequal subscriptions have no quota. Kafka's balance definition (counts within one, or no
    under-loaded member can take an over-loaded member's partition) is not a per-member bound a flow
    can carry, so groupspec holds the assignment to its **own count vector**: every member gets
    exactly as many (existing, subscribed) partitions as it got. The gap then measures the stickiness
    lost *given* those counts; it cannot see stickiness lost by choosing a worse count vector. The same
    constraint is used for equal subscriptions when the achieved assignment breaks the quota (range,
    for instance, is balanced per topic only).

The optimum as a min-cost flow
------------------------------

:func:`solve` uses the closed form under ``Quota`` and this flow under ``Counts``;
:func:`solve_flow` runs the flow in both cases (the tests check that the two agree, and both against
brute force). Partitions are never nodes. Topics with the same set of subscribers are merged into
one *class*: for every member their partitions are interchangeable, except for which member validly
owns each. The network (solved with ``networkx.max_flow_min_cost``) is::

    source -> member m            capacity: its quota (minQuota, plus 1 through a shared "extra" node of
                                  capacity P % N) or its count
    member m -> group(m) -> class cost 0: any partition of a class it subscribes to (group(m) = the
                                  member's set of classes, shared by members with equal subscriptions)
    member m -> class c           cost -1, capacity k_mc: keep one of its own partitions of class c
    class c -> sink               capacity: the number of partitions in the class

A flow of value F with cost -K is realised by an assignment keeping K partitions: within a class,
each member first takes its kept partitions, then the others fill the rest (the class capacity
bounds the total). Conversely every assignment gives such a flow. So ``optimum_kept = -min cost`` of
a maximum flow. The graph has O(members + member-class pairs with keepable partitions + classes)
edges, independent of the partition count: 10,000 partitions over 1,000 consumers is a few thousand
edges (``benchmarks/bench_oracle.py``).

When the achieved assignment is valid (``single-owner`` and ``subscribed-only`` hold) it is itself a
maximum flow of the network, so ``0 <= gap``. On an invalid assignment the measure is computed on
its valid part and clamped at 0; it means little there, and the invariants already fail.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import networkx as nx

from model.invariants.assignment import Claims, same_existing_topics, subscribed_topics, valid_claims
from model.types import GroupAssignment, Subscription, TopicPartition

AssignmentLike = GroupAssignment | Mapping[str, Iterable[TopicPartition]]


@dataclass(frozen=True, slots=True)
class Quota:
    """Every partition assigned; each member minQuota or maxQuota, exactly ``num_max`` at maxQuota."""

    min_quota: int
    max_quota: int
    num_max: int


@dataclass(frozen=True, slots=True)
class Counts:
    """Each member exactly ``counts[member]`` partitions (the achieved assignment's count vector)."""

    counts: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class TopicClass:
    """Topics with one and the same set of subscribers; their partitions are interchangeable."""

    topics: tuple[str, ...]
    size: int  # partitions in all these topics
    subscribers: frozenset[str]


@dataclass(frozen=True, slots=True)
class OracleProblem:
    """Everything the optimum depends on, at the granularity of topic classes.

    ``keepable[m][c]`` is how many of member ``m``'s keepable partitions are in class ``c`` (an index
    into ``classes``). The proofs certify :func:`solve` on this value (k reachable, k+1 not).
    """

    members: tuple[str, ...]
    classes: tuple[TopicClass, ...]
    keepable: Mapping[str, Mapping[int, int]]
    constraint: Quota | Counts
    achieved_kept: int


@dataclass(frozen=True, slots=True)
class Stickiness:
    kept: int
    optimum: int
    constraint: Quota | Counts

    @property
    def gap(self) -> int:
        return max(0, self.optimum - self.kept)


def _assignment_map(assignment: AssignmentLike) -> Mapping[str, Iterable[TopicPartition]]:
    return assignment.assignment if isinstance(assignment, GroupAssignment) else assignment


def oracle_problem(partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription],
                   assignment: AssignmentLike, *, claims: Claims | None = None) -> OracleProblem:
    """Reduce a round to the oracle's input: classes, keepable counts, the balance constraint."""
    claims = claims if claims is not None else valid_claims(partitions_per_topic, subscriptions)
    raw = _assignment_map(assignment)
    members = tuple(sub.member_id for sub in subscriptions)
    topics_of = {sub.member_id: subscribed_topics(partitions_per_topic, sub) for sub in subscriptions}

    subscribers: dict[str, set[str]] = defaultdict(set)
    for member, topics in topics_of.items():
        for topic in topics:
            subscribers[topic].add(member)
    by_subscribers: dict[frozenset[str], list[str]] = defaultdict(list)
    for topic in sorted(subscribers):
        by_subscribers[frozenset(subscribers[topic])].append(topic)
    classes = tuple(TopicClass(tuple(ts), sum(partitions_per_topic[t] for t in ts), who)
                    for who, ts in sorted(by_subscribers.items(), key=lambda item: item[1]))
    class_of = {topic: index for index, cls in enumerate(classes) for topic in cls.topics}

    keepable: dict[str, dict[int, int]] = {}
    counts: dict[str, int] = {}
    kept = 0
    for member in members:
        topics = topics_of[member]
        owned = claims.owned.get(member, frozenset())
        mine: dict[int, int] = defaultdict(int)
        for topic, n in Counter(tp.topic for tp in owned).items():
            if topic in topics:
                mine[class_of[topic]] += n
        keepable[member] = dict(mine)
        got = set(raw.get(member, ()))
        got.difference_update([tp for tp in got if tp.topic not in topics
                               or not 0 <= tp.partition < partitions_per_topic[tp.topic]])
        counts[member] = len(got)
        kept += len(got.intersection(owned))  # owned: valid claims, one owner each; got: subscribed only

    constraint: Quota | Counts = Counts(counts)
    if members and same_existing_topics(partitions_per_topic, subscriptions):
        total = sum(cls.size for cls in classes)
        min_quota, extra = divmod(total, len(members))
        max_quota = min_quota + (1 if extra else 0)
        at_max = sum(1 for c in counts.values() if c == max_quota) if extra else 0
        if all(c <= max_quota for c in counts.values()) and at_max <= extra:
            constraint = Quota(min_quota, max_quota, extra)
    return OracleProblem(members, classes, keepable, constraint, kept)


def flow_network(problem: OracleProblem) -> nx.DiGraph:
    """The min-cost flow network of the module docstring (nodes are tagged tuples)."""
    graph = nx.DiGraph()
    source, sink = ("source",), ("sink",)
    constraint = problem.constraint
    if isinstance(constraint, Quota) and constraint.num_max:
        graph.add_edge(source, ("extra",), capacity=constraint.num_max, weight=0)
    groups: dict[str, tuple[int, ...]] = {}
    for member in problem.members:
        groups[member] = tuple(i for i, cls in enumerate(problem.classes) if member in cls.subscribers)
    for member in problem.members:
        node = ("member", member)
        if isinstance(constraint, Quota):
            graph.add_edge(source, node, capacity=constraint.min_quota, weight=0)
            if constraint.num_max:
                graph.add_edge(("extra",), node, capacity=1, weight=0)
        else:
            graph.add_edge(source, node, capacity=constraint.counts[member], weight=0)
        if groups[member]:
            graph.add_edge(node, ("group", groups[member]), weight=0)
        for index, count in problem.keepable[member].items():
            if count:
                graph.add_edge(node, ("class", index), capacity=count, weight=-1)
    for group in set(groups.values()):
        for index in group:
            graph.add_edge(("group", group), ("class", index), weight=0)
    for index, cls in enumerate(problem.classes):
        graph.add_edge(("class", index), sink, capacity=cls.size, weight=0)
    graph.add_node(source)
    graph.add_node(sink)
    return graph


def solve(problem: OracleProblem) -> int:
    """The optimum number of kept partitions.

    Under a :class:`Quota` constraint the closed form (:func:`quota_optimum`, the flow's value: the
    tests check both against brute force); otherwise the flow (:func:`solve_flow`).
    """
    if isinstance(problem.constraint, Quota):
        return quota_optimum(problem)
    return solve_flow(problem)


def solve_flow(problem: OracleProblem) -> int:
    """The optimum number of kept partitions: minus the cost of a min-cost maximum flow."""
    if not any(problem.keepable[m] for m in problem.members):
        return 0
    graph = flow_network(problem)
    flow = nx.max_flow_min_cost(graph, ("source",), ("sink",))
    return -int(nx.cost_of_flow(graph, flow))


def quota_optimum(problem: OracleProblem) -> int:
    """The closed form of the optimum under a :class:`Quota` constraint (see the module docstring)."""
    constraint = problem.constraint
    if not isinstance(constraint, Quota):
        raise ValueError("quota_optimum needs a Quota constraint")
    totals = [sum(problem.keepable[m].values()) for m in problem.members]
    bonus = sum(1 for k in totals if k >= constraint.max_quota) if constraint.num_max else 0
    return sum(min(k, constraint.min_quota) for k in totals) + min(constraint.num_max, bonus)


def stickiness(partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription],
               assignment: AssignmentLike, *, claims: Claims | None = None) -> Stickiness:
    """Achieved and optimum kept partitions, and the constraint they were measured under."""
    problem = oracle_problem(partitions_per_topic, subscriptions, assignment, claims=claims)
    return Stickiness(problem.achieved_kept, solve(problem), problem.constraint)


def optimum_kept(partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription],
                 assignment: AssignmentLike) -> int:
    """The most partitions any assignment under the same balance constraint keeps with their owner."""
    return solve(oracle_problem(partitions_per_topic, subscriptions, assignment))


def stickiness_gap(partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription],
                   assignment: AssignmentLike) -> int:
    """Partitions that could have stayed with their valid owner under the same balance, but did not."""
    return stickiness(partitions_per_topic, subscriptions, assignment).gap
