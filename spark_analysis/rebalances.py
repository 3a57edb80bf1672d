"""Rebalance analytics: what a platform team asks of a fleet's groups.

- **Rebalances per group per minute**: the coordinator's ``coordinator_rebalance`` events where
  the corpus has them, else each generation members joined (``group_joined``, else
  ``partitions_assigned`` with a generation) counted once, at its first event.
- **Stop-the-world per member per rebalance**: from the member's first ``partitions_revoked`` /
  ``partitions_lost`` after its previous assignment to its next ``partitions_assigned`` (eager:
  everything stops; cooperative: only what moves). A pause with no revoke is not measured.
- **Partitions moved**: assignments of a partition whose previous owner in the group was another
  member.
- **Storms**: a group with at least ``threshold`` rebalances within ``window_ms`` (the checker's
  ``AnalyticsConfig`` defaults: 5 within 60 s), counted per tumbling window.
- **Groups with the most violations**: from the findings.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_analysis.ownership import ASSIGNED, JOINED, LOST, REVOKED, UNB


def rebalances(events: DataFrame) -> DataFrame:
    """One row per rebalance: ``group, timestamp, generation, source``."""
    ev = events.filter(F.col("part") == 0)
    coord = ev.filter(F.col("name") == "coordinator_rebalance").select(
        "group", "timestamp", "generation", F.lit("coordinator").alias("source"))
    has_coord = coord.select(F.col("group").alias("c_group")).distinct()
    joins = ev.filter(F.col("name").isin(JOINED, ASSIGNED) & (F.col("generation") >= 0)) \
        .groupBy("group", "generation").agg(F.min("timestamp").alias("timestamp")) \
        .select("group", "timestamp", "generation", F.lit("clients").alias("source"))
    joins = joins.join(has_coord, joins["group"] == has_coord["c_group"], "left_anti")
    return coord.unionByName(joins)


def per_minute(rb: DataFrame) -> DataFrame:
    return rb.groupBy("group", (F.floor(F.col("timestamp") / 60000) * 60000).alias("minute")) \
        .agg(F.count(F.lit(1)).alias("rebalances"))


def storms(rb: DataFrame, window_ms: int = 60_000, threshold: int = 5) -> DataFrame:
    return rb.groupBy("group", (F.floor(F.col("timestamp") / window_ms) * window_ms).alias("window_start")) \
        .agg(F.count(F.lit(1)).alias("rebalances")).filter(F.col("rebalances") >= threshold)


def pauses(rows: DataFrame) -> DataFrame:
    """Stop-the-world per member per rebalance: ``group, member, generation, start, end, pause_ms``."""
    name = F.col("name")
    # only the events the pauses are made of: the count of assignments before a row is the same without the polls
    # and commits between them, and the window then sorts a few rows per rebalance, not every member row
    ev = rows.filter((F.col("part") == 0) & name.isin(ASSIGNED, REVOKED, LOST))
    wm = Window.partitionBy("group", "member").orderBy("seq")
    ev = ev.withColumn("n_assigned", F.sum((name == ASSIGNED).cast("int")).over(wm.rowsBetween(UNB, 0)))
    # the epoch of an assignment is the count before it: its revokes are those of the previous epoch
    ev = ev.withColumn("epoch", F.when(name == ASSIGNED, F.col("n_assigned") - 1).otherwise(F.col("n_assigned")))
    stops = ev.filter(name.isin(REVOKED, LOST)).groupBy("group", "member", "epoch").agg(
        F.min("timestamp").alias("start"))
    ends = ev.filter(name == ASSIGNED).select("group", "member", "epoch", F.col("timestamp").alias("end"),
                                              F.col("gen_ff").alias("generation"))
    return stops.join(ends, ["group", "member", "epoch"]).select(
        "group", "member", "generation", "start", "end", (F.col("end") - F.col("start")).alias("pause_ms"))


def moves(rows: DataFrame) -> DataFrame:
    """Partitions that changed owner: ``group, topic, partition, from, to, timestamp``."""
    new = rows.filter(F.col("is_new"))
    w = Window.partitionBy("group", "topic", "partition").orderBy("seq", "part")
    new = new.withColumn("prev_owner", F.lag("member").over(w))
    return new.filter(F.col("prev_owner").isNotNull() & (F.col("prev_owner") != F.col("member"))).select(
        "group", "topic", "partition", F.col("prev_owner").alias("from"), F.col("member").alias("to"), "timestamp")
