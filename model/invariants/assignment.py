"""Invariants of one assignor round: what an assignment must satisfy, and what each assignor promises.

One round of the classic protocol's client-side assignment
----------------------------------------------------------

When a generation forms, the coordinator hands the leader every member's subscription
(``ConsumerProtocolSubscription``: subscribed topics, the partitions the member says it owns, and
since v2 the generation in which it owned them, KIP-792). The leader runs the assignor over the
cluster metadata (topic -> partition count) and those subscriptions, and sends the result back
through SyncGroup (``ConsumerCoordinator.onLeaderElected``). This module judges one such round:
the input is an :class:`AssignmentProblem` (metadata + subscriptions), the output a
:class:`~model.types.GroupAssignment` (partitions per member, plus the partitions cooperative-sticky
withholds because they change owner).

Claims and valid ownership
--------------------------

What a member sends as ``owned`` is a *claim*. Kafka's sticky assignors do not trust claims
blindly: ``AbstractStickyAssignor.allSubscriptionsEqual`` cleans them (reference section 4,
"Step 0") before anything is kept. groupspec calls the claims that survive the cleaning *valid*, and
every invariant below that speaks of "owned" means the valid claims:

1. a claim must name a partition that exists: its topic is in the metadata and
   ``0 <= partition < count``. Kafka drops claims of unknown topics; it does not check the
   partition number at all, but a partition that does not exist cannot be owned, so groupspec drops
   those too (reason ``unknown-topic`` / ``no-such-partition``);
2. when several claims name one partition, the claim of the strictly highest generation wins and
   the others are stale (``superseded``): "move partition from the member with an older generation
   to the member with the newer generation". A negative generation means "none" and counts as -1
   (Java's ``Subscription`` maps it to empty);
3. when two claims of one partition carry the same generation -- two members, or one member
   listing it twice (Kafka then finds the member itself as the "other" claimer) -- Kafka
   invalidates the partition for every claimer and puts it in
   ``partitionsWithMultiplePreviousOwners``. Whether such a tie is met before or after a claim of a
   higher generation depends on Java ``HashMap`` iteration order, so Kafka's outcome for e.g.
   {A: gen 5, B: gen 5, C: gen 7} depends on the order. groupspec takes the reading that holds
   whatever the order: **any** same-generation tie voids the partition (reason ``conflict``).

A valid claim says nothing about the subscription: a member may validly own a partition of a topic
it no longer subscribes to (it must then revoke it). Stickiness only counts the valid claims of
subscribed topics (*keepable* partitions).

The invariants (ids from ``model.invariants.catalogue``)
---------------------------------------------------------

``single-owner``
    no partition is in the assignment of two members (or twice in one).
``subscribed-only``
    every partition a member is given exists and belongs to a topic the member subscribes to;
    no assignment is made to an id that is not a member.
``complete``
    every partition of every topic some member subscribes to (and that exists) is assigned.
``balanced``
    range: for each topic, the numbers of that topic's partitions its subscribers got differ by at
    most one (``RangeAssignor`` works per topic). Every other assignor: Kafka's definition from the
    ``StickyAssignor`` javadoc and ``GeneralAssignmentBuilder.isBalanced``: the members' partition
    counts differ by at most one, or every member with two or more fewer partitions than another
    could not take any of that other's partitions (it subscribes to none of their topics). This is
    the subscription-based form the assignor enforces; ``AbstractStickyAssignorTest.
    verifyValidityAndBalance`` checks a weaker form on the assigned topics.
``sticky``
    Kafka's two promises. (a) Under equal subscriptions (``allSubscriptionsEqual``: every member
    lists the same topics), with P partitions over N members, ``minQuota = P // N``,
    ``maxQuota = ceil(P / N)`` and E = P % N members allowed at maxQuota,
    ``ConstrainedAssignmentBuilder.assignOwnedPartitions`` keeps for every member
    ``min(|keepable|, minQuota)`` of its keepable partitions, and keeps maxQuota for the first
    ``min(E, #members with |keepable| >= maxQuota)`` such members. groupspec checks exactly that,
    order-free: every member keeps at least ``min(|keepable|, minQuota)``, and at least
    ``min(E, #{|keepable| >= maxQuota})`` members keep maxQuota. (What counts as kept is a little
    wider than keepable: a partition the member claimed with the highest generation also counts
    where lower claims of it tie, because Kafka lets it keep that partition in some iteration
    orders -- see ``Claims.tied``.) (b) Always: no two members swap
    partitions of one topic, i.e. the per-topic movement graph (valid owner -> new owner) has no
    2-cycle (``PartitionMovements.isSticky`` / ``hasCycles``).
``revoke-before-assign``
    with added(m) = assigned(m) - valid_owned(m) and revoked(m) = valid_owned(m) - assigned(m):
    (U added) n (U revoked) is empty. A partition that changes owner must first be revoked by its
    valid owner, so it is assigned to nobody in this round (KIP-429;
    ``ConsumerCoordinator.validateCooperativeAssignment``,
    ``CooperativeStickyAssignorTest.verifyCooperativeValidity``; Kafka's test computes it on the
    raw claims, groupspec on the valid ones, so a partition handed back to a stale claimer while its
    valid owner still holds it is a violation).
``revoke-only-moved``
    over one round: every partition a member revokes (revoked(m) above) either leaves it -- it is
    assigned to another member, or withheld as transferring to one -- or belongs to a topic the
    member no longer subscribes to. A revocation with neither reason stops consumption of a
    partition for nothing (KIP-429: "revoke only the partitions that move";
    ``ConsumerCoordinator.onJoinPrepare`` revokes only unsubscribed topics before the join).

Who promises what (:func:`promised`)
------------------------------------

========================  =============================================================================
range                     single-owner, subscribed-only, complete, balanced (per topic)
roundrobin                single-owner, subscribed-only, complete; balanced only when every member
                          subscribes to the same existing topics (one circular iterator then
                          deals the partitions evenly)
sticky                    single-owner, subscribed-only, complete, balanced, sticky
cooperative-sticky        single-owner, subscribed-only, sticky, revoke-before-assign,
                          revoke-only-moved; complete and balanced only when nothing is transferring
                          (the follow-up rebalance delivers them)
========================  =============================================================================

Eager assignors promise no revoke-* property: under the eager protocol every member revokes
everything before it rejoins (``eager-revoke-all``), so nothing is revoked across members inside a
round. :func:`check_round` still evaluates every predicate, for reports.

The promises are Kafka's, and the model's sticky assignors keep Kafka's bugs: on a few inputs
(a member with an empty subscription ordered first; a stale claim in the general builder) a promise
fails exactly as it fails in Kafka 4.1.1. docs/assign.md lists them; tests/model/
test_assignors_promises.py pins each one and accepts no other failure.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import Any

from model.assignors import ASSIGNORS, AssignorSpec
from model.invariants.catalogue import CATALOGUE
from model.types import GroupAssignment, Subscription, TopicPartition, tps_to_json

SINGLE_OWNER = "single-owner"
SUBSCRIBED_ONLY = "subscribed-only"
COMPLETE = "complete"
BALANCED = "balanced"
STICKY = "sticky"
REVOKE_BEFORE_ASSIGN = "revoke-before-assign"
REVOKE_ONLY_MOVED = "revoke-only-moved"

NO_GENERATION = -1  # AbstractStickyAssignor.DEFAULT_GENERATION; any negative generation means "none"

ROUND_INVARIANTS: tuple[str, ...] = (
    SINGLE_OWNER, SUBSCRIBED_ONLY, COMPLETE, BALANCED, STICKY, REVOKE_BEFORE_ASSIGN, REVOKE_ONLY_MOVED,
)
assert set(ROUND_INVARIANTS) <= CATALOGUE.keys(), "round invariants must be catalogue ids"


# --------------------------------------------------------------------------------------------------
# Inputs and results
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AssignmentProblem:
    """The input of one assignor round: cluster metadata and the members' subscriptions."""

    partitions_per_topic: Mapping[str, int]
    subscriptions: tuple[Subscription, ...]

    @staticmethod
    def of(partitions_per_topic: Mapping[str, int], subscriptions: Iterable[Subscription]) -> AssignmentProblem:
        return AssignmentProblem(dict(partitions_per_topic), tuple(subscriptions))


