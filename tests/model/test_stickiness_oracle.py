"""The stickiness oracle (model.stickiness): hand-computed optima, and the min-cost flow against brute force."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from model.invariants.assignment import subscribed_topics, valid_claims
from model.stickiness import (
    Counts,
    OracleProblem,
    Quota,
    optimum_kept,
    oracle_problem,
    quota_optimum,
    solve,
    solve_flow,
    stickiness,
    stickiness_gap,
)
from model.types import GroupAssignment, Subscription, TopicPartition

TP = TopicPartition


def sub(member_id: str, topics: str, owned: Sequence[TopicPartition] = (), generation: int = 1) -> Subscription:
    return Subscription(member_id, tuple(topics.split()), tuple(owned), generation)


def test_unequal_subscriptions_couple_members_through_their_counts() -> None:
    # a{t1,t2} owns t1-0; b{t1} owns nothing; each gets one partition. If a kept t1-0, b would have
    # nothing it may take, so no assignment with these counts keeps anything.
    subs = [sub("a", "t1 t2", [TP("t1", 0)]), sub("b", "t1")]
    got = {"a": [TP("t2", 0)], "b": [TP("t1", 0)]}
    measure = stickiness({"t1": 1, "t2": 1}, subs, got)
    assert measure.constraint == Counts({"a": 1, "b": 1})
    assert (measure.kept, measure.optimum, measure.gap) == (0, 0, 0)


def test_equal_subscriptions_use_kafka_quotas() -> None:
    # 7 partitions over 3 members: minQuota 2, maxQuota 3, one member at maxQuota. a owned 5, b 2, c is new:
    # the best balanced assignment keeps 3 of a's and both of b's.
    t = [TP("t", p) for p in range(7)]
    subs = [sub("a", "t", t[:5]), sub("b", "t", t[5:]), sub("c", "t")]
    fresh = {"a": t[0:3], "b": t[3:5], "c": t[5:7]}  # a keeps 3, b keeps none
    measure = stickiness({"t": 7}, subs, fresh)
    assert measure.constraint == Quota(2, 3, 1)
    assert (measure.kept, measure.optimum, measure.gap) == (3, 5, 2)
    best = {"a": t[0:3], "b": t[5:7], "c": t[3:5]}
    assert stickiness_gap({"t": 7}, subs, best) == 0


def test_the_maxquota_slot_goes_where_it_keeps_one_more() -> None:
    # 5 partitions, 2 members: one at 3. a owned 3, b owned 2: a should hold the third.
    t = [TP("t", p) for p in range(5)]
    subs = [sub("a", "t", t[:3]), sub("b", "t", t[3:])]
    assert optimum_kept({"t": 5}, subs, {"a": t[:2], "b": t[2:]}) == 5


def test_quota_is_kept_for_cooperative_intermediate_rounds_that_hold_fewer() -> None:
    # a owned all 4; b joins. Cooperative-sticky keeps 2 for a and withholds 2: b gets nothing yet.
    t = [TP("t", p) for p in range(4)]
    subs = [sub("a", "t", t), sub("b", "t", generation=-1)]
    withheld = GroupAssignment({"a": tuple(t[:2]), "b": ()}, frozenset(t[2:]))
    measure = stickiness({"t": 4}, subs, withheld)
    assert measure.constraint == Quota(2, 2, 0)
    assert (measure.kept, measure.optimum, measure.gap) == (2, 2, 0)


def test_equal_subscriptions_fall_back_to_counts_when_the_quota_is_broken() -> None:
    # Range gives c0 four partitions of 6 over 2 members (javadoc example); the quota of 3 is broken.
    subs = [sub("C0", "t0 t1", [TP("t0", 2), TP("t1", 2)]), sub("C1", "t0 t1", [TP("t0", 0)])]
    got = {"C0": [TP("t0", 0), TP("t0", 1), TP("t1", 0), TP("t1", 1)], "C1": [TP("t0", 2), TP("t1", 2)]}
    measure = stickiness({"t0": 3, "t1": 3}, subs, got)
    assert measure.constraint == Counts({"C0": 4, "C1": 2})
    assert (measure.kept, measure.optimum) == (0, 3)


def test_only_valid_claims_of_subscribed_topics_count() -> None:
    subs = [sub("a", "t", [TP("t", 0), TP("t", 9), TP("gone", 0), TP("u", 0)], generation=3),
            sub("b", "t u", [TP("t", 0)], generation=3)]  # t-0: same-generation conflict, void
    got = {"a": [TP("t", 0)], "b": [TP("t", 1), TP("u", 0)]}
    measure = stickiness({"t": 2, "u": 1}, subs, got)
    assert measure.kept == 0 and measure.optimum == 0


def test_no_members_or_no_claims_is_zero() -> None:
    assert optimum_kept({"t": 3}, [], {}) == 0
    assert optimum_kept({"t": 3}, [sub("a", "t")], {"a": [TP("t", 0), TP("t", 1), TP("t", 2)]}) == 0


# ---------------------------------------------------------------- brute force


def brute_force(partitions_per_topic: Mapping[str, int], subs: Sequence[Subscription],
                problem: OracleProblem) -> int:
    """The most partitions kept by any assignment satisfying ``problem.constraint``, by enumeration."""
    claims = valid_claims(partitions_per_topic, subs)
    topics = {s.member_id: subscribed_topics(partitions_per_topic, s) for s in subs}
    wanted = sorted({TP(t, p) for ts in topics.values() for t in ts for p in range(partitions_per_topic[t])})
    choices = [[None, *[s.member_id for s in subs if tp.topic in topics[s.member_id]]] for tp in wanted]
    best = -1
    for owners in itertools.product(*choices):
        counts = {s.member_id: 0 for s in subs}
        for owner in owners:
            if owner is not None:
                counts[owner] += 1
        constraint = problem.constraint
        if isinstance(constraint, Quota):
            if None in owners or any(c not in (constraint.min_quota, constraint.max_quota) for c in counts.values()):
                continue
            if constraint.num_max and sum(c == constraint.max_quota for c in counts.values()) != constraint.num_max:
                continue
        elif counts != dict(constraint.counts):
            continue
        kept = sum(1 for tp, owner in zip(wanted, owners, strict=True) if owner and claims.owner.get(tp) == owner)
        best = max(best, kept)
    assert best >= 0, "the achieved assignment itself satisfies the constraint"
    return best


@st.composite
def tiny_rounds(draw: st.DrawFn) -> tuple[dict[str, int], list[Subscription], dict[str, list[TopicPartition]]]:
    topics = {name: draw(st.integers(0, 3)) for name in draw(st.sets(st.sampled_from(["t", "u", "v"]), min_size=1))}
    universe = [TP(t, p) for t, n in sorted(topics.items()) for p in range(n)]
    if len(universe) > 6:  # keep the enumeration small: at most 4 ** 6 candidate assignments
        universe = universe[:6]
        topics = {t: sum(1 for tp in universe if tp.topic == t) for t in topics}
    names = ["a", "b", "c"][: draw(st.integers(1, 3))]
    equal = draw(st.booleans())
    all_topics = sorted(topics)
    subs = []
    for name in names:
        mine = all_topics if equal else draw(st.lists(st.sampled_from(all_topics + ["x"]), unique=True))
        owned = draw(st.lists(st.sampled_from(universe + [TP("x", 0)]), max_size=4)) if universe else []
        subs.append(Subscription(name, tuple(mine), tuple(owned), draw(st.sampled_from([-1, 1, 2]))))
    # a valid assignment: each wanted partition to one subscriber, or (sometimes) to nobody
    wanted = [tp for tp in universe if any(tp.topic in s.topics for s in subs)]
    assignment: dict[str, list[TopicPartition]] = {name: [] for name in names}
    for tp in wanted:
        takers = [s.member_id for s in subs if tp.topic in s.topics]
        owner = draw(st.sampled_from([*takers, None]))
        if owner is not None:
            assignment[owner].append(tp)
    return topics, subs, assignment


@settings(max_examples=100)
@given(tiny_rounds())
def test_flow_optimum_equals_brute_force(round_: tuple[dict[str, int], list[Subscription],
                                                      dict[str, list[TopicPartition]]]) -> None:
    topics, subs, assignment = round_
    problem = oracle_problem(topics, subs, assignment)
    optimum = solve_flow(problem)
    assert optimum == brute_force(topics, subs, problem)
    assert solve(problem) == optimum
    if isinstance(problem.constraint, Quota):
        assert optimum == quota_optimum(problem)
    assert 0 <= problem.achieved_kept <= optimum  # the achieved assignment is one of the candidates
