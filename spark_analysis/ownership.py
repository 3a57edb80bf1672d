"""Who owned what when, as Spark columns: the checker's per-member state, computed with window functions.

The streaming checker (:mod:`traces.checker`) keeps, per member, its generation, member id,
protocol and owned partitions, and updates them event by event. Here the same state is a set of
columns on the member rows, each a window function over the member's rows in the checker's order
(``seq``, then ``part``):

- ``inc``: incarnations, counted by ``startup_complete`` (a restart forgets generation, member id,
  positions); ``life``: ownership lifetimes, counted by ``startup_complete`` and
  ``shutdown_complete`` (both end everything owned).
- ``gen_ff`` / ``mid_ff``: the member's generation and member id after the row (last non-null
  value in the incarnation), ``proto``: its protocol (the last ``protocol`` field, else what its
  first assignor implies, else the default), ``known``: whether what it owns is known (a callback
  trace, or since a ``startup_complete``, an eager assignment or a ``partitions_lost``);
  ``shut_down``: whether the member's last ``startup_complete`` / ``shutdown_complete`` so far is a
  shutdown (the checker's ``Member.shutdown``).
- read by later rules, computed here so that the member's rows are sorted once for all of them:
  ``rd`` (the member prints ``record_data``), ``policy`` (its last ``auto_offset_reset``),
  ``subscribed`` (its last subscription), and, before the row's event, ``assigned_gen`` (the
  generation of its last assignment in this incarnation, the checker's ``Member.assigned_gen``) and
  ``last_assign_ev`` (the seq of its last assignment or startup); ``n_assigned``, its assignment
  events so far.
- ``life_end`` (on ``startup_complete`` / ``shutdown_complete`` rows: how and when the lifetime
  ended), ``m_last_ts`` / ``m_last_gen`` / ``m_last_source`` (on assignments: the member's last row),
  for :func:`intervals`.
- ``owned_before``: per (member, lifetime, partition), whether the last ownership event before the
  row was ``partitions_assigned``. ``is_new`` marks an assignment of a partition not owned
  (the checker's ``new``), ``is_release`` a revoke or loss of one owned; ``ac`` counts the member's
  assignments of the partition so far, ``poll_pos`` is the position its last poll of the partition
  left (in this incarnation).
- per partition of the group, before the row: ``tp_committed`` (the last successful commit's
  offset, any member's), ``tp_epoch`` (assignments so far), and on ``is_new`` rows
  ``tp_last_release`` (member, generation, time, where) and ``tp_prev_new`` (the last new owner).

The job's shape (docs/mining.md, "Where the time goes"): the member rows are sorted three times here
-- per member, per member and partition, per partition -- and every rule that can read its state
from those passes reads these columns instead of sorting the rows again.

:func:`intervals` turns that into ownership intervals: from an ``is_new`` row to the release that
ends it -- the next ``is_release`` of the partition, the member's next ``shutdown_complete`` /
``startup_complete`` (a restart: "killed"), or the end of its trace ("eof", open-ended: the
checker still counts it as holding the partition).

Every column is a built-in expression; the windows are all keyed by ``group`` first, so once the
rows are partitioned by group (the one shuffle of the job) no window needs another.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

ASSIGNED, REVOKED, LOST = "partitions_assigned", "partitions_revoked", "partitions_lost"
CONSUMED, RECORD_DATA, COMMITTED = "records_consumed", "record_data", "offsets_committed"
STARTUP, SHUTDOWN, JOINED = "startup_complete", "shutdown_complete", "group_joined"
REMOVED = "coordinator_member_removed"
OWNERSHIP = (ASSIGNED, REVOKED, LOST)
EOF_SEQ = 1 << 62  # the end of an interval still open when its member's trace ended
UNB = Window.unboundedPreceding
UNF = Window.unboundedFollowing


def where(source: str = "source", line: str = "line") -> Column:
    """Evidence as the checker writes it: ``file:line``."""
    return F.concat_ws(":", F.col(source), F.col(line).cast("string"))


def _protocol(default_protocol: str | None) -> Column:
    """The checker's ``Member.protocol``: the protocol field, else the first assignor's kind, else the default."""
    from traces.state import COOPERATIVE_ASSIGNORS, EAGER_ASSIGNORS

    wm = Window.partitionBy("group", "member").orderBy("seq", "part").rowsBetween(UNB, 0)
    named = F.last(F.when(F.col("protocol").isin("eager", "cooperative"), F.col("protocol")), True).over(wm)
    by_assignor = F.first(F.when(F.col("assignor").isin(*sorted(COOPERATIVE_ASSIGNORS)), F.lit("cooperative"))
                          .when(F.col("assignor").isin(*sorted(EAGER_ASSIGNORS)), F.lit("eager")), True).over(wm)
    return F.coalesce(named, by_assignor, F.lit(default_protocol))


def member_rows(events: DataFrame, default_protocol: str | None) -> DataFrame:
    """The rows of member events, with the checker's per-member state as columns (see the module doc)."""
    name = F.col("name")
    rows = events.filter(F.col("member").isNotNull())
    # client-log ownership lines of a member whose callbacks are traced are context only (the checker's
    # _callback_superseded)
    rows = rows.filter(~(name.isin(*OWNERSHIP) & ~F.col("jsonl") & F.col("callback")))
    wm = Window.partitionBy("group", "member").orderBy("seq", "part")
    upto = wm.rowsBetween(UNB, 0)
    rows = (rows
            .withColumn("inc", F.sum((name == STARTUP).cast("int")).over(upto))
            .withColumn("life", F.sum(name.isin(STARTUP, SHUTDOWN).cast("int")).over(upto))
            .withColumn("proto", _protocol(default_protocol)))
    # the last value within the incarnation, read over the member's own window (one sort for all of them):
    # the last value of the member, kept only when it was seen in this incarnation
    def in_inc(value: Column, frame: WindowSpec | None = None) -> Column:
        last = F.last(F.when(value.isNotNull(), F.struct(F.col("inc").alias("i"), value.alias("v"))), True) \
            .over(frame if frame is not None else upto)
        return F.when(last["i"] == F.col("inc"), last["v"])

    rows = (rows
            .withColumn("gen_ff", in_inc(F.col("generation")))
            .withColumn("mid_ff", in_inc(F.when(F.col("member_id") != "", F.col("member_id"))))
            .withColumn("known", F.max((F.col("jsonl") | name.isin(STARTUP, LOST)
                                        | ((name == ASSIGNED) & (F.col("proto") == "eager"))).cast("int"))
                        .over(upto) == 1)
            .withColumn("shut_down", F.coalesce(F.last(F.when(name.isin(STARTUP, SHUTDOWN), name), True)
                                                .over(upto) == SHUTDOWN, F.lit(False))))
    # what later rules read of the member's history, computed here in the same order (the member's rows are
    # sorted once for all of these): whether it prints record_data, its reset policy and subscription so far,
    # and, before the row's event (rows of one event share a seq: the frame ends at the event before), the
    # generation of its last assignment in this incarnation (Member.assigned_gen: a restart forgets it) and
    # the seq of its last assignment or startup
    before = Window.partitionBy("group", "member").orderBy("seq").rangeBetween(UNB, -1)  # served by the (seq, part) sort
    rows = (rows
            .withColumn("rd", F.max((name == RECORD_DATA).cast("int")).over(upto) == 1)
            .withColumn("policy", F.last("auto_offset_reset", True).over(upto))
            .withColumn("subscribed", F.last("subscription", True).over(upto))
            .withColumn("assigned_gen", in_inc(F.when((name == ASSIGNED) & (F.col("gen_ff") >= 0), F.col("gen_ff")),
                                               before))
            .withColumn("last_assign_ev", F.max(F.when(name.isin(ASSIGNED, STARTUP), F.col("seq"))).over(before))
            .withColumn("n_assigned", F.sum(((name == ASSIGNED) & (F.col("part") == 0)).cast("int")).over(upto)))
    # what intervals() needs of the member's history, in the same order: the end of a lifetime where one ends
    # (a startup_complete: a restart, dated by the row before; a shutdown_complete), and, on assignments, the
    # member's last row (time, generation, file: the end of an interval still open when its trace ended)
    life_end = F.struct(
        F.col("seq").alias("seq"),
        F.when(name == SHUTDOWN, F.col("timestamp")).otherwise(F.coalesce(F.lag("timestamp").over(wm),
                                                                         F.col("timestamp"))).alias("ts"),
        F.when(name == STARTUP, F.lit("killed")).when(F.col("reason") == "crash", F.lit("crashed"))
        .otherwise(F.lit("shutdown")).alias("kind"),
        F.when(name == SHUTDOWN, F.col("gen_ff")).otherwise(F.lag("gen_ff").over(wm)).alias("gen"),
        F.col("source").alias("source"), where().alias("where"))
    whole = wm.rowsBetween(UNB, UNF)
    assigning = name == ASSIGNED
    rows = (rows
            .withColumn("life_end", F.when(name.isin(STARTUP, SHUTDOWN), life_end))
            .withColumn("m_last_ts", F.when(assigning, F.max("timestamp").over(whole)))
            .withColumn("m_last_gen", F.when(assigning, F.last("gen_ff").over(whole)))
            .withColumn("m_last_source", F.when(assigning, F.last("source").over(whole))))
    # the member's rows per partition, sorted once: the lifetime is keyed in the value (the last ownership
    # event of the partition, kept when it is of this lifetime), as the incarnation is above
    wtp = Window.partitionBy("group", "member", "topic", "partition").orderBy("seq", "part")
    prev = F.last(F.when(name.isin(*OWNERSHIP), F.struct(F.col("life").alias("i"), name.alias("v"))), True) \
        .over(wtp.rowsBetween(UNB, -1))
    prev_own = F.when(prev["i"] == F.col("life"), prev["v"])
    has_tp = F.col("topic").isNotNull() & F.col("partition").isNotNull()
    rows = rows.withColumn("owned_before", has_tp & F.coalesce(prev_own == ASSIGNED, F.lit(False)))
    rows = (rows
            .withColumn("is_new", has_tp & (name == ASSIGNED) & ~F.col("owned_before"))
            .withColumn("is_release", name.isin(REVOKED, LOST) & F.col("owned_before")))
    # in the same order: ``ac`` (the member's assignments of the partition so far: its ownerships' number) and
    # ``poll_pos`` (the position its last poll of the partition left, in this incarnation)
    last_poll = F.last(F.when(name.isin(CONSUMED, RECORD_DATA) & F.col("maxOffset").isNotNull(), F.struct(
        F.col("inc").alias("i"), (F.col("maxOffset") + 1).alias("v"))), True).over(wtp.rowsBetween(UNB, -1))
    rows = (rows
            .withColumn("ac", F.sum(F.col("is_new").cast("int")).over(wtp.rowsBetween(UNB, 0)))
            .withColumn("poll_pos", F.when(last_poll["i"] == F.col("inc"), last_poll["v"])))
    # the group's rows per partition, sorted once, before each row: the last successful commit's offset
    # (``tp_committed``), the assignments so far (``tp_epoch``), and at an assignment the partition's last
    # release (``tp_last_release``) and last new owner (``tp_prev_new``)
    wgtp = Window.partitionBy("group", "topic", "partition").orderBy("seq", "part").rowsBetween(UNB, -1)
    ok_commit = (name == COMMITTED) & F.coalesce(F.col("success"), F.lit(True)) \
        & (F.coalesce(F.col("error"), F.lit("")) == "")
    release = F.struct(F.col("member").alias("member"), F.when(F.col("gen_ff") >= 0, F.col("gen_ff")).alias("gen"),
                       F.col("timestamp").alias("ts"), where().alias("where"))
    is_new = F.col("is_new")
    return (rows
            .withColumn("tp_committed", F.last(F.when(ok_commit & (F.col("offset") >= 0), F.col("offset")), True)
                        .over(wgtp))
            .withColumn("tp_epoch", F.coalesce(F.sum(is_new.cast("int")).over(wgtp), F.lit(0).cast("long")))
            .withColumn("tp_last_release", F.when(is_new, F.last(F.when(F.col("is_release"), release), True)
                                                  .over(wgtp)))
            .withColumn("tp_prev_new", F.when(is_new, F.last(F.when(is_new, F.col("member")), True).over(wgtp))))


