"""Two source trees' whole mining job, alternating, with the spread stated: ``python -m benchmarks.ab -- ...``.

A cut to the Spark job is claimed as a gain only when it shows beyond the run-to-run spread of the whole job on this
shared machine (lone 10M runs of the same plans differed by about 10%: docs/benchmarks-spark.md, issue 15). One run per
side cannot show that; this runs the job at one size from two trees in turn -- base, branch, base, branch, ... for
``--rounds`` rounds -- each run a subprocess ``python -m benchmarks spark -- ...`` with its working directory and
``PYTHONPATH`` set to its tree (each side runs its own code and its own benchmark), on the same corpus (``--work``;
with ``--each-own-corpus``, for a change of the corpus layout, each on its own layout's copy of the same pool),
with the same Spark settings (``--conf``). After each run its ``violations.parquet`` and ``mine.json`` are copied
aside (the benchmark overwrites them on the next run).

It reports per side the median, min and max of the JVM's CPU seconds (the measure the load on a shared machine does
not move much), of the task threads' CPU seconds and of the wall seconds, with the load at each run; the ratio of the
medians; and a verdict: "gain established" only when the ranges do not overlap (every branch run below every base
run), else "no gain established", with the overlap. And whether the results are equal: every pair of runs'
``violations.parquet`` compared with ``EXCEPT ALL`` both ways (DuckDB) and their ``mine.json`` without its timing
keys. A difference is reported with its first rows or keys and makes the exit code 1. Writes OUT.json and OUT.md.

Not a ``bench_*`` module: ``python -m benchmarks`` runs every one of those on one tree (``tox -e bench``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.bench_spark import _dir_name

SIDES = ("base", "branch")
# what each run's numbers are read as, from the benchmark's OUT.json entry ``spark MASTER whole``
METRICS = {"jvm_cpu_s": "JVM CPU s", "tasks_cpu_s": "task threads CPU s", "seconds": "wall s"}
# the metrics a verdict is given for: CPU seconds; the wall time says as much about the other processes
VERDICT_METRICS = ("jvm_cpu_s", "tasks_cpu_s")
# mine.json's keys that time the run (mine.run's report: spark.seconds); everything else must be equal
TIMING_KEYS = frozenset({"seconds"})
SHOWN_ROWS = 5  # the differing rows (or keys) listed for a difference


class AbError(Exception):
    """A setup the comparison cannot run with (not a checkout, no corpus, a failed run): said in words."""


@dataclass(frozen=True)
class Tree:
    side: str
    path: Path
    commit: str
    dirty: bool
    layout_tag: str


def _git(path: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def _env(tree: Path) -> dict[str, str]:
    # the tree's own packages first, and nothing inherited that could point at another tree
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tree)
    return env


def check_tree(side: str, path: Path, python: str) -> Tree:
    """``path`` as a groupspec checkout with the Spark benchmark, or an :class:`AbError` saying what is missing."""
    path = path.resolve()
    if not path.is_dir():
        raise AbError(f"--{side} {path}: no such directory")
    missing = [f for f in ("benchmarks/bench_spark.py", "benchmarks/__main__.py", "spark_analysis/mine.py")
               if not (path / f).is_file()]
    pyproject = path / "pyproject.toml"
    if missing or not pyproject.is_file() or 'name = "groupspec"' not in pyproject.read_text():
        raise AbError(f"--{side} {path}: not a groupspec checkout with the Spark benchmark "
                      f"(missing: {', '.join(missing) or 'pyproject.toml naming groupspec'})")
    # the corpus's layout as that tree's benchmark names it: two trees of different layouts read different corpora
    done = subprocess.run([python, "-c", "from benchmarks.bench_spark import _layout_tag; print(_layout_tag())"],
                          cwd=path, env=_env(path), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise AbError(f"--{side} {path}: its benchmark does not import: {last}")
    return Tree(side, path, _git(path, "rev-parse", "HEAD") or "unknown",
                bool(_git(path, "status", "--porcelain", "--untracked-files=no")), done.stdout.strip())


def check_corpus(work: Path, size: int, pool_groups: int, trees: list[Tree], own: bool = False) -> list[Path]:
    """The corpus each tree's benchmark will read, already in ``work`` (else each run would build one: an hour at
    50M, and not the same one if the layouts differ): one for both trees, or with ``own`` (``--each-own-corpus``) one
    per layout, for a change of the layout itself."""
    tags = list(dict.fromkeys(t.layout_tag for t in trees))
    if len(tags) > 1 and not own:
        raise AbError("the trees' corpus layouts differ (" + ", ".join(f"{t.side} {t.layout_tag}" for t in trees)
                      + "): each benchmark would build and read a corpus of its own layout; not comparable "
                      "(--each-own-corpus compares them anyway, each on its own corpus of the same pool)")
    corpora = []
    for tag in tags:
        name = f"corpus-{size}-pool-{pool_groups}-{tag}"
        if not (work / name / "done.json").is_file():
            side = next(t for t in trees if t.layout_tag == tag).side
            raise AbError(f"no corpus {name} in --work {work} (done.json missing): build it once with the {side} "
                          f"tree's benchmark, `python -m benchmarks spark -- --sizes {size} --pool-groups "
                          f"{pool_groups} --work {work} --masters 'local[2]' --no-whole --no-core --no-duckdb "
                          f"--no-checker`")
        corpora.append(work / name)
    return corpora


def _loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def _say(message: str) -> None:
    print(f"ab {time.strftime('%H:%M:%S', time.gmtime())}: {message}", file=sys.stderr, flush=True)


def bench_command(python: str, size: int, master: str, pool_groups: int, work: Path, conf: list[str],
                  out: Path) -> list[str]:
    return [python, "-m", "benchmarks", "spark", "--", "--sizes", str(size), "--masters", master,
            "--pool-groups", str(pool_groups), "--work", str(work), "--no-core", "--no-duckdb", "--no-checker",
            *itertools.chain.from_iterable(("--conf", c) for c in conf), "--out", str(out)]


def run_once(tree: Tree, rnd: int, args: argparse.Namespace, keep: Path) -> dict[str, Any]:
    """One whole-job run of ``tree``'s benchmark; its results copied to ``keep/SIDE-ROUND/``."""
    label = f"{tree.side}-{rnd}"
    where = keep / label
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    out_json = where / "bench.json"
    command = bench_command(args.python, args.size, args.master, args.pool_groups, args.work, args.conf, out_json)
    load_before = _loadavg()
    started = time.time()
    _say(f"{label} starts ({tree.path}, load {load_before[0]:.2f})")
    with open(where / "bench.log", "w") as log:
        # a session of its own: an interrupted comparison ends the run's process group (its JVM with it)
        child = subprocess.Popen(command, cwd=tree.path, env=_env(tree.path), stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        try:
            code = child.wait()
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGTERM)
                child.wait()
    load_after = _loadavg()
    if code != 0:
        tail = (where / "bench.log").read_text().splitlines()[-15:]
        raise AbError(f"{label}: the benchmark exited with {code}; the end of {where / 'bench.log'}:\n"
                      + "\n".join(tail))
    report = json.loads(out_json.read_text())
    entry = report["runs"][0][f"spark {args.master} whole"]
    produced = args.work / f"out-{args.size}-{_dir_name(args.master)}"
    shutil.copytree(produced / "violations.parquet", where / "violations.parquet")
    if (produced / "mine.json").is_file():
        shutil.copy2(produced / "mine.json", where / "mine.json")
    threads = entry.get("jvm_cpu_by_thread_s", {})
    run = {"side": tree.side, "round": rnd, "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)),
           "jvm_cpu_s": entry["jvm_cpu_s"], "tasks_cpu_s": threads.get("tasks"), "seconds": entry["seconds"],
           "by_thread_s": threads, "driver_jvm_peak_mb": entry.get("driver_jvm_peak_mb"),
           "findings": entry.get("findings"), "shuffles": entry.get("shuffles"),
           "loadavg_before": load_before, "loadavg_after": load_after, "dir": str(where)}
    _say(f"{label} done: JVM CPU {run['jvm_cpu_s']} s, tasks {run['tasks_cpu_s']} s, wall {run['seconds']} s, "
         f"load {load_after[0]:.2f}")
    return run


def spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 2), "min": min(values), "max": max(values), "n": len(values)}


def verdict(base: list[float], branch: list[float], what: str = "JVM CPU s") -> str:
    """In words: a gain only when every branch run is below every base run.

    And how often equal code would pass: if both sides ran the same code, every order of the runs would be as likely,
    and the branch's would all come lowest in 1 of C(n_base + n_branch, n_branch) orders (1 in 20 with 3 rounds, 1 in
    70 with 4)."""
    rounds = f"{len(base)} base and {len(branch)} branch runs"
    if max(branch) < min(base):
        chance = math.comb(len(base) + len(branch), len(branch))
        return (f"gain established ({what}): every branch run below every base run "
                f"(branch max {max(branch)} < base min {min(base)}; {rounds}: equal code would order them so "
                f"1 time in {chance})")
    if min(branch) > max(base):
        return (f"no gain established ({what}): the branch costs more, every branch run above every base run "
                f"(branch min {min(branch)} > base max {max(base)}; {rounds})")
    low, high = max(min(base), min(branch)), min(max(base), max(branch))
    return (f"no gain established ({what}): the ranges overlap over {low}-{high} "
            f"(base {min(base)}-{max(base)}, branch {min(branch)}-{max(branch)}; {rounds})")


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per side and metric the spread, the ratio of the medians (branch / base) and the verdicts."""
    out: dict[str, Any] = {"sides": {}, "ratio_of_medians": {}, "verdicts": {}}
    for side in SIDES:
        mine = [r for r in runs if r["side"] == side]
        out["sides"][side] = {m: spread([r[m] for r in mine if r[m] is not None]) for m in METRICS
                              if any(r[m] is not None for r in mine)}
        out["sides"][side]["loadavg_1min"] = [r["loadavg_before"][0] for r in mine]
    for m in METRICS:
        if m in out["sides"]["base"] and m in out["sides"]["branch"]:
            base, branch = out["sides"]["base"][m]["median"], out["sides"]["branch"][m]["median"]
            out["ratio_of_medians"][m] = round(branch / base, 4) if base else None
    for m in VERDICT_METRICS:
        base_v = [r[m] for r in runs if r["side"] == "base" and r[m] is not None]
        branch_v = [r[m] for r in runs if r["side"] == "branch" and r[m] is not None]
        if base_v and branch_v:
            out["verdicts"][m] = verdict(base_v, branch_v, METRICS[m])
    return out


def without_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


def json_differences(a: Any, b: Any, path: str = "", limit: int = SHOWN_ROWS) -> list[str]:
    """The first ``limit`` places where two JSON values differ, as ``path: a != b``."""
    found: list[str] = []

    def walk(x: Any, y: Any, at: str) -> None:
        if len(found) >= limit:
            return
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y), key=str):
                if k not in x or k not in y:
                    found.append(f"{at}.{k}: only in {'the first' if k in x else 'the second'}")
                else:
                    walk(x[k], y[k], f"{at}.{k}")
                if len(found) >= limit:
                    return
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                found.append(f"{at}: {len(x)} items != {len(y)}")
            for i, (u, v) in enumerate(zip(x, y, strict=False)):
                walk(u, v, f"{at}[{i}]")
                if len(found) >= limit:
                    return
        elif x != y:
            found.append(f"{at}: {json.dumps(x, default=str)[:200]} != {json.dumps(y, default=str)[:200]}")

    walk(a, b, path or "$")
    return found[:limit]


def without_paths(value: dict[str, Any], paths: tuple[str, ...]) -> dict[str, Any]:
    """``value`` without the keys at the dotted ``paths`` (``spark.shuffles``), where they are."""
    out = json.loads(json.dumps(value, default=str))
    for path in paths:
        *parents, last = path.split(".")
        at: Any = out
        for key in parents:
            at = at.get(key) if isinstance(at, dict) else None
        if isinstance(at, dict):
            at.pop(last, None)
    return out


def compare_mine_json(a: Path, b: Path, expected: tuple[str, ...] = ()) -> list[str]:
    """``[]`` when the two reports are equal without their timing keys and the ``expected`` changes (dotted paths,
    ``--expect-change``); else the first differences."""
    if not a.is_file() or not b.is_file():
        return [f"no mine.json in {a.parent if not a.is_file() else b.parent} (that tree's benchmark does not "
                "write it): not compared"]
    x, y = (without_paths(without_timing(json.loads(p.read_text())), expected) for p in (a, b))
    return json_differences(x, y)


def compare_violations(a: Path, b: Path) -> dict[str, Any]:
    """Two ``violations.parquet`` compared by DuckDB: the schema, then ``EXCEPT ALL`` both ways (every row with its
    multiplicity). ``{"equal": bool, "a_not_b": n, "b_not_a": n, "rows": {...}}``, the first differing rows each way."""
    import duckdb

    def scan(p: Path) -> str:
        source = str(p / "*.parquet") if p.is_dir() else str(p)
        return "read_parquet('" + source.replace("'", "''") + "')"

    con = duckdb.connect()
    try:
        schema = [con.execute(f"DESCRIBE SELECT * FROM {scan(p)}").fetchall() for p in (a, b)]
        if [(c[0], c[1]) for c in schema[0]] != [(c[0], c[1]) for c in schema[1]]:
            return {"equal": False, "schema": [[f"{c[0]} {c[1]}" for c in s] for s in schema]}
        result: dict[str, Any] = {"rows": {}}
        for key, (x, y) in (("a_not_b", (a, b)), ("b_not_a", (b, a))):
            query = f"SELECT * FROM {scan(x)} EXCEPT ALL SELECT * FROM {scan(y)}"
            result[key] = con.execute(f"SELECT count(*) FROM ({query})").fetchone()[0]  # type: ignore[index]
            if result[key]:
                columns = [c[0] for c in schema[0]]
                result["rows"][key] = [dict(zip(columns, map(str, row), strict=True))
                                       for row in con.execute(f"{query} LIMIT {SHOWN_ROWS}").fetchall()]
        result["rows_a"] = con.execute(f"SELECT count(*) FROM {scan(a)}").fetchone()[0]  # type: ignore[index]
        result["equal"] = result["a_not_b"] == 0 and result["b_not_a"] == 0
        return result
    finally:
        con.close()


def compare_results(runs: list[dict[str, Any]], expected: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every pair of runs: their violations and their reports (but for the ``expected`` changes of mine.json)."""
    pairs = []
    for x, y in itertools.combinations(runs, 2):
        a, b = Path(x["dir"]), Path(y["dir"])
        v = compare_violations(a / "violations.parquet", b / "violations.parquet")
        m = compare_mine_json(a / "mine.json", b / "mine.json", expected)
        pairs.append({"a": f"{x['side']}-{x['round']}", "b": f"{y['side']}-{y['round']}", "violations": v,
                      "mine_json": m, "equal": v["equal"] and not m})
    return pairs


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def render_md(result: dict[str, Any]) -> str:
    s, trees = result["summary"], result["trees"]
    lines = [f"# A/B: the whole job at {result['size']:,} events, {result['master']}, {result['rounds']} rounds", ""]
    for t in trees:
        lines.append(f"- {t['side']}: `{t['path']}` at `{t['commit'][:12]}`" + (" (uncommitted changes)"
                                                                                   if t["dirty"] else ""))
    lines += [f"- corpus: `{result['corpus']}`; settings: {', '.join(result['conf']) or 'the benchmark defaults'}",
              f"- command per run (cwd and PYTHONPATH the side's tree): `{' '.join(result['command'])}`", ""]
    lines += [_row(["run", "started (UTC)", "JVM CPU s", "task threads s", "JIT s", "GC s", "wall s",
                    "load 1/5/15 before", "load 1 after", "driver peak MB", "findings", "shuffles"]),
              _row(["---"] * 12)]
    for r in result["runs"]:
        t = r["by_thread_s"]
        lines.append(_row([f"{r['side']} {r['round']}", r["started_utc"], r["jvm_cpu_s"], r["tasks_cpu_s"],
                           t.get("jit"), t.get("gc"), r["seconds"], "/".join(f"{x:.2f}" for x in r["loadavg_before"]),
                           f"{r['loadavg_after'][0]:.2f}", r["driver_jvm_peak_mb"], r["findings"], r["shuffles"]]))
    lines += ["", _row(["per side", *(f"{label}: median (min-max)" for label in METRICS.values())]),
              _row(["---"] * (1 + len(METRICS)))]
    for side in SIDES:
        cells = []
        for m in METRICS:
            v = s["sides"][side].get(m)
            cells.append(f"{v['median']} ({v['min']}-{v['max']})" if v else "--")
        lines.append(_row([side, *cells]))
    lines.append(_row(["branch / base (medians)", *(s["ratio_of_medians"].get(m, "--") for m in METRICS)]))
    lines += ["", "**Verdict.**", ""] + [f"- {v}" for v in s["verdicts"].values()]
    eq = result["equal"]
    expected = "".join(f", without `{k}`" for k in result.get("expect_change", []))
    lines += ["", f"**Results {'equal' if eq else 'DIFFER'}** ({len(result['pairs'])} pairs of runs: "
              f"violations.parquet `EXCEPT ALL` both ways, mine.json without its timing keys{expected})."]
    for p in result["pairs"]:
        if p["equal"]:
            continue
        v, a, b = p["violations"], p["a"], p["b"]
        if "schema" in v:
            lines.append(f"- {a} vs {b}: violations.parquet of other schemas: {v['schema'][0]} against {v['schema'][1]}")
        elif not v["equal"]:
            lines.append(f"- {a} vs {b}: violations.parquet: {v['a_not_b']} rows only in {a}, {v['b_not_a']} only in {b}")
            for key, only in (("a_not_b", a), ("b_not_a", b)):
                lines += [f"  - only in {only}: {json.dumps(row)}" for row in v["rows"].get(key, [])]
        if p["mine_json"]:
            lines.append(f"- {a} vs {b}: mine.json: " + "; ".join(p["mine_json"]))
    return "\n".join(lines) + "\n"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the base tree (a groupspec checkout)")
    parser.add_argument("--branch", type=Path, required=True, help="the branch tree (may be the same commit)")
    parser.add_argument("--work", type=Path, required=True,
                        help="the benchmark's --work, holding the corpus (corpus-SIZE-pool-GROUPS-TAG)")
    parser.add_argument("--size", type=int, default=1_000_000, help="the corpus size in events (its --sizes)")
    parser.add_argument("--pool-groups", type=int, default=200)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of base then branch")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting passed to every run (repeatable), e.g. spark.driver.memory=3g")
    parser.add_argument("--out", type=Path, required=True, help="OUT.json; OUT.md beside it; runs in OUT-runs/")
    parser.add_argument("--each-own-corpus", action="store_true",
                        help="trees of different corpus layouts, each reading the corpus of its own layout, both "
                             "copied from a pool of the same seed (for a change of the layout: the same events "
                             "when the trees' simulators agree, which the results' comparison shows)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter each run uses")
    parser.add_argument("--expect-change", action="append", default=[], metavar="KEY",
                        help="a mine.json key the branch is meant to change, as a dotted path (repeatable), e.g. "
                             "spark.shuffles: left out of the comparison, and the report says so")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if any("=" not in c for c in args.conf):
        parser.error("--conf takes KEY=VALUE")
    args.work = args.work.resolve()
    return args


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--"]:  # `python -m benchmarks.ab -- ...`, as `python -m benchmarks NAME -- ...`
        argv = argv[1:]
    args = parse(argv)
    try:
        trees = [check_tree("base", args.base, args.python), check_tree("branch", args.branch, args.python)]
        corpora = check_corpus(args.work, args.size, args.pool_groups, trees, args.each_own_corpus)
    except AbError as e:
        print(f"ab: {e}", file=sys.stderr)
        return 2
    keep = args.out.with_name(args.out.stem + "-runs")
    keep.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "size": args.size, "master": args.master, "rounds": args.rounds, "conf": args.conf, "corpus": ", ".join(map(str, corpora)),
        "expect_change": args.expect_change,
        "command": bench_command("python", args.size, args.master, args.pool_groups, args.work, args.conf,
                                 Path("OUT.json")),
        "trees": [{"side": t.side, "path": str(t.path), "commit": t.commit, "dirty": t.dirty} for t in trees],
        "runs": []}
    failed = None
    try:
        for rnd in range(1, args.rounds + 1):
            for tree in trees:
                result["runs"].append(run_once(tree, rnd, args, keep))
    except AbError as e:
        failed = str(e)
        print(f"ab: {e}", file=sys.stderr)
    except KeyboardInterrupt:
        failed = "interrupted"
        print("ab: interrupted; reporting the runs that finished", file=sys.stderr)
    if failed is not None:
        result["failed"] = failed
    runs = result["runs"]
    if not any(r["side"] == "base" for r in runs) or not any(r["side"] == "branch" for r in runs):
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        return 2
    _say("comparing the results of every pair of runs")
    result["summary"] = summarize(runs)
    result["pairs"] = compare_results(runs, tuple(args.expect_change))
    result["equal"] = all(p["equal"] for p in result["pairs"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    md = render_md(result)
    args.out.with_suffix(".md").write_text(md)
    print(md)
    print(f"written: {args.out}, {args.out.with_suffix('.md')}", file=sys.stderr)
    return 1 if not result["equal"] else (2 if failed else 0)


if __name__ == "__main__":
    raise SystemExit(main())
