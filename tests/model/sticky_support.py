"""Shared helpers of the sticky / cooperative-sticky tests: problem generators and local checkers.

The checkers restate Kafka's own test assertions (AbstractStickyAssignorTest.verifyValidityAndBalance,
CooperativeStickyAssignorTest.verifyCooperativeValidity) over the model's types, so the tests do not
depend on how another module words them.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from model.types import GroupAssignment, Subscription, TopicPartition


@dataclass(frozen=True)
class Problem:
    partitions_per_topic: dict[str, int]
    subscriptions: tuple[Subscription, ...]


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def sub(member: str, topics: Sequence[str], owned: Sequence[TopicPartition] = (), generation: int = -1,
        instance_id: str | None = None) -> Subscription:
    return Subscription(member, tuple(topics), tuple(owned), generation, instance_id)


# -- checkers ---------------------------------------------------------------------------------

def existing(partitions_per_topic: Mapping[str, int], subs: Sequence[Subscription]) -> set[TopicPartition]:
    """Every partition of a topic somebody subscribes to (the partitions the assignor must place)."""
    topics = {t for s in subs for t in s.topics}
    return {TopicPartition(t, i) for t in topics for i in range(max(0, partitions_per_topic.get(t, 0)))}


def validity_errors(problem: Problem, result: GroupAssignment) -> list[str]:
    """Every member has an entry; only existing partitions; nobody shares a partition; only subscribed topics."""
    errors: list[str] = []
    members = {s.member_id: s for s in problem.subscriptions}
    if set(result.assignment) != set(members):
        errors.append(f"members {sorted(result.assignment)} != {sorted(members)}")
    real = existing(problem.partitions_per_topic, problem.subscriptions)
    seen: dict[TopicPartition, str] = {}
    for m, tps in result.assignment.items():
        if list(tps) != sorted(set(tps)):
            errors.append(f"{m}: not a sorted list without duplicates: {tps}")
        for p in tps:
            if p not in real:
                errors.append(f"{m}: {p} does not exist")
            if p in seen:
                errors.append(f"{p} assigned to {seen[p]} and {m}")
            seen[p] = m
            if m in members and p.topic not in members[m].topics:
                errors.append(f"{m}: {p} of a topic it does not subscribe to")
    for p in result.transferring:
        if p in seen:
            errors.append(f"{p} is transferring yet assigned to {seen[p]}")
    return errors


def balance_errors(problem: Problem, result: GroupAssignment) -> list[str]:
    """AbstractStickyAssignorTest.verifyValidityAndBalance's balance rule, on *subscriptions*.

    Two members whose counts differ by 2+ must not both be able to hold a partition of the same
    topic. Kafka's test compares the topics the two were *assigned*; the StickyAssignor javadoc
    (and this check) asks whether the less loaded one could take one of the other's partitions,
    i.e. subscribes to a topic the more loaded one holds.
    """
    errors: list[str] = []
    subs = {s.member_id: s for s in problem.subscriptions}
    counts = {m: len(t) for m, t in result.assignment.items()}
    for a, pa in result.assignment.items():
        for b in result.assignment:
            if counts[a] > counts[b] + 1:
                movable = [p for p in pa if p.topic in subs[b].topics]
                if movable:
                    errors.append(f"{a} has {counts[a]}, {b} has {counts[b]} and could take {movable[0]}")
    return errors


def added_and_revoked(problem: Problem, result: GroupAssignment) -> tuple[set[TopicPartition], set[TopicPartition]]:
    """CooperativeStickyAssignorTest.verifyCooperativeValidity: (∪ added, ∪ revoked) against the raw owned lists."""
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for s in problem.subscriptions:
        got = set(result.assignment[s.member_id])
        owned = set(s.owned)
        added |= got - owned
        revoked |= owned - got
    return added, revoked


def follow_up(problem: Problem, result: GroupAssignment, generation: int) -> Problem:
    """The next rebalance: each member owns what it was assigned, at the new generation."""
    return Problem(problem.partitions_per_topic, tuple(
        replace(s, owned=tuple(result.assignment[s.member_id]), generation=generation)
        for s in problem.subscriptions))


# -- random problems (seeded; also the Java differential's generator) -----------------------------

MEMBER_IDS = [chr(c) for c in range(ord("A"), ord("X") + 1)]  # their Java HashMap order is their sorted order


def random_problem(rng: random.Random, *, max_topics: int = 5, max_partitions: int = 8, max_members: int = 8,
                   equal: bool | None = None, junk: bool = True, out_of_range: bool = False) -> Problem:
    """A small problem with a history: owned partitions from a random earlier assignment, plus noise.

    Noise (when ``junk``): stale and missing generations, partitions claimed by two members in the
    same or in different generations, a member listing a partition twice, claims of topics with no
    metadata, topics without metadata in subscriptions, empty subscriptions. ``out_of_range`` adds
    claims of partition numbers a topic does not have (the model drops them; Java keeps them).
    """
    n_topics = rng.randint(1, max_topics)
    topics = [f"t{i}" for i in range(n_topics)]
    ppt = {t: rng.randint(0 if junk else 1, max_partitions) for t in topics}
    if junk and rng.random() < 0.2:
        del ppt[rng.choice(topics)]  # subscribed, but no metadata
    n_members = rng.randint(1, max_members)
    members = MEMBER_IDS[:n_members]
    same = rng.random() < 0.5 if equal is None else equal
    common = rng.sample(topics, rng.randint(1, n_topics))
    subs_topics: dict[str, list[str]] = {}
    for m in members:
        if same:
            subs_topics[m] = list(common)
        elif junk and rng.random() < 0.08:
            subs_topics[m] = []
        else:
            subs_topics[m] = rng.sample(topics, rng.randint(1, n_topics))
    generation = {m: rng.choice([-1, 1, 2, 3, 3, 3, 3]) if junk else 3 for m in members}
    owned: dict[str, list[TopicPartition]] = {m: [] for m in members}
    # an earlier assignment: each partition had one owner among a random subset of members
    for t, count in ppt.items():
        for i in range(count):
            if rng.random() < 0.75:
                owned[rng.choice(members)].append(TopicPartition(t, i))
    if junk:
        for _ in range(rng.randint(0, 3)):
            m = rng.choice(members)
            kind = rng.random()
            pool = [TopicPartition(t, i) for t, c in ppt.items() for i in range(c)]
            if kind < 0.4 and pool:  # a second claimer
                owned[m].append(rng.choice(pool))
            elif kind < 0.6 and owned[m]:  # listed twice
                owned[m].append(rng.choice(owned[m]))
            elif kind < 0.8:  # a topic with no metadata
                owned[m].append(TopicPartition("gone", rng.randint(0, 3)))
            elif out_of_range and ppt:
                t = rng.choice(list(ppt))
                owned[m].append(TopicPartition(t, rng.choice([-1, ppt[t], ppt[t] + 5])))
    for m in members:
        rng.shuffle(owned[m])
    subs = tuple(Subscription(m, tuple(subs_topics[m]), tuple(owned[m]), generation[m]) for m in members)
    order = list(subs)
    rng.shuffle(order)
    return Problem(ppt, tuple(order))


# -- running an assignor the way Kafka's tests do ---------------------------------------------------

STRATEGIES = ("sticky", "cooperative-sticky")


def run(strategy: str, problem: Problem, mutants: frozenset[str] = frozenset()) -> GroupAssignment:
    from model.assignors import assign
    return assign(strategy, problem.partitions_per_topic, problem.subscriptions, mutants=mutants)


def settle(strategy: str, problem: Problem, *, generation: int = 1, max_rounds: int = 4,
           mutants: frozenset[str] = frozenset()) -> tuple[GroupAssignment, Problem, int]:
    """The assignment once nothing is revoked any more, as CooperativeStickyAssignorTest.verifyValidityAndBalance.

    For cooperative-sticky: while some member would revoke something, check that no partition is
    added to one member while it is revoked from another, let every member own what it was given
    (at ``generation``, as Kafka's test does) and rebalance again; at most ``max_rounds`` follow-ups.
    Returns the final assignment, the problem it answers and the number of follow-ups.
    """
    result = run(strategy, problem, mutants)
    if strategy != "cooperative-sticky":
        return result, problem, 0
    rounds = 0
    while True:
        added, revoked = added_and_revoked(problem, result)
        assert not added & revoked, f"added and revoked in one round: {sorted(added & revoked)}"
        if not revoked:
            return result, problem, rounds
        rounds += 1
        assert rounds <= max_rounds, f"still revoking after {max_rounds} follow-up rebalances"
        problem = follow_up(problem, result, generation)
        result = run(strategy, problem, mutants)


def sets(result: GroupAssignment) -> dict[str, set[TopicPartition]]:
    return {m: set(tps) for m, tps in result.assignment.items()}


def per_topic(result: GroupAssignment, member: str, topic: str) -> int:
    return sum(1 for p in result.assignment[member] if p.topic == topic)


# -- hypothesis strategies ------------------------------------------------------------------------

def problems(*, max_topics: int = 5, max_partitions: int = 8, max_members: int = 8, equal: bool | None = None,
             junk: bool = True, static: bool = True):
    """Random problems with a history, as hypothesis draws (shrinks to small, clean problems).

    Owned partitions come from an earlier assignment (each partition had at most one owner) plus,
    when ``junk``, the noise Kafka must tolerate: stale or missing generations, second claimers,
    partitions listed twice, claims of topics without metadata or of partitions that do not exist,
    subscriptions to topics without metadata, empty subscriptions. ``static`` gives some members a
    ``group.instance.id`` ordered differently from their member ids.
    """
    from hypothesis import strategies as st

    @st.composite
    def draw_problem(draw):
        n_topics = draw(st.integers(1, max_topics))
        topics = [f"t{i}" for i in range(n_topics)]
        ppt = {t: draw(st.integers(0 if junk else 1, max_partitions)) for t in topics}
        if junk and draw(st.booleans()) and draw(st.booleans()):
            ppt.pop(draw(st.sampled_from(topics)))  # subscribed to, but no metadata
        n_members = draw(st.integers(1, max_members))
        ids = [f"m{i}" for i in range(n_members)]
        same = draw(st.booleans()) if equal is None else equal
        common = draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))
        subscribed = {
            m: common if same else draw(st.lists(st.sampled_from(topics), min_size=0 if junk else 1, unique=True))
            for m in ids}
        gens = {m: draw(st.sampled_from([-1, 1, 2, 3, 3, 3])) if junk else 3 for m in ids}
        owned: dict[str, list[TopicPartition]] = {m: [] for m in ids}
        for t, count in sorted(ppt.items()):
            for i in range(count):
                holder = draw(st.integers(-1, n_members - 1))
                if holder >= 0:
                    owned[ids[holder]].append(TopicPartition(t, i))
        if junk:
            extra = draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from([*topics, "gone"]),
                                            st.integers(-1, max_partitions + 1)), max_size=4))
            for m, t, i in extra:
                owned[m].append(TopicPartition(t, i))
        instance = {m: None for m in ids}
        if static:
            for m in draw(st.lists(st.sampled_from(ids), unique=True)):
                instance[m] = f"i{draw(st.integers(0, 99)):02d}-{m}"
        subs = [Subscription(m, tuple(subscribed[m]), tuple(draw(st.permutations(owned[m]))), gens[m], instance[m])
                for m in ids]
        return Problem(ppt, tuple(draw(st.permutations(subs))))

    return draw_problem()


def java_bug_exposure(problem: Problem) -> dict[str, set[str]]:
    """Members exposed to the two Kafka bugs the model keeps (docs/assignors-sticky.md), by bug.

    * ``leading-empty-subscription``: members with an empty topic list placed (in member order)
      before the first member with topics, when all members with topics subscribe alike: Kafka's
      constrained builder gives them partitions;
    * ``stale-unsubscribed-claim``: members with a generation below the group's highest that claim an
      existing partition of a topic they no longer subscribe to: the previous-owner rule can hand it
      back to them.
    """
    from model.assignors.order import sorted_members

    ordered = sorted_members(problem.subscriptions)
    ppt = problem.partitions_per_topic
    exposed: dict[str, set[str]] = {"leading-empty-subscription": set(), "stale-unsubscribed-claim": set()}
    leading = []
    for s in ordered:
        if s.topics:
            break
        leading.append(s.member_id)
    non_empty = [frozenset(s.topics) for s in ordered if s.topics]
    if leading and non_empty and all(t == non_empty[0] for t in non_empty) and not any(
            not s.topics for s in ordered[len(leading):]):
        exposed["leading-empty-subscription"] = set(leading)
    top = max((s.generation if s.generation >= 0 else -1 for s in ordered), default=-1)
    wanted = {t for s in ordered for t in s.topics}
    for s in ordered:
        gen = s.generation if s.generation >= 0 else -1
        if gen < top and any(p.topic in wanted and 0 <= p.partition < ppt.get(p.topic, 0)
                             and p.topic not in s.topics for p in s.owned):
            exposed["stale-unsubscribed-claim"].add(s.member_id)
    return exposed
