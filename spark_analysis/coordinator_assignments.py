"""single-owner on the coordinator's view: a partition the coordinator gave to two member ids at once.

The checker judges it on two kinds of coordinator event (docs/check.md, single-owner's row;
:mod:`traces.coordinator_checks`):

- a stable generation's stored assignment (``coordinator_stable``'s ``assignment``,
  ``CoordinatorChecks._check_stored_assignment``): the coordinator stores what the group's leader sent in
  its SyncGroup as is (Kafka's ``ClassicGroup`` / ``GroupCoordinator``), so a client-side assignor that
  gives a partition twice shows there, in a broker's server.log. Each member id given a partition is
  paired with the last one before it in member-id order given the same partition (the checker iterates the
  member ids sorted; the corpus writes an assignment's rows in that order, ``layout._stored``, numbered by
  ``part``): one finding per pair, window (ts, ts), the event's ``file:line`` as evidence.
- a KIP-848 member assignment (``coordinator_state``, ``detail`` member-assignment, ``CoordinatorChecks
  ._kip848_assignment``): the coordinator gives a member partitions another member id still holds or has still to
  revoke -- each member id's latest assignment counts until its next one or until the coordinator removes it
  (``coordinator_member_removed`` in the group). Kafka's ``CurrentAssignmentBuilder`` gives a member a partition of
  its target assignment only once no other member holds it (the partition's epoch, ``withCurrentPartitionEpoch``),
  and a broker's server.log prints each member's new assignment and the partitions it has to revoke
  (``traces.readers.broker_log``). One finding per assignment and
  other member id holding some of it, the partitions held (sorted), window (ts, ts), the event as evidence.

The rows are few (one per member id and partition of each stored assignment or member assignment, and the
removals): they are filtered out of the cached corpus, which is partitioned by group, and every window, join and
aggregate here is keyed by group first, so the check adds no exchange, only sorts of those rows
(docs/mining-internals.md, "single-owner on the coordinator's view").
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_analysis.invariants import VIOLATION, _label, _tp, finding, labels
from spark_analysis.ownership import UNF, where

STABLE, STATE, REMOVED = "coordinator_stable", "coordinator_state", "coordinator_member_removed"
MEMBER_ASSIGNMENT = "member-assignment"


def stored_twice(events: DataFrame) -> DataFrame:
    """single-owner's findings on the stored assignments of ``events`` (the corpus's rows, partitioned by group)."""
    given = events.filter((F.col("name") == STABLE) & F.col("topic").isNotNull())
    # the member id given the partition before this one in the same assignment (one event: one seq), if any
    before = F.lag("member_id").over(Window.partitionBy("group", "seq", "topic", "partition").orderBy("part"))
    pairs = given.withColumn("other", before).filter(F.col("other") != F.col("member_id"))
    # the checker formats the generation as Python does: None where the event gives none
    gen = F.coalesce(F.col("generation").cast("string"), F.lit("None"))
    return pairs.select(*finding(
        "single-owner", VIOLATION, F.array(F.col("other"), F.col("member_id")), F.array(_tp()), F.col("timestamp"),
        F.col("timestamp"), F.array(where()),
        F.format_string("the coordinator stored generation %s's assignment with %s given to both %s and %s", gen,
                        _label(), F.col("other"), F.col("member_id"))))


def held_twice(events: DataFrame) -> DataFrame:
    """single-owner's findings on the KIP-848 member assignments of ``events`` (the corpus's rows, partitioned by
    group): a member id given a partition that another member id's latest assignment, not ended by its removal, gives
    it or has it revoke."""
    name = F.col("name")
    assignment = (name == STATE) & (F.col("detail") == MEMBER_ASSIGNMENT)
    # the member ids' assignments and removals, each member id's in its group in the checker's order: an assignment
    # holds until the next event of its member id (its next assignment, or its removal: GroupState.kip848's pop)
    said = events.filter((assignment | (name == REMOVED)) & F.col("member_id").isNotNull())
    after = Window.partitionBy("group", "member_id").orderBy("seq").rangeBetween(1, UNF)
    said = said.withColumn("until", F.min("seq").over(after))
    held = said.filter(assignment & F.col("topic").isNotNull())
    n = held.filter(~F.col("pending_revocation")).alias("n")
    o = held.alias("o")
    clash = n.join(o, (F.col("n.group") == F.col("o.group")) & (F.col("n.topic") == F.col("o.topic"))
                   & (F.col("n.partition") == F.col("o.partition")) & (F.col("n.member_id") != F.col("o.member_id"))
                   & (F.col("o.seq") < F.col("n.seq"))
                   & (F.col("o.until").isNull() | (F.col("n.seq") < F.col("o.until"))))
    per_pair = clash.groupBy(F.col("n.group").alias("group"), F.col("n.seq").alias("seq"),
                             F.col("o.member_id").alias("other")).agg(
        F.first("n.member_id").alias("member_id"), F.first("n.timestamp").alias("timestamp"),
        F.first("n.source").alias("source"), F.first("n.line").alias("line"),
        F.array_sort(F.collect_set(_tp("n.topic", "n.partition"))).alias("tps"))
    return per_pair.select(*finding(
        "single-owner", VIOLATION, F.array(F.col("other"), F.col("member_id")), F.col("tps"), F.col("timestamp"),
        F.col("timestamp"), F.array(where()),
        F.format_string("the coordinator assigned %s to %s while %s still held them (KIP-848: a partition is assigned "
                        "only once its previous owner has released it)", labels(F.col("tps")), F.col("member_id"),
                        F.col("other"))))
