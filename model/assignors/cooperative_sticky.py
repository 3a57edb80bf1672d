"""``cooperative-sticky``: Kafka's CooperativeStickyAssignor (KIP-429), incremental rebalancing.

Under the cooperative protocol a member keeps its partitions while the group rebalances, so a
partition must never be assigned to its new owner while its old owner still holds it. The assignor
computes the same balanced, sticky target as :mod:`model.assignors.sticky` and then withholds
every partition that changes hands (``CooperativeStickyAssignor.assignPartitions`` and
``adjustAssignment``, Apache Kafka 4.1.1)::

    target       = the sticky assignment (claims read from Subscription.owned / .generation)
    transferring = partitionsTransferringOwnership
    assigned(m)  = target(m) - transferring            # withheld this generation

``transferring`` comes from the builder that made the target:

* constrained (equal subscriptions): a partition handed out that another member had to give up
  (``maybeRevokedPartitions`` names someone else) or that several members claimed in the same
  generation (``partitionsWithMultiplePreviousOwners``, KAFKA-12984);
* general (unequal subscriptions): ``computePartitionsTransferringOwnership``, the partitions
  *added* to some member (target - owned) that were *revoked* from some member (owned - target),
  with ``owned`` the raw claims each member sent.

The old owner sees the partition in owned - assigned, revokes it and asks for another rebalance
(``ConsumerCoordinator.onJoinComplete``); the follow-up rebalance hands the partition to its new
owner. So one membership change costs at most two rebalances, and the assignment of the first may
be unbalanced. ``GroupAssignment.transferring`` lists what was withheld.

Java reads the generation from ``Subscription.generationId`` (protocol v2) and else from its own
``userData``; the model reads :attr:`Subscription.generation` either way.

Mutants: ``coop-no-withhold`` (nothing is withheld: the target is assigned as it is, so a partition
can be added to one member in the same generation as it is revoked from another) and
``double-claim-both-keep`` (see :mod:`model.assignors.sticky`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from model.assignors.sticky import sticky_target
from model.types import GroupAssignment, Subscription

NAME = "cooperative-sticky"  # CooperativeStickyAssignor.COOPERATIVE_STICKY_ASSIGNOR_NAME
COOP_NO_WITHHOLD = "coop-no-withhold"


def assign(partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription], *,
           mutants: frozenset[str] = frozenset()) -> GroupAssignment:
    """CooperativeStickyAssignor: the sticky target minus the partitions that change owner."""
    target = sticky_target(partitions_per_topic, subscriptions, mutants=mutants)
    u = target.universe
    assignment = target.assignment
    transferring = target.transferring
    if transferring is None:
        transferring = compute_partitions_transferring_ownership(u.claims, assignment)
    if COOP_NO_WITHHOLD in mutants:
        return u.to_group_assignment(assignment)
    # adjustAssignment: remove each transferring partition from the member it moves to
    withheld: list[set[int]] = [set() for _ in assignment]
    for p, m in transferring.items():
        withheld[m].add(p)
    adjusted = [[p for p in parts if p not in withheld[m]] if withheld[m] else parts
                for m, parts in enumerate(assignment)]
    return u.to_group_assignment(adjusted, sorted(transferring))


def compute_partitions_transferring_ownership(owned: Sequence[Sequence[int]],
                                              assignment: Sequence[Sequence[int]]) -> dict[int, int]:
    """``computePartitionsTransferringOwnership``: (∪ added) ∩ (∪ revoked), with the member each goes to.

    ``owned`` are the claims as sent (of existing partitions; claims of unknown topics or missing
    partitions can be neither assigned nor matter here).
    """
    added: dict[int, int] = {}
    revoked: set[int] = set()
    for m, parts in enumerate(assignment):
        mine = set(owned[m])
        got = set(parts)
        for p in got - mine:
            added[p] = m
        revoked |= mine - got
    return {p: m for p, m in added.items() if p in revoked}
