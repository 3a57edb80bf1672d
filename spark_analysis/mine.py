"""The mining job: a corpus in, the checker's findings, malformed sequences and rebalance analytics out.

:func:`plan` builds every DataFrame from the corpus (nothing runs yet); :func:`run` executes them,
writes the findings as Parquet, and returns the report data that ``groupspec mine`` renders. The
corpus is read once and partitioned by group once (the job's one planned shuffle); every window
and join after that is keyed by group first. :func:`shuffles` counts the exchanges Spark actually
planned (docs/mining-internals.md, "Shuffles, broadcasts and the session settings").
"""

from __future__ import annotations

import gc
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from spark_analysis import converges as cv
from spark_analysis import cooperative as co
from spark_analysis import coordinator_assignments as ca
from spark_analysis import delivery as dl
from spark_analysis import handoff as hd
from spark_analysis import invariants as inv
from spark_analysis import membership as mb
from spark_analysis import notes as nt
from spark_analysis import rebalances as rb
from spark_analysis import rejected as rj
from spark_analysis import wellformed as wf
from spark_analysis.layout import check_layout, events_dir, part_files, read_input, read_truth
from spark_analysis.ownership import ROWS_PACKED, TraceSets, intervals, member_rows
from spark_analysis.packing import pack, unpack
from spark_analysis.session import fit_partitions, partitions_kept, storage_level
from traces.checker import FROM_ASSIGNMENTS, NOT_IN_TRACES
from traces.delivery import handoff_notes

COVERED = ("single-owner", "zombie-overlap", "revoke-before-assign", "consume-owned-only", "commit-owned-only",
           "eager-revoke-all", "generation-monotonic", "monotonic-consumption", "committed-not-ahead", "no-gap",
           "subscribed-only", "revoke-only-moved", "static-rejoin", "converges")
MEASURED = ("handoff-duplicates",)  # a measure, not a finding: the report's "delivery" section
NOT_COVERED = {  # the checker does not judge these from a trace either: its unchecked notes, in its words
    **FROM_ASSIGNMENTS,  # properties of one assignment (`groupspec assign` judges them)
    **NOT_IN_TRACES,  # the stuck-group invariants (issue 17)
}


@dataclass(frozen=True)
class MineConfig:
    skew_ms: int = 0
    default_protocol: str | None = None
    storm_window_ms: int = 60_000
    storm_threshold: int = 5
    max_examples: int = 100  # handoffs with duplicates listed in "delivery" (the checker's max_findings)


@dataclass
class Plan:
    events: DataFrame
    rows: DataFrame
    findings: DataFrame
    malformed: DataFrame
    rebalances: DataFrame
    pauses: DataFrame
    moves: DataFrame
    unchecked: DataFrame
    cached: list[DataFrame]
    handoffs: DataFrame | None = None  # spark_analysis.handoff.handoffs: one row per handoff
    # per cached frame, the frame it was made from: itself, or the frame whose sparse columns it packs
    # (spark_analysis.packing); the benchmark's profile names each cache by the call that built its origin
    origins: list[DataFrame] = field(default_factory=list)
    partitions_from: str = "setting"  # where the shuffle partition count came from (session.fit_partitions)

    def release(self) -> None:
        # Newest first: each cached frame reads the ones cached before it. Spark's CacheManager.uncacheQuery (cascade
        # off, as Dataset.unpersist calls it) builds again every cache whose plan reads the frame it drops
        # (recacheByCondition), so dropping the corpus's cache first planned the ten after it again, and so on:
        # 9-18 s of the driver's planning per release over the sample traces, against none in this order.
        for df in reversed(self.cached):
            df.unpersist()


