"""model.records: what the simulate summary says happened to the records of a partition."""

from __future__ import annotations

from typing import Any

from model.records import summarize, totals
from model.types import TopicPartition

T0 = TopicPartition("t", 0)


def consumed(member: str, first: int, last: int) -> dict[str, Any]:
    return {"name": "records_consumed", "timestamp": 0, "member": member,
            "partitions": [{"topic": "t", "partition": 0, "count": last - first + 1, "minOffset": first,
                            "maxOffset": last}]}


def committed(offset: int, success: bool = True) -> dict[str, Any]:
    return {"name": "offsets_committed", "timestamp": 0, "success": success,
            "offsets": [{"topic": "t", "partition": 0, "offset": offset}]}


def test_a_handoff_that_reads_again_counts_duplicates_not_loss() -> None:
    events = [consumed("a", 0, 9), committed(5), consumed("b", 5, 14)]
    pr = summarize(events, [(T0, 20)])[T0]
    assert (pr.produced, pr.consumed, pr.duplicated, pr.before_start, pr.lost, pr.unread) == (20, 15, 5, 0, 0, 5)


def test_a_hole_after_the_first_read_is_lost_and_the_start_is_before_start() -> None:
    events = [consumed("a", 3, 5), consumed("b", 8, 9)]
    pr = summarize(events, [(T0, 12)])[T0]
    assert (pr.before_start, pr.lost, pr.skipped, pr.unread) == (3, 2, 5, 2)


def test_a_commit_past_what_was_processed_moves_the_frontier_so_the_gap_is_lost() -> None:
    events = [consumed("a", 0, 3), committed(8), committed(12, success=False)]
    pr = summarize(events, [(T0, 10)])[T0]
    assert (pr.consumed, pr.lost, pr.unread) == (4, 4, 2)


def test_totals_add_up_partitions() -> None:
    t1 = TopicPartition("t", 1)
    parts = summarize([consumed("a", 0, 1)], [(T0, 2), (t1, 3)])
    total = totals(parts)
    assert (total.produced, total.consumed, total.unread) == (5, 2, 3)
