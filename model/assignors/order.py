"""The member order every client-side assignor uses.

``AbstractPartitionAssignor.MemberInfo.compareTo`` (clients/.../consumer/internals/
AbstractPartitionAssignor.java): members with a ``group.instance.id`` come first, ordered by
instance id; then the others, ordered by member id. Static members therefore keep their place
across restarts, which change their member id but not their instance id (KIP-345).
"""

from __future__ import annotations

from collections.abc import Iterable

from model.types import Subscription


def member_order_key(sub: Subscription) -> tuple[int, str, str]:
    if sub.instance_id is not None:
        return (0, sub.instance_id, sub.member_id)
    return (1, sub.member_id, "")


def sorted_members(subscriptions: Iterable[Subscription]) -> list[Subscription]:
    return sorted(subscriptions, key=member_order_key)
