"""The well-formedness pass: malformed sequences, counted and reported, never silently dropped.

Written semantics (the checker's, made explicit): each malformed sequence is counted per group and
kind, with a first example, and the rows stay in the corpus and are judged as the checker judges
them:

- ``assigned-twice``: a ``partitions_assigned`` names a partition the member already owns (no
  revoke, loss or restart in between). It is not a new ownership: the owner keeps the interval it
  had; no handoff, no overlap.
- ``revoke-unowned``: a ``partitions_revoked`` / ``partitions_lost`` names a partition the member
  did not own. Nothing is released; ``revoke-before-assign`` does not see it.
- ``out-of-order``: an event earlier than the event before it in the same file (a clock stepping
  back). The merge keeps each file's own order (the order the process wrote), so it is judged in
  file order.
- ``unknown-generation``: a member event of generation g >= 0 in a group whose coordinator events
  never announce generation g (only where the corpus has coordinator events for the group). The
  member's generation is taken as given.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_analysis.ownership import ASSIGNED, LOST, REVOKED, where

KINDS = ("assigned-twice", "revoke-unowned", "out-of-order", "unknown-generation")


def malformed(events: DataFrame, rows: DataFrame) -> DataFrame:
    """Rows ``group, kind, member, timestamp, where, seq`` of every malformed sequence."""
    name = F.col("name")
    twice = rows.filter((name == ASSIGNED) & F.col("topic").isNotNull() & F.col("owned_before")) \
        .withColumn("kind", F.lit("assigned-twice"))
    unowned = rows.filter(name.isin(REVOKED, LOST) & F.col("topic").isNotNull() & ~F.col("owned_before")) \
        .withColumn("kind", F.lit("revoke-unowned"))
    wsrc = Window.partitionBy("group", "source").orderBy("seq")
    ev = events.filter(F.col("part") == 0)
    order = ev.withColumn("prev_ts", F.lag("timestamp").over(wsrc)).filter(F.col("timestamp") < F.col("prev_ts")) \
        .withColumn("kind", F.lit("out-of-order"))
    coord = ev.filter(name.startswith("coordinator_") & F.col("generation").isNotNull())
    announced = coord.select(F.col("group").alias("a_group"), F.col("generation").alias("g")).distinct()
    with_coord = coord.select(F.col("group").alias("c_group")).distinct()
    member_ev = ev.filter(F.col("member").isNotNull() & (F.col("generation") >= 0))
    unknown = (member_ev.join(with_coord, member_ev["group"] == with_coord["c_group"], "left_semi")
               .join(announced, (member_ev["group"] == announced["a_group"])
                     & (member_ev["generation"] == announced["g"]), "left_anti")
               .withColumn("kind", F.lit("unknown-generation")))
    cols = ["group", "kind", "member", "timestamp", "seq"]
    out = None
    for df in (twice, unowned, order, unknown):
        part = df.select(*cols, where().alias("where"))
        out = part if out is None else out.unionByName(part)
    assert out is not None
    return out


def summary(bad: DataFrame) -> DataFrame:
    """Per group and kind: how many, and the first example."""
    return bad.groupBy("group", "kind").agg(F.count(F.lit(1)).alias("count"),
                                            F.min_by(F.struct("where", "member", "timestamp"), F.col("seq"))
                                            .alias("first"))
