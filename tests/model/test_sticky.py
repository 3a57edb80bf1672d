"""The sticky assignors' claim rules, orders, known Kafka bugs, deviations and mutants.

Kafka's own examples are in test_sticky_kafka.py; properties in test_sticky_properties.py.
"""

from __future__ import annotations

import pytest

from model.assignors import ASSIGNORS, COOPERATIVE, EAGER
from model.assignors.sticky import StickyAssignorFailure, sticky_target
from model.assignors.sticky_claims import build_universe, java_string_key, resolve_claims
from model.types import GroupAssignment
from tests.model.sticky_support import (
    STRATEGIES,
    Problem,
    added_and_revoked,
    run,
    sets,
    sub,
    tp,
    validity_errors,
)

both = pytest.mark.parametrize("strategy", STRATEGIES)


def test_registry_names_and_protocols():
    assert ASSIGNORS["sticky"].protocols == (EAGER,)
    assert ASSIGNORS["cooperative-sticky"].protocols == (COOPERATIVE, EAGER)
    assert ASSIGNORS["sticky"].assign.__module__ == "model.assignors.sticky"
    assert ASSIGNORS["cooperative-sticky"].assign.__module__ == "model.assignors.cooperative_sticky"


# -- the shape of an answer -----------------------------------------------------------------------

@both
def test_every_member_gets_a_sorted_entry_and_eager_withholds_nothing(strategy):
    problem = Problem({"b": 3, "a": 2, "unused": 4}, (sub("m2", ["a", "b"]), sub("m1", ["b", "missing"])))
    result = run(strategy, problem)
    assert isinstance(result, GroupAssignment)
    assert set(result.assignment) == {"m1", "m2"}
    for tps in result.assignment.values():
        assert list(tps) == sorted(tps)
    assert validity_errors(problem, result) == []
    assert sum(len(t) for t in result.assignment.values()) == 5  # nobody owned anything: all placed
    assert result.transferring == frozenset()


@both
def test_empty_group(strategy):
    result = run(strategy, Problem({"t": 3}, ()))
    assert dict(result.assignment) == {} and result.transferring == frozenset()


@both
def test_duplicate_member_ids_are_rejected(strategy):
    with pytest.raises(ValueError, match="duplicate member id 'a'"):
        run(strategy, Problem({"t": 1}, (sub("a", ["t"]), sub("a", ["t"]))))


@both
def test_topics_without_partitions_have_no_metadata(strategy):
    problem = Problem({"t": 0, "u": -3, "v": 2}, (sub("a", ["t", "u", "v"]), sub("b", ["v"])))
    result = run(strategy, problem)
    assert sorted(p for tps in result.assignment.values() for p in tps) == [tp("v", 0), tp("v", 1)]


def test_the_result_does_not_depend_on_the_order_subscriptions_are_given_in():
    subs = (sub("c", ["t", "u"], [tp("t", 0)], 2), sub("a", ["t"], [tp("t", 1), tp("u", 0)], 1),
            sub("b", ["u"], [tp("t", 0)], 2))
    for strategy in STRATEGIES:
        one = run(strategy, Problem({"t": 4, "u": 3}, subs))
        other = run(strategy, Problem({"t": 4, "u": 3}, tuple(reversed(subs))))
        assert dict(one.assignment) == dict(other.assignment) and one.transferring == other.transferring


# -- step 0: claims --------------------------------------------------------------------------------

def claims_of(problem: Problem):
    u = build_universe(problem.partitions_per_topic, problem.subscriptions)
    c = resolve_claims(u)
    owned = {u.members[m].member_id: sorted(u.tp(p) for p in c.owned[m]) for m in range(len(u.members))}
    return owned, {u.tp(p) for p in c.multiple_previous_owners}, c


def test_same_generation_double_claim_nobody_keeps_it():
    owned, multiple, _ = claims_of(Problem({"t": 3}, (sub("a", ["t"], [tp("t", 0), tp("t", 1)], 4),
                                                      sub("b", ["t"], [tp("t", 0)], 4))))
    assert owned == {"a": [tp("t", 1)], "b": []}
    assert multiple == {tp("t", 0)}


