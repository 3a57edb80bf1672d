"""The model's range and roundrobin against kafka-python 2.3.3's, on random problems; and the adapter.

Exact agreement is required, with two documented differences, both bugs of kafka-python 2.3.3 (Java
has neither, and the model follows Java):

1. kafka-python loses members when static and dynamic members alternate in the order its leader
   receives them (``tests.peers.split_static_runs``). The main differential test therefore hands the
   members over with all static members together.
2. kafka-python's roundrobin raises ``KeyError`` as soon as its circle has to skip a member that is not
   subscribed to a partition's topic (``member_id = next(member_iter)`` binds the whole
   ``(group_instance_id, member_id)`` pair, which is then looked up as a member id), i.e. on most
   unequal subscriptions -- Kafka's own javadoc example included. The differential test asserts exactly
   that: equal results when Kafka's loop never skips (counted by a literal transcription of it), and
   ``KeyError`` when it does.

Each divergence is pinned by its own tests below, with an exact description of what kafka-python does
instead, so that a fix in kafka-python shows up here as a failing test.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from model.assignors import range as range_assignor
from model.assignors import roundrobin
from model.types import Subscription, TopicPartition
from tests.model.problems_range_roundrobin import (
    equal_subscription_problems,
    kafka_round_robin,
    problems,
    sub,
    tps,
)
from tests.peers import (
    kafka_python_assign,
    kafka_python_cluster,
    kafka_python_members,
    split_static_runs,
)

pytestmark = pytest.mark.clients

Problem = tuple[dict[str, int], list[Subscription]]
MODEL = {"range": range_assignor.assign, "roundrobin": roundrobin.assign}


def kafka_python_roundrobin_crashes(partitions_per_topic: dict[str, int], subscriptions: list[Subscription],
                                    kept: list[Subscription]) -> bool:
    """Whether kafka-python 2.3.3's roundrobin raises KeyError: whenever its circle (over the members it
    keeps, see ``kafka_python_survivors``) has to skip a member. It lists the partitions of every
    member's topics, kept or not, so a topic none of the kept members subscribes to forces a skip too."""
    listed = {t for s in subscriptions for t in s.topics if partitions_per_topic.get(t, 0) > 0}
    if listed - {t for s in kept for t in s.topics}:
        return True
    return bool(kept) and kafka_round_robin(partitions_per_topic, kept)[1] > 0


def expect_kafka_python(strategy: str, partitions_per_topic: dict[str, int], subscriptions: list[Subscription],
                        expected: dict[str, tuple[TopicPartition, ...]], *, kept: list[Subscription]) -> None:
    if strategy == "roundrobin" and kafka_python_roundrobin_crashes(partitions_per_topic, subscriptions, kept):
        event("kafka-python roundrobin crashes (its circle skips a member)")
        with pytest.raises(KeyError):
            kafka_python_assign(strategy, partitions_per_topic, subscriptions)
    else:
        event(f"kafka-python {strategy} returns an assignment")
        assert kafka_python_assign(strategy, partitions_per_topic, subscriptions) == expected


def model_assign(strategy: str, partitions_per_topic: dict[str, int],
                 subscriptions: list[Subscription]) -> dict[str, tuple[TopicPartition, ...]]:
    return dict(MODEL[strategy](partitions_per_topic, subscriptions).assignment)


@st.composite
def leader_orders(draw: st.DrawFn, *, contiguous_static: bool) -> Problem:
    """A problem whose members arrive in a random order; with ``contiguous_static`` the static members
    are moved together (before or after the dynamic ones), the one case kafka-python handles as Java."""
    partitions_per_topic, subscriptions = draw(st.one_of(problems(), equal_subscription_problems()))
    order = draw(st.permutations(subscriptions))
    if contiguous_static:
        static_first = draw(st.booleans())
        order = sorted(order, key=lambda s: (s.instance_id is None) == static_first)
    return partitions_per_topic, list(order)


# --- exact agreement ------------------------------------------------------------------------------------

