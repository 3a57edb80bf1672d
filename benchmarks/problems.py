"""The assignment problems of Kafka's sticky-assignor scale tests, as model inputs.

Each builder returns a :class:`Problem` (topics with partition counts, subscriptions in member
order); :func:`reassign` turns a problem and an assignment into the follow-up problem where members
report what they were given as owned partitions, as the Kafka tests do with
``buildSubscriptionV2Above(topics, assignment.get(consumer), generationId, i)``.

Names follow AbstractStickyAssignorTest (``getTopicName`` / ``getConsumerName``): ``t`` or ``c``
plus the index zero-padded to the width of the count, so that ``c0001`` sorts before ``c0010``.

=================================  ==========================================================
problem                            Kafka test (clients/.../AbstractStickyAssignorTest.java)
=================================  ==========================================================
``uniform(500, 2000, 2000)``       testLargeAssignmentAndGroupWithUniformSubscription (30 s)
``last_one_topic(500, 2000, 2000)`` testLargeAssignmentAndGroupWithNonEqualSubscription (90 s)
``halves(100, 200, 500)``          testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout (90 s)
=================================  ==========================================================

Each Kafka test assigns fresh, then re-assigns with owned partitions for consumers 1..n-1 (consumer
0 comes back with nothing): ``reassign(problem, first_result)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from model.types import GroupAssignment, Subscription, TopicPartition


@dataclass(frozen=True)
class Problem:
    name: str
    partitions_per_topic: Mapping[str, int]
    subscriptions: tuple[Subscription, ...]

    @property
    def partitions(self) -> int:
        return sum(self.partitions_per_topic.values())


def canonical_name(prefix: str, i: int, count: int) -> str:
    """``getCanonicalName``: prefix + i zero-padded to the number of digits of ``count``."""
    return f"{prefix}{i:0{len(str(count))}d}"


def _topics(topic_count: int, partition_count: int) -> dict[str, int]:
    return {canonical_name("t", i, topic_count): partition_count for i in range(topic_count)}


def uniform(topic_count: int = 500, partition_count: int = 2000, consumer_count: int = 2000) -> Problem:
    """Every consumer subscribes to every topic (the constrained builder)."""
    topics = _topics(topic_count, partition_count)
    names = tuple(topics)
    subs = tuple(Subscription(canonical_name("c", i, consumer_count), names) for i in range(consumer_count))
    return Problem(f"uniform {topic_count}x{partition_count} / {consumer_count}", topics, subs)


def last_one_topic(topic_count: int = 500, partition_count: int = 2000, consumer_count: int = 2000) -> Problem:
    """Every consumer subscribes to every topic, except the last, which subscribes to t0 only."""
    topics = _topics(topic_count, partition_count)
    names = tuple(topics)
    subs = tuple(
        Subscription(canonical_name("c", i, consumer_count), names[:1] if i == consumer_count - 1 else names)
        for i in range(consumer_count))
    return Problem(f"last-one-topic {topic_count}x{partition_count} / {consumer_count}", topics, subs)


def halves(topic_count: int = 100, partition_count: int = 200, consumer_count: int = 500) -> Problem:
    """Consumer i subscribes to the first half of the topics when i % 4 == 0, else to the second half."""
    topics = _topics(topic_count, partition_count)
    names = tuple(topics)
    first, second = names[:topic_count // 2], names[topic_count // 2:]
    subs = tuple(
        Subscription(canonical_name("c", i, consumer_count), first if i % 4 == 0 else second)
        for i in range(consumer_count))
    return Problem(f"halves {topic_count}x{partition_count} / {consumer_count}", topics, subs)


def reassign(problem: Problem, result: GroupAssignment | Mapping[str, Sequence[TopicPartition]],
             generation: int = 1, skip_first: bool = True) -> Problem:
    """The follow-up problem: each member owns what ``result`` gave it, at ``generation``.

    With ``skip_first`` (the Kafka tests) the first consumer comes back with no owned partitions
    and no generation, as if it had restarted.
    """
    assignment = result.assignment if isinstance(result, GroupAssignment) else result
    subs = []
    for i, sub in enumerate(problem.subscriptions):
        if skip_first and i == 0:
            subs.append(Subscription(sub.member_id, sub.topics))
        else:
            subs.append(Subscription(sub.member_id, sub.topics, tuple(assignment[sub.member_id]), generation))
    return Problem(problem.name + " (re-assign)", problem.partitions_per_topic, tuple(subs))


SCALE = {
    "uniform": uniform,
    "last-one-topic": last_one_topic,
    "halves": halves,
}