@dataclass(frozen=True, slots=True)
class Finding:
    """One offence: what is wrong, in a sentence, and the members and partitions involved."""

    message: str
    members: tuple[str, ...] = ()
    partitions: tuple[TopicPartition, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"message": self.message, "members": list(self.members),
                "partitions": tps_to_json(self.partitions)}


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of one predicate: it held when there is no finding."""

    id: str
    findings: tuple[Finding, ...] = ()

    @property
    def held(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {"held": self.held, "findings": [f.to_json() for f in self.findings]}


# --------------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------------


class ClaimRejection(StrEnum):
    """Why a claim is not valid (see the module docstring, "Claims and valid ownership")."""

    UNKNOWN_TOPIC = "unknown-topic"
    NO_SUCH_PARTITION = "no-such-partition"
    CONFLICT = "conflict"  # the partition is claimed twice in one generation: void for everyone
    SUPERSEDED = "superseded"  # another member claims it with a higher generation


@dataclass(frozen=True, slots=True)
class IgnoredClaim:
    member_id: str
    partition: TopicPartition
    generation: int
    reason: ClaimRejection

    def to_json(self) -> dict[str, Any]:
        return {"member_id": self.member_id, **self.partition.to_json(), "generation": self.generation,
                "reason": self.reason.value}


@dataclass(frozen=True, slots=True)
class Claims:
    """The outcome of cleaning the claims: each valid partition has exactly one valid owner.

    ``tied`` lists the partitions voided only by a tie *below* the highest generation, with their
    claimer of the strictly highest generation. Kafka gives that claimer the partition in the general
    builder, and in the constrained builder unless the tie happens to be met first in ``HashMap``
    order; so a member *may* keep its ``owned`` and its ``tied`` partitions, and every order lets it
    keep its ``owned`` ones.
    """

    owner: Mapping[TopicPartition, str]  # partition -> its valid owner
    owned: Mapping[str, frozenset[TopicPartition]]  # member -> its valid claims (every member has an entry)
    ignored: tuple[IgnoredClaim, ...]
    tied: Mapping[str, frozenset[TopicPartition]]  # member -> partitions it may keep beyond ``owned``


def valid_claims(partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription]) -> Claims:
    """Clean the members' ``owned`` claims as ``AbstractStickyAssignor.allSubscriptionsEqual`` does.

    Order-free: the result does not depend on the order of ``subscriptions`` (Kafka's does, through
    ``HashMap`` iteration; see the module docstring for the reading chosen). Written for a million
    claims: when no partition is claimed twice (the usual case) no claim is looked at twice.
    """
    ignored: list[IgnoredClaim] = []
    claims: list[tuple[tuple[str, int], list[TopicPartition]]] = []  # ((member, generation), existing claims)
    for sub in subscriptions:
        claim = (sub.member_id, max(sub.generation, NO_GENERATION))
        ok = [tp for tp in sub.owned if 0 <= tp.partition < partitions_per_topic.get(tp.topic, 0)]
        if len(ok) != len(sub.owned):
            for tp in sub.owned:
                count = partitions_per_topic.get(tp.topic)
                if count is None:
                    ignored.append(IgnoredClaim(claim[0], tp, claim[1], ClaimRejection.UNKNOWN_TOPIC))
                elif not 0 <= tp.partition < count:
                    ignored.append(IgnoredClaim(claim[0], tp, claim[1], ClaimRejection.NO_SUCH_PARTITION))
        claims.append((claim, ok))

    owner = {tp: claim[0] for claim, ok in claims for tp in ok}
    more: dict[TopicPartition, list[tuple[str, int]]] = {}
    if len(owner) != sum(len(ok) for _, ok in claims):  # some partition is claimed more than once
        first: dict[TopicPartition, tuple[str, int]] = {}
        for claim, ok in claims:
            for tp in ok:
                if tp in first:
                    more.setdefault(tp, [first[tp]]).append(claim)
                else:
                    first[tp] = claim
    tied: dict[str, set[TopicPartition]] = defaultdict(set)
    for tp, claimers in more.items():
        del owner[tp]
        generations = [generation for _, generation in claimers]
        winner, top = max(claimers, key=lambda claim: claim[1])
        if len(set(generations)) < len(generations):
            if generations.count(top) == 1:
                tied[winner].add(tp)
            ignored.extend(IgnoredClaim(m, tp, g, ClaimRejection.CONFLICT) for m, g in claimers)
            continue
        owner[tp] = winner
        ignored.extend(IgnoredClaim(m, tp, g, ClaimRejection.SUPERSEDED) for m, g in claimers if g != top)
    owned: dict[str, frozenset[TopicPartition]] = {}
    for (member, _), ok in claims:
        mine = frozenset(ok)
        if more and not mine.isdisjoint(more.keys()):
            mine = frozenset(tp for tp in mine if owner.get(tp) == member)
        owned[member] = mine
    ignored.sort(key=lambda c: (c.member_id, c.partition, c.reason.value))
    return Claims(owner, owned, tuple(ignored), {m: frozenset(tps) for m, tps in tied.items()})


# --------------------------------------------------------------------------------------------------
# Facts shared by the predicates
# --------------------------------------------------------------------------------------------------


def subscribed_topics(partitions_per_topic: Mapping[str, int], sub: Subscription) -> frozenset[str]:
    """The member's topics that exist in the metadata (Kafka skips the others)."""
    return frozenset(t for t in sub.topics if t in partitions_per_topic)


