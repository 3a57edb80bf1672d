"""One SparkSession for the whole test run, and the corpora the agreement tests mine once.

The session is local[*] with few shuffle partitions; it is stopped when the run ends, also when a
test failed. The corpora: every trace set under tests/traces/samples and the crafted sets of
tests/spark_analysis/crafted.py (each set's groups named apart, so one Spark run judges them all), and a generated corpus of simulated groups with faults
and every mutant of model/mutants.py.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
# pyspark.testing imports pandas-on-Spark, which wants this set before any SparkContext starts
os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
# Python workers (tests/spark_analysis/test_spark_checker.py) run this interpreter, not `python3` on PATH
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from model.mutants import MUTANTS  # noqa: E402
from spark_analysis import corpus, mine, session  # noqa: E402
from tests.spark_analysis import crafted  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[1] / "traces" / "samples"
EVERY_HANDOFF = mine.MineConfig(max_examples=1_000_000)  # the agreement test compares every handoff
GENERATED = corpus.CorpusSpec(groups=48, seed=7, mutant_fraction=0.6, mutants=tuple(sorted(MUTANTS)))


def _holds_traces(folder: Path) -> bool:
    return any(c.is_file() and c.suffix in (".jsonl", ".json", ".log", ".gz") and c.name != "scenario.json"
               for c in folder.iterdir())


def trace_sets() -> dict[str, Path]:
    """Every directory of samples holding trace files is one trace set (one incident, one run)."""
    return {p.relative_to(SAMPLES).as_posix().replace("/", "-"): p for p in sorted(SAMPLES.rglob("*"))
            if p.is_dir() and _holds_traces(p)}


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    # Every mine.run of the session plans the whole job again; its plans stay on the driver for as long as
    # Python holds the DataFrames (see _release_jvm_objects). Past Spark's default 1 GB heap after the
    # agreement tests' job runs (an OutOfMemoryError in the tests after them, issue 15's sixth session), so 3 GB
    # stays as the cap. This is the test process's first SparkContext, so the setting reaches the driver JVM
    # when it starts.
    s = session.build("local[*]", app="groupspec tests", shuffle_partitions=4, extra={"spark.driver.memory": "3g"})
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(autouse=True)
def _release_jvm_objects() -> Iterator[None]:
    """After each test, free the JVM objects its DataFrames held.

    py4j's JavaObject caches each method it called as a JavaMember that refers back to it: every DataFrame,
    Column and plan object the job touched is in a reference cycle, so its JVM side (the Dataset, its
    QueryExecution, the plans of every cached frame it read) stays pinned in the gateway until Python's
    cyclic collector runs, which in a test process of many long-lived objects is rarely. Measured at the end
    of test_agreement.py (docs/mining-internals.md, "The driver's heap"): without this, 842 MiB of the driver's heap in use after a JVM GC
    (2.8 GB committed), 153 MiB once Python had collected; with it, 152 MiB (514 MB committed). The SQL UI's
    retained executions (spark.sql.ui.retainedExecutions) held a few MB of it: left at Spark's default.
    mine.run now collects when it returns (its own frames), but the tests build frames of their own
    (assertDataFrameEqual's, the benchmark core's in test_core_peer, mine.plan's in test_session), so this stays.
    """
    yield
    gc.collect()


@pytest.fixture(scope="session")
def sample_sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The trace sets under tests/traces/samples, and the crafted ones (tests/spark_analysis/crafted.py)."""
    return {**trace_sets(), **crafted.write(tmp_path_factory.mktemp("crafted"))}


@pytest.fixture(scope="session")
def samples_corpus(sample_sets: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("samples-corpus")
    part = 0
    for name, path in sample_sets.items():
        info = corpus.from_traces([str(path)], out, group_prefix=f"{name}/", first_part=part, progress=None)
        part += info["parts"]
    return out


@pytest.fixture(scope="session")
def samples_mined(spark: Any, samples_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return mine.run(spark, samples_corpus, tmp_path_factory.mktemp("samples-mined"), EVERY_HANDOFF)


def simulated_corpus(tmp_path_factory: pytest.TempPathFactory, name: str, spec: corpus.CorpusSpec) -> Path:
    """A corpus of ``spec``'s simulated groups, in a new directory of the run's temporary tree."""
    out = tmp_path_factory.mktemp(name)
    corpus.simulate_groups(spec, out, progress=None)
    return out


@pytest.fixture(scope="session")
def generated_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulated_corpus(tmp_path_factory, "generated-corpus", GENERATED)


@pytest.fixture(scope="session")
def generated_mined(spark: Any, generated_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return mine.run(spark, generated_corpus, tmp_path_factory.mktemp("generated-mined"), EVERY_HANDOFF)
