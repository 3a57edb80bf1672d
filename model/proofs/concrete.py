"""Concrete side of the assignor proofs: run the executable assignors, check them, show them as traces.

A symbolic counterexample is only evidence once the executable model reproduces it. For an
assignor that means: build the :class:`~model.types.Subscription` list the solver's model
describes, run ``model.assignors.assign`` (with the mutant switched on, if any), check the
catalogue invariant on what came back, and render the round as trace events so that the proof
report can show it as a table and as an ownership timeline.

The trace of one assignor round uses logical time (1 ms per step):

* ``t=0``: each member's JoinGroup metadata (``group_joined`` with the ``owned`` partitions it
  claims and the generation it claims them with), and the partitions exactly one member claims as
  that member's ``partitions_assigned`` (a partition claimed twice has no single previous owner);
* ``t=1``: the new assignment's additions (``partitions_assigned``, next generation) -- members
  apply their SyncGroup answers independently, so an addition may come before another member's
  revocation;
* ``t=2``: the revocations (``partitions_revoked``).

So a partition added to one member and revoked from another in the same generation shows as two
owners between t=1 and t=2: the overlap ``revoke-before-assign`` forbids.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from model import events as ev
from model.assignors import ASSIGNORS
from model.invariants.assignment import PREDICATES, AssignmentProblem, Verdict
from model.types import GroupAssignment, Subscription, TopicPartition


def run_assignor(strategy: str, partitions_per_topic: Mapping[str, int], subs: Sequence[Subscription],
                 mutants: frozenset[str] = frozenset()) -> GroupAssignment:
    result: GroupAssignment = ASSIGNORS[strategy].assign(partitions_per_topic, subs, mutants=mutants)
    return result


def verdict(invariant: str, strategy: str, partitions_per_topic: Mapping[str, int],
            subs: Sequence[Subscription], result: GroupAssignment) -> Verdict:
    """The catalogue predicate ``invariant`` (model.invariants.assignment) on one round."""
    problem = AssignmentProblem.of(partitions_per_topic, subs)
    return PREDICATES[invariant](problem, result, strategy, None)


def added_and_revoked_raw(subs: Sequence[Subscription], result: GroupAssignment) -> set[TopicPartition]:
    """(U added) & (U revoked) with owned read as the *raw* claims, as Kafka computes it
    (``ConsumerCoordinator.validateCooperativeAssignment``,
    ``CooperativeStickyAssignor.computePartitionsTransferringOwnership``)."""
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for sub in subs:
        owned, assigned = set(sub.owned), set(result.assignment.get(sub.member_id, ()))
        added |= assigned - owned
        revoked |= owned - assigned
    return added & revoked


def findings_text(v: Verdict) -> str:
    return "; ".join(f.message for f in v.findings)


def round_events(strategy: str, subs: Sequence[Subscription], result: GroupAssignment,
                 protocol: str) -> list[dict[str, Any]]:
    """One assignor round as trace events (see the module docstring for the timing)."""
    out: list[dict[str, Any]] = []
    next_gen = max((s.generation for s in subs), default=-1) + 1
    claimers: dict[TopicPartition, int] = defaultdict(int)
    for sub in subs:
        for tp in set(sub.owned):
            claimers[tp] += 1
    for sub in subs:
        out.append(ev.event(ev.GROUP_JOINED, 0, member=sub.member_id, member_id=sub.member_id,
                            generation=sub.generation, protocol=protocol, assignor=strategy,
                            topics=sorted(sub.topics), owned=ev.tp_list(sub.owned)))
    for sub in subs:
        held = {tp for tp in sub.owned if claimers[tp] == 1}
        if held:
            out.append(ev.event(ev.PARTITIONS_ASSIGNED, 0, member=sub.member_id, member_id=sub.member_id,
                                generation=sub.generation, partitions=held))
    for sub in subs:
        owned = set(sub.owned)
        new = set(result.assignment.get(sub.member_id, ()))
        if new - owned:
            out.append(ev.event(ev.PARTITIONS_ASSIGNED, 1, member=sub.member_id, member_id=sub.member_id,
                                generation=next_gen, protocol=protocol, assignor=strategy,
                                partitions=new - owned))
    for sub in subs:
        gone = set(sub.owned) - set(result.assignment.get(sub.member_id, ()))
        if gone:
            out.append(ev.event(ev.PARTITIONS_REVOKED, 2, member=sub.member_id, member_id=sub.member_id,
                                generation=next_gen, protocol=protocol, assignor=strategy, partitions=gone))
    return out
