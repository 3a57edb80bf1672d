"""The offset rules' frames: how ``delivery.offsets`` reads the member rows, and the one numbering of ownerships
that no-gap and the handoffs share (``delivery.ownerships``).

``offsets`` computes every per-ownership column with windows in the order the member rows are cached in
(``ownership.TP_WINDOW``), so those windows sort nothing; its one sort is the group's committed offset, a window across
members, last. That holds only while the cache keeps the order: the cached rows' own ordering is held here too, so
that a change to member_rows' last window fails a test that names it rather than bringing sorts back unseen. Held on
the physical plans, as test_member_rows holds ``invariants.unowned``'s. ``ownerships`` numbers the intervals by their
starts, and the rows of ``offsets`` carry the number of the assignments counted up to them: the two must name the same
ownership, or no-gap's dropped positions and the handoffs' release positions would be another ownership's.
"""

from __future__ import annotations

from collections.abc import Iterator
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


def _nodes(node: Any) -> Iterator[Any]:
    """Every operator of a physical plan (a py4j ``SparkPlan``), not counting the cached frames' own plans (they are
    not the scans' children)."""
    if node.getClass().getSimpleName() == "AdaptiveSparkPlanExec":  # not executed yet: its plan is the input plan
        yield from _nodes(node.inputPlan())
        return
    yield node
    children = node.children()
    for i in range(children.size()):
        yield from _nodes(children.apply(i))


def _plan_nodes(df: Any) -> list[Any]:
    """Every operator of ``df``'s physical plan."""
    return list(_nodes(df._jdf.queryExecution().executedPlan()))


def _sorts(df: Any) -> list[list[str]]:
    """The sort keys (column names) of every SortExec in ``df``'s own physical plan."""
    return [_names(n.sortOrder()) for n in _plan_nodes(df) if n.getClass().getSimpleName() == "SortExec"]


def _names(order: Any) -> list[str]:
    """The columns of a ``Seq[SortOrder]``, in order."""
    return [order.apply(i).child().name() for i in range(order.size())]


def _ordering(df: Any) -> list[str]:
    return _names(df._jdf.queryExecution().executedPlan().outputOrdering())


def test_offsets_sorts_only_for_the_groups_committed_offset(spark: Any, samples_corpus: Path) -> None:
    rows = ownership.member_rows(mine.load(spark, samples_corpus).repartition("group"), None).persist()
    try:
        # the cached member rows are in TP_WINDOW's order: what every window below reads without a sort
        assert _ordering(rows)[:len(ownership.TP_WINDOW)] == list(ownership.TP_WINDOW)
        off = delivery.offsets(rows)
        # the first window over the cached rows (ac) sorts nothing
        assert _sorts_under_first_window(off) == []
        # nor do the ownerships' windows after it: the plan's one sort is the committed offset's, across members,
        # and the frame comes out in its order
        assert _sorts(off) == [["group", "topic", "partition", "seq", "part"]]
        assert _ordering(off) == ["group", "topic", "partition", "seq", "part"]
        # and the walk sees a sort there when there is one: the same count in (seq, part) order
        w = Window.partitionBy("group", "member", "topic", "partition").orderBy("seq", "part")
        assert len(_sorts_under_first_window(rows.withColumn("n", F.sum(F.col("is_new").cast("int")).over(w)))) == 1
    finally:
        rows.unpersist()


def test_member_rows_cache_order_is_what_offsets_reads(spark: Any, samples_corpus: Path) -> None:
    # The member rows as cached in TP_WINDOW's order, and the same rows sorted otherwise before the cache (as if
    # member_rows' last window were ordered otherwise): offsets' windows sort nothing over the first, and sort
    # again over the second -- what the ordering check above guards against.
    rows = ownership.member_rows(mine.load(spark, samples_corpus).repartition("group"), None)
    other = rows.sortWithinPartitions("group", "seq", "part").persist()
    try:
        assert _ordering(other)[:3] == ["group", "seq", "part"]
        assert ["group", "member", "topic", "partition", "life", "seq", "part"] in _sorts(delivery.offsets(other))
    finally:
        other.unpersist()


def test_ownerships_last_position_needs_no_sort_of_the_polls(spark: Any, samples_corpus: Path) -> None:
    # P, the ownership's last poll's position, is a hash aggregate over offsets' polls (max_by an int): offsets'
    # rows are in the committed offset's order, and an aggregate over a struct key would sort them all by ownership
    rows = ownership.member_rows(mine.load(spark, samples_corpus).repartition("group"), None).persist()
    off = delivery.offsets(rows).persist()
    iv = ownership.intervals(rows).persist()
    try:
        plan = delivery.ownerships(off, iv)._jdf.queryExecution().executedPlan().toString()
        assert "SortAggregate" not in plan and "HashAggregate" in plan
    finally:
        for df in (iv, off, rows):
            df.unpersist()


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


def _count(df: Any, kind: str) -> int:
    """The operators of class ``kind`` in ``df``'s own physical plan."""
    return sum(n.getClass().getSimpleName() == kind for n in _plan_nodes(df))


def test_no_gap_joins_the_hidden_candidates_once(spark: Any, samples_corpus: Path) -> None:
    # The first polls a member may hide a commit for (their join with the partition's earlier intervals, and
    # collect_set's aggregate of who) are read by several branches of the verdict: kept, the first polls' plan
    # aggregates none of them itself; computed in place, it aggregates them once per branch (partial and final).
    events = mine.load(spark, samples_corpus).repartition("group")
    rows = ownership.member_rows(events, None).persist()
    off = delivery.offsets(rows).persist()
    iv = ownership.intervals(rows).persist()
    own = delivery.ownerships(off, iv).persist()
    kept: list[Any] = []

    def keep_hidden(df: Any) -> Any:
        if "hidden" not in df.columns:
            return df
        kept.append(df.persist())
        return kept[-1]

    try:
        # planned first: once the candidates are cached, Spark reads the cache wherever the same plan recurs
        _, uncut = delivery.no_gap(off, rows, iv, own)
        # without a broker's commits: the verdicts, the hidden members' positions (probes and answers), the dropped
        # positions
        assert _count(uncut, "ObjectHashAggregateExec") == 2 * 4
        _, first_polls = delivery.no_gap(off, rows, iv, own, keep=keep_hidden)
        assert len(kept) == 1
        assert _count(first_polls, "ObjectHashAggregateExec") == 0
        # server.log's commits (the samples hold some: kafka-4.1.1) are joined to the kept candidates, which those
        # three branches read; only the verdicts read the broker's columns, and Spark drops the join for the other two
        # (a left join with an aggregate grouped by the join keys, none of its columns read): one join (h25-handoff)
        broker = delivery.broker_commits(events)
        assert broker.limit(1).count() == 1
        _, judged = delivery.no_gap(off, rows, iv, own, broker=broker, keep=keep_hidden)
        assert sum("Join" in n.getClass().getSimpleName() and "b_seq" in n.simpleString(10)
                   for n in _plan_nodes(judged)) == 1
    finally:
        for df in (*kept, own, iv, off, rows):
            df.unpersist()
