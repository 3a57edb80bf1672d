"""The checker's assignment-shape and coordinator rules as Spark columns: ``subscribed-only``,
``revoke-only-moved`` and ``static-rejoin``.

The rules are :mod:`traces.checker`'s and :mod:`traces.coordinator_checks`' (docs/check.md); the
state they keep per member or per group becomes window functions over the member rows
(:func:`spark_analysis.ownership.member_rows`) or over the group's coordinator events:

- ``subscribed-only`` (``Checker._assigned``): a member that said what it subscribes to (its last
  ``subscription``, kept across restarts) is newly assigned a partition of another topic. One
  finding per assignment event.
- ``revoke-only-moved`` (``Checker._cooperative_assign_checks``), cooperative members with
  generations, one finding per assignment event and kind: a partition revoked in the generation
  the member was last assigned in (before rejoining) that comes back to it with nobody assigned
  it in between (the group's ``owner_epoch`` of the partition unchanged) and no assignment event
  of the member between; or a partition revoked in a newer generation and assigned again in that
  same generation. A restart forgets both.
- ``static-rejoin`` (``CoordinatorChecks._coord_rebalance`` / ``_coord_stable``): a static member
  replaced while the group is Stable (``coordinator_member_removed``, reason ``fenced``, with an
  ``instance_id``) watches the next coordinator event that decides: a rebalance for no membership
  or protocol change is a violation; one for a protocol change is, if the next stable generation
  keeps the assignor. A stable generation, another removal or a member joining ends the watch.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_analysis.invariants import VIOLATION, _tp, finding
from spark_analysis.ownership import ASSIGNED, REVOKED, STARTUP, UNB, UNF, where
from traces.coordinator_checks import _MEMBERSHIP_REASON, _PROTOCOL_CHANGE_REASON

REBALANCE, STABLE = "coordinator_rebalance", "coordinator_stable"
REMOVED, STATE = "coordinator_member_removed", "coordinator_state"


def _labels(tps: Column) -> Column:
    """``t-0, t-1`` from an array of ``{topic, partition}`` in event order."""
    return F.array_join(F.transform(tps, lambda x: F.concat_ws("-", x["topic"], x["partition"].cast("string"))),
                        ", ")


def _per_event(cands: DataFrame, *keep: str, **more: Column) -> DataFrame:
    """Rows of one assignment event's partitions folded into one row, partitions in event order."""
    return cands.groupBy("group", "member", "seq", "timestamp", *keep).agg(
        F.transform(F.array_sort(F.collect_list(F.struct("part", _tp().alias("tp")))), lambda x: x["tp"])
        .alias("tps"), F.min_by(where(), F.col("part")).alias("w"), *[c.alias(k) for k, c in more.items()])


def unsubscribed(rows: DataFrame) -> DataFrame:
    """subscribed-only: newly assigned partitions of topics the member does not subscribe to."""
    wm = Window.partitionBy("group", "member").orderBy("seq", "part").rowsBetween(UNB, 0)
    sub = F.last("subscription", True).over(wm)
    cands = rows.withColumn("sub", sub).filter(
        F.col("is_new") & F.col("sub").isNotNull() & ~F.array_contains(F.col("sub"), F.col("topic")))
    ev = _per_event(cands.withColumn("subs", F.array_join(F.array_sort(F.array_distinct(F.col("sub"))), ", ")),
                    "subs")
    return ev.select(*finding(
        "subscribed-only", VIOLATION, F.array(F.col("member")), F.col("tps"), F.col("timestamp"), F.col("timestamp"),
        F.array(F.col("w")), F.format_string("%s was assigned %s but subscribes only to %s", F.col("member"),
                                             _labels(F.col("tps")), F.col("subs"))))


