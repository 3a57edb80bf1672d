"""benchmarks/ab.py: the verdict from the runs' numbers, the comparison of two runs' results, the report, the setup
errors; and one small run of the whole tool (slow: two Spark runs of the benchmark)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from benchmarks import ab  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# violations.parquet's nested columns (lists, structs) as mine.run writes them: EXCEPT ALL must compare those too
FINDINGS = pa.schema([("group", pa.string()), ("invariant", pa.string()), ("members", pa.list_(pa.string())),
                      ("partitions", pa.list_(pa.struct([("topic", pa.string()), ("partition", pa.int32())]))),
                      ("t0", pa.int64())])


def _findings(rows: list[tuple[str, str, list[str], int, int]]) -> pa.Table:
    return pa.Table.from_pylist([{"group": g, "invariant": i, "members": m,
                                  "partitions": [{"topic": "t", "partition": p}], "t0": t0} for g, i, m, p, t0 in rows],
                                schema=FINDINGS)


def _write(table: pa.Table, folder: Path) -> Path:
    """A violations.parquet as Spark writes it: a folder of part files."""
    folder.mkdir(parents=True)
    half = table.num_rows // 2
    pq.write_table(table.slice(0, half), folder / "part-00000.parquet")
    pq.write_table(table.slice(half), folder / "part-00001.parquet")
    return folder


ROWS = [("g1", "single-owner", ["a", "b"], 0, 10), ("g1", "no-gap", ["a"], 1, 20), ("g2", "no-gap", ["c"], 0, 5)]


def test_a_gain_only_when_every_branch_run_is_below_every_base_run() -> None:
    gain = ab.verdict([250.0, 244.8, 248.6], [230.1, 240.0, 231.8])
    assert gain.startswith("gain established") and gain.endswith("equal code would order them so 1 time in 20)")
    assert ab.verdict([250.0, 244.8, 248.6, 251.0], [230.1, 240.0, 231.8, 233.0]).endswith("1 time in 70)")
    overlap = ab.verdict([250.0, 244.8, 248.6], [230.1, 245.0, 231.8])
    assert overlap.startswith("no gain established") and "overlap over 244.8-245.0" in overlap
    # equal extremes are no gain: the branch's worst run ties the base's best
    assert ab.verdict([244.8, 250.0], [230.0, 244.8]).startswith("no gain established")
    worse = ab.verdict([230.0, 231.0], [240.0, 241.0])
    assert worse.startswith("no gain established") and "costs more" in worse


def _run(side: str, rnd: int, jvm: float, tasks: float | None, wall: float, folder: Path | None = None) -> dict[str, Any]:
    return {"side": side, "round": rnd, "started_utc": "2026-11-27 14:00:00", "jvm_cpu_s": jvm, "tasks_cpu_s": tasks,
            "seconds": wall, "by_thread_s": {"tasks": tasks, "jit": 80.0, "gc": 12.0}, "driver_jvm_peak_mb": 3500.0,
            "findings": 3, "shuffles": 21, "loadavg_before": [2.0, 1.5, 1.2], "loadavg_after": [3.0, 2.0, 1.3],
            "dir": str(folder) if folder else ""}


def test_the_summary_states_each_sides_spread_and_the_ratio_of_the_medians() -> None:
    runs = [_run("base", 1, 250.0, 120.0, 300.0), _run("branch", 1, 200.0, 100.0, 260.0),
            _run("base", 2, 240.0, 110.0, 280.0), _run("branch", 2, 210.0, 105.0, 250.0),
            _run("base", 3, 260.0, 130.0, 290.0), _run("branch", 3, 220.0, 125.0, 255.0)]
    s = ab.summarize(runs)
    assert s["sides"]["base"]["jvm_cpu_s"] == {"median": 250.0, "min": 240.0, "max": 260.0, "n": 3}
    assert s["sides"]["branch"]["tasks_cpu_s"] == {"median": 105.0, "min": 100.0, "max": 125.0, "n": 3}
    assert s["ratio_of_medians"]["jvm_cpu_s"] == 0.84
    assert s["verdicts"]["jvm_cpu_s"].startswith("gain established")
    # the task threads overlap (branch 125 > base 110): no gain there, whatever the JVM total says
    assert s["verdicts"]["tasks_cpu_s"].startswith("no gain established")
    assert s["sides"]["base"]["loadavg_1min"] == [2.0, 2.0, 2.0]


def test_equal_violations_compare_equal_whatever_the_files_and_order(tmp_path: Path) -> None:
    a = _write(_findings(ROWS), tmp_path / "a")
    b = _write(_findings(list(reversed(ROWS))), tmp_path / "b")
    got = ab.compare_violations(a, b)
    assert got["equal"] and got["a_not_b"] == 0 and got["b_not_a"] == 0 and got["rows_a"] == 3


def test_differing_violations_are_listed_each_way_with_their_multiplicity(tmp_path: Path) -> None:
    a = _write(_findings(ROWS + [ROWS[0]]), tmp_path / "a")  # a duplicate row: EXCEPT ALL counts it
    changed = [ROWS[0], ROWS[1], ("g2", "no-gap", ["c"], 1, 5)]  # a nested field (the partition) differs
    b = _write(_findings(changed), tmp_path / "b")
    got = ab.compare_violations(a, b)
    assert not got["equal"]
    assert (got["a_not_b"], got["b_not_a"]) == (2, 1)
    assert got["rows"]["b_not_a"] == [{"group": "g2", "invariant": "no-gap", "members": "['c']",
                                       "partitions": "[{'topic': 't', 'partition': 1}]", "t0": "5"}]


def test_violations_of_another_schema_differ(tmp_path: Path) -> None:
    a = _write(_findings(ROWS), tmp_path / "a")
    b = _write(_findings(ROWS).drop_columns(["t0"]), tmp_path / "b")
    got = ab.compare_violations(a, b)
    assert not got["equal"] and "t0 BIGINT" in got["schema"][0] and len(got["schema"][1]) == 4


REPORT = {"violations": [{"group": "g1", "invariant": "no-gap", "members": ["a"]}],
          "analytics": {"rebalances": 7, "pause_summary": {"max": "120"}},
          "spark": {"shuffles": 21, "seconds": 251.3}}


def test_reports_equal_but_for_their_timing_compare_equal(tmp_path: Path) -> None:
    other = json.loads(json.dumps(REPORT))
    other["spark"]["seconds"] = 199.9
    (tmp_path / "a.json").write_text(json.dumps(REPORT))
    (tmp_path / "b.json").write_text(json.dumps(other))
    assert ab.compare_mine_json(tmp_path / "a.json", tmp_path / "b.json") == []


def test_reports_that_differ_name_where(tmp_path: Path) -> None:
    other = json.loads(json.dumps(REPORT))
    other["violations"][0]["members"] = ["b"]
    other["analytics"]["rebalances"] = 8
    other["spark"]["broadcasts"] = 1
    (tmp_path / "a.json").write_text(json.dumps(REPORT))
    (tmp_path / "b.json").write_text(json.dumps(other))
    assert ab.compare_mine_json(tmp_path / "a.json", tmp_path / "b.json") == [
        "$.analytics.rebalances: 7 != 8", "$.spark.broadcasts: only in the second",
        '$.violations[0].members[0]: "a" != "b"']
    assert ab.compare_mine_json(tmp_path / "a.json", tmp_path / "missing.json")[0].startswith("no mine.json")


def test_an_expected_change_is_left_out_and_only_it(tmp_path: Path) -> None:
    # a branch meant to change spark.shuffles (h25-handoff: 21 -> 8) compares equal but for that key
    other = json.loads(json.dumps(REPORT))
    other["spark"]["shuffles"] = 8
    (tmp_path / "a.json").write_text(json.dumps(REPORT))
    (tmp_path / "b.json").write_text(json.dumps(other))
    assert ab.compare_mine_json(tmp_path / "a.json", tmp_path / "b.json") == ["$.spark.shuffles: 21 != 8"]
    assert ab.compare_mine_json(tmp_path / "a.json", tmp_path / "b.json", ("spark.shuffles",)) == []
    other["analytics"]["rebalances"] = 8
    (tmp_path / "b.json").write_text(json.dumps(other))
    assert ab.compare_mine_json(tmp_path / "a.json", tmp_path / "b.json", ("spark.shuffles", "no.such.key")) == [
        "$.analytics.rebalances: 7 != 8"]


def _fake_runs(tmp_path: Path, differ: bool) -> Any:
    """run_once without Spark: each run's results written where the tool keeps them."""
    def run_once(tree: ab.Tree, rnd: int, args: Any, keep: Path) -> dict[str, Any]:
        where = keep / f"{tree.side}-{rnd}"
        rows = ROWS[:2] if differ and tree.side == "branch" else ROWS
        _write(_findings(rows), where / "violations.parquet")
        (where / "mine.json").write_text(json.dumps(REPORT))
        return _run(tree.side, rnd, 250.0 if tree.side == "base" else 240.0 + rnd, 120.0, 300.0, where)
    return run_once