def all_subscriptions_equal(subscriptions: Sequence[Subscription]) -> bool:
    """``AbstractStickyAssignor.allSubscriptionsEqual``: every member lists the same topics.

    Compared as listed (topics missing from the metadata included), as Kafka compares them: it is
    what decides between the constrained and the general assignment builder.
    """
    return len({frozenset(sub.topics) for sub in subscriptions}) <= 1


def same_existing_topics(partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription]) -> bool:
    """Every member subscribes to the same set of topics that exist."""
    distinct = {sub.topics for sub in subscriptions}
    return len({frozenset(t for t in topics if t in partitions_per_topic) for topics in distinct}) <= 1


def assigned_sets(result: GroupAssignment) -> dict[str, frozenset[TopicPartition]]:
    return {member: frozenset(tps) for member, tps in result.assignment.items()}


def _sorted_members(members: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(members)))


class RoundFacts:
    """What several predicates need, computed once per round (lazily): claims, assignments, moves.

    ``check_round`` builds one and hands it to every predicate; a predicate called alone builds its
    own.
    """

    def __init__(self, problem: AssignmentProblem, result: GroupAssignment) -> None:
        self.problem = problem
        self.result = result

    @cached_property
    def subs(self) -> dict[str, Subscription]:
        return {sub.member_id: sub for sub in self.problem.subscriptions}

    @cached_property
    def claims(self) -> Claims:
        return valid_claims(self.problem.partitions_per_topic, self.problem.subscriptions)

    @cached_property
    def assigned(self) -> dict[str, frozenset[TopicPartition]]:
        return assigned_sets(self.result)

    @cached_property
    def holder(self) -> dict[TopicPartition, str]:
        """Each assigned partition -> a member it is assigned to (see ``shared`` for the others)."""
        return {tp: member for member, tps in self.result.assignment.items() for tp in tps}

    @cached_property
    def shared(self) -> dict[TopicPartition, list[str]]:
        """The partitions assigned more than once -> every member holding them (usually empty)."""
        if len(self.holder) == sum(len(tps) for tps in self.result.assignment.values()):
            return {}
        seen: dict[TopicPartition, list[str]] = defaultdict(list)
        for member, tps in self.result.assignment.items():
            for tp in tps:
                seen[tp].append(member)
        return {tp: members for tp, members in seen.items() if len(members) > 1}

    def holders(self, tp: TopicPartition) -> list[str]:
        """Every member ``tp`` is assigned to."""
        if tp in self.shared:
            return self.shared[tp]
        member = self.holder.get(tp)
        return [] if member is None else [member]

    @cached_property
    def revoked(self) -> dict[TopicPartition, str]:
        """revoked(m) = owned(m) - assigned(m), as partition -> m (a valid claim has one owner)."""
        empty: frozenset[TopicPartition] = frozenset()
        return {tp: member for member, tps in self.claims.owned.items()
                for tp in tps - self.assigned.get(member, empty)}


