"""The offset rules' frames: how ``delivery.offsets`` reads the member rows, and the one numbering of ownerships
that no-gap and the handoffs share (``delivery.ownerships``).

``offsets`` counts a member's assignments of a partition (``ac``) in the order the member rows are cached in
(``ownership.TP_WINDOW``), so that window sorts nothing: held here on its physical plan, as test_member_rows holds
``invariants.unowned``'s. ``ownerships`` numbers the intervals by their starts, and the rows of ``offsets`` carry
the number of the assignments counted up to them: the two must name the same ownership, or no-gap's dropped
positions and the handoffs' release positions would be another ownership's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from spark_analysis import delivery, mine, ownership
from tests.spark_analysis.test_member_rows import _sorts_under_windows


def _lowest_windows(node: Any, found: list[Any]) -> bool:
    """The Window operators of a physical plan (a py4j ``SparkPlan``) with no other below them, into ``found``;
    whether ``node``'s subtree holds one."""
    kind = node.getClass().getSimpleName()
    if kind == "AdaptiveSparkPlanExec":
        return _lowest_windows(node.inputPlan(), found)
    children = node.children()
    below = [_lowest_windows(children.apply(i), found) for i in range(children.size())]
    if kind == "WindowExec" and not any(below):
        found.append(node)
    return kind == "WindowExec" or any(below)


def _sorts_under_first_window(df: Any) -> list[str]:
    windows: list[Any] = []
    _lowest_windows(df._jdf.queryExecution().executedPlan(), windows)
    assert windows, "no Window operator in the plan"
    sorts: list[str] = []
    for w in windows:
        _sorts_under_windows(w, sorts)
    return sorts


def test_offsets_counts_assignments_in_the_cached_rows_order(spark: Any, samples_corpus: Path) -> None:
    rows = ownership.member_rows(mine.load(spark, samples_corpus).repartition("group"), None).persist()
    try:
        # the first window over the cached rows (ac) sorts nothing
        assert _sorts_under_first_window(delivery.offsets(rows)) == []
        # and the walk sees a sort there when there is one: the same count in (seq, part) order
        w = Window.partitionBy("group", "member", "topic", "partition").orderBy("seq", "part")
        assert len(_sorts_under_first_window(rows.withColumn("n", F.sum(F.col("is_new").cast("int")).over(w)))) == 1
    finally:
        rows.unpersist()


def test_ownerships_number_the_intervals_as_offsets_numbers_the_rows(spark: Any, samples_corpus: Path) -> None:
    rows = ownership.member_rows(mine.load(spark, samples_corpus).repartition("group"), None).persist()
    try:
        off = delivery.offsets(rows)
        own = delivery.ownerships(off, ownership.intervals(rows))
        key = ["group", "member", "topic", "partition", "ac"]
        j = off.select(*key, "seq", "part", "polled", "pos_after").join(own, key, "left")
        # every owned poll and commit lies in the interval of its number: after its start, before its end
        outside = j.filter(F.col("start_seq").isNull() | ~((F.col("start_seq") < F.col("seq"))
                                                            & (F.col("seq") < F.col("end_seq"))))
        assert outside.limit(5).collect() == []
        # P is the ownership's last poll's position, and next_start the member's next assignment of the partition
        last = j.filter(F.col("polled")).groupBy(*key).agg(
            F.max_by("pos_after", F.struct("seq", "part")).alias("want"), F.first("P").alias("P"))
        assert last.filter(~F.col("P").eqNullSafe(F.col("want"))).limit(5).collect() == []
        nxt = own.alias("a").join(own.alias("b"), [*key[:4]]).filter(F.col("b.ac") == F.col("a.ac") + 1)
        assert nxt.filter(F.col("a.next_start") != F.col("b.start_seq")).limit(5).collect() == []
        # the samples hold re-assignments, so neither comparison is over nothing
        assert nxt.count() > 0 and last.count() > 0
        assert own.filter(F.col("next_start").isNull()).count() == own.select(*key[:4]).distinct().count()
    finally:
        rows.unpersist()
