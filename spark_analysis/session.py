"""The SparkSession the mining jobs run in, and how the project's code reaches executors.

``local[*]`` by default; any master URL Spark knows (``spark://host:7077``) runs the same job. The
jobs use built-in functions only (no Python UDFs), so executors never import groupspec: the driver
plans the job in Python and the JVM runs it. ``spark-submit`` needs the project only on the driver
(``--py-files`` with a zip of the packages ships it anyway, for clusters whose driver runs remote;
see docs/mining.md, "On a cluster").
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CONF = {
    # Arrow for every Spark <-> pandas conversion (the report's tables come back through it)
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # the job partitions by group once; windows and joins keyed by (group, ...) then need no new shuffle
    "spark.sql.requireAllClusterKeysForCoPartition": "false",
    # ... which holds only if the cached, group-partitioned corpus keeps telling Spark how it is partitioned
    "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "false",
    # adaptive execution re-plans the cached corpus as an adaptive plan whose partitioning the planner cannot
    # see, which put an exchange under every window and join (175 exchanges on the sample corpus; 21 without)
    "spark.sql.adaptive.enabled": "false",
    # every join is keyed by group, and the corpus is partitioned by group: a sort-merge join then needs no
    # shuffle, while a broadcast join collects one side (the ownership intervals) to the driver and copies it
    # to every task -- driver memory growing with the corpus
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    # Spark 4 plans a runtime Bloom filter for the removals join: a subquery job over the cached corpus
    # started while the corpus is still being cached, which then waits on the cache's locks (the join's other
    # side is a few rows per group; the filter saves nothing)
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
    # the job's one broadcast join (converges: the few members that moved groups) runs its build side before
    # the rest of the findings' query, so it is the first reader of the cached corpus and builds the whole
    # cache (the repartition by group and group_generations' windows). At 50M events that took longer than the
    # default 300 s and failed the job ("Could not execute broadcast in 300 secs"): the wait measures the
    # corpus, not the broadcast. No limit (SQLConf.broadcastTimeout reads a negative value as Long.MaxValue)
    "spark.sql.broadcastTimeout": "-1",
}


# Settings the job runs faster with but does not need: each is set only where nobody gave it a value -- the
# benchmark's --conf, spark-submit's --conf, spark-defaults.conf, or a notebook's spark.conf.set before build().
# They cannot go into CONF: the builder's options overwrite what spark-submit set (SparkSession.Builder.getOrCreate
# copies them over the SparkConf it loads).
DEFAULTS = {
    # The job's plans are hundreds of operators deep, and whole-stage code generation compiles each pipeline of
    # them into a class of its own that the JVM's JIT then compiles again, for stages that mostly run over a few
    # partitions. Without it the operators run their own code, expressions still generated. Measured: the whole
    # job 6.1% and 6.9% less JVM CPU at 10M (two alternating rounds; JIT 9-15% less, GC 16-19% less), the same
    # findings, and it finished at 50M (docs/benchmarks-spark.md, "whole-stage code generation off").
    "spark.sql.codegen.wholeStage": "false",
}


# The storage level mine.plan caches its shared frames at: a StorageLevel name (``MEMORY_ONLY``, ``DISK_ONLY``,
# ...), set like any Spark setting (``--conf`` of spark-submit and of the benchmark). PySpark's ``persist()``
# passes MEMORY_AND_DISK_DESER explicitly, so spark.sql.defaultCacheStorageLevel never reaches the job.
STORAGE_LEVEL = "spark.groupspec.mine.storageLevel"


def storage_level(spark: Any) -> Any:
    """The :class:`pyspark.StorageLevel` named by :data:`STORAGE_LEVEL` (MEMORY_AND_DISK_DESER when unset)."""
    from pyspark import StorageLevel

    name = spark.conf.get(STORAGE_LEVEL, "MEMORY_AND_DISK_DESER")
    level = getattr(StorageLevel, name, None)
    if not isinstance(level, StorageLevel):
        raise ValueError(f"{STORAGE_LEVEL}={name}: not a pyspark.StorageLevel name (MEMORY_AND_DISK_DESER, "
                         "MEMORY_ONLY, MEMORY_AND_DISK, DISK_ONLY, ...)")
    return level


# Whether mine.plan fits the shuffle partition count to the corpus (``true`` when the session chose the
# count, ``false`` when the user gave one; either can be set like any Spark setting).
FROM_CORPUS = "spark.groupspec.mine.partitionsFromCorpus"
# Corpus rows one running task may hold per GB of the heap it shares with the tasks beside it. Measured on
# this project's corpora (1.87 rows per event; docs/benchmarks-spark.md, "the whole job at 50M finishes"), local[2]:
# with a 6 GB driver (3 GB a task), 4.7M rows a task (10M events, 4 partitions) finished, 2.9M (50M events,
# 32) finished, 23.5M (50M, 4) failed for execution memory; with 1 GB, 2.35M (5M events, 4) failed for heap and
# 0.29M (32) finished. 1M per GB of a task's share is the one finished run at 50M (32 partitions): the
# smallest rate that finished at the largest corpus, since a larger corpus also spills more of its caches.
ROWS_PER_TASK_GB = "spark.groupspec.mine.rowsPerTaskGb"
ROWS_PER_TASK_GB_DEFAULT = 1_000_000
# The count the session chose itself, build()'s or the last fitted one (unset when one was given). mine.plan
# fits only while the session's count is still this one: a count set later (``spark.conf.set`` in a notebook) is
# the user's, and wins.
OWN_PARTITIONS = "spark.groupspec.mine.sessionPartitions"


def build(master: str | None = "local[*]", app: str = "groupspec mine", extra: dict[str, str] | None = None,
          shuffle_partitions: int | None = None) -> Any:
    """A SparkSession (``master`` None: whatever spark-submit set)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app)
    if master is not None:
        builder = builder.master(master)
    for key, value in {**CONF, **(extra or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    for key, value in DEFAULTS.items():
        if spark.conf.get(key, None) is None:  # None: nobody set it (whatever Spark's own default is)
            spark.conf.set(key, value)
    # Spark's default of 200 shuffle partitions makes hundreds of near-empty tasks per stage on a small
    # corpus; two per core keeps every core busy. (The corpus is repartitioned by group into this many
    # partitions, and every later stage keeps them.) A value the user gave is kept: in ``extra`` (the
    # benchmark's --conf), or in Spark's own configuration (spark-submit --conf, spark-defaults.conf). A large
    # corpus needs more than two per core: each task holds its share of every cache, sort and window buffer,
    # so mine.plan fits a count nobody gave to the corpus (fit_partitions).
    given = shuffle_partitions or (extra or {}).get("spark.sql.shuffle.partitions") \
        or spark.sparkContext.getConf().get("spark.sql.shuffle.partitions", None)
    spark.conf.set("spark.sql.shuffle.partitions", str(given or base_partitions(spark)))
    if given:
        spark.conf.unset(OWN_PARTITIONS)
    else:
        spark.conf.set(OWN_PARTITIONS, str(base_partitions(spark)))
    chosen = (extra or {}).get(FROM_CORPUS) or spark.sparkContext.getConf().get(FROM_CORPUS, None)
    spark.conf.set(FROM_CORPUS, chosen or ("false" if given else "true"))
    return spark


def base_partitions(spark: Any) -> int:
    return max(2, 2 * spark.sparkContext.defaultParallelism)


def partitions_for(rows: int, heap_bytes: int, parallelism: int, base: int, rows_per_task_gb: int) -> int:
    """Shuffle partitions for a corpus of ``rows`` on ``parallelism`` task slots sharing ``heap_bytes``.

    Each task holds its partition's share of every cache, sort and window buffer, so a task's rows must
    fit its share of the heap: ``rows / partitions <= rows_per_task_gb * heap_gb / parallelism``. Never
    fewer than ``base`` (the session's count for small corpora), and a multiple of ``parallelism`` so the
    last wave of tasks keeps every slot busy. Too many costs too (every stage has that many tasks, each
    sorting its share): 128 at 10M events took more than 2.4 times the CPU of 4 (docs/benchmarks-spark.md).
    """
    share_gb = heap_bytes / 2**30 / max(1, parallelism)
    needed = math.ceil(rows / max(1.0, rows_per_task_gb * share_gb))
    return max(base, -(-needed // parallelism) * parallelism)


def fit_partitions(spark: Any, part_files: list[Path]) -> str:
    """Set the shuffle partition count for a corpus made of ``part_files``; says where the count came from.

    Only when the session chose the count (:data:`FROM_CORPUS`), nobody has set another since
    (:data:`OWN_PARTITIONS`), and the master is local: there the tasks share the driver's heap, whose size
    the JVM reports. On a cluster the executors' heaps and cores are the cluster's, so the count is the
    user's to give (docs/mining.md, "Large corpora").
    """
    if spark.conf.get(FROM_CORPUS, "false") != "true":
        return "setting"
    own = spark.conf.get(OWN_PARTITIONS, None)
    if own is not None and spark.conf.get("spark.sql.shuffle.partitions") != own:
        return "setting"
    if not spark.sparkContext.master.startswith("local"):
        return "session"
    import pyarrow.parquet as pq

    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in part_files)  # the footers: nothing is read
    heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    per_gb = int(spark.conf.get(ROWS_PER_TASK_GB, str(ROWS_PER_TASK_GB_DEFAULT)))
    parts = partitions_for(rows, heap, spark.sparkContext.defaultParallelism, base_partitions(spark), per_gb)
    spark.conf.set("spark.sql.shuffle.partitions", str(parts))
    spark.conf.set(OWN_PARTITIONS, str(parts))  # still the session's choice: the next corpus is fitted again
    return "corpus"


@contextmanager
def partitions_kept(spark: Any) -> Iterator[None]:
    """Put the session's shuffle partition count (and whose choice it was) back as it was, however the block
    ends: mine.run's fitted count is that run's."""
    keys = ("spark.sql.shuffle.partitions", OWN_PARTITIONS)
    before = {key: spark.conf.get(key, None) for key in keys}
    try:
        yield
    finally:
        restore(spark, before)


def restore(spark: Any, before: dict[str, str | None]) -> None:
    """Set each runtime setting back to its value in ``before`` (None: it was unset)."""
    for key, value in before.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)
