"""The session settings a user can give the job: the storage level of mine.plan's cached frames."""

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
