"""The streaming checker run once per group inside Spark's Python workers: ``python -m benchmarks spark_checker``.

Issue 15 asks for built-in functions on the hot path and no Python UDFs, a rule measured for one
invariant (10-13x slower). This measures what the rule costs for the whole suite: instead of the
built-in job (``groupspec mine``, ~116 task-CPU-µs per event), Spark reads the same corpus Parquet
and hands each group's rows, as Arrow, to the streaming checker itself (:class:`traces.checker.Checker`,
everything it judges), in Python workers; the findings come back as rows, are written to Parquet and
counted. The job itself is not changed: this is a measurement for whoever owns the rule.

**Two routes** (``--routes``):

- ``apply``: ``groupBy("group").applyInArrow(...)``: a shuffle by group, then one call per group
  (the rows sorted by ``(seq, part)`` in the worker).
- ``map``: ``mapInArrow(...)`` with no shuffle. It needs every group's rows in one task, in file order:
  the corpus layout writes whole groups per file sorted by ``(group, seq)`` (simulated corpora and
  the bench's copies; see docs/benchmarks-spark.md for ``corpus --from``), and ``spark.sql.files.maxPartitionBytes``
  is set above the largest file so no file is split. The worker cuts the stream where the group changes.
  Both routes also return one marker row per group (its event count), and the driver checks that every
  group came back exactly once with every event: a group split across tasks would fail the run.

**Rows back into events** (:func:`to_events`): the inverse of ``spark_analysis.layout.Columns.add_event``,
rows of one ``seq`` -> one event, partition rows -> the event's ``partitions`` / ``offsets`` /
``assignment`` (a KIP-848 member assignment's: ``partitions`` / ``pending_revocation``). What the layout
does not keep cannot come back: fields no rule reads (``leader``, ``previous_state``, ``replaced_by``,
``group_synced``'s partitions) and whether an error was the event's or one entry's when every entry
shows the same one.

**Measured** per route and master (``local[1]``, ``local[2]``): wall time from the session's start, the
driver JVM's CPU, the Python workers' CPU (the workers are the JVM's descendants -- ``pyspark.daemon``
and the workers it forks --, read from /proc: each live process's own CPU plus the CPU of the children
it has reaped, before and after), the driver JVM's peak RSS, the workers' peak RSS (summed over the
workers alive at each 1-second sample), and the findings per invariant. Beside it, DuckDB's core logic
(``bench_spark.duckdb_run``) on the same corpus.

Run: ``python -m benchmarks spark_checker -- --sizes 1000000,10000000 --work /tmp/h15-exec-bench``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks import bench_spark as bs
from spark_analysis.layout import _PARTITION_LISTS

# what each group's call returns: its findings, and one marker row (invariant null) with its event count
OUT_SCHEMA = ("group string, invariant string, severity string, members array<string>, "
              "partitions array<struct<topic:string,partition:int>>, t0 long, t1 long, occurrences long, "
              "evidence array<string>, message string, events long, skipped long")

# event-level fields the layout keeps as one column each (every row of the event carries the same value)
_EVENT_FIELDS = ("instance_id", "generation", "protocol", "assignor", "reason", "state", "auto_offset_reset",
                 "enable_auto_commit", "auto_commit_interval_ms", "subscription", "detail", "members",
                 "member_count", "success")
_ENTRY_FIELDS = ("count", "minOffset", "maxOffset", "offset")

Located = tuple[int, str, int, str | None, bool | None, bool, dict[str, Any]]


def to_events(cols: dict[str, list[Any]], start: int, end: int) -> Iterator[Located]:
    """The events of rows ``[start, end)`` of one group (sorted by ``seq``, ``part``), each as
    ``(seq, source, line, format, commits_shown, callback, event)``: the inverse of ``layout.Columns.add_event``."""
    seq = cols["seq"]
    i = start
    while i < end:
        j = i + 1
        while j < end and seq[j] == seq[i]:
            j += 1
        yield (seq[i], cols["source"][i], cols["line"][i], cols["format"][i], cols["commits_shown"][i],
               bool(cols["callback"][i]), _event(cols, i, j))
        i = j


def _event(cols: dict[str, list[Any]], i: int, j: int) -> dict[str, Any]:
    name = cols["name"][i]
    ev: dict[str, Any] = {"name": name, "timestamp": cols["timestamp"][i], "group": cols["group"][i]}
    if cols["member"][i] is not None:
        ev["member"] = cols["member"][i]
    for f in _EVENT_FIELDS:
        if cols[f][i] is not None:
            ev[f] = cols[f][i]
    rows = [k for k in range(i, j) if cols["topic"][k] is not None or cols["partition"][k] is not None]
    if name == "coordinator_stable":  # one row per member id and partition
        assignment: dict[str, list[dict[str, Any]]] = {}
        for k in rows:
            assignment.setdefault(cols["member_id"][k], []).append(
                {"topic": cols["topic"][k], "partition": cols["partition"][k]})
        ev["assignment"] = assignment
        if cols["error"][i] is not None:
            ev["error"] = cols["error"][i]
        return ev
    if cols["member_id"][i] is not None:
        ev["member_id"] = cols["member_id"][i]
    if name == "record_data":
        ev.update(topic=cols["topic"][i], partition=cols["partition"][i], offset=cols["minOffset"][i])
        return ev
    if name == "coordinator_state" and ev.get("detail") == "member-assignment":
        # a KIP-848 member assignment: one row per partition given or still to revoke, told apart by the column
        # pending_revocation (layout 4, layout._member_assignment)
        for key, pending in (("partitions", False), ("pending_revocation", True)):
            ev[key] = [{"topic": cols["topic"][k], "partition": cols["partition"][k]} for k in rows
                       if cols["pending_revocation"][k] is pending]
    key = _PARTITION_LISTS.get(name)
    errors = {cols["error"][k] for k in range(i, j)}
    shared = len(errors) == 1  # the layout gives each entry its own error or the event's: one value is the event's
    if shared and cols["error"][i] is not None:
        ev["error"] = cols["error"][i]
    if key is None:
        return ev
    entries = []
    for k in rows:
        entry: dict[str, Any] = {"topic": cols["topic"][k], "partition": cols["partition"][k]}
        for f in _ENTRY_FIELDS:
            if cols[f][k] is not None:
                entry[f] = cols[f][k]
        if not shared and cols["error"][k] is not None:
            entry["error"] = cols["error"][k]
        entries.append(entry)
    ev[key] = entries
    return ev


def check_group(cols: dict[str, list[Any]], start: int, end: int) -> list[dict[str, Any]]:
    """Run the streaming checker over one group's rows; its findings, then the group's marker row."""
    from traces.checker import CheckConfig, Checker
    from traces.schema import InputStats, Source

    sources: dict[str, Source] = {}
    callback: set[str] = set()
    located = []
    group = cols["group"][start]
    for seq, label, line, fmt, shown, cb, ev in to_events(cols, start, end):
        source = sources.get(label)
        if source is None:
            source = sources[label] = Source(index=len(sources), path=Path(label), label=label,
                                             format=fmt or "groupspec", member=label, commits_shown=shown)
        if cb and "member" in ev:
            callback.add(ev["member"])
        located.append((ev["timestamp"] if ev["timestamp"] is not None else 0, source.index, seq, line, ev))
    stats = InputStats()
    checker = Checker(list(sources.values()), CheckConfig(), stats, frozenset(callback))
    checker.run(located)
    checker.finish()
    out: list[dict[str, Any]] = [
        {"group": f.group, "invariant": f.invariant, "severity": f.severity, "members": f.members,
         "partitions": [{"topic": t, "partition": p} for t, p in f.partitions], "t0": f.t0, "t1": f.t1,
         "occurrences": f.occurrences, "evidence": f.evidence, "message": f.message}
        for f in checker.all_findings()]
    out.append({"group": group, "events": len(located), "skipped": sum(stats.skipped.values())})
    return out


def _arrow_schema() -> Any:
    import pyarrow as pa

    tp = pa.struct([("topic", pa.string()), ("partition", pa.int32())])
    return pa.schema([("group", pa.string()), ("invariant", pa.string()), ("severity", pa.string()),
                      ("members", pa.list_(pa.string())), ("partitions", pa.list_(tp)), ("t0", pa.int64()),
                      ("t1", pa.int64()), ("occurrences", pa.int64()), ("evidence", pa.list_(pa.string())),
                      ("message", pa.string()), ("events", pa.int64()), ("skipped", pa.int64())])


def check_table(table: Any) -> Any:
    """``applyInArrow``'s function: one group's rows (any order) -> its findings and marker row."""
    import pyarrow as pa

    table = table.sort_by([("seq", "ascending"), ("part", "ascending")])
    cols = table.to_pydict()
    return pa.Table.from_pylist(check_group(cols, 0, table.num_rows), schema=_arrow_schema())


def check_batches(batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow``'s function: a task's rows in file order (whole groups, each sorted by seq) -> the
    findings and marker rows of every group, a group checked when the next one starts."""
    import pyarrow as pa

    schema = _arrow_schema()
    pending: dict[str, list[Any]] | None = None  # the rows of the group being read (it may span batches)
    for batch in batches:
        cols = batch.to_pydict()
        groups = cols["group"]
        n = batch.num_rows
        start = 0
        out: list[dict[str, Any]] = []
        while start < n:
            end = start + 1
            while end < n and groups[end] == groups[start]:
                end += 1
            if pending is not None and pending["group"][0] != groups[start]:
                out += check_group(pending, 0, len(pending["group"]))
                pending = None
            if pending is None:
                pending = {k: v[start:end] for k, v in cols.items()}
            else:
                for k, v in cols.items():
                    pending[k].extend(v[start:end])
            start = end
        if out:
            yield pa.RecordBatch.from_pylist(out, schema=schema)
    if pending is not None:
        yield pa.RecordBatch.from_pylist(check_group(pending, 0, len(pending["group"])), schema=schema)


