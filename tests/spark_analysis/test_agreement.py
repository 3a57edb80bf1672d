"""The Spark job and the streaming checker report exactly the same findings.

Compared per finding: group, invariant, severity, members, partitions, time window and
occurrences, for every invariant the Spark job covers (spark_analysis.mine.COVERED), on every trace
set under tests/traces/samples and on a generated corpus with faults and every mutant. The
comparison goes through PySpark's own ``assertDataFrameEqual``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_analysis import corpus, mine
from tests.spark_analysis.conftest import GENERATED, trace_sets
from tests.traces.support import run as check_paths
from traces.checker import CheckConfig
from traces.report import check_events

pyspark_testing = pytest.importorskip("pyspark.testing")

SCHEMA = ("group string, invariant string, severity string, members array<string>, "
          "partitions array<struct<topic:string,partition:int>>, t0 long, t1 long, occurrences long")


def _key(f: dict[str, Any], group: str) -> tuple[Any, ...]:
    return (group, f["invariant"], f["severity"], sorted(f["members"]),
            sorted((p["topic"], p["partition"]) for p in f["partitions"]), f["window"][0], f["window"][1],
            f["occurrences"])


def _frame(spark: Any, keys: list[tuple[Any, ...]]) -> Any:
    rows = [(g, i, s, m, [{"topic": t, "partition": p} for t, p in ps], t0, t1, n)
            for g, i, s, m, ps, t0, t1, n in keys]
    return spark.createDataFrame(rows, SCHEMA)


def _spark_keys(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return sorted(_key(f, f["group"]) for f in report["violations"] + report["warnings"])


def test_every_sample_trace_set_agrees_with_the_checker(spark: Any, samples_mined: dict[str, Any]) -> None:
    expected: list[tuple[Any, ...]] = []
    for name, path in trace_sets().items():
        report = check_paths(path, max_findings=1_000_000)
        expected += [_key(f, f"{name}/{f['group']}") for f in report["findings"] if f["invariant"] in mine.COVERED]
    got = _spark_keys(samples_mined)
    assert expected, "the samples hold findings of covered invariants: a comparison of nothing proves nothing"
    # A known disagreement, kept strict so that its fix shows: in this capture c2's ownership is read
    # from its callback trace paired with its KIP-848 client log (c2.log), and the checker ends it
    # at c2.log's end (c2 was SIGKILLed and fenced; c1 got cp1-2 and cp1-3 while c2 still held
    # them: two zombie-overlap warnings, as expected.json says). The Spark job ends c2's ownership
    # earlier and sees no overlap; the cause is open (docs/mining.md, "Known disagreements").
    known = "kafka-4.1.1-extra-vc-consumer-protocol/g-cp"
    assert [k[1] for k in expected if k[0] == known] == ["zombie-overlap", "zombie-overlap"]
    assert [k for k in got if k[0] == known] == []
    expected = [k for k in expected if k[0] != known]
    pyspark_testing.assertDataFrameEqual(_frame(spark, got), _frame(spark, sorted(expected)))


def _checker_keys_generated() -> list[tuple[Any, ...]]:
    keys: list[tuple[Any, ...]] = []
    for index in range(GENERATED.groups):
        events, _ = corpus.simulate_group(GENERATED, index)
        group = corpus.group_name(index)
        report = check_events(events, CheckConfig(max_findings=1_000_000), label=f"{group}.jsonl")
        keys += [_key(f, f["group"]) for f in report["findings"] if f["invariant"] in mine.COVERED]
    return sorted(keys)


def test_a_generated_corpus_with_every_mutant_agrees_with_the_checker(spark: Any, generated_corpus: Path,
                                                                       generated_mined: dict[str, Any]) -> None:
    truth = corpus.read_truth(generated_corpus)
    assert truth is not None
    assert {t["mutant"] for t in truth["truth"].values()} - {None} == set(GENERATED.mutants)
    expected = _checker_keys_generated()
    assert any(k[2] == "violation" for k in expected), "the mutants make violations the checker sees"
    pyspark_testing.assertDataFrameEqual(_frame(spark, _spark_keys(generated_mined)), _frame(spark, expected))


def test_recall_and_precision_against_truth(generated_corpus: Path, generated_mined: dict[str, Any]) -> None:
    """Every mutant group the model's monitor flags with a covered invariant is flagged; no clean group is."""
    truth = corpus.read_truth(generated_corpus)
    assert truth is not None
    flagged = {f["group"] for f in generated_mined["violations"]}
    entries = truth["truth"]
    target = {g for g, t in entries.items() if t["mutant"] and set(t["monitor"]) & set(mine.COVERED)}
    clean = {g for g, t in entries.items() if not t["mutant"] and not t["monitor"]}
    assert target, "some mutant must show in a covered invariant, or recall is vacuous"
    assert target <= flagged, f"missed: {sorted(target - flagged)}"
    assert clean, "some groups are clean"
    assert not clean & flagged, f"clean groups flagged: {sorted(clean & flagged)}"
    assert generated_mined["truth"]["precision_clean"] == 1.0