def test_higher_generation_wins_lower_loses_in_either_order():
    for first, second in [("a", "b"), ("b", "a")]:
        gens = {"a": 7, "b": 3}
        owned, multiple, c = claims_of(Problem({"t": 2}, (
            sub(first, ["t"], [tp("t", 0)], gens[first]), sub(second, ["t"], [tp("t", 0)], gens[second]))))
        assert owned == {"a": [tp("t", 0)], "b": []} and multiple == set()
        assert c.max_generation == 7


def test_a_member_listing_a_partition_twice_loses_it_as_java_does():
    """Java's allSubscriptionsEqual compares the member with itself: same generation, so nobody keeps it."""
    owned, multiple, _ = claims_of(Problem({"t": 2}, (sub("a", ["t"], [tp("t", 0), tp("t", 0), tp("t", 1)], 1),)))
    assert owned == {"a": [tp("t", 1)]} and multiple == {tp("t", 0)}


def test_third_claimer_with_higher_generation_after_a_same_generation_conflict():
    """It takes the partition over (compared with the last claimer) yet it stays 'multiply owned'."""
    problem = Problem({"t": 2}, (sub("a", ["t"], [tp("t", 0)], 1), sub("b", ["t"], [tp("t", 0)], 1),
                                 sub("c", ["t"], [tp("t", 0)], 2)))
    owned, multiple, _ = claims_of(problem)
    assert owned == {"a": [], "b": [], "c": [tp("t", 0)]} and multiple == {tp("t", 0)}
    # so the constrained builder drops it from c's owned partitions: c keeps t-0 only by chance of the
    # round robin, and the cooperative assignor withholds it even from c
    coop = run("cooperative-sticky", problem)
    assert tp("t", 0) in coop.transferring


def test_claims_of_unknown_topics_and_missing_partitions_are_dropped():
    problem = Problem({"t": 2}, (sub("a", ["t"], [tp("gone", 0), tp("t", 5), tp("t", -1), tp("t", 1)], 1),
                                 sub("b", ["t"], [], 1)))
    owned, _, _ = claims_of(problem)
    assert owned == {"a": [tp("t", 1)], "b": []}
    for strategy in STRATEGIES:
        result = run(strategy, problem)
        assert sets(result) == {"a": {tp("t", 1)}, "b": {tp("t", 0)}}
        assert validity_errors(problem, result) == []


def test_negative_generations_mean_none():
    owned, _, c = claims_of(Problem({"t": 1}, (sub("a", ["t"], [tp("t", 0)], -7), sub("b", ["t"], [tp("t", 0)], -1))))
    assert owned == {"a": [], "b": []} and c.max_generation == -1  # -7 and -1 are the same generation


# -- orders ----------------------------------------------------------------------------------------

def test_static_members_come_first_where_java_iterates_a_hash_map():
    """Which of two members owning maxQuota keeps it follows model.assignors.order (static first)."""
    topics = ["t"]
    base = [sub("a", topics, [tp("t", 0), tp("t", 1)], 1), sub("b", topics, [tp("t", 2), tp("t", 3)], 1),
            sub("c", topics, [], 1)]
    # 4 partitions, 3 members: one may keep 2
    assert sets(run("sticky", Problem({"t": 4}, tuple(base))))["a"] == {tp("t", 0), tp("t", 1)}
    b_static = sub("b", topics, [tp("t", 2), tp("t", 3)], 1, instance_id="instance-b")
    result = run("sticky", Problem({"t": 4}, (base[0], b_static, base[2])))
    assert sets(result)["b"] == {tp("t", 2), tp("t", 3)}
    assert sets(result)["a"] == {tp("t", 0)}


# A and B claim t0-0 in the same generation, older than C's (the newest), and C holds all of t0. Kafka 4.1.1
# (the live check: test_sticky_java.py) gives t0-0 back to A, the first of the two in iteration order.
EQUAL_OLDER_CLAIMERS = Problem({"t0": 2, "t1": 1}, (
    sub("A", ["t0"], [tp("t0", 0)], 1), sub("B", ["t0"], [tp("t0", 0)], 1),
    sub("C", ["t0", "t1"], [tp("t0", 0), tp("t0", 1), tp("t1", 0)], 2)))


