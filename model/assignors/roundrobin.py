"""RoundRobinAssignor: deal all partitions, one at a time, to the members in a fixed circle.

Source: ``clients/src/main/java/org/apache/kafka/clients/consumer/RoundRobinAssignor.java`` and
``org.apache.kafka.common.utils.CircularIterator`` (read at Apache Kafka 4.1.1).

The algorithm, as ``RoundRobinAssignor.assign`` runs it:

1. List every partition of every topic some member subscribes to: topics in name order (a
   ``TreeSet``), each topic's partitions ascending (``allPartitionsSorted``). Topics without metadata
   contribute nothing.
2. Put all members in member order (:mod:`model.assignors.order`; static members first by instance id,
   then dynamic members by member id) on one ``CircularIterator``. It is created once and never reset,
   so the deal continues across topic boundaries where the previous topic stopped.
3. For each partition in the list, advance the iterator past members not subscribed to the partition's
   topic (``while (!...topics().contains(topic)) assigner.next()``), then give the partition to the
   member it points at and advance once more.

Worked example (the class javadoc): ``C0`` subscribes to ``t0``; ``C1`` to ``t0, t1``; ``C2`` to
``t0, t1, t2``; the topics have 1, 2 and 3 partitions. ``t0-0`` goes to ``C0``; ``t1-0`` to ``C1``;
``t1-1`` to ``C2``; the circle is back at ``C0``, which skips ``t2``, as does ``C1``, so ``C2`` takes
``t2-0``, and again ``t2-1`` and ``t2-2``::

    C0: [t0-0]   C1: [t1-0]   C2: [t1-1, t2-0, t2-1, t2-2]

With identical subscriptions the counts differ by at most one (the javadoc's promise). With unequal
subscriptions, as above, they need not: Kafka promises no balance then, and neither does the model.

How the model computes it without walking the circle once per partition: one topic's subscribers are
visited in circle order, so a topic whose ``P`` partitions go to ``m`` subscribers starting at the ``j``-th
one gives that subscriber partitions ``0, m, 2m, ...``, the next one ``1, m+1, ...`` -- a slice
``partitions[k::m]`` per subscriber. Consecutive topics (in name order) with the same subscribers continue
the same circle, so they are dealt as one concatenated list. The circle position after a run of topics is
just past the member that took its last partition. This is the same deal as Java's loop, partition for
partition (``tests/model/test_roundrobin.py`` checks it against a literal transcription), in
O(members + partitions) with the per-partition work done by list slicing.

Edge cases, as in Kafka: every member gets an entry, possibly empty; a topic listed twice in a
subscription is the same as once (``contains``). Kafka's ``CircularIterator`` throws on an empty member
list; a leader always counts itself, so that cannot happen in Kafka, and here an empty group simply
gets an empty assignment.

Mutant (:mod:`model.mutants`): ``roundrobin-reset-per-topic`` restarts the circle at the first member for
every topic. With identical subscriptions and topics of fewer partitions than members, the first members
then take every topic's partitions, which breaks the balance roundrobin promises (three members, three
one-partition topics: ``3, 0, 0``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence

from model.assignors.order import empty_assignment, java_string_key, sorted_members
from model.assignors.range import topic_partitions
from model.mutants import validate
from model.types import GroupAssignment, Subscription, TopicPartition

MUTANT_RESET_PER_TOPIC = "roundrobin-reset-per-topic"


def subscriber_positions(members: Sequence[Subscription]) -> dict[str, tuple[int, ...]]:
    """Topic -> positions (in the circle) of the members subscribed to it, ascending."""
    positions: dict[str, list[int]] = {}
    for position, member in enumerate(members):
        for topic in dict.fromkeys(member.topics):
            positions.setdefault(topic, []).append(position)
    return {topic: tuple(p) for topic, p in positions.items()}


def dealing_runs(partitions_per_topic: Mapping[str, int], subscribers: Mapping[str, tuple[int, ...]], *,
                 split_topics: bool = False) -> list[tuple[tuple[int, ...], list[TopicPartition]]]:
    """The partitions of ``allPartitionsSorted``, cut into runs dealt over one subscriber circle each.

    A run is a maximal sequence of consecutive topics (in name order) with the same subscribers, with
    their partitions concatenated; topics with no partitions are left out, as they take no turn.
    ``split_topics`` makes every topic its own run (used by the mutant).
    """
    runs: list[tuple[tuple[int, ...], list[TopicPartition]]] = []
    for topic in sorted(subscribers, key=java_string_key):  # TreeSet: String.compareTo order
        num_partitions = partitions_per_topic.get(topic, 0)
        if num_partitions <= 0:
            continue
        circle = subscribers[topic]
        if runs and runs[-1][0] == circle and not split_topics:
            runs[-1][1].extend(topic_partitions(topic, num_partitions))
        else:
            runs.append((circle, topic_partitions(topic, num_partitions)))
    return runs


def assign(partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription], *,
           mutants: frozenset[str] = frozenset()) -> GroupAssignment:
    """``RoundRobinAssignor.assign`` (see the module docstring for the slicing argument)."""
    validate(mutants)
    reset_per_topic = MUTANT_RESET_PER_TOPIC in mutants
    assignment = empty_assignment(subscriptions)

    members = sorted_members(subscriptions)
    member_ids = [m.member_id for m in members]
    # ``next_position`` is where the CircularIterator points (its ``peek()``), as a position in the circle;
    # it may equal len(members), which wraps around to the first subscriber below.
    next_position = 0
    for circle, partitions in dealing_runs(partitions_per_topic, subscriber_positions(members),
                                           split_topics=reset_per_topic):
        if reset_per_topic:
            next_position = 0
        m = len(circle)
        first = bisect_left(circle, next_position)  # the first subscriber at or after the iterator
        if first == m:
            first = 0
        for k in range(min(m, len(partitions))):
            assignment[member_ids[circle[(first + k) % m]]].extend(partitions[k::m])
        next_position = circle[(first + len(partitions) - 1) % m] + 1
    return GroupAssignment({member: tuple(tps) for member, tps in assignment.items()})