def revoked_came_back(rows: DataFrame) -> DataFrame:
    """revoke-only-moved, both kinds (see the module doc)."""
    name = F.col("name")
    gen = F.when(F.col("gen_ff") >= 0, F.col("gen_ff"))
    # the generation of the member's last assignment event (Member.assigned_gen), before the row; a restart
    # forgets it. Rows of the same event share a seq: the frame ends at the event before.
    assigned_gen = F.last(F.when((name == ASSIGNED) & (F.col("gen_ff") >= 0), F.col("gen_ff")), True).over(
        Window.partitionBy("group", "member", "inc").orderBy("seq").rangeBetween(UNB, -1))
    last_assign_ev = F.max(F.when(name.isin(ASSIGNED, STARTUP), F.col("seq"))).over(
        Window.partitionBy("group", "member").orderBy("seq").rangeBetween(UNB, -1))
    epoch = F.sum(F.col("is_new").cast("int")).over(
        Window.partitionBy("group", "topic", "partition").orderBy("seq", "part").rowsBetween(UNB, -1))
    coop = F.col("proto") == "cooperative"
    r = (rows.withColumn("assigned_gen", assigned_gen).withColumn("last_assign_ev", last_assign_ev)
         .withColumn("epoch", F.coalesce(epoch, F.lit(0))).withColumn("g", gen))
    revoke = (name == REVOKED) & F.col("is_release") & coop & F.col("g").isNotNull() & F.col("assigned_gen").isNotNull()
    prepare = revoke & (F.col("g") == F.col("assigned_gen"))
    complete = revoke & (F.col("g") > F.col("assigned_gen"))
    wtp = Window.partitionBy("group", "member", "topic", "partition").orderBy("seq", "part").rowsBetween(UNB, -1)
    witp = Window.partitionBy("group", "member", "inc", "topic", "partition").orderBy("seq", "part") \
        .rowsBetween(UNB, -1)
    r = (r.withColumn("prep", F.last(F.when(prepare, F.struct(F.col("seq").alias("seq"), F.col("epoch").alias("epoch"),
                                                                where().alias("w"))), True).over(wtp))
         .withColumn("completed", F.collect_set(F.when(complete, F.col("g"))).over(witp)))
    assigning = F.col("is_new") & coop & F.col("g").isNotNull()
    back = assigning & F.col("prep").isNotNull() & (F.col("prep.seq") > F.coalesce(F.col("last_assign_ev"), F.lit(-1))) \
        & (F.col("prep.epoch") == F.col("epoch"))
    same = assigning & F.array_contains(F.col("completed"), F.col("g"))
    came_back = _per_event(r.filter(back), "g", pw=F.min_by(F.col("prep.w"), F.col("part")))
    again = _per_event(r.filter(same), "g")

    def them(tps: Column) -> Column:
        return F.when(F.size(tps) == 1, F.lit("it")).otherwise(F.lit("them"))

    return came_back.select(*finding(
        "revoke-only-moved", VIOLATION, F.array(F.col("member")), F.col("tps"), F.col("timestamp"), F.col("timestamp"),
        F.array(F.col("pw"), F.col("w")),
        F.format_string("cooperative member %s revoked %s before rejoining and got %s back in generation %d with "
                        "nobody else owning them in between: it revoked partitions that did not move",
                        F.col("member"), _labels(F.col("tps")), them(F.col("tps")), F.col("g")))).unionByName(
        again.select(*finding(
            "revoke-only-moved", VIOLATION, F.array(F.col("member")), F.col("tps"), F.col("timestamp"),
            F.col("timestamp"), F.array(F.col("w")),
            F.format_string("cooperative member %s revoked %s and was assigned %s again in the same generation %d",
                            F.col("member"), _labels(F.col("tps")), them(F.col("tps")), F.col("g")))))


def _java(pattern: str) -> str:
    """A Python regex of coordinator_checks as a case-insensitive Java regex (the same syntax is used)."""
    return "(?i)" + pattern