def spark_findings(spark: Any, corpus: Path, out: Path, route: str) -> Any:
    """Check every group of ``corpus`` in Spark by ``route`` (``apply`` or ``map``); the written findings."""
    from spark_analysis.layout import events_dir

    if route not in ("apply", "map"):
        raise ValueError(f"unknown route {route!r}")
    # the map route reads whole files per task: no file may be split. Spark splits at
    # min(maxPartitionBytes, max(openCostInBytes, bytes per core)): both bounds above the largest file
    largest = max(p.stat().st_size for p in events_dir(corpus).glob("*.parquet"))
    whole_files = {"spark.sql.files.maxPartitionBytes": max(128 << 20, 2 * largest),
                   "spark.sql.files.openCostInBytes": max(4 << 20, largest)} if route == "map" else {}
    before = {key: spark.conf.get(key) for key in whole_files}
    try:
        for key, value in whole_files.items():
            spark.conf.set(key, str(value))
        events = spark.read.parquet(str(events_dir(corpus)))
        if route == "apply":
            found = events.groupBy("group").applyInArrow(check_table, OUT_SCHEMA)
        else:
            found = events.mapInArrow(check_batches, OUT_SCHEMA)
        found.write.mode("overwrite").parquet(str(out))
    finally:
        for key, value in before.items():
            spark.conf.set(key, value)
    return spark.read.parquet(str(out))


