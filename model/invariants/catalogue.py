"""The invariant catalogue of docs/design.md: one id per invariant, used by the model, the checker,
the proofs, the Spark jobs and every report. Ids are never reused or renamed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Kind(str, Enum):
    ALWAYS = "always"  # holds in every state / every assignment
    STEP = "step"  # holds across every transition (a relation between two states)
    BOUNDED = "bounded-eventually"  # holds within a stated number of rebalances once faults stop
    MEASURE = "measure"  # a number reported, not a pass/fail property
    WARNING = "warning"  # allowed by Kafka but reported apart


@dataclass(frozen=True, slots=True)
class Invariant:
    id: str
    kind: Kind
    statement: str


CATALOGUE: dict[str, Invariant] = {
    inv.id: inv
    for inv in (
        Invariant("single-owner", Kind.ALWAYS,
                  "no partition is owned by two members of a group at once"),
        Invariant("zombie-overlap", Kind.WARNING,
                  "a member the coordinator already expired still owned a partition the new owner got; "
                  "Kafka allows it and fences the zombie's commits"),
        Invariant("subscribed-only", Kind.ALWAYS,
                  "a member is assigned only partitions of topics it subscribes to"),
        Invariant("complete", Kind.ALWAYS,
                  "in a stable generation every partition of every subscribed topic has an owner"),
        Invariant("balanced", Kind.ALWAYS,
                  "the assignor's own balance definition holds (range: per topic; the others: counts differ "
                  "by at most one, or no member with two fewer could take any of the other's partitions)"),
        Invariant("sticky", Kind.ALWAYS,
                  "under equal subscriptions each member keeps min(valid owned, quota) of its partitions, "
                  "and no two members swap partitions"),
        Invariant("stickiness-gap", Kind.MEASURE,
                  "how many partitions could have stayed with their owner under the same balance but did not"),
        Invariant("revoke-before-assign", Kind.STEP,
                  "cooperative: a partition that changes owner is revoked by the old owner before the new "
                  "owner is assigned it"),
        Invariant("revoke-only-moved", Kind.STEP,
                  "cooperative: a member revokes only partitions that leave it or whose topic it no longer "
                  "subscribes to"),
        Invariant("eager-revoke-all", Kind.STEP,
                  "eager: a member revokes everything it owns before it rejoins"),
        Invariant("generation-monotonic", Kind.STEP,
                  "a member's generation never goes down, except to none after losing its partitions"),
        Invariant("static-rejoin", Kind.BOUNDED,
                  "a static member restarting within session.timeout.ms gets its assignment back with no "
                  "rebalance"),
        Invariant("converges", Kind.BOUNDED,
                  "once membership stops changing the group is stable within the protocol's bound "
                  "(eager 1, cooperative 2 rebalances, plus one for each generation in which a SyncGroup "
                  "was answered REBALANCE_IN_PROGRESS)"),
        Invariant("consume-owned-only", Kind.ALWAYS,
                  "records are consumed only from partitions the member owns (commits: commit-owned-only)"),
        Invariant("no-gap", Kind.ALWAYS,
                  "across owners, consumption of a partition continues from the committed position"),
        Invariant("monotonic-consumption", Kind.ALWAYS,
                  "within one ownership, offsets consumed from a partition only go up, without gaps"),
        Invariant("commit-owned-only", Kind.ALWAYS,
                  "a member commits only partitions it owns, and a commit from an old generation is rejected"),
        Invariant("committed-not-ahead", Kind.ALWAYS,
                  "a committed offset never exceeds what the member consumed"),
        Invariant("handoff-duplicates", Kind.MEASURE,
                  "records consumed again by the next owner after a handoff (allowed by at-least-once delivery)"),
        Invariant("rebalance-within-timeout", Kind.BOUNDED,
                  "while every member is alive and nothing disturbs the group, a rebalance completes (the group "
                  "is Stable) within the join phase's and the sync phase's rebalance timeouts, plus the initial "
                  "delay: a group stuck or thrashing in PreparingRebalance / CompletingRebalance fails"),
        Invariant("live-member-kept", Kind.STEP,
                  "the coordinator removes no member for a timeout while it is alive: its process runs, it "
                  "polled within max.poll.interval.ms and its heartbeats keep its session (e.g. a scale-out "
                  "that kicks stable members out for the rebalance timeout fails)"),
        Invariant("settled-group-reads", Kind.BOUNDED,
                  "while the group is Stable, every member alive and a member settled in the current generation, "
                  "it leaves no records unread on a partition it owns and has a position on for longer than "
                  "max.poll.interval.ms (its position moves on)"),
    )
}
