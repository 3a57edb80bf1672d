"""The checker's ``unchecked`` notes that depend on what the whole trace shows, from counts per trace set.

The checker says, for a whole trace, what it could not check because the trace never showed it: no
ownership callback (single-owner, zombie-overlap), no subscription (subscribed-only), no generation
and which protocols its members use (generation-monotonic, revoke-before-assign, revoke-only-moved,
eager-revoke-all), consumption before a member's assignment was known (consume-owned-only,
commit-owned-only), no first poll with offsets or none judged (no-gap, monotonic-consumption), no
commit (commit-owned-only, committed-not-ahead). The words are :mod:`traces.trace_notes`' and
:func:`traces.delivery.offsets_seen_notes` / :func:`~traces.delivery.commits_seen_notes`, which the
checker calls with its own counters; here the same counts are aggregates.

The checker's unit is one trace set: one run (``check a/ b/`` checks each directory with a checker of its own,
:mod:`traces.runs`). A corpus of several runs (``corpus --from a/ b/``: every group named ``GROUP @ RUN``), or of
several sets with their groups prefixed ("SET/group": ``corpus.from_traces``' ``group_prefix``), is counted run by
run and set by set (:func:`spark_analysis.ownership.trace_set`; none: the whole corpus is one set), and a member
is one per set, as the checker keys it: a member that moved from the default group to the one it named later is counted once, its protocol read over all
its rows. :func:`counts` gives one row per set and count (``group`` is the set's prefix, ``what``
:data:`WHAT`'s key, ``n``), read from the cached corpus, member rows and first polls: aggregated per group
and member inside the group partitions, then those few rows gathered by set (one small exchange).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_analysis.ownership import (
    CONSUMED,
    OWNERSHIP,
    PREFIXED,
    RECORD_DATA,
    TraceSets,
    assignor_kind,
    commit_entry_ok,
    commit_ok,
    named_protocol,
    trace_set,
)
from traces.delivery import commits_seen_notes, offsets_seen_notes
from traces.trace_notes import consumption_notes, ownership_notes, protocol_notes, subscription_notes

# what each count is (the unchecked rows' ``what``, prefixed "trace-")
WHAT = {
    "ownership": "ownership callbacks (partitions_assigned / _revoked / _lost not superseded by a callback trace)",
    "assignments": "assignments the coordinator stored (coordinator_stable) or sent (KIP-848)",
    "subscription": "member events naming a subscription",
    "generation": "member events with a generation",
    "cooperative": "members known to use the cooperative protocol",
    "eager": "members known to use the eager protocol",
    "unknown-protocol": "members of unknown protocol",
    "commits": "successful offsets_committed events",
    "unverified": "consumption and commit entries of unowned partitions before the member's assignment was known",
    "first-polls": "first polls with offsets of a newly owned partition",
    "no-gap-judged": "first polls no-gap judged",
}
PREFIX = "trace-"
_SUMS = ("ownership", "assignments", "subscription", "generation", "commits", "unverified", "first-polls",
         "no-gap-judged")


def _as_long(flag: Column) -> Column:
    return F.when(flag, F.lit(1)).otherwise(F.lit(0)).cast("long")


def counts(events: DataFrame, rows: DataFrame, first_polls: DataFrame, default_protocol: str | None,
           sets: TraceSets = PREFIXED) -> DataFrame:
    """``group, what, policy, n``: one row per trace set (``sets``: the corpus's, each its own:
    :func:`~spark_analysis.ownership.trace_set`) and :data:`WHAT` key (``what`` prefixed "trace-")."""
    name, member = F.col("name"), F.col("member")
    is_member = member.isNotNull()
    first_row = F.col("part") == 0
    zero = F.lit(0).cast("long")
    null_struct = "struct<seq:bigint,part:int,v:string>"

    def seen(v: Column) -> Column:
        return F.struct(F.col("seq").alias("seq"), F.col("part").alias("part"), v.alias("v"))

    kind = assignor_kind(F.col("assignor"))
    # the checker's _context reads every member event (superseded client-log lines included); its saw["ownership"]
    # counts the callbacks it did not take as context only (_callback_superseded)
    from_events = events.select(
        F.col("group"), member.alias("member"),
        _as_long(is_member & first_row & name.isin(*OWNERSHIP) & ~(~F.col("jsonl") & F.col("callback")))
        .alias("ownership"),
        # one per event, as CoordinatorChecks counts them: a stored assignment's rows all name a member id, an empty
        # one's too (layout._stored); a stable generation without one names none
        _as_long(first_row & (((name == "coordinator_stable") & F.col("member_id").isNotNull())
                              | ((name == "coordinator_state") & (F.col("detail") == "member-assignment"))))
        .alias("assignments"),
        _as_long(is_member & first_row & F.col("subscription").isNotNull()).alias("subscription"),
        _as_long(is_member & first_row & F.col("generation").isNotNull()).alias("generation"),
        _as_long(is_member & first_row & commit_ok()).alias("commits"),
        zero.alias("unverified"), zero.alias("first-polls"), zero.alias("no-gap-judged"),
        F.when(is_member & named_protocol().isNotNull(), seen(F.col("protocol"))).alias("named"),
        F.when(is_member & kind.isNotNull(), seen(kind)).alias("by_assignor"))
    # Checker._unowned / _commit_unowned: an entry of a partition not owned, by a member not yet known
    from_rows = rows.filter(F.col("topic").isNotNull() & (name.isin(CONSUMED, RECORD_DATA) | commit_entry_ok())
                            & ~F.col("owned_before") & ~F.col("known")).select(
        F.col("group"), F.lit(None).cast("string").alias("member"),
        *[zero.alias(k) for k in ("ownership", "assignments", "subscription", "generation", "commits")],
        F.lit(1).cast("long").alias("unverified"), zero.alias("first-polls"), zero.alias("no-gap-judged"),
        F.lit(None).cast(null_struct).alias("named"), F.lit(None).cast(null_struct).alias("by_assignor"))
    # DeliveryChecks._first_consumption: saw["offsets"] and opportunities["no-gap"]
    from_polls = first_polls.select(
        F.col("group"), F.lit(None).cast("string").alias("member"),
        *[zero.alias(k) for k in ("ownership", "assignments", "subscription", "generation", "commits", "unverified")],
        F.lit(1).cast("long").alias("first-polls"),
        _as_long(F.col("outcome").isin("judged", "assumed-zero")).alias("no-gap-judged"),
        F.lit(None).cast(null_struct).alias("named"), F.lit(None).cast(null_struct).alias("by_assignor"))
    # per group and member first (the corpus is partitioned by group: no exchange), then the few rows that leaves
    # gathered by set (the one exchange here) for a member's rows across the groups of its set; both steps, and
    # the set's totals below, sum the counts, and both member steps keep the last protocol named and the first
    # assignor's kind
    sums = [F.sum(F.col(k)).alias(k) for k in _SUMS]
    per_member_aggs = [*sums, F.max("named").alias("named"), F.min("by_assignor").alias("by_assignor")]
    # (the set, a regular expression of the group name, is taken once per group and member, not on every row)
    per_member = from_events.unionByName(from_rows).unionByName(from_polls) \
        .groupBy("group", "member").agg(*per_member_aggs).withColumn("set", trace_set(F.col("group"), sets)) \
        .repartition("set").groupBy("set", "member").agg(*per_member_aggs)
    # Member.protocol: the last protocol named, else the default, else the first assignor's kind
    proto = F.coalesce(F.col("named.v"), F.lit(default_protocol) if default_protocol is not None
                       else F.col("by_assignor.v"))
    is_member = F.col("member").isNotNull()
    per_set = per_member.groupBy("set").agg(
        *sums,
        F.count(F.when(is_member & (proto == "cooperative"), 1)).alias("cooperative"),
        F.count(F.when(is_member & (proto == "eager"), 1)).alias("eager"),
        F.count(F.when(is_member & proto.isNull(), 1)).alias("unknown-protocol"))
    pairs = F.array(*[F.struct(F.lit(PREFIX + k).alias("what"), F.col(f"`{k}`").cast("long").alias("n"))
                      for k in WHAT])
    return per_set.select(F.col("set").alias("group"), F.explode(pairs).alias("c")).select(
        "group", "c.what", F.lit(None).cast("string").alias("policy"), "c.n")


def unchecked(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The checker's whole-trace notes from the rows of :func:`counts` among ``rows`` (every unchecked row of the
    job), totalled over the sets given, in the checker's words."""
    total: Counter[str] = Counter()
    for r in rows:
        if r["what"].startswith(PREFIX):
            total[r["what"][len(PREFIX):]] += r["n"]
    return (ownership_notes(total["ownership"] + total["assignments"]) + subscription_notes(total["subscription"])
            + protocol_notes(total["generation"], total["cooperative"], total["eager"], total["unknown-protocol"])
            + consumption_notes(total["ownership"], total["commits"], total["unverified"])
            + offsets_seen_notes(total["first-polls"], total["no-gap-judged"]) + commits_seen_notes(total["commits"]))
