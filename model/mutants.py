"""Named, deliberately wrong variants of the model.

Every proof obligation, the trace checker and the Spark jobs must catch each of these: a check
that no mutant can fail proves nothing. A mutant is one switch: the model's functions take a
``mutants: frozenset[str]`` (default empty) and test membership at the one place the mutant
changes. The registry below is the only list; :func:`validate` rejects unknown names.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Mutant:
    name: str
    where: str  # the module that honours the switch
    statement: str  # what is wrong, in Kafka's words
    reference: str  # the Kafka bug or rule it re-introduces


MUTANTS: dict[str, Mutant] = {
    m.name: m
    for m in (
        Mutant(
            "coop-no-withhold",
            "model.assignors.cooperative_sticky",
            "cooperative-sticky assigns a partition that changes owner to its new owner in the same "
            "generation, instead of withholding it until the old owner has revoked it",
            "KIP-429; CooperativeStickyAssignor.adjustAssignment",
        ),
        Mutant(
            "double-claim-both-keep",
            "model.assignors.sticky",
            "a partition claimed by two members with the same generation is kept by both claimers",
            "KAFKA-12984 (fixed), AbstractStickyAssignor.allSubscriptionsEqual",
        ),
        Mutant(
            "stale-owned-after-sync-rebalance",
            "model.classic.member",
            "after SyncGroup fails with REBALANCE_IN_PROGRESS or ILLEGAL_GENERATION the member "
            "rejoins claiming its old owned partitions with the current generation",
            "KAFKA-13419",
        ),
        Mutant(
            "commit-old-generation",
            "model.classic.coordinator",
            "the coordinator accepts OffsetCommit from a member whose generation is not the "
            "group's current generation",
            "GroupMetadataManager / OffsetMetadataManager validateOffsetCommit (ILLEGAL_GENERATION)",
        ),
        Mutant(
            "static-rejoin-rebalances",
            "model.classic.coordinator",
            "a known static member rejoining a Stable group always triggers a rebalance",
            "KIP-345; updateStaticMemberAndRebalance",
        ),
        Mutant(
            "position-ignores-committed",
            "model.consumption",
            "a member assigned a partition starts where auto.offset.reset says (the log end under latest) "
            "even when the group has committed an offset for it, so the records in between are skipped",
            "ConsumerCoordinator.refreshCommittedOffsetsIfNeeded; SubscriptionState (a position comes from the "
            "committed offset; auto.offset.reset only when there is none)",
        ),
        Mutant(
            "range-ceil-quota",
            "model.assignors.range",
            "range gives each subscriber ceil(P/C) partitions of a topic until none are left, so the last "
            "subscribers are starved (P=4, C=3 gives 2, 2, 0)",
            "RangeAssignor: P/C each, the first P%C one more",
        ),
        Mutant(
            "roundrobin-reset-per-topic",
            "model.assignors.roundrobin",
            "roundrobin restarts its circle of members at the first member for every topic instead of "
            "continuing one CircularIterator across all topics",
            "RoundRobinAssignor.assign (one CircularIterator, never reset)",
        ),
    )
}


def validate(mutants: frozenset[str]) -> frozenset[str]:
    """Return ``mutants`` unchanged, or raise ``ValueError`` naming the unknown ones."""
    unknown = sorted(mutants - MUTANTS.keys())
    if unknown:
        raise ValueError(f"unknown mutant(s) {', '.join(unknown)}; known: {', '.join(sorted(MUTANTS))}")
    return mutants
