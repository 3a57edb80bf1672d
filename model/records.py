"""What a run did to the records: per partition, how many were produced, consumed, consumed again, skipped.

Kafka's consumer groups deliver *at least once*: a record is never lost by a correct group with a
correct application, and may be processed twice when a partition changes owner before its position
was committed. This module measures a run of the model (or any trace in groupspec's format, given
the log end offsets) against that contract, from its ``records_consumed`` events:

* **consumed**: distinct offsets processed at least once;
* **duplicated**: processings beyond the first (a record processed three times counts two);
* **skipped**: offsets below the partition's *frontier* (one past the highest offset processed, or
  the group's last successful commit if that is further) that nobody processed. They split into
  ``before_start``, below the first offset the group ever read from the partition (what
  ``auto.offset.reset`` = latest leaves out of a new group, by design), and ``lost``, holes after
  it: records the group read past without processing (an auto-commit over an async worker's
  unfinished batch, a position not taken from the committed offset);
* **unread**: offsets at or past the frontier, not read yet when the run ended.

Pure: events in, counts out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from model import events as ev
from model.types import TopicPartition


@dataclass
class PartitionRecords:
    produced: int = 0
    consumed: int = 0
    duplicated: int = 0
    before_start: int = 0
    lost: int = 0
    unread: int = 0
    times: dict[int, int] = field(default_factory=dict)  # offset -> how often processed (while counting)

    @property
    def skipped(self) -> int:
        return self.before_start + self.lost


def summarize(events: Iterable[Mapping[str, Any]], log: Iterable[tuple[TopicPartition, int]]) -> dict[TopicPartition, PartitionRecords]:
    """Per partition with records, the counts above. ``log`` gives each partition's log end offset."""
    parts: dict[TopicPartition, PartitionRecords] = {tp: PartitionRecords(produced=end) for tp, end in log}
    committed: dict[TopicPartition, int] = {}
    for e in events:
        name = e.get("name")
        if name == ev.RECORDS_CONSUMED:
            for p in e.get("partitions", ()):
                tp = TopicPartition(p["topic"], p["partition"])
                times = parts.setdefault(tp, PartitionRecords()).times
                for offset in range(p["minOffset"], p["maxOffset"] + 1):
                    times[offset] = times.get(offset, 0) + 1
        elif name == ev.OFFSETS_COMMITTED and e.get("success", True):
            for o in e.get("offsets", ()):
                if not o.get("error"):
                    committed[TopicPartition(o["topic"], o["partition"])] = o["offset"]
    for tp, pr in parts.items():
        times = pr.times
        pr.consumed = len(times)
        pr.duplicated = sum(times.values()) - len(times)
        frontier = max(max(times, default=-1) + 1, committed.get(tp, 0))
        first = min(times, default=frontier)
        pr.before_start = first
        pr.lost = sum(1 for offset in range(first, frontier) if offset not in times)
        pr.unread = max(pr.produced - frontier, 0)
        pr.times = {}
    return dict(sorted(parts.items()))


def totals(parts: Mapping[TopicPartition, PartitionRecords]) -> PartitionRecords:
    total = PartitionRecords()
    for pr in parts.values():
        total.produced += pr.produced
        total.consumed += pr.consumed
        total.duplicated += pr.duplicated
        total.before_start += pr.before_start
        total.lost += pr.lost
        total.unread += pr.unread
    return total
