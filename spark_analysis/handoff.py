"""The measure ``handoff-duplicates`` as Spark columns: the records a partition's new owner consumed again.

The rule is :mod:`traces.delivery`'s (``DeliveryChecks._handoff_assigned`` / ``_start_handoff`` /
``_close_handoff``): when a member is assigned a partition it did not own, the handoff's *source*
is another member still holding it (a zombie, a late revoker: the first of them to have been
assigned it), else the partition's last release in the group (any member's, the new owner's own
included: eager rebalancing hands a partition back to its owner). At the new owner's first poll of
the ownership the handoff starts: the previous position is the source's position then (a holder)
or at its release; unknown, the handoff is not measured. The duplicates are the offsets the new
owner consumed in ``[its first offset, the previous position)``, counted when it lets the partition
go (or its trace ends): by then a zombie source may have consumed further, which counts too. Each
handoff with duplicates names its cause (:data:`traces.delivery.CAUSES`).

Sizes. Every frame here is keyed by ``(group, topic, partition)`` first, so it lives in the group
partitioning the job made once (no shuffle: the one exchange left is of a few auto-commit rows per
member, :func:`_auto`'s union). What one partition of one group needs:

- the release a new ownership starts from is the last release before it in a window over the
  partition's intervals and releases in order (no range join: one sort of the partition's
  intervals, two rows per interval, made by one explode of each interval: a union of two selects
  loses the group partitioning, and every join after the window shuffled again);
- a release's position is its ownership's last position (one aggregate per ownership);
- only a new ownership that began while another member still held the partition (rare: zombies,
  late revokes) needs that holder's position at a later moment: those few are range-joined with the
  holder's polls of that one ownership. The first version range-joined every handoff with every poll
  of the partition and ran out of memory; this one's joins grow with handoffs, not with polls.

The driver matters too: the inputs are deep plans, referred to many times here, and analysing that
tree exhausted the driver's heap in the first version. The inputs (ownerships, first polls) are now
cached by mine.plan and read as they are; the handoffs themselves, which every branch of
:func:`_measure` reads, are cut to one leaf (:func:`_cut`, a lazy local checkpoint that keeps the
group partitioning) and computed once. Measured at 1M (docs/benchmarks-spark.md, h25-handoff): planning
mine.plan holds 240 MB of the driver's heap with that cut, 510 MB without it.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_analysis.delivery import first_trace_rows
from spark_analysis.ownership import COMMITTED, STARTUP, UNB
from traces.delivery import CAUSES
from traces.state import UNKNOWN_POSITION

TP_KEY = ["group", "topic", "partition"]
OWN_KEY = ["group", "member", "topic", "partition", "ac"]


def _cut(df: DataFrame) -> DataFrame:
    """``df`` with its logical plan cut off (a lazy local checkpoint, kept in the group partitioning).

    Used once, for the handoffs that :func:`_measure` reads in four branches: each would compute their window and
    joins again, and each would carry their plan, itself over the deep plans of the cached inputs (analysing such
    trees took the driver's memory in the first version: an OutOfMemoryError in the planner, not in the executors).
    The first version cut its inputs too; they are cached now (mine.plan), and a checkpoint of a cached frame copies
    every row of it again."""
    return df.localCheckpoint(eager=False)


def _known(c: Column) -> Column:
    return c.isNotNull() & (c != F.lit(UNKNOWN_POSITION))


def _auto(rows: DataFrame) -> DataFrame:
    """Per member, the rows where its ``Member.auto_commit`` may change: ``enable_auto_commit`` fields, and its
    first callback-trace row (:func:`spark_analysis.delivery.first_trace_rows`) when that file's commits are not
    shown (VerifiableConsumer with auto-commit)."""
    first = first_trace_rows(rows)
    # only where the value changes: a writer that repeats it on every event must not make this grow with events
    said = rows.filter(F.col("context.enable_auto_commit").isNotNull() & (F.col("part") == 0)).select(
        "group", "member", "seq", F.col("context.enable_auto_commit").alias("v"), F.lit(1).alias("explicit"))
    said = said.withColumn("was", F.lag("v").over(Window.partitionBy("group", "member").orderBy("seq"))) \
        .filter(~F.col("v").eqNullSafe(F.col("was"))).drop("was")
    inferred = first.filter(F.col("j.s") == False).select(  # noqa: E712 (a column comparison)
        "group", "member", F.col("j.seq").alias("seq"), F.lit(True).alias("v"), F.lit(0).alias("explicit"))
    # auto.commit.interval.ms, for the cause's words (explicit 2; the value in "ms")
    ms = rows.filter((F.col("context.auto_commit_interval_ms") >= 0) & (F.col("part") == 0)).select(
        "group", "member", "seq", F.col("context.auto_commit_interval_ms").alias("ms"))
    ms = ms.withColumn("was", F.lag("ms").over(Window.partitionBy("group", "member").orderBy("seq"))) \
        .filter(~F.col("ms").eqNullSafe(F.col("was"))).drop("was") \
        .select("group", "member", "seq", F.lit(None).cast("boolean").alias("v"), F.lit(2).alias("explicit"), "ms")
    return said.unionByName(inferred).withColumn("ms", F.lit(None).cast("long")).unionByName(ms)


def _auto_at(probes: DataFrame, auto: DataFrame, key: list[str], who: str, at: str) -> DataFrame:
    """Per probe (``key``) that ``auto`` has a row for by then: member ``who``'s auto-commit at row ``at`` (the
    checker's ``Member.auto_commit``: the last ``enable_auto_commit`` said, else True from its first non-showing
    callback-trace row on), and its ``auto.commit.interval.ms``; the caller joins it to the probes."""
    a = auto.select(F.col("group").alias("a_group"), F.col("member").alias("a_member"), F.col("seq").alias("a_seq"),
                    "v", "explicit", "ms")
    k = probes.select(*key, who, at)
    j = k.join(a, (k["group"] == a["a_group"]) & (k[who] == a["a_member"]) & (a["a_seq"] <= k[at]), "inner")
    # the last said value, by its row: one per seq and member (part 0 only), so max_by has no ties, and its long
    # key makes this a hash aggregate (the largest struct of (a_seq, v) was a sort aggregate)
    said = F.max_by(F.col("v"), F.when(F.col("explicit") == 1, F.col("a_seq")))
    inferred = F.max(F.when(F.col("explicit") == 0, F.col("v")))
    interval = F.max_by(F.col("ms"), F.when(F.col("explicit") == 2, F.col("a_seq")))
    return j.groupBy(*key).agg(F.coalesce(said, inferred).alias("auto"), interval.alias("interval_ms"))


def handoffs(off: DataFrame, own: DataFrame, rows: DataFrame, first_polls: DataFrame) -> DataFrame:
    """One row per handoff whose new owner polled: ``group, topic, partition, previous, new, ts, start,
    previous_position, committed, duplicates, cause, detail, evidence, measured``.

    ``off``: :func:`spark_analysis.delivery.offsets`; ``own``: its ownership intervals numbered
    (:func:`spark_analysis.delivery.ownerships`, the frame no-gap reads too); ``first_polls``: the first polls of
    :func:`spark_analysis.delivery.no_gap` with the committed offset the checker judged them on. mine.plan caches all
    three, so they are read here as they are (a checkpoint of them would copy every ownership and first poll again).
    """
    polls = off.filter(F.col("polled"))
    ivn = own
    # the source at each assignment: a holder (an interval open across it), else the last release before it. Each
    # interval gives two rows of one window, its release (none at eof) and its start, made by one explode of the
    # interval: a Generate keeps the group partitioning of the cached intervals, where a union of two selects of
    # them does not (Spark 4.0's UnionExec reports no partitioning), and the window's exchange by (group, topic,
    # partition) then made every frame joined to the handoffs, all partitioned by group, shuffle again
    wtp = Window.partitionBy(*TP_KEY).orderBy("at", "kind_order")
    rel = F.struct(F.col("member").alias("h"), F.col("end_kind").alias("kind"), F.col("end_where").alias("where"),
                   F.col("P").alias("pos"), F.col("start_seq").alias("h_start"), F.col("end_seq").alias("h_end"),
                   F.col("next_start").alias("h_next"))
    release = F.when(F.col("end_kind") != "eof", F.struct(
        F.col("end_seq").alias("at"), F.lit(0).alias("kind_order"), rel.alias("rel"),
        F.lit(None).cast("string").alias("member"), F.lit(None).cast("long").alias("end_seq"),
        F.lit(None).cast("int").alias("ac")))
    start = F.struct(F.col("start_seq").alias("at"), F.lit(1).alias("kind_order"),
                     F.lit(None).cast(ivn.select(rel.alias("r")).schema["r"].dataType).alias("rel"),
                     F.col("member").alias("member"), F.col("end_seq").alias("end_seq"), F.col("ac").alias("ac"))
    both = ivn.select(*TP_KEY, F.explode(F.array(release, start)).alias("e")).filter(F.col("e").isNotNull()) \
        .select(*TP_KEY, "e.*") \
        .withColumn("open_before", F.max(F.when(F.col("kind_order") == 1, F.col("end_seq")))
                    .over(wtp.rowsBetween(UNB, -1))) \
        .withColumn("last_rel", F.last("rel", True).over(wtp.rowsBetween(UNB, -1)))
    assigned = both.filter(F.col("kind_order") == 1).select(
        *TP_KEY, "member", "ac", F.col("at").alias("start_seq"), "end_seq", "last_rel",
        (F.col("open_before") > F.col("at")).alias("maybe_held"))
    # the handoffs that start: the ownership's first poll, with the committed offset no-gap judged it on
    fp = first_polls.select("group", "member", "topic", "partition", "ac", F.col("seq").alias("f"),
                            F.col("timestamp").alias("ts"), F.col("low").alias("start"), "committed",
                            F.col("w0").alias("w"))
    h = assigned.join(fp, ["group", "member", "topic", "partition", "ac"], "inner")
    # holders at the assignment: intervals of other members open across it (only where one may be)
    maybe = h.filter(F.col("maybe_held")).select(*TP_KEY, "member", "ac", "start_seq")
    other = ivn.select(*[F.col(c).alias("o_" + c) for c in ("group", "topic", "partition", "member", "start_seq",
                                                            "end_seq", "ac", "next_start")])
    held = maybe.join(other, (maybe["group"] == other["o_group"]) & (maybe["topic"] == other["o_topic"])
                      & (maybe["partition"] == other["o_partition"]) & (other["o_member"] != maybe["member"])
                      & (other["o_start_seq"] < maybe["start_seq"]) & (maybe["start_seq"] < other["o_end_seq"]),
                      "inner") \
        .groupBy(*TP_KEY, "member", "ac").agg(
            F.min_by(F.struct(F.col("o_member").alias("h"), F.col("o_ac").alias("h_ac"),
                              F.col("o_start_seq").alias("h_start"), F.col("o_next_start").alias("h_next")),
                     F.col("o_start_seq")).alias("holder"))
    # checkpointed: _measure reads the handoffs in four branches (the holders' polls, the source's failed commits,
    # its auto-commit, the joins of those back), and each would compute the window and the joins above again
    h = _cut(h.join(held, [*TP_KEY, "member", "ac"], "left"))
    return _measure(h, polls, rows, ivn)


def _measure(h: DataFrame, polls: DataFrame, rows: DataFrame, ivn: DataFrame) -> DataFrame:
    """Previous position, cause and duplicates of each handoff (``DeliveryChecks._start_handoff`` / ``_close_handoff``).

    Each branch reads the handoffs ``h`` (one row per ownership, :data:`OWN_KEY`) and gives at most one row per
    handoff, and all of them are joined to ``h`` at the end: a branch that read ``h`` after another's join would
    compute that join again (a left join whose other side Spark cannot prove unique per key is not dropped, even
    when none of its columns is read)."""
    from_holder = F.col("holder").isNotNull()
    h = h.filter(from_holder | F.col("last_rel").isNotNull()).withColumn(
        "previous", F.when(from_holder, F.col("holder.h")).otherwise(F.col("last_rel.h")))
    # a holder's position at the first poll, and (a zombie) at the close: its polls of the ownership it held then.
    # The last poll is the one with the highest n_poll (it strictly increases along the ownership's polls, as
    # (seq, part) does): an int a hash aggregate takes, where the largest struct of (seq, part, position) was a
    # sort aggregate
    hp = polls.select(F.col("group").alias("p_group"), F.col("member").alias("p_member"),
                      F.col("topic").alias("p_topic"), F.col("partition").alias("p_partition"),
                      F.col("ac").alias("p_ac"), F.col("seq").alias("p_seq"), F.col("n_poll").alias("p_n"),
                      F.col("pos_after").alias("p_pos"))
    hk = h.filter(from_holder).select(*TP_KEY, "member", "ac", "f", F.col("end_seq").alias("close"),
                                      F.col("holder.h").alias("hh"), F.col("holder.h_ac").alias("h_ac"),
                                      F.col("holder.h_next").alias("h_next"))
    before_first = F.col("p_seq") < F.col("f")
    hj = hk.join(hp, (hk["group"] == hp["p_group"]) & (hk["topic"] == hp["p_topic"])
                 & (hk["partition"] == hp["p_partition"]) & (hk["hh"] == hp["p_member"]) & (hk["h_ac"] == hp["p_ac"])
                 & (hp["p_seq"] < hk["close"]), "inner") \
        .groupBy(*TP_KEY, "member", "ac", "f", "hh", "h_next").agg(
            F.max(F.when(before_first, F.col("p_seq"))).alias("held_seq"),
            F.max_by(F.col("p_pos"), F.when(before_first, F.col("p_n"))).alias("held_pos"),
            F.max_by(F.col("p_pos"), F.col("p_n")).alias("zombie_pos"))
    # the holder's position at the first poll is gone if it was assigned the partition again or restarted since:
    # its restarts, one row per member (few), where a join of the aggregate with them computed it a second time
    restarts = rows.filter(F.col("name") == STARTUP).groupBy("group", "member").agg(
        F.collect_list("seq").alias("restarts")).withColumnRenamed("member", "hh")
    hj = hj.join(restarts, ["group", "hh"], "left")
    gone = F.coalesce(F.exists(F.col("restarts"), lambda u: (u > F.col("held_seq")) & (u < F.col("f"))),
                      F.lit(False))
    hj = hj.select(*TP_KEY, "member", "ac", "zombie_pos", F.when(
        ~gone & (F.col("h_next").isNull() | (F.col("h_next") > F.col("f"))), F.col("held_pos")).alias("held_pos"))
    # a failed commit of the source (since its assignment, before the first poll; a release's only until the
    # source is assigned the partition again)
    failed = rows.filter((F.col("name") == COMMITTED) & (F.col("success") == False)  # noqa: E712
                         & F.col("topic").isNotNull() & F.col("offset").isNotNull()).select(
        F.col("group").alias("x_group"), F.col("member").alias("x_member"), F.col("topic").alias("x_topic"),
        F.col("partition").alias("x_partition"), F.col("seq").alias("x_seq"), F.col("offset").alias("x_offset"),
        F.coalesce(F.col("error"), F.lit("")).alias("x_error"))
    src_start = F.when(from_holder, F.col("holder.h_start")).otherwise(F.col("last_rel.h_start"))
    src_until = F.when(from_holder, F.col("f")).otherwise(F.least(F.col("f"), F.coalesce(F.col("last_rel.h_next"),
                                                                                          F.col("f"))))
    hs = h.select(*TP_KEY, "member", "ac", "previous", src_start.alias("s0"), src_until.alias("s1"))
    fx = hs.join(failed, (hs["group"] == failed["x_group"]) & (hs["topic"] == failed["x_topic"])
                 & (hs["partition"] == failed["x_partition"]) & (hs["previous"] == failed["x_member"])
                 & (failed["x_seq"] > hs["s0"]) & (failed["x_seq"] < hs["s1"]), "inner") \
        .groupBy(*TP_KEY, "member", "ac").agg(
            F.max(F.struct(F.col("x_seq").alias("s"), F.col("x_offset").alias("o"), F.col("x_error").alias("e")))
            .alias("failed"))
    # the source's auto-commit: at the first poll (a holder) or at its release
    auto = _auto_at(h.withColumn("auto_at", F.when(from_holder, F.col("f")).otherwise(F.col("last_rel.h_end"))),
                    _auto(rows), [*TP_KEY, "member", "ac"], "previous", "auto_at")
    # the new owner's position when it lets the partition go: its ownership's last
    mine = ivn.select(*TP_KEY, "member", "ac", F.col("P").alias("new_pos"))
    for side in (hj, fx, auto, mine):
        h = h.join(side, OWN_KEY, "left")
    return _classify(h)


def _classify(h: DataFrame) -> DataFrame:
    from_holder = F.col("holder").isNotNull()
    prev = F.when(from_holder, F.col("held_pos")).otherwise(F.col("last_rel.pos"))
    kind = F.when(from_holder, F.lit("held")).otherwise(F.col("last_rel.kind"))
    h = h.withColumn("prev", prev).withColumn("kind", kind)
    prev, kind, low, committed, failed = (F.col("prev"), F.col("kind"), F.col("start"), F.col("committed"),
                                          F.col("failed"))
    cause = (F.when(~(prev > low), F.lit(""))
             .when(kind.isin("killed", "eof", "crashed"), F.lit("crash"))
             .when(kind.isin("held", "lost"), F.lit("zombie"))
             .when(committed.isNotNull() & (committed >= prev), F.lit("rewind"))
             .when(failed.isNotNull() & (committed.isNull() | (failed["o"] > committed)), F.lit("commit-failed"))
             .when(F.coalesce(F.col("auto"), F.lit(False)), F.lit("auto-commit"))
             .when(kind == "revoked", F.lit("no-commit-on-revoke"))
             .when(kind == "shutdown", F.lit("no-commit-on-close"))
             .otherwise(F.lit("unknown")))
    h = h.withColumn("cause", cause)
    # counted at the close: a zombie holder's later polls count too (a holder's slot exists once it polled)
    zombie = from_holder & F.col("held_pos").isNotNull() & _known(F.col("zombie_pos")) \
        & (F.col("zombie_pos") > prev)
    pending = (prev > low) | (from_holder & F.col("held_pos").isNotNull())
    h = (h.withColumn("previous_position", F.when(zombie, F.col("zombie_pos")).otherwise(prev))
         .withColumn("cause", F.when(zombie & (F.col("cause") == ""), F.lit("zombie")).otherwise(F.col("cause"))))
    pp = F.col("previous_position")
    dup = F.when(pending & _known(F.col("new_pos")), F.greatest(F.least(F.col("new_pos"), pp) - low, F.lit(0))) \
        .otherwise(F.lit(0))
    causes = F.create_map(*[F.lit(x) for kv in sorted(CAUSES.items()) for x in kv])
    c = F.col("cause")
    detail = F.when(c == "", F.lit("")).otherwise(F.concat(
        causes[c],
        F.when(c == "commit-failed", F.format_string(" (offset %d: %s)", F.col("failed.o"),
                                                      F.when(F.col("failed.e") != "", F.col("failed.e"))
                                                      .otherwise(F.lit("no error given"))))
        .when((c == "auto-commit") & F.col("interval_ms").isNotNull(),
              F.format_string(" (auto.commit.interval.ms=%d)", F.col("interval_ms")))
        .otherwise(F.lit(""))))
    release_where = F.when(from_holder, F.concat(F.col("holder.h"), F.lit(" (still owning it)"))) \
        .otherwise(F.col("last_rel.where"))
    return h.select(*TP_KEY, "previous", F.col("member").alias("new"), "ts", "start",
                    F.col("previous_position"), "committed", dup.cast("long").alias("duplicates"), "cause",
                    detail.alias("detail"), F.array(release_where, F.col("w")).alias("evidence"),
                    _known(F.col("prev")).alias("measured"))


def summary(ho: DataFrame, max_examples: int) -> dict[str, Any]:
    """The report's ``delivery`` section, as the checker's ``DeliveryChecks.delivery_json`` writes it."""
    ho = ho.persist()  # four small results from one computation of the handoffs
    try:
        return _summary(ho, max_examples)
    finally:
        ho.unpersist()


def _summary(ho: DataFrame, max_examples: int) -> dict[str, Any]:
    measured = ho.filter(F.col("measured"))
    tot = ho.agg(F.sum(F.col("measured").cast("int")).alias("handoffs"),
                 F.sum((~F.col("measured")).cast("int")).alias("unmeasured"),
                 F.sum(F.when(F.col("measured") & (F.col("duplicates") > 0), 1).otherwise(0)).alias("with_dups"),
                 F.sum(F.when(F.col("measured"), F.col("duplicates")).otherwise(0)).alias("dups")).collect()[0]
    by_cause = {r["cause"]: r["d"] for r in measured.filter(F.col("duplicates") > 0).groupBy("cause")
                .agg(F.sum("duplicates").alias("d")).collect()}
    per_partition = [{"group": r["group"], "topic": r["topic"], "partition": r["partition"], "handoffs": r["n"],
                      "duplicates": r["d"]}
                     for r in measured.groupBy(*TP_KEY).agg(F.count(F.lit(1)).alias("n"),
                                                            F.sum("duplicates").alias("d"))
                     .orderBy(*TP_KEY).collect()]
    examples = [{"group": r["group"], "topic": r["topic"], "partition": r["partition"], "from": r["previous"],
                 "to": r["new"], "at": r["ts"], "start": r["start"], "previous_position": r["previous_position"],
                 "committed": r["committed"], "duplicates": r["duplicates"], "cause": r["cause"],
                 "detail": r["detail"], "evidence": list(r["evidence"])}
                for r in measured.filter(F.col("duplicates") > 0).orderBy("group", "ts", "topic", "partition", "new")
                .limit(max_examples).collect()]
    with_dups = tot["with_dups"] or 0
    return {
        "handoffs": tot["handoffs"] or 0,
        "handoffs_with_duplicates": with_dups,
        "handoffs_unmeasured": tot["unmeasured"] or 0,
        "duplicates": tot["dups"] or 0,
        "duplicates_by_cause": dict(sorted(by_cause.items())),
        "causes": {k: CAUSES[k] for k in sorted(by_cause)},
        "per_partition": per_partition,
        "handoff_examples": examples,
        "handoff_examples_truncated": with_dups > len(examples),
    }