def _facts(problem: AssignmentProblem, result: GroupAssignment, facts: RoundFacts | None) -> RoundFacts:
    return facts if facts is not None else RoundFacts(problem, result)


# --------------------------------------------------------------------------------------------------
# The predicates: each (problem, result, strategy[, facts]) -> Verdict
# --------------------------------------------------------------------------------------------------


def single_owner(problem: AssignmentProblem, result: GroupAssignment, strategy: str,
                 facts: RoundFacts | None = None) -> Verdict:
    """No partition is assigned to two members, nor twice to one."""
    shared = _facts(problem, result, facts).shared
    findings = [Finding(f"{tp} is assigned {len(members)} times: to {', '.join(sorted(members))}",
                        _sorted_members(members), (tp,))
                for tp, members in sorted(shared.items())]
    return Verdict(SINGLE_OWNER, tuple(findings))


def subscribed_only(problem: AssignmentProblem, result: GroupAssignment, strategy: str,
                    facts: RoundFacts | None = None) -> Verdict:
    """Every assigned partition exists and is of a topic its member subscribes to."""
    subs = _facts(problem, result, facts).subs
    ppt = problem.partitions_per_topic
    findings = []
    for member in sorted(result.assignment):
        tps = result.assignment[member]
        if not tps:
            continue
        sub = subs.get(member)
        if sub is None:
            findings.append(Finding(f"{member} is not a member of the group but is assigned {len(set(tps))} "
                                    f"partition(s)", (member,), tuple(sorted(set(tps)))))
            continue
        topics = frozenset(sub.topics)
        missing = sorted({tp for tp in tps if not 0 <= tp.partition < ppt.get(tp.topic, 0)})
        unsubscribed = sorted({tp for tp in tps if tp.topic not in topics} - set(missing))
        if missing:
            findings.append(Finding(f"{member} is assigned partition(s) that do not exist", (member,),
                                    tuple(missing)))
        if unsubscribed:
            names = ", ".join(sorted({tp.topic for tp in unsubscribed}))
            findings.append(Finding(f"{member} is assigned partition(s) of topic(s) it does not subscribe to: "
                                    f"{names}", (member,), tuple(unsubscribed)))
    return Verdict(SUBSCRIBED_ONLY, tuple(findings))


