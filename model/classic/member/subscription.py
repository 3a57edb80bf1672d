"""The consumer's subscription and metadata: ``SubscriptionState`` and ``ConsumerMetadata``.

What the consumer subscribes to (``subscribe``), the partition counts it knows (its metadata snapshot,
refreshed every ``metadata.max.age.ms``), the snapshot its assignment used (``assignmentSnapshot``,
``MetadataSnapshot``), and the subscription a member sends in JoinGroup as the leader reads it.
"""

from __future__ import annotations

from collections.abc import Mapping

from model.classic.member.state import (
    Member,
    Metadata,
    _with,
)
from model.messages import (
    JoinGroupMember,
    JoinGroupResponse,
)
from model.types import Subscription, TopicPartition


def _snapshot(metadata: Metadata, topics: frozenset[str] | tuple[str, ...]) -> Metadata:
    """``MetadataSnapshot``: partition counts of ``topics`` (0 when the topic does not exist)."""
    counts = dict(metadata)
    return tuple((t, counts.get(t, 0)) for t in sorted(set(topics)))


def refresh_metadata(m: Member, now: int, metadata: Metadata) -> Member:
    """The consumer's metadata snapshot is what the cluster says as of its last refresh, which comes
    ``metadata.max.age.ms`` after the previous one (``Metadata.timeToNextUpdate``, driven by
    ``NetworkClient.poll``), or at once after a new subscription (``requestUpdateForNewTopics``).
    The model refreshes when the member acts (:func:`poll`, a JoinGroup answer) at or after the due
    time; only a leader's snapshot decides anything (it is the assignment's input and
    ``rejoinNeededOrPending`` compares it), and a leader polls at its refresh times
    (:func:`poll_due`). Not modelled: refreshes on errors (e.g. UNKNOWN_TOPIC_OR_PARTITION)."""
    if now < m.metadata_due:
        return m
    return _with(m, metadata=metadata, metadata_due=now + m.config.metadata_max_age_ms)


def subscribe(m: Member, topics: tuple[str, ...]) -> Member:
    """``KafkaConsumer.subscribe(topics)``: the next poll sees the change and rejoins, with its
    metadata refreshed first (``requestUpdateForNewTopics``)."""
    return _with(m, subscription=tuple(sorted(set(topics))), metadata_due=0)


def partitions_of(metadata: Metadata | Mapping[str, int], topics: tuple[str, ...]) -> frozenset[TopicPartition]:
    counts = dict(metadata)
    return frozenset(TopicPartition(t, p) for t in topics for p in range(counts.get(t, 0)))


def subscription_of(jm: JoinGroupMember) -> Subscription:
    """What the leader's assignor reads of a member: its subscription, and the one (owned,
    generation) pair the model's assignors take (``model.types.Subscription``) -- the v1/v2 fields,
    or, for the sticky assignor, its userData."""
    meta = jm.metadata
    owned, generation = (meta.owned, meta.generation) if meta.user_data is None else meta.user_data
    return Subscription(member_id=jm.member_id, topics=meta.topics, owned=owned, generation=generation,
                        instance_id=jm.instance_id, rack=meta.rack)


def _group_topics(m: Member, r: JoinGroupResponse) -> frozenset[str]:
    """Every topic some member of the JoinGroup answer (or the leader itself) subscribes to."""
    return frozenset(t for jm in r.members for t in jm.metadata.topics) | frozenset(m.subscription)


def _metadata_for_assignment(m: Member, r: JoinGroupResponse, now: int, cluster: Metadata) -> Member:
    """The leader's metadata snapshot as its assignment will see it: refreshed if due, and refreshed
    anyway when the group subscribes to a topic the leader does not (``updateGroupSubscription``:
    ``groupSubscribe`` is true, ``requestUpdateForNewTopics``, then ``ensureFreshMetadata``)."""
    m = refresh_metadata(m, now, cluster)
    if not _group_topics(m, r) <= frozenset(m.subscription):
        m = _with(m, metadata=cluster, metadata_due=now + m.config.metadata_max_age_ms)
    return m


def leader_metadata(m: Member, r: JoinGroupResponse, now: int, cluster: Metadata) -> Metadata:
    """The metadata the leader ``m`` runs its assignor on when it handles ``r`` at ``now`` (what the
    invariant monitor judges the assignment by)."""
    return _metadata_for_assignment(m, r, now, cluster).metadata
