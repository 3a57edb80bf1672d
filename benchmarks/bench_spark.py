"""Mining on Spark, side by side with DuckDB and the streaming checker: ``python -m benchmarks spark``.

**The corpus.** A pool of ``--pool-groups`` groups simulated by the model (``groupspec corpus
--groups``: random members, assignors, faults, records; 30% with a mutant) is written once; a
corpus of N events is that pool's Parquet rows copied ``ceil(N / pool events)`` times, each copy's
groups renamed (``g0000012/c17``). Simulating 50M events with the model would take about an hour
of both cores (about 26,000 events/s/core without the monitor), so the large corpora are copies:
the same event mix, group for group, and the same amount of work per group for every engine (no
engine deduplicates copies). Kept in ``--work`` between runs.

**Contenders**, each on the same Parquet files, one after the other:

- **Spark, whole job** -- ``spark_analysis.mine.run``: every covered invariant, the well-formedness
  pass, the analytics, violations.parquet; for each ``--masters`` entry (default ``local[1]`` and
  ``local[2]``, the scaling curve). End-to-end wall time, from a fresh SparkSession's first read
  to the last result; the CPU seconds of the JVM (driver and local executor threads: what the job cost,
  whatever else the shared machine ran) and the 1-minute load average before and after; the driver
  JVM's peak RSS (``VmHWM``).
- **Spark, core** -- only ``single-owner`` / ``zombie-overlap`` (the overlap self-join with the zombie
  classification) and ``consume-owned-only`` / ``commit-owned-only`` (unowned entries), written
  to Parquet.
- **DuckDB, core** -- the same core logic in DuckDB SQL over the same Parquet (ownership windows,
  interval self-join, unowned entries): the peer for "within 2x of DuckDB".
- **the streaming checker** -- ``traces.report.check_events`` over each pool group's events
  (one process, everything it checks), events per CPU second; the pool only, since its rate
  does not depend on how many groups follow.

Run: ``python -m benchmarks spark -- --sizes 1000000`` (minutes), or the issue's sizes with
``--sizes 10000000,50000000`` (hours on the shared 2-core machine: see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _layout_tag() -> str:
    """A short hash of the corpus schema: a pool or corpus kept in ``--work`` from an older layout (a column
    fewer) is not reused, it is rebuilt under a new name."""
    import hashlib

    from spark_analysis.layout import SCHEMA

    return hashlib.sha1(str(SCHEMA).encode()).hexdigest()[:8]


def pool(work: Path, groups: int) -> Path:
    from spark_analysis import corpus

    out = work / f"pool-{groups}-{_layout_tag()}"
    if not (out / "truth.json").exists():
        spec = corpus.CorpusSpec(groups=groups, seed=11, mutant_fraction=0.3,
                                 mutants=tuple(sorted(__import__("model.mutants", fromlist=["MUTANTS"]).MUTANTS)))
        corpus.simulate_groups(spec, out)
    return out


def replicate(pool_dir: Path, work: Path, events: int) -> tuple[Path, int, int]:
    """A corpus of at least ``events`` events: copies of the pool, groups renamed. (dir, events, copies)"""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from spark_analysis.layout import SCHEMA, write_part

    info = json.loads((pool_dir / "input.json").read_text())
    copies = max(1, math.ceil(events / info["events"]))
    out = work / f"corpus-{events}-{pool_dir.name}"
    done = out / "done.json"
    if done.exists():
        d = json.loads(done.read_text())
        return out, d["events"], d["copies"]
    table = pq.read_table(pool_dir / "events")
    groups = table.column("group").cast(pa.string())
    for k in range(copies):
        renamed = pc.binary_join_element_wise(groups, pa.scalar(f"c{k}"), "/")
        copy = table.set_column(0, "group", renamed.dictionary_encode().cast(SCHEMA.field("group").type))
        write_part(copy, out, k)
    (out / "input.json").write_text(json.dumps({"events": info["events"] * copies, "copies": copies}))
    done.write_text(json.dumps({"events": info["events"] * copies, "copies": copies}))
    return out, info["events"] * copies, copies


def _jvm_pid(spark: Any) -> int:
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


def _jvm_peak_mb(spark: Any) -> float | None:
    try:
        for line in Path(f"/proc/{_jvm_pid(spark)}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def _jvm_cpu_s(spark: Any) -> float:
    """CPU seconds the driver JVM (driver and, in local mode, the executor threads) has used so far.

    On a shared machine the wall time says as much about the other processes as about Spark; the CPU
    time is what the job itself cost."""
    fields = Path(f"/proc/{_jvm_pid(spark)}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _thread_kind(comm: str) -> str:
    return ("tasks" if comm.startswith("Executor task") else "jit" if "Compiler" in comm
            else "gc" if comm.startswith(("G1 ", "GC ")) else "driver_other")


class ThreadCpu:
    """The driver JVM's CPU seconds by kind of thread (``/proc/PID/task/*``): Spark's task threads (the data
    work), the JIT compilers, the garbage collector, and the rest (the driver: analysis, planning and code
    generation on the py4j threads, the scheduler).

    Task threads are pooled and end after a minute idle, taking their count with them; a one-off reading at
    the end estimated them as the process's total less the live threads', which mixed them with everything
    else that had ended (and misled most under local[1]). This samples every thread each second while the
    job runs and keeps each thread's last reading under its own kind: ``ended_unseen`` is only what threads
    used after their last sample (at most a second each)."""

    def __init__(self, pid: int, every_s: float = 1.0) -> None:
        import threading

        self.pid = pid
        self.every_s = every_s
        self.last: dict[str, tuple[str, float]] = {}  # tid -> (kind, cpu s)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            try:
                comm = (task / "comm").read_text().strip()
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # the thread ended meanwhile
            self.last[task.name] = (_thread_kind(comm), (int(fields[11]) + int(fields[12])) / tick)

    def _loop(self) -> None:
        while not self.stop.wait(self.every_s):
            self._sample()

    def result(self) -> dict[str, float]:
        self.stop.set()
        self.thread.join()
        self._sample()
        kinds = {"tasks": 0.0, "jit": 0.0, "gc": 0.0, "driver_other": 0.0}
        for kind, cpu in self.last.values():
            kinds[kind] += cpu
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        kinds["ended_unseen"] = max(0.0, total - sum(kinds.values()))
        return {k: round(v, 1) for k, v in kinds.items()}


def _dir_name(master: str) -> str:
    """``local[2]`` -> ``local-2``: Spark reads brackets in a path as a glob."""
    return master.replace("[", "-").replace("]", "").replace("*", "all").replace("/", "").replace(":", "")


def spark_run(corpus: Path, master: str, out: Path, core_only: bool,
              conf: dict[str, str] | None = None) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from spark_analysis import invariants as inv
    from spark_analysis import mine, session
    from spark_analysis.ownership import intervals, member_rows

    started = time.monotonic()
    load_before = os.getloadavg()[0]
    spark = session.build(master, app="bench spark", extra={"spark.driver.memory": "6g", **(conf or {})})
    cpu_start = _jvm_cpu_s(spark)
    threads = ThreadCpu(_jvm_pid(spark))
    try:
        if core_only:
            cached: list[Any] = []

            def keep(df: Any) -> Any:
                cached.append(df.persist())
                return cached[-1]

            events = mine.load(spark, corpus).repartition("group")
            rows = keep(member_rows(events, None))
            iv = keep(intervals(rows))
            found = inv.overlaps(iv, rows, inv.removals(events), 0, keep).unionByName(inv.unowned(rows))
            found.write.mode("overwrite").parquet(str(out / "core.parquet"))
            n = spark.read.parquet(str(out / "core.parquet")).agg(F.count(F.lit(1))).collect()[0][0]
            for df in cached:
                df.unpersist()
            result = {"findings": n}
        else:
            report = mine.run(spark, corpus, out)
            result = {"findings": len(report["violations"]) + len(report["warnings"]),
                      "shuffles": report["spark"]["shuffles"]}
        result["seconds"] = round(time.monotonic() - started, 2)
        result["jvm_cpu_s"] = round(_jvm_cpu_s(spark) - cpu_start, 1)
        # where that CPU went (since the JVM started; the session's start-up is a second or two of it)
        result["jvm_cpu_by_thread_s"] = threads.result()
        result["driver_jvm_peak_mb"] = _jvm_peak_mb(spark)
        result["spark_version"] = spark.version
        result["load_1min"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
    finally:
        spark.stop()
    return result


DUCKDB_CORE = """
WITH ev AS (SELECT * FROM read_parquet('{events}/*.parquet')),
m0 AS (
  SELECT *, sum(CASE WHEN name IN ('startup_complete', 'shutdown_complete') THEN 1 ELSE 0 END)
           OVER (PARTITION BY "group", member ORDER BY seq, part ROWS UNBOUNDED PRECEDING) AS life,
         sum(CASE WHEN name = 'startup_complete' THEN 1 ELSE 0 END)
           OVER (PARTITION BY "group", member ORDER BY seq, part ROWS UNBOUNDED PRECEDING) AS inc
  FROM ev WHERE member IS NOT NULL
    AND NOT (name IN ('partitions_assigned', 'partitions_revoked', 'partitions_lost') AND NOT jsonl AND callback)),