def complete(problem: AssignmentProblem, result: GroupAssignment, strategy: str,
             facts: RoundFacts | None = None) -> Verdict:
    """Every partition of every subscribed (existing) topic has an owner."""
    holders = _facts(problem, result, facts).holder
    ppt = problem.partitions_per_topic
    wanted = sorted(set().union(*{sub.topics for sub in problem.subscriptions}) & ppt.keys())
    held = Counter(tp.topic for tp in holders if 0 <= tp.partition < ppt.get(tp.topic, 0))
    findings = []
    for topic in wanted:
        if held[topic] == ppt[topic]:
            continue
        missing = tuple(tp for tp in map(TopicPartition, [topic] * problem.partitions_per_topic[topic],
                                         range(problem.partitions_per_topic[topic]))
                        if tp not in holders)
        if missing:
            withheld = sum(1 for tp in missing if tp in result.transferring)
            note = f" ({withheld} of them withheld as transferring)" if withheld else ""
            findings.append(Finding(f"{len(missing)} partition(s) of subscribed topic {topic} have no owner{note}",
                                    (), missing))
    return Verdict(COMPLETE, tuple(findings))


def balanced(problem: AssignmentProblem, result: GroupAssignment, strategy: str,
             facts: RoundFacts | None = None) -> Verdict:
    """The assignor's balance definition: per topic for range, Kafka's general definition otherwise."""
    assigned = _facts(problem, result, facts).assigned
    if strategy == "range":
        return _balanced_per_topic(problem, assigned)
    return _balanced_kafka(problem, assigned)