@both
def test_the_first_of_equal_older_claimers_is_the_previous_owner(strategy):
    """Among members that claimed a partition in the same generation below the newest, the first iterated stays its
    previous owner, and the partition goes back to it.

    ``GeneralAssignmentBuilder.updatePrevAssignment`` replaces a partition's previous owner only for a strictly
    higher generation, so the first claimer in the iteration of the subscriptions (a HashMap in Java: the order
    of model.assignors.order, A before B here) keeps it. C kept t0-0 and t0-1 (the newest claim wins:
    assignOwnedPartitions); ``performReassignments`` sends t0-0 back to its previous owner, as C holds 2+ more
    than it, and t0-1 to the least loaded. Were the last equal claimer the previous owner instead (issue 17's
    mutation survivor ``sticky_general.py:150``, ``>`` -> ``>=``), B would get t0-0 and A t0-1: equally valid
    and balanced, so only Java's exact answer tells the two apart.
    """
    problem = EQUAL_OLDER_CLAIMERS
    target = sticky_target(problem.partitions_per_topic, problem.subscriptions)
    got = {target.universe.members[m].member_id: sorted(target.universe.tp(p) for p in parts)
           for m, parts in enumerate(target.assignment)}
    assert got == {"A": [tp("t0", 0)], "B": [tp("t0", 1)], "C": [tp("t1", 0)]}
    result = run(strategy, problem)
    if strategy == "sticky":
        assert sets(result) == {"A": {tp("t0", 0)}, "B": {tp("t0", 1)}, "C": {tp("t1", 0)}}
    else:  # A claimed t0-0, so it is not "added" to A; t0-1 moves from C to B: withheld this round
        assert sets(result) == {"A": {tp("t0", 0)}, "B": set(), "C": {tp("t1", 0)}}
        assert result.transferring == {tp("t0", 1)}


def test_tree_set_ties_break_on_member_id_not_instance_id():
    """The general builder's least-loaded choice is Java's TreeSet (count, member id)."""
    # unequal subscriptions: a also subscribes to a topic without metadata
    problem = Problem({"t": 1}, (sub("b", ["t"], instance_id="0-first"), sub("a", ["t", "nothing"])))
    assert sticky_target(problem.partitions_per_topic, problem.subscriptions).all_subscriptions_equal is False
    assert run("sticky", problem).assignment["a"] == (tp("t", 0),)


def test_member_ids_sort_as_java_strings():
    """Java compares UTF-16 code units: U+10000 (a surrogate pair) sorts before U+FFFF."""
    low, high = "\U00010000", "\uffff"
    assert sorted([high, low], key=java_string_key) == [low, high]
    assert sorted([high, low]) == [high, low]  # Python's code point order differs
    result = run("sticky", Problem({"t": 3}, (sub(high, ["t"]), sub(low, ["t"]))))
    # round robin over the unfilled members sorted as Java sorts them: low gets t-0 and t-2
    assert result.assignment[low] == (tp("t", 0), tp("t", 2))


def test_partition_movements_move_back_the_lowest_partition():
    from model.assignors.sticky_general import PartitionMovements

    moves = PartitionMovements()
    for p in (7, 3, 5):
        moves.move_partition(p, 0, old=1, new=2)  # three partitions of topic 0 moved 1 -> 2
    assert moves.actual_partition_to_move(9, 0, old=2, new=1) == 3  # moving 2 -> 1: take back the lowest
    moves.move_partition(3, 0, old=2, new=1)
    assert 3 not in moves.by_partition  # it went back where it came from: no record left
    assert moves.actual_partition_to_move(9, 0, old=2, new=1) == 5


# -- Kafka bugs the model keeps (each confirmed against kafka-clients 4.1.1, see test_sticky_java) -----

@both
def test_kafka_bug_leading_empty_subscription_passes_as_equal(strategy):
    """allSubscriptionsEqual seeds its comparison with the first *non-empty* subscription.

    Members with an empty topic list that come before it are never compared, so the group counts as
    equally subscribed and the constrained builder gives them partitions of topics they do not
    subscribe to. Kafka 4.1.1 gives A t0-0 here.
    """
    problem = Problem({"t0": 3}, (sub("A", []), sub("B", ["t0"]), sub("C", ["t0"])))
    result = run(strategy, problem)
    assert sets(result) == {"A": {tp("t0", 0)}, "B": {tp("t0", 1)}, "C": {tp("t0", 2)}}
    assert validity_errors(problem, result) == ["A: t0-0 of a topic it does not subscribe to"]
    # an empty subscription that is not first is compared, and the general builder gives it nothing
    later = Problem({"t0": 3}, (sub("B", []), sub("A", ["t0"]), sub("C", ["t0"])))
    assert run(strategy, later).assignment["B"] == ()