def load(spark: SparkSession, corpus: Path) -> DataFrame:
    """The corpus's rows; :class:`spark_analysis.layout.LayoutError` for a corpus of another layout (before Spark
    reads it: an older corpus would fail deep in the job on a missing column, or mine without the context it lacks)."""
    check_layout(corpus)
    events = spark.read.parquet(str(events_dir(corpus)))
    # a corpus without input.json (put together by hand: check_layout lets it through) written before the layout's
    # last move column (moved_assigned_gen, h19-agree) reads as one where no moved member brought a last
    # assignment's generation, as the job read it then
    if "moved_assigned_gen" not in events.columns:
        events = events.withColumn("moved_assigned_gen", F.lit(None).cast("long"))
    # ... and before layout 4's pending_revocation: as one where no KIP-848 member assignment kept its partitions
    if "pending_revocation" not in events.columns:
        events = events.withColumn("pending_revocation", F.lit(None).cast("boolean"))
    # ... and before layout 5's group_named: as one where no member named its group, so that the undecided rule
    # counts every group's removals for an old owner (it may leave undecided what the checker judges, never the
    # other way)
    if "group_named" not in events.columns:
        events = events.withColumn("group_named", F.lit(None).cast("boolean"))
    return events


# corpus columns no frame of the job reads (tests/spark_analysis/test_member_rows.py walks every plan for the cached
# corpus's readers): dropped before the repartition, so the scan skips them and neither the shuffle nor the cache nor
# group_generations' sort carries them. ``count`` is an offset entry's record count (layout); the rules read the
# offsets themselves (minOffset, maxOffset). member_rows drops it too (ownership.NOT_READ), for callers without plan.
CORPUS_NOT_READ = ("count",)
# The corpus columns filled by few kinds of event, packed into one struct (spark_analysis.packing) before the
# repartition: the coordinator's (``state``, ``members``, ``member_count``, ``detail`` of its events; ``reason`` of
# a removal, or of a member's shutdown), the configuration a member says once (``subscription`` on a join,
# ``auto_offset_reset``, ``enable_auto_commit``, ``auto_commit_interval_ms`` on its startup), ``error`` of a failed
# commit or sync, ``commits_shown`` of a client-log file that says whether it logs commits, and the five columns a
# moved member brings to its new group (layout). Each was null on 96.7-100% of the rows at 1M and cost about 4
# bytes a row in the cache for its null positions alone (docs/benchmarks-spark.md, h25-ab); packed, those sixteen
# cost one null position a row, and one 8-byte slot, not sixteen, in the repartition's shuffle rows and the sort of
# group_generations' window. Not ``instance_id`` (a static member's every event: 29% of the rows at 1M). Since
# layout 4 also ``pending_revocation``, on a KIP-848 member assignment's rows only.
CORPUS_PACKED = ("members", "subscription", "reason", "detail", "error", "member_count", "state",
                 "auto_offset_reset", "enable_auto_commit", "auto_commit_interval_ms", "commits_shown",
                 "moved_from", "moved_generation", "moved_generations", "moved_revoked", "moved_assigned_gen",
                 "pending_revocation")


def _trace_sets(corpus: Path) -> TraceSets:
    """What of the corpus the checker reads as one trace (``ownership.TraceSets``), from ``input.json``: the labels
    of its runs when it holds several (``runs``: ``corpus --from a/ b/``, whose every group is named ``GROUP @
    RUN``; none for a corpus of one run, whose groups carry no run, or without input.json), and whether its groups
    carry a set's prefix (``group_prefix``, written by ``corpus.from_traces`` only when given one). input.json is
    read here once more (load read it for check_layout; a small file); private, as it builds no frame
    (tests/spark_analysis/test_bench_profile.py)."""
    info = read_input(corpus)
    labels = tuple(dict.fromkeys(r["run"] for r in info.get("runs") or ()))
    return TraceSets(labels if len(labels) > 1 else (), bool(info.get("group_prefix")))


