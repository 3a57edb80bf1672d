"""RoundRobinAssignor: Kafka's own examples (RoundRobinAssignorTest, 4.1.1, and the class javadoc),
a literal transcription of Kafka's loop as the oracle for the model's slicing, and properties."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from random import Random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.assignors import get, roundrobin
from model.invariants.assignment import AssignmentProblem, balanced
from model.mutants import MUTANTS
from model.types import Subscription, TopicPartition
from tests.model.problems_range_roundrobin import (
    assert_each_subscribed_partition_once,
    assert_order_independent,
    by_instance,
    equal_subscription_problems,
    kafka_round_robin,
    problems,
    sub,
    tps,
)

Problem = tuple[dict[str, int], list[Subscription]]


def run(partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription]) -> dict[str, tuple[TopicPartition, ...]]:
    return dict(roundrobin.assign(partitions_per_topic, subscriptions).assignment)


# --- Kafka's examples -------------------------------------------------------------------------------

def test_registry_runs_this_module() -> None:
    assert get("roundrobin").assign is roundrobin.assign


def test_javadoc_example_identical_subscriptions() -> None:
    result = run({"t0": 3, "t1": 3}, [sub("C0", "t0", "t1"), sub("C1", "t0", "t1")])
    assert result == {"C0": tps("t0-0, t0-2, t1-1"), "C1": tps("t0-1, t1-0, t1-2")}


def test_javadoc_example_unequal_subscriptions() -> None:
    result = run({"t0": 1, "t1": 2, "t2": 3}, [sub("C0", "t0"), sub("C1", "t0", "t1"), sub("C2", "t0", "t1", "t2")])
    assert result == {"C0": tps("t0-0"), "C1": tps("t1-0"), "C2": tps("t1-1, t2-0, t2-1, t2-2")}


def test_one_consumer_no_topic() -> None:
    assert run({}, [sub("consumer")]) == {"consumer": ()}


def test_one_consumer_nonexistent_topic() -> None:
    assert run({}, [sub("consumer", "topic")]) == {"consumer": ()}


def test_one_consumer_one_topic() -> None:
    assert run({"topic": 3}, [sub("consumer", "topic")]) == {"consumer": tps("topic-0, topic-1, topic-2")}


def test_only_assigns_partitions_from_subscribed_topics() -> None:
    assert run({"topic": 3, "other": 3}, [sub("consumer", "topic")]) == {"consumer": tps("topic-0, topic-1, topic-2")}


def test_one_consumer_multiple_topics() -> None:
    result = run({"topic1": 1, "topic2": 2}, [sub("consumer", "topic1", "topic2")])
    assert result == {"consumer": tps("topic1-0, topic2-0, topic2-1")}


def test_two_consumers_one_topic_one_partition() -> None:
    assert run({"topic": 1}, [sub("consumer1", "topic"), sub("consumer2", "topic")]) == {
        "consumer1": tps("topic-0"), "consumer2": ()}


def test_two_consumers_one_topic_two_partitions() -> None:
    assert run({"topic": 2}, [sub("consumer1", "topic"), sub("consumer2", "topic")]) == {
        "consumer1": tps("topic-0"), "consumer2": tps("topic-1")}


def test_multiple_consumers_mixed_topics() -> None:
    result = run({"topic1": 3, "topic2": 2},
                 [sub("consumer1", "topic1"), sub("consumer2", "topic1", "topic2"), sub("consumer3", "topic1")])
    assert result == {
        "consumer1": tps("topic1-0"),
        "consumer2": tps("topic1-1, topic2-0, topic2-1"),
        "consumer3": tps("topic1-2"),
    }


def test_two_dynamic_consumers_two_topics_six_partitions() -> None:
    result = run({"topic1": 3, "topic2": 3}, [sub("consumer1", "topic1", "topic2"), sub("consumer2", "topic1", "topic2")])
    assert result == {"consumer1": tps("topic1-0, topic1-2, topic2-1"), "consumer2": tps("topic1-1, topic2-0, topic2-2")}


def test_two_static_consumers_ordered_by_instance_id_not_member_id() -> None:
    result = run({"topic1": 3, "topic2": 3}, [
        sub("consumer-b", "topic1", "topic2", instance_id="instance1"),
        sub("consumer-a", "topic1", "topic2", instance_id="instance2"),
    ])
    assert result == {"consumer-b": tps("topic1-0, topic1-2, topic2-1"), "consumer-a": tps("topic1-1, topic2-0, topic2-2")}


def test_static_consumer_before_dynamic_consumer() -> None:
    result = run({"topic1": 3, "topic2": 3}, [
        sub("consumer-b", "topic1", "topic2", instance_id="instance1"),
        sub("consumer-a", "topic1", "topic2"),
    ])
    assert result == {"consumer-b": tps("topic1-0, topic1-2, topic2-1"), "consumer-a": tps("topic1-1, topic2-0, topic2-2")}


def test_static_member_round_robin_assignment_persistent() -> None:
    statics = [sub(f"consumer{i}", "topic1", "topic2", instance_id=f"instance{i}") for i in (1, 2, 3)]
    expected = {
        "consumer1": tps("topic1-0, topic2-1"),
        "consumer2": tps("topic1-1, topic2-2"),
        "consumer3": tps("topic1-2"),
    }
    assert run({"topic1": 3, "topic2": 3}, [*statics, sub("consumer4", "topic1", "topic2")]) == {
        **expected, "consumer4": tps("topic2-0")}
    assert run({"topic1": 3, "topic2": 3}, [*statics, sub("consumer5", "topic1", "topic2")]) == {
        **expected, "consumer5": tps("topic2-0")}


def test_static_member_round_robin_assignment_persistent_after_member_id_changes() -> None:
    before = [sub(f"consumer{i}", "topic1", "topic2", instance_id=f"instance{i}") for i in (1, 2, 3)]
    expected = {
        "instance1": tps("topic1-0, topic1-3, topic2-1, topic2-4"),
        "instance2": tps("topic1-1, topic1-4, topic2-2"),
        "instance3": tps("topic1-2, topic2-0, topic2-3"),
    }
    assert by_instance(before, run({"topic1": 5, "topic2": 5}, before)) == expected
    after = [before[0], sub("consumer5", "topic1", "topic2", instance_id="instance2"),
             sub("consumer4", "topic1", "topic2", instance_id="instance3")]
    assert by_instance(after, run({"topic1": 5, "topic2": 5}, after)) == expected


def test_circle_continues_across_topics_with_different_subscribers() -> None:
    # a, b, c in order; t1 goes to a, b; t2 (only b and c subscribe) continues after b, so c first.
    result = run({"t1": 2, "t2": 3}, [sub("a", "t1"), sub("b", "t1", "t2"), sub("c", "t2")])
    assert result == {"a": tps("t1-0"), "b": tps("t1-1, t2-1"), "c": tps("t2-0, t2-2")}


def test_empty_group_gets_an_empty_assignment() -> None:
    assert run({"t": 3}, []) == {}


def test_duplicate_member_id_is_rejected() -> None:
    with pytest.raises(ValueError, match="appears twice"):
        run({"t": 1}, [sub("a", "t"), sub("a", "t")])


# --- a literal transcription of Kafka's loop --------------------------------------------------------

@settings(max_examples=400)
@given(problems(max_members=8, max_partitions=12))
def test_matches_a_literal_transcription_of_kafkas_loop(problem: Problem) -> None:
    partitions_per_topic, subscriptions = problem
    assert run(partitions_per_topic, subscriptions) == kafka_round_robin(partitions_per_topic, subscriptions)[0]


# --- properties -------------------------------------------------------------------------------------

@settings(max_examples=300)
@given(problems())
def test_every_subscribed_partition_assigned_exactly_once_to_a_subscriber(problem: Problem) -> None:
    assert_each_subscribed_partition_once(run, problem)


@settings(max_examples=300)
@given(equal_subscription_problems())
def test_identical_subscriptions_give_counts_within_one(problem: Problem) -> None:
    partitions_per_topic, subscriptions = problem
    counts = [len(assigned) for assigned in run(partitions_per_topic, subscriptions).values()]
    assert max(counts) - min(counts) <= 1


@settings(max_examples=150)
@given(problems(), st.randoms(use_true_random=False))
def test_result_does_not_depend_on_the_order_of_subscriptions(problem: Problem, random: Random) -> None:
    assert_order_independent(run, problem, random)


# --- the mutant -----------------------------------------------------------------------------------------

def test_reset_per_topic_mutant_breaks_balance_under_identical_subscriptions() -> None:
    if roundrobin.MUTANT_RESET_PER_TOPIC not in MUTANTS:
        pytest.skip(f"mutant {roundrobin.MUTANT_RESET_PER_TOPIC} is not registered in model/mutants.py yet")
    subscriptions = [sub(m, "t1", "t2", "t3") for m in ("a", "b", "c")]
    assert run({"t1": 1, "t2": 1, "t3": 1}, subscriptions) == {"a": tps("t1-0"), "b": tps("t2-0"), "c": tps("t3-0")}
    mutated = roundrobin.assign({"t1": 1, "t2": 1, "t3": 1}, subscriptions,
                                mutants=frozenset({roundrobin.MUTANT_RESET_PER_TOPIC}))
    assert dict(mutated.assignment) == {"a": tps("t1-0, t2-0, t3-0"), "b": (), "c": ()}
    problem = AssignmentProblem.of({"t1": 1, "t2": 1, "t3": 1}, subscriptions)
    assert balanced(problem, roundrobin.assign(problem.partitions_per_topic, subscriptions), "roundrobin").held
    assert not balanced(problem, mutated, "roundrobin").held