def summary(found: Any) -> dict[str, Any]:
    """Findings per invariant, and the marker rows' check: every group exactly once (a group split across
    tasks by the ``map`` route would show twice)."""
    from pyspark.sql import functions as F

    markers = found.where(F.col("invariant").isNull())
    per = markers.groupBy("group").agg(F.count(F.lit(1)).alias("n"), F.sum("events").alias("events"))
    row = per.agg(F.count(F.lit(1)), F.sum("events"), F.max("n"), F.sum(F.lit(0))).collect()[0]
    counts = {r["invariant"]: r["count"] for r in found.where(F.col("invariant").isNotNull())
              .groupBy("invariant").count().collect()}
    skipped = markers.agg(F.sum("skipped")).collect()[0][0] or 0
    return {"groups": row[0], "events": row[1], "groups_seen_twice": row[2] is not None and row[2] > 1,
            "skipped_events": skipped, "findings": sum(counts.values()), "per_invariant": dict(sorted(counts.items()))}


def direct_findings(pool_dir: Path, groups: int) -> list[tuple[Any, ...]]:
    """The checker run directly (``check_events``) on the pool's groups as the simulator made them."""
    from spark_analysis import corpus
    from traces.report import check_events

    truth = json.loads((pool_dir / "truth.json").read_text())
    spec = corpus.CorpusSpec(groups=groups, seed=truth["seed"], mutant_fraction=truth["mutant_fraction"],
                             mutants=tuple(truth["mutants"]), faults=tuple(truth["faults"]))
    out = []
    for index in range(groups):
        trace, _ = corpus.simulate_group(spec, index)
        report = check_events(trace, label=f"{corpus.group_name(index)}.jsonl")
        out += [finding_key(f) for f in report["findings"]]
    return sorted(out)


