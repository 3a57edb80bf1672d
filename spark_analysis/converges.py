"""The checker's ``converges`` as Spark columns: rebalance streaks, their bound, and the SyncGroup races.

The rule is :mod:`traces.coordinator_checks`' (``_coord_rebalance``, ``_bound``, ``_coord_stable``,
``_confirm_tentative``, ``_coord_removed``, ``_coord_state``) with the SyncGroup bookkeeping of
:mod:`traces.checker` (``_synced``). The checker keeps it as per-group state
(:class:`traces.state.GroupState`) updated event by event; here each piece of that state is a
window function over the group's coordinator events and its members' ``group_synced`` answers, in
the checker's order (``seq``):

- *change pending*: set by a member removed (not a static member replaced in a Stable group), a
  member joined, a coordinator load / unload, the group going Empty; taken by the next
  ``coordinator_rebalance``. A rebalance *resets* the streak when a change was pending or its
  reason names a membership change (``_MEMBERSHIP_REASON``, Spark's ``rlike`` on the same pattern
  text, case-insensitive through ``(?i)``).
- *streak*: 1 at a resetting rebalance, one more at each other rebalance; a stable generation whose
  member set or count differs from the last one's (*changed*) brings it down to 1. Both are
  *anchors*: the streak at a row is the anchor's value plus the rebalances since it.
- *SyncGroup races*: a generation is added when a member's SyncGroup is answered
  REBALANCE_IN_PROGRESS, and at a rebalance when a member of the last stable generation never
  reported that generation's answer (the group reports answers at all); a resetting rebalance
  clears them. Counted distinct per generation between two resets.
- *bound*: 1 (eager) or 2 (cooperative, or unknown) plus the races. The protocol is the
  coordinator's last assignor, else the protocols of the group's members so far
  (``Member.protocol``: the last ``protocol`` field, else the first assignor's kind, else the
  default).
- a rebalance beyond the bound is a *tentative* finding, the first one of its streak (between two
  anchors); a KIP-848 rebalance (``protocol`` consumer) is counted but never judged. The next
  stable generation decides it: changed, it is dropped; unchanged, it is confirmed -- or counted
  unjudged when neither the last stable generation's members nor any SyncGroup answer is in the
  trace (a broker's server.log alone). A resetting rebalance drops it; at the end of the trace it
  is confirmed if the streak is still beyond the bound.

The rows read are the coordinator events and ``group_synced`` (one row per event, the 17 ``COLUMNS``),
in two passes over the group (one sort each, both over those few rows only); the members'
protocols are one window over each member's rows (a sort of the member rows' few columns read here, within the
group partitions: no exchange) that keeps the rows changing a member's protocol, then one aggregate over those.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_analysis.invariants import VIOLATION, finding
from spark_analysis.membership import REBALANCE, REMOVED, STABLE, STATE, _java
from spark_analysis.ownership import UNB, UNF, assignor_kind, named_protocol, where
from traces.coordinator_checks import _MEMBERSHIP_REASON, converges_notes
from traces.state import COOPERATIVE_ASSIGNORS, EAGER_ASSIGNORS

SYNCED, OFFSET_COMMIT = "group_synced", "coordinator_offset_commit"
UNIQUE_GEN = -(1 << 40)  # a race without a generation: a value no other race has (the checker's -1 - len(races))
COLUMNS = ("group", "seq", "timestamp", "name", "reason", "state", "assignor", "protocol", "generation", "members",
           "member_count", "detail", "member_id", "instance_id", "error", "source", "line")


def _norm(state: Column) -> Column:
    """``coordinator_checks._normal_state`` for the two states the rule tests (Stable, Empty)."""
    return F.lower(F.regexp_replace(state, "[_-]", ""))


def _first_pass(events: DataFrame) -> DataFrame:
    """The coordinator rows and SyncGroup answers, one per event, with the state that needs no bound."""
    name = F.col("name")
    x = events.filter((F.col("part") == 0) & (
        name.isin(REBALANCE, STABLE, REMOVED, STATE, SYNCED)
        | ((name == OFFSET_COMMIT) & (F.col("state").isNotNull() | F.col("assignor").isNotNull())))).select(*COLUMNS)
    w = Window.partitionBy("group").orderBy("seq")
    run, before = w.rowsBetween(UNB, 0), w.rowsBetween(UNB, -1)
    coord = name.startswith("coordinator_")
    is_r, is_s, is_y = name == REBALANCE, name == STABLE, name == SYNCED
    count_s = F.when(F.col("members").isNotNull(), F.size(F.array_distinct("members"))).otherwise(F.col("member_count"))
    set_s = F.when(is_s & F.col("members").isNotNull(), F.array_sort(F.array_distinct("members")))
    # Three passes, one Window operator each: Spark computes the window columns of one spec in one operator only
    # when they sit in one projection and none reads another's result (a withColumn each was 10 operators). The
    # first pass reads only the rows; the second reads the first's state_now and prev_r; the third reads reset.
    x = x.withColumns({
        "assignor_now": F.last(F.when(coord & (F.col("assignor") != ""), F.col("assignor")), True).over(run),
        "state_now": _norm(F.last(F.when(coord, F.col("state")), True).over(run)),
        "prev_r": F.max(F.when(is_r, F.col("seq"))).over(before),
        "cnt_r": F.sum(is_r.cast("int")).over(run),
        "set_s": set_s,
        "count_s": F.when(is_s, count_s),
        "prev_set": F.last(set_s, True).over(before),
        "prev_count": F.last(F.when(is_s, count_s), True).over(before),
        "sees": F.coalesce(F.max(is_y.cast("int")).over(before) == 1, F.lit(False))})
    # a change pending (GroupState.change_pending): what sets it, before this rebalance and after the one before
    fenced_in_stable = (F.coalesce(F.col("reason"), F.lit("")) == "fenced") \
        & (F.coalesce(F.col("instance_id"), F.lit("")) != "") & (F.col("state_now") == "stable")
    setter = ((name == REMOVED) & (F.coalesce(F.col("member_id"), F.lit("")) != "") & ~fenced_in_stable) \
        | ((name == STATE) & (F.col("detail").isin("member-joined", "loaded", "unloaded")
                              | ((F.col("state_now") == "empty") & F.col("detail").isNull())))
    last_setter = F.max(F.when(setter, F.col("seq"))).over(before)
    pending = F.col("prev_r").isNull() | F.coalesce(last_setter > F.col("prev_r"), F.lit(False))
    membership = F.coalesce(F.col("reason"), F.lit("")).rlike(_java(_MEMBERSHIP_REASON.pattern))
    x = x.withColumns({
        "reset": is_r & (pending | membership),
        "changed": is_s & (F.coalesce(F.col("set_s") != F.col("prev_set"), F.lit(False))
                           | F.coalesce(F.col("count_s") != F.col("prev_count"), F.lit(False)))})
    # the streak after the row: the last anchor's value plus the rebalances since (a changed stable generation: 1,
    # or 0 before any rebalance -- min(streak, 1))
    anchor = F.last(F.when(F.col("reset") | F.col("changed"), F.struct(
        F.col("seq").alias("seq"), F.col("cnt_r").alias("cnt"),
        F.when(F.col("reset") | (F.col("cnt_r") > 0), 1).otherwise(0).alias("base"))), True).over(run)
    # the last stable generation waiting for its members' SyncGroup answers (GroupState.awaiting_sync): set by a
    # stable generation (its members, or on a server.log only their count once answers are seen), taken by the
    # next rebalance
    explicit = F.col("members").isNotNull()
    waits = is_s & F.col("generation").isNotNull() & (explicit | (F.col("member_count").isNotNull() & F.col("sees")))
    aw = F.last(F.when(waits, F.struct(F.col("seq").alias("seq"), F.col("generation").alias("gen"),
                                       explicit.alias("explicit"), F.col("set_s").alias("set"),
                                       F.col("count_s").alias("n"))), True).over(before)
    return x.withColumns({
        "seg": F.sum(F.col("reset").cast("int")).over(run),
        "anchor": anchor,
        "streak": F.coalesce(anchor["base"] + F.col("cnt_r") - anchor["cnt"], F.col("cnt_r")),
        "aw": F.when(F.col("prev_r").isNull() | (aw["seq"] > F.col("prev_r")), aw)})


def _races(x: DataFrame) -> DataFrame:
    """``race_first``: the row adds a generation to the group's SyncGroup races that is not there yet.

    A rebalance adds the waiting generation when fewer of its members answered than it had (answers
    counted over the rows waiting for the same generation); a REBALANCE_IN_PROGRESS answer adds its own
    generation. The first of each generation between two resets counts.
    """
    name = F.col("name")
    answered = (name == SYNCED) & F.col("aw").isNotNull() & (F.col("generation") == F.col("aw.gen")) \
        & F.col("error").isNull() & (~F.col("aw.explicit") | F.array_contains(F.col("aw.set"), F.col("member_id")))
    waiting = Window.partitionBy("group", "aw_seq")
    x = x.withColumn("aw_seq", F.col("aw.seq")).withColumn("got", F.when(
        F.col("aw.explicit"), F.size(F.collect_set(F.when(answered, F.col("member_id"))).over(waiting)))
        .otherwise(F.count(F.when(answered, 1)).over(waiting)))
    late = (name == REBALANCE) & F.col("aw").isNotNull() & ~F.col("reset") & F.col("sees") \
        & (F.col("got") < F.col("aw.n"))
    lost = (name == SYNCED) & (F.col("error") == "REBALANCE_IN_PROGRESS")
    x = x.withColumn("g_race", F.when(late, F.col("aw.gen")).when(
        lost, F.coalesce(F.col("generation"), F.lit(UNIQUE_GEN) - F.col("seq"))))
    first = F.row_number().over(Window.partitionBy("group", "seg", "g_race").orderBy("seq")) == 1
    return x.withColumn("race_first", (F.col("g_race").isNotNull() & first).cast("int"))


def _member_protocols(events: DataFrame, default_protocol: str | None) -> DataFrame:
    """Per group, each member's protocol over time: ``group, pieces`` (``v`` from event ``s`` until ``e``).

    Each change of a member's ``protocol`` field starts a piece: a row naming a value other than the member's
    previous named one (``Member.protocol`` is the last ``protocol`` field, so a protocol that goes back -- eager,
    cooperative, eager: a rolling upgrade rolled back -- is eager again from the row naming it). The previous value
    is a window over the member's rows (the events are partitioned by group already: no exchange; one sort of the
    member rows' few columns read here). Before the first named value, the default, else the first assignor of a
    known kind (the checker's ``Member.protocol`` before a protocol is named). Then one aggregate per member over
    the rows that change something and one per group, both in the group partitions.
    A member that moved groups counts in the group it left until the event that moved it
    (``moved_from``): ``CoordinatorChecks._bound`` counts the members whose group is the rebalancing
    one then (``Member.group``, changed by ``Checker._member``). Those moves are read from the new
    group's rows and joined to the old group's members: a broadcast of the few moved members.
    """
    m = events.filter(F.col("member").isNotNull() & (F.col("part") == 0))
    left = m.filter(F.col("moved_from").isNotNull()).select(
        F.col("moved_from").alias("group"), "member", F.col("seq").alias("left"))
    assignor, seq = F.col("assignor"), F.col("seq")
    wm = Window.partitionBy("group", "member").orderBy("seq")
    whole = wm.rowsBetween(UNB, UNF)
    named, before = F.col("named"), F.last("named", True).over(wm.rowsBetween(UNB, -1))
    # one Window operator (one spec, no column reading another's), then only the rows that change the protocol and
    # each member's first row go on: the aggregate collecting the changes reads a few rows, not every member row
    x = m.select("group", "member", "seq", "assignor", named_protocol().alias("named"))
    x = x.select("group", "member", "seq", F.when(
        named.isNotNull() & (before.isNull() | (before != named)), F.struct(seq.alias("s"), named.alias("v")))
        .alias("change"),
        F.min(F.when(assignor.isin(*sorted(COOPERATIVE_ASSIGNORS)), seq)).over(whole).alias("a_coop"),
        F.min(F.when(assignor.isin(*sorted(EAGER_ASSIGNORS)), seq)).over(whole).alias("a_eager"),
        F.min(seq).over(whole).alias("first"))
    firsts = x.filter(F.col("change").isNotNull() | (seq == F.col("first"))).groupBy("group", "member").agg(
        F.array_sort(F.collect_list("change")).alias("named"),  # collect_list skips the first row's null
        *[F.min(c).alias(c) for c in ("a_coop", "a_eager", "first")])
    if default_protocol is not None:  # Member.protocol starts as the default: an assignor never sets it
        pre = F.struct(F.col("first").alias("s"), F.lit(default_protocol).alias("v"))
    else:
        coop_first = F.col("a_eager").isNull() | (F.col("a_coop") < F.col("a_eager"))
        pre = F.struct(F.least("a_coop", "a_eager").alias("s"),
                       F.when(coop_first, F.lit("cooperative")).otherwise(F.lit("eager")).alias("v"))
    first_named = F.get(F.col("named"), 0)["s"]  # get: null past the end, also in ANSI mode
    pieces = F.concat(
        F.when(F.col("pre.s").isNotNull() & (first_named.isNull() | (F.col("pre.s") < first_named)),
               F.array(F.struct(F.col("pre.v").alias("v"), F.col("pre.s").alias("s"), first_named.alias("e"))))
        .otherwise(F.array().cast("array<struct<v:string,s:bigint,e:bigint>>")),
        F.transform(F.col("named"), lambda e, i: F.struct(e["v"].alias("v"), e["s"].alias("s"),
                                                          F.get(F.col("named"), i + 1)["s"].alias("e"))))
    # the last piece ends where the member left the group (if it did)
    ended = F.transform(pieces, lambda p: F.struct(p["v"].alias("v"), p["s"].alias("s"),
                                                   F.coalesce(p["e"], F.col("left")).alias("e")))
    per_member = (firsts.join(F.broadcast(left), ["group", "member"], "left")
                  .select("group", "left", "named", pre.alias("pre")).select("group", ended.alias("p")))
    return per_member.groupBy("group").agg(F.flatten(F.collect_list("p")).alias("pieces"))


def _protocol(assignor: Column, members: Column) -> Column:
    """``CoordinatorChecks._bound``'s protocol, as the message words it: the coordinator's assignor, else the
    members' (:func:`_members_protocol`)."""
    return F.coalesce(assignor_kind(assignor), members, F.lit("unknown (the cooperative bound is used)"))


def _members_protocol(at: Column | None) -> Column:
    """The group's protocol by its members' (``pieces``) at event ``at`` (None: at the end of the trace):
    cooperative if any member is, eager if all with a protocol are, else null."""
    def has(v: str) -> Column:
        return F.exists(F.col("pieces"), lambda p: (p["v"] == v) & (
            p["e"].isNull() if at is None else (p["s"] < at) & (p["e"].isNull() | (p["e"] > at))))

    return F.when(has("cooperative"), F.lit("cooperative")).when(has("eager") & ~has("consumer"), F.lit("eager"))


def _bound(proto: Column, races: Column) -> Column:
    return F.when(proto == "eager", 1).otherwise(2) + races


def _judged(x: DataFrame, protocols: DataFrame) -> DataFrame:
    """The second pass: the bound at each rebalance, the tentative findings, and what decides them.

    Rows: the coordinator's and SyncGroup rows, ``decided`` (a tentative finding a stable generation
    confirms: ``t``, ``unjudged``) on stable generations, and the group's state after the row
    (``after``) for the end of the trace.
    """
    name = F.col("name")
    # one row per group with its members' protocol pieces (a hash join on the group: no sort, no shuffle)
    x = x.join(protocols.hint("shuffle_hash"), "group", "left").withColumn(
        "pieces", F.coalesce(F.col("pieces"), F.array().cast("array<struct<v:string,s:bigint,e:bigint>>")))
    w = Window.partitionBy("group").orderBy("seq")
    run, before = w.rowsBetween(UNB, 0), w.rowsBetween(UNB, -1)
    y = x.withColumn("cum_races", F.sum("race_first").over(run))
    y = y.withColumn("races", F.col("cum_races") - F.coalesce(
        F.last(F.when(F.col("reset"), F.col("cum_races")), True).over(run), F.lit(0)))
    is_r = name == REBALANCE
    y = y.withColumn("proto", F.when(is_r, _protocol(F.col("assignor_now"), _members_protocol(F.col("seq")))))
    y = y.withColumn("bound", _bound(F.col("proto"), F.col("races")))
    y = y.withColumn("over", is_r & (F.coalesce(F.col("protocol"), F.lit("")) != "consumer")
                     & (F.col("streak") > F.col("bound")))
    reason = F.coalesce(F.col("reason"), F.lit(""))
    message = F.format_string(
        "group %s started rebalance %d since its membership last changed; with the %s protocol it must be stable "
        "within %d%s%s", F.col("group"), F.col("streak"), F.col("proto"), F.col("bound"),
        F.when(F.col("races") > 0, F.format_string(", counting %d SyncGroup(s) that lost a race", F.col("races")))
        .otherwise(F.lit("")),
        F.when(reason != "", F.concat(F.lit(" (reason: "), reason, F.lit(")"))).otherwise(F.lit("")))
    prev_over = F.max(F.when(F.col("over"), F.col("seq"))).over(before)
    y = y.withColumn("flagged", F.col("over") & (prev_over.isNull() | (prev_over < F.col("anchor.seq"))))
    y = y.withColumn("tentative", F.when(F.col("flagged"), F.struct(
        F.col("seq").alias("seq"), F.col("timestamp").alias("ts"), where().alias("w"), message.alias("message"))))
    # deciders: a stable generation (changed: dropped; else confirmed), a resetting rebalance (dropped), the end
    decider = (name == STABLE) | F.col("reset")
    y = (y.withColumn("pending", F.last("tentative", True).over(before))
         .withColumn("last_decider", F.max(F.when(decider, F.col("seq"))).over(before)))
    open_ = F.col("pending").isNotNull() & (F.col("pending.seq") > F.coalesce(F.col("last_decider"), F.lit(-1)))
    unjudged = F.col("prev_set").isNull() & ~F.col("sees")
    y = y.withColumn("decided", F.when((name == STABLE) & ~F.col("changed") & open_, F.struct(
        F.col("pending").alias("t"), unjudged.alias("unjudged"))))
    # the state after the row (the group's last row: the end of the trace, Checker.finish)
    after = F.struct(
        F.last("tentative", True).over(run).alias("pending"),
        F.max(F.when(decider, F.col("seq"))).over(run).alias("last_decider"),
        F.col("streak").alias("streak"), F.col("races").alias("races"),
        _protocol(F.col("assignor_now"), _members_protocol(None)).alias("proto"),
        F.last("set_s", True).over(run).isNotNull().alias("members_known"),
        (F.col("sees") | (name == SYNCED)).alias("sees"))
    # only what converges() reads is kept (the frame is cached): not the members' protocol pieces
    return y.select("group", "seq", "name", "protocol", "decided", after.alias("after"))


def converges(events: DataFrame, default_protocol: str | None = None,
              keep: Callable[[DataFrame], DataFrame] = lambda df: df) -> tuple[DataFrame, DataFrame]:
    """converges' findings (the checker's fields) and, per group, what it could not judge: ``group, what, policy,
    n`` (``converges-kip848``: KIP-848 rebalances seen; ``converges-unjudged``: streaks beyond the bound that a
    server.log alone cannot show)."""
    y = keep(_judged(_races(_first_pass(events)), _member_protocols(events, default_protocol)))
    at_stable = y.filter(F.col("decided").isNotNull()).select("group", F.col("decided.t").alias("t"),
                                                              F.col("decided.unjudged").alias("unjudged"))
    last = y.groupBy("group").agg(F.max_by(F.col("after"), F.col("seq")).alias("a"))
    a = F.col("a")
    open_ = a["pending"].isNotNull() & (a["pending"]["seq"] > F.coalesce(a["last_decider"], F.lit(-1)))
    beyond = a["streak"] > _bound(a["proto"], a["races"])
    at_end = last.filter(open_ & beyond).select("group", a["pending"].alias("t"),
                                                (~a["members_known"] & ~a["sees"]).alias("unjudged"))
    found = at_stable.unionByName(at_end).filter(~F.col("unjudged")).select(*finding(
        "converges", VIOLATION, F.array().cast("array<string>"),
        F.array().cast("array<struct<topic:string,partition:int>>"), F.col("t.ts"), F.col("t.ts"),
        F.array(F.col("t.w")), F.col("t.message")))

    def counted(df: DataFrame, what: str) -> DataFrame:
        # counted per group before the union (a union loses the group partitioning: an aggregate after it shuffles)
        return df.groupBy("group").agg(F.count(F.lit(1)).alias("n")).select(
            "group", F.lit(what).alias("what"), F.lit(None).cast("string").alias("policy"), "n")

    unjudged = counted(at_stable.filter(F.col("unjudged")), "converges-unjudged").unionByName(
        counted(at_end.filter(F.col("unjudged")), "converges-unjudged"))
    kip848 = counted(y.filter((F.col("name") == REBALANCE) & (F.col("protocol") == "consumer")), "converges-kip848")
    return found, unjudged.unionByName(kip848)


def unchecked(counts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The checker's partial ``unchecked`` notes for converges, totalled over the rows of :func:`converges`' second
    frame and worded by the checker's own template (:func:`traces.coordinator_checks.converges_notes`)."""
    total: Counter[str] = Counter()
    for c in counts:
        total[c["what"]] += c["n"]
    return converges_notes(total["converges-kip848"] > 0, total["converges-unjudged"])
