"""The sticky assignors when every member subscribes to the same topics.

``AbstractStickyAssignor.ConstrainedAssignmentBuilder`` (Apache Kafka 4.1.1; KAFKA-9987 made it,
KAFKA-12984, KAFKA-14639 and KAFKA-16277 corrected it). With ``N`` members and ``P`` partitions
the answer is known in advance to be perfectly balanced::

    minQuota = floor(P / N)    maxQuota = ceil(P / N)
    expectedNumMembersWithOverMinQuotaPartitions = P % N

so the builder only has to decide who keeps what and who receives the rest.

1. **Keep owned partitions, up to the quota** (``assignOwnedPartitions``). For each member, in
   iteration order (:mod:`model.assignors.order`; Java: ``HashMap`` order), its valid owned
   partitions minus ``partitionsWithMultiplePreviousOwners``, sorted by (partition, topic) so that
   a member that keeps only some keeps a spread over topics (KAFKA-16277):

   * fewer than ``minQuota``: it keeps them all and goes on the *under-min* list;
   * at least ``maxQuota`` while fewer than the expected number of members have ``maxQuota``: it
     keeps the first ``maxQuota``; when that count reaches the expected number the *exactly-min*
     list is cleared (nobody else may grow past ``minQuota``);
   * otherwise it keeps the first ``minQuota``, and goes on the *exactly-min* list if members may
     still grow to ``maxQuota``.

   What a member owned but did not keep goes to ``maybeRevokedPartitions`` (partition -> member).
2. (Rack-aware round robin: never used here; see docs/assignors-sticky.md.)
3. **Hand out the rest** (``assignRoundRobin``). The unassigned partitions, sorted by topic then
   partition, go round robin over the under-min members (sorted by member id); a member that
   reaches ``minQuota`` leaves that list and joins the end of the exactly-min list. When the
   under-min list is empty, each further partition goes to the head of the exactly-min list,
   which takes that member to ``maxQuota``.

A partition handed out in step 3 that its new owner did not own is *transferring ownership* when
someone else gave it up (``maybeRevokedPartitions`` names another member) or when several members
claimed it in the same generation (``assignNewPartition``): the cooperative assignor withholds it.

Example (AbstractStickyAssignorTest.testAddRemoveTwoConsumersTwoTopics): topic1 has 3 partitions,
topic2 has 4; consumer1 owned [t1-0, t1-2, t2-1, t2-3], consumer2 owned [t1-1, t2-0, t2-2], and
consumer3 and consumer4 join. minQuota 1, maxQuota 2, 3 members may have 2. consumer1 keeps its
first two by (partition, topic), t1-0 and t2-1; consumer2 keeps t2-0 and t1-1; t1-2, t2-2, t2-3
are left. Round robin over [consumer3, consumer4]: t1-2 -> consumer3, t2-2 -> consumer4, and
t2-3 goes to the head of the exactly-min list, consumer3. All three transfer ownership.

Speed: step 3 hands out whole rounds at once with list slices, so the million-partition problem of
``testLargeAssignmentAndGroupWithUniformSubscription`` needs no per-partition Python work there.
"""

from __future__ import annotations

from collections import deque
from itertools import compress

from model.assignors.sticky_claims import Claims, Universe


