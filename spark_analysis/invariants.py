"""The checker's member-side invariants as Spark jobs: the same ids, findings and evidence.

Each function returns findings as rows of :data:`FINDING_COLUMNS` -- ``group``, ``invariant``,
``severity``, ``members`` (sorted), ``partitions`` (sorted ``{topic, partition}``), ``t0`` /
``t1`` (the window), ``evidence`` (``file:line``), ``occurrences``, ``message`` -- the fields of
the checker's :class:`traces.state.Finding`. The rules are the checker's (docs/check.md, "What is
checked, and how"); where the checker folds a run of the same violation into one finding
(consumption of one partition by one member until it is assigned it again; a member's generation
going down; a member's commits with one stale generation), so does the job, with the count in
``occurrences``.

Covered: ``single-owner`` and ``zombie-overlap`` (the zombie classification: lost, removed by the
coordinator, a generation behind, killed or ended; a zombie that consumed or committed the
partition after the new owner got it violates ``single-owner``), ``revoke-before-assign`` (both
orders), ``consume-owned-only``, ``commit-owned-only`` (unowned commits past the member's
position, and commits with a stale generation), ``eager-revoke-all`` (on assignment and on
joining), ``generation-monotonic`` (per member and file). docs/mining.md lists what is not (yet)
covered and why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_analysis.ownership import (
    ASSIGNED,
    COMMITTED,
    CONSUMED,
    JOINED,
    PREFIXED,
    RECORD_DATA,
    REMOVED,
    STARTUP,
    TP_WINDOW,
    UNB,
    UNF,
    TraceSets,
    commit_entry_ok,
    commit_ok,
    trace_set,
    where,
)
from traces import zombies
from traces.checker import undecided_note

UNDECIDED = "undecided-overlap"  # the unchecked rows' ``what`` of an overlap _unnamed_removal leaves undecided
FINDING_COLUMNS = ("group", "invariant", "severity", "members", "partitions", "t0", "t1", "evidence",
                   "occurrences", "message")
VIOLATION, WARNING = "violation", "warning"


def _tp(topic: str = "topic", partition: str = "partition") -> Column:
    return F.struct(F.col(topic).alias("topic"), F.col(partition).cast("int").alias("partition"))


def _label(topic: str = "topic", partition: str = "partition") -> Column:
    return F.concat_ws("-", F.col(topic), F.col(partition).cast("string"))


def labels(tps: Column) -> Column:
    """``t-0, t-1`` (the checker's ``tp_label`` list) from an array of ``{topic, partition}``, in its order."""
    return F.array_join(F.transform(tps, lambda x: F.concat_ws("-", x["topic"], x["partition"].cast("string"))),
                        ", ")


def _worded(template: str, fields: dict[str, Column]) -> Column:
    """One of :mod:`traces.zombies`' templates filled with columns (the checker fills it with strings)."""
    return zombies.fill(template, fields, F.lit, lambda pieces: F.concat(*pieces))


def finding(invariant: str | Column, severity: str, members: Column, partitions: Column, t0: Column, t1: Column,
            evidence: Column, message: Column, occurrences: Column | None = None) -> list[Column]:
    inv = F.lit(invariant) if isinstance(invariant, str) else invariant
    return [F.col("group"), inv.alias("invariant"), F.lit(severity).alias("severity"),
            F.array_sort(F.array_distinct(members)).alias("members"),
            F.array_sort(F.array_distinct(partitions)).alias("partitions"),
            F.least(t0, t1).cast("long").alias("t0"), F.greatest(t0, t1).cast("long").alias("t1"),
            evidence.alias("evidence"), (occurrences if occurrences is not None else F.lit(1)).cast("long")
            .alias("occurrences"), message.alias("message")]


# ------------------------------------------------------------------------------------------ overlaps


def overlaps(iv: DataFrame, rows: DataFrame, removed: DataFrame, skew_ms: int,
             keep: Callable[[DataFrame], DataFrame] = lambda df: df, named: DataFrame | None = None) -> DataFrame:
    """single-owner, zombie-overlap and revoke-before-assign (assigned before the revoke), judged per overlap
    (:func:`judged_overlaps`, then :func:`overlap_findings`)."""
    return overlap_findings(judged_overlaps(iv, rows, removed, skew_ms, keep, named))


def judged_overlaps(iv: DataFrame, rows: DataFrame, removed: DataFrame, skew_ms: int,
                    keep: Callable[[DataFrame], DataFrame] = lambda df: df,
                    named: DataFrame | None = None, sets: TraceSets = PREFIXED) -> DataFrame:
    """Every overlap with what judges it: ``new`` assigned a partition while ``old`` held it (old started
    before and had not let go). The checker's ``_zombie_reason`` and ``_unnamed_removal``, as columns.
    ``removed``: :func:`removals` of the corpus; ``named``: :func:`named_ids` of the corpus (with the same ``sets``)
    -- left out, of ``rows``, which lack the client-log lines a callback trace supersedes (the benchmark's core, whose
    generated corpus has no client logs); ``sets``: what of the corpus the checker reads as one trace (``mine._trace_sets``), each judged alone.
    """
    if named is None:
        named = named_ids(rows, moves=False, sets=sets)
    n = iv.alias("n")
    o = iv.alias("o")
    ov = n.join(o, (F.col("n.group") == F.col("o.group")) & (F.col("n.topic") == F.col("o.topic"))
                & (F.col("n.partition") == F.col("o.partition")) & (F.col("n.member") != F.col("o.member"))
                & (F.col("o.start_seq") < F.col("n.start_seq")) & (F.col("n.start_seq") < F.col("o.end.seq")))
    ov = ov.select(F.col("n.group").alias("group"), F.col("n.topic").alias("topic"),
                   F.col("n.partition").alias("partition"), F.col("o.member").alias("old"),
                   F.col("n.member").alias("new"), F.col("n.start_seq").alias("start_seq"),
                   F.col("n.start_ts").alias("start"), F.col("n.start_source").alias("new_source"),
                   F.col("n.start_where").alias("new_where"), F.col("n.start_gen").alias("new_gen"),
                   F.col("n.coop").alias("coop"), F.col("o.start_mid").alias("old_mid"),
                   F.col("o.member_first_ts").alias("old_first_ts"),
                   F.col("o.group_named").alias("old_group_named"), F.col("o.end").alias("end"),
                   F.col("o.end_part").alias("end_part"))
    ov = keep(ov)  # read three times below
    # removed by the coordinator: the latest removal of the old member id before the judgement
    key = ["group", "topic", "partition", "old", "new", "start_seq"]
    rem = (ov.join(removed, (ov["group"] == removed["r_group"]) & (ov["old_mid"] == removed["r_member_id"])
                   & (removed["r_seq"] < ov["end.seq"]), "inner")
           .groupBy(*[ov[k] for k in key]).agg(F.max_by(F.struct("r_ts", "r_reason", "r_where"), "r_seq")
                                                .alias("removal")))
    # what the old owner did with the partition after the new owner got it (consumed, committed). ``acts`` is
    # nearly every poll and commit of the corpus, the overlaps a few per group with one: the overlaps are
    # broadcast and the polls stream past them (a hash join), where a sort-merge join sorted every poll by member
    # and partition to find the few that match (most of this frame's cost, measured in docs/benchmarks-spark.md,
    # h20-core). The evidence text (``file:line``) is built only for the rows that matched.
    acts = rows.filter((F.col("name").isin(CONSUMED, RECORD_DATA) | commit_entry_ok()) & F.col("owned_before"))
    acts = acts.select(F.col("group").alias("a_group"), F.col("member").alias("a_member"),
                       F.col("topic").alias("a_topic"), F.col("partition").alias("a_partition"),
                       F.col("seq").alias("a_seq"), F.col("timestamp").alias("a_ts"),
                       F.col("source").alias("a_source"), F.col("line").alias("a_line"),
                       (F.col("name") == COMMITTED).alias("a_commit"))
    judged = F.broadcast(ov)
    tol = F.when(F.col("a_source") != judged["new_source"], F.lit(skew_ms)).otherwise(F.lit(0))
    act = (acts.join(judged, (judged["group"] == acts["a_group"]) & (judged["old"] == acts["a_member"])
                     & (judged["topic"] == acts["a_topic"]) & (judged["partition"] == acts["a_partition"])
                     & (acts["a_seq"] > judged["start_seq"]) & (acts["a_seq"] < judged["end.seq"])
                     & (acts["a_ts"] > judged["start"] + tol), "inner")
           .groupBy(*[judged[k] for k in key])
           .agg(F.min_by(F.struct(F.when(F.col("a_commit"), F.lit("committed")).otherwise(F.lit("consumed"))
                                  .alias("a_what"), where("a_source", "a_line").alias("a_where"), "a_ts"),
                         "a_seq").alias("activity")))
    ov = ov.join(rem, key, "left").join(act, key, "left")
    end = F.col("end")
    t_end = end["ts"]
    old_gen = end["gen"]
    by_gen = F.col("new_gen").isNotNull() & old_gen.isNotNull()
    # why the old owner was a zombie (traces.zombies.REASONS' keys), null for a member in good standing
    removal = F.col("removal")
    why = (F.when(end["kind"] == "lost", F.lit("lost"))
           .when(removal["r_ts"].isNotNull() & (removal["r_ts"] <= F.col("start") + skew_ms), F.lit("removed"))
           .when(by_gen, F.when(old_gen < 0, F.lit("reset")).when(old_gen < F.col("new_gen"), F.lit("behind")))
           .when(end["kind"].isin("killed", "eof"), F.lit("ended")))
    tolerated = (end["source"] != F.col("new_source")) & (t_end - F.col("start") <= skew_ms)
    ov = ov.withColumn("why", why).withColumn("zombie", F.col("why").isNotNull()).withColumn("tolerated", tolerated)
    # The checker's _unnamed_removal: an overlap the generations do not decide, whose old owner carries no member
    # id, while the coordinator removed (not a leave) a member id no traced member has when the old owner lets go,
    # after the old owner's first event and by the assignment: the old owner may have been that member (a zombie) or
    # a late revoker. Undecidable: no finding, a partial unchecked note. "No traced member has it" is the checker's
    # known ids at its judgement (_judge runs when the old owner lets go): a member's id then (named_ids' spans) --
    # not one it had before it rejoined with another (another process's, but the checker no longer sees it), nor one
    # it names only later (it may be the old owner's own). The removals counted are those of the old owner's group
    # if it had named its group, else of every group (the checker: Member.group_explicit, the corpus's group_named,
    # the old owner's at its assignment: a member names its group anew only by a move, while it owns nothing). A
    # corpus of several runs (corpus --from a/ b/), or of several sets of traces with their groups prefixed
    # ("SET/group": corpus.from_traces' group_prefix), is judged run by run and set by set, as the checker judges each
    # (check a/ b/: a checker per run, traces.runs): ids and removals count within the set (ownership.trace_set), and
    # the seqs compared are of one stream (each run's restart at 1).
    open_ = ~F.col("zombie") & ~F.col("tolerated") & F.col("activity").isNull() & F.col("old_mid").isNull() & ~by_gen

    unnamed = removed.filter(F.col("r_reason") != "left").withColumn("r_set", trace_set(F.col("r_group"), sets))
    cands = ov.filter(open_).select(*key, "start", "old_first_ts", "old_group_named", "end")
    g = cands["group"]
    # null (a corpus without input.json, from before the column): not named, every group's removals -- the side
    # that leaves an overlap undecided rather than guess a violation
    every_group = ~F.coalesce(cands["old_group_named"], F.lit(False))
    pairs = cands.join(unnamed, ((g == unnamed["r_group"]) | (every_group & (unnamed["r_set"] == trace_set(g, sets))))
                       & (unnamed["r_ts"] >= F.coalesce(cands["old_first_ts"], F.lit(0)))
                       & (unnamed["r_ts"] <= cands["start"] + skew_ms), "inner")
    # the removed id, a member's at the judgement: the old owner's end event is read before it lets go (its
    # _context runs first), but a restart ends what it owned before it forgets the old member id (_startup)
    at, killed = pairs["end.seq"], pairs["end.kind"] == "killed"
    since = (named["k_from"] < at) | ((named["k_from"] == at) & ~killed)
    until = named["k_to"].isNull() | (named["k_to"] > at) | ((named["k_to"] == at) & killed)
    pairs = pairs.join(named, (pairs["r_set"] == named["k_set"]) & (pairs["r_member_id"] == named["k_member_id"])
                       & since & until, "left_anti")
    match = pairs.groupBy(*[pairs[k] for k in key]).agg(
        F.max_by(F.struct("r_member_id", "r_reason", "r_where"), "r_seq").alias("unnamed_removal"))
    # read twice: by the findings and by the unchecked rows
    return keep(ov.join(match, key, "left").withColumn("undecided", open_ & F.col("unnamed_removal").isNotNull()))


def ended_text(end: Column) -> Column:
    """How an ownership ended, in the checker's words (``_judge``'s ``ended``), from an interval's ``end``."""
    return (F.when(end["kind"] == "revoked", F.lit("revoked it")).when(end["kind"] == "lost", F.lit("lost it"))
            .when(end["kind"] == "shutdown", F.lit("shut down")).when(end["kind"] == "crashed", F.lit("crashed"))
            .when(end["kind"] == "killed", F.lit("was restarted"))
            .otherwise(F.lit("still owned it when its trace ended")))


def overlap_findings(ov: DataFrame) -> DataFrame:
    """The findings of :func:`judged_overlaps`: the checker's ``_judge``, one finding per overlap (plus
    revoke-before-assign)."""
    end = F.col("end")
    window_end = F.greatest(F.col("start"), end["ts"])
    members = F.array(F.col("old"), F.col("new"))
    tp = F.array(_tp())
    ended = ended_text(end)
    used = F.col("zombie") & F.col("activity").isNotNull()
    # the checker's words (traces.zombies), filled with columns: why the old owner was a zombie, then the finding
    fields = {"old": F.col("old"), "new": F.col("new"), "tp": _label(), "member_id": F.col("old_mid"),
              "reason": F.col("removal.r_reason"), "removed_where": F.col("removal.r_where"),
              "new_gen": F.col("new_gen").cast("string"), "old_gen": end["gen"].cast("string"), "ended": ended,
              "what": F.col("activity.a_what")}
    zombie: Column = F.lit(None).cast("string")
    for why, template in zombies.REASONS.items():
        zombie = F.when(F.col("why") == why, _worded(template, fields)).otherwise(zombie)
    fields["zombie"] = zombie
    # the checker's _judge, one finding per overlap (plus revoke-before-assign), built in one pass: each
    # overlap yields an array of at most two findings, exploded
    judged = F.when(used, F.struct(*finding(
        "single-owner", VIOLATION, members, tp, F.col("start"), F.greatest(window_end, F.col("activity.a_ts")),
        F.array(F.col("new_where"), F.col("activity.a_where"), end["where"]), _worded(zombies.USED, fields)))) \
        .when(F.col("zombie"), F.struct(*finding(
            "zombie-overlap", WARNING, members, tp, F.col("start"), window_end,
            F.array(F.col("new_where"), end["where"]), _worded(zombies.OVERLAP, fields)))) \
        .when(~F.col("tolerated") & ~F.col("undecided"), F.struct(*finding(
            "single-owner", VIOLATION, members, tp, F.col("start"), window_end,
            F.array(F.col("new_where"), end["where"]),
            F.format_string("%s was owned by both %s and %s for %d ms: %s was assigned it before %s %s", _label(),
                            F.col("old"), F.col("new"), window_end - F.col("start"), F.col("new"), F.col("old"),
                            ended))))
    rba = F.when(F.col("coop") & (end["kind"] == "revoked") & end["gen"].isNotNull()
                 & (end["gen"] == F.col("new_gen")), F.struct(*finding(
                     "revoke-before-assign", VIOLATION, members, tp, F.col("start"), window_end,
                     F.array(F.col("new_where"), end["where"]),
                     F.format_string("%s was assigned to %s in generation %d before %s revoked it in the same "
                                     "generation (KIP-429)", _label(), F.col("new"), F.col("new_gen"), F.col("old")))))
    out = ov.select(F.explode(F.filter(F.array(judged, rba), lambda x: x.isNotNull())).alias("f"))
    return out.select("f.*")


def named_ids(events: DataFrame, moves: bool = True, sets: TraceSets = PREFIXED) -> DataFrame:
    """When each member id was a member's, as the checker keeps ``Member.member_id``: from the member's event that
    names it (``k_from``, its ``seq``) to its next event that names one or restarts it (``k_to``; null: to the end),
    with the trace set (``k_set``, :func:`~spark_analysis.ownership.trace_set` of ``sets``). Read from every member
    event, client-log lines whose callbacks are traced elsewhere too (the checker's ``_context`` reads them before
    ``_callback_superseded``).
    A few rows per member; one sort of them inside the group partitions.

    A member that moved groups (``moves``: the corpus's ``moved_from``) keeps its id across the move, as the checker
    keeps its ``Member``: its last id in the group it left is its id until its first event in the new group that
    names one or restarts it (the carried id on its first row there, :mod:`spark_analysis.layout`, starts a span of
    its own), found in the new group's rows and broadcast to the old group (a few rows: one per moved member).
    ``moves`` False: the member rows (the benchmark's core), which carry ``moved_from`` in their context and whose
    generated corpus moves no member."""
    said = F.when(F.col("member_id") != "", F.col("member_id"))
    marked = said.isNotNull() | (F.col("name") == STARTUP)
    member = events.filter(F.col("member").isNotNull() & (F.col("part") == 0))
    wm = Window.partitionBy("group", "member").orderBy("seq")
    spans = [F.col("group"), F.col("member"), trace_set(F.col("group"), sets).alias("k_set"), said.alias("k_member_id"),
             F.col("seq").alias("k_from"), F.lead("seq").over(wm).alias("k_to")]
    if not moves:
        return member.filter(marked).select(*spans[2:]).filter(F.col("k_member_id").isNotNull())
    # the row that moved the member is its first in the new group (Checker._member moves a member once), a mark too
    first_mark = F.min(F.when(marked, F.col("seq"))).over(wm.rowsBetween(UNB, UNF))
    marks = member.filter(marked | F.col("moved_from").isNotNull()).select(
        *spans, F.col("moved_from"), first_mark.alias("first_mark"))
    left = marks.filter(F.col("moved_from").isNotNull()).select(F.col("moved_from").alias("group"), "member",
                                                                 F.col("first_mark").alias("left"))
    # in the old group none of the member's rows follow its move: its last span there is open (k_to null) until then
    named = marks.filter(F.col("k_member_id").isNotNull()).drop("moved_from", "first_mark")
    return named.join(F.broadcast(left), ["group", "member"], "left").select(
        "k_set", "k_member_id", "k_from", F.coalesce(F.col("k_to"), F.col("left")).alias("k_to"))


def removals(events: DataFrame) -> DataFrame:
    """The coordinator's member removals (``coordinator_member_removed``): group, member id, when."""
    return events.filter((F.col("name") == REMOVED) & F.col("member_id").isNotNull()).select(
        F.col("group").alias("r_group"), F.col("member_id").alias("r_member_id"), F.col("seq").alias("r_seq"),
        F.col("timestamp").alias("r_ts"), F.coalesce(F.col("reason"), F.lit("removed")).alias("r_reason"),
        where().alias("r_where"))


def undecided_notes(counts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The checker's partial ``single-owner`` note from the rows of :func:`undecided_overlaps` (``counts``: every
    unchecked row of the job), totalled over the groups, the first group's example (the checker's is the first it
    met in the merged stream; for one group the same)."""
    rows = sorted((c for c in counts if c["what"] == UNDECIDED), key=lambda c: c["group"])
    n = sum(c["n"] for c in rows)
    if not n:
        return []
    return [{"invariant": "single-owner", "reason": undecided_note(n, rows[0].get("detail")), "partial": True}]


def undecided_overlaps(ov: DataFrame) -> DataFrame:
    """Per group, the overlaps :func:`judged_overlaps` could not decide (``group, what, policy, n``, the unchecked
    rows' shape) with the first one as the checker words its example (``detail``; the checker judges an overlap when
    its old owner lets go, so the first is the earliest end; several at one end in the checker's order: a revoke's
    partitions as the event lists them, a shutdown's by partition, and one partition's overlaps as they began)."""
    und = ov.filter(F.col("undecided"))
    example = F.format_string("%s / %s %s at %d ms: the coordinator removed member %s (%s, %s)", F.col("old"),
                              F.col("new"), _label(), F.col("start"), F.col("unnamed_removal.r_member_id"),
                              F.col("unnamed_removal.r_reason"), F.col("unnamed_removal.r_where"))
    return und.groupBy("group").agg(F.count(F.lit(1)).alias("n"),
                                    F.min_by(example, F.struct(F.col("end.seq"), "end_part", "topic", "partition",
                                                                        "start_seq")).alias("detail")) \
        .select("group", F.lit(UNDECIDED).alias("what"), F.lit(None).cast("string").alias("policy"), "n", "detail")


# ------------------------------------------------------------------------------------------ assignment-time


def revoked_then_assigned(rows: DataFrame) -> DataFrame:
    """revoke-before-assign, the other order: revoked from one member, then assigned to another, same generation."""
    wgtp = Window.partitionBy("group", "topic", "partition").orderBy("seq", "part").rowsBetween(UNB, -1)
    last = F.last(F.when(F.col("is_release"), F.struct(
        F.col("member").alias("member"), F.when(F.col("gen_ff") >= 0, F.col("gen_ff")).alias("gen"),
        F.col("timestamp").alias("ts"), where().alias("where"))), True).over(wgtp)
    # the rows judged (new assignments) and the releases the window remembers: the last release before each is the
    # same over these as over every member row, and the rest (most of them) are not sorted for it
    cand = rows.filter(F.col("is_new") | F.col("is_release")).withColumn("last_revoke", last).filter(
        F.col("is_new") & (F.col("proto") == "cooperative") & (F.col("gen_ff") >= 0)
        & F.col("last_revoke").isNotNull() & (F.col("last_revoke.member") != F.col("member"))
        & (F.col("last_revoke.gen") == F.col("gen_ff")))
    return cand.select(*finding(
        "revoke-before-assign", VIOLATION, F.array(F.col("last_revoke.member"), F.col("member")), F.array(_tp()),
        F.col("last_revoke.ts"), F.col("timestamp"), F.array(F.col("last_revoke.where"), where()),
        F.format_string("%s was revoked from %s and assigned to %s in the same generation %d; cooperative "
                        "rebalancing withholds a moving partition until the generation after its revocation "
                        "(KIP-429)", _label(), F.col("last_revoke.member"), F.col("member"), F.col("gen_ff"))))


# ------------------------------------------------------------------------------------------ consumption, commits


def _aggregated(cands: DataFrame, invariant: str, verb: str) -> DataFrame:
    """One finding per (member, partition) run, closed when the member is assigned the partition again."""
    agg = cands.groupBy("group", "member", "topic", "partition", "assigned_count").agg(
        F.min("timestamp").alias("t0"), F.max("timestamp").alias("t1"), F.count(F.lit(1)).alias("n"),
        F.min_by(F.col("w"), F.col("seq")).alias("first_where"),
        F.min_by(F.col("after_shutdown"), F.col("seq")).alias("after"))
    return agg.select(*finding(
        invariant, VIOLATION, F.array(F.col("member")), F.array(_tp()), F.col("t0"), F.col("t1"),
        F.array(F.col("first_where")),
        F.format_string("%s %s %s%s without owning it", F.col("member"), F.lit(verb), _label(),
                        F.when(F.col("after"), F.lit(" after its shutdown_complete")).otherwise(F.lit(""))),
        F.col("n")))


def unowned(rows: DataFrame) -> DataFrame:
    """consume-owned-only and commit-owned-only: entries of partitions the member did not own at that moment."""
    # one window (member and partition, the checker's order) for every column here: the position is the last
    # poll's in this incarnation (the last poll of the partition, kept when its incarnation is this one's).
    # Ordered by ``life`` first: a member's lifetimes count up in its (seq, part) order, so the order is the
    # checker's, and it is the one the member rows come out of their last Window operator in
    # (ownership.TP_WINDOW): the rows' cache keeps that order, and this window needs no sort of its own.
    wmtp = Window.partitionBy(*TP_WINDOW[:4]).orderBy(*TP_WINDOW[4:])
    name = F.col("name")
    polled = name.isin(CONSUMED, RECORD_DATA)
    committed = commit_entry_ok()
    last_poll = F.last(F.when(polled & F.col("maxOffset").isNotNull(), F.struct(
        F.col("inc").alias("i"), (F.col("maxOffset") + 1).alias("v"))), True).over(wmtp.rowsBetween(UNB, -1))
    pos = F.when(last_poll["i"] == F.col("inc"), last_poll["v"])
    base = (rows.filter(F.col("topic").isNotNull() & (polled | committed | (name == ASSIGNED)))
            # in one projection: one Window operator (a withColumn each was two passes)
            .withColumns({"assigned_count": F.sum(F.col("is_new").cast("int")).over(wmtp.rowsBetween(UNB, 0)),
                          "pos": pos})
            .withColumn("after_shutdown", F.col("shut_down"))
            .withColumn("w", where())
            .filter(~F.col("owned_before") & F.col("known")))
    consumed = base.filter(polled)
    late_ok = F.col("pos").isNotNull() & F.col("offset").isNotNull() & (F.col("offset") <= F.col("pos"))
    commits = base.filter(committed & ~late_ok)
    return _aggregated(consumed, "consume-owned-only", "consumed").unionByName(
        _aggregated(commits, "commit-owned-only", "committed"))


def group_generations(events: DataFrame) -> DataFrame:
    """Each row with the highest generation its group had reached by then (member and coordinator events
    alike, as the checker's ``GroupState.max_gen``): ``max_gen``. When and where the group reached it is
    :func:`_generations_reached`' (per group and generation, not on every row)."""
    wg = Window.partitionBy("group").orderBy("seq", "part").rowsBetween(UNB, 0)
    return events.withColumn("max_gen", F.max(F.when(F.col("generation") >= 0, F.col("generation"))).over(wg))


def _generations_reached(events: DataFrame) -> DataFrame:
    """``group, max_gen, max_gen_ts, max_gen_where``: for each generation a group reached, the earliest timestamp of
    its rows at it (:func:`group_generations`' ``max_gen``), and where it was first reached (``file:line``).

    An aggregate per group and generation, inside the group partitions (no exchange, no sort): the few commits
    :func:`stale_commits` judges look it up. It was a window over every corpus row, with a sort of them by
    ``(group, max_gen)`` and the ``file:line`` text built on each, carried on every row into the member rows' cache
    (docs/benchmarks-spark.md, h23-rest)."""
    first = F.min_by(F.struct(F.col("source").alias("source"), F.col("line").alias("line")), F.col("seq"))
    return events.filter(F.col("max_gen").isNotNull()).groupBy("group", "max_gen").agg(
        F.min("timestamp").alias("max_gen_ts"), first.alias("first")).select(
        "group", "max_gen", "max_gen_ts", where("first.source", "first.line").alias("max_gen_where"))


def stale_commits(rows: DataFrame, events: DataFrame) -> DataFrame:
    """commit-owned-only: a successful commit with a generation older than one the group had reached before it
    (``rows`` carry :func:`group_generations`' ``max_gen``; ``events`` are the corpus rows it was computed over)."""
    cands = rows.filter(commit_ok() & (F.col("gen_ff") >= 0) & (F.col("max_gen") > F.col("gen_ff")))
    events = cands.join(_generations_reached(events), ["group", "max_gen"]).filter(
        F.col("timestamp") > F.col("max_gen_ts"))
    per_event = events.groupBy("group", "member", "seq", "timestamp", "gen_ff", "max_gen", "source", "line",
                               "max_gen_where").agg(
        F.collect_list(F.when(F.col("topic").isNotNull(), _tp())).alias("tps"))
    per_gen = per_event.groupBy("group", "member", "gen_ff").agg(
        F.min("timestamp").alias("t0"), F.max("timestamp").alias("t1"), F.count(F.lit(1)).alias("n"),
        F.min_by(F.struct("tps", "source", "line", "max_gen", "max_gen_where"), F.col("seq")).alias("first"))
    return per_gen.select(*finding(
        "commit-owned-only", VIOLATION, F.array(F.col("member")), F.col("first.tps"), F.col("t0"), F.col("t1"),
        F.array(F.concat_ws(":", F.col("first.source"), F.col("first.line").cast("string")),
                F.col("first.max_gen_where")),
        F.format_string("%s's commit with generation %d succeeded after the group had reached generation %d; the "
                        "coordinator answers ILLEGAL_GENERATION (ClassicGroup.validateOffsetCommit)",
                        F.col("member"), F.col("gen_ff"), F.col("first.max_gen")), F.col("n")))


# ------------------------------------------------------------------------------------------ generations, eager


def generation_down(rows: DataFrame) -> DataFrame:
    """generation-monotonic: per member and file (a restart starts over), a generation never goes down.

    A moved member's files' last generations before the move (``moved_generations`` of the rows' ``context``, on
    its first row in the new group) hold until the file names another: the checker keeps ``Member.gen_by_src`` when it
    moves the member (``Checker._member``, ``_generation``)."""
    # the rows judged and remembered (those with a generation) and a moved member's first row (what it brought): the
    # windows' values are the same over these as over every event, and the rest are not sorted for them
    ev = rows.filter((F.col("part") == 0) & ((F.col("generation") >= 0)
                                             | F.col("context.moved_generations").isNotNull()))
    wsrc = Window.partitionBy("group", "member", "inc", "source").orderBy("seq").rowsBetween(UNB, -1)
    carried = F.element_at(F.first(F.col("context.moved_generations"), True)
                           .over(Window.partitionBy("group", "member", "inc")), F.col("source"))
    ev = ev.withColumn("last_gen", F.coalesce(
        F.last(F.when(F.col("generation") >= 0, F.col("generation")), True).over(wsrc), carried))
    down = ev.filter((F.col("generation") >= 0) & (F.col("generation") < F.col("last_gen")))
    agg = down.groupBy("group", "member").agg(
        F.min("timestamp").alias("t0"), F.max("timestamp").alias("t1"), F.count(F.lit(1)).alias("n"),
        F.min_by(F.struct(where().alias("w"), F.col("last_gen"), F.col("generation")), F.col("seq")).alias("first"))
    return agg.select(*finding(
        "generation-monotonic", VIOLATION, F.array(F.col("member")),
        F.array().cast("array<struct<topic:string,partition:int>>"), F.col("t0"), F.col("t1"),
        F.array(F.col("first.w")),
        F.format_string("%s's generation went down from %d to %d (it may only drop to -1, after losing its "
                        "partitions)", F.col("member"), F.col("first.last_gen"), F.col("first.generation")),
        F.col("n")))


def eager_not_revoked(rows: DataFrame, iv: DataFrame) -> DataFrame:
    """eager-revoke-all: an eager member joins a new generation, or is assigned, while it still owns partitions."""
    name = F.col("name")
    new_per_event = F.max(F.col("is_new").cast("int")).over(Window.partitionBy("group", "member", "seq")) == 1
    gen = F.when(F.col("gen_ff") >= 0, F.col("gen_ff"))
    # Member.assigned_gen: the member's last assignment's generation in the incarnation, else the one it brought
    # when it moved groups (moved_assigned_gen, on its first row in the new group: the checker keeps it)
    winc = Window.partitionBy("group", "member", "inc")
    assigned_gen = F.coalesce(
        F.last(F.when((name == ASSIGNED) & (F.col("gen_ff") >= 0), F.col("gen_ff")), True)
        .over(winc.orderBy("seq").rangeBetween(UNB, -1)),
        F.first(F.col("context.moved_assigned_gen"), True).over(winc))
    # the member's rows in the group it left and in the one it moved to are one history for eager_flagged (below):
    # a member moves once, from the group it started in (Checker._member), named by moved_from in the new group
    home = F.coalesce(F.first(F.col("context.moved_from"), True).over(Window.partitionBy("group", "member")),
                      F.col("group"))
    # the rows judged (assignments, joins) and those the windows read (assignments; a moved member's first row in
    # its new group): every window's partition is whole or starts at its first row, and every other row holds a
    # null (or is_new false) for each of them, so their values on the rows kept are those over every member row;
    # the polls, commits and records, most of the rows, are not sorted for them
    ev = (rows.filter(name.isin(ASSIGNED, JOINED) | F.col("context.moved_assigned_gen").isNotNull()
                      | F.col("context.moved_from").isNotNull())
          .withColumn("any_new", new_per_event).withColumn("assigned_gen", assigned_gen).withColumn("home", home)
          .filter(F.col("part") == 0).filter(F.col("proto") == "eager"))
    on_assign = (name == ASSIGNED) & F.col("any_new")
    joined = (name == JOINED) & (F.col("generation") >= 0) & \
        (F.col("assigned_gen").isNull() | (F.col("generation") > F.col("assigned_gen")))
    joined = joined & ~(~F.col("jsonl") & F.col("callback"))
    cands = ev.filter(on_assign | joined).select(
        "group", "home", "member", "seq", "timestamp", "name", where().alias("w"),
        gen.alias("gen"))
    owned = iv.select(F.col("group").alias("i_group"), F.col("member").alias("i_member"), "start_seq", "end",
                      _tp().alias("tp"))
    held = cands.join(owned, (cands["group"] == owned["i_group"]) & (cands["member"] == owned["i_member"])
                      & (owned["start_seq"] < cands["seq"]) & (cands["seq"] < owned["end.seq"]), "inner")
    held = held.groupBy("group", "home", "member", "seq", "timestamp", "name", "w", "gen").agg(
        F.collect_list("tp").alias("owned"))
    # one finding per generation: the checker remembers the generation it last flagged (eager_flagged), also across a
    # move of groups (seq orders one trace set's rows, and both groups are of the moved member's set)
    wmev = Window.partitionBy("home", "member").orderBy("seq")
    held = held.withColumn("prev_gen", F.lag("gen").over(wmev)).filter(~F.col("gen").eqNullSafe(F.col("prev_gen")))
    what = F.when(F.col("name") == JOINED, F.format_string("joined generation %d", F.col("gen"))).otherwise(
        F.concat(F.lit("was assigned "), F.when(F.col("gen").isNotNull(),
                                                F.format_string("generation %d ", F.col("gen"))).otherwise(F.lit("")),
                 F.lit("partitions")))
    return held.select(*finding(
        "eager-revoke-all", VIOLATION, F.array(F.col("member")), F.col("owned"), F.col("timestamp"),
        F.col("timestamp"), F.array(F.col("w")),
        F.format_string("eager member %s %s while it still owned %s; eager members revoke everything "
                        "before they rejoin (ConsumerCoordinator.onJoinPrepare)", F.col("member"), what,
                        labels(F.array_sort(F.col("owned"))))))