@both
def test_kafka_bug_previous_owner_rule_ignores_the_subscription(strategy):
    """performReassignments moves a partition back to its previous owner without checking it still subscribes.

    B claims t0-0 with a stale generation after switching to t1; C (newer generation) owns all of
    t0 while D has nothing. Moving t0-0 "back" gives it to B. Kafka 4.1.1 does exactly this.
    """
    problem = Problem({"t0": 4, "t1": 2}, (
        sub("A", ["t1"], [], 2), sub("B", ["t1"], [tp("t0", 0)], 1),
        sub("C", ["t0"], [tp("t0", i) for i in range(4)], 2), sub("D", ["t0"], [], 2)))
    target = sticky_target(problem.partitions_per_topic, problem.subscriptions)
    got = {target.universe.members[m].member_id: sorted(target.universe.tp(p) for p in parts)
           for m, parts in enumerate(target.assignment)}
    assert got == {"A": [tp("t1", 0)], "B": [tp("t0", 0), tp("t1", 1)], "C": [tp("t0", 2), tp("t0", 3)],
                   "D": [tp("t0", 1)]}
    result = run(strategy, problem)
    # B claimed t0-0, so for the cooperative assignor it is not even "added": B gets it in both
    assert tp("t0", 0) in result.assignment["B"]
    assert "B: t0-0 of a topic it does not subscribe to" in validity_errors(problem, result)
    if strategy == "cooperative-sticky":  # t0-1 moves from C to D: withheld this round
        assert result.transferring == {tp("t0", 1)}


@both
def test_kafka_bug_previous_owner_set_aside_raises(strategy):
    """Java throws NullPointerException when a partition's previous owner was set aside as fixed.

    B (stale generation) claims t0-0 but now subscribes only to t1, which nobody else wants: B holds
    all it can and is fixed; when the rebalance reaches t0-0, Java looks B up among the active
    members and dereferences null. The model raises StickyAssignorFailure.
    """
    problem = Problem({"t0": 2, "t1": 1}, (
        sub("B", ["t1"], [tp("t0", 0)], 1), sub("C", ["t0"], [tp("t0", 0), tp("t0", 1)], 2),
        sub("D", ["t0"], [], 2)))
    with pytest.raises(StickyAssignorFailure, match="NullPointerException"):
        run(strategy, problem)


# -- mutants ---------------------------------------------------------------------------------------

@both
def test_mutant_double_claim_both_keep_breaks_single_owner(strategy):
    problem = Problem({"t": 3}, (sub("c1", ["t"], [tp("t", 0), tp("t", 1)], 1),
                                 sub("c2", ["t"], [tp("t", 0), tp("t", 2)], 1), sub("c3", ["t"], [], 1)))
    fine = run(strategy, problem)
    assert validity_errors(problem, fine) == []
    broken = run(strategy, problem, frozenset({"double-claim-both-keep"}))
    assert "t-0 assigned to c1 and c2" in validity_errors(problem, broken)


@both
def test_mutant_double_claim_both_keep_in_the_general_builder(strategy):
    problem = Problem({"t": 2, "u": 1}, (sub("c1", ["t"], [tp("t", 0)], 1), sub("c2", ["t", "u"], [tp("t", 0)], 1)))
    assert validity_errors(problem, run(strategy, problem)) == []
    broken = run(strategy, problem, frozenset({"double-claim-both-keep"}))
    assert "t-0 assigned to c1 and c2" in validity_errors(problem, broken)


def test_mutant_coop_no_withhold_breaks_revoke_before_assign():
    problem = Problem({"t": 4}, (sub("a", ["t"], [tp("t", i) for i in range(4)], 1), sub("b", ["t"], [], 1)))
    fine = run("cooperative-sticky", problem)
    added, revoked = added_and_revoked(problem, fine)
    assert not added & revoked and fine.transferring == {tp("t", 2), tp("t", 3)}
    broken = run("cooperative-sticky", problem, frozenset({"coop-no-withhold"}))
    added, revoked = added_and_revoked(problem, broken)
    assert added & revoked == {tp("t", 2), tp("t", 3)}
    assert broken.transferring == frozenset()


def test_unknown_mutants_are_rejected():
    with pytest.raises(ValueError, match="unknown mutant"):
        run("sticky", Problem({"t": 1}, (sub("a", ["t"]),)), frozenset({"no-such-mutant"}))
