"""The SparkSession the mining jobs run in, and how the project's code reaches executors.

``local[*]`` by default; any master URL Spark knows (``spark://host:7077``) runs the same job. The
jobs use built-in functions only (no Python UDFs), so executors never import groupspec: the driver
plans the job in Python and the JVM runs it. ``spark-submit`` needs the project only on the driver
(``--py-files`` with a zip of the packages ships it anyway, for clusters whose driver runs remote;
see docs/mining.md).
"""

from __future__ import annotations

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
    # Spark's default of 200 shuffle partitions makes hundreds of near-empty tasks per stage on a small
    # corpus; two per core keeps every core busy. (The job's one shuffle is the corpus's repartition by
    # group: every later stage has this many tasks.) A value the user gave is kept: in ``extra`` (the
    # benchmark's --conf), or in Spark's own configuration (spark-submit --conf, spark-defaults.conf). A large
    # corpus needs more than two per core: each task holds its share of every cache, sort and window buffer
    # (docs/mining.md, "Large corpora").
    parts = shuffle_partitions or (extra or {}).get("spark.sql.shuffle.partitions") \
        or spark.sparkContext.getConf().get("spark.sql.shuffle.partitions", None) \
        or max(2, 2 * spark.sparkContext.defaultParallelism)
    spark.conf.set("spark.sql.shuffle.partitions", str(parts))
    return spark
