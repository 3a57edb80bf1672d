"""Who owned what when, as Spark columns: the checker's per-member state, computed with window functions.

The streaming checker (:mod:`traces.checker`) keeps, per member, its generation, member id,
protocol and owned partitions, and updates them event by event. Here the same state is a set of
columns on the member rows, each a window function over the member's rows in the checker's order
(``seq``, then ``part``):

- ``inc``: incarnations, counted by ``startup_complete`` (a restart forgets generation, member id,
  positions); ``life``: ownership lifetimes, counted by ``startup_complete`` and
  ``shutdown_complete`` (both end everything owned).
- ``gen_ff`` / ``mid_ff``: the member's generation and member id after the row (last non-null
  value in the incarnation; a moved member's generation at the move, ``moved_generation``, counts
  where its carrying row names none: the checker keeps ``Member.generation`` when it moves the
  member, ``Checker._member``), ``proto``: its protocol (the last ``protocol`` field, else what its
  first assignor implies, else the default), ``known``: whether what it owns is known (a callback
  trace, or since a ``startup_complete``, an eager assignment or a ``partitions_lost``);
  ``shut_down``: whether the member's last ``startup_complete`` / ``shutdown_complete`` so far is a
  shutdown (the checker's ``Member.shutdown``); ``rd``: whether it printed ``record_data`` so far,
  ``policy``: its last ``auto_offset_reset`` so far (both read by :func:`spark_analysis.delivery.offsets`);
  ``ends_life``: on a ``startup_complete`` / ``shutdown_complete``, how the intervals open at it end.
  ``member_last`` (where the member's trace ended) and ``mid_ff`` are kept on assignment rows only, the rows
  :func:`intervals` starts an interval at, its one reader of them.
- ``context``: what the delivery, handoff, membership and move rules read of the corpus (``CONTEXT``), one
  struct, null on the rows that hold none of it (see :func:`member_rows`).
- ``owned_before``: per (member, lifetime, partition), whether the last ownership event before the
  row was ``partitions_assigned``. ``is_new`` marks an assignment of a partition not owned
  (the checker's ``new``), ``is_release`` a revoke or loss of one owned.

:func:`intervals` turns that into ownership intervals: from an ``is_new`` row to the release that
ends it -- the next ``is_release`` of the partition, the member's next ``shutdown_complete`` /
``startup_complete`` (a restart: "killed"), or the end of its trace ("eof", open-ended: the
checker still counts it as holding the partition).

Every column is a built-in expression; the windows are all keyed by ``group`` first, so once the
rows are partitioned by group (the one shuffle of the job) no window needs another.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.window import WindowSpec

ASSIGNED, REVOKED, LOST = "partitions_assigned", "partitions_revoked", "partitions_lost"
CONSUMED, RECORD_DATA, COMMITTED = "records_consumed", "record_data", "offsets_committed"
STARTUP, SHUTDOWN, JOINED = "startup_complete", "shutdown_complete", "group_joined"
REMOVED = "coordinator_member_removed"
OWNERSHIP = (ASSIGNED, REVOKED, LOST)
EOF_SEQ = 1 << 62  # the end of an interval still open when its member's trace ended
UNB = Window.unboundedPreceding
UNF = Window.unboundedFollowing
# The corpus columns that no reader of the member rows uses: coordinator-side fields (a member event has none of
# state, detail, members, member_count, a KIP-848 member assignment's pending_revocation), a static member's instance
# id (read from the coordinator's events) and the records a poll counted (the positions are minOffset / maxOffset).
# Taken from the plans of every frame of ``mine.plan``: the columns its scans of the member rows' cache read
# (tests/spark_analysis/test_member_rows.py holds the two lists to them). Every column a row carries is copied into
# each of member_rows' sorts, out of each of its Window operators and into the cache: at 1M, copying rows and building
# the cache were half its task time.
NOT_READ = ("instance_id", "count", "state", "detail", "members", "member_count", "pending_revocation")
# Read by member_rows' own windows (proto, policy, ends_life, member_last), by no reader after them: dropped after the
# last.
STATE_ONLY = ("protocol", "assignor", "reason", "auto_offset_reset", "group_named")
# Read by the delivery, handoff, membership and move rules, never by the core's: carried in one struct column,
# ``context``, null on every row that holds nothing those rules read (see member_rows). The first two are the file's
# (``format`` a string on every member row, ``commits_shown`` a flag per file), read at the member's first
# callback-trace row only; the others are null but on the few rows that say them (an ``enable_auto_commit`` /
# ``auto.commit.interval.ms`` / subscription field, a moved member's first row in its new group). Nine slots and
# a string on every row were copied through each sort, Window operator and the cache; one mostly-null slot is.
CONTEXT = ("format", "commits_shown", "enable_auto_commit", "auto_commit_interval_ms", "subscription", "moved_from",
           "moved_generations", "moved_revoked", "moved_assigned_gen")
SAID = CONTEXT[2:]  # the context columns a row carries only where its event says them
# The member rows' columns set on few kinds of row, packed into one struct in the rows' cache (spark_analysis.packing;
# mine.plan): ``member_last``, ``mid_ff`` and ``member_last_gen`` on assignment rows only, ``ends_life`` on a
# ``startup_complete`` / ``shutdown_complete`` only (see member_rows), ``error`` on a failed commit or sync,
# ``moved_generation`` on a moved member's first row. Together non-null on about 3% of the member rows at 1M; one
# column each, their null positions (4 bytes a null: NullableColumnBuilder) took 48 of the cache's 96 MB
# (docs/benchmarks-spark.md, h25-ab).
ROWS_PACKED = ("member_last", "ends_life", "mid_ff", "member_last_gen", "error", "moved_generation")
# The sort order of the member rows' last Window operator (per member, lifetime and partition, in the checker's
# order), and so of the rows' cache: a window over the cached rows partitioned by (group, member, topic,
# partition) and ordered by (life, seq, part) -- the checker's order, as a member's lifetimes count up in it --
# reads them in this order and needs no sort (invariants.unowned).
TP_WINDOW = ("group", "member", "topic", "partition", "life", "seq", "part")


def where(source: str = "source", line: str = "line") -> Column:
    """Evidence as the checker writes it: ``file:line``."""
    return F.concat_ws(":", F.col(source), F.col(line).cast("string"))


@dataclass(frozen=True)
class TraceSets:
    """What of a corpus the checker reads as one trace (:func:`trace_set`), from its ``input.json``
    (``mine._trace_sets``): ``runs``, the labels of its runs when it holds several (``corpus --from a/ b/``: every
    group named ``GROUP @ RUN``; none: the whole corpus is one run); ``prefixed``, whether its groups carry a trace
    set's prefix ("SET/group": ``corpus.from_traces``' ``group_prefix``, the agreement test's corpus of every
    sample). Only a corpus that says so is read by prefix: a real group's name may hold a "/" (``team/orders``),
    and taking the text before it for a trace set would keep apart what the checker reads as one trace (an old owner
    that named no group would not count a removal from ``team/orders``, and the job would report a violation
    where the checker leaves the overlap undecided). The default, prefixed, is the benchmark's core's (its DuckDB
    peer reads the prefix alike)."""
    runs: tuple[str, ...] = ()
    prefixed: bool = True


#: The default of every reader of trace sets: one run, groups read by prefix (the benchmark's core, the tests' corpus)
PREFIXED = TraceSets()


def trace_set(group: Column, sets: TraceSets = PREFIXED) -> Column:
    """What the checker reads as one trace, of a group: its run (``sets.runs``) and within it, in a corpus whose
    groups are prefixed (``sets.prefixed``), its trace set, "SET/"; else "": ``PREFIX @ RUN`` with runs, ``PREFIX``
    without. ``groupspec check a/ b/`` checks each run with a checker of its own (traces.runs), so ids, removals
    and whole-trace counts meet only within one.

    The run is the listed label the group name ends with after " @ ": the corpus appended it to every group of the
    run (``corpus.from_runs``), so a match is exact, the longest label tried first (a label may hold " @ ": "g @ b
    @ a" is g of run "b @ a" when both "a" and "b @ a" are labels); the prefix is read from the name without it (a
    label's "/" is no set). Evaluated on few rows (removals, the undecided candidates, member-id spans, per group and
    member for the notes): one suffix test per run on each."""
    def prefix(name: Column) -> Column:
        return F.regexp_extract(name, r"^([^/]*/)", 1) if sets.prefixed else F.lit("")

    if not sets.runs:
        return prefix(group)
    run: Column = F.lit(None).cast("string")
    for label in sorted(sets.runs, key=len):  # the last wrapped is tested first: the longest
        run = F.when(group.endswith(f" @ {label}"), F.lit(label)).otherwise(run)
    # a group of no listed run (a corpus put together by hand): its prefix alone, as before runs were read
    return F.when(run.isNull(), prefix(group)).otherwise(
        F.concat(prefix(group.substr(F.lit(1), F.length(group) - F.length(run) - 3)), F.lit(" @ "), run))


def commit_ok() -> Column:
    """A commit that did not fail: an ``offsets_committed`` row whose ``success`` is not false (``Checker._committed``
    counts it in ``saw["commits"]`` and judges its generation)."""
    return (F.col("name") == COMMITTED) & F.coalesce(F.col("success"), F.lit(True))


def commit_entry_ok() -> Column:
    """A commit entry that took: :func:`commit_ok`, and no ``error`` on the row (the entry's, else the event's, as
    the corpus writes it); ``Checker._committed`` skips an entry with an error."""
    return commit_ok() & (F.coalesce(F.col("error"), F.lit("")) == "")


def named_protocol() -> Column:
    """The row's ``protocol`` field where it names a protocol (``traces.state.PROTOCOLS``: eager, cooperative and
    consumer, KIP-848's), else null: what ``Checker._context`` sets ``Member.protocol`` to. The one test for the
    job's three readers of a member's protocol (:func:`_protocol`, ``notes.counts``, ``converges``), so that none
    reads fewer values than the checker."""
    from traces.state import PROTOCOLS

    return F.when(F.col("protocol").isin(*sorted(PROTOCOLS)), F.col("protocol"))


def assignor_kind(assignor: Column) -> Column:
    """``cooperative`` or ``eager`` for an assignor of a known kind (``traces.state``), else null: the protocol the
    checker takes from a member's first such assignor while it names none (``Checker._context``), and from the
    coordinator's assignor (``CoordinatorChecks._bound``)."""
    from traces.state import COOPERATIVE_ASSIGNORS, EAGER_ASSIGNORS

    return (F.when(assignor.isin(*sorted(COOPERATIVE_ASSIGNORS)), F.lit("cooperative"))
            .when(assignor.isin(*sorted(EAGER_ASSIGNORS)), F.lit("eager")))


