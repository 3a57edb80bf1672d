"""RangeAssignor: Kafka's own examples (RangeAssignorTest, 4.1.1, and the class javadoc) and properties."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from random import Random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.assignors import get
from model.assignors import range as range_assignor
from model.invariants.assignment import AssignmentProblem, balanced
from model.mutants import MUTANTS
from model.types import Subscription, TopicPartition
from tests.model.problems_range_roundrobin import (
    assert_each_subscribed_partition_once,
    assert_order_independent,
    by_instance,
    problems,
    sub,
    tps,
)


def run(partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription]) -> dict[str, tuple[TopicPartition, ...]]:
    return dict(range_assignor.assign(partitions_per_topic, subscriptions).assignment)


# --- Kafka's examples -------------------------------------------------------------------------------

def test_registry_runs_this_module() -> None:
    assert get("range").assign is range_assignor.assign


def test_javadoc_example_two_consumers_two_topics() -> None:
    result = run({"t0": 3, "t1": 3}, [sub("C1", "t0", "t1"), sub("C0", "t0", "t1")])
    assert result == {"C0": tps("t0-0, t0-1, t1-0, t1-1"), "C1": tps("t0-2, t1-2")}


def test_one_consumer_no_topic() -> None:
    assert run({}, [sub("consumer1")]) == {"consumer1": ()}


def test_one_consumer_nonexistent_topic() -> None:
    assert run({}, [sub("consumer1", "topic1")]) == {"consumer1": ()}


def test_one_consumer_one_topic() -> None:
    assert run({"topic1": 3}, [sub("consumer1", "topic1")]) == {"consumer1": tps("topic1-0, topic1-1, topic1-2")}


def test_only_assigns_partitions_from_subscribed_topics() -> None:
    result = run({"topic1": 3, "other": 3}, [sub("consumer1", "topic1")])
    assert result == {"consumer1": tps("topic1-0, topic1-1, topic1-2")}


def test_one_consumer_multiple_topics() -> None:
    result = run({"topic1": 1, "topic2": 2}, [sub("consumer1", "topic1", "topic2")])
    assert result == {"consumer1": tps("topic1-0, topic2-0, topic2-1")}


def test_two_consumers_one_topic_one_partition() -> None:
    result = run({"topic1": 1}, [sub("consumer1", "topic1"), sub("consumer2", "topic1")])
    assert result == {"consumer1": tps("topic1-0"), "consumer2": ()}


def test_two_consumers_one_topic_two_partitions() -> None:
    result = run({"topic1": 2}, [sub("consumer1", "topic1"), sub("consumer2", "topic1")])
    assert result == {"consumer1": tps("topic1-0"), "consumer2": tps("topic1-1")}


def test_multiple_consumers_mixed_topics() -> None:
    # c1{t1}, c2{t1,t2}, c3{t1}, t1 has 3 partitions, t2 has 2.
    result = run({"topic1": 3, "topic2": 2},
                 [sub("consumer1", "topic1"), sub("consumer2", "topic1", "topic2"), sub("consumer3", "topic1")])
    assert result == {
        "consumer1": tps("topic1-0"),
        "consumer2": tps("topic1-1, topic2-0, topic2-1"),
        "consumer3": tps("topic1-2"),
    }


def test_two_consumers_two_topics_six_partitions() -> None:
    result = run({"topic1": 3, "topic2": 3}, [sub("consumer1", "topic1", "topic2"), sub("consumer2", "topic1", "topic2")])
    assert result == {"consumer1": tps("topic1-0, topic1-1, topic2-0, topic2-1"), "consumer2": tps("topic1-2, topic2-2")}


def test_two_static_consumers_ordered_by_instance_id_not_member_id() -> None:
    # consumer-a sorts before consumer-b, but instance1 < instance2 decides.
    result = run({"topic1": 3, "topic2": 3}, [
        sub("consumer-b", "topic1", "topic2", instance_id="instance1"),
        sub("consumer-a", "topic1", "topic2", instance_id="instance2"),
    ])
    assert result == {"consumer-b": tps("topic1-0, topic1-1, topic2-0, topic2-1"), "consumer-a": tps("topic1-2, topic2-2")}


def test_static_consumer_before_dynamic_consumer() -> None:
    result = run({"topic1": 3, "topic2": 3}, [
        sub("consumer-b", "topic1", "topic2", instance_id="instance1"),
        sub("consumer-a", "topic1", "topic2"),
    ])
    assert result == {"consumer-b": tps("topic1-0, topic1-1, topic2-0, topic2-1"), "consumer-a": tps("topic1-2, topic2-2")}


def test_static_member_range_assignment_persistent() -> None:
    statics = [sub(f"consumer{i}", "topic1", "topic2", instance_id=f"instance{i}") for i in (1, 2, 3)]
    expected = {
        "consumer1": tps("topic1-0, topic1-1, topic2-0"),
        "consumer2": tps("topic1-2, topic2-1"),
        "consumer3": tps("topic1-3, topic2-2"),
    }
    assert run({"topic1": 5, "topic2": 4}, [*statics, sub("consumer4", "topic1", "topic2")]) == {
        **expected, "consumer4": tps("topic1-4, topic2-3")}
    # The dynamic member is replaced by another one: the static members' ranges do not move.
    assert run({"topic1": 5, "topic2": 4}, [*statics, sub("consumer5", "topic1", "topic2")]) == {
        **expected, "consumer5": tps("topic1-4, topic2-3")}


def test_static_member_range_assignment_persistent_after_member_id_changes() -> None:
    before = [sub(f"consumer{i}", "topic1", "topic2", instance_id=f"instance{i}") for i in (1, 2, 3)]
    expected = {
        "instance1": tps("topic1-0, topic1-1, topic2-0, topic2-1"),
        "instance2": tps("topic1-2, topic1-3, topic2-2, topic2-3"),
        "instance3": tps("topic1-4, topic2-4"),
    }
    assert by_instance(before, run({"topic1": 5, "topic2": 5}, before)) == expected
    # Restarted members get new member ids whose order is reversed (consumer5 > consumer4 > consumer1).
    after = [before[0], sub("consumer5", "topic1", "topic2", instance_id="instance2"),
             sub("consumer4", "topic1", "topic2", instance_id="instance3")]
    assert by_instance(after, run({"topic1": 5, "topic2": 5}, after)) == expected


@pytest.mark.parametrize(("topic_counts", "subscribed", "expected"), [
    # RangeAssignorTest.testRackAwareAssignmentWith*: the non-rack-aware expectations, which Kafka
    # also asserts when consumers have racks but partition racks are unknown (nullRacks).
    ({"t1": 6, "t2": 7, "t3": 2}, [("t1", "t2", "t3")] * 3,
     ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"]),
    ({"t1": 6, "t2": 7, "t3": 2}, [("t1", "t2", "t3"), ("t1", "t2", "t3"), ("t1", "t3")],
     ["t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0", "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1", "t1-4, t1-5"]),
    ({"t1": 5, "t2": 5, "t3": 5}, [("t1", "t2", "t3")] * 3,
     ["t1-0, t1-1, t2-0, t2-1, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t2-4, t3-4"]),
    ({"t1": 5, "t2": 5, "t3": 5}, [("t1", "t2", "t3"), ("t1", "t2", "t3"), ("t1", "t3")],
     ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1", "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3", "t1-4, t3-4"]),
    ({"t1": 6, "t2": 6, "t3": 2, "t4": 2}, [("t1", "t2"), ("t1", "t2"), ("t3", "t4"), ("t3", "t4")],
     ["t1-0, t1-1, t1-2, t2-0, t2-1, t2-2", "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5", "t3-0, t4-0", "t3-1, t4-1"]),
    ({"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}, [tuple(f"t{i}" for i in range(1, 10))] * 3,
     ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1",
      "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2",
      "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3"]),
])
def test_member_racks_alone_do_not_enable_rack_aware_assignment(
        topic_counts: dict[str, int], subscribed: list[tuple[str, ...]], expected: list[str]) -> None:
    racks = ("rack-a", "rack-b", "rack-c", "rack-a")
    subscriptions = [sub(f"consumer-{i}", *topics, rack=racks[i]) for i, topics in enumerate(subscribed)]
    result = run(topic_counts, subscriptions)
    assert result == {f"consumer-{i}": tps(text) for i, text in enumerate(expected)}
    assert result == run(topic_counts, [sub(s.member_id, *s.topics) for s in subscriptions])


# --- input handling ---------------------------------------------------------------------------------

def test_topic_with_zero_partitions_is_skipped_and_members_still_listed() -> None:
    assert run({"empty": 0, "t": 1}, [sub("a", "empty"), sub("b", "empty", "t")]) == {"a": (), "b": tps("t-0")}


def test_topic_listed_twice_in_a_subscription_counts_once() -> None:
    twice = run({"t": 4}, [sub("a", "t", "t"), sub("b", "t")])
    assert twice == {"a": tps("t-0, t-1"), "b": tps("t-2, t-3")}


def test_duplicate_member_id_is_rejected() -> None:
    with pytest.raises(ValueError, match="appears twice"):
        run({"t": 1}, [sub("a", "t"), sub("a", "t")])


def test_unknown_mutant_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown mutant"):
        range_assignor.assign({"t": 1}, [sub("a", "t")], mutants=frozenset({"no-such-mutant"}))


# --- a literal transcription of Kafka's loop, as the oracle for the arithmetic ------------------------

def kafka_assign_ranges(num_partitions: int, consumers: list[str]) -> dict[str, list[int]]:
    """``RangeAssignor.assignRanges`` with ``mayAssign = (c, tp) -> true``, step by step:
    ``maxAssignable`` / ``onAssigned`` of ``TopicAssignmentState``."""
    unassigned = list(range(num_partitions))
    num_assigned = dict.fromkeys(consumers, 0)
    per_consumer = num_partitions // len(consumers)
    remaining_with_extra = num_partitions % len(consumers)
    out: dict[str, list[int]] = {c: [] for c in consumers}
    for consumer in consumers:
        if not unassigned:
            break
        max_assignable = max(0, per_consumer + (1 if remaining_with_extra > 0 else 0) - num_assigned[consumer])
        chosen = unassigned[:max_assignable]
        if not chosen:
            continue
        out[consumer].extend(chosen)
        num_assigned[consumer] += len(chosen)
        if num_assigned[consumer] > per_consumer:
            remaining_with_extra -= 1
        unassigned = unassigned[len(chosen):]
    return out


@settings(max_examples=200)
@given(problems())
def test_matches_a_literal_transcription_of_kafkas_loop(problem: tuple[dict[str, int], list[Subscription]]) -> None:
    partitions_per_topic, subscriptions = problem
    result = run(partitions_per_topic, subscriptions)
    expected: dict[str, list[TopicPartition]] = {s.member_id: [] for s in subscriptions}
    ordered = sorted(subscriptions, key=lambda s: (s.instance_id is None, s.instance_id or s.member_id))
    for topic, count in partitions_per_topic.items():
        consumers = [s.member_id for s in ordered if topic in s.topics]
        if count == 0 or not consumers:
            continue
        for consumer, partitions in kafka_assign_ranges(count, consumers).items():
            expected[consumer].extend(TopicPartition(topic, p) for p in partitions)
    assert result == {member: tuple(sorted(tps)) for member, tps in expected.items()}


# --- properties ----------------------------------------------------------------------------------------

@settings(max_examples=300)
@given(problems())
def test_every_subscribed_partition_assigned_exactly_once_to_a_subscriber(
        problem: tuple[dict[str, int], list[Subscription]]) -> None:
    assert_each_subscribed_partition_once(run, problem)


@settings(max_examples=300)
@given(problems())
def test_per_topic_counts_differ_by_at_most_one_with_the_extra_to_the_first_members(
        problem: tuple[dict[str, int], list[Subscription]]) -> None:
    partitions_per_topic, subscriptions = problem
    result = run(partitions_per_topic, subscriptions)
    ordered = sorted(subscriptions, key=lambda s: (s.instance_id is None, s.instance_id or s.member_id))
    for topic, count in partitions_per_topic.items():
        subscribers = [s.member_id for s in ordered if topic in s.topics]
        if not subscribers:
            continue
        counts = [sum(1 for tp in result[m] if tp.topic == topic) for m in subscribers]
        assert max(counts) - min(counts) <= 1
        assert counts == sorted(counts, reverse=True)
        # Ranges are contiguous and follow member order.
        partitions = [tp.partition for m in subscribers for tp in result[m] if tp.topic == topic]
        assert partitions == list(range(count))


@settings(max_examples=150)
@given(problems(), st.randoms(use_true_random=False))
def test_result_does_not_depend_on_the_order_of_subscriptions(
        problem: tuple[dict[str, int], list[Subscription]], random: Random) -> None:
    assert_order_independent(run, problem, random)


# --- the mutant -----------------------------------------------------------------------------------------

def test_ceil_quota_mutant_starves_the_last_member() -> None:
    if range_assignor.MUTANT_CEIL_QUOTA not in MUTANTS:
        pytest.skip(f"mutant {range_assignor.MUTANT_CEIL_QUOTA} is not registered in model/mutants.py yet")
    subscriptions = [sub("a", "t"), sub("b", "t"), sub("c", "t")]
    assert run({"t": 4}, subscriptions) == {"a": tps("t-0, t-1"), "b": tps("t-2"), "c": tps("t-3")}
    mutated = range_assignor.assign({"t": 4}, subscriptions, mutants=frozenset({range_assignor.MUTANT_CEIL_QUOTA}))
    assert dict(mutated.assignment) == {"a": tps("t-0, t-1"), "b": tps("t-2, t-3"), "c": ()}
    problem = AssignmentProblem.of({"t": 4}, subscriptions)
    assert balanced(problem, range_assignor.assign({"t": 4}, subscriptions), "range").held
    assert not balanced(problem, mutated, "range").held
