"""The member rows carry the columns the job reads from them, and no other.

``ownership.member_rows`` drops the corpus columns no reader uses (``NOT_READ``) before its first sort and those
only its own windows read (``STATE_ONLY``) after them: every column a row carries is copied into each of its sorts,
out of each of its Window operators and into the cache (docs/benchmarks.md, "narrower member rows"). The two lists
are held here to the job itself, from the physical plans of every frame ``mine.plan`` builds: the columns each scan
of the member rows' cache reads. A column the rows carry that no frame reads fails the first test; a reader of a
dropped column fails every test (the plan does not build).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_analysis import handoff, mine, ownership


def _scans(spark: Any, node: Any, rows_cache: int, read: set[str], seen: set[int]) -> None:
    """Walk a physical plan (a py4j ``SparkPlan``), and the plans of the caches it scans, once each: the columns read
    from the cache whose builder is ``rows_cache`` go into ``read``."""
    kind = node.getClass().getSimpleName()
    if kind == "AdaptiveSparkPlanExec":  # not executed yet: its plan is the input plan
        _scans(spark, node.inputPlan(), rows_cache, read, seen)
        return
    if kind == "InMemoryTableScanExec":
        relation = node.relation()
        builder = spark._jvm.java.lang.System.identityHashCode(relation.cacheBuilder())
        if builder == rows_cache:
            columns = node.attributes()
            read.update(columns.apply(i).name() for i in range(columns.size()))
        if builder not in seen:
            seen.add(builder)
            _scans(spark, relation.cachedPlan(), rows_cache, read, seen)
    children = node.children()
    for i in range(children.size()):
        _scans(spark, children.apply(i), rows_cache, read, seen)


def _columns_read(spark: Any, p: mine.Plan) -> set[str]:
    top = p.rows._jdf.queryExecution().executedPlan()
    while top.getClass().getSimpleName() != "InMemoryTableScanExec":  # the cache's own scan, under a wrapper or two
        top = top.inputPlan() if top.getClass().getSimpleName() == "AdaptiveSparkPlanExec" else top.children().apply(0)
    rows_cache = spark._jvm.java.lang.System.identityHashCode(top.relation().cacheBuilder())
    frames = [p.findings, p.malformed, p.rebalances, p.pauses, p.moves, p.unchecked, p.handoffs,
              *(df for df in p.cached if df is not p.rows)]
    read: set[str] = set()
    seen: set[int] = set()
    for df in frames:
        if df is not None:
            _scans(spark, df._jdf.queryExecution().executedPlan(), rows_cache, read, seen)
    return read


def test_every_column_the_member_rows_carry_is_read_by_the_job(spark: Any, samples_corpus: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # the handoffs' checkpoints end a plan where they stand (handoff._cut): read through them, as the job's data does
    monkeypatch.setattr(handoff, "_cut", lambda df: df)
    p = mine.plan(spark, samples_corpus)
    try:
        read = _columns_read(spark, p)
        assert not set(ownership.NOT_READ + ownership.STATE_ONLY) & set(p.rows.columns)
        assert sorted(set(p.rows.columns) - read) == []
        # and the walk found the readers: the rules' columns and the state's
        assert {"owned_before", "ends_life", "minOffset", "enable_auto_commit", "max_gen_where"} <= read
    finally:
        p.release()


def test_the_columns_member_rows_drops_are_in_the_corpus(spark: Any, samples_corpus: Path) -> None:
    # a dropped name that is no column (renamed in the layout) would be dropped silently (DataFrame.drop ignores it)
    # and carried again
    events = mine.load(spark, samples_corpus)
    assert set(ownership.NOT_READ + ownership.STATE_ONLY) <= set(events.columns)
