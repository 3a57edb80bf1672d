"""The checker's offset rules as Spark columns: ``monotonic-consumption``, ``committed-not-ahead``, ``no-gap``.

The rules are :mod:`traces.delivery`'s (docs/check.md); here the checker's per-member, per-partition
memory becomes window functions over the member rows of :func:`spark_analysis.ownership.member_rows`:

- An *ownership* of a partition is numbered by ``ac``, the member's assignments of it so far (a new
  assignment closes the checker's aggregated findings of that member and partition, and drops its
  position).
- The member's *position* after each poll of a partition it owns (``pos_after``): ``maxOffset + 1``;
  unknown (:data:`traces.state.UNKNOWN_POSITION`) after a poll without offsets. A member that prints
  ``record_data`` (VerifiableConsumer ``--verbose``) reports each poll twice, so there a poll wholly
  below the position leaves it: the position is the running maximum since the last unknown one.
- ``committed``: the group's last successful commit of the partition before a row (any member's).

``monotonic-consumption``: a poll after the first of an ownership that does not start at the position
(back, or a skip beyond ``gap_slack``). ``committed-not-ahead``: a commit of an owned partition beyond
the position, or, before any poll of the ownership, beyond the group's committed offset (with none
known it is not judged: the reset policy placed the position). Both are one finding per member,
partition and ownership, with ``occurrences``.

``no-gap`` judges the first poll of each ownership (``DeliveryChecks._first_consumption``): against
the committed offset; with none, a start at 0 is fine, a later one is judged only under
``auto.offset.reset=earliest`` (the log assumed to start at 0). When a member whose commits the
trace may not show (``commits_shown`` not true: a client log, VerifiableConsumer with auto-commit, a
groupspec trace with ``enable_auto_commit``) released the partition before, or holds it now, a start
past the shown committed offset may be right: it is judged only beyond the highest position any
owner reached (``DeliveryChecks._no_gap_hidden``: positions dropped at a restart or re-assignment,
and the hidden members' current positions), and not at all when such a member is known only from a
client log. What is not judged is counted per reason (:func:`unchecked`), as the checker counts it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_analysis.invariants import VIOLATION, _label, _tp, finding
from spark_analysis.ownership import CONSUMED, RECORD_DATA, STARTUP, TP_WINDOW, UNB, commit_entry_ok, where
from traces.delivery import offset_notes
from traces.state import UNKNOWN_POSITION

NO_GAP_OUTCOMES = ("judged", "assumed-zero", "unjudged-policy", "hidden-auto-commit", "hidden-unseen",
                   "hidden-positions")
BROKER_COMMIT = "coordinator_offset_commit"


def _unknown() -> Column:
    return F.lit(UNKNOWN_POSITION).cast("long")


def _ownership_key() -> list[str]:
    return ["group", "member", "topic", "partition", "ac"]


# What the readers of offsets() read (the rules here, the handoffs, the unchecked counts): mine.plan caches it,
# so every other column of the member rows would be stored again for nothing
OFFSET_COLUMNS = ("group", "member", "topic", "partition", "ac", "seq", "part", "timestamp", "source", "line",
                  "polled", "commit", "n_poll", "first", "minOffset", "maxOffset", "offset", "pos", "pos_after",
                  "committed", "rd", "policy")


def _position(ints: Column, rd: Column, next_offset: Column, seg_max: Column) -> Column:
    """A poll's ``pos_after`` from its own fields: unknown without offsets, ``maxOffset + 1`` (``next_offset``) for a
    member that does not print ``record_data``, else the running maximum of its segment (``seg_max``)."""
    return F.when(~ints, _unknown()).when(~rd, next_offset).otherwise(seg_max)


def offsets(rows: DataFrame) -> DataFrame:
    """The polls and commit entries of owned partitions (:data:`OFFSET_COLUMNS`): ``ac``, ``pos_after``
    (polls), ``pos`` (the position before the row), ``first`` (the ownership's first poll), ``committed``
    (the group's, before the row), and ``rows``' ``rd`` / ``policy`` (the member's record_data habit and
    reset policy).

    Every per-ownership column is a running aggregate over the member's rows of the partition in the order the
    member rows are cached in (``ownership.TP_WINDOW``), so none of those windows sorts: within one member's
    partition that order is the (seq, part) order (``life`` is a running count of the member's startup_complete
    and shutdown_complete rows in its (seq, part) order, ``ownership.member_rows``, so it never goes down along it,
    and of two rows the earlier by (seq, part) is never the later by (life, seq, part)). An ownership is the run of
    rows from one assignment that counts (``is_new``) to the next, so a value "within the ownership" is one that
    restarts at each ``ac``: a count since the ownership's assignment is the running count less the count at that
    assignment, and a maximum within it is the largest ``(ac, ...)``, since ``ac`` never goes down along the order
    either. A window partitioned by ``ac`` itself sorted every owned poll and commit again (``ac`` is computed, so
    Spark cannot know the cached order holds it). The group's committed offset is a window across members, in
    another order: it comes last, so its sort is the one sort of the frame."""
    name = F.col("name")
    wmtp = Window.partitionBy(*TP_WINDOW[:4]).orderBy(*TP_WINDOW[4:])
    upto, before = wmtp.rowsBetween(UNB, 0), wmtp.rowsBetween(UNB, -1)
    polled, commit, is_new = F.col("polled"), F.col("commit"), F.col("is_new")
    low, high = F.col("minOffset"), F.col("maxOffset")
    ints = low.isNotNull() & high.isNotNull()
    base = (rows
            .filter(F.col("topic").isNotNull() & F.col("partition").isNotNull()
                    & (name.isin(CONSUMED, RECORD_DATA) | commit_entry_ok() | is_new))
            .withColumns({"polled": name.isin(CONSUMED, RECORD_DATA), "commit": commit_entry_ok()}))
    # Only the polls of an owned partition count (the rows kept at the end): the rows of one ownership come
    # after its assignment and before the release that ends it, so those of ``ac`` = k that are not owned (after
    # the release, before the next assignment) follow every owned row of k, and no running value of an owned row
    # reads them either way.
    own_poll = F.col("owned_before") & polled
    # pass 1 (one Window operator): the ownership's number, and the running counts the ownership's values are
    # taken from -- the polls and, for a record_data member, the polls that start a segment of the running maximum
    # (a poll without offsets, or one of a member that prints none) -- counted over every ownership
    base = base.withColumns({
        "ac": F.sum(is_new.cast("int")).over(upto),
        "tp_polls": F.sum(own_poll.cast("int")).over(upto),
        "tp_seg": F.sum((own_poll & (~ints | ~F.col("rd"))).cast("int")).over(upto)})
    # pass 2 (the same order: no sort): the segment's running maximum is the largest (ac, segment, maxOffset + 1)
    # so far, the ownership's own (its rows' ac is the largest yet) and its current segment's (the segments are
    # numbered up along it); the position before a row is what its ownership's last poll left (pos_after there),
    # read from that poll's fields and the running maximum before the row, which no poll after it moved
    seg_max = F.when(own_poll & ints, F.struct(F.col("ac").alias("a"), F.col("tp_seg").alias("s"),
                                               (high + 1).alias("p")))
    last_poll = F.last(F.when(own_poll, F.struct(F.col("ac").alias("a"), ints.alias("i"), F.col("rd").alias("r"),
                                                 (high + 1).alias("p"))), True).over(before)
    at_assignment = F.last(F.when(is_new, F.col("tp_polls")), True).over(upto)
    base = base.withColumns({
        "n_poll": F.when(polled, (F.col("tp_polls") - F.coalesce(at_assignment, F.lit(0))).cast("int")),
        "pos_after": F.when(polled, _position(ints, F.col("rd"), high + 1, F.max(seg_max).over(upto)["p"])),
        "pos": F.when(last_poll["a"] == F.col("ac"), _position(last_poll["i"], last_poll["r"], last_poll["p"],
                                                                F.max(seg_max).over(before)["p"]))})
    # the group's committed offset before each row: every successful entry counts, owned or not
    wgtp = Window.partitionBy("group", "topic", "partition").orderBy("seq", "part").rowsBetween(UNB, -1)
    base = base.withColumn("committed", F.last(F.when(commit & (F.col("offset") >= 0), F.col("offset")), True)
                           .over(wgtp))
    return (base.filter(F.col("owned_before") & (polled | commit))
            .withColumn("first", polled & (F.col("n_poll") == 1) & ints)
            .select(*OFFSET_COLUMNS))


def _aggregated(cands: DataFrame, invariant: str) -> DataFrame:
    """One finding per member, partition and ownership (the checker's aggregate, closed by a new assignment)."""
    agg = cands.groupBy(*_ownership_key()).agg(
        F.min("timestamp").alias("t0"), F.max("timestamp").alias("t1"), F.count(F.lit(1)).alias("n"),
        F.min_by(F.col("msg"), F.struct("seq", "part")).alias("msg"),
        F.slice(F.array_distinct(F.transform(F.array_sort(F.collect_list(F.struct("seq", "part", "w"))),
                                             lambda x: x["w"])), 1, 5).alias("ev"))
    return agg.select(*finding(invariant, VIOLATION, F.array(F.col("member")), F.array(_tp()), F.col("t0"),
                               F.col("t1"), F.col("ev"), F.col("msg"), F.col("n")))


def monotonic(off: DataFrame, gap_slack: int = 0) -> DataFrame:
    """monotonic-consumption: within one ownership each poll starts at the position the last one left."""
    low, high, pos = F.col("minOffset"), F.col("maxOffset"), F.col("pos")
    judged = (F.col("polled") & ~F.col("first") & (F.col("n_poll") > 1) & low.isNotNull() & high.isNotNull()
              & pos.isNotNull() & (pos != _unknown()) & ~(F.col("rd") & (high < pos)))
    back = low < pos
    skip = low > pos + gap_slack
    m, label = F.col("member"), _label()
    msg = F.when(back, F.format_string(
        "%s consumed %s offsets %d..%d after it had already consumed up to %d in the same ownership: its position "
        "went back", m, label, low, high, pos - 1)).otherwise(F.format_string(
            "%s consumed %s from offset %d right after offset %d: offsets %d..%d were skipped (set gap_slack for "
            "transactional or compacted topics)", m, label, low, pos - 1, pos, low - 1))
    cands = off.filter(judged & (back | skip)).withColumn("msg", msg).withColumn("w", where())
    return _aggregated(cands, "monotonic-consumption")


def _not_ahead(off: DataFrame) -> tuple[Column, Column]:
    """(the commit is judged and ahead, the message) for commit rows."""
    o, pos, committed = F.col("offset"), F.col("pos"), F.col("committed")
    m, label = F.col("member"), _label()
    ahead = F.when(pos.isNotNull(), (pos != _unknown()) & (o > pos)).otherwise(committed.isNotNull() & (o > committed))
    msg = F.when(pos.isNotNull(), F.format_string(
        "%s committed offset %d of %s but had consumed only up to offset %d: offsets %d..%d would be skipped by the "
        "next owner", m, o, label, pos - 1, pos, o - 1)).otherwise(F.format_string(
            "%s committed offset %d of %s without consuming any of it since it was assigned; its position started at "
            "the committed offset %d", m, o, label, committed))
    return F.col("commit") & (o >= 0) & ahead, msg


def not_ahead(off: DataFrame) -> DataFrame:
    """committed-not-ahead: a member never commits, for a partition it owns, beyond its position."""
    ahead, msg = _not_ahead(off)
    cands = off.filter(ahead).withColumn("msg", msg).withColumn("w", where())
    return _aggregated(cands, "committed-not-ahead")


def _shown(at: Column) -> Column:
    """Whether the member's trace showed every commit at ``at`` (the checker's ``Member.commits_shown is True``)."""
    return (F.col("j0").isNotNull() & (F.col("j0") <= at) & F.coalesce(F.col("src_shown"), F.lit(False))
            & ~((F.col("fmt0") == "groupspec") & F.col("a0").isNotNull() & (F.col("a0") <= at)))


def first_trace_rows(rows: DataFrame) -> DataFrame:
    """Per member (``group, member``), its first callback-trace row by ``(seq, part)``, as ``j``: its ``seq``, and that
    file's ``commits_shown`` (``s``) and ``format`` (``f``). The member rows keep a file's commits_shown and format on
    that row only (ownership.CONTEXT), and the rows of one event share a seq: the first by ``(seq, part)`` is the
    one. Read by no-gap (the checker's ``Member.commits_shown``, :func:`_members`) and by the handoffs
    (``Member.auto_commit``, :func:`spark_analysis.handoff._auto`)."""
    return rows.filter(F.col("jsonl")).groupBy("group", "member").agg(
        F.min_by(F.struct(F.col("seq"), F.col("context.commits_shown").alias("s"), F.col("context.format").alias("f")),
                 F.struct("seq", "part")).alias("j"))


def _members(rows: DataFrame) -> DataFrame:
    """Per member: its first callback-trace row (``j0``), that file's commits_shown and format
    (:func:`first_trace_rows`), and its first ``enable_auto_commit: true`` from then on (``a0``)."""
    first = first_trace_rows(rows).select("group", "member", F.col("j.seq").alias("j0"),
                                          F.struct(F.col("j.s").alias("s"), F.col("j.f").alias("f")).alias("src"))
    auto = rows.filter(F.col("context.enable_auto_commit") == True).select(  # noqa: E712 (a column comparison)
        F.col("group").alias("a_group"), F.col("member").alias("a_member"), F.col("seq").alias("a_seq"))
    joined = first.join(auto, (first["group"] == auto["a_group"]) & (first["member"] == auto["a_member"])
                        & (auto["a_seq"] >= first["j0"]), "left")
    return joined.groupBy("group", "member").agg(
        F.first("j0").alias("j0"), F.first("src.s").alias("src_shown"), F.first("src.f").alias("fmt0"),
        F.min("a_seq").alias("a0"))


def _positions_at(off: DataFrame, iv: DataFrame, rows: DataFrame, probes: DataFrame, key: list[str]) -> DataFrame:
    """Member ``h``'s position in the probe's partition just before ``at`` (``h_pos``, null if it has none):
    its last poll of the partition while it owned it, unless a new assignment of the partition or a restart
    came after (both drop it). ``probes``: ``key`` columns (with group, topic, partition), ``h``, ``at``."""
    state = off.filter(F.col("polled")).select(
        F.col("group").alias("s_group"), F.col("member").alias("s_member"), F.col("topic").alias("s_topic"),
        F.col("partition").alias("s_partition"), F.col("seq").alias("s_seq"), F.col("part").alias("s_part"),
        F.col("pos_after").alias("s_pos")).unionByName(iv.select(
            F.col("group").alias("s_group"), F.col("member").alias("s_member"), F.col("topic").alias("s_topic"),
            F.col("partition").alias("s_partition"), F.col("start_seq").alias("s_seq"),
            F.lit(-1).alias("s_part"), F.lit(None).cast("long").alias("s_pos")))
    hs = probes.join(state, (probes["group"] == state["s_group"]) & (probes["topic"] == state["s_topic"])
                     & (probes["partition"] == state["s_partition"]) & (probes["h"] == state["s_member"])
                     & (state["s_seq"] < probes["at"]), "inner") \
        .groupBy(*key, "h", "at").agg(F.max_by(F.struct("s_seq", "s_pos"), F.struct("s_seq", "s_part")).alias("last"))
    starts = rows.filter(F.col("name") == STARTUP).select(F.col("group").alias("u_group"),
                                                          F.col("member").alias("u_member"), F.col("seq").alias("u_seq"))
    hs = hs.join(starts, (hs["group"] == starts["u_group"]) & (hs["h"] == starts["u_member"])
                 & (starts["u_seq"] > hs["last.s_seq"]) & (starts["u_seq"] < hs["at"]), "left_anti")
    return probes.join(hs.select(*key, "h", "at", F.col("last.s_pos").alias("h_pos")), [*key, "h", "at"], "left")


def broker_commits(events: DataFrame) -> DataFrame:
    """The offsets server.log shows the coordinator took (``coordinator_offset_commit``, one row per partition)."""
    return events.filter((F.col("name") == BROKER_COMMIT) & F.col("topic").isNotNull()
                         & F.col("partition").isNotNull() & (F.col("offset") >= 0))


def ownerships(off: DataFrame, iv: DataFrame) -> DataFrame:
    """One row per ownership interval (``iv``: :func:`spark_analysis.ownership.intervals`) with what no-gap and the
    handoffs read of it: ``group, member, topic, partition, inc, start_seq, end_seq, end_kind, end_where``, ``ac``
    (its number among the member's assignments of the partition, as :func:`offsets` numbers the rows: an interval
    starts at each assignment that counts), ``next_start`` (the member's next assignment of the partition, null if
    none) and ``P``, the ownership's last position (its last poll's ``pos_after``; null if it never polled).

    No-gap reads it for the positions a re-assignment or a restart dropped (``GroupState.high``), the handoffs for
    a release's position and the new owner's at the close: mine.plan computes it once and hands it to both."""
    # the last poll is the one with the highest n_poll (its number among the ownership's polls, in their order): an
    # int, where (seq, part) is a struct, which Spark aggregates only by sorting (SortAggregate): every poll sorted
    # by ownership, since offsets' rows are no longer in that order
    finals = off.filter(F.col("polled")).groupBy(*_ownership_key()).agg(
        F.max_by(F.col("pos_after"), F.col("n_poll")).alias("P"))
    wown = Window.partitionBy("group", "member", "topic", "partition").orderBy("start_seq")
    return (iv.select("group", "member", "topic", "partition", "inc", "start_seq", F.col("end.seq").alias("end_seq"),
                      F.col("end.kind").alias("end_kind"), F.col("end.where").alias("end_where"))
            .withColumns({"ac": F.row_number().over(wown), "next_start": F.lead("start_seq").over(wown)})
            .join(finals, _ownership_key(), "left"))


def no_gap(off: DataFrame, rows: DataFrame, iv: DataFrame, own: DataFrame, gap_slack: int = 0,
           auto_offset_reset: str | None = None, broker: DataFrame | None = None,
           keep: Callable[[DataFrame], DataFrame] = lambda df: df) -> tuple[DataFrame, DataFrame]:
    """no-gap, judged at each ownership's first poll: (findings, the first polls with their ``outcome`` and the
    committed offset they were judged on, which the handoffs that start there measure against).

    ``keep`` (mine.plan's cache) is given the first polls with each one's verdict, evidence and message, and the
    findings are read from what it returns: the first polls' joins run once for both (the findings, planned from
    the judged frame itself, computed it a second time beside the cache). It is given before that the first polls
    a member may hide a commit for (``hidden``), which five branches of the verdict read. ``own``: :func:`ownerships` of ``off``
    and ``iv``, which the handoffs read too."""
    firsts = off.filter(F.col("first")).select(
        "group", "member", "topic", "partition", "ac", "seq", "timestamp", "source", "line", "committed",
        F.col("minOffset").alias("low"), F.coalesce(F.col("policy"), F.lit(auto_offset_reset)).alias("policy"),
        where().alias("w"), where().alias("w0"))
    low, committed = F.col("low"), F.col("committed")
    maybe_hidden = (low > 0) & (committed.isNull() | (low > committed + gap_slack))
    members = _members(rows)
    # Who may have committed what the trace does not show (DeliveryChecks._first_consumption): a hidden member
    # (commits_shown not true) that released the partition before or holds it now ("auto-commit"), and any other
    # member holding it now or the partition's last releaser if it was killed (_commit_maybe_unseen: "unseen").
    ivm = iv.join(members, ["group", "member"], "left").select(
        F.col("group").alias("h_group"), F.col("member").alias("h_member"), F.col("topic").alias("h_topic"),
        F.col("partition").alias("h_partition"), "start_seq", F.col("end.seq").alias("end_seq"),
        F.col("end.kind").alias("end_kind"), "j0", "src_shown", "fmt0", "a0")
    cand = firsts.filter(maybe_hidden)
    j = cand.join(ivm, (cand["group"] == ivm["h_group"]) & (cand["topic"] == ivm["h_topic"])
                  & (cand["partition"] == ivm["h_partition"]) & (ivm["start_seq"] < cand["seq"]), "inner")
    ended = F.col("end_seq") < F.col("seq")
    holds = (F.col("h_member") != F.col("member")) & (F.col("seq") < F.col("end_seq"))
    released = (F.col("end_kind") != "eof") & ended & ~_shown(F.col("end_seq"))
    holding = holds & ~_shown(F.col("seq"))
    # a member known only from its client log (no callback trace yet) leaves nothing to bound its commits
    who = F.struct(F.col("h_member").alias("h"), (F.col("j0").isNull() | (F.col("j0") > F.col("seq"))).alias("b"))
    key = ["group", "member", "topic", "partition", "seq"]
    agg = j.groupBy(*key).agg(
        F.collect_set(F.when(released | holding, who)).alias("hid"),
        F.collect_set(F.when(holds, who)).alias("uns"),
        F.max(F.when(ended, F.struct(F.col("end_seq").alias("s"), F.col("end_kind").alias("k"), who.alias("w"))))
        .alias("last"))
    unseen = F.array_union(F.col("uns"), F.when(F.col("last.k") == "killed", F.array(F.col("last.w")))
                           .otherwise(F.array().cast("array<struct<h:string,b:boolean>>")))
    everyone = F.array_union(F.col("hid"), unseen)
    hidden = agg.select(*key, F.when(F.size("hid") > 0, F.lit("auto-commit")).otherwise(F.lit("unseen")).alias("why"),
                        F.array_distinct(F.transform(everyone, lambda x: x["h"])).alias("hidden"),
                        F.exists(everyone, lambda x: x["b"]).cast("int").alias("blind")) \
        .filter(F.size("hidden") > 0)
    # kept: the broker's commits, the hidden members' positions (twice: the probes and their answers), the dropped
    # positions and the verdicts below read it, and each computed it again -- the join of the candidates with every
    # earlier interval of their partition and the members' first callback-trace rows, five times in the first
    # polls' plan. A few rows: the first polls past the committed offset that some member may hide a commit for.
    hidden = keep(hidden)
    # server.log's commits settle it: the last offset the coordinator took before the first poll
    if broker is not None:
        bk = broker.select(F.col("group").alias("b_group"), F.col("topic").alias("b_topic"),
                           F.col("partition").alias("b_partition"), F.col("seq").alias("b_seq"),
                           F.col("offset").alias("b_offset"), where().alias("b_w"))
        hb = hidden.select(*key)
        took = hb.join(bk, (hb["group"] == bk["b_group"]) & (hb["topic"] == bk["b_topic"])
                       & (hb["partition"] == bk["b_partition"]) & (bk["b_seq"] < hb["seq"]), "inner") \
            .groupBy(*key).agg(F.max_by(F.struct(F.col("b_offset").alias("o"), F.col("b_w").alias("w")),
                                        F.col("b_seq")).alias("broker"))
        hidden = hidden.join(took, key, "left")
    else:
        hidden = hidden.withColumn("broker", F.lit(None).cast("struct<o:long,w:string>"))
    # the hidden members' positions now: their last poll of the partition, unless a new assignment of it or a
    # restart came after (both drop it)
    hk = hidden.select("group", "member", "topic", "partition", "seq", F.explode("hidden").alias("h"),
                       F.col("seq").alias("at"))
    hpos = _positions_at(off, iv, rows, hk, ["group", "member", "topic", "partition", "seq"]) \
        .filter(F.col("h_pos").isNotNull() & (F.col("h_pos") != _unknown())) \
        .groupBy("group", "member", "topic", "partition", "seq").agg(F.max("h_pos").alias("hidden_pos"))
    # positions dropped before (a re-assignment or a restart): the group's "highest reached" (GroupState.high)
    inc_starts = rows.filter(F.col("name") == STARTUP).select(
        F.col("group").alias("i_group"), F.col("member").alias("i_member"), F.col("inc").alias("i_inc"),
        F.col("seq").alias("i_seq"))
    nexts = own.filter(F.col("P").isNotNull() & (F.col("P") != _unknown()))
    nexts = nexts.join(inc_starts, (nexts["group"] == inc_starts["i_group"])
                       & (nexts["member"] == inc_starts["i_member"]) & (inc_starts["i_inc"] == nexts["inc"] + 1), "left")
    drops = nexts.select(F.col("group").alias("d_group"), F.col("topic").alias("d_topic"),
                         F.col("partition").alias("d_partition"), F.least("next_start", "i_seq").alias("d_seq"), "P") \
        .filter(F.col("d_seq").isNotNull())
    hc = hidden.select("group", "member", "topic", "partition", "seq")
    high = hc.join(drops, (hc["group"] == drops["d_group"]) & (hc["topic"] == drops["d_topic"])
                   & (hc["partition"] == drops["d_partition"]) & (drops["d_seq"] < hc["seq"]), "inner") \
        .groupBy("group", "member", "topic", "partition", "seq").agg(F.max("P").alias("high"))
    key = ["group", "member", "topic", "partition", "seq"]
    judged = firsts.join(hidden, key, "left").join(hpos, key, "left").join(high, key, "left")
    # a start the broker's commit settles is judged against it (or against a later commit the trace shows)
    settled = F.col("hidden").isNotNull() & maybe_hidden & F.col("broker").isNotNull()
    judged = (judged
              .withColumn("is_hidden", F.col("hidden").isNotNull() & maybe_hidden & ~settled)
              .withColumn("by_broker", settled & (committed.isNull() | (F.col("broker.o") >= committed)))
              .withColumn("committed", F.when(F.col("by_broker"), F.col("broker.o")).otherwise(committed))
              .withColumn("w", F.when(F.col("by_broker"), F.array("w", "broker.w")).otherwise(F.array("w"))))
    is_hidden = F.col("is_hidden")
    bound = F.greatest(F.coalesce(F.col("high"), F.lit(0)), F.coalesce(F.col("hidden_pos"), F.lit(0)),
                       F.coalesce(committed, F.lit(0)))
    earliest = F.col("policy") == "earliest"
    outcome = (F.when(is_hidden & (F.col("blind") == 1), F.lit("hidden-positions"))
               .when(is_hidden & (low <= bound + gap_slack), F.concat(F.lit("hidden-"), F.col("why")))
               .when(is_hidden & committed.isNull() & ~F.coalesce(earliest, F.lit(False)), F.lit("unjudged-policy"))
               .when(is_hidden, F.lit("judged"))
               .when(committed.isNotNull() | (low == 0), F.lit("judged"))
               .when(F.coalesce(earliest, F.lit(False)), F.lit("assumed-zero"))
               .otherwise(F.lit("unjudged-policy")))
    violated = (F.when(is_hidden, F.col("outcome") == "judged")
                .when(committed.isNotNull(), low > committed + gap_slack)
                .otherwise((F.col("outcome") == "assumed-zero") & (low > gap_slack)))
    m, label = F.col("member"), _label()
    msg = (F.when(is_hidden, F.concat(F.format_string(
        "%s started %s at offset %d, beyond offset %d, the last any member of the group had consumed: offsets "
        "%d..%d were never consumed (no commit, shown or automatic, can be past what its committer consumed)",
        m, label, low, bound - 1, bound, low - 1), F.when(committed.isNotNull(), F.lit("")).otherwise(F.lit(
            "; with no commit at all, auto.offset.reset=earliest starts at the log start, assumed 0"))))
           .when(committed.isNotNull(), F.format_string(
               "%s started %s at offset %d but %s committed offset was %d: offsets %d..%d were never consumed",
               m, label, low, F.when(F.col("by_broker"), F.lit("the broker's")).otherwise(F.lit("the")), committed,
               committed, low - 1))
           .otherwise(F.format_string(
               "%s started %s at offset %d with no committed offset and auto.offset.reset=earliest: offsets 0..%d "
               "were never consumed (assuming the log starts at 0; retention may have deleted them)",
               m, label, low, low - 1)))
    judged = judged.withColumn("outcome", outcome).withColumn("violated", violated)
    first_polls = keep(judged.select("group", "member", "topic", "partition", "ac", "seq", "timestamp", "low",
                                     "committed", "w0", "outcome", "policy", "violated", "w",
                                     F.when(F.col("violated"), msg).alias("msg")))
    found = first_polls.filter(F.col("violated")).select(*finding(
        "no-gap", VIOLATION, F.array(m), F.array(_tp()), F.col("timestamp"), F.col("timestamp"),
        F.col("w"), F.col("msg")))
    return found, first_polls


def unchecked_counts(first_polls: DataFrame, off: DataFrame) -> DataFrame:
    """Per group, what the offset rules could not judge: ``group, what, policy, n``."""
    nogap = first_polls.filter(F.col("outcome") != "judged").groupBy("group", F.col("outcome").alias("what"),
                                                                      "policy").count()
    pos, committed = F.col("pos"), F.col("committed")
    unjudged = off.filter(F.col("commit") & (F.col("offset") >= 0) & pos.isNull() & committed.isNull()) \
        .groupBy("group").count().select("group", F.lit("not-ahead-unjudged").alias("what"),
                                         F.lit(None).cast("string").alias("policy"), "count")
    return nogap.unionByName(unjudged).withColumnRenamed("count", "n")


def unchecked(counts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The checker's partial ``unchecked`` notes for the offset rules, totalled over the rows of
    :func:`unchecked_counts` and worded by the checker's own templates (:func:`traces.delivery.offset_notes`)."""
    policies: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for c in counts:
        total[c["what"]] += c["n"]
        if c["what"] == "unjudged-policy":
            policies[c["policy"] or "unknown"] += c["n"]
    hidden = Counter({why: total[f"hidden-{why}"] for why in ("auto-commit", "unseen", "positions")})
    return offset_notes(policies, +hidden, total["assumed-zero"], total["not-ahead-unjudged"])
