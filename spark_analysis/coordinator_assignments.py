"""single-owner on the coordinator's view: a partition the coordinator gave to two member ids at once.

The checker judges it on two kinds of coordinator event (docs/check.md, single-owner's row;
:mod:`traces.coordinator_checks`):

- a stable generation's stored assignment (``coordinator_stable``'s ``assignment``,
  ``CoordinatorChecks._check_stored_assignment``): the coordinator stores what the group's leader sent in
  its SyncGroup as is (Kafka's ``ClassicGroup`` / ``GroupCoordinator``), so a client-side assignor that
  gives a partition twice shows there, in a broker's server.log. Each member id given a partition is
  paired with the last one before it in member-id order given the same partition (the checker iterates the
  member ids sorted; the corpus writes an assignment's rows in that order, ``layout._stored``, numbered by
  ``part``): one finding per pair, window (ts, ts), the event's ``file:line`` as evidence.

The rows are few (one per member id and partition of each stored assignment): they are filtered out of the
cached corpus, which is partitioned by group, and ordered by a window keyed by group first, so the check
adds no exchange, only a sort of those rows (docs/mining-internals.md, "single-owner on the coordinator's
view").
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_analysis.invariants import VIOLATION, _label, _tp, finding
from spark_analysis.ownership import where

STABLE = "coordinator_stable"


def stored_twice(events: DataFrame) -> DataFrame:
    """single-owner's findings on the stored assignments of ``events`` (the corpus's rows, partitioned by group)."""
    given = events.filter((F.col("name") == STABLE) & F.col("topic").isNotNull())
    # the member id given the partition before this one in the same assignment (one event: one seq), if any
    before = F.lag("member_id").over(Window.partitionBy("group", "seq", "topic", "partition").orderBy("part"))
    pairs = given.withColumn("other", before).filter(F.col("other") != F.col("member_id"))
    # the checker formats the generation as Python does: None where the event gives none
    gen = F.coalesce(F.col("generation").cast("string"), F.lit("None"))
    return pairs.select(*finding(
        "single-owner", VIOLATION, F.array(F.col("other"), F.col("member_id")), F.array(_tp()), F.col("timestamp"),
        F.col("timestamp"), F.array(where()),
        F.format_string("the coordinator stored generation %s's assignment with %s given to both %s and %s", gen,
                        _label(), F.col("other"), F.col("member_id"))))