def _balanced_per_topic(problem: AssignmentProblem, assigned: Mapping[str, frozenset[TopicPartition]]) -> Verdict:
    """``RangeAssignor``: each topic's partitions are split among its subscribers, counts within one."""
    per_topic: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for member, tps in assigned.items():
        for tp in tps:
            per_topic[tp.topic][member] += 1
    subscribers: dict[str, list[str]] = defaultdict(list)
    for sub in problem.subscriptions:
        for topic in set(sub.topics):
            subscribers[topic].append(sub.member_id)
    findings = []
    for topic in sorted(problem.partitions_per_topic):
        got = per_topic.get(topic, {})
        counts = {member: got.get(member, 0) for member in subscribers.get(topic, ())}
        if not counts:
            continue
        low, high = min(counts.values()), max(counts.values())
        if high - low > 1:
            lows = tuple(sorted(m for m, c in counts.items() if c == low))
            highs = tuple(sorted(m for m, c in counts.items() if c == high))
            findings.append(Finding(
                f"topic {topic}: {', '.join(highs)} got {high} of its partitions but {', '.join(lows)} "
                f"only {low}", highs + lows))
    return Verdict(BALANCED, tuple(findings))


def _balanced_kafka(problem: AssignmentProblem, assigned: Mapping[str, frozenset[TopicPartition]]) -> Verdict:
    """``GeneralAssignmentBuilder.isBalanced``: counts within one, or no under-loaded member could take more.

    For each member ``a``, it is enough to know, per topic ``t`` it subscribes to, the most loaded
    member holding a partition of ``t``: ``a`` could take that partition iff that load is at least
    ``count(a) + 2``.
    """
    members = [sub.member_id for sub in problem.subscriptions]
    count = {m: len(assigned.get(m, ())) for m in members}
    if not members or max(count.values()) - min(count.values()) <= 1:
        return Verdict(BALANCED)
    heaviest: dict[str, tuple[int, str]] = {}  # topic -> (load, member): its first most loaded holder
    for m in sorted(members):
        load = count[m]
        for topic in {tp.topic for tp in assigned.get(m, ())}:
            best = heaviest.get(topic)
            if best is None or load > best[0]:
                heaviest[topic] = (load, m)
    # per distinct subscription: its most loaded holder of any of its topics (first topic in name order)
    reach: dict[tuple[str, ...], tuple[int, str, str] | None] = {}
    for topics in {sub.topics for sub in problem.subscriptions}:
        candidates = [(-heaviest[t][0], t, heaviest[t][1]) for t in topics if t in heaviest]
        top = min(candidates, default=None)
        reach[topics] = None if top is None else (-top[0], top[2], top[1])
    findings = []
    for sub in sorted(problem.subscriptions, key=lambda s: s.member_id):
        a, reached = sub.member_id, reach[sub.topics]
        if reached is not None and reached[0] >= count[a] + 2:
            load, b, topic = reached
            tp = min(tp for tp in assigned[b] if tp.topic == topic)
            findings.append(Finding(
                f"{a} has {count[a]} partition(s) and {b} has {load}, yet {a} subscribes to {topic} and "
                f"could take {tp} from {b}", (a, b), (tp,)))
    return Verdict(BALANCED, tuple(findings))


def sticky(problem: AssignmentProblem, result: GroupAssignment, strategy: str,
           facts: RoundFacts | None = None) -> Verdict:
    """Kafka's stickiness promises: quota keeping under equal subscriptions, and no swaps."""
    f = _facts(problem, result, facts)
    findings: list[Finding] = []
    if problem.subscriptions and all_subscriptions_equal(problem.subscriptions):
        findings.extend(_quota_kept(problem, f.claims, f.assigned))
    findings.extend(_swaps(f.claims, f.assigned))
    return Verdict(STICKY, tuple(findings))