m AS (
  SELECT *, coalesce(last_value(CASE WHEN name IN ('partitions_assigned', 'partitions_revoked', 'partitions_lost')
                                     THEN name END IGNORE NULLS)
           OVER (PARTITION BY "group", member, life, topic, "partition" ORDER BY seq, part
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) = 'partitions_assigned', false) AS owned_before,
         last_value(generation IGNORE NULLS) OVER (PARTITION BY "group", member, inc ORDER BY seq, part
                 ROWS UNBOUNDED PRECEDING) AS gen_ff
  FROM m0),
r AS (
  SELECT *, first_value(CASE WHEN name IN ('partitions_revoked', 'partitions_lost') AND owned_before
                             THEN struct_pack(seq := seq, ts := timestamp, kind := name, gen := gen_ff) END IGNORE NULLS)
           OVER (PARTITION BY "group", member, life, topic, "partition" ORDER BY seq, part
                 ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS rel,
         first_value(CASE WHEN name IN ('startup_complete', 'shutdown_complete')
                          THEN struct_pack(seq := seq, ts := timestamp, kind := name, gen := gen_ff) END IGNORE NULLS)
           OVER (PARTITION BY "group", member ORDER BY seq, part
                 ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS lif,
         max(timestamp) OVER (PARTITION BY "group", member) AS last_ts
  FROM m),
iv AS (
  SELECT "group", member, topic, "partition", seq AS s, timestamp AS ts, CASE WHEN gen_ff >= 0 THEN gen_ff END AS g,
         CASE WHEN rel IS NOT NULL AND (lif IS NULL OR rel.seq < lif.seq) THEN rel.seq
              WHEN lif IS NOT NULL THEN lif.seq ELSE 4611686018427387904 END AS e,
         CASE WHEN rel IS NOT NULL AND (lif IS NULL OR rel.seq < lif.seq) THEN rel.kind
              WHEN lif IS NOT NULL THEN lif.kind ELSE 'eof' END AS kind,
         CASE WHEN rel IS NOT NULL AND (lif IS NULL OR rel.seq < lif.seq) THEN rel.gen
              WHEN lif IS NOT NULL THEN lif.gen END AS end_gen
  FROM r WHERE name = 'partitions_assigned' AND topic IS NOT NULL AND NOT owned_before),
ov AS (
  SELECT n."group", n.topic, n."partition", o.member AS old, n.member AS new, n.ts,
         o.kind = 'partitions_lost' OR (n.g IS NOT NULL AND o.end_gen IS NOT NULL AND o.end_gen < n.g)
           OR (NOT (n.g IS NOT NULL AND o.end_gen IS NOT NULL) AND o.kind IN ('startup_complete', 'eof')) AS zombie
  FROM iv n JOIN iv o ON n."group" = o."group" AND n.topic = o.topic AND n."partition" = o."partition"
   AND n.member <> o.member AND o.s < n.s AND n.s < o.e),
un AS (
  SELECT "group", member, topic, "partition", count(*) AS n FROM m
  WHERE name IN ('records_consumed', 'offsets_committed') AND topic IS NOT NULL AND NOT owned_before
  GROUP BY ALL)
SELECT (SELECT count(*) FROM ov) + (SELECT count(*) FROM un)
"""


def duckdb_run(corpus: Path, threads: int, memory_limit: str = "8GB") -> dict[str, Any]:
    import duckdb

    started = time.monotonic()
    cpu_start = time.process_time()
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute(f"SET memory_limit = '{memory_limit}'")
    con.execute("SET temp_directory = '{}'".format(corpus.parent / "duckdb-spill"))
    n = con.execute(DUCKDB_CORE.format(events=corpus / "events")).fetchone()
    con.close()
    return {"findings": n[0] if n else None, "seconds": round(time.monotonic() - started, 2),
            "cpu_s": round(time.process_time() - cpu_start, 1), "load_1min": round(os.getloadavg()[0], 1),
            "process_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def checker_run(pool_dir: Path, groups: int) -> dict[str, Any]:
    from spark_analysis import corpus
    from traces.report import check_events

    truth = json.loads((pool_dir / "truth.json").read_text())
    spec = corpus.CorpusSpec(groups=groups, seed=truth["seed"], mutant_fraction=truth["mutant_fraction"],
                             mutants=tuple(truth["mutants"]))
    cpu = 0.0
    events = 0
    for index in range(groups):
        trace, _ = corpus.simulate_group(spec, index)
        t0 = time.process_time()
        check_events(trace, label=f"{corpus.group_name(index)}.jsonl")
        cpu += time.process_time() - t0
        events += len(trace)
    return {"events": events, "cpu_s": round(cpu, 2), "events_per_cpu_s": round(events / cpu) if cpu else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks spark", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000000,50000000", help="corpus sizes in events, comma-separated")
    parser.add_argument("--pool-groups", type=int, default=400)
    parser.add_argument("--masters", default="local[1],local[2]")
    parser.add_argument("--work", type=Path, default=Path("/tmp/groupspec-bench-spark"))
    parser.add_argument("--no-duckdb", action="store_true")
    parser.add_argument("--no-core", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench" / "spark.json")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting over the session's own (repeatable): to measure a tuning")
    parser.add_argument("--duckdb-memory", default="8GB",
                        help="DuckDB's memory_limit: past it DuckDB spills to disk instead of taking the machine")
    args = parser.parse_args(argv)
    conf = dict(c.split("=", 1) for c in args.conf)
    args.work.mkdir(parents=True, exist_ok=True)
    pool_dir = pool(args.work, args.pool_groups)
    results: dict[str, Any] = {"machine": platform.platform(), "pool_groups": args.pool_groups, "conf": conf,
                               "duckdb_memory_limit": args.duckdb_memory, "runs": []}
    results["checker"] = checker_run(pool_dir, args.pool_groups)
    print(f"checker (one process): {results['checker']}", flush=True)
    for size in (int(s) for s in args.sizes.split(",")):
        corpus_dir, events, copies = replicate(pool_dir, args.work, size)
        run: dict[str, Any] = {"target": size, "events": events, "copies": copies}
        for master in args.masters.split(","):
            r = spark_run(corpus_dir, master, args.work / f"out-{size}-{_dir_name(master)}", core_only=False, conf=conf)
            r["events_per_s"] = round(events / r["seconds"])
            r["events_per_jvm_cpu_s"] = round(events / r["jvm_cpu_s"]) if r["jvm_cpu_s"] else None
            run[f"spark {master} whole"] = r
            print(f"{events:,} events, spark {master} whole job: {r}", flush=True)
        if not args.no_core:
            master = args.masters.split(",")[-1]
            r = spark_run(corpus_dir, master, args.work / f"out-{size}-{_dir_name(master)}-core", core_only=True, conf=conf)
            r["events_per_s"] = round(events / r["seconds"])
            r["events_per_jvm_cpu_s"] = round(events / r["jvm_cpu_s"]) if r["jvm_cpu_s"] else None
            run[f"spark {master} core"] = r
            print(f"{events:,} events, spark {master} core: {r}", flush=True)
        if not args.no_duckdb:
            r = duckdb_run(corpus_dir, threads=2, memory_limit=args.duckdb_memory)
            r["events_per_s"] = round(events / r["seconds"])
            r["events_per_cpu_s"] = round(events / r["cpu_s"]) if r["cpu_s"] else None
            run["duckdb core"] = r
            print(f"{events:,} events, duckdb core (2 threads): {r}", flush=True)
        results["runs"].append(run)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
