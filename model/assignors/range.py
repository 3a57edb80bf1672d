"""RangeAssignor: each topic cut into contiguous ranges, one range per subscribed member.

Kafka's oldest assignor. It is the first entry of the Java client's default
``partition.assignment.strategy`` (``[RangeAssignor, CooperativeStickyAssignor]`` since 3.0, in
``ConsumerConfig``), so a classic-protocol group left on the defaults runs it. Source:
``clients/src/main/java/org/apache/kafka/clients/consumer/RangeAssignor.java`` (read at Apache Kafka
4.1.1), and ``AbstractPartitionAssignor.assign``, which prepares its input.

The algorithm works topic by topic, and topics never influence each other:

1. For a topic with ``P`` partitions, take the ``C`` members subscribed to it, in member order
   (``AbstractPartitionAssignor.MemberInfo.compareTo``, see :mod:`model.assignors.order`: static members
   first by ``group.instance.id``, then dynamic members by member id).
2. Every one of them gets ``P // C`` partitions, and the first ``P % C`` of them one more.
3. The ranges are contiguous and follow the partition numbers: the first member takes partitions
   ``0 .. n0-1``, the next ``n0 .. n0+n1-1``, and so on.

Worked example (the class javadoc): members ``C0`` and ``C1`` both subscribe to ``t0`` and ``t1``, each
with 3 partitions. Per topic ``3 // 2 = 1`` and ``3 % 2 = 1``, so ``C0`` takes two partitions and ``C1``
one, in each topic::

    C0: [t0-0, t0-1, t1-0, t1-1]
    C1: [t0-2, t1-2]

Consequences worth knowing:

* Balance holds per topic (counts among a topic's subscribers differ by at most one), not over the
  group: the same members get the extra partition of every topic, so ``C0`` above has twice ``C1``'s
  load. Kafka documents no group-wide balance for range; the ``balanced`` invariant is per topic for it.
* Co-partitioning: members with the same subscriptions get the same partition numbers of every topic
  with the same partition count (``t0-0`` and ``t1-0`` go together), which joins rely on.
* Static members keep their ranges across restarts because they are ordered by instance id, which a
  restart does not change (KIP-345; the ``testStaticMemberRangeAssignmentPersistent*`` tests).
* The result depends only on the inputs, not on any map iteration order: it is deterministic.

Input handling, as in ``AbstractPartitionAssignor.assign``: a subscribed topic with no metadata (absent
from ``partitions_per_topic``) or with no partitions is skipped (``partitions.isEmpty()``), topics nobody
subscribes to are never assigned, and every member gets an entry, possibly empty. A topic listed twice
in one subscription counts once: Kafka 4.x collects a topic's consumers with ``Collectors.toMap`` into a
``LinkedHashMap``, which keeps one entry per member id (clients send a set, so it does not arise in
practice).

Rack-aware range (KIP-881) is *not* covered. Kafka switches it on only when consumers have racks
*and* the partitions' replica racks are known, intersect them, and are not the same for every partition
(``AbstractPartitionAssignor.useRackAwareAssignment``). The assignor signature of
:mod:`model.assignors` carries partition counts, not replica racks, so partition racks are unknown here
-- which is exactly the case in which Kafka runs plain range even when every member sends a rack
(``assign(Map<String, Integer>, ...)`` builds partitions with no replicas, ``partitionInfosWithoutRacks``).
``Subscription.rack`` is therefore read by nothing in this module.

Mutant (:mod:`model.mutants`): ``range-ceil-quota`` hands each member ``ceil(P / C)`` partitions until
none are left, a classic off-by-one that starves the last members (``P=4, C=3`` gives ``2, 2, 0``) and so
breaks per-topic ``balanced``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat

from model.assignors.order import empty_assignment, sorted_members
from model.mutants import validate
from model.types import GroupAssignment, Subscription, TopicPartition

MUTANT_CEIL_QUOTA = "range-ceil-quota"


def topic_partitions(topic: str, num_partitions: int) -> list[TopicPartition]:
    """Partitions ``0 .. num_partitions-1`` of ``topic``, ascending (``AbstractPartitionAssignor.partitions``).

    Built by ``tuple.__new__`` over ready pairs, which is what ``TopicPartition._make`` does, minus one
    Python-level call per partition: the assignors build a million of these at scale.
    """
    return list(map(tuple.__new__, repeat(TopicPartition, num_partitions),
                    zip(repeat(topic, num_partitions), range(num_partitions), strict=True)))


def consumers_per_topic(subscriptions: Sequence[Subscription]) -> dict[str, list[str]]:
    """Topic -> member ids of its subscribers, in member order (``RangeAssignor.consumersPerTopic``,
    then ``Collections.sort(members)`` in ``TopicAssignmentState``). A member appears once per topic."""
    result: dict[str, list[str]] = {}
    for member in sorted_members(subscriptions):
        for topic in dict.fromkeys(member.topics):
            result.setdefault(topic, []).append(member.member_id)
    return result


def range_sizes(num_partitions: int, num_consumers: int, *, ceil_quota: bool = False) -> list[int]:
    """How many partitions each of a topic's consumers gets, in member order.

    ``numPartitionsPerConsumer = P / C`` and ``remainingConsumersWithExtraPartition = P % C``
    (``TopicAssignmentState``): ``maxAssignable`` is the quota plus one while extra partitions remain,
    and each consumer that goes over the quota uses one up, so the first ``P % C`` consumers get
    one more. With ``ceil_quota`` (the mutant) every consumer takes ``ceil(P / C)`` while any are left.
    """
    if ceil_quota:
        quota = -(-num_partitions // num_consumers)
        sizes = []
        left = num_partitions
        for _ in range(num_consumers):
            take = min(quota, left)
            sizes.append(take)
            left -= take
        return sizes
    quota, extra = divmod(num_partitions, num_consumers)
    return [quota + 1] * extra + [quota] * (num_consumers - extra)


def assign(partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription], *,
           mutants: frozenset[str] = frozenset()) -> GroupAssignment:
    """``RangeAssignor.assignPartitions`` without partition racks (see the module docstring).

    Topics are processed in name order, so each member's partitions come out sorted by
    (topic, partition) without a final sort; Kafka's order of processing topics (a ``HashMap``'s)
    cannot change the result because topics are independent.
    """
    validate(mutants)
    ceil_quota = MUTANT_CEIL_QUOTA in mutants
    assignment = empty_assignment(subscriptions)

    per_topic = consumers_per_topic(subscriptions)
    for topic in sorted(per_topic):
        num_partitions = partitions_per_topic.get(topic, 0)
        if num_partitions <= 0:
            continue  # "Skipping assignment for topic ... since no metadata is available"
        consumers = per_topic[topic]
        partitions = topic_partitions(topic, num_partitions)
        start = 0
        for consumer, size in zip(consumers, range_sizes(num_partitions, len(consumers), ceil_quota=ceil_quota),
                                  strict=True):
            if size == 0:
                break  # sizes never grow again further down the member order
            assignment[consumer].extend(partitions[start:start + size])
            start += size
    return GroupAssignment({member: tuple(tps) for member, tps in assignment.items()})