def build_constrained(u: Universe, claims: Claims, *, tolerate_overlap: bool = False
                      ) -> tuple[list[list[int]], dict[int, int]]:
    """``ConstrainedAssignmentBuilder.build``: the assignment per member, and ``partitionsTransferringOwnership``.

    ``tolerate_overlap`` is set under the ``double-claim-both-keep`` mutant, whose claims may
    overlap: then a shortage of unfilled members (an ``IllegalStateException`` in Java, unreachable
    with disjoint claims) hands the leftovers to the members in member-id order instead.
    """
    n = len(u.members)
    total = u.total
    min_quota = total // n
    max_quota = -(-total // n)
    expected_over_min = total % n
    current_over_min = 0

    assignment: list[list[int]] = [[] for _ in range(n)]
    under_min: list[int] = []  # unfilledMembersWithUnderMinQuotaPartitions
    exactly_min: list[int] = []  # unfilledMembersWithExactlyMinQuotaPartitions
    maybe_revoked: dict[int, int] = {}  # maybeRevokedPartitions
    multiple = claims.multiple_previous_owners
    unassigned_mask = bytearray(b"\x01") * total

    # Step 1: assignOwnedPartitions.
    sort_key: list[int] | None = None
    for m in u.iteration:
        owned = list(claims.owned[m])
        if multiple:
            owned = [p for p in owned if p not in multiple]
        if len(owned) < min_quota:
            kept = owned
            under_min.append(m)
        else:
            if len(owned) >= max_quota and current_over_min < expected_over_min:
                current_over_min += 1
                if current_over_min == expected_over_min:
                    exactly_min.clear()
                quota = max_quota
            else:
                quota = min_quota
                if current_over_min < expected_over_min:
                    exactly_min.append(m)
            if len(owned) > quota:
                if sort_key is None:
                    sort_key = _partition_then_topic_key(u)
                owned.sort(key=sort_key.__getitem__)
                for p in owned[quota:]:
                    maybe_revoked[p] = m
                kept = owned[:quota]
            else:
                kept = owned
        assignment[m].extend(kept)
        for p in kept:
            unassigned_mask[p] = 0

    # getUnassignedPartitions: sorted by topic, then partition, which is int order.
    unassigned = list(compress(range(total), unassigned_mask))
    under_min.sort()  # Collections.sort: member-id order, which is member-number order
    exactly_min.sort()

    # Step 3: assignRoundRobin.
    counts = [len(a) for a in assignment]
    handed, under_min, current_over_min = assign_round_robin(
        unassigned, under_min, exactly_min, counts, min_quota, max_quota, current_over_min,
        tolerate_overlap=tolerate_overlap)

    # verifyUnfilledMembers
    if under_min and not tolerate_overlap and (
            current_over_min != expected_over_min or any(counts[m] != min_quota for m in under_min)):
        raise AssertionError("unfilled members remain after the round robin")  # IllegalStateException

    # assignNewPartition: what moves to a member that did not own it, or was claimed twice.
    transferring: dict[int, int] = {}
    special = set(maybe_revoked) | multiple
    for m in range(n):
        new = handed[m]
        if special and new:
            for p in special.intersection(new):
                if p in multiple or maybe_revoked[p] != m:
                    transferring[p] = m
        assignment[m].extend(new)
    return assignment, transferring


def assign_round_robin(unassigned: list[int], under_min: list[int], exactly_min: list[int],
                       counts: list[int], min_quota: int, max_quota: int, current_over_min: int, *,
                       tolerate_overlap: bool = False) -> tuple[list[list[int]], list[int], int]:
    """``assignRoundRobin``: hand ``unassigned`` out; returns (per member what it got, under-min left, over-min count).

    Java walks one partition at a time with an iterator over the under-min list that restarts at
    its head when it runs out, removes a member when it reaches ``minQuota`` (which then joins the
    exactly-min list), and polls the exactly-min list once the under-min list is empty. Here a run
    of whole rounds, as long as nobody reaches ``minQuota`` before its last round, is handed out
    at once with one slice per member. ``counts`` is updated in place.
    """
    n = len(counts)
    handed: list[list[int]] = [[] for _ in range(n)]
    exact = deque(exactly_min)
    pos = 0
    left = len(unassigned)
    while pos < left:
        if under_min:
            width = len(under_min)
            need = min(min_quota - counts[m] for m in under_min)
            rounds = min(need, (left - pos) // width)
            if rounds:
                stop = pos + rounds * width
                for j, m in enumerate(under_min):
                    handed[m].extend(unassigned[pos + j:stop:width])
                    counts[m] += rounds
                pos = stop
                # Members reach minQuota in the last of these rounds, in list order.
                exact.extend(m for m in under_min if counts[m] == min_quota)
                under_min = [m for m in under_min if counts[m] < min_quota]
            else:  # the partitions run out part way through one round
                for m in under_min[:left - pos]:
                    handed[m].append(unassigned[pos])
                    pos += 1
                    counts[m] += 1
                    if counts[m] == min_quota:
                        exact.append(m)
                under_min = [m for m in under_min if counts[m] < min_quota]
        elif exact:
            m = exact.popleft()
            handed[m].append(unassigned[pos])
            pos += 1
            counts[m] += 1
            if counts[m] == max_quota:
                current_over_min += 1
        elif tolerate_overlap:
            for i, p in enumerate(unassigned[pos:]):
                handed[i % n].append(p)
            pos = left
        else:
            raise AssertionError("No more unfilled consumers to be assigned.")  # Java: IllegalStateException
    return handed, under_min, current_over_min


def _partition_then_topic_key(u: Universe) -> list[int]:
    """Sort key per partition int: (partition number, topic), as KAFKA-16277 sorts owned partitions."""
    n_topics = len(u.topics)
    key: list[int] = []
    for t in range(n_topics):
        key.extend(range(t, (u.first[t + 1] - u.first[t]) * n_topics + t, n_topics))
    return key
