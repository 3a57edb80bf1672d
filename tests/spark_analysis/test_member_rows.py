"""The member rows carry the columns the job reads from them, and no other.

``ownership.member_rows`` drops the corpus columns no reader uses (``NOT_READ``) before its first sort and those
only its own windows read (``STATE_ONLY``) after them: every column a row carries is copied into each of its sorts,
out of each of its Window operators and into the cache (docs/benchmarks-spark.md, "narrower member rows"). The two lists
are held here to the job itself, from the physical plans of every frame ``mine.plan`` builds: the columns each scan
of the member rows' cache reads. A column the rows carry that no frame reads fails the first test; a reader of a
dropped column fails every test (the plan does not build). The columns only other rules read (``CONTEXT``) ride
in one sparse struct, held here to the corpus; and the cached rows' order (``TP_WINDOW``) to the window that reads
them without a sort. The cached corpus is held the same way (``mine.CORPUS_NOT_READ``: dropped before the repartition).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_analysis import handoff, mine, ownership
from spark_analysis.packing import PACKED


def _scans(spark: Any, node: Any, read: dict[int, set[str]], seen: set[int], packed: dict[int, set[int]],
           exprs: list[str]) -> None:
    """Walk a physical plan (a py4j ``SparkPlan``), and the plans of the caches it scans, once each: the columns each
    scan of a cache reads go into ``read`` under the cache's builder (its identity hash), the ids of its packed
    struct's attributes (the sparse columns: spark_analysis.packing) into ``packed`` the same way, and every
    operator's expressions into ``exprs``."""
    kind = node.getClass().getSimpleName()
    if kind == "AdaptiveSparkPlanExec":  # not executed yet: its plan is the input plan
        _scans(spark, node.inputPlan(), read, seen, packed, exprs)
        return
    expressions = node.expressions()
    exprs.extend(expressions.apply(i).toString() for i in range(expressions.size()))
    if kind == "InMemoryTableScanExec":
        relation = node.relation()
        builder = spark._jvm.java.lang.System.identityHashCode(relation.cacheBuilder())
        columns = node.attributes()
        read.setdefault(builder, set()).update(columns.apply(i).name() for i in range(columns.size()))
        packed.setdefault(builder, set()).update(columns.apply(i).exprId().id() for i in range(columns.size())
                                                 if columns.apply(i).name() == PACKED)
        _cache_plan(spark, relation, builder, read, seen, packed, exprs)
    children = node.children()
    for i in range(children.size()):
        _scans(spark, children.apply(i), read, seen, packed, exprs)


def _cache_plan(spark: Any, relation: Any, builder: int, read: dict[int, set[str]], seen: set[int],
                packed: dict[int, set[int]], exprs: list[str]) -> None:
    """Walk the plan that fills a cache, the first time it is met."""
    if builder not in seen:
        seen.add(builder)
        _scans(spark, relation.cachedPlan(), read, seen, packed, exprs)


def _own_scan(spark: Any, cache: Any) -> tuple[int, Any]:
    """A cached frame's builder (identity hash) and relation, from the scan of it its own plan is."""
    top = cache._jdf.queryExecution().executedPlan()
    while top.getClass().getSimpleName() != "InMemoryTableScanExec":  # the cache's own scan, under a wrapper or two
        top = top.inputPlan() if top.getClass().getSimpleName() == "AdaptiveSparkPlanExec" else top.children().apply(0)
    relation = top.relation()
    return spark._jvm.java.lang.System.identityHashCode(relation.cacheBuilder()), relation


def _columns_read(spark: Any, p: mine.Plan) -> list[set[str]]:
    """For each cached frame of the job (``p.cached``, in order), the columns every frame of the job reads from it:
    a column packed in the cache's struct counts where a frame reads its field (``packed#12.state``), the struct
    where any does.

    One walk serves every cache: the frames' plans and, once each, the plans that fill the caches. A cached frame's
    own plan is the scan of all its columns, which is no reader: of it, only the plan that fills it is walked."""
    frames = [p.findings, p.malformed, p.rebalances, p.pauses, p.moves, p.unchecked, p.handoffs]
    read: dict[int, set[str]] = {}
    seen: set[int] = set()
    packed: dict[int, set[int]] = {}
    exprs: list[str] = []
    for df in frames:
        if df is not None:
            _scans(spark, df._jdf.queryExecution().executedPlan(), read, seen, packed, exprs)
    builders = [_own_scan(spark, cache) for cache in p.cached]
    for builder, relation in builders:
        _cache_plan(spark, relation, builder, read, seen, packed, exprs)
    fields = re.compile(rf"\b{PACKED}#(\d+)\.(\w+)")
    found = [(int(m.group(1)), m.group(2)) for e in exprs for m in fields.finditer(e)]
    return [read.get(builder, set()) | {name for i, name in found if i in packed.get(builder, set())}
            for builder, _ in builders]


@pytest.fixture(scope="module")
def uncut(spark: Any, samples_corpus: Path) -> Iterator[tuple[mine.Plan, list[set[str]]]]:
    """The job's plan over the samples, with the columns read from each of its caches: planned and walked once for
    the tests below (each plan of the whole job costs tens of seconds of the driver's planning, and the walk
    thousands of py4j calls)."""
    # the handoffs' checkpoints end a plan where they stand (handoff._cut): read through them, as the job's data does
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(handoff, "_cut", lambda df: df)
        p = mine.plan(spark, samples_corpus)
        try:
            read = _columns_read(spark, p)
        except BaseException:
            p.release()
            raise
    try:
        yield p, read
    finally:
        p.release()


