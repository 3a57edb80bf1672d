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
  same generation. A restart forgets both. A member that moved groups brings the second kind's
  memory into its new group (``moved_revoked``, written by the corpus: the checker keeps
  ``Member.complete_revoked`` when it moves the member, ``Checker._member``); the first kind's,
  which compares the old group's owner epochs, stays behind.
- ``static-rejoin`` (``CoordinatorChecks._coord_rebalance`` / ``_coord_stable``): a static member
  replaced while the group is Stable (``coordinator_member_removed``, reason ``fenced``, with an
  ``instance_id``) watches the next coordinator event that decides: a rebalance for no membership
  or protocol change is a violation; one for a protocol change is, if the next stable generation
  keeps the assignor. A stable generation, another removal or a member joining ends the watch.

Where a corpus holds no coordinator event at all, ``converges`` and ``static-rejoin`` are not checked:
the report's ``unchecked`` says so in the checker's words (:func:`unchecked`, through
:func:`traces.coordinator_checks.coordinator_notes`), and ``unchecked_per_group`` names each group
without one (:func:`no_coordinator`), so that a fleet's corpus shows where the broker side is missing.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_analysis.invariants import VIOLATION, _tp, finding, labels
from spark_analysis.ownership import ASSIGNED, REVOKED, STARTUP, UNB, where
from traces.coordinator_checks import (
    _MEMBERSHIP_REASON,
    _PROTOCOL_CHANGE_REASON,
    COORDINATOR_EVENTS,
    coordinator_notes,
)

REBALANCE, STABLE = "coordinator_rebalance", "coordinator_stable"
REMOVED, STATE = "coordinator_member_removed", "coordinator_state"
# revoke-only-moved's two kinds (module doc): a partition revoked before rejoining that came back unmoved, and one
# revoked in a newer generation and assigned again in that same generation
CAME_BACK, AGAIN = "came_back", "again"


def _per_event(cands: DataFrame, *keep: str, **more: Column) -> DataFrame:
    """Rows of one assignment event's partitions folded into one row, partitions in event order."""
    return cands.groupBy("group", "member", "seq", "timestamp", *keep).agg(
        F.transform(F.array_sort(F.collect_list(F.struct("part", _tp().alias("tp")))), lambda x: x["tp"])
        .alias("tps"), F.min_by(where(), F.col("part")).alias("w"), *[c.alias(k) for k, c in more.items()])


def unsubscribed(rows: DataFrame) -> DataFrame:
    """subscribed-only: newly assigned partitions of topics the member does not subscribe to."""
    wm = Window.partitionBy("group", "member").orderBy("seq", "part").rowsBetween(UNB, 0)
    sub = F.last(F.col("context.subscription"), True).over(wm)
    # the rows judged (new assignments) and those that say a subscription: the running last subscription is the
    # same over these as over every member row, and the rest (most of them) are not sorted for it
    cands = rows.filter(F.col("is_new") | F.col("context.subscription").isNotNull()).withColumn("sub", sub).filter(
        F.col("is_new") & F.col("sub").isNotNull() & ~F.array_contains(F.col("sub"), F.col("topic")))
    ev = _per_event(cands.withColumn("subs", F.array_join(F.array_sort(F.array_distinct(F.col("sub"))), ", ")),
                    "subs")
    return ev.select(*finding(
        "subscribed-only", VIOLATION, F.array(F.col("member")), F.col("tps"), F.col("timestamp"), F.col("timestamp"),
        F.array(F.col("w")), F.format_string("%s was assigned %s but subscribes only to %s", F.col("member"),
                                             labels(F.col("tps")), F.col("subs"))))


def _memory_rows(rows: DataFrame) -> DataFrame:
    """The member rows :func:`revoked_came_back` reads: assignments (judged, and its ``assigned_gen``, ``epoch`` and
    last assignment event), revokes (the partitions it remembers), startups (a lifetime's first event) and the
    first row of a member that moved in (``moved_assigned_gen``, ``moved_revoked``). Each window value a kept row
    takes is the same as over every row: every frame runs from the start of its partition to the row (or to the row
    or event before it), and every aggregate reads only these rows' values (null, or 0 for the epoch's count of
    ``is_new``, on every other row), so the rows left out change no value.

    The remembered prepare revoke and the last assignment event are taken within the lifetime (``inc``), where they
    were once taken over all the member's rows: a prepare revoke of an earlier lifetime has a ``seq`` below the
    lifetime's startup, so it was never later than the last assignment event (the startup at the least), and
    judged nothing; and the last assignment event is read on assignments only, whose lifetime's startup (if any)
    comes before them. A loss (``partitions_lost``) releases a partition, but neither kind remembers it."""
    name = F.col("name")
    return rows.filter(name.isin(ASSIGNED, REVOKED, STARTUP) | F.col("context.moved_assigned_gen").isNotNull()
                       | F.col("context.moved_revoked").isNotNull())