def plan(spark: SparkSession, corpus: Path, config: MineConfig = MineConfig()) -> Plan:
    cached: list[DataFrame] = []
    origins: list[DataFrame] = []
    level = storage_level(spark)
    # before the first repartition: every later stage keeps the corpus's partition count
    partitions_from = fit_partitions(spark, part_files(corpus))

    def keep(df: DataFrame, packed: Sequence[str] = (), origin: DataFrame | None = None) -> DataFrame:
        """Cache a frame read by more than one branch of the job (else each branch recomputes its windows).

        ``packed``: the sparse columns of ``origin`` that ``df`` holds packed in one struct (spark_analysis.packing):
        ``df`` is cached so, and the frame returned unpacks them, so that its readers see ``origin``'s columns."""
        cached.append(df.persist(level))
        origins.append(origin if origin is not None else df)
        return unpack(cached[-1], packed, origin.columns) if origin is not None else cached[-1]

    read = load(spark, corpus).drop(*CORPUS_NOT_READ)
    events = keep(inv.group_generations(pack(read, CORPUS_PACKED).repartition("group")), CORPUS_PACKED, read)
    # member_id: read by member_rows' own windows (mid_ff), then by no reader of the rows here -- the undecided rule
    # reads the member ids from the corpus (invariants.named_ids), with the client-log lines the rows drop -- so not
    # cached (the benchmark's core, which has no such lines, reads them from its rows: invariants.overlaps)
    member = member_rows(events, config.default_protocol).drop("member_id")
    rows = keep(pack(member, ROWS_PACKED), ROWS_PACKED, member)
    iv = keep(intervals(rows))
    # what the checker reads as one trace: a run of a corpus of several (check a/ b/ checks each alone)
    sets = _trace_sets(corpus)
    ov = inv.judged_overlaps(iv, rows, inv.removals(events), config.skew_ms, keep, inv.named_ids(events, sets=sets),
                             sets=sets)
    found = (inv.overlap_findings(ov)
             .unionByName(co.same_generation_overlaps(ov, rows))
             .unionByName(inv.revoked_then_assigned(rows))
             .unionByName(inv.unowned(rows))
             .unionByName(inv.stale_commits(rows, events))
             .unionByName(inv.generation_down(rows))
             .unionByName(rj.rejected_generations(rows, iv))
             .unionByName(inv.eager_not_revoked(rows, iv)))
    off = keep(dl.offsets(rows))  # read by three rules, no-gap's four branches, the handoffs and the unchecked counts
    # each ownership's number and last position: no-gap and the handoffs both read them
    own = keep(dl.ownerships(off, iv))
    # the first polls, cached by no_gap: its findings, the handoffs and the unchecked counts read them
    gaps, first_polls = dl.no_gap(off, rows, iv, own, broker=dl.broker_commits(events), keep=keep)
    found = found.unionByName(dl.monotonic(off)).unionByName(dl.not_ahead(off)).unionByName(gaps)
    found = found.unionByName(mb.unsubscribed(rows)).unionByName(mb.revoked_came_back(rows)) \
        .unionByName(mb.static_rejoins(events)).unionByName(ca.stored_twice(events)) \
        .unionByName(ca.held_twice(events))
    converged, converges_unchecked = cv.converges(events, config.default_protocol, keep)
    found = found.unionByName(converged)
    return Plan(events, rows, found, wf.malformed(events, rows), rb.rebalances(events), keep(rb.pauses(rows)),
                rb.moves(rows), dl.unchecked_counts(first_polls, off).unionByName(converges_unchecked)
                .unionByName(mb.no_coordinator(events))
                .unionByName(inv.undecided_overlaps(ov), allowMissingColumns=True)
                .unionByName(nt.counts(events, rows, first_polls, config.default_protocol, sets), allowMissingColumns=True),
                cached,
                handoffs=hd.handoffs(off, own, rows, first_polls),
                partitions_from=partitions_from, origins=origins)


def shuffles(*dfs: DataFrame) -> dict[str, int]:
    """Shuffles and broadcasts in the physical plans of ``dfs`` (the findings and the handoffs: the job's
    two big plans; the analytics' small plans read the same cached frames).

    A plan prints each cached relation's own plan under every scan of it; a cached relation is computed
    once, so its plan is counted once over all ``dfs`` (the corpus's one repartition by group is in the
    first). ``shuffles`` is every hash exchange so counted, the repartition included.
    """
    hashed = broadcast = 0
    seen: set[str] = set()
    for df in dfs:
        lines = df._jdf.queryExecution().executedPlan().toString().splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            depth = len(line) - len(line.lstrip(" :+-"))
            if "InMemoryRelation" in line:
                end = i + 1
                while end < len(lines) and len(lines[end]) - len(lines[end].lstrip(" :+-")) > depth:
                    end += 1
                key = re.sub(r"#\d+|plan_id=\d+", "", "\n".join(x[depth:] for x in lines[i:end]))
                if key in seen:
                    i = end  # this cached relation's plan was counted already
                    continue
                seen.add(key)
            elif "BroadcastExchange" in line:
                broadcast += 1
            elif "Exchange " in line and "ReusedExchange" not in line:
                hashed += 1
            i += 1
    return {"shuffles": hashed, "broadcasts": broadcast}