def keepable(problem: AssignmentProblem, claims: Claims, sub: Subscription) -> frozenset[TopicPartition]:
    """A member's valid claims of topics it still subscribes to: what stickiness may keep for it."""
    owned = claims.owned.get(sub.member_id, frozenset())
    topics = frozenset(sub.topics)
    if {tp.topic for tp in owned} <= topics:
        return owned
    return frozenset(tp for tp in owned if tp.topic in topics)


def _quota_kept(problem: AssignmentProblem, claims: Claims,
                assigned: Mapping[str, frozenset[TopicPartition]]) -> list[Finding]:
    topics = subscribed_topics(problem.partitions_per_topic, problem.subscriptions[0])
    total = sum(problem.partitions_per_topic[t] for t in topics)
    n = len(problem.subscriptions)
    min_quota, extra = divmod(total, n)
    max_quota = min_quota + (1 if extra else 0)
    findings = []
    kept_max = 0
    owning_max = 0
    for sub in sorted(problem.subscriptions, key=lambda s: s.member_id):
        mine = keepable(problem, claims, sub)
        member = sub.member_id
        tied = frozenset(tp for tp in claims.tied.get(member, ()) if tp.topic in sub.topics)
        kept = assigned.get(member, frozenset()) & (mine | tied)
        if len(mine) >= max_quota:
            owning_max += 1
        if extra and len(kept) >= max_quota:
            kept_max += 1
        due = min(len(mine), min_quota)
        if len(kept) < due:
            findings.append(Finding(
                f"{member} kept {len(kept)} of its {len(mine)} owned partition(s); under equal "
                f"subscriptions Kafka keeps min(owned, minQuota={min_quota}) = {due}",
                (member,), tuple(sorted(mine - kept))))
    if extra and kept_max < min(extra, owning_max):
        findings.append(Finding(
            f"only {kept_max} member(s) kept maxQuota={max_quota} partitions, though {owning_max} owned at "
            f"least that many and {extra} member(s) may hold maxQuota; Kafka keeps maxQuota for "
            f"min({extra}, {owning_max}) = {min(extra, owning_max)}"))
    return findings


def _swaps(claims: Claims, assigned: Mapping[str, frozenset[TopicPartition]]) -> list[Finding]:
    """2-cycles in the per-topic movement graph (valid owner -> member now assigned)."""
    owner = claims.owner
    empty: frozenset[TopicPartition] = frozenset()
    moves: dict[tuple[str, str, str], list[TopicPartition]] = defaultdict(list)
    for member, tps in assigned.items():
        for tp in tps - claims.owned.get(member, empty):  # what it did not own: usually few
            previous = owner.get(tp)
            if previous is not None:
                moves[(tp.topic, previous, member)].append(tp)
    findings = []
    for (topic, a, b), there in sorted(moves.items()):
        back = moves.get((topic, b, a))
        if back is not None and a < b:
            findings.append(Finding(f"{a} and {b} swap partitions of topic {topic}", (a, b),
                                    tuple(sorted(there + back))))
    return findings


def revoke_before_assign(problem: AssignmentProblem, result: GroupAssignment, strategy: str,
                         facts: RoundFacts | None = None) -> Verdict:
    """(U added) n (U revoked) is empty: revoked from the valid owner, added against the claims as sent.

    "Added" follows Kafka's own check (``ConsumerCoordinator.validateCooperativeAssignment``:
    added = assigned - owned as the member sent it). A member handed back a partition it still
    claims with a stale generation already holds it: no new overlap arises in this round (the
    one with the valid owner was there before), so that is not an addition.
    """
    f = _facts(problem, result, facts)
    owner = f.claims.owner
    findings = []
    for tp, revoker in f.revoked.items():
        adders = sorted(m for m in f.holders(tp) if owner.get(tp) != m and tp not in f.subs[m].owned)
        if adders:
            findings.append(Finding(f"{tp} is revoked from {revoker} and assigned to {', '.join(adders)} in the "
                                    f"same round", (revoker, *adders), (tp,)))
    return Verdict(REVOKE_BEFORE_ASSIGN, tuple(sorted(findings, key=lambda f: f.partitions)))


