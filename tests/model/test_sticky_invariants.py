"""The sticky assignors judged by the shared invariant predicates (model/invariants/assignment.py).

The other sticky tests restate Kafka's checks locally; these use the catalogue's own predicates, so
that the ids the checker and the proofs report (``single-owner``, ``balanced``,
``revoke-before-assign``) agree with what the assignors do, mutants included.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings

from model.invariants.assignment import AssignmentProblem, balanced, revoke_before_assign, single_owner
from tests.model.sticky_support import STRATEGIES, Problem, java_bug_exposure, problems, run, sub, tp


def judged(predicate, strategy, problem: Problem, mutants=frozenset()):
    result = run(strategy, problem, mutants)
    return predicate(AssignmentProblem.of(problem.partitions_per_topic, problem.subscriptions), result, strategy)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_double_claim_both_keep_mutant_breaks_single_owner(strategy):
    problem = Problem({"t": 3}, (sub("c1", ["t"], [tp("t", 0), tp("t", 1)], 1),
                                 sub("c2", ["t"], [tp("t", 0), tp("t", 2)], 1), sub("c3", ["t"], [], 1)))
    assert judged(single_owner, strategy, problem).held
    verdict = judged(single_owner, strategy, problem, frozenset({"double-claim-both-keep"}))
    assert not verdict.held
    assert verdict.findings[0].partitions == (tp("t", 0),)
    assert verdict.findings[0].members == ("c1", "c2")


def test_coop_no_withhold_mutant_breaks_revoke_before_assign():
    problem = Problem({"t": 4}, (sub("a", ["t"], [tp("t", i) for i in range(4)], 1), sub("b", ["t"], [], 1)))
    assert judged(revoke_before_assign, "cooperative-sticky", problem).held
    verdict = judged(revoke_before_assign, "cooperative-sticky", problem, frozenset({"coop-no-withhold"}))
    assert not verdict.held
    assert {p for f in verdict.findings for p in f.partitions} == {tp("t", 2), tp("t", 3)}


@settings(max_examples=60)
@given(problem=problems())
def test_eager_sticky_is_balanced_by_the_catalogue_predicate(problem):
    assume(not java_bug_exposure(problem)["stale-unsubscribed-claim"])
    assert judged(balanced, "sticky", problem).held