def finding_key(f: dict[str, Any]) -> tuple[Any, ...]:
    """A finding as compared: everything the checker reports of it (a report finding or a findings row)."""
    window = f.get("window") or (f["t0"], f["t1"])
    return (f["group"], f["invariant"], f["severity"], tuple(f["members"]),
            tuple((p["topic"], p["partition"]) for p in f["partitions"]), window[0], window[1], f["occurrences"],
            tuple(f["evidence"]), f["message"])


def rows_keys(found: Any) -> list[tuple[Any, ...]]:
    from pyspark.sql import functions as F

    return sorted(finding_key(r.asDict(recursive=True)) for r in found.where(F.col("invariant").isNotNull()).collect())


class Workers:
    """The CPU and memory of the JVM's descendant processes: ``pyspark.daemon`` and the Python workers it forks.

    CPU: each live descendant's own CPU (utime + stime) plus what its reaped children used (cutime +
    cstime; the daemon reaps the workers it forked), plus the JVM's own reaped children; read at the start
    and at the end (before the session stops), the difference counted. Memory: every second, the RSS
    summed over the live descendants (the concurrent peak) and each one's VmHWM (the largest)."""

    def __init__(self, jvm: int, every_s: float = 1.0) -> None:
        import threading

        self.jvm = jvm
        self.peak_sum_kb = 0
        self.peak_one_kb = 0
        self.most = 0
        self.start_cpu = self.cpu()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True, args=(every_s,))
        self.thread.start()

    @staticmethod
    def _stat(pid: int) -> tuple[int, float, float] | None:
        """(ppid, own CPU s, reaped children's CPU s)"""
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        tick = os.sysconf("SC_CLK_TCK")
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick

    def _descendants(self) -> dict[int, tuple[int, float, float]]:
        stats = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                s = self._stat(int(entry.name))
                if s is not None:
                    stats[int(entry.name)] = s
        out: dict[int, tuple[int, float, float]] = {}
        frontier = {self.jvm}
        while frontier:
            frontier = {pid for pid, s in stats.items() if s[0] in frontier and pid not in out}
            out.update((pid, stats[pid]) for pid in frontier)
        return out

    def cpu(self) -> float:
        jvm = self._stat(self.jvm)
        return (jvm[2] if jvm else 0.0) + sum(own + reaped for _, own, reaped in self._descendants().values())

    def _sample(self) -> None:
        total = 0
        pids = self._descendants()
        self.most = max(self.most, len(pids))
        for pid in pids:
            try:
                status = Path(f"/proc/{pid}/status").read_text().splitlines()
            except OSError:
                continue
            for line in status:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    self.peak_one_kb = max(self.peak_one_kb, int(line.split()[1]))
        self.peak_sum_kb = max(self.peak_sum_kb, total)

    def _loop(self, every_s: float) -> None:
        while not self.stop.wait(every_s):
            self._sample()

    def result(self) -> dict[str, Any]:
        self.stop.set()
        self.thread.join()
        self._sample()
        return {"python_cpu_s": round(self.cpu() - self.start_cpu, 1), "python_processes_most": self.most,
                "python_peak_rss_sum_mb": round(self.peak_sum_kb / 1024, 1),
                "python_peak_rss_one_mb": round(self.peak_one_kb / 1024, 1)}