@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
@settings(max_examples=300)
@given(problem=leader_orders(contiguous_static=True))
def test_model_agrees_exactly_with_kafka_python(strategy: str, problem: Problem) -> None:
    partitions_per_topic, subscriptions = problem
    assert len(split_static_runs(subscriptions)) <= 2
    expect_kafka_python(strategy, partitions_per_topic, subscriptions,
                        model_assign(strategy, partitions_per_topic, subscriptions), kept=subscriptions)


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_agreement_on_kafkas_static_member_example(strategy: str) -> None:
    # RangeAssignorTest / RoundRobinAssignorTest: member ids and instance ids sort differently.
    subscriptions = [
        sub("consumer-b", "topic1", "topic2", instance_id="instance1"),
        sub("consumer-a", "topic1", "topic2", instance_id="instance2"),
        sub("consumer-0", "topic1", "topic2"),
    ]
    assert model_assign(strategy, {"topic1": 5, "topic2": 4}, subscriptions) == kafka_python_assign(
        strategy, {"topic1": 5, "topic2": 4}, subscriptions)


# --- the documented divergence ------------------------------------------------------------------------

def kafka_python_survivors(members: list[Subscription]) -> list[Subscription]:
    """The members kafka-python 2.3.3 keeps: the last run of static and the last run of dynamic members
    (``{k: list(g) for k, g in groupby(...)}`` keeps the last group per key)."""
    last: dict[bool, list[Subscription]] = {}
    for run in split_static_runs(members):
        last[run[0].instance_id is None] = run
    return [m for m in members if any(m in run for run in last.values())]


def test_kafka_python_drops_a_member_when_static_and_dynamic_alternate() -> None:
    # Leader order: static a, dynamic b, static c. Java (and the model) sort them a, c, b and use all
    # three; kafka-python's groupby keeps only the last static run [c] and the dynamic run [b].
    subscriptions = [sub("a", "t", instance_id="i1"), sub("b", "t"), sub("c", "t", instance_id="i2")]
    assert model_assign("range", {"t": 3}, subscriptions) == {"a": tps("t-0"), "b": tps("t-2"), "c": tps("t-1")}
    assert kafka_python_assign("range", {"t": 3}, subscriptions) == {"a": (), "b": tps("t-2"), "c": tps("t-0, t-1")}
    assert model_assign("roundrobin", {"t": 3}, subscriptions) == {"a": tps("t-0"), "b": tps("t-2"), "c": tps("t-1")}
    assert kafka_python_assign("roundrobin", {"t": 3}, subscriptions) == {
        "a": (), "b": tps("t-1"), "c": tps("t-0, t-2")}


@settings(max_examples=200)
@given(problem=leader_orders(contiguous_static=False))
def test_kafka_python_roundrobin_is_the_model_over_the_members_it_keeps(problem: Problem) -> None:
    partitions_per_topic, subscriptions = problem
    survivors = kafka_python_survivors(subscriptions)
    expected = {s.member_id: () for s in subscriptions} | model_assign("roundrobin", partitions_per_topic, survivors)
    expect_kafka_python("roundrobin", partitions_per_topic, subscriptions, expected, kept=survivors)


@settings(max_examples=200)
@given(problem=leader_orders(contiguous_static=False))
def test_kafka_python_range_is_the_model_over_the_subscribers_it_keeps_per_topic(problem: Problem) -> None:
    # Range groups each topic's own subscriber list, so the members lost differ from topic to topic.
    partitions_per_topic, subscriptions = problem
    expected: dict[str, list[TopicPartition]] = {s.member_id: [] for s in subscriptions}
    for topic, count in partitions_per_topic.items():
        subscribers = [s for s in subscriptions if topic in s.topics]
        one_topic = [Subscription(s.member_id, (topic,), instance_id=s.instance_id)
                     for s in kafka_python_survivors(subscribers)]
        for member, assigned in model_assign("range", {topic: count}, one_topic).items():
            expected[member].extend(assigned)
    assert kafka_python_assign("range", partitions_per_topic, subscriptions) == {
        member: tuple(sorted(assigned)) for member, assigned in expected.items()}


def test_kafka_python_roundrobin_crashes_on_kafkas_javadoc_example() -> None:
    subscriptions = [sub("C0", "t0"), sub("C1", "t0", "t1"), sub("C2", "t0", "t1", "t2")]
    assert model_assign("roundrobin", {"t0": 1, "t1": 2, "t2": 3}, subscriptions) == {
        "C0": tps("t0-0"), "C1": tps("t1-0"), "C2": tps("t1-1, t2-0, t2-1, t2-2")}
    # t2-0: the circle points at C0, which does not subscribe to t2; the skip looks up a tuple.
    with pytest.raises(KeyError, match="C1"):
        kafka_python_assign("roundrobin", {"t0": 1, "t1": 2, "t2": 3}, subscriptions)