class Progress:
    """Prints Spark's stage progress to stderr every few seconds while a job runs, and a line saying so when no
    stage runs: between Spark's jobs the driver plans (mine.plan's analysis of its frames, each action's
    optimization and code generation), which on a large plan takes tens of seconds with nothing else to show."""

    def __init__(self, spark: SparkSession, say: Callable[[str], None] | None, every_s: float = 3.0) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.say = say
        self.every_s = every_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Progress:
        if self.say is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()

    def _loop(self) -> None:
        assert self.say is not None
        started = time.monotonic()
        while not self.stop.wait(self.every_s):
            parts = []
            for sid in self.tracker.getActiveStageIds():
                info = self.tracker.getStageInfo(sid)
                if info is not None:
                    parts.append(f"stage {sid}: {info.numCompletedTasks}/{info.numTasks} tasks")
            doing = "; ".join(parts) if parts else "no stage running: the driver is planning"
            self.say(f"mine: {time.monotonic() - started:.0f} s, {doing}")


def _finding_json(row: Any) -> dict[str, Any]:
    return {"group": row["group"], "invariant": row["invariant"], "severity": row["severity"],
            "members": list(row["members"]), "partitions": [{"topic": p["topic"], "partition": p["partition"]}
                                                            for p in row["partitions"]],
            "window": [row["t0"], row["t1"]], "evidence": list(row["evidence"]), "occurrences": row["occurrences"],
            "message": row["message"]}