def _protocol(default_protocol: str | None) -> Column:
    """The checker's ``Member.protocol`` (``Checker._member`` / ``_context``): the last ``protocol`` field, else the
    default (``--protocol``) when one is given, else the kind of the first assignor the member names -- the checker
    reads an assignor only while the member's protocol is unknown, and a default makes it known from the start.
    Every member row counts, those member_rows drops too: the checker's ``_context`` reads them first."""
    wm = Window.partitionBy("group", "member").orderBy("seq", "part").rowsBetween(UNB, 0)
    # consumer (KIP-848) counts as a protocol named: a member that goes from eager to consumer is judged by neither
    # the eager nor the cooperative rules from then on, as the checker's Member.protocol is neither
    named = F.last(named_protocol(), True).over(wm)
    by_assignor = F.first(assignor_kind(F.col("assignor")), True).over(wm)
    return F.coalesce(named, F.lit(default_protocol) if default_protocol is not None else by_assignor)


def _ends_life(wm: WindowSpec) -> Column:
    """On a ``startup_complete`` / ``shutdown_complete`` row, how the intervals open at it end: when, where and in
    which generation (``Checker._startup`` ends them "killed", ``Checker._shutdown`` "shutdown" or "crashed", both
    by ``_end_incarnation``). A restart ends them at the member's row before it, in the generation the member had
    then: its row before it, of any kind -- a client-log ownership line that :func:`member_rows`' filter drops too
    (``Member.last_ts`` and ``Member.generation`` count it: ``Checker._context`` reads it before
    ``_callback_superseded``). A column of ``member_rows``' second pass (it reads
    ``gen_ff``, from the first), so that :func:`intervals` needs no pass of its own to look one row back."""
    name = F.col("name")
    before = F.last(F.struct(F.col("timestamp").alias("ts"), F.col("gen_ff").alias("gen")), True) \
        .over(wm.rowsBetween(UNB, -1))
    return F.when(name.isin(STARTUP, SHUTDOWN), F.struct(
        F.col("seq").alias("seq"),
        F.when(name == SHUTDOWN, F.col("timestamp")).otherwise(F.coalesce(before["ts"], F.col("timestamp"))).alias("ts"),
        F.when(name == STARTUP, F.lit("killed")).when(F.col("reason") == "crash", F.lit("crashed"))
        .otherwise(F.lit("shutdown")).alias("kind"),
        F.when(name == SHUTDOWN, F.col("gen_ff")).otherwise(before["gen"]).alias("gen"),
        F.col("source").alias("source"), where().alias("where")))


