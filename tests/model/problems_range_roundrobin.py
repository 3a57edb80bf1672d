"""Assignment problems for the range / roundrobin tests: hypothesis strategies, helpers, an oracle.

A problem is ``(partitions_per_topic, subscriptions)``. The generator covers what the range and
roundrobin assignors must cope with: topics with 0 partitions, subscribed topics with no metadata,
topics in the metadata that nobody subscribes to, unequal and empty subscriptions, and static
members whose instance-id order differs from their member-id order. Member ids and instance ids are
unique within a problem (the coordinator guarantees both). The subscriptions come in an arbitrary
order: the assignors must not depend on it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from random import Random

from hypothesis import strategies as st

from model.types import Subscription, TopicPartition

# Topic names chosen so that name order is not creation order ("t10" < "t2", "a-b" < "a.b" < "a_b").
TOPIC_NAMES = ("t0", "t1", "t2", "t10", "a-b", "a.b", "a_b", "Z")
# Member ids look like the ones Kafka generates (client id + "-" + UUID); the prefixes make the
# member-id order differ from the instance-id order below.
MEMBER_IDS = tuple(f"{prefix}-{i:02d}" for i, prefix in enumerate(
    ("consumer-z", "consumer-a", "consumer-m", "c", "consumer-b", "x", "consumer-y", "d", "e", "f")))
INSTANCE_IDS = ("instance-3", "instance-1", "instance-2", "i0", "instance-10", "zz", "a", "b", "c", "d")


@st.composite
def problems(draw: st.DrawFn, *, max_members: int = 8, max_partitions: int = 9,
             static: bool = True) -> tuple[dict[str, int], list[Subscription]]:
    topics = draw(st.lists(st.sampled_from(TOPIC_NAMES), min_size=1, max_size=6, unique=True))
    # Some topics have metadata (possibly 0 partitions), the rest are subscribed to but unknown.
    partitions_per_topic = {
        topic: count
        for topic in topics
        if (count := draw(st.one_of(st.none(), st.integers(0, max_partitions)))) is not None
    }
    # Topics in the metadata that may end up with no subscriber.
    for topic in draw(st.lists(st.sampled_from(("unsubscribed-1", "unsubscribed-2")), unique=True)):
        partitions_per_topic[topic] = draw(st.integers(0, max_partitions))

    member_ids = draw(st.lists(st.sampled_from(MEMBER_IDS), min_size=1, max_size=max_members, unique=True))
    instance_pool = list(draw(st.permutations(INSTANCE_IDS)))
    subscriptions = []
    for member_id in member_ids:
        is_static = static and draw(st.booleans())
        subscriptions.append(Subscription(
            member_id=member_id,
            topics=tuple(draw(st.lists(st.sampled_from(topics), max_size=len(topics), unique=True))),
            instance_id=instance_pool.pop() if is_static else None,
        ))
    return partitions_per_topic, subscriptions


def equal_subscription_problems(max_members: int = 8, max_partitions: int = 9) -> st.SearchStrategy[
        tuple[dict[str, int], list[Subscription]]]:
    """Problems where every member subscribes to the same topics, all with metadata."""
    return problems(max_members=max_members, max_partitions=max_partitions).map(_equalise)


def _equalise(problem: tuple[dict[str, int], list[Subscription]]) -> tuple[dict[str, int], list[Subscription]]:
    partitions_per_topic, subscriptions = problem
    topics = tuple(sorted(partitions_per_topic))
    return partitions_per_topic, [
        Subscription(member_id=s.member_id, topics=topics, instance_id=s.instance_id) for s in subscriptions
    ]


# --- small helpers for writing Kafka's examples -------------------------------------------------------

def tps(text: str) -> tuple[TopicPartition, ...]:
    """``"t1-0, t2-3"`` -> sorted topic-partitions (the notation of Kafka's rack-aware tests)."""
    if not text.strip():
        return ()
    parsed = []
    for item in text.split(","):
        topic, _, partition = item.strip().rpartition("-")
        parsed.append(TopicPartition(topic, int(partition)))
    return tuple(sorted(parsed))


def sub(member_id: str, *topics: str, instance_id: str | None = None, rack: str | None = None) -> Subscription:
    return Subscription(member_id=member_id, topics=topics, instance_id=instance_id, rack=rack)


def by_instance(subscriptions: Sequence[Subscription],
                result: Mapping[str, tuple[TopicPartition, ...]]) -> dict[str, tuple[TopicPartition, ...]]:
    """An assignment keyed by instance id (static members only), as Kafka's checkStaticAssignment."""
    return {s.instance_id: result[s.member_id] for s in subscriptions if s.instance_id is not None}


# --- properties both assignors keep ------------------------------------------------------------------

Assign = Callable[[Mapping[str, int], Sequence[Subscription]], dict[str, tuple[TopicPartition, ...]]]


def assert_each_subscribed_partition_once(run: Assign, problem: tuple[dict[str, int], list[Subscription]]) -> None:
    """Every member is listed, in the order given; every partition of a subscribed topic goes to exactly one
    member, one that subscribes to its topic; each member's partitions are sorted."""
    partitions_per_topic, subscriptions = problem
    result = run(partitions_per_topic, subscriptions)
    assert list(result) == [s.member_id for s in subscriptions]
    topics_of = {s.member_id: set(s.topics) for s in subscriptions}
    owners = Counter(tp for assigned in result.values() for tp in assigned)
    subscribed = set().union(*topics_of.values())
    assert set(owners) == {TopicPartition(t, p) for t, n in partitions_per_topic.items() if t in subscribed
                           for p in range(n)}
    assert all(count == 1 for count in owners.values())
    for member, assigned in result.items():
        assert all(tp.topic in topics_of[member] for tp in assigned)
        assert list(assigned) == sorted(assigned)


def assert_order_independent(run: Assign, problem: tuple[dict[str, int], list[Subscription]],
                             random: Random) -> None:
    """The same assignment whatever order the subscriptions come in (Kafka sorts the members first)."""
    partitions_per_topic, subscriptions = problem
    shuffled = list(subscriptions)
    random.shuffle(shuffled)
    assert run(partitions_per_topic, shuffled) == run(partitions_per_topic, subscriptions)


# --- an oracle: Kafka's round-robin loop, transcribed literally -------------------------------------------

class CircularIterator:
    """``org.apache.kafka.common.utils.CircularIterator``: ``peek()`` and ``next()`` over a list, forever."""

    def __init__(self, items: list[str]) -> None:
        if not items:
            raise ValueError("CircularIterator can only be used on non-empty lists")
        self.items = items
        self.index = 0

    def peek(self) -> str:
        return self.items[self.index]

    def next(self) -> str:
        item = self.items[self.index]
        self.index = (self.index + 1) % len(self.items)
        return item


def kafka_round_robin(partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription]
                      ) -> tuple[dict[str, tuple[TopicPartition, ...]], int]:
    """``RoundRobinAssignor.assign``, one partition at a time, and how many times the ``while`` loop
    skipped a member not subscribed to the partition's topic."""
    topics_of = {s.member_id: s.topics for s in subscriptions}
    ordered = sorted(subscriptions, key=lambda s: (s.instance_id is None, s.instance_id or s.member_id))
    assigner = CircularIterator([s.member_id for s in ordered])
    out: dict[str, list[TopicPartition]] = {s.member_id: [] for s in subscriptions}
    all_partitions = [TopicPartition(topic, p) for topic in sorted({t for s in subscriptions for t in s.topics})
                      for p in range(partitions_per_topic.get(topic, 0))]
    skips = 0
    for tp in all_partitions:
        while tp.topic not in topics_of[assigner.peek()]:
            assigner.next()
            skips += 1
        out[assigner.next()].append(tp)
    return {member: tuple(v) for member, v in out.items()}, skips