def run(spark: SparkSession, corpus: Path, out: Path | None = None, config: MineConfig = MineConfig(),
        progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Execute the job; write ``out/violations.parquet`` (every finding) when ``out`` is given.

    Returns only Python data: when it returns, the job's DataFrames are unreachable, and they are collected
    then, so that a process which runs the job again (a notebook, the benchmark's rounds) does not keep every
    earlier run's plans on the driver. py4j's ``JavaObject`` caches each method it called as a ``JavaMember``
    that refers back to it: every DataFrame, Column and plan object is in a reference cycle, and its JVM side
    (the Dataset, its QueryExecution, the plans of the cached frames it read) stays held by the gateway until
    Python's cyclic collector runs, which in a process of many long-lived objects is rarely (docs/mining-internals.md,
    "The driver's heap").
    """
    try:
        with partitions_kept(spark):  # a count fitted to this corpus is this run's; the next run fits its own
            return _run(spark, corpus, out, config, progress)
    finally:
        gc.collect()


@dataclass(frozen=True)
class Collected:
    """What :func:`collect` brings back to the driver for the report (``_run`` renders it): typed fields, so that
    mypy checks each reader of them."""
    counts: Row  # events (rows of part 0), rows, groups
    bad: list[dict[str, Any]]  # wellformed.summary: per group and kind, a count and the first example
    per_minute: list[dict[str, Any]]
    storms: list[dict[str, Any]]
    pauses: list[Row]  # the pauses' summary statistics: count, min, 50%, max
    pause_top: list[dict[str, Any]]
    pause_hist: list[dict[str, Any]]
    moved: int
    unchecked_rows: list[dict[str, Any]]
    rb_total: int
    delivery: dict[str, Any] | None  # handoff.summary, when the plan has the handoffs


def collect(p: Plan, config: MineConfig) -> Collected:
    """The report's counts, summaries and analytics, collected from the plan's frames (``mine.run`` calls it after
    the findings are written; the benchmark's profile runs it as a part of its own)."""
    # every event has exactly one row with part 0 (layout): counting those needs no distinct aggregation
    counts = p.events.agg(F.count(F.when(F.col("part") == 0, 1)).alias("events"), F.count(F.lit(1)).alias("rows"),
                          F.countDistinct("group").alias("groups")).collect()[0]
    bad = [r.asDict(recursive=True) for r in wf.summary(p.malformed).collect()]
    rebalances = p.rebalances.persist()
    per_minute = [r.asDict() for r in rb.per_minute(rebalances).orderBy("group", "minute").collect()]
    storms = [r.asDict() for r in rb.storms(rebalances, config.storm_window_ms, config.storm_threshold)
              .orderBy("group", "window_start").collect()]
    pauses = p.pauses.select("pause_ms").summary("count", "min", "50%", "max").collect()
    # ties broken by the pause's own columns: a fleet of copies has many equal pauses, and the 20 listed
    # (and their order) must not depend on how the partitions happened to be read
    pause_top = [r.asDict() for r in p.pauses.orderBy(F.desc("pause_ms"), "group", "member", "start", "end",
                                                      "generation").limit(20).collect()]
    pause_hist = [r.asDict() for r in p.pauses.groupBy(
        (F.floor(F.col("pause_ms") / 1000) * 1000).alias("bucket_ms")).count().orderBy("bucket_ms").collect()]
    moved = p.moves.count()
    unchecked_rows = sorted((r.asDict() for r in p.unchecked.collect()),
                            key=lambda r: (r["group"], r["what"], r["policy"] or ""))
    rb_total = rebalances.count()
    delivery = hd.summary(p.handoffs, config.max_examples) if p.handoffs is not None else None
    rebalances.unpersist()
    return Collected(counts=counts, bad=bad, per_minute=per_minute, storms=storms, pauses=pauses, pause_top=pause_top,
                     pause_hist=pause_hist, moved=moved, unchecked_rows=unchecked_rows, rb_total=rb_total,
                     delivery=delivery)


def _run(spark: SparkSession, corpus: Path, out: Path | None, config: MineConfig,
         progress: Callable[[str], None] | None) -> dict[str, Any]:
    started = time.monotonic()
    with Progress(spark, progress):
        p = plan(spark, corpus, config)
        if out is not None:
            p.findings.write.mode("overwrite").parquet(str(out / "violations.parquet"))
            found_df = spark.read.parquet(str(out / "violations.parquet"))
        else:
            found_df = p.findings
        found = [_finding_json(r) for r in found_df.collect()]
        n_shuffles = shuffles(p.findings, *([p.handoffs] if p.handoffs is not None else []))
        c = collect(p, config)
    p.release()
    counts, unchecked_rows, delivery = c.counts, c.unchecked_rows, c.delivery
    found.sort(key=lambda f: (f["severity"] != inv.VIOLATION, f["group"], f["window"][0], f["invariant"],
                              f["members"], [(t["topic"], t["partition"]) for t in f["partitions"]]))
    violations = [f for f in found if f["severity"] == inv.VIOLATION]
    # input.json read a second time (plan's load read it for check_layout): a small file, once a job. Kept by plan
    # instead, mine.plan would call check_layout itself (a call benchmarks/bench_spark.py's PLAN_UNWRAPPED must list,
    # tests/spark_analysis/test_bench_profile.py) or take the dict down through load, whose check a caller could then
    # skip (h30-left)
    info = read_input(corpus)
    per_group = Counter(f["group"] for f in violations)
    report: dict[str, Any] = {
        "tool": "groupspec mine",
        "verdict": "violation" if violations else ("warning" if found else "held"),
        "violations": violations,
        "warnings": [f for f in found if f["severity"] != inv.VIOLATION],
        "finding_counts": dict(sorted(Counter(f["invariant"] for f in found).items())),
        "covered": list(COVERED),
        "not_covered": [{"invariant": k, "reason": v} for k, v in NOT_COVERED.items()],
        "measured": list(MEASURED),
        "unchecked": inv.undecided_notes(unchecked_rows) + mb.unchecked(unchecked_rows, counts["groups"])
        + dl.unchecked(unchecked_rows) + cv.unchecked(unchecked_rows) + nt.unchecked(unchecked_rows) + (
            handoff_notes(delivery["handoffs"], delivery["handoffs_unmeasured"]) if delivery is not None else []),
        "delivery": delivery,
        "unchecked_per_group": unchecked_rows,
        "input": {"events": counts["events"], "rows": counts["rows"], "groups": counts["groups"],
                  "lines": info.get("lines"), "files": info.get("files"),
                  "malformed": dict(info.get("skipped", {})),
                  "malformed_per_file": info.get("skipped_per_file", {}),
                  "malformed_examples": info.get("skipped_examples", []),
                  "malformed_sequences": dict(sorted(Counter({}).items()))},
        "wellformed": sorted(({"group": b["group"], "kind": b["kind"], "count": b["count"],
                               "first": b["first"]["where"]} for b in c.bad), key=lambda b: (b["group"], b["kind"])),
        "analytics": {
            "rebalances": c.rb_total,
            "rebalances_per_minute": c.per_minute,
            "storms": c.storms,
            "partitions_moved": c.moved,
            "pause_summary": pause_summary(c.pauses),
            "longest_pauses": c.pause_top,
            "pause_histogram": c.pause_hist,
            "top_groups": [{"group": g, "violations": n} for g, n in per_group.most_common(20)],
        },
        "spark": {"master": spark.sparkContext.master, "version": spark.version,
                  "shuffle_partitions": int(spark.conf.get("spark.sql.shuffle.partitions")),
                  "shuffle_partitions_from": p.partitions_from, **n_shuffles,
                  "seconds": round(time.monotonic() - started, 3)},
        "config": asdict(config),
    }
    seq_counts: Counter[str] = Counter()
    for b in report["wellformed"]:
        seq_counts[b["kind"]] += b["count"]
    report["input"]["malformed_sequences"] = dict(sorted(seq_counts.items()))
    truth = read_truth(corpus)
    if truth is not None:
        report["truth"] = score(truth, {f["group"] for f in violations})
    return report


def pause_summary(rows: list[Row]) -> dict[str, int | None]:
    """The pauses' count, min, median and max in ms as numbers (null when there is no pause).

    ``DataFrame.summary`` gives every statistic as a string, whatever the column's type; mine.json says
    numbers, so that a reader compares them as numbers ("9061" < "20146" is false as strings)."""
    return {r["summary"]: None if r["pause_ms"] is None else int(float(r["pause_ms"])) for r in rows}


def score(truth: dict[str, Any], flagged: set[str]) -> dict[str, Any]:
    """Recall over the mutant groups the model's monitor flagged with an invariant the job judges (``COVERED``);
    precision over the clean groups (no mutant, nothing flagged). A mutant group the monitor flagged only with
    invariants the job does not judge (``NOT_COVERED``: properties of one assignment such as ``balanced``, which
    `groupspec assign` judges, and what no trace carries) is not counted as missed but listed apart with them: no
    trace can show it, so counting it would make recall say the job missed what it was never given."""
    entries = truth["truth"]
    covered = set(COVERED)
    flagged_by_monitor = {g for g, t in entries.items() if t["mutant"] and t["monitor"]}
    target = {g for g in flagged_by_monitor if covered & set(entries[g]["monitor"])}
    beyond = sorted(flagged_by_monitor - target)
    clean = {g for g, t in entries.items() if not t["mutant"] and not t["monitor"]}
    caught = target & flagged
    false = clean & flagged
    return {"mutant_groups_flagged_by_monitor": len(flagged_by_monitor), "judged": len(target),
            "caught": len(caught), "recall": (len(caught) / len(target)) if target else None,
            "missed": sorted(target - caught)[:50],
            "flagged_only_beyond_traces": len(beyond),
            "beyond_traces": {g: entries[g]["monitor"] for g in beyond[:50]},
            "clean_groups": len(clean), "clean_flagged": sorted(false)[:50],
            "precision_clean": (1 - len(false) / len(clean)) if clean else None,
            "mutant_groups": sum(1 for t in entries.values() if t["mutant"]),
            "flagged_groups": len(flagged)}