def run(corpus: Path, master: str, route: str, out: Path) -> dict[str, Any]:
    """One measured run: a fresh session, the checker per group, findings written and counted."""
    from spark_analysis import session

    # the workers must be this interpreter (the project's environment), not whatever `python3` is on PATH
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    driver_cpu = time.process_time()
    spark = session.build(master, app="bench spark checker", extra={
        "spark.driver.memory": "6g"})
    try:
        cpu_start = bs._jvm_cpu_s(spark)
        workers = Workers(bs._jvm_pid(spark))
        result: dict[str, Any] = summary(spark_findings(spark, corpus, out, route))
        result["seconds"] = round(time.monotonic() - started, 2)
        result["jvm_cpu_s"] = round(bs._jvm_cpu_s(spark) - cpu_start, 1)
        result.update(workers.result())
        result["driver_python_cpu_s"] = round(time.process_time() - driver_cpu, 1)
        result["cpu_s"] = round(result["jvm_cpu_s"] + result["python_cpu_s"] + result["driver_python_cpu_s"], 1)
        result["driver_jvm_peak_mb"] = bs._jvm_peak_mb(spark)
        result["load_1min"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
    finally:
        spark.stop()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks spark_checker", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="corpus sizes in events, comma-separated")
    parser.add_argument("--pool-groups", type=int, default=200)
    parser.add_argument("--masters", default="local[2],local[1]")
    parser.add_argument("--routes", default="map,apply", help="map (mapInArrow, no shuffle), apply (applyInArrow)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/groupspec-bench-spark"))
    parser.add_argument("--no-duckdb", action="store_true")
    parser.add_argument("--no-verify", action="store_true", help="skip the pool's comparison with the checker run directly")
    parser.add_argument("--duckdb-memory", default="8GB")
    parser.add_argument("--out", type=Path, default=bs.ROOT / "reports" / "bench" / "spark_checker.json")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    pool_dir = bs.pool(args.work, args.pool_groups)
    results: dict[str, Any] = {"machine": platform.platform(), "pool_groups": args.pool_groups, "runs": []}
    routes = args.routes.split(",")
    if not args.no_verify:
        # correctness first: on the pool, every route's findings are the checker's own, finding for finding
        from spark_analysis import session

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        direct = direct_findings(pool_dir, args.pool_groups)
        spark = session.build("local[2]", app="bench spark checker verify")
        try:
            for route in routes:
                got = rows_keys(spark_findings(spark, pool_dir, args.work / f"verify-{route}", route))
                same = got == direct
                results[f"verify {route}"] = {"direct": len(direct), "spark": len(got), "same": same}
                print(f"verify {route}: checker direct {len(direct)} findings, per group in Spark {len(got)}, "
                      f"{'identical' if same else 'DIFFERENT'}", flush=True)
                if not same:
                    return 1
        finally:
            spark.stop()
    for size in (int(s) for s in args.sizes.split(",")):
        corpus_dir, events, copies = bs.replicate(pool_dir, args.work, size)
        entry: dict[str, Any] = {"target": size, "events": events, "copies": copies}
        for master in args.masters.split(","):
            for route in routes:
                r = run(corpus_dir, master, route, args.work / f"checker-{size}-{bs._dir_name(master)}-{route}")
                r["events_per_s"] = round(events / r["seconds"])
                r["events_per_cpu_s"] = round(events / r["cpu_s"]) if r["cpu_s"] else None
                entry[f"spark {master} checker {route}"] = r
                print(f"{events:,} events, spark {master} checker per group ({route}): {r}", flush=True)
                if r["events"] != events or r["groups_seen_twice"]:
                    print(f"bench spark_checker: {route} saw {r['events']} of {events} events "
                          f"(a group seen twice: {r['groups_seen_twice']})", file=sys.stderr)
                    return 1
        if not args.no_duckdb:
            entry["duckdb core"] = bs.duckdb_row(corpus_dir, events, args.duckdb_memory)
        results["runs"].append(entry)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