# --- the adapter itself ------------------------------------------------------------------------------

def test_cluster_metadata_holds_subscribed_topics_with_partitions_only() -> None:
    cluster = kafka_python_cluster({"a": 3, "b": 2, "empty": 0, "unsubscribed": 4},
                                   [sub("m1", "a", "empty", "no-metadata"), sub("m2", "b")])
    assert cluster.topics() == {"a", "b"}
    assert cluster.partitions_for_topic("a") == {0, 1, 2}
    assert cluster.partitions_for_topic("b") == {0, 1}
    assert cluster.partitions_for_topic("unsubscribed") is None


def test_member_metadata_carries_topics_and_instance_id() -> None:
    members = kafka_python_members("range", [sub("m1", "t2", "t1", "t2", instance_id="i1"), sub("m2", "t1")])
    assert list(members) == ["m1", "m2"]
    assert members["m1"].metadata.topics == ["t1", "t2"]
    assert members["m1"].group_instance_id == "i1"
    assert members["m2"].group_instance_id is None
    assert not members["m1"].metadata.user_data


def test_sticky_user_data_carries_owned_partitions_and_generation() -> None:
    owned = (TopicPartition("t1", 2), TopicPartition("t0", 0), TopicPartition("t1", 0))
    members = kafka_python_members("sticky", [
        Subscription("fresh", ("t0", "t1")),
        Subscription("rejoining", ("t0", "t1"), owned=owned, generation=7),
        Subscription("owned-nothing", ("t0",), owned=(), generation=3),
    ])
    fresh = StickyPartitionAssignor.parse_member_metadata(members["fresh"].metadata)
    assert not members["fresh"].metadata.user_data
    assert (fresh.partitions, fresh.generation) == ([], -1)
    rejoining = StickyPartitionAssignor.parse_member_metadata(members["rejoining"].metadata)
    assert sorted(rejoining.partitions) == sorted(owned)
    assert rejoining.generation == 7
    assert rejoining.subscription == ["t0", "t1"]
    nothing = StickyPartitionAssignor.parse_member_metadata(members["owned-nothing"].metadata)
    assert (nothing.partitions, nothing.generation) == ([], 3)


def test_sticky_keeps_the_survivors_partitions() -> None:
    # AbstractStickyAssignorTest.testStickiness: 4 consumers, one topic of 3 partitions; consumer1 leaves.
    first = kafka_python_assign("sticky", {"topic01": 3}, [sub(f"consumer{i}", "topic01") for i in range(1, 5)])
    assert sorted(len(v) for v in first.values()) == [0, 1, 1, 1]
    survivors = [Subscription(f"consumer{i}", ("topic01",), owned=first[f"consumer{i}"], generation=1)
                 for i in (2, 3, 4)]
    second = kafka_python_assign("sticky", {"topic01": 3}, survivors)
    for s in survivors:
        assert set(s.owned) <= set(second[s.member_id])
    assert Counter(tp for v in second.values() for tp in v) == Counter(tps("topic01-0, topic01-1, topic01-2"))


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "sticky"])
def test_results_are_sorted_and_cover_every_member(strategy: str) -> None:
    # An idle member (no topics) would make kafka-python's roundrobin skip, and crash: leave it out there.
    idle = [] if strategy == "roundrobin" else [sub("m0")]
    subscriptions = [sub("m2", "t", "u"), sub("m1", "t", "u"), *idle]
    result = kafka_python_assign(strategy, {"t": 5, "u": 3}, subscriptions)
    assert list(result) == [s.member_id for s in subscriptions]
    assert all(list(v) == sorted(v) and all(type(tp) is TopicPartition for tp in v) for v in result.values())
    assert sorted(tp for v in result.values() for tp in v) == sorted(tps("t-0, t-1, t-2, t-3, t-4, u-0, u-1, u-2"))
    if idle:
        assert result["m0"] == ()


def test_unknown_strategy_is_rejected() -> None:
    with pytest.raises(ValueError, match="cooperative-sticky"):
        kafka_python_assign("cooperative-sticky", {"t": 1}, [sub("m", "t")])


def test_duplicate_member_id_is_rejected() -> None:
    with pytest.raises(ValueError, match="appears twice"):
        kafka_python_assign("range", {"t": 1}, [sub("m", "t"), sub("m", "t")])
