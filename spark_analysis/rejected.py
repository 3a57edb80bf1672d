"""``generation-monotonic`` after the coordinator rejected a member's generation, as the checker judges it.

A SyncGroup answered ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID (a ``group_synced`` with that
``error`` and the generation it asked for) resets the Java consumer's generation
(``AbstractCoordinator.resetGenerationOnResponseError``): what it owned then it must report *lost*
(``ConsumerCoordinator.onJoinPrepare`` -> ``onPartitionsLost``; KAFKA-13419), never revoke, and it
must not carry it into a newer generation. The checker (``Checker._synced``, ``_rejected_let_go``,
``_rejected_kept``) remembers, per member, the last such rejection while it owned something -- the
generation, what it owned, where it was told -- until the first of:

- a ``partitions_revoked`` naming a partition it still holds from then: a violation, and forgotten;
- a ``partitions_assigned`` while its generation is newer than the rejected one: a violation when it
  still holds any of them, and forgotten either way;
- every held partition reported lost: forgotten;
- the next such rejection while it owns something (it replaces this one), or the end of the member's
  lifetime (``startup_complete`` / ``shutdown_complete``).

Here each rejection is one row; what it held is its join with the ownership intervals that span it
(keyed by group and member: no exchange), and each held partition's interval end says whether it was
revoked or lost and when. Rejections are rare, so every join here is of a few rows against the
member's assignments and lifetime ends.

Where one revoke names several held partitions, the message lists them in the event's order, as
the checker does (each one's row of the revoke: its ``part``); an assignment's kept partitions are
listed sorted, as the checker lists them.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_analysis.invariants import VIOLATION, _tp, finding, labels
from spark_analysis.ownership import ASSIGNED, REVOKED, SHUTDOWN, STARTUP, where

SYNCED = "group_synced"
REJECTING = ("ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID")
NEVER = 1 << 62  # the seq of a clearing event that does not come


def rejected_generations(rows: DataFrame, iv: DataFrame) -> DataFrame:
    """generation-monotonic findings for revoking, or keeping into a newer generation, what a rejected generation
    owned (see the module doc)."""
    name = F.col("name")
    rej = rows.filter((name == SYNCED) & (F.col("part") == 0) & F.col("error").isin(*REJECTING)
                      & (F.col("generation") >= 0)).select(
        "group", "member", "life", F.col("seq").alias("r_seq"), F.col("generation").alias("r_gen"),
        F.concat(F.col("error"), F.lit(" at "), where()).alias("told"))
    own = iv.select(F.col("group").alias("i_group"), F.col("member").alias("i_member"), "start_seq", "end",
                    _tp().alias("tp"))
    # what it owned when told: the intervals spanning the rejection (an inner join: a rejection while it owned
    # nothing leaves the checker's memory as it was, so it is no rejection here either)
    held = rej.join(own, (rej["group"] == own["i_group"]) & (rej["member"] == own["i_member"])
                    & (own["start_seq"] < rej["r_seq"]) & (rej["r_seq"] < own["end.seq"]), "inner")
    revoked = F.col("end.kind") == "revoked"
    per = held.groupBy("group", "member", "life", "r_seq", "r_gen", "told").agg(
        F.collect_list(F.struct(F.col("end.seq").alias("seq"), F.col("end.kind").alias("kind"),
                                F.col("end.ts").alias("ts"), F.col("end.where").alias("where"),
                                F.col("tp").alias("tp"))).alias("held"),
        F.min(F.when(revoked, F.col("end.seq"))).alias("revoke_seq"),
        # every held partition lost: forgotten at the last of those losses
        F.when(F.min((F.col("end.kind") == "lost").cast("int")) == 1, F.max("end.seq")).alias("all_lost_seq"))
    # the next rejection replaces this one
    per = per.withColumn("next_rej", F.lead("r_seq").over(Window.partitionBy("group", "member").orderBy("r_seq")))
    # the end of the lifetime: the startup / shutdown that starts the next one
    ends = rows.filter(name.isin(STARTUP, SHUTDOWN) & (F.col("part") == 0)).select(
        F.col("group").alias("e_group"), F.col("member").alias("e_member"), (F.col("life") - 1).alias("e_life"),
        F.col("seq").alias("life_end"))
    per = per.join(ends, (per["group"] == ends["e_group"]) & (per["member"] == ends["e_member"])
                   & (per["life"] == ends["e_life"]), "left").drop("e_group", "e_member", "e_life")
    # the first assignment after it, in its lifetime, while the member's generation is newer than the rejected one
    gen = F.col("gen_ff")
    assigns = rows.filter((name == ASSIGNED) & (F.col("part") == 0) & (gen >= 0)).select(
        F.col("group").alias("a_group"), F.col("member").alias("a_member"), F.col("life").alias("a_life"),
        F.col("seq").alias("a_seq"), gen.alias("a_gen"), F.col("timestamp").alias("a_ts"), where().alias("a_where"))
    after = per.join(assigns, (per["group"] == assigns["a_group"]) & (per["member"] == assigns["a_member"])
                     & (per["life"] == assigns["a_life"]) & (assigns["a_seq"] > per["r_seq"])
                     & (assigns["a_gen"] > per["r_gen"]), "left")
    first_assign = after.groupBy("group", "member", "r_seq").agg(
        F.min_by(F.struct("a_seq", "a_gen", "a_ts", "a_where"), F.col("a_seq")).alias("a"))
    per = per.join(first_assign, ["group", "member", "r_seq"], "left")
    never = F.lit(NEVER).cast("long")
    other = F.least(F.coalesce("next_rej", never), F.coalesce("life_end", never), F.coalesce("all_lost_seq", never))
    rv = F.coalesce(F.col("revoke_seq"), never)
    asg = F.coalesce(F.col("a.a_seq"), never)
    # revoked first: the partitions that revoke named; assigned first: those not yet lost
    named = per.filter((rv < other) & (rv < asg)).select(
        "group", "member", "r_seq", "r_gen", "told", "revoke_seq",
        F.filter("held", lambda h: (h["seq"] == F.col("revoke_seq")) & (h["kind"] == "revoked")).alias("named"))
    # the named partitions in the revoke event's order, as the checker lists them: each one's row of that event
    # (``part`` numbers an event's partitions in order) -- a join of the few revokes found with the member's releases
    releases = rows.filter((name == REVOKED) & F.col("is_release")).select(
        F.col("group").alias("v_group"), F.col("member").alias("v_member"), F.col("seq").alias("v_seq"),
        F.struct("part", _tp().alias("tp")).alias("v"))
    on_revoke = named.join(releases, (named["group"] == releases["v_group"]) & (named["member"] == releases["v_member"])
                           & (named["revoke_seq"] == releases["v_seq"])
                           & F.array_contains(F.transform("named", lambda h: h["tp"]), F.col("v.tp")), "inner")
    on_revoke = on_revoke.groupBy("group", "member", "r_seq", "r_gen", "told").agg(
        F.first(F.col("named")[0]["ts"]).alias("ts"), F.first(F.col("named")[0]["where"]).alias("w"),
        F.transform(F.array_sort(F.collect_list("v")), lambda v: v["tp"]).alias("tps"))
    on_assign = per.filter((asg < other) & (asg < rv)).select(
        "group", "member", "r_gen", "told", "a",
        F.array_sort(F.transform(F.filter("held", lambda h: h["seq"] > F.col("a.a_seq")), lambda h: h["tp"]))
        .alias("tps")).filter(F.size("tps") > 0)
    revoked_msg = F.format_string(
        "%s revoked %s after the coordinator rejected its generation %d (%s); a member whose generation was rejected "
        "reports what it owned lost (onPartitionsLost), it cannot revoke it under that generation",
        F.col("member"), labels(F.col("tps")), F.col("r_gen"), F.col("told"))
    kept_msg = F.format_string(
        "%s was assigned generation %d still owning %s from generation %d, which the coordinator had rejected (%s); "
        "it should have reported them lost before rejoining",
        F.col("member"), F.col("a.a_gen"), labels(F.col("tps")), F.col("r_gen"), F.col("told"))
    return on_revoke.select(*finding(
        "generation-monotonic", VIOLATION, F.array(F.col("member")), F.col("tps"), F.col("ts"), F.col("ts"),
        F.array(F.col("told"), F.col("w")), revoked_msg)).unionByName(on_assign.select(*finding(
            "generation-monotonic", VIOLATION, F.array(F.col("member")), F.col("tps"), F.col("a.a_ts"),
            F.col("a.a_ts"), F.array(F.col("told"), F.col("a.a_where")), kept_msg)))
