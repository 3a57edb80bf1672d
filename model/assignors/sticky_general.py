"""The sticky assignors when members subscribe to different topics.

``AbstractStickyAssignor.GeneralAssignmentBuilder`` (Apache Kafka 4.1.1; KAFKA-12675 and KAFKA-15106
shaped it). Balance here is Kafka's definition (StickyAssignor javadoc): the members' partition
counts differ by at most one, *or* no member with 2+ fewer partitions than another could take one
of that other's partitions (it does not subscribe to their topics).

1. **Keep what is still valid** (``assignOwnedPartitions``): each member keeps the claims that
   survived step 0 (``model.assignors.sticky_claims``) of topics it still subscribes to; dropping
   one of an unsubscribed topic sets ``revocationRequired``. Claims that lost to a higher
   generation are remembered in ``prevAssignment`` (``prepopulateCurrentAssignments``: per
   partition, the claimer with the highest generation below ``maxGeneration``).
2. **Place the rest** (``maybeAssign``): partitions in the order (number of potential consumers of
   the topic, topic, partition); each goes to the least loaded member that subscribes to its
   topic, ties broken by member id (the ``TreeSet`` ordered by (assigned count, member id)).
3. **Narrow the scope**: topics with a single potential consumer, and members that hold every
   partition they could get and nothing of a shared topic, are fixed and take no further part.
4. **Rebalance** (``performReassignments``), first over the newly placed partitions (unless a
   revocation is required anyway), then over all of them, repeating while a pass moved something:
   for each partition, while the assignment is not balanced (``isBalanced``, with KAFKA-15106's
   ``+1``: a move needs a 2-partition difference),

   * if its previous owner (``prevAssignment``) has 2+ fewer partitions than its current owner,
     it goes back to the previous owner;
   * else if some potential consumer has 2+ fewer, it goes to the least loaded potential consumer.

   A move goes through ``PartitionMovements``: if a partition of the same topic earlier moved the
   opposite way between the same two members, *that* partition moves back instead, so that no two
   members swap partitions of a topic (``getTheActualPartitionToBeMoved``).
5. **Keep it only if it helped**: unless nothing was owned before, if the last pass moved
   something and the balance score (sum over member pairs of |count difference|) did not improve,
   the assignment before step 4 is restored.

Deterministic choices where Java's result depends on hash order: members are iterated in the order
of :mod:`model.assignors.order` (this picks the previous owner among claimers of the same
generation); when several partitions moved the opposite way (Java takes the first of a
``HashSet<TopicPartition>``), the lowest-numbered one moves back.

Java behaviour kept although it is a bug (docs/assignors-sticky.md, "Kafka bugs the model keeps"):

* the previous-owner rule does not check that the previous owner still subscribes to the topic:
  a stale claim of a topic the member has since left can send the partition back to it, an
  assignment outside its subscription;
* if that previous owner was fixed in step 3, Java dereferences a missing entry
  (``NullPointerException``); the model raises :class:`StickyAssignorFailure`.

Speed (the Java algorithm is quadratic in places): the least loaded subscriber of a topic comes
from one lazily updated heap per *subscription class* (members with the same topics), so placing a
million partitions is a heap operation each; ``isBalanced`` is answered by :class:`BalanceTracker`
from histograms updated move by move, instead of rescanning every member's partitions after each
move: a topic is "bad" when the most loaded owner of its partitions has 2+ more than its least
loaded potential consumer that is not full, which is what Java's per-member, per-partition scan
decides (``verify_tracker`` checks that in the tests).
"""

from __future__ import annotations

import heapq
from collections import Counter

from model.assignors.sticky_balance import BalanceTracker, PartitionMovements
from model.assignors.sticky_claims import Claims, StickyAssignorFailure, Universe

__all__ = ["BalanceTracker", "GeneralAssignmentBuilder", "PartitionMovements", "build_general"]


