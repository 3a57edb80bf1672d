"""The sparse columns of the job's two largest caches are cached packed in one struct, and read as before.

``spark_analysis.packing``: Spark's columnar cache writes a 4-byte position per null (``NullableColumnBuilder``), so
the corpus's and the member rows' columns that few kinds of row fill are cached as one struct, null where all of
them are (``mine.CORPUS_PACKED``, ``ownership.ROWS_PACKED``), and a projection over the cache unpacks them. Held here: the
cached frames hold the struct and none of its columns at the top level; the frames the job's readers get have the
columns (names, types, order) they had unpacked; a row with none of them set and a row with one set come back as
they went in; and in the physical plans, a reader scans the cache (the frame is not computed again), reading the
struct only when it reads a packed column.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_analysis import handoff, invariants, mine, ownership
from spark_analysis.packing import PACKED, pack, unpack
from tests.spark_analysis.test_delivery_plan import _plan_nodes


def _schema(df: Any) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


def test_a_row_with_none_set_and_a_row_with_one_set_unpack_as_they_were(spark: Any) -> None:
    schema = T.StructType([T.StructField("k", T.IntegerType()), T.StructField("a", T.StringType()),
                           T.StructField("b", T.ArrayType(T.StringType())), T.StructField("c", T.LongType()),
                           T.StructField("d", T.MapType(T.StringType(), T.LongType()))])
    rows = [(1, None, None, None, None), (2, None, ["x", "y"], None, None), (3, "s", None, 7, {"f": 3})]
    df = spark.createDataFrame(rows, schema)
    packed = pack(df, ("a", "b", "c", "d"))
    assert _schema(packed) == [("k", "int"), (PACKED, "struct<a:string,b:array<string>,c:bigint,d:map<string,bigint>>")]
    # the struct is null where every packed column is (one null position in the cache), set where one is
    assert {r["k"]: r[PACKED] is None for r in packed.collect()} == {1: True, 2: False, 3: False}
    back = unpack(packed.persist(), ("a", "b", "c", "d"), df.columns)
    try:
        assert _schema(back) == _schema(df)
        assert sorted(back.collect()) == sorted(df.collect())
        # a column the frame gained after the packing comes after the unpacked ones
        grown = unpack(packed.withColumn("e", F.col("k") * 2), ("a", "b", "c", "d"), df.columns)
        assert grown.columns == [*df.columns, "e"]
    finally:
        packed.unpersist()


@pytest.fixture(scope="module")
def uncut(spark: Any, samples_corpus: Path) -> Iterator[mine.Plan]:
    """The job's plan over the samples, planned once for the tests below (each plan of the whole job costs tens of
    seconds of the driver's planning). The handoffs' checkpoint (handoff._cut) is left out, so that a reader's plan
    is read through it; it is the last frame mine.plan builds, over every cache: the caches and the frames the
    readers get are those of the job."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(handoff, "_cut", lambda df: df)
        p = mine.plan(spark, samples_corpus)
    try:
        yield p
    finally:
        p.release()


def test_the_caches_hold_the_struct_and_the_readers_the_columns(spark: Any, samples_corpus: Path,
                                                                uncut: mine.Plan) -> None:
    p = uncut
    corpus_cache, rows_cache = p.cached[0], p.cached[1]
    for cache, packed in ((corpus_cache, mine.CORPUS_PACKED), (rows_cache, ownership.ROWS_PACKED)):
        assert not set(packed) & set(cache.columns)
        field = cache.schema[PACKED].dataType
        assert isinstance(field, T.StructType) and field.names == list(packed)
    # what the readers get: the frames as they were before packing, column by column
    read = mine.load(spark, samples_corpus).drop(*mine.CORPUS_NOT_READ)
    unpacked = invariants.group_generations(read.repartition("group"))
    assert _schema(p.events) == _schema(unpacked)
    # less the member id, which mine.plan drops (the undecided rule reads the member ids from the corpus)
    assert _schema(p.rows) == _schema(ownership.member_rows(unpacked, None).drop("member_id"))
    assert p.origins[1].columns == p.rows.columns  # the profile names the rows' cache by member_rows


def _scanned(df: Any) -> list[list[str]]:
    """The columns of each scan of a cache in ``df``'s physical plan (the cached frames' own plans not walked)."""
    scans = []
    for node in _plan_nodes(df):
        if node.getClass().getSimpleName() == "InMemoryTableScanExec":
            attrs = node.attributes()
            scans.append([attrs.apply(i).name() for i in range(attrs.size())])
    return scans


def test_readers_scan_the_cache_and_the_struct_only_when_they_read_a_packed_column(uncut: mine.Plan) -> None:
    p = uncut
    for view, packed in ((p.events, mine.CORPUS_PACKED), (p.rows, ownership.ROWS_PACKED)):
        dense = next(c for c in view.columns if c not in packed)
        # no recomputation: the reader's plan is a scan of the cache, and the corpus is read only under it
        assert _scanned(view.select(dense)) == [[dense]]  # the struct is pruned away
        assert _scanned(view.select(dense, packed[0])) == [[dense, PACKED]]
        assert not [n for n in _plan_nodes(view.select(packed[-1]))
                    if "FileSourceScan" in n.getClass().getSimpleName()]
    # a reader of a packed column in a filter, as the job's readers are (removals reads the reason of the
    # coordinator's removals; intervals, cached itself, the lifetimes' ends), and one of a dense column only
    assert _scanned(invariants.removals(p.events)) == [["group", "line", "member_id", "name", PACKED, "seq",
                                                        "source", "timestamp"]]
    assert _scanned(p.rows.filter(F.col("ends_life").isNotNull()).select("seq")) == [[PACKED, "seq"]]
    assert _scanned(p.rows.filter(F.col("is_new")).select("seq")) == [["is_new", "seq"]]