def revoke_only_moved(problem: AssignmentProblem, result: GroupAssignment, strategy: str,
                      facts: RoundFacts | None = None) -> Verdict:
    """Every revoked partition leaves its owner, or its topic is no longer subscribed."""
    f = _facts(problem, result, facts)
    needless: dict[str, list[TopicPartition]] = defaultdict(list)
    for tp, member in f.revoked.items():
        if tp.topic in f.subs[member].topics and tp not in f.holder and tp not in result.transferring:
            needless[member].append(tp)
    findings = [Finding(f"{member} revokes partition(s) it still subscribes to that no other member gets",
                        (member,), tuple(sorted(tps)))
                for member, tps in sorted(needless.items())]
    return Verdict(REVOKE_ONLY_MOVED, tuple(findings))


Predicate = Callable[[AssignmentProblem, GroupAssignment, str, RoundFacts | None], Verdict]

PREDICATES: dict[str, Predicate] = {
    SINGLE_OWNER: single_owner,
    SUBSCRIBED_ONLY: subscribed_only,
    COMPLETE: complete,
    BALANCED: balanced,
    STICKY: sticky,
    REVOKE_BEFORE_ASSIGN: revoke_before_assign,
    REVOKE_ONLY_MOVED: revoke_only_moved,
}


# --------------------------------------------------------------------------------------------------
# Promises
# --------------------------------------------------------------------------------------------------


def _spec(strategy: str) -> AssignorSpec:
    try:
        return ASSIGNORS[strategy]
    except KeyError:
        raise ValueError(f"unknown strategy {strategy!r}; known: {', '.join(ASSIGNORS)}") from None


def promised(strategy: str, problem: AssignmentProblem, result: GroupAssignment) -> frozenset[str]:
    """The invariant ids ``strategy`` promises for this round (table in the module docstring)."""
    _spec(strategy)
    ids = {SINGLE_OWNER, SUBSCRIBED_ONLY}
    if strategy == "range":
        ids |= {COMPLETE, BALANCED}
    elif strategy == "roundrobin":
        ids.add(COMPLETE)
        if same_existing_topics(problem.partitions_per_topic, problem.subscriptions):
            ids.add(BALANCED)
    elif strategy == "sticky":
        ids |= {COMPLETE, BALANCED, STICKY}
    elif strategy == "cooperative-sticky":
        ids |= {STICKY, REVOKE_BEFORE_ASSIGN, REVOKE_ONLY_MOVED}
        if not result.transferring:
            ids |= {COMPLETE, BALANCED}
    # an assignor registered without a row here is held to validity only
    return frozenset(ids)


def check_round(strategy: str, problem: AssignmentProblem, result: GroupAssignment,
                facts: RoundFacts | None = None) -> dict[str, Verdict]:
    """Every round predicate, in catalogue order."""
    _spec(strategy)
    facts = _facts(problem, result, facts)
    return {inv: PREDICATES[inv](problem, result, strategy, facts) for inv in ROUND_INVARIANTS}


def violated(strategy: str, problem: AssignmentProblem, result: GroupAssignment,
             verdicts: Mapping[str, Verdict] | None = None) -> list[str]:
    """The promised invariants that failed, in catalogue order."""
    verdicts = verdicts if verdicts is not None else check_round(strategy, problem, result)
    keep = promised(strategy, problem, result)
    return [inv for inv in ROUND_INVARIANTS if inv in keep and not verdicts[inv].held]


__all__ = [
    "AssignmentProblem", "Claims", "ClaimRejection", "Finding", "IgnoredClaim", "PREDICATES", "ROUND_INVARIANTS",
    "RoundFacts", "Verdict", "all_subscriptions_equal", "check_round", "keepable", "promised", "same_existing_topics",
    "subscribed_topics", "valid_claims", "violated",
]