def revoked_came_back(rows: DataFrame) -> DataFrame:
    """revoke-only-moved, both kinds (see the module doc).

    Only the rows the rule reads take part (:func:`_memory_rows`): the assignments it judges and the rows its
    memory is made of; a member's polls, commits and records, most of its rows, neither are judged nor change what
    it remembers. The per-member windows are two specs, not four: one per lifetime (``inc``) and one per lifetime
    and partition, as the checker's ``Member`` forgets both kinds at a restart (:func:`_memory_rows` says why the
    frames that look past a restart give the same findings within it).
    """
    name = F.col("name")
    gen = F.when(F.col("gen_ff") >= 0, F.col("gen_ff"))
    # the generation of the member's last assignment event (Member.assigned_gen), before the row; a restart
    # forgets it. Rows of the same event share a seq: the frame ends at the event before. Before its first in a
    # group it moved to: the one it brought (moved_assigned_gen, on its first row there; the checker keeps it)
    winc = Window.partitionBy("group", "member", "inc").orderBy("seq")
    assigned_gen = F.coalesce(
        F.last(F.when((name == ASSIGNED) & (F.col("gen_ff") >= 0), F.col("gen_ff")), True).over(
            winc.rangeBetween(UNB, -1)),
        F.first(F.col("context.moved_assigned_gen"), True).over(winc.rangeBetween(UNB, 0)))
    # the memory a moved member brought (on its first row in the new group, so the frame includes the row)
    carried = F.first(F.col("context.moved_revoked"), True).over(winc.rangeBetween(UNB, 0))
    # the member's last assignment or startup event before the row: within the lifetime, since a lifetime begins
    # with its startup_complete (inc counts them), so that the one before a lifetime's rows is its own startup
    last_assign_ev = F.max(F.when(name.isin(ASSIGNED, STARTUP), F.col("seq"))).over(winc.rangeBetween(UNB, -1))
    epoch = F.sum(F.col("is_new").cast("int")).over(
        Window.partitionBy("group", "topic", "partition").orderBy("seq", "part").rowsBetween(UNB, -1))
    coop = F.col("proto") == "cooperative"
    r = (_memory_rows(rows).withColumns({"assigned_gen": assigned_gen, "last_assign_ev": last_assign_ev,
                                         "carried": carried})
         .withColumn("epoch", F.coalesce(epoch, F.lit(0))).withColumn("g", gen))
    revoke = (name == REVOKED) & F.col("is_release") & coop & F.col("g").isNotNull() & F.col("assigned_gen").isNotNull()
    prepare = revoke & (F.col("g") == F.col("assigned_gen"))
    complete = revoke & (F.col("g") > F.col("assigned_gen"))
    witp = Window.partitionBy("group", "member", "inc", "topic", "partition").orderBy("seq", "part") \
        .rowsBetween(UNB, -1)
    r = r.withColumns({"prep": F.last(F.when(prepare, F.struct(F.col("seq").alias("seq"), F.col("epoch").alias("epoch"),
                                                                 where().alias("w"))), True).over(witp),
                       "completed": F.collect_set(F.when(complete, F.col("g"))).over(witp)})
    assigning = F.col("is_new") & coop & F.col("g").isNotNull()
    back = assigning & F.col("prep").isNotNull() & (F.col("prep.seq") > F.coalesce(F.col("last_assign_ev"), F.lit(-1))) \
        & (F.col("prep.epoch") == F.col("epoch"))
    same = assigning & (F.array_contains(F.col("completed"), F.col("g")) | F.coalesce(F.exists(
        F.col("carried"), lambda e: (e["generation"] == F.col("g")) & (e["topic"] == F.col("topic"))
        & (e["partition"] == F.col("partition"))), F.lit(False)))
    # both kinds from one read of the member rows and one pass of the windows above: each judged row once per kind
    # it shows (a row can show both), then one aggregation per event and kind. Two filters of ``r`` were two
    # branches of the plan, each scanning the cached member rows and running the windows again.
    kinds = F.filter(F.array(F.when(back, F.lit(CAME_BACK)), F.when(same, F.lit(AGAIN))), lambda k: k.isNotNull())
    judged = r.filter(back | same).withColumn("kind", F.explode(kinds))
    ev = _per_event(judged, "g", "kind", pw=F.min_by(F.col("prep.w"), F.col("part")))
    came_back = F.col("kind") == CAME_BACK

    def them(tps: Column) -> Column:
        return F.when(F.size(tps) == 1, F.lit("it")).otherwise(F.lit("them"))

    return ev.select(*finding(
        "revoke-only-moved", VIOLATION, F.array(F.col("member")), F.col("tps"), F.col("timestamp"), F.col("timestamp"),
        F.when(came_back, F.array(F.col("pw"), F.col("w"))).otherwise(F.array(F.col("w"))),
        F.when(came_back, F.format_string(
            "cooperative member %s revoked %s before rejoining and got %s back in generation %d with nobody else "
            "owning them in between: it revoked partitions that did not move",
            F.col("member"), labels(F.col("tps")), them(F.col("tps")), F.col("g")))
        .otherwise(F.format_string(
            "cooperative member %s revoked %s and was assigned %s again in the same generation %d",
            F.col("member"), labels(F.col("tps")), them(F.col("tps")), F.col("g")))))


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


NO_COORDINATOR = "no-coordinator"  # the ``what`` of no_coordinator's rows


def no_coordinator(events: DataFrame) -> DataFrame:
    """``group, what, policy, n``: one row (n = 1) per group with no coordinator event (the checker's
    ``CoordinatorChecks._coord_group`` counts each of :data:`~traces.coordinator_checks.COORDINATOR_EVENTS`).
    An aggregate per group of the group-partitioned corpus: no exchange."""
    per = events.groupBy("group").agg(F.max(F.col("name").isin(*COORDINATOR_EVENTS).cast("int")).alias("coordinator"))
    return per.filter(F.col("coordinator") == 0).select(
        "group", F.lit(NO_COORDINATOR).alias("what"), F.lit(None).cast("string").alias("policy"),
        F.lit(1).cast("long").alias("n"))


def unchecked(counts: list[dict[str, Any]], groups: int) -> list[dict[str, Any]]:
    """The checker's full notes for converges and static-rejoin when none of the ``groups`` has a coordinator event
    (every group has a :func:`no_coordinator` row among ``counts``), worded by
    :func:`traces.coordinator_checks.coordinator_notes` as the checker words them."""
    without = sum(c["n"] for c in counts if c["what"] == NO_COORDINATOR)
    return coordinator_notes(groups - without)
