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
- **Spark, core** -- the job's own rules for ``single-owner`` / ``zombie-overlap`` /
  ``revoke-before-assign`` (the overlap self-join, judged with the coordinator's removals and the old
  owner's activity) and ``consume-owned-only`` / ``commit-owned-only`` (unowned entries), on the
  member state of ``ownership.member_rows``, written to Parquet (``spark_core``; ``--no-whole`` runs
  only the core, on every ``--masters`` entry).
- **DuckDB, core** -- the same logic in DuckDB SQL over the same Parquet (``DUCKDB_CORE``): the
  member state, the intervals, the judged overlaps and the unowned runs, counted by the same kinds
  (tests/spark_analysis/test_core_peer.py holds the counts equal): the peer for "within 2x of DuckDB".
- **the streaming checker** -- ``traces.report.check_events`` over each pool group's events
  (one process, everything it checks), events per CPU second; the pool only, since its rate
  does not depend on how many groups follow.

Run: ``python -m benchmarks spark -- --sizes 1000000`` (minutes), or the issue's sizes with
``--sizes 10000000,50000000`` (hours on the shared 2-core machine: see docs/benchmarks-spark.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import resource
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _layout_tag() -> str:
    """A short hash of the corpus schema and layout number: a pool or corpus kept in ``--work`` from an older
    layout (a column fewer, or rows that hold something else: ``layout.LAYOUT``) is not reused, it is rebuilt under
    a new name (mine would refuse it)."""
    import hashlib

    from spark_analysis.layout import LAYOUT, SCHEMA

    return hashlib.sha1(f"{SCHEMA}\nlayout {LAYOUT}".encode()).hexdigest()[:8]


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
    # a moved member's rows name the group it left (moved_from): renamed with the groups, or a copy's moved
    # member would point into the pool's group of that name (converges, eager-revoke-all read it)
    renamed_columns = [c for c in ("group", "moved_from") if c in table.column_names]
    for k in range(copies):
        copy = table
        for column in renamed_columns:
            names = table.column(column).cast(pa.string())
            renamed = pc.binary_join_element_wise(names, pa.scalar(f"c{k}"), "/")  # null stays null
            copy = copy.set_column(table.column_names.index(column), column,
                                   renamed.dictionary_encode().cast(SCHEMA.field(column).type))
        write_part(copy, out, k)
    # the pool's layout: the copies' rows are its rows, groups renamed (mine refuses a corpus that says none)
    (out / "input.json").write_text(json.dumps({"events": info["events"] * copies, "copies": copies,
                                                "layout": info.get("layout")}))
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
    used after their last sample (at most a second each).

    One benchmark process keeps one JVM for all its SparkSessions (PySpark's gateway outlives
    ``spark.stop()``): each reading is taken from the threads' and the process's CPU when this run began."""

    def __init__(self, pid: int, every_s: float = 1.0) -> None:
        import threading

        self.pid = pid
        self.every_s = every_s
        self.last: dict[str, tuple[str, float]] = {}  # tid -> (kind, cpu s)
        self._sample()
        self.first = {tid: cpu for tid, (_, cpu) in self.last.items()}
        self.total_first = self._total()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _total(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

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
        for tid, (kind, cpu) in self.last.items():
            kinds[kind] += cpu - self.first.get(tid, 0.0)
        total = self._total() - self.total_first
        kinds["ended_unseen"] = max(0.0, total - sum(kinds.values()))
        return {k: round(v, 1) for k, v in kinds.items()}


def _dir_name(master: str) -> str:
    """``local[2]`` -> ``local-2``: Spark reads brackets in a path as a glob."""
    return master.replace("[", "-").replace("]", "").replace("*", "all").replace("/", "").replace(":", "")


def spark_core(spark: Any, corpus: Path, out: Path) -> dict[str, int]:
    """The core logic in Spark -- the job's own rules, as ``mine.plan`` runs them -- written to Parquet; its
    findings counted by :data:`CORE_KINDS`."""
    from pyspark.sql import functions as F

    from spark_analysis import invariants as inv
    from spark_analysis import mine
    from spark_analysis.ownership import intervals, member_rows

    cached: list[Any] = []

    def keep(df: Any) -> Any:
        cached.append(df.persist())
        return cached[-1]

    events = mine.load(spark, corpus).repartition("group")
    rows = keep(member_rows(events, None))
    iv = keep(intervals(rows))
    found = inv.overlaps(iv, rows, inv.removals(events), CORE_SKEW_MS, keep).unionByName(inv.unowned(rows))
    found.write.mode("overwrite").parquet(str(out / "core.parquet"))
    counts = {r["invariant"]: r["n"] for r in spark.read.parquet(str(out / "core.parquet"))
              .groupBy("invariant").agg(F.count(F.lit(1)).alias("n")).collect()}
    for df in reversed(cached):  # newest first, as mine.Plan.release says why
        df.unpersist()
    by_kind = {"overlaps": counts.pop("single-owner", 0) + counts.pop("zombie-overlap", 0),
               "rba": counts.pop("revoke-before-assign", 0),
               "consumed": counts.pop("consume-owned-only", 0),
               "committed": counts.pop("commit-owned-only", 0)}
    if counts:
        raise AssertionError(f"the core wrote other invariants: {counts}")
    return by_kind


def spark_run(corpus: Path, master: str, out: Path, core_only: bool,
              conf: dict[str, str] | None = None) -> dict[str, Any]:
    from spark_analysis import mine, session

    started = time.monotonic()
    load_before = os.getloadavg()[0]
    spark = session.build(master, app="bench spark", extra={"spark.driver.memory": "6g", **(conf or {})})
    cpu_start = _jvm_cpu_s(spark)
    threads = ThreadCpu(_jvm_pid(spark))
    try:
        if core_only:
            by_kind = spark_core(spark, corpus, out)
            result = {"findings": sum(by_kind.values()), "by_kind": by_kind}
        else:
            report = mine.run(spark, corpus, out)
            # beside violations.parquet, as ``groupspec mine`` writes it: two runs' reports compare whole
            (out / "mine.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
            result = {"findings": len(report["violations"]) + len(report["warnings"]),
                      "shuffles": report["spark"]["shuffles"]}
        result["seconds"] = round(time.monotonic() - started, 2)
        result["jvm_cpu_s"] = round(_jvm_cpu_s(spark) - cpu_start, 1)
        # where that CPU went (since this session started)
        result["jvm_cpu_by_thread_s"] = threads.result()
        result["driver_jvm_peak_mb"] = _jvm_peak_mb(spark)
        result["spark_version"] = spark.version
        result["load_1min"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
    finally:
        spark.stop()
    return result


CORE_SKEW_MS = 0  # the clock skew tolerated between files, in both engines' core (mine's default is 0 too)
# the core's findings by kind, in DUCKDB_CORE's column order: single-owner and zombie-overlap (one per judged
# overlap), revoke-before-assign (an overlap's second finding), consume-owned-only, commit-owned-only
CORE_KINDS = ("overlaps", "rba", "consumed", "committed")

DUCKDB_CORE = """
WITH ev AS (SELECT * FROM read_parquet('{events}/*.parquet')),
m0 AS (
  SELECT *,
         sum(CASE WHEN name = 'startup_complete' THEN 1 ELSE 0 END) OVER wm AS inc,
         sum(CASE WHEN name IN ('startup_complete', 'shutdown_complete') THEN 1 ELSE 0 END) OVER wm AS life,
         coalesce(last_value(CASE WHEN protocol IN ('eager', 'cooperative') THEN protocol END IGNORE NULLS) OVER wm,
                  first_value(CASE WHEN assignor IN ({cooperative}) THEN 'cooperative'
                                   WHEN assignor IN ({eager}) THEN 'eager' END IGNORE NULLS) OVER wm) AS proto
  FROM ev WHERE member IS NOT NULL
    AND NOT (name IN ('partitions_assigned', 'partitions_revoked', 'partitions_lost') AND NOT jsonl AND callback)
  WINDOW wm AS (PARTITION BY "group", member ORDER BY seq, part ROWS UNBOUNDED PRECEDING)),
m1 AS (
  SELECT *,
         last_value(generation IGNORE NULLS) OVER wi AS gen_ff,
         last_value(CASE WHEN member_id <> '' THEN member_id END IGNORE NULLS) OVER wi AS mid_ff,
         max(CASE WHEN jsonl OR name IN ('startup_complete', 'partitions_lost')
                       OR (name = 'partitions_assigned' AND proto = 'eager') THEN 1 ELSE 0 END) OVER wm = 1 AS known,
         topic IS NOT NULL AND "partition" IS NOT NULL
           AND coalesce(last_value(CASE WHEN name IN ('partitions_assigned', 'partitions_revoked', 'partitions_lost')
                                        THEN name END IGNORE NULLS) OVER wtp = 'partitions_assigned', false)
           AS owned_before,
         lag(timestamp) OVER wm0 AS prev_ts
  FROM m0
  WINDOW wm AS (PARTITION BY "group", member ORDER BY seq, part ROWS UNBOUNDED PRECEDING),
         wm0 AS (PARTITION BY "group", member ORDER BY seq, part),
         wi AS (PARTITION BY "group", member, inc ORDER BY seq, part ROWS UNBOUNDED PRECEDING),
         wtp AS (PARTITION BY "group", member, life, topic, "partition" ORDER BY seq, part
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
m AS (
  SELECT *,
         topic IS NOT NULL AND "partition" IS NOT NULL AND name = 'partitions_assigned' AND NOT owned_before AS is_new,
         name IN ('partitions_revoked', 'partitions_lost') AND owned_before AS is_release,
         -- a commit entry that took (ownership.commit_entry_ok): read by act and u0
         name = 'offsets_committed' AND coalesce(success, true) AND coalesce(error, '') = '' AS commit_entry_ok,
         CASE WHEN name IN ('startup_complete', 'shutdown_complete') THEN struct_pack(
           seq := seq,
           ts := CASE WHEN name = 'shutdown_complete' THEN timestamp ELSE coalesce(prev_ts, timestamp) END,
           kind := CASE WHEN name = 'startup_complete' THEN 'killed' WHEN reason = 'crash' THEN 'crashed'
                        ELSE 'shutdown' END,
           gen := CASE WHEN name = 'shutdown_complete' THEN gen_ff
                       ELSE lag(gen_ff) OVER (PARTITION BY "group", member ORDER BY seq, part) END,
           source := source) END AS life_end
  FROM m1),
r AS (
  SELECT *,
         first_value(CASE WHEN is_release THEN struct_pack(
             seq := seq, ts := timestamp, kind := CASE WHEN name = 'partitions_lost' THEN 'lost' ELSE 'revoked' END,
             gen := gen_ff, source := source) END IGNORE NULLS)
           OVER (PARTITION BY "group", member, life, topic, "partition" ORDER BY seq, part
                 ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS rel,
         first_value(life_end IGNORE NULLS) OVER (wm ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS lif,
         max(timestamp) OVER (PARTITION BY "group", member) AS last_ts,
         min(timestamp) OVER (PARTITION BY "group", member) AS first_ts,
         last_value(gen_ff) OVER (wm ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS last_gen,
         last_value(source) OVER (wm ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS last_source
  FROM m
  WINDOW wm AS (PARTITION BY "group", member ORDER BY seq, part)),
iv0 AS (
  SELECT "group", member, topic, "partition", seq AS s, timestamp AS ts, source AS src,
         CASE WHEN gen_ff >= 0 THEN gen_ff END AS g, proto = 'cooperative' AS coop, mid_ff AS mid, first_ts,
         group_named AS named,
         CASE WHEN rel IS NOT NULL AND (lif IS NULL OR rel.seq < lif.seq) THEN rel
              WHEN lif IS NOT NULL THEN lif
              ELSE struct_pack(seq := 4611686018427387904, ts := greatest(last_ts, timestamp), kind := 'eof',
                               gen := last_gen, source := last_source) END AS e
  FROM r WHERE is_new),
iv AS (SELECT * EXCLUDE (e), e.seq AS e_seq, e.ts AS e_ts, e.kind AS e_kind, e.gen AS e_gen, e.source AS e_source
       FROM iv0),
ov AS (
  SELECT n."group", n.topic, n."partition", o.member AS old, n.member AS new, n.s AS start_seq, n.ts AS start,
         n.src AS new_source, n.g AS new_gen, n.coop, o.mid AS old_mid, o.first_ts AS old_first_ts,
         o.named AS old_named,
         o.e_seq, o.e_ts, o.e_kind, o.e_gen, o.e_source
  FROM iv n JOIN iv o ON n."group" = o."group" AND n.topic = o.topic AND n."partition" = o."partition"
   AND n.member <> o.member AND o.s < n.s AND n.s < o.e_seq),
rem AS (
  SELECT ov."group", ov.topic, ov."partition", ov.old, ov.new, ov.start_seq, arg_max(x.timestamp, x.seq) AS removed_ts
  FROM ov JOIN ev x ON x.name = 'coordinator_member_removed' AND x.member_id IS NOT NULL
   AND x."group" = ov."group" AND x.member_id = ov.old_mid AND x.seq < ov.e_seq
  GROUP BY ALL),
act AS (
  SELECT DISTINCT ov."group", ov.topic, ov."partition", ov.old, ov.new, ov.start_seq, true AS has_act
  FROM ov JOIN m a ON a."group" = ov."group" AND a.member = ov.old AND a.topic = ov.topic
   AND a."partition" = ov."partition" AND a.seq > ov.start_seq AND a.seq < ov.e_seq
   AND a.timestamp > ov.start + CASE WHEN a.source <> ov.new_source THEN {skew_ms} ELSE 0 END
  WHERE a.owned_before AND (a.name IN ('records_consumed', 'record_data') OR a.commit_entry_ok)),
judged0 AS (
  SELECT *, CASE WHEN e_kind = 'lost' THEN true
              WHEN removed_ts IS NOT NULL AND removed_ts <= start + {skew_ms} THEN true
              WHEN new_gen IS NOT NULL AND e_gen IS NOT NULL THEN e_gen < 0 OR e_gen < new_gen
              ELSE e_kind IN ('killed', 'eof') END AS zombie,
         e_source <> new_source AND e_ts - start <= {skew_ms} AS tolerated,
         coalesce(coop AND e_kind = 'revoked' AND e_gen IS NOT NULL AND e_gen = new_gen, false) AS rba
  FROM ov LEFT JOIN rem USING ("group", topic, "partition", old, new, start_seq)
          LEFT JOIN act USING ("group", topic, "partition", old, new, start_seq)),
named AS (
  SELECT * FROM (
    SELECT regexp_extract("group", '^([^/]*/)', 1) AS k_set, CASE WHEN member_id <> '' THEN member_id END AS k_mid,
           seq AS k_from, lead(seq) OVER (PARTITION BY "group", member ORDER BY seq) AS k_to
    FROM ev WHERE member IS NOT NULL AND part = 0 AND (member_id <> '' OR name = 'startup_complete'))
  WHERE k_mid IS NOT NULL),
unn AS (
  SELECT x."group" AS r_group, regexp_extract(x."group", '^([^/]*/)', 1) AS r_set, x.timestamp AS r_ts,
         x.member_id AS r_mid
  FROM ev x WHERE x.name = 'coordinator_member_removed' AND x.member_id IS NOT NULL
   AND coalesce(x.reason, 'removed') <> 'left'),
judged AS (
  SELECT *, NOT zombie AND NOT tolerated AND has_act IS NULL AND old_mid IS NULL
            AND NOT (new_gen IS NOT NULL AND e_gen IS NOT NULL)
            AND EXISTS (SELECT 1 FROM unn WHERE (unn.r_group = j."group"
                          OR (NOT coalesce(j.old_named, false)
                              AND unn.r_set = regexp_extract(j."group", '^([^/]*/)', 1)))
                        AND unn.r_ts >= coalesce(j.old_first_ts, 0) AND unn.r_ts <= j.start + {skew_ms}
                        AND NOT EXISTS (SELECT 1 FROM named WHERE k_set = unn.r_set AND k_mid = unn.r_mid
                                        AND (k_from < j.e_seq OR (k_from = j.e_seq AND j.e_kind <> 'killed'))
                                        AND (k_to IS NULL OR k_to > j.e_seq
                                             OR (k_to = j.e_seq AND j.e_kind = 'killed')))) AS undecided
  FROM judged0 j),
u0 AS (
  SELECT "group", member, topic, "partition", name, owned_before, known, "offset",
         name IN ('records_consumed', 'record_data') AS polled,
         commit_entry_ok AS committed,
         sum(CASE WHEN is_new THEN 1 ELSE 0 END) OVER (wmtp ROWS UNBOUNDED PRECEDING) AS assigned_count,
         last_value(CASE WHEN name IN ('records_consumed', 'record_data') AND maxOffset IS NOT NULL
                         THEN struct_pack(i := inc, v := maxOffset + 1) END IGNORE NULLS)
           OVER (wmtp ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS last_poll, inc
  FROM m WHERE topic IS NOT NULL AND (name IN ('records_consumed', 'record_data', 'partitions_assigned')
        OR commit_entry_ok)
  WINDOW wmtp AS (PARTITION BY "group", member, topic, "partition" ORDER BY seq, part)),
u AS (SELECT *, CASE WHEN last_poll.i = inc THEN last_poll.v END AS pos FROM u0 WHERE NOT owned_before AND known),
un AS (
  SELECT DISTINCT polled, "group", member, topic, "partition", assigned_count FROM u
  WHERE polled OR (committed AND NOT (pos IS NOT NULL AND "offset" IS NOT NULL AND "offset" <= pos)))
SELECT (SELECT count(*) FILTER (WHERE zombie OR (NOT tolerated AND NOT undecided)) FROM judged) AS overlaps,
       (SELECT count(*) FILTER (WHERE rba) FROM judged) AS rba,
       (SELECT count(*) FILTER (WHERE polled) FROM un) AS consumed,
       (SELECT count(*) FILTER (WHERE NOT polled) FROM un) AS committed
"""


def duckdb_run(corpus: Path, threads: int, memory_limit: str = "8GB", spill: Path | None = None) -> dict[str, Any]:
    """DUCKDB_CORE over ``corpus``: its findings by :data:`CORE_KINDS`, wall and CPU seconds (spilling to
    ``spill``, by default beside the corpus, past ``memory_limit``)."""
    import duckdb

    from traces.state import COOPERATIVE_ASSIGNORS, EAGER_ASSIGNORS

    started = time.monotonic()
    cpu_start = time.process_time()
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(f"SET threads = {threads}")
    con.execute(f"SET memory_limit = '{memory_limit}'")
    con.execute("SET temp_directory = '{}'".format(spill or corpus.parent / "duckdb-spill"))
    names = ", ".join(f"'{a}'" for a in sorted(COOPERATIVE_ASSIGNORS)), \
        ", ".join(f"'{a}'" for a in sorted(EAGER_ASSIGNORS))
    n = con.execute(DUCKDB_CORE.format(events=corpus / "events", cooperative=names[0], eager=names[1],
                                       skew_ms=CORE_SKEW_MS)).fetchone()
    con.close()
    assert n is not None
    by_kind = dict(zip(CORE_KINDS, (int(x) for x in n), strict=True))
    return {"findings": sum(by_kind.values()), "by_kind": by_kind, "seconds": round(time.monotonic() - started, 2),
            "cpu_s": round(time.process_time() - cpu_start, 1), "load_1min": round(os.getloadavg()[0], 1),
            "process_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def duckdb_row(corpus: Path, events: int, memory_limit: str) -> dict[str, Any]:
    """:func:`duckdb_run` on 2 threads with its rates, printed as it lands (a row of either Spark benchmark)."""
    r = duckdb_run(corpus, threads=2, memory_limit=memory_limit)
    r["events_per_s"] = round(events / r["seconds"])
    r["events_per_cpu_s"] = round(events / r["cpu_s"]) if r["cpu_s"] else None
    print(f"{events:,} events, duckdb core (2 threads): {r}", flush=True)
    return r


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


# the functions mine.plan calls, by module (spark_analysis.<name>): profile() records what each call returns
PLAN_CALLS = {
    "invariants": ("group_generations", "removals", "named_ids", "judged_overlaps", "overlap_findings", "revoked_then_assigned",
                   "unowned", "stale_commits", "generation_down", "eager_not_revoked", "undecided_overlaps"),
    "mine": ("member_rows", "intervals"),
    "rejected": ("rejected_generations",),
    "delivery": ("offsets", "ownerships", "broker_commits", "no_gap", "monotonic", "not_ahead", "unchecked_counts"),
    "membership": ("unsubscribed", "revoked_came_back", "static_rejoins", "no_coordinator"),
    "converges": ("converges",),
    "wellformed": ("malformed",),
    "rebalances": ("rebalances", "pauses", "moves"),
    "handoff": ("handoffs",),
    "cooperative": ("same_generation_overlaps",),
    "coordinator_assignments": ("stored_twice", "held_twice"),
    "notes": ("counts",),
}
# what mine.plan calls from spark_analysis that builds none of the job's frames, or one a wrapped call takes whole:
# PLAN_CALLS need not wrap these (tests/spark_analysis/test_bench_profile.py holds the two lists to mine.plan)
# (names mine imports are patched, and listed, as mine's)
PLAN_UNWRAPPED = {
    "mine": ("load",  # the corpus scan: group_generations' input, in that cache's cost
             "fit_partitions", "storage_level", "part_files",  # a setting, a storage level, file names: no frame
             # the sparse columns packed into a struct for a cache and unpacked for its readers: projections of the
             # frame a wrapped call returned (the cache is named by that call: Plan.origins)
             "pack", "unpack"),
}


def operators(df: Any) -> dict[str, int]:
    """The operators a frame's own plan runs: Window operators, sorts, exchanges (shuffles), filters, counted in its
    physical plan without the plans of the cached frames it reads (each counted under its own part). A cached
    frame's plan is the one under its own ``InMemoryRelation``: its scan of itself is not an operator."""
    lines = df._jdf.queryExecution().executedPlan().toString().splitlines()
    counts = {"window": 0, "sort": 0, "exchange": 0, "filter": 0}
    own = next((i for i, line in enumerate(lines) if "InMemoryRelation" in line), None) \
        if df.storageLevel.useMemory or df.storageLevel.useDisk else None
    i = own + 1 if own is not None else 0
    while i < len(lines):
        line = lines[i]
        body = line.lstrip(" :+-")
        depth = len(line) - len(body)
        if "InMemoryRelation" in line:  # another cached frame's plan: skip its subtree
            i += 1
            while i < len(lines) and len(lines[i]) - len(lines[i].lstrip(" :+-")) > depth:
                i += 1
            continue
        op = re.sub(r"^\*\(\d+\) ", "", body).split(" ", 1)[0]  # "*(3) Sort [...]": code generation's stage
        kind = {"Window": "window", "Sort": "sort", "Exchange": "exchange", "Filter": "filter"}.get(op)
        if kind is not None:
            counts[kind] += 1
        i += 1
    return counts


def storage_bytes(spark: Any) -> dict[str, int]:
    """The bytes every cached RDD holds now, in memory and on disk, from Spark's storage info (what the UI's Storage
    tab shows): a cache's size is the difference across the action that materialised it."""
    infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()
    return {"memory": sum(int(i.memSize()) for i in infos), "disk": sum(int(i.diskSize()) for i in infos)}


def cache_columns(spark: Any, df: Any) -> dict[str, dict[str, int]]:
    """The bytes each column of the cached frame ``df`` takes, cached alone: each column is read from ``df``'s cache,
    cached on its own at ``df``'s storage level, measured and released. Spark's in-memory cache builds each column's
    buffer (and its compression) apart from the others', so a column cached alone takes what it takes in ``df``'s
    batches, give or take the batch's own bookkeeping. Largest first."""
    sizes: dict[str, dict[str, int]] = {}
    for name in df.columns:
        one = df.select(name).persist(df.storageLevel)
        before = storage_bytes(spark)
        one.count()  # a cached frame's count builds its whole cache
        after = storage_bytes(spark)
        one.unpersist(blocking=True)
        sizes[name] = {k: after[k] - before[k] for k in after}
    return dict(sorted(sizes.items(), key=lambda kv: -(kv[1]["memory"] + kv[1]["disk"])))


def profile(corpus: Path, master: str, conf: dict[str, str] | None = None, part: str | None = None,
            columns: bool = False) -> dict[str, Any]:
    """Where the whole job's CPU goes: ``mine.plan``'s parts run one action each, in the plan's order.

    Each function mine.plan calls is wrapped for the call (benchmark only) so that the frame it returns is
    recorded by name. First every frame the plan caches is materialised (``count()``), in the order it is
    cached -- the corpus's repartition, the member rows, the intervals, ...; each costs its own work on top of
    the caches before it. Then every other recorded frame is written to Spark's ``noop`` sink: a rule's own
    work over the caches. Per action: the JVM's CPU seconds (tasks, planning, code generation and the JIT
    it sets off), split by thread (:class:`ThreadCpu`), and the wall time. The JIT's bill falls on whichever part
    first runs an operator, so the early parts carry most of it. The parts overlap where one reads another's
    frame uncached. Last, ``mine.run``'s own queries (``mine.collect``: the counts, the malformed summary, the
    rebalance analytics, the pauses, the handoff summary, the unchecked counts) run as one part; the findings' write
    is not in it (each rule is written to ``noop`` instead): the parts' sum approximates the whole job, it is not it.

    Each rule's frame is cached as its part computes it (``persist``, materialised by the ``noop`` write), so that a
    later part that reads it -- ``mine.collect`` reads the handoffs, the malformed sequences, the rebalances, the
    moves and the unchecked counts' frames, a rule may read an earlier rule's -- reads what that part computed and
    does not compute it again: a real run computes the handoffs once, in ``mine.collect``, where the profile counted
    their plan twice, in ``rule: handoff.handoffs`` and in ``run: mine.collect`` (so with the others it reads). A
    rule's frame is small (findings, or one row per handoff, rebalance, move), so caching it adds little to its
    part.

    ``part`` (``--part NAME``, a name as the profile prints it: ``mine.member_rows``, ``invariants.unowned``, ...):
    that part alone, in a fresh session -- the caches it may read (a cached part: the caches before it in the plan;
    a rule: every cache) run first, each its own step, then the part; nothing after it. Every step also counts
    the operators of its own plan (:func:`operators`).

    Each cache step records the bytes its cache holds (``cache_bytes``, memory and disk: :func:`storage_bytes`
    across the step); with ``columns`` (``--cache-columns``), also each column's (:func:`cache_columns`)."""
    import importlib
    import inspect

    from spark_analysis import mine, session

    recorded: list[tuple[str, Any]] = []
    saved: list[tuple[Any, str, Any]] = []

    def wrap(module_name: str, name: str, fn: Any) -> Any:
        def recording(*args: Any, **kwargs: Any) -> Any:
            out = fn(*args, **kwargs)
            caller = inspect.currentframe()
            if caller is not None and caller.f_back is not None and caller.f_back.f_code is mine.plan.__code__:
                for k, df in enumerate(out if isinstance(out, tuple) else (out,)):
                    recorded.append((f"{module_name}.{name}" + (f"[{k}]" if isinstance(out, tuple) else ""), df))
            return out
        return recording

    for module_name, names in PLAN_CALLS.items():
        module = importlib.import_module(f"spark_analysis.{module_name}")
        for name in names:
            fn = getattr(module, name)
            saved.append((module, name, fn))
            setattr(module, name, wrap(module_name, name, fn))
    spark = session.build(master, app="bench spark profile", extra={"spark.driver.memory": "6g", **(conf or {})})
    pid = _jvm_pid(spark)
    parts: list[dict[str, Any]] = []
    started = time.monotonic()
    cpu_start = _jvm_cpu_s(spark)
    try:
        try:
            p = mine.plan(spark, corpus)
        finally:
            for module, name, fn in saved:
                setattr(module, name, fn)
        names = {id(df): name for name, df in recorded}
        # a cache of packed columns is named by the call that built the frame it packs (Plan.origins)
        cached_ids = {id(df) for df in [*p.cached, *p.origins]}
        steps = [(f"cache: {names.get(id(df), names.get(id(origin), f'frame cached inside a rule #{i}'))}", df,
                  df.count) for i, (df, origin) in enumerate(zip(p.cached, p.origins, strict=True))]
        kept_rules: list[Any] = []

        def run_rule(df: Any) -> Any:
            def action() -> None:
                if part is None:  # a later part may read it (below): it reads this computation, not its own
                    kept_rules.append(df.persist())
                df.write.format("noop").mode("overwrite").save()
            return action

        steps += [(f"rule: {name}", df, run_rule(df)) for name, df in recorded if id(df) not in cached_ids]
        if part is not None:
            at = [k for k, (label, _, _) in enumerate(steps) if label.split(": ", 1)[1] == part]
            if not at:
                raise SystemExit(f"--part {part}: no such part; the parts: "
                                 + ", ".join(label.split(": ", 1)[1] for label, _, _ in steps))
            steps = steps[:at[0] + 1] if at[0] < len(p.cached) else steps[:len(p.cached)] + [steps[at[0]]]
        else:  # last, as mine.run runs them: the report's counts, summaries and analytics over the frames above
            steps.append(("run: mine.collect", None, lambda: mine.collect(p, mine.MineConfig())))
        for label, df, action in steps:
            ops = operators(df) if part is not None else None
            stored = storage_bytes(spark)
            t0, c0, threads = time.monotonic(), _jvm_cpu_s(spark), ThreadCpu(pid)
            spark.sparkContext.setJobDescription(label)
            action()
            parts.append({"part": label, "jvm_cpu_s": round(_jvm_cpu_s(spark) - c0, 1),
                          "by_thread_s": threads.result(), "seconds": round(time.monotonic() - t0, 1),
                          **({"operators": ops} if ops is not None else {})})
            if label.startswith("cache: "):
                parts[-1]["cache_bytes"] = {k: v - stored[k] for k, v in storage_bytes(spark).items()}
                if columns:  # after the step's CPU reading: the columns' caches are no part of its cost
                    spark.sparkContext.setJobDescription(f"{label}: its columns")
                    parts[-1]["cache_columns_bytes"] = cache_columns(spark, df)
            print(f"profile: {parts[-1]}", flush=True)
        for df in reversed(kept_rules):  # they read the plan's caches: dropped first (mine.Plan.release)
            df.unpersist()
        p.release()
        return {"parts": parts, "jvm_cpu_s": round(_jvm_cpu_s(spark) - cpu_start, 1),
                "seconds": round(time.monotonic() - started, 1), "load_1min": round(os.getloadavg()[0], 1)}
    finally:
        spark.stop()


# Settings read only when the driver JVM is launched. PySpark keeps its gateway JVM after ``spark.stop()``, so every
# run of one bench process shares the first run's JVM (its JIT warm, its options fixed): a variant of one of these
# would be measured without it taking effect.
LAUNCH_KEYS = ("spark.driver.memory", "spark.driver.extraJavaOptions", "spark.driver.extraClassPath",
               "spark.driver.extraLibraryPath")


def variants(specs: list[str]) -> list[tuple[str, dict[str, str]]]:
    """``--variant NAME:KEY=VALUE[,KEY=VALUE...]`` -> [(NAME, {KEY: VALUE})], the baseline (no setting) first; a
    :data:`LAUNCH_KEYS` setting is refused, saying how to measure it (one process per setting)."""
    out: list[tuple[str, dict[str, str]]] = [("baseline", {})]
    for spec in specs:
        name, _, settings = spec.partition(":")
        conf = dict(kv.split("=", 1) for kv in settings.split(",") if kv)
        launch = sorted(k for k in conf if k in LAUNCH_KEYS)
        if launch:
            raise SystemExit(f"--variant {name}: {', '.join(launch)} takes effect only when the driver JVM starts, "
                             "and every run of one bench process shares the first run's JVM: run one process per "
                             "setting (`--conf KEY=VALUE`), alternating, as docs/benchmarks-spark.md measures the "
                             "parallel collector")
        out.append((name, conf))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks spark", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000000,50000000", help="corpus sizes in events, comma-separated")
    parser.add_argument("--pool-groups", type=int, default=400)
    parser.add_argument("--masters", default="local[1],local[2]")
    parser.add_argument("--work", type=Path, default=Path("/tmp/groupspec-bench-spark"))
    parser.add_argument("--no-duckdb", action="store_true")
    parser.add_argument("--no-core", action="store_true")
    parser.add_argument("--no-whole", action="store_true", help="only the core logic (Spark and DuckDB)")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench" / "spark.json")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting over the session's own (repeatable): to measure a tuning")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME:KEY=VALUE[,KEY=VALUE]",
                        help="a whole-job run with these settings beside a baseline run without them, in the same "
                             "invocation (repeatable; with --repeat, runs alternate baseline, variants, baseline, ...)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of the baseline and the variants")
    parser.add_argument("--profile", action="store_true",
                        help="also run mine.plan part by part, each part's CPU (profile(); on the last master)")
    parser.add_argument("--part", metavar="NAME",
                        help="run one part of mine.plan alone (as --profile names it, e.g. mine.member_rows), after the "
                             "caches it may read, each step's CPU and operators (on the last master; with "
                             "--no-whole --no-core nothing else runs)")
    parser.add_argument("--cache-columns", action="store_true",
                        help="with --profile or --part: each cache's bytes per column too (each column cached alone)")
    parser.add_argument("--no-checker", action="store_true", help="skip the streaming checker's row")
    parser.add_argument("--duckdb-memory", default="8GB",
                        help="DuckDB's memory_limit: past it DuckDB spills to disk instead of taking the machine")
    args = parser.parse_args(argv)
    runs = variants(args.variant)  # before any work: a refused variant is said at once, not after a profile
    conf = dict(c.split("=", 1) for c in args.conf)
    args.work.mkdir(parents=True, exist_ok=True)
    pool_dir = pool(args.work, args.pool_groups)
    results: dict[str, Any] = {"machine": platform.platform(), "pool_groups": args.pool_groups, "conf": conf,
                               "duckdb_memory_limit": args.duckdb_memory, "runs": []}
    if not args.no_checker:
        results["checker"] = checker_run(pool_dir, args.pool_groups)
        print(f"checker (one process): {results['checker']}", flush=True)
    for size in (int(s) for s in args.sizes.split(",")):
        corpus_dir, events, copies = replicate(pool_dir, args.work, size)
        run: dict[str, Any] = {"target": size, "events": events, "copies": copies}
        if args.profile:
            run["profile"] = profile(corpus_dir, args.masters.split(",")[-1], conf, columns=args.cache_columns)
        if args.part:
            run["part"] = profile(corpus_dir, args.masters.split(",")[-1], conf, part=args.part,
                                  columns=args.cache_columns)
        for rnd, master, (name, vconf) in [(k, m, v) for k in range(args.repeat) for m in
                                            ([] if args.no_whole else args.masters.split(",")) for v in runs]:
            r = spark_run(corpus_dir, master, args.work / f"out-{size}-{_dir_name(master)}", core_only=False,
                          conf={**conf, **vconf})
            r["events_per_s"] = round(events / r["seconds"])
            r["events_per_jvm_cpu_s"] = round(events / r["jvm_cpu_s"]) if r["jvm_cpu_s"] else None
            key = f"spark {master} whole" + ("" if len(runs) == 1 else f" {name}") \
                + ("" if args.repeat == 1 else f" #{rnd + 1}")
            run[key] = {"settings": vconf, **r} if vconf else r
            print(f"{events:,} events, {key}: {r}", flush=True)
        # the core on the last master (the whole job's curve is the point), or on each with --no-whole
        for master in [] if args.no_core else args.masters.split(",")[-1 if not args.no_whole else 0:]:
            r = spark_run(corpus_dir, master, args.work / f"out-{size}-{_dir_name(master)}-core", core_only=True, conf=conf)
            r["events_per_s"] = round(events / r["seconds"])
            r["events_per_jvm_cpu_s"] = round(events / r["jvm_cpu_s"]) if r["jvm_cpu_s"] else None
            run[f"spark {master} core"] = r
            print(f"{events:,} events, spark {master} core: {r}", flush=True)
        if not args.no_duckdb:
            run["duckdb core"] = duckdb_row(corpus_dir, events, args.duckdb_memory)
        results["runs"].append(run)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
