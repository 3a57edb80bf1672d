"""``python -m benchmarks spark``'s options that need no Spark session."""

from __future__ import annotations

import pytest

from benchmarks.bench_spark import variants


def test_variants_parse_with_the_baseline_first():
    assert variants(["nowsc:spark.sql.codegen.wholeStage=false,spark.sql.shuffle.partitions=8"]) == [
        ("baseline", {}),
        ("nowsc", {"spark.sql.codegen.wholeStage": "false", "spark.sql.shuffle.partitions": "8"})]


@pytest.mark.parametrize("key", ["spark.driver.extraJavaOptions", "spark.driver.memory"])
def test_a_variant_of_a_launch_setting_is_refused(key):
    # every run of one bench process shares the first run's JVM: the setting would be measured without effect
    with pytest.raises(SystemExit, match=f"--variant v: {key} takes effect only when the driver JVM starts"):
        variants([f"v:spark.sql.shuffle.partitions=8,{key}=x"])
