"""cooperative-sticky specifics: what is withheld, and how follow-up rebalances finish the job.

Kafka's shared cases run for both assignors in test_sticky_kafka.py; the mutants in test_sticky.py
and test_sticky_invariants.py.
"""

from __future__ import annotations

from model.assignors.cooperative_sticky import compute_partitions_transferring_ownership
from model.assignors.sticky import sticky_target
from tests.model.sticky_support import (
    Problem,
    added_and_revoked,
    balance_errors,
    follow_up,
    run,
    sets,
    settle,
    sub,
    tp,
    validity_errors,
)


def test_withheld_partitions_go_to_nobody_and_arrive_in_the_follow_up():
    """A member joins: the partitions it will get are revoked first, assigned in the next generation."""
    topics = ["t"]
    problem = Problem({"t": 6}, (sub("a", topics, [tp("t", i) for i in range(6)], 5), sub("b", topics, [], 5)))
    first = run("cooperative-sticky", problem)
    assert first.assignment["a"] == (tp("t", 0), tp("t", 1), tp("t", 2))  # keeps the first minQuota by (partition, topic)
    assert first.assignment["b"] == ()
    assert first.transferring == {tp("t", 3), tp("t", 4), tp("t", 5)}
    added, revoked = added_and_revoked(problem, first)
    assert added == set() and revoked == first.transferring  # a revokes them; nobody gets them yet
    second = run("cooperative-sticky", follow_up(problem, first, 6))
    assert sets(second) == {"a": {tp("t", 0), tp("t", 1), tp("t", 2)}, "b": {tp("t", 3), tp("t", 4), tp("t", 5)}}
    assert second.transferring == frozenset()


def test_the_eager_assignor_gives_the_target_at_once():
    topics = ["t"]
    problem = Problem({"t": 6}, (sub("a", topics, [tp("t", i) for i in range(6)], 5), sub("b", topics, [], 5)))
    eager = run("sticky", problem)
    assert sets(eager) == {"a": {tp("t", 0), tp("t", 1), tp("t", 2)}, "b": {tp("t", 3), tp("t", 4), tp("t", 5)}}
    assert eager.transferring == frozenset()


def test_general_builder_transferring_is_added_and_revoked():
    """Unequal subscriptions: transferring = (∪ target - owned) ∩ (∪ owned - target), owned as sent."""
    problem = Problem({"t": 4, "u": 2}, (
        sub("a", ["t"], [tp("t", i) for i in range(4)], 3),
        sub("b", ["t", "u"], [tp("u", 0), tp("u", 1)], 3),
        sub("c", ["t"], [], 3)))
    target = sticky_target(problem.partitions_per_topic, problem.subscriptions)
    assert not target.all_subscriptions_equal and target.transferring is None
    moving = compute_partitions_transferring_ownership(target.universe.claims, target.assignment)
    result = run("cooperative-sticky", problem)
    assert result.transferring == {target.universe.tp(p) for p in moving}
    assert result.transferring  # a holds all of t: some of it must move to c
    assert result.assignment["c"] == ()
    final, last, rounds = settle("cooperative-sticky", problem)
    assert rounds == 1
    assert validity_errors(last, final) == [] and balance_errors(last, final) == []


def test_stale_claimer_keeps_what_it_claims_without_withholding():
    """Java counts a partition as added only if the member did not *claim* it, whatever the generation.

    A (generation 2) and B (generation 1, stale) both claim t0-0; A keeps it in step 0, but the
    previous-owner rule gives it back to B, and since B claimed it, it is not added to B and not
    withheld: B is assigned t0-0 in the round in which A revokes it. kafka-clients 4.1.1 answers
    exactly this. (B claimed it, so B still holds it: no new overlap is made. A revoke-before-assign
    check on *valid* claims, which drop B's stale claim, reports it; Kafka's own
    verifyCooperativeValidity, on claims as sent, does not.)
    """
    problem = Problem({"t0": 4}, (sub("A", ["t0"], [tp("t0", i) for i in range(4)], 2),
                                  sub("B", ["t0", "tx"], [tp("t0", 0)], 1)))
    result = run("cooperative-sticky", problem)
    assert sets(result) == {"A": {tp("t0", 2), tp("t0", 3)}, "B": {tp("t0", 0)}}
    assert result.transferring == {tp("t0", 1)}
    added, revoked = added_and_revoked(problem, result)
    assert not added & revoked
    assert tp("t0", 0) in revoked and tp("t0", 0) in result.assignment["B"]


def test_partition_claimed_by_two_returns_to_a_claimer_yet_is_withheld():
    """Constrained builder: a multiply claimed partition is transferring even if it goes back to a claimer."""
    problem = Problem({"t": 3}, (sub("a", ["t"], [tp("t", 0)], 1), sub("b", ["t"], [tp("t", 0)], 1),
                                 sub("c", ["t"], [], 1)))
    target = sticky_target(problem.partitions_per_topic, problem.subscriptions)
    owner = {target.universe.tp(p): target.universe.members[m].member_id
             for m, parts in enumerate(target.assignment) for p in parts}
    assert owner[tp("t", 0)] == "a"  # round robin over a, b, c: t-0 goes back to a claimer
    result = run("cooperative-sticky", problem)
    assert tp("t", 0) in result.transferring and tp("t", 0) not in result.assignment["a"]


def test_leaving_member_frees_partitions_without_withholding():
    """Partitions of a member that left have no other owner: nothing transfers, one round suffices."""
    topics = ["t"]
    ppt = {"t": 6}
    result = run("cooperative-sticky", Problem(ppt, tuple(sub(m, topics) for m in "abc")))
    rest = Problem(ppt, tuple(sub(m, topics, result.assignment[m], 1) for m in "ab"))
    again = run("cooperative-sticky", rest)
    assert again.transferring == frozenset()
    assert sum(len(t) for t in again.assignment.values()) == 6
    assert added_and_revoked(rest, again)[1] == set()
