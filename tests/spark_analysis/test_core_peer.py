"""The benchmark's DuckDB peer computes what the job's core computes (benchmarks/bench_spark.py).

"Within 2x of DuckDB" is a ratio of two engines running the same logic on the same Parquet. The Spark side
of the ratio is the job's own rules (``spark_core``: ``member_rows``, ``intervals``, ``overlaps``,
``unowned``, as ``mine.plan`` runs them); the DuckDB side is SQL written beside them. This holds the SQL to
the rules, kind by kind, on the agreement tests' corpora, so the ratio stays like for like when either
side changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("duckdb")

from benchmarks.bench_spark import CORE_KINDS, duckdb_run, spark_core  # noqa: E402


def test_duckdb_counts_the_findings_the_spark_core_writes(spark: Any, samples_corpus: Path, generated_corpus: Path,
                                                          tmp_path: Path) -> None:
    totals = dict.fromkeys(CORE_KINDS, 0)
    for name, corpus in (("samples", samples_corpus), ("generated", generated_corpus)):
        expected = spark_core(spark, corpus, tmp_path / name)
        assert duckdb_run(corpus, threads=1, spill=tmp_path / f"{name}-spill")["by_kind"] == expected, name
        for kind, n in expected.items():
            totals[kind] += n
    # every kind is counted on something, so each part of the SQL is held to the rules: both halves of an overlap's
    # judgement (the samples: zombies and single owners; the generated corpus: revoke-before-assign), and the
    # unowned polls and commits (crafted.SETS' "commit-unowned": a late commit at the position consumed to, one past
    # it, one of a partition never owned, a failed one, a poll after the revoke; "malformed-setting-assign": a poll of
    # a partition whose assignment line was refused)
    assert all(totals[kind] > 0 for kind in CORE_KINDS), totals
