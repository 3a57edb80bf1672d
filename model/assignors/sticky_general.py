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
million partitions is a heap operation each; ``isBalanced`` is answered from per-count histograms,
per-topic owner counts and a cache that lives until the next move, evaluated topic by topic as
"the most loaded owner of a topic's partitions has 2+ more than the least loaded potential consumer
that is not full", which is what Java's per-member, per-partition scan decides.
"""

from __future__ import annotations

import heapq
from collections import Counter
from itertools import compress

from model.assignors.sticky_claims import Claims, StickyAssignorFailure, Universe


class PartitionMovements:
    """``AbstractStickyAssignor.PartitionMovements``: who moved which partition during this balance.

    ``by_partition[p] = (src, dst)`` records p's net move; ``by_topic[t][(src, dst)]`` holds the
    partitions of topic t that made that move. ``isSticky`` (the test-only cycle check) is not
    modelled: the ``sticky`` invariant (model.invariants) checks the result instead.
    """

    def __init__(self) -> None:
        self.by_partition: dict[int, tuple[int, int]] = {}
        self.by_topic: dict[int, dict[tuple[int, int], set[int]]] = {}

    def _remove_record(self, p: int, t: int) -> tuple[int, int]:
        pair = self.by_partition.pop(p)
        pairs = self.by_topic[t]
        moved = pairs[pair]
        moved.discard(p)
        if not moved:
            del pairs[pair]
            if not pairs:
                del self.by_topic[t]
        return pair

    def _add_record(self, p: int, t: int, pair: tuple[int, int]) -> None:
        self.by_partition[p] = pair
        self.by_topic.setdefault(t, {}).setdefault(pair, set()).add(p)

    def move_partition(self, p: int, t: int, old: int, new: int) -> None:
        """``movePartition``: a partition moving back to where it came from leaves no record."""
        if p in self.by_partition:
            src, _dst = self._remove_record(p, t)
            if src != new:
                self._add_record(p, t, (src, new))
        else:
            self._add_record(p, t, (old, new))

    def actual_partition_to_move(self, p: int, t: int, old: int, new: int) -> int:
        """``getTheActualPartitionToBeMoved``: move back a partition that came the other way, if any."""
        pairs = self.by_topic.get(t)
        if pairs is None:
            return p
        if p in self.by_partition:
            old = self.by_partition[p][0]
        reverse = pairs.get((new, old))
        if reverse is None:
            return p
        return min(reverse)  # Java: the first of a HashSet; the model: the lowest partition


class GeneralAssignmentBuilder:
    """State and steps of ``GeneralAssignmentBuilder``, over partition and member numbers."""

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
        self.max_size = [sum(size[t] for t in ts) for ts in u.topics_of]  # getMaxAssignmentSize

        self.owner = [-1] * u.total  # currentPartitionConsumer
        self.count = [0] * n  # currentAssignment sizes
        self.owners_of_topic: list[dict[int, int]] = [{} for _ in range(n_topics)]  # topic -> member -> n
        # Copies of a partition left with an earlier claimer by the double-claim-both-keep mutant:
        # counted and returned, never moved. Always empty without the mutant.
        self.extra: list[list[int]] = [[] for _ in range(n)]
        self.revocation_required = False
        self._assign_owned_partitions(claims)
        self.prev = self._prepopulate_current_assignments(claims.max_generation)

        # sortedAllPartitions: by (number of potential consumers, topic name), then partition
        self.topic_order = sorted(range(n_topics), key=lambda t: (len(self.potential[t]), t))

        # the TreeSet (assigned count, member id), one lazy heap per subscription class
        classes: dict[frozenset[int], int] = {}
        self.class_of = [classes.setdefault(self.subscribes[m], len(classes)) for m in range(n)]
        self.heaps: list[list[int]] = [[] for _ in classes]
        for m in range(n):
            self.heaps[self.class_of[m]].append(self.count[m] * n + m)
        for h in self.heaps:
            heapq.heapify(h)
        self.classes_of_topic: list[list[int]] = [[] for _ in range(n_topics)]
        for ts, k in classes.items():
            for t in ts:
                self.classes_of_topic[t].append(k)

        self.fixed = [False] * n
        self.movements = PartitionMovements()
        self.undo: list[tuple[int, int, int]] = []
        self.version = 0
        self._balanced_version = -1
        self._balanced = False
        self.histogram: Counter[int] = Counter()
        self.lowest = 0
        self.highest = 0

    # -- set-up -------------------------------------------------------------------------------

    def _assign_owned_partitions(self, claims: Claims) -> None:
        """``assignOwnedPartitions``: keep valid claims of subscribed topics."""
        topic_of = self.topic_of
        owner = self.owner
        for m in self.u.iteration:
            mine = self.subscribes[m]
            for p in claims.owned[m]:
                t = topic_of[p]
                if t not in mine:
                    self.revocation_required = True
                    continue
                previous = owner[p]
                if previous >= 0:  # only under the double-claim-both-keep mutant
                    self.extra[previous].append(p)
                    self._own(t, previous, -1)
                owner[p] = m
                self.count[m] += 1
                self._own(t, m, 1)

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

    def _own(self, t: int, m: int, delta: int) -> None:
        owners = self.owners_of_topic[t]
        k = owners.get(m, 0) + delta
        if k:
            owners[m] = k
        else:
            del owners[m]

    # -- the build ----------------------------------------------------------------------------

    def build(self) -> list[list[int]]:
        """``build`` and ``balance``: the assignment per member."""
        n = self.n
        initializing = max(self.count, default=0) == 0
        unassigned = self._unassigned_partitions()
        self._maybe_assign(unassigned)

        # narrow the reassignment scope: partitions of topics with 2+ potential consumers ...
        participating = [len(c) >= 2 for c in self.potential]
        topic_of = self.topic_of
        reassignable = [p for t in self.topic_order if participating[t]
                        for p in range(self.u.first[t], self.u.first[t + 1])]
        unassigned = [p for p in unassigned if participating[topic_of[p]]]
        # ... and members that can still change (canConsumerParticipateInReassignment)
        holds_shared: set[int] = set()
        for t, owners in enumerate(self.owners_of_topic):
            if participating[t]:
                holds_shared.update(owners)
        for m in range(n):
            if any(participating[topic_of[p]] for p in self.extra[m]):
                holds_shared.add(m)
            if self.count[m] >= self.max_size[m] and m not in holds_shared:
                self.fixed[m] = True
        active = [m for m in range(n) if not self.fixed[m]]
        self.histogram = Counter(self.count[m] for m in active)
        if active:
            self.lowest = min(self.histogram)
            self.highest = max(self.histogram)
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
        free = bytearray(b"\x01") * self.u.total
        for p, m in enumerate(self.owner):
            if m >= 0:
                free[p] = 0
        out: list[int] = []
        first = self.u.first
        for t in self.topic_order:
            out.extend(compress(range(first[t], first[t + 1]), free[first[t]:first[t + 1]]))
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
        owners: dict[int, int] = {}
        for p in partitions:
            t = topic_of[p]
            if t != last_topic:
                last_topic = t
                ks = classes_of_topic[t]
                owners = self.owners_of_topic[t]
            if len(ks) == 1:
                h = heaps[ks[0]]
            else:
                h = heaps[ks[0]]
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
            owners[m] = owners.get(m, 0) + 1

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
                t = topic_of[p]
                target = self._least_loaded(t)
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
        t = self.topic_of[p]
        self.owner[p] = new
        self._own(t, old, -1)
        self._own(t, new, 1)
        for m, delta in ((old, -1), (new, 1)):
            before = self.count[m]
            after = before + delta
            self.count[m] = after
            heapq.heappush(self.heaps[self.class_of[m]], after * n + m)
            if not self.fixed[m]:
                self._histogram_move(before, after)
        self.version += 1

    def _histogram_move(self, before: int, after: int) -> None:
        hist = self.histogram
        hist[before] -= 1
        hist[after] += 1
        if hist[before] == 0:
            del hist[before]
            if before == self.lowest:
                self.lowest = after if after > before else before - 1
            if before == self.highest:
                self.highest = after if after < before else before + 1
        self.lowest = min(self.lowest, after)
        self.highest = max(self.highest, after)

    def _is_balanced(self) -> bool:
        """``isBalanced``, cached until the next move."""
        if self._balanced_version == self.version:
            return self._balanced
        self._balanced_version = self.version
        self._balanced = self.lowest >= self.highest - 1 or self._no_movable_partition()
        return self._balanced

    def _no_movable_partition(self) -> bool:
        """No member that is not full could take a partition from one with 2+ more.

        Java scans, for each active member that does not hold ``getMaxAssignmentSize`` partitions,
        every partition of its topics it does not hold, and asks whether that partition's owner has
        2+ more. Per topic that is: the most loaded owner of the topic's partitions against the
        least loaded such member subscribed to it.
        """
        count = self.count
        max_size = self.max_size
        fixed = self.fixed
        for t, members in enumerate(self.potential):
            owners = self.owners_of_topic[t]
            if not owners:
                continue
            least = -1
            for m in members:
                c = count[m]
                if c != max_size[m] and not fixed[m] and (least < 0 or c < least):
                    least = c
            if least < 0:
                continue
            most = max(count[o] for o in owners)
            if most > least + 1:
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
