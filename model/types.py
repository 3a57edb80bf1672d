"""The vocabulary every layer shares: topic-partitions, subscriptions and group assignments.

A topic-partition is ``{"topic": str, "partition": int}`` in every JSON file (the shape Kafka's
VerifiableConsumer prints) and :class:`TopicPartition` in Python. It is a ``NamedTuple`` so that it
is frozen, ordered by (topic, partition) like Kafka's ``TopicPartition`` comparators, hashable, and
cheap enough to build a million of (the assignor benchmarks do).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple


class TopicPartition(NamedTuple):
    """One partition of one topic (``org.apache.kafka.common.TopicPartition``)."""

    topic: str
    partition: int

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition}

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def tps_to_json(tps: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    """Sorted JSON list of topic-partitions, the order every report and trace uses."""
    return [tp.to_json() for tp in sorted(tps)]


class RebalanceProtocol(str, Enum):
    """``ConsumerPartitionAssignor.RebalanceProtocol`` (KIP-429), plus KIP-848's ``consumer``."""

    EAGER = "eager"
    COOPERATIVE = "cooperative"
    CONSUMER = "consumer"


@dataclass(frozen=True, slots=True)
class Subscription:
    """What one member tells the leader's assignor (``ConsumerPartitionAssignor.Subscription``).

    ``owned`` and ``generation`` are ConsumerProtocolSubscription v1/v2 fields (KIP-429, KIP-792);
    ``generation`` is -1 when the member has none. ``rack`` is v3 (KIP-881). ``owned`` is kept as
    the member sent it: claims of unknown topics, out-of-range or negative partitions and duplicates
    are tolerated by the assignors, as Kafka tolerates them.
    """

    member_id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation: int = -1
    instance_id: str | None = None
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class GroupAssignment:
    """An assignor's answer: partitions per member id, and what is withheld this round.

    ``assignment`` has an entry (possibly empty) for every member that was given to the assignor,
    each a tuple sorted by (topic, partition). ``transferring`` is cooperative-sticky's
    ``partitionsTransferringOwnership``: partitions that change owner and so are assigned to nobody
    in this generation (KIP-429); empty for the other assignors.
    """

    assignment: Mapping[str, tuple[TopicPartition, ...]]
    transferring: frozenset[TopicPartition] = field(default_factory=frozenset)