def member_rows(events: DataFrame, default_protocol: str | None) -> DataFrame:
    """The rows of member events, with the checker's per-member state as columns (see the module doc).

    Every per-member column is a window over the same spec (the member's rows in the checker's order). Spark
    computes window functions of one spec in one Window operator (one pass that buffers each member's rows) only
    when they sit in one projection and none reads another's result: each ``withColumn`` over a window column is
    an operator (a pass) of its own, and so is a filter between two windows. So the columns below are written as
    independent running aggregates in one projection, and only ``known`` (which reads ``proto``) and ``ends_life``
    (which reads ``gen_ff``) need a second pass. (Before, with one ``withColumn`` each and the filter between them, these were 8 passes.)
    """
    name = F.col("name")
    wm = Window.partitionBy("group", "member").orderBy("seq", "part")
    upto = wm.rowsBetween(UNB, 0)

    # The last value within the incarnation (a startup_complete starts one): the last row so far that either has
    # a value or is a startup_complete. A startup after the value's row ends it (null); a startup row's own value
    # belongs to the new incarnation. One running aggregate, so it does not read ``inc`` and shares its pass.
    def in_inc(value: Column) -> Column:
        return F.last(F.when(value.isNotNull() | (name == STARTUP), F.struct(value.alias("v"))), True).over(upto)["v"]

    # Client-log ownership lines of a member whose callbacks are traced are context only (the checker's
    # _callback_superseded): the job drops them below, after the member's windows. What the checker reads of them
    # first (its _context, before _assigned / _let_go return) the windows read of them too: the member's first and
    # last event of any kind (Member.first_ts, last_ts / last_src: where its trace ended, and the time a restart
    # ends what it owned), its incarnations, member id, generation (Member.generation: the old owner's at an
    # overlap, at a restart or at the end of its trace), protocol or first assignor, and offset reset policy. Only
    # ``known`` skips them (``kept``): the checker sets Member.known after the superseded test. The subscription
    # and auto-commit settings such a line says reach the member's next row the job reads through the corpus
    # (corpus._MemberGroups.place); per-file generations (generation-monotonic) need no more: a client log's
    # ownership line repeats the generation of the JoinGroup / SyncGroup line before it in the same file, a row
    # the job keeps (traces.readers.java_consumer_log, kafka_python_log, librdkafka_log). (life, rd and shut_down
    # count names those lines never have.)
    kept = ~(name.isin(*OWNERSHIP) & ~F.col("jsonl") & F.col("callback"))
    last = F.last(F.struct(F.col("timestamp").alias("ts"), F.col("source").alias("source"))) \
        .over(wm.rowsBetween(UNB, UNF))
    # The columns said on few rows go into one struct before the first sort (null where the row says none of
    # them); format and commits_shown, said by every row of a file, ride through the first pass, which finds the
    # member's first callback-trace row, the one row that keeps them (delivery._members, handoff._auto read them
    # there). ``jsonl`` is the file's: no callback-trace row comes before it.
    said = F.when(reduce(operator.or_, [F.col(c).isNotNull() for c in SAID]), F.struct(*[F.col(c) for c in SAID]))
    rows = events.filter(F.col("member").isNotNull()).drop(*NOT_READ).withColumn("said", said).drop(*SAID)
    rows = rows.withColumns({
        # only an assignment can start an interval, the one reader of where the member's trace ended, when it
        # began (its first row of any kind, a dropped client-log line too), whether it had named its group (the
        # undecided rule's; it changes only at a move, while the member owns nothing, so an interval's start says
        # it for the whole interval) and of its member id (intervals): null on the other rows, so that those
        # strings are not copied on every row
        "member_last": F.when(name == ASSIGNED, F.struct(
            last["ts"].alias("ts"), last["source"].alias("source"),
            F.min(F.col("timestamp")).over(wm.rowsBetween(UNB, UNF)).alias("first_ts"),
            F.col("group_named").alias("group_named"))),
        "first_jsonl": F.col("jsonl") & ~F.coalesce(F.max(F.col("jsonl")).over(wm.rowsBetween(UNB, -1)),
                                                     F.lit(False)),
        "inc": F.sum((name == STARTUP).cast("int")).over(upto),
        "mid_ff": F.when(name == ASSIGNED, in_inc(F.when(F.col("member_id") != "", F.col("member_id")))),
        "life": F.sum(name.isin(STARTUP, SHUTDOWN).cast("int")).over(upto),
        "proto": _protocol(default_protocol),
        # rd / policy: what spark_analysis.delivery.offsets reads per member (record_data printed so far, the
        # last auto_offset_reset)
        "rd": F.max((name == RECORD_DATA).cast("int")).over(upto) == 1,
        "policy": F.last(F.col("auto_offset_reset"), True).over(upto),
        "gen_ff": in_inc(F.coalesce(F.col("generation"), F.col("moved_generation")))})
    first_file = F.col("first_jsonl")
    rows = rows.withColumn("context", F.when(first_file | F.col("said").isNotNull(), F.struct(
        F.when(first_file, F.col("format")).alias("format"), F.when(first_file, F.col("commits_shown"))
        .alias("commits_shown"), *[F.col("said")[c].alias(c) for c in SAID]))) \
        .drop("format", "commits_shown", "said", "first_jsonl")
    # known reads proto, ends_life reads gen_ff: the second pass (shut_down rides along, in the columns' old order)
    rows = rows.withColumns({
        "known": F.max((kept & (F.col("jsonl") | name.isin(STARTUP, LOST)
                                | ((name == ASSIGNED) & (F.col("proto") == "eager")))).cast("int")).over(upto) == 1,
        "shut_down": F.coalesce(F.last(F.when(name.isin(STARTUP, SHUTDOWN), name), True).over(upto) == SHUTDOWN,
                                F.lit(False)),
        "ends_life": _ends_life(wm),
        # the member's generation on its last row of any kind (Member.generation after its last event), where an
        # interval still open at the end of its trace ends (intervals' "eof"); on assignment rows only, as
        # member_last
        "member_last_gen": F.when(name == ASSIGNED, F.last(F.struct(F.col("gen_ff").alias("v")))
                                  .over(wm.rowsBetween(UNB, UNF))["v"])}).filter(kept)
    wtp = Window.partitionBy(*TP_WINDOW[:5]).orderBy(*TP_WINDOW[5:])
    prev_own = F.last(F.when(name.isin(*OWNERSHIP), name), True).over(wtp.rowsBetween(UNB, -1))
    has_tp = F.col("topic").isNotNull() & F.col("partition").isNotNull()
    rows = rows.withColumn("owned_before", has_tp & F.coalesce(prev_own == ASSIGNED, F.lit(False)))
    rows = (rows
            .withColumn("is_new", has_tp & (name == ASSIGNED) & ~F.col("owned_before"))
            .withColumn("is_release", name.isin(REVOKED, LOST) & F.col("owned_before")))
    # Spark's column pruning pushes this drop below every Window operator that does not read the column: protocol,
    # assignor and auto_offset_reset go before the first sort (the projection feeding it computes what the windows
    # read of them), reason after the first Window operator; the later sort, outputs and the cache go without them
    return rows.drop(*STATE_ONLY)