def static_rejoins(events: DataFrame) -> DataFrame:
    """static-rejoin: a static member replaced in a Stable group, and a rebalance that followed for nothing else."""
    name = F.col("name")
    coord = events.filter(name.startswith("coordinator_") & (F.col("part") == 0))
    wg = Window.partitionBy("group").orderBy("seq").rowsBetween(UNB, 0)
    coord = (coord
             .withColumn("coord_state", F.last(F.when(F.col("state").isNotNull(), F.col("state")), True).over(wg))
             .withColumn("assignor_now", F.last(F.when(F.col("assignor") != "", F.col("assignor")), True).over(wg)))
    stable = F.lower(F.regexp_replace(F.col("coord_state"), "[_-]", "")) == "stable"
    watching = (name == REMOVED) & (F.col("reason") == "fenced") & (F.coalesce(F.col("instance_id"), F.lit("")) != "") \
        & stable
    deciding = (name.isin(REMOVED, REBALANCE, STABLE)
                | ((name == STATE) & F.col("detail").isin("member-joined", "static-rejoin-without-rebalance")))
    d = coord.filter(deciding).withColumn("w", where())
    wd = Window.partitionBy("group").orderBy("seq")
    d = d.withColumn("watch", F.lag(F.when(watching, F.struct(
        F.col("instance_id").alias("instance"), F.col("timestamp").alias("ts"), F.col("w").alias("w")))).over(wd))
    d = d.withColumn("stables_before", F.coalesce(F.sum((name == STABLE).cast("int")).over(wd.rowsBetween(UNB, -1)),
                                                  F.lit(0)))
    reason = F.coalesce(F.col("reason"), F.lit(""))
    protocol_change = reason.rlike(_java(_PROTOCOL_CHANGE_REASON.pattern))
    other_change = reason.rlike(_java(_MEMBERSHIP_REASON.pattern)) & ~reason.contains(F.col("watch.instance"))
    judged = d.filter((name == REBALANCE) & F.col("watch").isNotNull())
    said = F.when(reason != "", F.concat(F.lit(" (reason: "), reason, F.lit(")"))).otherwise(F.lit(""))
    plain = judged.filter(~protocol_change & ~other_change).select(*finding(
        "static-rejoin", VIOLATION, F.array(F.col("watch.instance")), F.array().cast("array<struct<topic:string,"
                                                                                      "partition:int>>"),
        F.col("watch.ts"), F.col("timestamp"), F.array(F.col("watch.w"), F.col("w")),
        F.format_string("static member %s rejoined the Stable group and a rebalance followed%s; a static member "
                        "restarting within the session timeout gets its assignment back with no rebalance (KIP-345, "
                        "GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin)",
                        F.col("watch.instance"), said)))
    # a rebalance for a protocol change is justified only if the next stable generation changes the assignor: the
    # watch it sets is read at the first coordinator_stable after it (the last such watch before that one wins)
    pw = judged.filter(protocol_change & F.col("assignor_now").isNotNull()).groupBy("group", "stables_before").agg(
        F.max_by(F.struct(F.col("watch.instance").alias("instance"), F.col("watch.ts").alias("ts"),
                          F.col("watch.w").alias("w"), F.col("assignor_now").alias("assignor"),
                          reason.alias("reason")), F.col("seq")).alias("pw"))
    st = d.filter(name == STABLE)
    kept = st.join(pw, ["group", "stables_before"]).filter(
        (F.coalesce(F.col("assignor"), F.lit("")) != "") & (F.col("assignor") == F.col("pw.assignor")))
    return plain.unionByName(kept.select(*finding(
        "static-rejoin", VIOLATION, F.array(F.col("pw.instance")), F.array().cast("array<struct<topic:string,"
                                                                                   "partition:int>>"),
        F.col("pw.ts"), F.col("timestamp"), F.array(F.col("pw.w"), F.col("w")),
        F.format_string("static member %s rejoined the Stable group and a rebalance followed (reason: %s), but the "
                        "selected protocol stayed %s: a static member restarting within the session timeout gets its "
                        "assignment back with no rebalance (KIP-345)", F.col("pw.instance"), F.col("pw.reason"),
                        F.col("assignor")))))


# ------------------------------------------------------------------------------------------ converges


def _normal(state: Column) -> Column:
    return F.lower(F.regexp_replace(state, "[_-]", ""))