def _corpus(work: Path, size: int, groups: int) -> None:
    tag = ab.check_tree("base", ROOT, sys.executable).layout_tag
    (work / f"corpus-{size}-pool-{groups}-{tag}").mkdir(parents=True)
    (work / f"corpus-{size}-pool-{groups}-{tag}" / "done.json").write_text("{}")


@pytest.mark.parametrize("differ", [False, True])
def test_the_tool_reports_and_fails_on_differing_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str], differ: bool) -> None:
    monkeypatch.setattr(ab, "run_once", _fake_runs(tmp_path, differ))
    _corpus(tmp_path / "work", 1000, 4)
    out = tmp_path / "out" / "ab.json"
    code = ab.main(["--", "--base", str(ROOT), "--branch", str(ROOT), "--work", str(tmp_path / "work"),
                    "--size", "1000", "--pool-groups", "4", "--rounds", "2", "--out", str(out)])
    result = json.loads(out.read_text())
    md = out.with_suffix(".md").read_text()
    assert [(r["side"], r["round"]) for r in result["runs"]] == [("base", 1), ("branch", 1), ("base", 2),
                                                                  ("branch", 2)]
    assert len(result["pairs"]) == 6  # every pair of the four runs
    assert result["summary"]["verdicts"]["jvm_cpu_s"].startswith("gain established")
    assert "gain established (JVM CPU s): every branch run below every base run" in md
    assert "| branch | 241.5 (241.0-242.0) |" in md
    if differ:
        assert code == 1 and not result["equal"]
        # the two branch runs agree with each other, not with the base's
        assert sorted(tuple(sorted((p["a"], p["b"]))) for p in result["pairs"] if not p["equal"]) == [
            ("base-1", "branch-1"), ("base-1", "branch-2"), ("base-2", "branch-1"), ("base-2", "branch-2")]
        assert "**Results DIFFER**" in md
        assert "- base-1 vs branch-1: violations.parquet: 1 rows only in base-1, 0 only in branch-1" in md
        assert """  - only in base-1: {"group": "g2", "invariant": "no-gap",""" in md
    else:
        assert code == 0 and result["equal"] and "**Results equal** (6 pairs" in md
    assert "# A/B: the whole job at 1,000 events" in capsys.readouterr().out  # the report on stdout too


