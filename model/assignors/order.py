"""The member order every client-side assignor uses, and the member map range and roundrobin start from.

``AbstractPartitionAssignor.MemberInfo.compareTo`` (clients/.../consumer/internals/
AbstractPartitionAssignor.java): members with a ``group.instance.id`` come first, ordered by
instance id; then the others, ordered by member id. Static members therefore keep their place
across restarts, which change their member id but not their instance id (KIP-345).

Java's ``String.compareTo`` compares UTF-16 code units, Python compares code points; the two
differ only for characters above U+FFFF. :func:`java_string_key` compares the big-endian UTF-16
encoding, which orders exactly as Java does.
"""

from __future__ import annotations

from collections.abc import Iterable

from model.types import Subscription, TopicPartition


def java_string_key(s: str) -> bytes:
    """A sort key that orders strings as ``java.lang.String.compareTo`` does."""
    return s.encode("utf-16-be", "surrogatepass")


def member_order_key(sub: Subscription) -> tuple[int, bytes, bytes]:
    if sub.instance_id is not None:
        return (0, java_string_key(sub.instance_id), java_string_key(sub.member_id))
    return (1, java_string_key(sub.member_id), b"")


def sorted_members(subscriptions: Iterable[Subscription]) -> list[Subscription]:
    return sorted(subscriptions, key=member_order_key)


def empty_assignment(subscriptions: Iterable[Subscription]) -> dict[str, list[TopicPartition]]:
    """Every member with nothing assigned yet, as ``RangeAssignor.assignPartitions`` and
    ``RoundRobinAssignor.assign`` begin (``assignment.put(memberId, new ArrayList<>())`` for each key of
    the subscriptions). Kafka's subscriptions are a map keyed by member id, so a member id cannot come
    twice; a list given here that repeats one is refused rather than silently merged."""
    assignment: dict[str, list[TopicPartition]] = {}
    for sub in subscriptions:
        if sub.member_id in assignment:
            raise ValueError(f"member id {sub.member_id!r} appears twice; Kafka keys subscriptions by member id")
        assignment[sub.member_id] = []
    return assignment
