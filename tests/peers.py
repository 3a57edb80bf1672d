"""Run kafka-python's assignors on the model's inputs: the peer of the differential tests.

``kafka_python_assign(strategy, partitions_per_topic, subscriptions)`` answers the question "what would
a kafka-python group leader assign here?", for ``strategy`` in ``"range"``, ``"roundrobin"`` and
``"sticky"`` (kafka-python's ``RangePartitionAssignor``, ``RoundRobinPartitionAssignor`` and
``StickyPartitionAssignor``). The result has the model's shape: ``{member_id: sorted tuple of
TopicPartition}``, one entry per member.

It feeds the assignor what kafka-python's own leader feeds it, built the way the client builds it
(kafka/coordinator/consumer.py, ``ConsumerCoordinator._perform_assignment``):

* **Cluster metadata** is a real ``kafka.cluster.ClusterMetadata`` filled by ``update_metadata`` from a
  ``MetadataResponse`` (v1) that lists the topics the group subscribes to, each with partitions
  ``0..n-1`` led by one broker. Like Java's ``AbstractPartitionAssignor.assign``, topics nobody subscribes
  to are left out (a leader's metadata covers its group subscription) and so are topics with 0
  partitions (Java: "no metadata is available"; a broker never reports a topic with none).
* **Member metadata** is encoded by the assignor's own ``metadata()`` / ``_metadata()`` into the
  JoinGroup protocol bytes (``ConsumerProtocolMemberMetadata_v0``), decoded again with
  ``ConsumerProtocol[0].METADATA.decode``, and wrapped with the member's ``group_instance_id`` in
  ``kafka.coordinator.subscription.Subscription``, as ``_perform_assignment`` does with each
  JoinGroup response member.
* **Sticky's owned partitions and generation** travel in the user data, as kafka-python's client sends
  them: ``StickyPartitionAssignor.metadata`` encodes ``StickyAssignorUserDataV1(previous_assignment,
  generation)`` once the consumer has had an assignment (``on_assignment`` / ``on_generation_assignment``
  set them), and empty user data before that. A model ``Subscription`` with no owned partitions and
  generation -1 is a member that never had an assignment (empty user data); any other is encoded with its
  ``owned`` (as given: order, duplicates and unknown topics kept) and its ``generation``.

Choices the adapter makes where the real client leaves something to chance, so that runs reproduce:

* members are given to the assignor in the order of ``subscriptions`` (the real leader sees the order of
  the coordinator's JoinGroup response). Range and roundrobin in kafka-python 2.3.3 depend on it: see
  ``split_static_runs``;
* a member's topics are sent de-duplicated and sorted (the real client sends ``list(set(...))``, whose
  order depends on ``PYTHONHASHSEED``).

kafka-python 2.3.3 has no cooperative-sticky assignor and no cooperative rebalancing at all: its
``ConsumerProtocol`` knows only metadata v0 (no ``owned_partitions`` field, KIP-429), and no assignor has
a rebalance-protocol attribute. There is therefore no kafka-python peer for cooperative-sticky.

The lower-level pieces (``kafka_python_cluster``, ``kafka_python_members``, ``ASSIGNORS``) are public so
that a benchmark can time ``assignor.assign`` alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafka.cluster import ClusterMetadata
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.protocol.consumer.group import JoinGroupResponse
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
from kafka.protocol.metadata import MetadataResponse
from kafka.structs import TopicPartition as KafkaTopicPartition

from model.types import Subscription, TopicPartition

ASSIGNORS: dict[str, Any] = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
}

_BROKER_ID = 0


def _assignor(strategy: str) -> Any:
    try:
        return ASSIGNORS[strategy]
    except KeyError:
        raise ValueError(f"kafka-python has no {strategy!r} assignor here; known: {', '.join(ASSIGNORS)}") from None


def kafka_python_cluster(partitions_per_topic: Mapping[str, int],
                         subscriptions: Sequence[Subscription]) -> ClusterMetadata:
    """A ``ClusterMetadata`` holding the group's subscribed topics that have partitions."""
    subscribed = {topic for sub in subscriptions for topic in sub.topics}
    topic_cls = MetadataResponse.MetadataResponseTopic
    partition_cls = topic_cls.MetadataResponsePartition
    topics = [
        topic_cls(version=1, error_code=0, name=topic, topic_id=None, is_internal=False,
                  partitions=[partition_cls(version=1, error_code=0, partition_index=p, leader_id=_BROKER_ID, leader_epoch=-1,
                                            replica_nodes=[_BROKER_ID], isr_nodes=[_BROKER_ID], offline_replicas=[])
                              for p in range(count)])
        for topic, count in sorted(partitions_per_topic.items())
        if topic in subscribed and count > 0
    ]
    response = MetadataResponse(
        version=1, brokers=[MetadataResponse.MetadataResponseBroker(version=1, node_id=_BROKER_ID, host="127.0.0.1", port=9092,
                                                                   rack=None)],
        controller_id=_BROKER_ID, topics=topics)
    cluster = ClusterMetadata()
    cluster.update_metadata(response)
    return cluster


