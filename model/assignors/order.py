"""The member order every client-side assignor uses.

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

from model.types import Subscription


def java_string_key(s: str) -> bytes:
    """A sort key that orders strings as ``java.lang.String.compareTo`` does."""
    return s.encode("utf-16-be", "surrogatepass")


def member_order_key(sub: Subscription) -> tuple[int, bytes, bytes]:
    if sub.instance_id is not None:
        return (0, java_string_key(sub.instance_id), java_string_key(sub.member_id))
    return (1, java_string_key(sub.member_id), b"")


def sorted_members(subscriptions: Iterable[Subscription]) -> list[Subscription]:
    return sorted(subscriptions, key=member_order_key)