def converges(events: DataFrame, rows: DataFrame) -> DataFrame:
    """converges: after the last membership change a group is stable within one rebalance (eager) or two
    (cooperative), one more per generation whose SyncGroup answer a member got late or never.

    ``CoordinatorChecks._coord_rebalance`` / ``_coord_stable`` / ``_confirm_tentative``, as columns over
    the group's coordinator events and its members' ``group_synced`` answers, in the checker's order:

    - a *reset* rebalance (the first, one after a membership change -- a removal that is no static
      member's replacement in a Stable group, a member joining, the coordinator loaded or unloaded,
      the group Empty -- or one whose reason names one) starts a streak at 1; a stable generation
      whose members (or their count) differ from the last one restarts it at 1 too; any other
      rebalance adds one;
    - the bound: the assignor's protocol (else the members' protocols; else the cooperative bound), plus
      the generations since the streak started whose SyncGroup answer came late (``group_synced``
      with REBALANCE_IN_PROGRESS, or a member of the last stable generation with no answer before the
      next rebalance, where the trace shows answers at all);
    - the first rebalance of a streak beyond its bound is a tentative finding, confirmed at the next
      stable generation with unchanged members -- when the trace can tell who answered (the last
      stable generation named its members, or members' answers are in the trace), else counted as
      not judged -- or at the end of the trace while the streak is still beyond the bound; a streak
      restarted first drops it. KIP-848 rebalances (``protocol`` consumer) are not judged.
    """
    from traces.state import COOPERATIVE_ASSIGNORS, EAGER_ASSIGNORS

    name = F.col("name")
    coord = events.filter(name.startswith("coordinator_") & (F.col("part") == 0)).select(
        "group", "seq", "timestamp", "name", "source", "line", "reason", "state", "detail", "assignor", "generation",
        "protocol", "instance_id", "members", "member_count", F.lit(None).cast("string").alias("member_id"),
        F.lit(None).cast("string").alias("error"))
    synced = rows.filter((name == "group_synced") & (F.col("part") == 0)).select(
        "group", "seq", "timestamp", "name", "source", "line", "reason", "state", "detail", "assignor", "generation",
        "protocol", "instance_id", "members", "member_count", "member_id", "error")
    c = coord.unionByName(synced)
    wg = Window.partitionBy("group").orderBy("seq")
    upto = wg.rowsBetween(UNB, 0)
    before = wg.rowsBetween(UNB, -1)
    is_reb, is_stable = name == REBALANCE, name == STABLE
    c = (c.withColumn("coord_state", F.last(F.when(name.startswith("coordinator_") & F.col("state").isNotNull(),
                                                   _normal(F.col("state"))), True).over(upto))
         .withColumn("assignor_now", F.last(F.when(name.startswith("coordinator_") & (F.col("assignor") != ""),
                                                   F.col("assignor")), True).over(upto))
         .withColumn("sees_syncs", F.max((name == "group_synced").cast("int")).over(upto) == 1)
         .withColumn("rebalances", F.sum(is_reb.cast("int")).over(upto)))
    # change_pending: set by membership events, cleared by each rebalance (true before the first)
    replaced = (name == REMOVED) & (F.col("reason") == "fenced") & (F.coalesce(F.col("instance_id"), F.lit("")) != "") \
        & ((F.col("coord_state") == "stable") | (_normal(F.col("state")) == "stable"))
    pending_set = (((name == REMOVED) & ~replaced)
                   | ((name == STATE) & F.col("detail").isin("member-joined", "loaded", "unloaded"))
                   | ((name == STATE) & (F.col("coord_state") == "empty") & F.col("detail").isNull()))
    c = c.withColumn("pending", F.max(pending_set.cast("int")).over(
        Window.partitionBy("group", "rebalances").orderBy("seq").rowsBetween(UNB, -1)))
    reason = F.coalesce(F.col("reason"), F.lit(""))
    reset = is_reb & ((F.col("rebalances") == 1) | (F.coalesce(F.col("pending"), F.lit(0)) == 1)
                      | reason.rlike(_java(_MEMBERSHIP_REASON.pattern)))
    # stable generations whose members (or count) differ from the last one's restart the streak at 1
    count = F.coalesce(F.size(F.col("members")), F.col("member_count"))
    c = c.withColumn("count", F.when(is_stable, F.when(F.col("members").isNotNull(), count)
                                     .otherwise(F.col("member_count"))))
    c = c.withColumn("mset", F.when(is_stable & F.col("members").isNotNull(),
                                    F.array_sort(F.array_distinct(F.col("members")))))
    prev_set = F.last(F.when(is_stable, F.col("mset")), True).over(before)
    prev_count = F.last(F.when(is_stable, F.col("count")), True).over(before)
    c = c.withColumn("prev_set", prev_set).withColumn("prev_count", prev_count)
    changed = is_stable & ((F.col("mset").isNotNull() & F.col("prev_set").isNotNull()
                            & (F.col("mset") != F.col("prev_set")))
                           | (F.col("count").isNotNull() & F.col("prev_count").isNotNull()
                              & (F.col("count") != F.col("prev_count"))))
    c = c.withColumn("reset", reset).withColumn("changed", changed)
    anchor = F.col("reset") | F.col("changed")
    c = c.withColumn("seg", F.sum(anchor.cast("int")).over(upto)) \
        .withColumn("resets", F.sum(F.col("reset").cast("int")).over(upto))
    wseg = Window.partitionBy("group", "seg").orderBy("seq").rowsBetween(UNB, 0)
    c = c.withColumn("streak", F.sum(is_reb.cast("int")).over(wseg))
    # a segment started by a changed stable carries streak 1 into its first rebalance (min(streak, 1)): +1
    seg_start = F.first(F.when(F.col("changed"), F.lit(1)).otherwise(F.lit(0))).over(
        Window.partitionBy("group", "seg").orderBy("seq").rowsBetween(UNB, UNF))
    c = c.withColumn("streak", F.col("streak") + F.when(F.col("seg") > 0, seg_start).otherwise(F.lit(0)))
    # late SyncGroup answers since the streak's reset: REBALANCE_IN_PROGRESS answers, and stable generations a
    # member of which had not answered by the next rebalance (where the trace shows answers)
    waiting = c.filter(is_stable & F.col("generation").isNotNull()
                       & (F.col("members").isNotNull() | (F.col("member_count").isNotNull() & F.col("sees_syncs"))))
    waiting = waiting.select(F.col("group").alias("w_group"), F.col("seq").alias("w_seq"),
                             F.col("rebalances").alias("w_reb"), F.col("generation").alias("w_gen"),
                             F.col("members").alias("w_members"), F.col("member_count").alias("w_count"))
    # the last such stable before each rebalance, within the same inter-rebalance stretch
    last_wait = waiting.groupBy("w_group", "w_reb").agg(F.max_by(F.struct("*"), F.col("w_seq")).alias("w"))
    answers = c.filter((name == "group_synced") & F.col("error").isNull()).select(
        F.col("group").alias("a_group"), F.col("seq").alias("a_seq"), F.col("rebalances").alias("a_reb"),
        F.col("generation").alias("a_gen"), F.col("member_id").alias("a_mid"))
    lw = last_wait.select("w_group", "w_reb", "w.w_seq", "w.w_gen", "w.w_members", "w.w_count")
    answered = lw.join(answers, (lw["w_group"] == answers["a_group"]) & (lw["w_reb"] == answers["a_reb"])
                       & (answers["a_seq"] > lw["w_seq"]) & (answers["a_gen"] == lw["w_gen"]), "left") \
        .groupBy("w_group", "w_reb", "w_gen", "w_members", "w_count") \
        .agg(F.collect_set("a_mid").alias("mids"), F.count("a_seq").alias("n_answers"))
    missing = F.when(F.col("w_members").isNotNull(), F.size(F.array_except(F.col("w_members"), F.col("mids"))) > 0) \
        .otherwise(F.col("w_count") > F.col("n_answers"))
    # checked at the next rebalance (rebalances + 1), where the trace shows answers by then
    late_waits = answered.filter(missing).select(F.col("w_group").alias("group"),
                                                 (F.col("w_reb") + 1).alias("rebalances"),
                                                 F.col("w_gen").alias("late_gen"))
    c = c.join(late_waits, ["group", "rebalances"], "left")
    race = (F.when(is_reb & F.col("sees_syncs") & F.col("late_gen").isNotNull(), F.col("late_gen").cast("string"))
            .when((name == "group_synced") & (F.col("error") == "REBALANCE_IN_PROGRESS"),
                  F.coalesce(F.col("generation").cast("string"), F.concat(F.lit("#"), F.col("seq").cast("string")))))
    # a race recorded at a reset rebalance is cleared by that reset
    race = F.when(F.col("reset"), F.lit(None)).otherwise(race)
    wres = Window.partitionBy("group", "resets").orderBy("seq").rowsBetween(UNB, 0)
    c = c.withColumn("races", F.size(F.collect_set(race).over(wres)))
    # the protocol: the assignor's, else the members' (their last protocol so far)
    changes = rows.select("group", "member", "seq", "part", "proto").withColumn(
        "prev", F.lag("proto").over(Window.partitionBy("group", "member").orderBy("seq", "part")))
    changes = changes.filter(F.col("proto").isNotNull() & ~F.col("proto").eqNullSafe(F.col("prev"))).select(
        F.col("group").alias("p_group"), F.col("member").alias("p_member"), F.col("seq").alias("p_seq"), "proto")
    rebs = c.filter(is_reb & (F.coalesce(F.col("protocol"), F.lit("")) != "consumer"))
    protos = rebs.select("group", "seq").join(changes, (F.col("group") == F.col("p_group"))
                                               & (F.col("p_seq") < F.col("seq")), "inner") \
        .groupBy("group", "seq", "p_member").agg(F.max_by("proto", "p_seq").alias("proto")) \
        .groupBy("group", "seq").agg(F.collect_set("proto").alias("protos"))
    rebs = rebs.join(protos, ["group", "seq"], "left")
    by_assignor = (F.when(F.col("assignor_now").isin(*sorted(COOPERATIVE_ASSIGNORS)), F.lit("cooperative"))
                   .when(F.col("assignor_now").isin(*sorted(EAGER_ASSIGNORS)), F.lit("eager")))
    protos_c = F.coalesce(F.col("protos"), F.array().cast("array<string>"))
    by_members = (F.when((F.size(protos_c) == 1) & F.array_contains(protos_c, "eager"), F.lit("eager"))
                  .when(F.array_contains(protos_c, "cooperative"), F.lit("cooperative")))
    proto = F.coalesce(by_assignor, by_members)
    rebs = rebs.withColumn("proto_name", F.coalesce(proto, F.lit("unknown (the cooperative bound is used)"))) \
        .withColumn("bound", F.when(proto == "eager", F.lit(1)).otherwise(F.lit(2)) + F.col("races"))
    over = rebs.filter(F.col("streak") > F.col("bound"))
    first_over = over.groupBy("group", "seg").agg(F.min_by(F.struct("*"), F.col("seq")).alias("f")).select("f.*")
    # confirmed at the next stable with unchanged members (judged if the last stable named its members or the
    # trace shows answers), or at the end while still over the bound; dropped by a new segment first
    stables = c.filter(is_stable & ~F.col("changed")).select(
        F.col("group").alias("s_group"), F.col("seg").alias("s_seg"), F.col("seq").alias("s_seq"),
        (F.col("prev_set").isNotNull() | F.col("sees_syncs")).alias("judgeable"))
    nxt = first_over.join(stables, (F.col("group") == F.col("s_group")) & (F.col("seg") == F.col("s_seg"))
                          & (F.col("s_seq") > F.col("seq")), "left") \
        .groupBy("group", "seg", "seq").agg(F.min_by(F.col("judgeable"), F.col("s_seq")).alias("judgeable"),
                                             F.min("s_seq").alias("s_seq"))
    last = rebs.groupBy("group").agg(F.max_by(F.struct("seg", "streak", "bound"), F.col("seq")).alias("end"))
    # at the end the checker confirms only when a stable generation named its members or answers are in the trace
    ends = c.groupBy("group").agg(F.max("seg").alias("final_seg"),
                                  (F.max(F.col("mset").isNotNull().cast("int")) == 1).alias("named"),
                                  (F.max(F.col("sees_syncs").cast("int")) == 1).alias("sees_end"))
    j = first_over.join(nxt, ["group", "seg", "seq"]).join(last, ["group"], "left").join(ends, ["group"], "left")
    at_end = F.col("s_seq").isNull() & (F.col("seg") == F.col("final_seg")) & (F.col("end.seg") == F.col("seg")) \
        & (F.col("end.streak") > F.col("end.bound"))
    end_judgeable = F.col("named") | F.col("sees_end")
    confirmed = (F.col("s_seq").isNotNull() & F.col("judgeable")) | (at_end & end_judgeable)
    said = F.when(reason != "", F.concat(F.lit(" (reason: "), reason, F.lit(")"))).otherwise(F.lit(""))
    races = F.when(F.col("races") > 0, F.format_string(", counting %d SyncGroup(s) that lost a race", F.col("races"))) \
        .otherwise(F.lit(""))
    return j.filter(confirmed).select(*finding(
        "converges", VIOLATION, F.array().cast("array<string>"),
        F.array().cast("array<struct<topic:string,partition:int>>"), F.col("timestamp"), F.col("timestamp"),
        F.array(where()), F.concat(F.format_string(
            "group %s started rebalance %d since its membership last changed; with the %s protocol it must be "
            "stable within %d", F.col("group"), F.col("streak"), F.col("proto_name"), F.col("bound")), races, said)))