def test_a_tree_that_is_no_checkout_and_a_missing_corpus_are_said(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code = ab.main(["--base", str(tmp_path), "--branch", str(ROOT), "--work", str(tmp_path),
                    "--out", str(tmp_path / "x.json")])
    assert code == 2 and "not a groupspec checkout" in capsys.readouterr().err
    code = ab.main(["--base", str(ROOT), "--branch", str(ROOT), "--work", str(tmp_path / "none"),
                    "--out", str(tmp_path / "x.json")])
    err = capsys.readouterr().err
    assert code == 2 and "no corpus corpus-1000000-pool-200-" in err and "--no-whole" in err


def test_trees_of_different_corpus_layouts_are_refused(tmp_path: Path) -> None:
    trees = [ab.Tree("base", ROOT, "x", False, "aaaa1111"), ab.Tree("branch", ROOT, "y", False, "bbbb2222")]
    with pytest.raises(ab.AbError, match="layouts differ .base aaaa1111, branch bbbb2222.*--each-own-corpus"):
        ab.check_corpus(tmp_path, 1000, 4, trees)
    # a change of the layout itself: each tree reads its own layout's corpus, and each must be there
    (tmp_path / "corpus-1000-pool-4-aaaa1111").mkdir()
    (tmp_path / "corpus-1000-pool-4-aaaa1111" / "done.json").write_text("{}")
    with pytest.raises(ab.AbError, match="no corpus corpus-1000-pool-4-bbbb2222 .* with the branch tree's"):
        ab.check_corpus(tmp_path, 1000, 4, trees, own=True)
    (tmp_path / "corpus-1000-pool-4-bbbb2222").mkdir()
    (tmp_path / "corpus-1000-pool-4-bbbb2222" / "done.json").write_text("{}")
    assert ab.check_corpus(tmp_path, 1000, 4, trees, own=True) == [tmp_path / "corpus-1000-pool-4-aaaa1111",
                                                                  tmp_path / "corpus-1000-pool-4-bbbb2222"]


@pytest.mark.slow
def test_one_round_of_one_tree_against_itself(tmp_path: Path) -> None:
    """The whole tool on a corpus of a few groups: two real runs of the benchmark (one JVM at a time), their results
    kept and equal. A tree against itself: the numbers are not asserted, only that they are there."""
    pytest.importorskip("pyspark")
    from benchmarks import bench_spark

    work = tmp_path / "work"
    pool_dir = bench_spark.pool(work, 3)
    size = json.loads((pool_dir / "input.json").read_text())["events"]
    bench_spark.replicate(pool_dir, work, size)
    out = tmp_path / "ab.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks.ab", "--", "--base", str(ROOT), "--branch", str(ROOT),
                           "--work", str(work), "--size", str(size), "--pool-groups", "3", "--rounds", "1",
                           "--master", "local[1]", "--conf", "spark.driver.memory=2g", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert [(r["side"], r["round"]) for r in result["runs"]] == [("base", 1), ("branch", 1)]
    assert result["equal"] and len(result["pairs"]) == 1
    for r in result["runs"]:
        assert r["jvm_cpu_s"] > 0 and r["shuffles"] > 0 and r["findings"] >= 0
        assert (Path(r["dir"]) / "mine.json").is_file() and (Path(r["dir"]) / "violations.parquet").is_dir()
    assert "base-1 starts" in done.stderr and "branch-1 done" in done.stderr  # progress on stderr