def intervals(rows: DataFrame) -> DataFrame:
    """One row per ownership interval (see the module doc), with how and when it ended, its number among the
    member's ownerships of the partition (``ac``) and the start of the next one (``next_start``).

    No pass of its own over the member's rows (an earlier version read them backwards, two more sorts of
    every row): the interval's release is the ``is_release`` row of the same ownership (``ac``: a partition
    owned has one release per ownership, within its lifetime), its lifetime's end the member's next
    ``startup_complete`` / ``shutdown_complete`` (the row that starts lifetime ``life + 1``); both are
    equi-joins of a few rows (assignments, releases, lifetime ends), the rest member_rows' columns."""
    name = F.col("name")
    ev_where = where()
    new = rows.filter(F.col("is_new"))
    releases = rows.filter(F.col("is_release")).select(
        "group", "member", "topic", "partition", "ac", F.struct(
            F.col("seq").alias("seq"), F.col("timestamp").alias("ts"),
            F.when(name == LOST, F.lit("lost")).otherwise(F.lit("revoked")).alias("kind"),
            F.col("gen_ff").alias("gen"), F.col("source").alias("source"), ev_where.alias("where"))
        .alias("next_release"))
    # rows of one event share its lifetime; a lifetime's end is its event's first row
    ends = rows.filter(name.isin(STARTUP, SHUTDOWN) & (F.col("part") == 0)).select(
        "group", "member", (F.col("life") - 1).alias("life"), F.col("life_end").alias("next_life"))
    # the member's next assignment of the partition (the next ownership's start), on the same keys
    nexts = new.select("group", "member", "topic", "partition", (F.col("ac") - 1).alias("ac"),
                       F.col("seq").alias("next_start"))
    own = ["group", "member", "topic", "partition", "ac"]
    new = (new.join(releases, own, "left").join(nexts, own, "left")
           .join(ends, ["group", "member", "life"], "left"))
    rel, life = F.col("next_release"), F.col("next_life")
    by_release = rel.isNotNull() & (life.isNull() | (rel["seq"] < life["seq"]))
    eof = F.struct(F.lit(EOF_SEQ).cast("long").alias("seq"), F.greatest("m_last_ts", "timestamp").alias("ts"),
                   F.lit("eof").alias("kind"), F.col("m_last_gen").alias("gen"),
                   F.col("m_last_source").alias("source"),
                   F.concat(F.col("m_last_source"), F.lit(":end")).alias("where"))
    end = F.when(by_release, rel).when(life.isNotNull(), life).otherwise(eof)
    return new.select(
        "group", "member", "topic", "partition", "inc",
        F.col("seq").alias("start_seq"), F.col("timestamp").alias("start_ts"), F.col("source").alias("start_source"),
        ev_where.alias("start_where"), F.when(F.col("gen_ff") >= 0, F.col("gen_ff")).alias("start_gen"),
        (F.col("proto") == "cooperative").alias("coop"), F.col("mid_ff").alias("start_mid"),
        end.alias("end"), "ac", "next_start")


def event_level(rows: DataFrame, *extra: Any) -> DataFrame:
    """One row per event (its first partition row), for checks about whole events."""
    return rows.filter(F.col("part") == 0).select(*extra) if extra else rows.filter(F.col("part") == 0)