def _member_metadata(strategy: str, sub: Subscription) -> Any:
    """The member's JoinGroup protocol metadata as the kafka-python client would build it."""
    topics = sorted(set(sub.topics))
    if strategy != "sticky":
        return _assignor(strategy).metadata(topics)
    if not sub.owned and sub.generation == -1:
        # member_assignment is None until the first on_assignment: no user data.
        return StickyPartitionAssignor._metadata(topics, None, sub.generation)
    owned = [KafkaTopicPartition(tp.topic, tp.partition) for tp in sub.owned]
    return StickyPartitionAssignor._metadata(topics, owned, sub.generation)


def kafka_python_members(strategy: str, subscriptions: Sequence[Subscription]) -> dict[str, Any]:
    """``{member_id: JoinGroupResponseMember}`` with the metadata decoded, exactly as kafka-python 3.0's
    ``ConsumerCoordinator._perform_assignment`` hands them to ``assign`` (a list of these)."""
    _assignor(strategy)
    members: dict[str, Any] = {}
    for sub in subscriptions:
        if sub.member_id in members:
            raise ValueError(f"member id {sub.member_id!r} appears twice")
        wire = _member_metadata(strategy, sub).encode()
        members[sub.member_id] = JoinGroupResponse.JoinGroupResponseMember(
            member_id=sub.member_id, group_instance_id=sub.instance_id,
            metadata=ConsumerProtocolSubscription.decode(wire))
    return members


def kafka_python_assign(strategy: str, partitions_per_topic: Mapping[str, int],
                        subscriptions: Sequence[Subscription]) -> dict[str, tuple[TopicPartition, ...]]:
    """kafka-python's assignment for this problem: ``{member_id: sorted tuple of TopicPartition}``."""
    assignor = _assignor(strategy)()  # kafka-python 3.0's sticky assign is an instance method
    cluster = kafka_python_cluster(partitions_per_topic, subscriptions)
    members = kafka_python_members(strategy, subscriptions)
    result = assignor.assign(cluster, list(members.values()))
    missing = members.keys() - result.keys()
    if missing:
        raise AssertionError(f"kafka-python {strategy} returned no assignment for {sorted(missing)}")
    return {
        member_id: tuple(sorted(TopicPartition(tp.topic, tp.partition) for tp in result[member_id].partitions()))
        for member_id in members
    }


def split_static_runs(subscriptions: Sequence[Subscription]) -> list[list[Subscription]]:
    """The runs of consecutive static / dynamic members, in the given order.

    kafka-python 2.3.3's range and roundrobin split members into static and dynamic ones with
    ``{k: list(g) for k, g in itertools.groupby(members, key=is_static)}``, which groups only *adjacent*
    members: when static and dynamic members alternate, each later run overwrites the earlier run of the
    same kind, and the members of the earlier runs are dropped from the assignment (they get nothing,
    and the others share their partitions). Java sorts all members with ``MemberInfo.compareTo`` and loses
    none. The assignment of kafka-python therefore matches Java's only when this returns at most one run
    of each kind (e.g. all static members before all dynamic ones, or the reverse).
    """
    runs: list[list[Subscription]] = []
    for sub in subscriptions:
        if runs and (runs[-1][0].instance_id is None) == (sub.instance_id is None):
            runs[-1].append(sub)
        else:
            runs.append([sub])
    return runs
