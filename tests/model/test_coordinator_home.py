"""The coordinator's home partition: Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions.

Expected values were printed by real Java (OpenJDK, ``String.hashCode`` and Kafka's ``Utils.abs``
written out) on this machine; see the FINAL REPORT of issue 6 for the program."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.classic.coordinator import CoordinatorConfig, coordinator_partition, java_string_hash
from model.classic.coordinator.home import kafka_abs

# (group id, Java's hashCode, partition of 50, partition of 7)
JAVA = [
    ("", 0, 0, 0),
    ("a", 97, 47, 6),
    ("group", 98629247, 47, 3),
    ("test-group", 627841412, 12, 2),
    ("my-consumer-group-1", -1322913907, 7, 0),  # negative hash: its absolute value
    ("polygenelubricants", -2147483648, 0, 0),  # Integer.MIN_VALUE: Utils.abs gives 0
    ("GydZG_", -2147483648, 0, 0),
    ("DESIGNING WORKHOUSES", -2147483648, 0, 0),
    ("consumer-grüppe", 1948615947, 47, 5),  # Latin-1 beyond ASCII
    ("组", 32452, 2, 0),  # a BMP CJK character: one UTF-16 unit
    ("grp-\U0001F600", -1235730613, 13, 5),  # an emoji: a surrogate pair, two units
    ("\U0001F600\U0001F600x", 1331786546, 46, 6),
]


@pytest.mark.parametrize(("group_id", "java_hash", "p50", "p7"), JAVA)
def test_hash_and_partition_match_java(group_id: str, java_hash: int, p50: int, p7: int) -> None:
    assert java_string_hash(group_id) == java_hash
    assert coordinator_partition(group_id) == p50
    assert coordinator_partition(group_id, 7) == p7


def test_utils_abs_maps_integer_min_value_to_zero() -> None:
    assert kafka_abs(-(2**31)) == 0
    assert kafka_abs(-(2**31) + 1) == 2**31 - 1
    assert kafka_abs(-5) == 5 and kafka_abs(5) == 5


def test_config_default_is_fifty_partitions() -> None:
    assert CoordinatorConfig().offsets_topic_num_partitions == 50


def test_a_topic_without_partitions_is_rejected() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        coordinator_partition("g", 0)


@settings(max_examples=200, deadline=None)
@given(st.text(), st.integers(min_value=1, max_value=1000))
def test_hash_is_a_java_int_and_the_partition_is_in_range(group_id: str, n: int) -> None:
    h = java_string_hash(group_id)
    assert -(2**31) <= h < 2**31
    assert 0 <= coordinator_partition(group_id, n) < n


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0xFFFF, exclude_categories=["Cs"])))
def test_hash_over_the_bmp_is_javas_polynomial(group_id: str) -> None:
    """For BMP text each character is one UTF-16 unit: s[0]*31^(n-1) + ... + s[n-1], wrapped to 32 bits."""
    n = len(group_id)
    total = sum(ord(c) * 31 ** (n - 1 - i) for i, c in enumerate(group_id)) % 2**32
    assert java_string_hash(group_id) == (total - 2**32 if total >= 2**31 else total)
