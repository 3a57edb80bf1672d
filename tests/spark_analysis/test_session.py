"""The session settings a user can give the job: the storage level of mine.plan's cached frames, the shuffle
partition count, fitted to the corpus when nobody gave one, and the settings the job only runs faster with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark import StorageLevel

from spark_analysis import mine, session


def test_plan_caches_at_the_level_the_session_names(spark: Any, samples_corpus: Path) -> None:
    """Unset: PySpark's persist() default (MEMORY_AND_DISK_DESER); set: every frame mine.plan keeps uses it."""
    assert session.storage_level(spark) == StorageLevel.MEMORY_AND_DISK_DESER
    spark.conf.set(session.STORAGE_LEVEL, "DISK_ONLY")
    try:
        p = mine.plan(spark, samples_corpus)  # plans only: nothing is computed or cached until an action
        try:
            assert p.cached and all(df.storageLevel == StorageLevel.DISK_ONLY for df in p.cached)
        finally:
            p.release()
    finally:
        spark.conf.unset(session.STORAGE_LEVEL)


def test_an_unknown_level_is_refused_with_its_name(spark: Any) -> None:
    spark.conf.set(session.STORAGE_LEVEL, "MEMORY_FAST")
    try:
        with pytest.raises(ValueError, match="MEMORY_FAST: not a pyspark.StorageLevel name"):
            session.storage_level(spark)
    finally:
        spark.conf.unset(session.STORAGE_LEVEL)


GB = 2**30


@pytest.mark.parametrize("rows, heap, slots, base", [
    (18_800_000, 6 * GB, 2, 4),  # the 10M-event benchmark corpus with a 6 GB driver: 4 partitions finished
    (93_800_000, 6 * GB, 2, 4),  # 50M events: 4 failed for execution memory
    (9_400_000, 1 * GB, 2, 4),  # 5M events with the default 1 GB driver: 4 failed for heap, 32 finished
    (1_000, 1 * GB, 2, 4),  # a small corpus keeps the session's two per core
    (50_000_000, 4 * GB, 3, 6),
])
def test_partitions_fit_a_tasks_rows_to_its_share_of_the_heap(rows: int, heap: int, slots: int, base: int) -> None:
    per_gb = session.ROWS_PER_TASK_GB_DEFAULT
    parts = session.partitions_for(rows, heap, slots, base, per_gb)
    share_gb = heap / GB / slots
    assert parts >= base and parts % slots == 0  # whole waves of tasks
    assert rows / parts <= per_gb * share_gb  # each task's rows fit its share ...
    assert parts == base or rows / (parts - slots) > per_gb * share_gb  # ... and no wave more than that takes


def test_partitions_for_the_measured_corpora() -> None:
    """Where the measurements put the count (docs/mining.md, "Large corpora"): the count that finished at 50M,
    above the counts that failed, far below the count that cost 2.4 times the CPU at 10M."""
    per_gb = session.ROWS_PER_TASK_GB_DEFAULT
    assert session.partitions_for(93_847_600, 6 * GB, 2, 4, per_gb) == 32  # 50M events: 32 finished, 4 failed
    assert session.partitions_for(9_400_000, 1 * GB, 2, 4, per_gb) > 4  # 4 failed at 5M with 1 GB
    assert session.partitions_for(18_760_000, 6 * GB, 2, 4, per_gb) < 128  # 128 cost 2.4x+ at 10M