def intervals(rows: DataFrame) -> DataFrame:
    """One row per ownership interval (see the module doc), with how and when it ended."""
    name = F.col("name")
    ev_where = where()
    # "the next X after this row" is the last X of the rows after it, read backwards: a running frame over the
    # reversed order. (A frame from 1 following to unbounded following costs Spark the rest of the
    # partition for every row: quadratic per member.) Every per-member column is read in that one reversed
    # order -- the member's last row is its first -- and none reads another's result, so they are one pass (one
    # Window operator), and one more per partition for the next release.
    # What a lifetime's end reads from the row before it is a column of the member rows (``ends_life``): looked
    # up here, in the reversed order, it was a pass of its own.
    back = Window.partitionBy("group", "member").orderBy(F.desc("seq"), F.desc("part"))
    back_tp = Window.partitionBy("group", "member", "life", "topic", "partition") \
        .orderBy(F.desc("seq"), F.desc("part")).rowsBetween(UNB, -1)
    release = F.last(F.when(F.col("is_release"), F.struct(
        F.col("seq").alias("seq"), F.col("timestamp").alias("ts"),
        F.when(name == LOST, F.lit("lost")).otherwise(F.lit("revoked")).alias("kind"),
        F.col("gen_ff").alias("gen"), F.col("source").alias("source"), ev_where.alias("where"),
        F.col("part").alias("part"))), True)
    # Only the rows an interval starts at (is_new) or may end at (a release, a lifetime's end) take part: the
    # next release or lifetime end after a row is the same among them as among all the member's rows, and what
    # an interval reads of the member's other rows (its first and last) member_rows keeps on the assignment
    # rows (member_last, member_last_gen). So the two windows sort those few rows, not every member row.
    marks = rows.filter(F.col("is_new") | F.col("is_release") | F.col("ends_life").isNotNull())
    marks = marks.withColumns({
        "next_life": F.last("ends_life", True).over(back.rowsBetween(UNB, -1)),
        "next_release": release.over(back_tp)})
    new = marks.filter(F.col("is_new"))
    rel, life = F.col("next_release"), F.col("next_life")
    by_release = rel.isNotNull() & (life.isNull() | (rel["seq"] < life["seq"]))
    last = F.col("member_last")
    eof = F.struct(F.lit(EOF_SEQ).cast("long").alias("seq"), F.greatest(last["ts"], "timestamp").alias("ts"),
                   F.lit("eof").alias("kind"), F.col("member_last_gen").alias("gen"), last["source"].alias("source"),
                   F.concat(last["source"], F.lit(":end")).alias("where"))
    end = F.when(by_release, rel.dropFields("part")).when(life.isNotNull(), life).otherwise(eof)
    return new.select(
        "group", "member", "topic", "partition", "inc",
        F.col("seq").alias("start_seq"), F.col("timestamp").alias("start_ts"), F.col("source").alias("start_source"),
        ev_where.alias("start_where"), F.when(F.col("gen_ff") >= 0, F.col("gen_ff")).alias("start_gen"),
        (F.col("proto") == "cooperative").alias("coop"), F.col("mid_ff").alias("start_mid"),
        last["first_ts"].alias("member_first_ts"), last["group_named"].alias("group_named"), end.alias("end"),
        # where in the releasing event the partition is listed (null for an end of lifetime or of the trace): the
        # checker releases a revoke's or a loss's partitions in the event's order (Checker._let_go), the rest in
        # partition order (_end_incarnation, finish)
        F.when(by_release, rel["part"]).alias("end_part"))


def event_level(rows: DataFrame, *extra: Any) -> DataFrame:
    """One row per event (its first partition row), for checks about whole events."""
    return rows.filter(F.col("part") == 0).select(*extra) if extra else rows.filter(F.col("part") == 0)
