"""Sparse columns packed into one struct column in the job's caches, unpacked for the frames that read them.

Spark's in-memory columnar cache (``df.persist``: ``InMemoryRelation``) builds each column of a batch apart, and a
nullable column's buffer is written by ``org.apache.spark.sql.execution.columnar.NullableColumnBuilder``: the null
count, then the row position of every null as a 4-byte int, then the non-null values (compressed). A column null on
almost every row costs about 4 bytes a row whatever its type; the compression applies to the values only. The
corpus carries columns that only a few kinds of event fill (the coordinator's ``state`` / ``members``, the
configuration a member says once, a moved member's memory): at 1M sixteen of them, each null on 96.7-100% of the rows,
took 70% of the corpus cache (docs/benchmarks-spark.md, h25-ab, "The two largest caches, column by column").

Packed, they are one struct column (:data:`PACKED`), null where every one of them is null: one 4-byte null
position a row for all of them, and on the few rows that set one, the struct's value (an ``UnsafeRow``: 8 bytes a
field plus the variable-length data). :func:`unpack` is a projection over the cached frame that puts each packed
column back at its place, so the frames reading the cache are written against the same columns as before. Spark's
column pruning takes a reader's projection down to the ``InMemoryTableScan``: a reader that reads none of the packed
columns does not scan the struct (tests/spark_analysis/test_packing.py holds both to the plans).

The lists of packed columns are fixed per cache (``mine.CORPUS_PACKED``, ``ownership.ROWS_PACKED``), chosen from what
fills each column -- which events set it -- not from a scan of the data: a column every row of a kind of event as
frequent as the ownership callbacks sets stays a column of its own.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

PACKED = "packed"


def pack(df: DataFrame, columns: Sequence[str]) -> DataFrame:
    """``df`` with ``columns`` moved into one struct column, :data:`PACKED`, null on every row where all of them are
    null (so that the row costs one null position, not a struct of nulls), placed last."""
    missing = [c for c in columns if c not in df.columns]
    if missing or PACKED in df.columns:
        raise ValueError(f"cannot pack {list(columns)} of {df.columns}: missing {missing}")
    any_set = reduce(operator.or_, [F.col(c).isNotNull() for c in columns])
    return df.withColumn(PACKED, F.when(any_set, F.struct(*[F.col(c) for c in columns]))).drop(*columns)


def unpack(df: DataFrame, columns: Sequence[str], before: Sequence[str]) -> DataFrame:
    """The packed frame ``df`` with its packed ``columns`` taken out of :data:`PACKED` again: the columns of the frame
    :func:`pack` was given (``before``), in its order, then those ``df`` gained since (``group_generations``'
    ``max_gen`` over the packed corpus). A field of a null struct is null, as the column was."""
    packed = set(columns)
    added = [c for c in df.columns if c not in before and c != PACKED]
    return df.select(*[F.col(PACKED)[c].alias(c) if c in packed else F.col(c) for c in [*before, *added]])
