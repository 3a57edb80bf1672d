"""Trace events: the JSON Lines format every trace in groupspec uses (docs/design.md, "Formats" 2).

A superset of Apache Kafka's VerifiableConsumer output (tools/.../VerifiableConsumer.java), so a
file VerifiableConsumer printed is a valid trace as it is. Every event is a plain ``dict`` with
``name`` and ``timestamp`` (milliseconds); partitions are lists of ``{"topic", "partition"}``.
The model emits these, the readers in ``traces`` produce them, the checker consumes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from model.types import TopicPartition, tps_to_json

# VerifiableConsumer's own event names.
STARTUP_COMPLETE = "startup_complete"
SHUTDOWN_COMPLETE = "shutdown_complete"
PARTITIONS_ASSIGNED = "partitions_assigned"
PARTITIONS_REVOKED = "partitions_revoked"
RECORDS_CONSUMED = "records_consumed"
OFFSETS_COMMITTED = "offsets_committed"
RECORD_DATA = "record_data"

# groupspec's additions, in the same style.
PARTITIONS_LOST = "partitions_lost"  # ConsumerRebalanceListener.onPartitionsLost
GROUP_JOINED = "group_joined"  # JoinGroup answered: member_id, generation, leader, protocol
GROUP_SYNCED = "group_synced"  # SyncGroup answered: the assignment as received
COORDINATOR_REBALANCE = "coordinator_rebalance"  # the coordinator entered PreparingRebalance (reason)
COORDINATOR_STABLE = "coordinator_stable"  # the coordinator stored a generation's assignment
COORDINATOR_MEMBER_REMOVED = "coordinator_member_removed"  # left, expired, or never synced (reason)
COORDINATOR_STATE = "coordinator_state"  # any other coordinator state change (state)
COORDINATOR_OFFSET_COMMIT = "coordinator_offset_commit"  # the coordinator took an OffsetCommit (offsets, member_id)

STANDARD_NAMES = frozenset({
    STARTUP_COMPLETE, SHUTDOWN_COMPLETE, PARTITIONS_ASSIGNED, PARTITIONS_REVOKED, RECORDS_CONSUMED,
    OFFSETS_COMMITTED, RECORD_DATA, PARTITIONS_LOST, GROUP_JOINED, GROUP_SYNCED,
    COORDINATOR_REBALANCE, COORDINATOR_STABLE, COORDINATOR_MEMBER_REMOVED, COORDINATOR_STATE,
    COORDINATOR_OFFSET_COMMIT,
})

# Optional context fields any event may carry.
CONTEXT_FIELDS = (
    "group", "member", "member_id", "instance_id", "generation", "protocol", "assignor", "client", "subscription",
    "auto_offset_reset", "enable_auto_commit", "auto_commit_interval_ms",
)


def event(name: str, timestamp: int, **fields: Any) -> dict[str, Any]:
    """One trace event. ``partitions`` may be given as TopicPartitions; it is written sorted."""
    ev: dict[str, Any] = {"name": name, "timestamp": timestamp}
    for key, value in fields.items():
        if value is None:
            continue
        if key == "partitions":
            value = tps_to_json(value)
        ev[key] = value
    return ev


def partitions_of(ev: dict[str, Any]) -> list[TopicPartition]:
    """The topic-partitions an event names (``partitions`` list), as TopicPartitions."""
    return [TopicPartition(p["topic"], p["partition"]) for p in ev.get("partitions", ())]


def tp_list(tps: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    return tps_to_json(tps)
