"""``sticky``: Kafka's StickyAssignor (KIP-54), eager rebalancing.

The sticky assignors promise two things, in this order (StickyAssignor javadoc):

1. **balance**: the members' partition counts differ by at most one, or every member with 2+
   fewer partitions than another could not take any of that other's partitions (it does not
   subscribe to their topics);
2. **stickiness**: as many partitions as possible stay with the member that owned them.

Under the eager protocol every member revokes everything before it rejoins, so it cannot report
what it owns in the subscription's ``ownedPartitions``; StickyAssignor puts its last assignment and
that assignment's generation in the subscription's ``userData`` instead, and reads them back there.
This model reads both from :attr:`Subscription.owned` and :attr:`Subscription.generation` (see
:mod:`model.assignors.sticky_claims` for how the member model fills them).

One assignment runs in three steps, each in its own module, named and ordered as in
``AbstractStickyAssignor.assignPartitions`` (Apache Kafka 4.1.1,
clients/src/main/java/org/apache/kafka/clients/consumer/internals/AbstractStickyAssignor.java):

* :mod:`model.assignors.sticky_claims` — step 0: which claims count (generations, conflicts), and
  whether all members subscribe to the same topics;
* :mod:`model.assignors.sticky_constrained` — equal subscriptions: keep owned partitions up to
  ``minQuota``/``maxQuota``, hand the rest out round robin;
* :mod:`model.assignors.sticky_general` — unequal subscriptions: keep, place on the least loaded,
  then move partitions until balanced.

The eager assignor never withholds a partition (``GroupAssignment.transferring`` is empty): every
member has already revoked everything. ``model.assignors.cooperative_sticky`` runs the same target
and then withholds what changes owner.

Consumer racks (KIP-881) play no part: rack-aware sticky assignment needs the replicas' racks of
every partition, which this signature does not carry, and Kafka's own
``assign(Map<String, Integer>, ...)`` entry point leaves them out the same way.

Mutant: ``double-claim-both-keep`` (a partition claimed by two members in the same generation stays
with both, the KAFKA-12984 class of bug).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from model.assignors.sticky_claims import (
    LEADING_EMPTY_SUBSCRIPTION,
    STALE_UNSUBSCRIBED_CLAIM,
    StickyAssignorFailure,
    Universe,
    build_universe,
    resolve_claims,
)
from model.assignors.sticky_claims import kafka_bug_exposure as _exposure
from model.assignors.sticky_constrained import build_constrained
from model.assignors.sticky_general import build_general
from model.mutants import validate
from model.types import GroupAssignment, Subscription

__all__ = ["LEADING_EMPTY_SUBSCRIPTION", "STALE_UNSUBSCRIBED_CLAIM", "StickyAssignorFailure", "StickyTarget",
           "assign", "kafka_bug_exposure", "sticky_target"]

NAME = "sticky"  # StickyAssignor.STICKY_ASSIGNOR_NAME
DOUBLE_CLAIM_BOTH_KEEP = "double-claim-both-keep"


@dataclass(slots=True)
class StickyTarget:
    """The sticky assignment before any cooperative adjustment, over numbered partitions.

    ``transferring`` is ``partitionsTransferringOwnership`` (partition -> the member it moves to)
    as the constrained builder computes it, or ``None`` after the general builder, which leaves
    it to the cooperative assignor to compute (Java sets the field to ``null``).
    """

    universe: Universe
    assignment: list[list[int]]
    transferring: dict[int, int] | None
    all_subscriptions_equal: bool


def sticky_target(partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription], *,
                  mutants: frozenset[str] = frozenset()) -> StickyTarget:
    """``AbstractStickyAssignor.assignPartitions``: choose the builder and run it."""
    validate(mutants)
    u = build_universe(partitions_per_topic, subscriptions)
    if not u.members:
        # Java never sees an empty group (the leader is a member); its constrained builder would
        # divide by zero.
        return StickyTarget(u, [], {}, True)
    both_keep = DOUBLE_CLAIM_BOTH_KEEP in mutants
    claims = resolve_claims(u, both_keep=both_keep)
    if claims.all_subscriptions_equal:
        assignment, transferring = build_constrained(u, claims, tolerate_overlap=both_keep)
        return StickyTarget(u, assignment, transferring, True)
    return StickyTarget(u, build_general(u, claims), None, False)


def assign(partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription], *,
           mutants: frozenset[str] = frozenset()) -> GroupAssignment:
    """StickyAssignor: the balanced, sticky assignment; nothing is withheld (eager protocol).

    Raises :class:`StickyAssignorFailure` on the one input where Java's assignor throws
    (docs/assignors-sticky.md, "Kafka bugs the model keeps").
    """
    target = sticky_target(partitions_per_topic, subscriptions, mutants=mutants)
    return target.universe.to_group_assignment(target.assignment)


def kafka_bug_exposure(partitions_per_topic: Mapping[str, int],
                       subscriptions: Sequence[Subscription]) -> dict[str, frozenset[str]]:
    """Member ids exposed to the Kafka bugs both sticky assignors keep, by bug (docs/assignors-sticky.md).

    ``leading-empty-subscription``: members with no topics that the constrained builder will give
    partitions (Kafka 4.1.1 does the same). ``stale-unsubscribed-claim``: members whose stale claims
    of topics they left may be handed back to them, or make the assignor fail
    (:class:`StickyAssignorFailure`, Java's ``NullPointerException``). Only exposed members can
    break ``subscribed-only``, and Kafka's balance holds whenever nobody is exposed to the second.
    """
    u = build_universe(partitions_per_topic, subscriptions)
    exposure = _exposure(u, resolve_claims(u))
    return {bug: frozenset(u.members[m].member_id for m in members) for bug, members in exposure.items()}
