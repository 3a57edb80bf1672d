"""Two bookkeeping structures of the general sticky builder (``model.assignors.sticky_general``).

* :class:`PartitionMovements` is Kafka's own (``AbstractStickyAssignor.PartitionMovements``): it
  records which partitions moved between which members during one balance, so that a move between
  two members can take back a partition that earlier went the other way instead of swapping.
* :class:`BalanceTracker` is the model's: it answers Java's ``isBalanced`` without Java's full scan
  after every move, from histograms it keeps up to date (the scan is quadratic on Kafka's scale
  tests). ``GeneralAssignmentBuilder.verify_tracker`` makes every answer be checked against a
  literal form of Java's scan (the tests switch it on).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from model.assignors.sticky_general import GeneralAssignmentBuilder


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


def _hist_add(hist: dict[int, int], value: int) -> None:
    hist[value] = hist.get(value, 0) + 1


def _hist_remove(hist: dict[int, int], value: int) -> None:
    k = hist[value] - 1
    if k:
        hist[value] = k
    else:
        del hist[value]


class BalanceTracker:
    """``isBalanced`` kept up to date move by move, instead of Java's full scan per call.

    Java's scan asks, for each active member ``c`` that does not hold ``getMaxAssignmentSize``
    partitions, whether some partition of one of its topics has an owner with more than
    ``count(c) + 1`` partitions. Per topic that is one comparison: the largest count among the
    owners of the topic's partitions against the smallest count among its potential consumers that
    are not full. A topic where the first exceeds the second by 2+ is *bad*; the assignment is
    balanced when the active members' counts differ by at most one or no topic is bad.

    Only topics with 2+ potential consumers can be bad: the partitions of the others stay with
    their single potential consumer. Per such topic the tracker keeps two histograms (count ->
    number of members): of its non-full potential consumers and of its owners. They are built the
    first time the counts alone do not settle the question, and kept up to date from then on.
    """

    def __init__(self, builder: GeneralAssignmentBuilder, participating: list[bool]) -> None:
        self.builder = builder
        self.count = builder.count
        self.max_size = builder.max_size
        self.participating = participating
        self.members: dict[int, int] = {}  # the counts of the active members
        for m in range(builder.n):
            if not builder.fixed[m]:
                _hist_add(self.members, self.count[m])
        self.by_topic = False  # the per-topic histograms exist
        self.potential_topics: list[list[int]] = []
        self.held: list[dict[int, int]] = []  # member -> participating topic -> partitions held
        self.candidates: list[dict[int, int]] = []  # per topic: the non-full potential consumers
        self.owners: list[dict[int, int]] = []  # per topic: the owners of its partitions
        self.bad: set[int] = set()
        self.touched: set[int] = set()
        self._balanced: bool | None = None  # cached until the next refresh

    def _build_topic_histograms(self) -> None:
        b = self.builder
        count = self.count
        participating = self.participating
        self.potential_topics = [[] if b.fixed[m] else [t for t in ts if participating[t]]
                                 for m, ts in enumerate(b.u.topics_of)]
        self.held = [{} for _ in range(b.n)]
        self.candidates = [{} for _ in participating]
        self.owners = [{} for _ in participating]
        for m in range(b.n):
            if count[m] != self.max_size[m]:
                for t in self.potential_topics[m]:
                    _hist_add(self.candidates[t], count[m])
        for t, yes in enumerate(participating):
            if yes:
                for m, k in b.owners_of(t).items():
                    self.held[m][t] = k
                    _hist_add(self.owners[t], count[m])
        self.bad = {t for t, yes in enumerate(participating) if yes and self._is_bad(t)}
        self.by_topic = True

    def _is_bad(self, t: int) -> bool:
        candidates = self.candidates[t]
        owners = self.owners[t]
        return bool(candidates) and bool(owners) and max(owners) > min(candidates) + 1

    def balanced(self) -> bool:
        if self._balanced is None:
            members = self.members
            if not members or min(members) >= max(members) - 1:
                self._balanced = True
            else:
                if not self.by_topic:
                    self._build_topic_histograms()
                self._balanced = not self.bad
        return self._balanced

    def transfer(self, t: int, old: int, new: int) -> None:
        """One partition of topic ``t`` changes owner; call before the counts change."""
        self._balanced = None
        if not self.by_topic:
            return
        held = self.held[old]
        k = held[t] - 1
        if k:
            held[t] = k
        else:
            del held[t]
            _hist_remove(self.owners[t], self.count[old])
        held = self.held[new]
        k = held.get(t, 0)
        held[t] = k + 1
        if not k:
            _hist_add(self.owners[t], self.count[new])
        self.touched.add(t)

    def count_changed(self, m: int, before: int, after: int) -> None:
        _hist_remove(self.members, before)
        _hist_add(self.members, after)
        if not self.by_topic:
            return
        full = self.max_size[m]
        touched = self.touched
        if before != full and after != full:
            for t in self.potential_topics[m]:
                candidates = self.candidates[t]
                _hist_remove(candidates, before)
                _hist_add(candidates, after)
                touched.add(t)
        else:
            for t in self.potential_topics[m]:
                if before != full:
                    _hist_remove(self.candidates[t], before)
                if after != full:
                    _hist_add(self.candidates[t], after)
                touched.add(t)
        for t in self.held[m]:
            owners = self.owners[t]
            _hist_remove(owners, before)
            _hist_add(owners, after)
            touched.add(t)

    def refresh(self) -> None:
        """Re-decide the topics touched since the last refresh."""
        bad = self.bad
        for t in self.touched:
            if self._is_bad(t):
                bad.add(t)
            else:
                bad.discard(t)
        self.touched.clear()