def test_every_column_the_member_rows_carry_is_read_by_the_job(uncut: tuple[mine.Plan, list[set[str]]]) -> None:
    p, by_cache = uncut
    read = by_cache[1]  # the member rows' cache
    assert not set(ownership.NOT_READ + ownership.STATE_ONLY + ownership.CONTEXT) & set(p.rows.columns)
    assert sorted(set(p.rows.columns) - read) == []
    assert PACKED in read  # and what is cached of them: the struct of the sparse ones
    # and the walk found the readers: the rules' columns and the state's
    assert {"owned_before", "ends_life", "minOffset", "context", "max_gen"} <= read


def test_every_column_the_cached_corpus_carries_is_read_by_the_job(spark: Any, samples_corpus: Path,
                                                                   uncut: tuple[mine.Plan, list[set[str]]]) -> None:
    # the corpus cache (group_generations over the repartition) is the job's largest: a column no frame reads is
    # shuffled, sorted and cached for nothing (count was, until h25-ab); mine.CORPUS_NOT_READ drops those
    p, by_cache = uncut
    assert {"max_gen", PACKED} <= set(p.cached[0].columns)  # the corpus cache, whose readers are walked
    read = by_cache[0]
    assert not set(mine.CORPUS_NOT_READ) & set(p.events.columns)
    assert set(mine.CORPUS_NOT_READ) <= set(mine.load(spark, samples_corpus).columns)  # a name the corpus has
    assert sorted(set(p.events.columns) - read) == []
    assert PACKED in read
    # the walk found readers of the corpus cache beyond the member rows' builder: the coordinator's columns
    assert {"max_gen", "members", "member_count"} <= read


def test_the_columns_member_rows_drops_are_in_the_corpus(spark: Any, samples_corpus: Path) -> None:
    # a dropped name that is no column (renamed in the layout) would be dropped silently (DataFrame.drop ignores it)
    # and carried again
    events = mine.load(spark, samples_corpus)
    assert set(ownership.NOT_READ + ownership.STATE_ONLY + ownership.CONTEXT) <= set(events.columns)


def test_the_context_holds_what_its_readers_read(spark: Any, samples_corpus: Path) -> None:
    # ownership.CONTEXT: the rules that read those columns read them where the rows keep them -- a SAID column on
    # every row that says it, format and commits_shown on each member's first callback-trace row (by seq, part) --
    # and the struct is null on every other row (else it is carried where nothing reads it). Expected from the
    # corpus's own columns, the first callback-trace row by an aggregate rather than member_rows' window.
    from pyspark.sql import functions as F

    events = mine.load(spark, samples_corpus)
    rows = ownership.member_rows(events, None)
    key = ["group", "seq", "part"]
    first = events.filter(F.col("member").isNotNull() & F.col("jsonl")).groupBy("group", "member").agg(
        F.min(F.struct("seq", "part")).alias("k")).select("group", "k.seq", "k.part", F.lit(True).alias("first"))
    said = ownership.CONTEXT[2:]
    expected = events.join(first, key, "left").select(*key, *[F.when(F.col("first"), F.col(c)).alias(c)
                                                              for c in ("format", "commits_shown")], *said)
    got = rows.select(*key, *[F.col("context")[c].alias(c) for c in ownership.CONTEXT],
                      F.col("context").isNull().alias("none"))
    # compared as JSON: a map (moved_generations) has no equality in Spark SQL
    both = got.select(*key, "none", F.to_json(F.struct(*ownership.CONTEXT)).alias("got")).join(
        expected.select(*key, F.to_json(F.struct(*ownership.CONTEXT)).alias("expected"),
                        F.least(*[F.col(c).isNull() for c in ownership.CONTEXT]).alias("e_none")), key, "left")
    differ = both.filter(~F.col("got").eqNullSafe(F.col("expected")) | (F.col("none") != F.col("e_none")))
    assert differ.limit(5).collect() == []
    # the samples say these, so the comparison above is not over nulls only
    held = got.agg(*[F.count(c).alias(c) for c in ("format", "commits_shown", "enable_auto_commit",
                                                    "subscription")]).collect()[0]
    assert min(held) > 0, held.asDict()


def _sorts_under_windows(node: Any, found: list[str], below_window: bool = False) -> None:
    """The sorts between a Window operator and the cache scans it reads (a py4j ``SparkPlan``; the cached frames'
    own plans are not its children)."""
    kind = node.getClass().getSimpleName()
    if kind == "AdaptiveSparkPlanExec":
        _sorts_under_windows(node.inputPlan(), found, below_window)
        return
    if kind == "SortExec" and below_window:
        found.append(node.toString())
    below_window = below_window or kind == "WindowExec"
    children = node.children()
    for i in range(children.size()):
        _sorts_under_windows(children.apply(i), found, below_window)


def test_unowned_reads_the_cached_rows_in_their_order(spark: Any, samples_corpus: Path) -> None:
    # invariants.unowned's window is ordered as the member rows' last Window operator sorts them
    # (ownership.TP_WINDOW): over the cached rows it sorts nothing. A change to either order brings the sort back.
    from spark_analysis import invariants

    rows = ownership.member_rows(mine.load(spark, samples_corpus).repartition("group"), None).persist()
    try:
        found: list[str] = []
        _sorts_under_windows(invariants.unowned(rows)._jdf.queryExecution().executedPlan(), found)
        assert found == []
        # and the walk sees such a sort where there is one: the same window over the rows in (seq, part) order
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        w = Window.partitionBy("group", "member", "topic", "partition").orderBy("seq", "part")
        _sorts_under_windows(rows.withColumn("n", F.row_number().over(w))._jdf.queryExecution().executedPlan(),
                             found)
        assert len(found) == 1
    finally:
        rows.unpersist()
