"""Step 0 of Kafka's sticky assignors: who may keep what they say they own.

Every member of a group that uses ``sticky`` or ``cooperative-sticky`` tells the leader which
partitions it owns and in which generation it got them. The leader's assignor first decides which
of those claims count (``AbstractStickyAssignor.allSubscriptionsEqual``, Apache Kafka 4.1.1,
clients/src/main/java/org/apache/kafka/clients/consumer/internals/AbstractStickyAssignor.java,
after KAFKA-12984, KAFKA-14639 and KAFKA-15106):

* claims of topics the group has no metadata for are dropped;
* the first member to claim a partition keeps it, for now;
* a later claimer **with the same generation** invalidates the claim: *neither* keeps the
  partition, which goes to ``partitionsWithMultiplePreviousOwners`` (KAFKA-12984). A member that
  lists the same partition twice is, in Java, such a claimer against itself, and loses it too;
* a later claimer with a **higher** generation takes the partition over; one with a **lower**
  generation loses it.

The same loop also answers whether every member subscribes to the same topics, which chooses the
builder: the *constrained* one (``model.assignors.sticky_constrained``) when they all do, the
*general* one (``model.assignors.sticky_general``) otherwise. It also computes ``maxGeneration``.

Where the claims come from. ``CooperativeStickyAssignor.memberData`` reads
``Subscription.ownedPartitions`` and ``Subscription.generationId`` (ConsumerProtocolSubscription
v1/v2, KIP-429 / KIP-792); the eager ``StickyAssignor.memberData`` reads the same two things from
the assignor's own ``userData`` (its last assignment and that assignment's generation), because
an eager member has revoked everything before it joins. In this model both assignors read
:attr:`Subscription.owned` and :attr:`Subscription.generation`: whoever builds the subscription
(``model.classic.member``) puts there what the real client would have sent in the place its assignor
reads. A generation below 0 means "none" (Java: ``Optional.empty()``, and ``Subscription``'s
constructor maps any negative generation to empty), which every rule treats as -1.

Orders. Java iterates the leader's ``HashMap<String, Subscription>``, an order that depends on
the member ids' hash codes. Where that order changes the result (which of several same-rank
claimers comes first; which members keep ``maxQuota`` in the constrained builder; the previous
owner chosen among equal generations in the general builder) this model iterates members in the
order of :mod:`model.assignors.order` (static members by ``group.instance.id``, then the others by
member id). Where Java sorts explicitly (``Collections.sort`` of member ids, the ``TreeSet`` of
consumers, topic names) this model sorts the same way, with Java's ``String.compareTo`` (UTF-16
code units; :func:`java_string_key`).

Deviations, all documented in docs/assignors-sticky.md:

* a claimed partition number outside ``0 .. count-1`` of a known topic is dropped here. Java only
  checks the topic; such a claim would then be *kept* (an assignment of a partition that does not
  exist) and would also break the two-pointer merge in ``getUnassignedPartitions``;
* a member's topic list is taken as a set (the Java client sends a set; Java would count a
  duplicated topic twice when comparing subscriptions);
* ``maxGeneration`` is computed per call. In Java it is a field of the assignor instance that is
  never reset, so it is the highest generation that leader has ever seen.

Internally a partition is an int: topics are numbered in Java's topic-name order and a topic's
partitions get consecutive numbers, so int order is (topic, partition) order. That keeps the
million-partition problems of Kafka's scale tests cheap.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from model.assignors.order import sorted_members
from model.types import GroupAssignment, Subscription, TopicPartition

DEFAULT_GENERATION = -1  # AbstractStickyAssignor.DEFAULT_GENERATION


def java_string_key(s: str) -> bytes:
    """A sort key that orders strings as Java's ``String.compareTo`` does.

    Java compares UTF-16 code units; Python compares code points. They differ only when a
    character above U+FFFF meets one in U+E000..U+FFFF. Big-endian UTF-16 bytes compare as the
    code units do.
    """
    return s.encode("utf-16-be", "surrogatepass")


class StickyAssignorFailure(RuntimeError):
    """The input makes Kafka's Java assignor throw instead of answering.

    The model raises where Java raises, so that a caller sees the failure the real leader would
    have had (the leader's ``onLeaderElected`` fails and the rebalance does not complete).
    """


@dataclass(slots=True)
class Universe:
    """One assignment problem, numbered.

    Members are numbered in Java's member-id order (the order of ``Collections.sort`` and of the
    ``TreeSet`` tie-break); ``iteration`` is the order used where Java iterates a ``HashMap``.
    """

    topics: list[str]  # topics with metadata and >= 1 partition that some member subscribes to
    topic_index: dict[str, int]
    first: list[int]  # first[t]: the int of partition 0 of topic t; first[len(topics)] == total
    total: int
    members: list[Subscription]  # by member number
    iteration: list[int]  # member numbers in the order of model.assignors.order
    subscribed: list[frozenset[str]]  # each member's topic names (as Java compares subscriptions)
    topics_of: list[list[int]]  # each member's topics that have metadata, ascending (shared lists: read only)
    claims: list[list[int]]  # each member's claims of existing partitions, in the order it sent them
    generation: list[int]  # each member's generation, -1 for none
    known: list[TopicPartition | None]  # per partition int: a claim's own TopicPartition, reused on output

    def topic_of(self) -> list[int]:
        """The topic number of every partition, as one list (index: partition int)."""
        out: list[int] = []
        for t in range(len(self.topics)):
            out.extend([t] * (self.first[t + 1] - self.first[t]))
        return out

    def to_group_assignment(self, assigned: Sequence[Sequence[int]],
                            transferring: Sequence[int] = ()) -> GroupAssignment:
        """Back to the shared types: every member gets a tuple sorted by (topic, partition)."""
        flat = self.known
        for t, name in enumerate(self.topics):
            lo, hi = self.first[t], self.first[t + 1]
            if None in flat[lo:hi]:
                flat[lo:hi] = [tp if tp is not None else TopicPartition(name, i)
                               for i, tp in enumerate(flat[lo:hi])]
        table = cast(list[TopicPartition], flat)
        python_order = self.topics == sorted(self.topics)
        out: dict[str, tuple[TopicPartition, ...]] = {}
        for m, parts in enumerate(assigned):
            tps = tuple(map(table.__getitem__, sorted(parts)))
            out[self.members[m].member_id] = tps if python_order else tuple(sorted(tps))
        return GroupAssignment(out, frozenset(map(table.__getitem__, transferring)))

    def tp(self, p: int) -> TopicPartition:
        """The TopicPartition numbered ``p``."""
        t = bisect_right(self.first, p) - 1
        return TopicPartition(self.topics[t], p - self.first[t])


def build_universe(partitions_per_topic: Mapping[str, int],
                   subscriptions: Sequence[Subscription]) -> Universe:
    """Number the problem the way ``AbstractPartitionAssignor.assign(Cluster, GroupSubscription)`` sees it.

    ``partitionsPerTopic`` there holds only topics that some member subscribes to and that have
    metadata with at least one partition; other topics play no part.
    """
    seen: set[str] = set()
    for sub in subscriptions:
        if sub.member_id in seen:
            raise ValueError(f"duplicate member id {sub.member_id!r}")
        seen.add(sub.member_id)
    by_number = sorted(subscriptions, key=lambda s: java_string_key(s.member_id))
    number = {s.member_id: i for i, s in enumerate(by_number)}
    iteration = [number[s.member_id] for s in sorted_members(subscriptions)]

    wanted: set[str] = set()
    for sub in by_number:
        wanted.update(sub.topics)
    topics = sorted((t for t in wanted if partitions_per_topic.get(t, 0) > 0), key=java_string_key)
    topic_index = {t: i for i, t in enumerate(topics)}
    first = [0]
    for t in topics:
        first.append(first[-1] + partitions_per_topic[t])

    subscribed: list[frozenset[str]] = []
    topics_of: list[list[int]] = []
    claims: list[list[int]] = []
    generation: list[int] = []
    known: list[TopicPartition | None] = [None] * first[-1]
    shared: dict[frozenset[str], list[int]] = {}  # members that subscribe alike share one (read-only) list
    for sub in by_number:
        names = frozenset(sub.topics)
        subscribed.append(names)
        numbers = shared.get(names)
        if numbers is None:
            numbers = shared[names] = sorted(topic_index[t] for t in names if t in topic_index)
        topics_of.append(numbers)
        ids: list[int] = []
        append = ids.append
        last: str | None = None
        base, limit = 0, -1
        for tp in sub.owned:
            topic, p = tp
            if topic != last:
                last = topic
                ti = topic_index.get(topic)
                if ti is None:
                    base, limit = 0, -1  # no metadata: no partition of it exists
                else:
                    base, limit = first[ti], first[ti + 1] - first[ti]
            if 0 <= p < limit:
                append(base + p)
                if type(tp) is TopicPartition:
                    known[base + p] = tp
        claims.append(ids)
        generation.append(sub.generation if sub.generation >= 0 else DEFAULT_GENERATION)
    return Universe(topics, topic_index, first, first[-1], by_number, iteration, subscribed,
                    topics_of, claims, generation, known)


@dataclass(slots=True)
class Claims:
    """What ``allSubscriptionsEqual`` hands to the builders."""

    all_subscriptions_equal: bool
    owned: list[dict[int, None]]  # consumerToOwnedPartitions: per member, an insertion-ordered set
    multiple_previous_owners: set[int]  # partitionsWithMultiplePreviousOwners
    max_generation: int


def resolve_claims(u: Universe, *, both_keep: bool = False) -> Claims:
    """``AbstractStickyAssignor.allSubscriptionsEqual``: settle conflicting claims, compare subscriptions.

    ``both_keep`` is the ``double-claim-both-keep`` mutant: a same-generation conflict leaves the
    partition with every claimer (the behaviour before KAFKA-12984).

    Java quirks kept: the subscription equality check is seeded by the first member whose topic
    list is non-empty, so members with an empty subscription that come *before* it are not
    compared (and the constrained builder then gives them partitions); the generation a later
    claimer is compared with is the generation of the member that claimed last, also after a
    same-generation conflict (so a third claimer with a higher generation takes the partition, yet
    it stays in ``partitionsWithMultiplePreviousOwners``).
    """
    owned: list[dict[int, None]] = [{} for _ in u.members]
    multiple: set[int] = set()
    owner_of = [-1] * u.total  # allPreviousPartitionsToOwner
    generation = u.generation
    max_generation = DEFAULT_GENERATION
    reference: frozenset[str] = frozenset()
    equal = True
    for m in u.iteration:
        topics = u.subscribed[m]
        if not reference:
            reference = topics
        elif equal and topics != reference:
            equal = False
        gen = generation[m]
        max_generation = max(max_generation, gen)
        mine = owned[m]
        for p in u.claims[m]:
            other = owner_of[p]
            if other < 0:
                mine[p] = None
                owner_of[p] = m
                continue
            other_gen = generation[other]
            if gen == other_gen:
                if both_keep:
                    mine[p] = None
                else:
                    multiple.add(p)
                    owned[other].pop(p, None)
                owner_of[p] = m
            elif gen > other_gen:
                mine[p] = None
                owned[other].pop(p, None)
                owner_of[p] = m
            # else: the earlier claimer has the higher generation and keeps it
    return Claims(equal, owned, multiple, max_generation)


LEADING_EMPTY_SUBSCRIPTION = "leading-empty-subscription"
STALE_UNSUBSCRIBED_CLAIM = "stale-unsubscribed-claim"


def kafka_bug_exposure(u: Universe, claims: Claims) -> dict[str, frozenset[int]]:
    """The members (numbers) exposed to the two Kafka bugs the model keeps, by bug.

    * ``leading-empty-subscription``: members with an empty topic list in a group that
      ``allSubscriptionsEqual`` nevertheless calls equal (they all come before the first member
      with topics in iteration order, see :func:`resolve_claims`). The constrained builder gives
      them partitions of topics they do not subscribe to.
    * ``stale-unsubscribed-claim``: members with a generation below ``maxGeneration`` that claim an
      existing partition of a topic they do not subscribe to. The general builder's previous-owner
      rule can hand that partition back to them; if the member was set aside as fixed, Java throws
      instead (:class:`StickyAssignorFailure`). Being exposed is necessary, not sufficient.
    """
    leading: frozenset[int] = frozenset()
    if claims.all_subscriptions_equal and any(u.subscribed):
        leading = frozenset(m for m in range(len(u.members)) if not u.subscribed[m])
    stale: set[int] = set()
    if any(u.claims):
        topic_of = u.topic_of()
        for m in range(len(u.members)):
            if u.generation[m] < claims.max_generation:
                mine = set(u.topics_of[m])
                if any(topic_of[p] not in mine for p in u.claims[m]):
                    stale.add(m)
    return {LEADING_EMPTY_SUBSCRIPTION: leading, STALE_UNSUBSCRIBED_CLAIM: frozenset(stale)}