class GeneralAssignmentBuilder:
    """State and steps of ``GeneralAssignmentBuilder``, over partition and member numbers."""

    verify_tracker = False  # tests: check every BalanceTracker answer against a full scan

    def __init__(self, u: Universe, claims: Claims) -> None:
        n = len(u.members)
        n_topics = len(u.topics)
        self.u = u
        self.n = n
        self.topic_of = u.topic_of()
        size = [u.first[t + 1] - u.first[t] for t in range(n_topics)]
        # topic2AllPotentialConsumers / consumer2AllPotentialTopics
        self.potential: list[list[int]] = [[] for _ in range(n_topics)]
        for m in range(n):
            for t in u.topics_of[m]:
                self.potential[t].append(m)
        self.subscribes: list[frozenset[int]] = [frozenset(ts) for ts in u.topics_of]
        # the TreeSet (assigned count, member id): one lazy heap per subscription class
        classes: dict[frozenset[int], int] = {}
        self.class_of = [classes.setdefault(self.subscribes[m], len(classes)) for m in range(n)]
        class_size = {k: sum(size[t] for t in ts) for ts, k in classes.items()}
        self.max_size = [class_size[k] for k in self.class_of]  # getMaxAssignmentSize
        self.classes_of_topic: list[list[int]] = [[] for _ in range(n_topics)]
        for ts, k in classes.items():
            for t in ts:
                self.classes_of_topic[t].append(k)

        self.owner = [-1] * u.total  # currentPartitionConsumer
        self.count = [0] * n  # currentAssignment sizes
        # Copies of a partition left with an earlier claimer by the double-claim-both-keep mutant:
        # counted and returned, never moved. Always empty without the mutant.
        self.extra: list[list[int]] = [[] for _ in range(n)]
        self.revocation_required = False
        self._assign_owned_partitions(claims)
        self.prev = self._prepopulate_current_assignments(claims.max_generation)

        self.heaps: list[list[int]] = [[] for _ in classes]
        for m in range(n):
            self.heaps[self.class_of[m]].append(self.count[m] * n + m)
        for h in self.heaps:
            heapq.heapify(h)

        # sortedAllPartitions: by (number of potential consumers, topic name), then partition
        self.topic_order = sorted(range(n_topics), key=lambda t: (len(self.potential[t]), t))
        self.fixed = [False] * n
        self.movements = PartitionMovements()
        self.undo: list[tuple[int, int, int]] = []
        self.tracker: BalanceTracker | None = None

    # -- set-up -------------------------------------------------------------------------------

    def _assign_owned_partitions(self, claims: Claims) -> None:
        """``assignOwnedPartitions``: keep valid claims of subscribed topics."""
        topic_of = self.topic_of
        owner = self.owner
        count = self.count
        for m in self.u.iteration:
            mine = self.subscribes[m]
            for p in claims.owned[m]:
                if topic_of[p] not in mine:
                    self.revocation_required = True
                    continue
                previous = owner[p]
                if previous >= 0:  # only under the double-claim-both-keep mutant
                    self.extra[previous].append(p)
                owner[p] = m
                count[m] += 1

    def _prepopulate_current_assignments(self, max_generation: int) -> dict[int, tuple[int, int]]:
        """``prepopulateCurrentAssignments``: claims of an older generation, by the newest claimer.

        Every raw claim counts here (also ones that lost in step 0 or of unsubscribed topics); a
        member without a generation counts as -1 once someone has one. The first claimer in
        iteration order wins among equal generations.
        """
        prev: dict[int, tuple[int, int]] = {}
        for m in self.u.iteration:
            gen = self.u.generation[m]
            if gen >= max_generation:
                continue
            for p in self.u.claims[m]:
                have = prev.get(p)
                if have is None or gen > have[1]:
                    prev[p] = (m, gen)
        return prev

    def owners_of(self, t: int) -> dict[int, int]:
        """The owners of topic t's partitions, with how many each holds."""
        owners = Counter(self.owner[self.u.first[t]:self.u.first[t + 1]])
        owners.pop(-1, None)
        return dict(owners)

    # -- the build ----------------------------------------------------------------------------

    def build(self) -> list[list[int]]:
        """``build`` and ``balance``: the assignment per member."""
        n = self.n
        first = self.u.first
        initializing = max(self.count, default=0) == 0
        unassigned = self._unassigned_partitions()
        self._maybe_assign(unassigned)

        # narrow the reassignment scope: partitions of topics with 2+ potential consumers ...
        participating = [len(c) >= 2 for c in self.potential]
        topic_of = self.topic_of
        reassignable: list[int] = []
        holds_shared: set[int] = set()
        for t in self.topic_order:
            if participating[t]:
                reassignable.extend(range(first[t], first[t + 1]))
                holds_shared.update(self.owner[first[t]:first[t + 1]])
        unassigned = [p for p in unassigned if participating[topic_of[p]]]
        # ... and members that can still change (canConsumerParticipateInReassignment)
        for m in range(n):
            if any(participating[topic_of[p]] for p in self.extra[m]):
                holds_shared.add(m)
            if self.count[m] >= self.max_size[m] and m not in holds_shared:
                self.fixed[m] = True
        active = [m for m in range(n) if not self.fixed[m]]
        self.tracker = BalanceTracker(self, participating)
        pre_balance_score = self._balance_score(active)

        if not self.revocation_required:
            self._perform_reassignments(unassigned)
        reassignment_performed = self._perform_reassignments(reassignable)

        if (not initializing and reassignment_performed
                and self._balance_score(active) >= pre_balance_score):
            for p, old, new in reversed(self.undo):
                self._set_owner(p, new, old)

        assignment: list[list[int]] = [list(x) for x in self.extra]
        for p, m in enumerate(self.owner):
            if m >= 0:
                assignment[m].append(p)
        return assignment

    def _unassigned_partitions(self) -> list[int]:
        """``getUnassignedPartitions``: sortedAllPartitions minus what members kept, in that order."""
        first = self.u.first
        owner = self.owner
        out: list[int] = []
        for t in self.topic_order:
            lo, hi = first[t], first[t + 1]
            out.extend(p for p in range(lo, hi) if owner[p] < 0)
        return out

    def _maybe_assign(self, partitions: list[int]) -> None:
        """``maybeAssign``: each partition to the least loaded subscriber of its topic."""
        n = self.n
        count = self.count
        owner = self.owner
        heaps = self.heaps
        topic_of = self.topic_of
        heapreplace = heapq.heapreplace
        heappop = heapq.heappop
        classes_of_topic = self.classes_of_topic
        last_topic = -1
        ks: list[int] = []
        for p in partitions:
            t = topic_of[p]
            if t != last_topic:
                last_topic = t
                ks = classes_of_topic[t]
            h = heaps[ks[0]]
            if len(ks) > 1:
                best = -1
                for k in ks:
                    hk = heaps[k]
                    while True:
                        key = hk[0]
                        if key // n == count[key % n]:
                            break
                        heappop(hk)
                    if best < 0 or key < best:
                        best = key
                        h = hk
            while True:
                key = h[0]
                m = key % n
                if key // n == count[m]:
                    break
                heappop(h)
            heapreplace(h, key + n)  # count + 1
            count[m] += 1
            owner[p] = m

    # -- rebalancing --------------------------------------------------------------------------

    def _least_loaded(self, t: int) -> int:
        """The first member of the ``TreeSet`` that subscribes to topic t: least count, then member id."""
        n = self.n
        count = self.count
        fixed = self.fixed
        heaps = self.heaps
        best = -1
        for k in self.classes_of_topic[t]:
            h = heaps[k]
            while h:
                key = h[0]
                m = key % n
                if key // n == count[m] and not fixed[m]:
                    break
                heapq.heappop(h)
            else:
                continue
            if best < 0 or h[0] < best:
                best = h[0]
        return best % n

    def _perform_reassignments(self, partitions: list[int]) -> bool:
        """``performReassignments``: move partitions while the assignment is not balanced."""
        count = self.count
        owner = self.owner
        prev = self.prev
        topic_of = self.topic_of
        performed = False
        while True:
            modified = False
            for p in partitions:
                if self._is_balanced():
                    break
                consumer = owner[p]
                previous = prev.get(p)
                if previous is not None:
                    before = previous[0]
                    if self.fixed[before]:
                        raise StickyAssignorFailure(
                            f"partition {self.u.tp(p)} was previously owned by "
                            f"{self.u.members[before].member_id!r}, a member the assignor set aside as "
                            "fixed: Java's GeneralAssignmentBuilder.performReassignments throws "
                            "NullPointerException here")
                    if count[consumer] > count[before] + 1:
                        self._reassign_partition(p, before)
                        performed = modified = True
                        continue
                target = self._least_loaded(topic_of[p])
                if count[consumer] > count[target] + 1:
                    self._reassign_partition(p, target)
                    performed = modified = True
            if not modified:
                return performed

    def _reassign_partition(self, p: int, new: int) -> None:
        """``reassignPartition`` + ``processPartitionMovement``."""
        t = self.topic_of[p]
        q = self.movements.actual_partition_to_move(p, t, self.owner[p], new)
        old = self.owner[q]
        self.movements.move_partition(q, t, old, new)
        self.undo.append((q, old, new))
        self._set_owner(q, old, new)

    def _set_owner(self, p: int, old: int, new: int) -> None:
        n = self.n
        tracker = self.tracker
        assert tracker is not None
        tracker.transfer(self.topic_of[p], old, new)
        self.owner[p] = new
        for m, delta in ((old, -1), (new, 1)):
            before = self.count[m]
            after = before + delta
            self.count[m] = after
            heapq.heappush(self.heaps[self.class_of[m]], after * n + m)
            tracker.count_changed(m, before, after)
        tracker.refresh()

    def _is_balanced(self) -> bool:
        """``isBalanced``: the counts differ by at most one, or no partition can move to a member 2+ below its owner."""
        assert self.tracker is not None
        balanced = self.tracker.balanced()
        if self.verify_tracker:
            counts = [self.count[m] for m in range(self.n) if not self.fixed[m]]
            scanned = min(counts) >= max(counts) - 1 or self._no_movable_partition()
            assert balanced == scanned, (balanced, scanned)
        return balanced

    def _no_movable_partition(self) -> bool:
        """The tracker's question answered from scratch, as Java's scan would (tests: ``verify_tracker``).

        Java scans, for each active member that does not hold ``getMaxAssignmentSize`` partitions,
        every partition of its topics it does not hold, and asks whether that partition's owner has
        2+ more.
        """
        count = self.count
        for c in range(self.n):
            if self.fixed[c] or count[c] == self.max_size[c]:
                continue
            for t in self.u.topics_of[c]:
                for p in range(self.u.first[t], self.u.first[t + 1]):
                    other = self.owner[p]
                    if other != c and count[c] + 1 < count[other]:
                        return False
        return True

    def _balance_score(self, members: list[int]) -> int:
        """``getBalanceScore``: the sum over member pairs of |count difference|, in O(n log n)."""
        counts = sorted(self.count[m] for m in members)
        k = len(counts)
        return sum(c * (2 * i - k + 1) for i, c in enumerate(counts))


def build_general(u: Universe, claims: Claims) -> list[list[int]]:
    """``GeneralAssignmentBuilder.build``: the assignment per member number."""
    return GeneralAssignmentBuilder(u, claims).build()