def test_plan_fits_the_count_to_the_corpus_only_when_nobody_gave_one(spark: Any, samples_corpus: Path) -> None:
    """The test session was given 4 partitions: kept. Told to fit (as a session nobody gave a count is),
    the count follows the corpus's rows from the Parquet footers and the heap the JVM reports."""
    import pyarrow.parquet as pq

    from spark_analysis.layout import part_files

    given = spark.conf.get("spark.sql.shuffle.partitions")
    assert spark.conf.get(session.FROM_CORPUS) == "false"
    p = mine.plan(spark, samples_corpus)
    p.release()
    assert p.partitions_from == "setting" and spark.conf.get("spark.sql.shuffle.partitions") == given
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in part_files(samples_corpus))
    heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    slots = spark.sparkContext.defaultParallelism
    per_gb = max(1, rows // 10)  # small enough that this small corpus needs more than the session's count
    expected = session.partitions_for(rows, heap, slots, session.base_partitions(spark), per_gb)
    assert expected > session.base_partitions(spark)
    spark.conf.set(session.FROM_CORPUS, "true")
    spark.conf.set(session.ROWS_PER_TASK_GB, str(per_gb))
    try:
        p = mine.plan(spark, samples_corpus)
        try:
            assert p.partitions_from == "corpus"
            assert p.events.rdd.getNumPartitions() == expected  # the corpus's repartition by group took it
        finally:
            p.release()
        # a session built without a count (here the running one, as a notebook's second build() gets it) fits
        # while the count is still its own (build's, or the one fitted last) ...
        assert session.build("local[*]") is spark and spark.conf.get(session.FROM_CORPUS) == "true"
        assert spark.conf.get(session.OWN_PARTITIONS) == spark.conf.get("spark.sql.shuffle.partitions")
        for _ in range(2):
            p = mine.plan(spark, samples_corpus)
            p.release()
            assert p.partitions_from == "corpus"
            assert spark.conf.get("spark.sql.shuffle.partitions") == str(expected)
        # ... and a count set afterwards (a notebook's spark.conf.set) is the user's: it wins
        spark.conf.set("spark.sql.shuffle.partitions", "3")
        p = mine.plan(spark, samples_corpus)
        try:
            assert p.partitions_from == "setting"
            assert p.events.rdd.getNumPartitions() == 3
        finally:
            p.release()
    finally:
        spark.conf.unset(session.OWN_PARTITIONS)
        spark.conf.set(session.FROM_CORPUS, "false")
        spark.conf.unset(session.ROWS_PER_TASK_GB)
        spark.conf.set("spark.sql.shuffle.partitions", given)


def test_a_run_puts_the_sessions_count_back(spark: Any) -> None:
    """mine.run fits the count for its corpus only: after it (also after a failure) the session's count and
    whose choice it was are as before, so the next run fits again and a count the user set stays theirs."""
    given = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set(session.OWN_PARTITIONS, given)
    try:
        with pytest.raises(RuntimeError), session.partitions_kept(spark):
            spark.conf.set("spark.sql.shuffle.partitions", "17")
            spark.conf.set(session.OWN_PARTITIONS, "17")  # as fit_partitions leaves them
            raise RuntimeError("the job failed")
        assert spark.conf.get("spark.sql.shuffle.partitions") == given
        assert spark.conf.get(session.OWN_PARTITIONS) == given
        spark.conf.unset(session.OWN_PARTITIONS)
        with session.partitions_kept(spark):
            spark.conf.set(session.OWN_PARTITIONS, "17")
        assert spark.conf.get(session.OWN_PARTITIONS, None) is None
    finally:
        spark.conf.unset(session.OWN_PARTITIONS)
        spark.conf.set("spark.sql.shuffle.partitions", given)


def test_the_speed_defaults_apply_only_where_nobody_set_them(spark: Any) -> None:
    """Whole-stage code generation is off in a session nobody told otherwise (the test session), and a value
    set before build() -- by a notebook, or by spark-submit's --conf, which reaches the session's conf the same
    way -- is kept when build() runs again; ``extra`` (the benchmark's --conf) wins too."""
    key = "spark.sql.codegen.wholeStage"
    assert session.DEFAULTS[key] == "false" and spark.conf.get(key) == "false"
    kept = {k: spark.conf.get(k, None) for k in ("spark.sql.shuffle.partitions", session.FROM_CORPUS,
                                                 session.OWN_PARTITIONS)}
    try:
        spark.conf.set(key, "true")
        assert session.build("local[*]") is spark and spark.conf.get(key) == "true"
        spark.conf.unset(key)
        assert session.build("local[*]") is spark and spark.conf.get(key) == "false"
        assert session.build("local[*]", extra={key: "true"}) is spark and spark.conf.get(key) == "true"
    finally:
        spark.conf.set(key, "false")
        for k, v in kept.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
