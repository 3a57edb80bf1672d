"""The coordinator's home: which partition of ``__consumer_offsets`` a group lives in.

Every group is stored in one partition of the internal topic ``__consumer_offsets``, and the broker
leading that partition is the group's coordinator; FindCoordinator answers with it. The partition is a
pure function of the group id (Kafka 4.1.1, group-coordinator/.../GroupCoordinatorService.partitionFor)::

    Utils.abs(groupId.hashCode()) % numPartitions

with ``numPartitions`` the topic's partition count (``offsets.topic.num.partitions``, 50 by default,
fixed once the topic exists). Two Java details decide the value and are reproduced here:

- ``String.hashCode`` is ``s[0]*31^(n-1) + ... + s[n-1]`` in 32-bit signed arithmetic over the
  string's UTF-16 *code units*: a character outside the Basic Multilingual Plane (an emoji, say) is a
  surrogate pair and counts as two.
- ``Utils.abs`` (clients/.../common/utils/Utils.java) maps ``Integer.MIN_VALUE`` to 0 where
  ``Math.abs`` would return it unchanged (and negative): a group id whose hash is -2^31, such as
  "polygenelubricants", lives in partition 0.
"""

from __future__ import annotations

_INT_MIN = -(2**31)
_MASK = 2**32 - 1


def java_string_hash(s: str) -> int:
    """``java.lang.String.hashCode``: a 32-bit signed int, over UTF-16 code units."""
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & _MASK
    return h - 2**32 if h >= 2**31 else h


def kafka_abs(n: int) -> int:
    """``org.apache.kafka.common.utils.Utils.abs``: |n|, but ``Integer.MIN_VALUE`` -> 0."""
    return 0 if n == _INT_MIN else abs(n)


def coordinator_partition(group_id: str, num_partitions: int = 50) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` (``GroupCoordinatorService.partitionFor``)."""
    if num_partitions < 1:
        raise ValueError(f"offsets.topic.num.partitions must be at least 1, not {num_partitions}")
    return kafka_abs(java_string_hash(group_id)) % num_partitions
