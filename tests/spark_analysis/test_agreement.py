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
from spark_analysis import delivery as dl
from tests.spark_analysis.conftest import GENERATED
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


# the rules the crafted sets (tests/spark_analysis/crafted.py) break, so that their comparison is never vacuous
CRAFTED = ("monotonic-consumption", "committed-not-ahead", "no-gap", "subscribed-only", "revoke-only-moved",
           "static-rejoin")
OFFSET_RULES = ("no-gap", "committed-not-ahead")
# Known disagreements (docs/mining.md), each named exactly so that the test fails when it changes. Issue 13's
# checker fix (no-gap judged on the broker's commits from server.log, and a killed or still-holding earlier
# owner's last commit treated as possibly unseen) is not in the Spark job yet:
# - here the checker judges no-gap on the broker's commits where the Spark job leaves the same first
#   consumptions unchecked (an auto-commit note): less said, nothing wrong said;
JUDGED_ON_BROKER_COMMITS = ("kafka-4.1.1-java-autocommit", "kafka-4.1.1-vc-autocommit")
# - and here the Spark job reports the false no-gap the checker no longer does (m3 killed after its commit
#   reached the broker, before its trace line): a false violation of the Spark job, the first thing to fix.
KNOWN_SPARK_ONLY = ("kafka-4.1.1-extra-vc-bounce-killed-commit/consumer-bounce", "no-gap", "violation", ["m3"],
                    [("orders", 3)], 1795640727658, 1795640727658, 1)


def _partial_notes(notes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((u["invariant"], u["reason"]) for u in notes if u["invariant"] in OFFSET_RULES and u["partial"])


def _spark_notes(mined: dict[str, Any], group_prefix: str) -> list[tuple[str, str]]:
    rows = [r for r in mined["unchecked_per_group"] if r["group"].startswith(group_prefix)]
    return _partial_notes(dl.unchecked(rows))


def test_every_sample_trace_set_agrees_with_the_checker(spark: Any, sample_sets: dict[str, Path],
                                                        samples_mined: dict[str, Any]) -> None:
    expected: list[tuple[Any, ...]] = []
    for name, path in sample_sets.items():
        report = check_paths(path, max_findings=1_000_000)
        expected += [_key(f, f"{name}/{f['group']}") for f in report["findings"] if f["invariant"] in mine.COVERED]
        # what the offset rules could not judge, counted per reason as the checker counts it
        checker_notes = _partial_notes(report["unchecked"])
        if name in JUDGED_ON_BROKER_COMMITS:  # named in docs/mining.md, "Known disagreements"
            spark_only = [n for n in _spark_notes(samples_mined, f"{name}/") if n[0] == "no-gap" and "auto-commit" in n[1]]
            assert spark_only, f"{name}: the Spark job caught up; drop it from JUDGED_ON_BROKER_COMMITS"
            checker_notes = sorted(checker_notes + spark_only)
        assert _spark_notes(samples_mined, f"{name}/") == checker_notes, name
    got = _spark_keys(samples_mined)
    # named in docs/mining.md, "Known disagreements": a false no-gap only the Spark job reports
    assert KNOWN_SPARK_ONLY in got, "the Spark job no longer reports the known false no-gap: drop KNOWN_SPARK_ONLY"
    got.remove(KNOWN_SPARK_ONLY)
    assert expected, "the samples hold findings of covered invariants: a comparison of nothing proves nothing"
    assert set(CRAFTED) <= {k[1] for k in expected}, "every crafted rule is broken somewhere"
    pyspark_testing.assertDataFrameEqual(_frame(spark, got), _frame(spark, sorted(expected)))


def _checker_generated() -> tuple[list[tuple[Any, ...]], dict[str, list[tuple[str, str]]]]:
    """The checker's findings of covered invariants on the generated corpus, and its offset rules' notes per group."""
    keys: list[tuple[Any, ...]] = []
    notes: dict[str, list[tuple[str, str]]] = {}
    for index in range(GENERATED.groups):
        events, _ = corpus.simulate_group(GENERATED, index)
        group = corpus.group_name(index)
        report = check_events(events, CheckConfig(max_findings=1_000_000), label=f"{group}.jsonl")
        keys += [_key(f, f["group"]) for f in report["findings"] if f["invariant"] in mine.COVERED]
        notes[group] = _partial_notes(report["unchecked"])
    return sorted(keys), notes


def test_a_generated_corpus_with_every_mutant_agrees_with_the_checker(spark: Any, generated_corpus: Path,
                                                                       generated_mined: dict[str, Any]) -> None:
    truth = corpus.read_truth(generated_corpus)
    assert truth is not None
    assert {t["mutant"] for t in truth["truth"].values()} - {None} == set(GENERATED.mutants)
    expected, notes = _checker_generated()
    assert any(k[2] == "violation" for k in expected), "the mutants make violations the checker sees"
    assert {"no-gap", "committed-not-ahead", "static-rejoin"} <= {k[1] for k in expected}
    for group, checker_notes in notes.items():
        assert _spark_notes(generated_mined, group) == checker_notes, group
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
