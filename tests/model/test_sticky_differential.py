"""The model's StickyAssignor against kafka-python 2.3.3's StickyPartitionAssignor (tests/peers.py).

kafka-python ports the *original* Java sticky algorithm (KIP-54, Kafka 2.x): one general algorithm for
every case, no constrained builder, no KAFKA-12984 / KAFKA-15106 / KAFKA-16277 fixes. It is not a
reference for the exact assignment, so the tests here ask two things:

* on clean histories both produce assignments that keep Kafka's promises (valid, complete,
  balanced), whatever the exact partitions;
* every *kind* of difference found is pinned by a test that says which side follows Apache Kafka
  4.1.1 (each recorded in docs/assignors-sticky.md).

kafka-python has no cooperative-sticky assignor, so only the eager assignor is compared.
"""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings

from model.assignors.sticky import StickyAssignorFailure
from model.types import GroupAssignment
from tests.model.sticky_support import (
    Problem,
    balance_errors,
    existing,
    per_topic,
    problems,
    run,
    sets,
    sub,
    tp,
    validity_errors,
)
from tests.peers import kafka_python_assign

pytestmark = pytest.mark.clients


@pytest.fixture(autouse=True)
def _quiet_kafka_python():
    """kafka-python logs every conflicting claim at WARNING/ERROR; the tests make them on purpose."""
    logger = logging.getLogger("kafka.coordinator.assignors.sticky")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(level)


def kafka_python(problem: Problem) -> GroupAssignment:
    return GroupAssignment(kafka_python_assign("sticky", problem.partitions_per_topic, problem.subscriptions))


@settings(max_examples=120)
@given(problem=problems(junk=False, static=False))
def test_both_keep_kafkas_promises_on_clean_histories(problem):
    """Consistent claims (one generation, no double claims): both valid, complete and balanced."""
    everything = sorted(existing(problem.partitions_per_topic, problem.subscriptions))
    for result in (run("sticky", problem), kafka_python(problem)):
        assert validity_errors(problem, result) == []
        assert balance_errors(problem, result) == []
        assert sorted(p for tps in result.assignment.values() for p in tps) == everything


def test_fresh_equal_subscriptions_give_the_same_assignment():
    """Nothing owned, equal subscriptions: both deal partitions out round robin in member-id order."""
    problem = Problem({"t1": 3, "t2": 3}, tuple(sub(m, ["t1", "t2"]) for m in "abcd"))
    assert dict(run("sticky", problem).assignment) == dict(kafka_python(problem).assignment)


# -- each kind of difference, and which side follows Java -------------------------------------------

def test_difference_same_generation_double_claim():
    """kafka-python: the first claimer keeps the partition. Java (KAFKA-12984) and the model: nobody keeps it.

    AbstractStickyAssignorTest.testPartitionsTransferringOwnershipIncludeThePartitionClaimedByMultipleConsumers...
    expects Java's behaviour: t-0 goes to the member that did not claim it.
    """
    problem = Problem({"t": 4}, (sub("a", ["t"], [tp("t", 0), tp("t", 1)], 1),
                                 sub("b", ["t"], [tp("t", 0), tp("t", 2)], 1), sub("c", ["t"], [], 1)))
    assert sets(kafka_python(problem)) == {"a": {tp("t", 0), tp("t", 1)}, "b": {tp("t", 2)}, "c": {tp("t", 3)}}
    assert sets(run("sticky", problem)) == {"a": {tp("t", 1), tp("t", 3)}, "b": {tp("t", 2)}, "c": {tp("t", 0)}}


def test_difference_which_owned_partitions_a_member_keeps():
    """KAFKA-16277: Java keeps owned partitions in (partition, topic) order, so each topic stays spread.

    kafka-python keeps them in the order of its own algorithm and ends with whole topics per member
    (testTopicBalanceAfterReassignment expects 3 + 3 for everyone).
    """
    ppt = {"topic1": 12, "topic2": 12}
    topics = ["topic1", "topic2"]

    def grow(assign):
        result = assign(Problem(ppt, (sub("consumer1", topics),)))
        result = assign(Problem(ppt, (sub("consumer1", topics, result.assignment["consumer1"], 1),
                                      sub("consumer2", topics, [], 1))))
        return assign(Problem(ppt, (sub("consumer1", topics, result.assignment["consumer1"], 1),
                                    sub("consumer2", topics, result.assignment["consumer2"], 1),
                                    sub("consumer3", topics, [], 1), sub("consumer4", topics, [], 1))))

    ours = grow(lambda p: run("sticky", p))
    theirs = grow(kafka_python)
    assert {per_topic(ours, m, t) for m in ours.assignment for t in topics} == {3}
    assert {per_topic(theirs, m, t) for m in theirs.assignment for t in topics} == {0, 6}


def test_difference_leading_empty_subscription():
    """A Java bug kafka-python does not have: Java gives the empty-subscription member a partition."""
    problem = Problem({"t0": 3}, (sub("A", []), sub("B", ["t0"]), sub("C", ["t0"])))
    assert kafka_python(problem).assignment["A"] == ()
    assert run("sticky", problem).assignment["A"] == (tp("t0", 0),)  # as Java 4.1.1


def test_same_bug_previous_owner_rule_ignores_the_subscription():
    """Both Java and kafka-python hand t0-0 back to B, which no longer subscribes to t0."""
    problem = Problem({"t0": 4, "t1": 2}, (
        sub("A", ["t1"], [], 2), sub("B", ["t1"], [tp("t0", 0)], 1),
        sub("C", ["t0"], [tp("t0", i) for i in range(4)], 2), sub("D", ["t0"], [], 2)))
    assert dict(kafka_python(problem).assignment) == dict(run("sticky", problem).assignment)
    assert tp("t0", 0) in run("sticky", problem).assignment["B"]


def test_same_failure_when_the_previous_owner_is_fixed():
    """Java throws NullPointerException, kafka-python KeyError, the model StickyAssignorFailure."""
    problem = Problem({"t0": 2, "t1": 1}, (
        sub("B", ["t1"], [tp("t0", 0)], 1), sub("C", ["t0"], [tp("t0", 0), tp("t0", 1)], 2), sub("D", ["t0"], [], 2)))
    with pytest.raises(KeyError):
        kafka_python(problem)
    with pytest.raises(StickyAssignorFailure):
        run("sticky", problem)


def test_difference_generation_zero():
    """kafka-python tests the generation for truth, so 0 counts as none. Java compares numbers.

    Real groups never have generation 0 (the coordinator's first generation is 1), so this only
    shows with hand-made input: two members claiming t-0 at generation 0 are a same-generation
    conflict for Java (nobody keeps it); kafka-python lets the last claimer keep it.
    """
    problem = Problem({"t": 2}, (sub("a", ["t"], [tp("t", 0)], 0), sub("b", ["t"], [tp("t", 0)], 0)))
    assert sets(kafka_python(problem)) == {"a": {tp("t", 1)}, "b": {tp("t", 0)}}
    assert sets(run("sticky", problem)) == {"a": {tp("t", 0)}, "b": {tp("t", 1)}}
