"""The model's assignors against Apache Kafka's own (kafka-clients 4.1.1), run in one JVM.

What agreement is demanded, and why (docs/java-peer.md has the long form):

* **range, roundrobin**: exactly the same assignment, always. Both sort everything they iterate
  (``MemberInfo`` order, topic names), so nothing in Java is left to hash order. (Roundrobin on topic
  names Kafka accepts: on others the model orders topics differently, a model bug pinned below.)
* **sticky, cooperative-sticky, member ids as real groups have them**: Java iterates the leader's
  ``HashMap<String, Subscription>`` and the builders' own hash maps and sets, so some answers depend
  on the member ids' hash codes. :func:`hash_order_dependence` names the places and the conditions
  (read from ``AbstractStickyAssignor``). Where it finds none, the answers must be identical --
  except for the one dependence no input analysis can rule out, the ``HashSet`` choice in
  ``PartitionMovements.getTheActualPartitionToBeMoved``: a difference there is accepted only if Java
  itself gives the model's answer once the topics are renamed (same order, other hash codes).
  Where the answer does depend on hash order, both answers must keep the promised invariants
  (``model.invariants.assignment``), up to the Kafka bugs the model reproduces on purpose, and
  stickiness must agree as far as it is order-free (the multiset of partitions kept per member
  under a ``maxQuota`` choice; the total kept within two per order-dependent claim).
* **sticky, cooperative-sticky, member ids "@", "A", "B", ...**: one-character ids whose hash codes
  are consecutive small numbers, so every ``HashMap`` keyed by member id iterates in member-id
  order -- the order the model uses. Then every answer must be identical (``HashSet`` choice apart):
  this checks the model's own tie-breaking rules, not just the cases where ties do not arise.
* **Kafka's examples** (RangeAssignorTest, RoundRobinAssignorTest, AbstractStickyAssignorTest,
  CooperativeStickyAssignorTest): the peer must give Kafka's asserted answer, which validates how
  the peer builds its inputs; the model must give the peer's answer where hash order cannot matter.

Each hypothesis test records what it met with ``hypothesis.event`` (``pytest
--hypothesis-show-statistics`` prints the counts). The whole module shares one JVM.
"""

from __future__ import annotations

import dataclasses
import random
import shutil
import string
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from conformance.java_assignors import (
    CLAIM_TIE_ORDER,
    EMPTY_SUBSCRIPTION,
    MAX_QUOTA_CHOICE,
    PREVIOUS_OWNER_TIE,
    JavaAssignorFailure,
    JavaAssignorPeer,
    JavaPeerError,
    JavaPeerUnavailable,
    JavaResult,
    build,
    hash_order_dependence,
    jar_is_fresh,
    java_available,
)
from model.assignors import assign
from model.assignors.order import java_string_key
from model.assignors.sticky import sticky_target
from model.assignors.sticky_claims import StickyAssignorFailure
from model.invariants.assignment import (
    BALANCED,
    REVOKE_BEFORE_ASSIGN,
    STICKY,
    SUBSCRIBED_ONLY,
    AssignmentProblem,
    valid_claims,
    violated,
)
from model.types import GroupAssignment, Subscription, TopicPartition

_missing = java_available()
pytestmark = pytest.mark.skipif(_missing is not None, reason=f"Java assignor peer unavailable: {_missing}")

TP = TopicPartition
Answer = tuple[dict[str, tuple[TopicPartition, ...]], frozenset[TopicPartition]] | str  # or "throws"

STICKY_STRATEGIES = ("sticky", "cooperative-sticky")

# Names whose Java order differs from their creation order. Topic names keep to Kafka's legal
# characters (ASCII letters and digits, ".", "_", "-"; kafka.common.internals.Topic.validate);
# member and instance ids are free text, so there Java's order differs from Python's code-point order
# too ("\U0001F600" is a surrogate pair in UTF-16: below "\uFF21" for Java, above it for Python).
TOPIC_NAMES = ("t0", "t1", "t10", "t2", "topic", "a-b", "a.b", "a_b", "Z")
# Names no broker accepts, which the model takes nonetheless: sticky and range must order them as Java
# does (roundrobin does not: test_roundrobin_orders_topics_as_java_does).
ANY_TOPIC_NAMES = (*TOPIC_NAMES, "\uFF21", "\U0001F600x")
MEMBER_NAMES = ("consumer-1", "consumer-10", "consumer-2", "c", "m9", "m10", "\uFF21m", "\U0001F600m", "zz", "é")
INSTANCE_NAMES = ("instance-2", "instance-10", "i", "\U0001F600i", "\uFF21i", "a")
# Hash codes 64, 65, ...: every HashMap keyed by these iterates them in this order (index = hash & (n - 1)).
ALIGNED_NAMES = tuple(chr(c) for c in range(64, 64 + 16))

# Invariants Kafka's general builder breaks when a stale claimer becomes the "previous owner" of a
# partition of a topic it has left (docs/assign.md, "Kafka behaviour that shows up as a violation"),
# and whose occurrence depends on which of several tied claimers that is.
PREVIOUS_OWNER_BUGS = frozenset({SUBSCRIBED_ONLY, BALANCED, STICKY, REVOKE_BEFORE_ASSIGN})
# With an empty subscription first in hash order, the constrained builder gives that member partitions.
EMPTY_SUBSCRIPTION_BUGS = frozenset({SUBSCRIBED_ONLY})


@pytest.fixture(scope="module")
def java() -> Iterator[JavaAssignorPeer]:
    with JavaAssignorPeer() as peer:
        yield peer


# --------------------------------------------------------------------------------------------------
# Problems
# --------------------------------------------------------------------------------------------------


@st.composite
def problems(draw: st.DrawFn, *, aligned: bool = False, names: Sequence[str] = ANY_TOPIC_NAMES
             ) -> tuple[dict[str, int], list[Subscription]]:
    """A group with owned partitions as real rebalances leave them, and the odd broken claim.

    Claims come in three kinds: none (a fresh group); a previous assignment (each partition had at
    most one owner, each member a generation, stale lower-generation claims and a few duplicates
    sprinkled on top); random claims of existing partitions. Claims of a topic that is gone appear
    too; claims of partition numbers that do not exist do not (a known, separately tested deviation).
    ``aligned`` uses member ids from :data:`ALIGNED_NAMES`, with the static members (instance ids in
    the same order) first, so that Java's hash order is the model's member order.
    """
    topic_names = draw(st.lists(st.sampled_from(names), min_size=1, max_size=4, unique=True))
    topics = {t: draw(st.integers(0, 8)) for t in topic_names}
    n = draw(st.integers(1, 7))
    if aligned:
        ids = list(ALIGNED_NAMES[:n])
        statics = draw(st.integers(0, n))
        instances: list[str | None] = [f"instance-{i:02d}" for i in range(statics)] + [None] * (n - statics)
        order = draw(st.permutations(range(n)))  # the JoinGroup order
    else:
        ids = draw(st.lists(st.sampled_from(MEMBER_NAMES), min_size=n, max_size=n, unique=True))
        pool = list(draw(st.permutations(INSTANCE_NAMES)))
        instances = [pool.pop() if pool and draw(st.integers(0, 3)) == 0 else None for _ in range(n)]
        order = list(range(n))
    equal = draw(st.booleans())
    common = tuple(draw(st.lists(st.sampled_from(topic_names), min_size=1, max_size=len(topic_names), unique=True)))
    subscribed = []
    for _ in range(n):
        if equal:
            subscribed.append(common)
        else:
            subscribed.append(tuple(draw(st.lists(st.sampled_from(topic_names), min_size=0 if draw(
                st.integers(0, 9)) == 0 else 1, max_size=len(topic_names), unique=True))))
    partitions = [TP(t, p) for t in topic_names for p in range(topics[t])]
    owned: list[list[TopicPartition]] = [[] for _ in range(n)]
    generations = [-1] * n
    kind = draw(st.sampled_from(("fresh", "previous", "random")))
    if kind == "previous":
        current = draw(st.integers(1, 5))
        generations = [draw(st.sampled_from((current, current, current, current - 1, -1))) for _ in range(n)]
        for tp in partitions:
            holder = draw(st.integers(-1, n - 1))
            if holder >= 0:
                owned[holder].append(tp)
        for _ in range(draw(st.integers(0, 2))):  # a stale or duplicated claim
            if partitions:
                owned[draw(st.integers(0, n - 1))].append(draw(st.sampled_from(partitions)))
    elif kind == "random":
        generations = [draw(st.sampled_from((-1, 1, 2, 3))) for _ in range(n)]
        for m in range(n):
            if partitions:
                owned[m] = draw(st.lists(st.sampled_from(partitions), max_size=5))
    if kind != "fresh" and draw(st.integers(0, 4)) == 0:
        owned[draw(st.integers(0, n - 1))].append(TP("gone", 0))  # a topic deleted since
    racks = [draw(st.sampled_from((None, None, "rack-a", "rack-b"))) for _ in range(n)]
    subs = [Subscription(ids[m], subscribed[m], tuple(owned[m]), generations[m], instances[m], racks[m])
            for m in range(n)]
    return topics, [subs[i] for i in order]


# --------------------------------------------------------------------------------------------------
# Running both sides
# --------------------------------------------------------------------------------------------------


def run_java(java: JavaAssignorPeer, strategy: str, topics: Mapping[str, int],
             subs: Sequence[Subscription]) -> tuple[Answer, JavaResult | None]:
    try:
        result = java.run(strategy, topics, subs)
    except JavaAssignorFailure as exc:
        event(f"{strategy}: Java throws {exc.exception}")
        return "throws", None
    assert result.notes == (), f"the peer's transferring cross-check failed: {result.notes}"
    return (result.assignment, result.transferring), result


def run_model(strategy: str, topics: Mapping[str, int], subs: Sequence[Subscription]) -> Answer:
    try:
        result = assign(strategy, topics, subs)
    except StickyAssignorFailure:
        return "throws"
    return dict(result.assignment), result.transferring


def failed(answer: Answer) -> bool:
    return isinstance(answer, str)


def java_names(rng: random.Random, count: int) -> list[str]:
    """``count`` random distinct names in ascending order (ASCII, so Java order = Python order)."""
    names: set[str] = set()
    while len(names) < count:
        names.add("".join(rng.choice(string.ascii_lowercase) for _ in range(10)))
    return sorted(names)


def renamed(rng: random.Random, topics: Mapping[str, int], subs: Sequence[Subscription], *,
            members: bool, topic_names: bool) -> tuple[dict[str, int], list[Subscription], Callable[[Answer], Answer]]:
    """The same problem with names changed but every Java *order* kept (member ids, instance ids,
    topics), so that only hash codes differ; and the map that translates an answer back."""
    def order_preserving(names: set[str]) -> dict[str, str]:
        old = sorted(names, key=java_string_key)
        return dict(zip(old, java_names(rng, len(old)), strict=True))

    all_topics = set(topics) | {t for s in subs for t in s.topics} | {tp.topic for s in subs for tp in s.owned}
    tmap = order_preserving(all_topics) if topic_names else {t: t for t in all_topics}
    mmap = order_preserving({s.member_id for s in subs}) if members else {s.member_id: s.member_id for s in subs}
    instances = {s.instance_id for s in subs if s.instance_id is not None}
    imap = order_preserving(instances) if members else {i: i for i in instances}
    new_subs = [dataclasses.replace(
        s, member_id=mmap[s.member_id], topics=tuple(tmap[t] for t in s.topics),
        owned=tuple(TP(tmap[tp.topic], tp.partition) for tp in s.owned),
        instance_id=None if s.instance_id is None else imap[s.instance_id]) for s in subs]
    mback = {v: k for k, v in mmap.items()}
    tback = {v: k for k, v in tmap.items()}

    def back(answer: Answer) -> Answer:
        if isinstance(answer, str):
            return answer
        assignment, transferring = answer
        return ({mback[m]: tuple(sorted(TP(tback[tp.topic], tp.partition) for tp in tps))
                 for m, tps in assignment.items()},
                frozenset(TP(tback[tp.topic], tp.partition) for tp in transferring))

    return {tmap[t]: c for t, c in topics.items()}, new_subs, back


def java_gives_with_other_partition_hashes(java: JavaAssignorPeer, strategy: str, topics: Mapping[str, int],
                                           subs: Sequence[Subscription], wanted: Answer, tries: int = 24) -> bool:
    """Does Java give ``wanted`` once the topics are renamed (order kept, partition hash codes changed)?

    Member ids are kept, so every member-keyed hash order stays as it was: only the ``HashSet``
    orders of ``TopicPartition`` change (``PartitionMovements``).
    """
    rng = random.Random(repr((strategy, sorted(topics.items()), [dataclasses.astuple(s) for s in subs])))
    for _ in range(tries):
        t2, s2, back = renamed(rng, topics, subs, members=False, topic_names=True)
        if back(run_java(java, strategy, t2, s2)[0]) == wanted:
            return True
    return False


def kept_counts(topics: Mapping[str, int], subs: Sequence[Subscription], answer: Answer) -> dict[str, int]:
    """Per member, how many of its valid owned partitions it keeps (model.invariants' valid claims)."""
    assert not isinstance(answer, str)
    claims = valid_claims(topics, subs)
    return {m: len(set(tps) & claims.owned.get(m, frozenset())) for m, tps in answer[0].items()}


def order_dependent_claims(topics: Mapping[str, int], subs: Sequence[Subscription]) -> int:
    """Partitions whose claims resolve differently in different orders (a lower generation repeats
    while the highest one does not: ``claim-tie-order``)."""
    by_tp: dict[TopicPartition, list[int]] = {}
    for s in subs:
        for tp in s.owned:
            if topics.get(tp.topic, 0) > 0:
                by_tp.setdefault(tp, []).append(max(s.generation, -1))
    count = 0
    for gens in by_tp.values():
        top = max(gens)
        if gens.count(top) == 1 and len(set(gens)) < len(gens):
            count += 1
    return count


def assert_same_or_movement_choice(java: JavaAssignorPeer, strategy: str, topics: Mapping[str, int],
                                   subs: Sequence[Subscription], java_answer: Answer, model_answer: Answer,
                                   java_result: JavaResult | None) -> None:
    if model_answer == java_answer:
        event(f"{strategy}: identical")
        return
    # The one hash-order dependence the input cannot rule out: which partition PartitionMovements
    # moves back (general builder only).
    assert java_result is not None and java_result.builder == "general" and not failed(model_answer), (
        f"{strategy}: model and Java differ where hash order cannot matter\n"
        f"problem: {problem_json_text(strategy, topics, subs)}\njava:  {java_answer}\nmodel: {model_answer}")
    assert java_gives_with_other_partition_hashes(java, strategy, topics, subs, model_answer), (
        f"{strategy}: model and Java differ, and Java never gives the model's answer under other "
        f"partition hash codes\nproblem: {problem_json_text(strategy, topics, subs)}\n"
        f"java:  {java_answer}\nmodel: {model_answer}")
    event(f"{strategy}: differs only in the PartitionMovements HashSet choice")


def problem_json_text(strategy: str, topics: Mapping[str, int], subs: Sequence[Subscription]) -> str:
    import json

    from conformance.java_assignors import problem_json
    return json.dumps(problem_json(strategy, topics, subs))


# --------------------------------------------------------------------------------------------------
# Differential tests
# --------------------------------------------------------------------------------------------------

_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(problem=problems())
def test_range_agrees_exactly(java: JavaAssignorPeer, problem) -> None:
    topics, subs = problem
    java_answer, _ = run_java(java, "range", topics, subs)
    assert run_model("range", topics, subs) == java_answer, problem_json_text("range", topics, subs)


@_SETTINGS
@given(problem=problems(names=TOPIC_NAMES))
def test_roundrobin_agrees_exactly(java: JavaAssignorPeer, problem) -> None:
    topics, subs = problem
    java_answer, _ = run_java(java, "roundrobin", topics, subs)
    assert run_model("roundrobin", topics, subs) == java_answer, problem_json_text("roundrobin", topics, subs)


@_SETTINGS
@given(problem=problems())
def test_sticky_assignors_agree_with_java(java: JavaAssignorPeer, problem) -> None:
    topics, subs = problem
    aproblem = AssignmentProblem.of(topics, subs)
    for strategy in STICKY_STRATEGIES:
        reasons = hash_order_dependence(strategy, topics, subs)
        java_answer, java_result = run_java(java, strategy, topics, subs)
        model_answer = run_model(strategy, topics, subs)
        if EMPTY_SUBSCRIPTION not in reasons and java_result is not None:
            equal = sticky_target(topics, subs).all_subscriptions_equal
            assert java_result.builder == ("constrained" if equal else "general"), "the builder choice differs"
        if not reasons:
            assert_same_or_movement_choice(java, strategy, topics, subs, java_answer, model_answer, java_result)
            continue
        event(f"{strategy}: hash-order dependent ({', '.join(reasons)})")
        if model_answer == java_answer:
            event(f"{strategy}: identical although hash-order dependent")
            continue
        if failed(java_answer) or failed(model_answer):
            # Java dereferences a member it set aside (NullPointerException) only in the general
            # builder, when that member is a partition's previous owner: which one that is (a
            # previous-owner tie), or whether the general builder runs at all (an empty
            # subscription), is where hash order decides.
            assert PREVIOUS_OWNER_TIE in reasons or EMPTY_SUBSCRIPTION in reasons, (java_answer, model_answer)
            event(f"{strategy}: one side throws ({', '.join(reasons)})")
            continue
        allowed: frozenset[str] = frozenset()
        if PREVIOUS_OWNER_TIE in reasons:
            allowed |= PREVIOUS_OWNER_BUGS
        if EMPTY_SUBSCRIPTION in reasons:
            # either builder may run: the constrained one gives the empty member partitions, the
            # general one may meet the previous-owner bug
            allowed |= EMPTY_SUBSCRIPTION_BUGS | PREVIOUS_OWNER_BUGS
        assert not isinstance(model_answer, str) and not isinstance(java_answer, str)
        model_result = GroupAssignment(model_answer[0], model_answer[1])
        java_group = GroupAssignment(java_answer[0], java_answer[1])
        assert set(violated(strategy, aproblem, model_result)) <= allowed, problem_json_text(strategy, topics, subs)
        assert set(violated(strategy, aproblem, java_group)) <= allowed, problem_json_text(strategy, topics, subs)
        kept_java = kept_counts(topics, subs, java_answer)
        kept_model = kept_counts(topics, subs, model_answer)
        if set(reasons) == {MAX_QUOTA_CHOICE}:
            # Which members keep maxQuota depends on the order, how many keep what does not.
            assert sorted(kept_model.values()) == sorted(kept_java.values())
        elif set(reasons) <= {MAX_QUOTA_CHOICE, CLAIM_TIE_ORDER}:
            # Each order-dependent claim changes one member's owned count by one, which moves
            # sum(min(owned, minQuota)) and min(P % N, #owning >= maxQuota) by at most one each.
            bound = 2 * order_dependent_claims(topics, subs)
            assert abs(sum(kept_model.values()) - sum(kept_java.values())) <= bound
        delta = sum(kept_model.values()) - sum(kept_java.values())
        event(f"{strategy}: differs (hash order); model keeps {delta:+d} partitions vs Java")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(aligned=True))
def test_sticky_assignors_agree_exactly_when_java_iterates_in_member_order(java: JavaAssignorPeer, problem) -> None:
    topics, subs = problem
    for strategy in STICKY_STRATEGIES:
        if hash_order_dependence(strategy, topics, subs):
            event(f"{strategy}: order-dependent input")
        java_answer, java_result = run_java(java, strategy, topics, subs)
        model_answer = run_model(strategy, topics, subs)
        if failed(java_answer) or failed(model_answer):
            assert failed(java_answer) and failed(model_answer), (java_answer, model_answer)
            event(f"{strategy}: both throw")
            continue
        assert_same_or_movement_choice(java, strategy, topics, subs, java_answer, model_answer, java_result)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(names=TOPIC_NAMES), seed=st.integers(0, 2**32 - 1))
def test_java_ignores_member_hash_codes_where_classified_order_free(java: JavaAssignorPeer, problem, seed) -> None:
    """The classification itself, checked on Java alone: renaming the members (order kept, hash
    codes changed) does not change Java's answer where :func:`hash_order_dependence` finds nothing."""
    topics, subs = problem
    rng = random.Random(seed)
    for strategy in ("range", "roundrobin", *STICKY_STRATEGIES):
        if hash_order_dependence(strategy, topics, subs):
            continue
        answer, _ = run_java(java, strategy, topics, subs)
        for _ in range(2):
            t2, s2, back = renamed(rng, topics, subs, members=True, topic_names=False)
            assert back(run_java(java, strategy, t2, s2)[0]) == answer, problem_json_text(strategy, topics, subs)


# --------------------------------------------------------------------------------------------------
# Kafka's own examples: the peer must give Kafka's asserted answers
# --------------------------------------------------------------------------------------------------


def member(member_id: str, topics: Sequence[str], owned: Sequence[TopicPartition] = (), generation: int = -1,
           instance_id: str | None = None) -> Subscription:
    return Subscription(member_id, tuple(topics), tuple(owned), generation, instance_id)


def tps(text: str) -> tuple[TopicPartition, ...]:
    """``"topic1-0 topic2-3"`` -> sorted topic-partitions."""
    out = []
    for item in text.split():
        topic, _, partition = item.rpartition("-")
        out.append(TP(topic, int(partition)))
    return tuple(sorted(out))


T12 = ("topic1", "topic2")
T = ("topic",)
G = 1  # AbstractStickyAssignorTest.generationId

# (test name, strategy, topics, members in Kafka's insertion order, Kafka's asserted assignment,
#  Kafka's asserted partitionsTransferringOwnership (sticky assignors) or None)
KAFKA_EXAMPLES = [
    ("RangeAssignorTest.testMultipleConsumersMixedTopics", "range", {"topic1": 3, "topic2": 2},
     [member("consumer1", ["topic1"]), member("consumer2", T12), member("consumer3", ["topic1"])],
     {"consumer1": tps("topic1-0"), "consumer2": tps("topic1-1 topic2-0 topic2-1"), "consumer3": tps("topic1-2")},
     None),
    ("RangeAssignorTest.testTwoConsumersTwoTopicsSixPartitions", "range", {"topic1": 3, "topic2": 3},
     [member("consumer1", T12), member("consumer2", T12)],
     {"consumer1": tps("topic1-0 topic1-1 topic2-0 topic2-1"), "consumer2": tps("topic1-2 topic2-2")}, None),
    ("RangeAssignorTest.testTwoStaticConsumersTwoTopicsSixPartitions", "range", {"topic1": 3, "topic2": 3},
     [member("consumer-b", T12, instance_id="instance1"), member("consumer-a", T12, instance_id="instance2")],
     {"consumer-b": tps("topic1-0 topic1-1 topic2-0 topic2-1"), "consumer-a": tps("topic1-2 topic2-2")}, None),
    ("RangeAssignorTest.testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions", "range",
     {"topic1": 3, "topic2": 3},
     [member("consumer-b", T12, instance_id="instance1"), member("consumer-a", T12)],
     {"consumer-b": tps("topic1-0 topic1-1 topic2-0 topic2-1"), "consumer-a": tps("topic1-2 topic2-2")}, None),
    ("RoundRobinAssignorTest.testMultipleConsumersMixedTopics", "roundrobin", {"topic1": 3, "topic2": 2},
     [member("consumer1", ["topic1"]), member("consumer2", T12), member("consumer3", ["topic1"])],
     {"consumer1": tps("topic1-0"), "consumer2": tps("topic1-1 topic2-0 topic2-1"), "consumer3": tps("topic1-2")},
     None),
    ("RoundRobinAssignorTest.testTwoDynamicConsumersTwoTopicsSixPartitions", "roundrobin",
     {"topic1": 3, "topic2": 3}, [member("consumer1", T12), member("consumer2", T12)],
     {"consumer1": tps("topic1-0 topic1-2 topic2-1"), "consumer2": tps("topic1-1 topic2-0 topic2-2")}, None),
    ("RoundRobinAssignorTest.testTwoStaticConsumersTwoTopicsSixPartitions", "roundrobin",
     {"topic1": 3, "topic2": 3},
     [member("consumer-b", T12, instance_id="instance1"), member("consumer-a", T12, instance_id="instance2")],
     {"consumer-b": tps("topic1-0 topic1-2 topic2-1"), "consumer-a": tps("topic1-1 topic2-0 topic2-2")}, None),
    ("AbstractStickyAssignorTest.testConsumerOwningMinQuotaExpectedMaxQuota", "sticky", {"topic1": 2, "topic2": 3},
     [member("consumer1", T12, tps("topic1-0 topic2-1"), G), member("consumer2", T12, tps("topic1-1 topic2-2"), G)],
     {"consumer1": tps("topic1-0 topic2-0 topic2-1"), "consumer2": tps("topic1-1 topic2-2")}, {}),
    ("AbstractStickyAssignorTest.testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers", "sticky",
     {"topic1": 2, "topic2": 2},
     [member("consumer1", T12, tps("topic1-0 topic2-0"), G), member("consumer2", T12, tps("topic1-1 topic2-1"), G),
      member("consumer3", T12, (), G)],
     {"consumer1": tps("topic1-0"), "consumer2": tps("topic1-1 topic2-1"), "consumer3": tps("topic2-0")},
     {TP("topic2", 0): "consumer3"}),
    ("AbstractStickyAssignorTest.testAllConsumersAreUnderMinQuota", "sticky", {"topic1": 2, "topic2": 3},
     [member("consumer1", T12, tps("topic1-0"), G), member("consumer2", T12, tps("topic1-1"), G),
      member("consumer3", T12, (), G)],
     {"consumer1": tps("topic1-0 topic2-1"), "consumer2": tps("topic1-1 topic2-2"), "consumer3": tps("topic2-0")},
     {}),
    ("AbstractStickyAssignorTest.testAddRemoveTwoConsumersTwoTopics (second round)", "sticky",
     {"topic1": 3, "topic2": 4},
     [member("consumer1", T12, tps("topic1-0 topic1-2 topic2-1 topic2-3"), G),
      member("consumer2", T12, tps("topic1-1 topic2-0 topic2-2"), G),
      member("consumer3", T12, (), G), member("consumer4", T12, (), G)],
     {"consumer1": tps("topic1-0 topic2-1"), "consumer2": tps("topic1-1 topic2-0"),
      "consumer3": tps("topic1-2 topic2-3"), "consumer4": tps("topic2-2")},
     {TP("topic1", 2): "consumer3", TP("topic2", 3): "consumer3", TP("topic2", 2): "consumer4"}),
    ("AbstractStickyAssignorTest.testAllConsumersReachExpectedQuotaAndAreConsideredFilled", "sticky", {"topic": 4},
     [member("consumer1", T, tps("topic-0 topic-1"), G), member("consumer2", T, tps("topic-2"), G),
      member("consumer3", T, (), G)],
     {"consumer1": tps("topic-0 topic-1"), "consumer2": tps("topic-2"), "consumer3": tps("topic-3")}, {}),
    ("AbstractStickyAssignorTest.testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration", "sticky",
     {"topic": 3, "topic2": 3},
     [member("consumer1", ("topic", "topic2"), tps("topic-0 topic-2 topic2-1"), 10),
      member("consumer2", ("topic", "topic2"), tps("topic-0 topic-2 topic2-1"), 9)],
     {"consumer1": tps("topic-0 topic-2 topic2-1"), "consumer2": tps("topic-1 topic2-0 topic2-2")}, {}),
    ("AbstractStickyAssignorTest.testPartitionsTransferringOwnershipIncludeThePartitionClaimedByMultipleConsumersInSameGeneration",
     "sticky", {"topic": 3},
     [member("consumer1", T, tps("topic-0 topic-1"), G), member("consumer2", T, tps("topic-0 topic-2"), G),
      member("consumer3", T, (), G)],
     {"consumer1": tps("topic-1"), "consumer2": tps("topic-2"), "consumer3": tps("topic-0")},
     {TP("topic", 0): "consumer3"}),
    ("AbstractStickyAssignorTest.testEnsurePartitionsAssignedToHighestGeneration", "sticky",
     {"topic": 3, "topic2": 3, "topic3": 3},
     [member("consumer1", ("topic", "topic2", "topic3"), tps("topic-0 topic2-0 topic3-0"), 10),
      member("consumer2", ("topic", "topic2", "topic3"), tps("topic-1 topic2-1 topic3-1"), 9),
      member("consumer3", ("topic", "topic2", "topic3"), tps("topic2-1 topic3-0 topic3-2"), 8)],
     {"consumer1": tps("topic-0 topic2-0 topic3-0"), "consumer2": tps("topic-1 topic2-1 topic3-1"),
      "consumer3": tps("topic-2 topic2-2 topic3-2")}, {}),
    ("AbstractStickyAssignorTest.testOwnedPartitionsAreInvalidatedForConsumerWithMultipleGeneration", "sticky",
     {"topic": 3, "topic2": 3},
     [member("consumer1", ("topic", "topic2"), tps("topic-0 topic2-1 topic-1"), 10),
      member("consumer2", ("topic", "topic2"), tps("topic-0 topic2-1 topic2-2"), 8)],
     {"consumer1": tps("topic-0 topic2-1 topic-1"), "consumer2": tps("topic-2 topic2-2 topic2-0")}, {}),
    ("CooperativeStickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultipleConsumersInSameGenerationWithUnequalPartitionsPerConsumer",
     "cooperative-sticky", {"topic": 4},
     [member("consumer1", T, tps("topic-0 topic-1"), G), member("consumer2", T, tps("topic-0 topic-2"), G),
      member("consumer3", T, (), G)],
     {"consumer1": tps("topic-1 topic-3"), "consumer2": tps("topic-2"), "consumer3": ()},
     {TP("topic", 0): "consumer3"}),
]


@pytest.mark.parametrize(("name", "strategy", "topics", "subs", "expected", "transferring"), KAFKA_EXAMPLES,
                         ids=[e[0].split(".")[1].split(" ")[0][:80] for e in KAFKA_EXAMPLES])
def test_kafka_examples(java: JavaAssignorPeer, name, strategy, topics, subs, expected, transferring) -> None:
    result = java.run(strategy, topics, subs)
    assert result.assignment == expected, f"the Java peer does not reproduce {name}"
    if transferring is not None:
        if strategy == "sticky":
            # The eager assignor computes the map but withholds nothing; ask the cooperative one.
            coop = java.run("cooperative-sticky", topics, subs)
            assert coop.transferring == frozenset(transferring)
            assert coop.assignment == {m: tuple(tp for tp in tps_ if tp not in transferring)
                                       for m, tps_ in expected.items()}
        else:
            assert result.transferring == frozenset(transferring)
    for each in ((strategy, "cooperative-sticky") if strategy == "sticky" else (strategy,)):
        java_answer = run_java(java, each, topics, subs)[0]
        model_answer = run_model(each, topics, subs)
        if hash_order_dependence(each, topics, subs):
            continue  # compared in the next test
        assert model_answer == java_answer, f"{each}: the model differs from Java on {name}"


def test_kafka_example_whose_answer_rests_on_hash_order(java: JavaAssignorPeer) -> None:
    """testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers: consumer1 and consumer2 both own
    maxQuota = 2 partitions and only 4 % 3 = 1 of them may keep 2. Kafka's test asserts consumer2
    keeps both, because "consumer2" comes before "consumer1" in HashMap order; the model walks
    members in member-id order, so consumer1 keeps both. Same multiset of kept partitions, same
    invariants; the aligned-name test checks the model's rule where Java's order is the same."""
    name, strategy, topics, subs, expected, _ = KAFKA_EXAMPLES[8]
    assert name.endswith("testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers")
    assert hash_order_dependence(strategy, topics, subs) == (MAX_QUOTA_CHOICE,)
    model = assign(strategy, topics, subs).assignment
    assert model == {"consumer1": tps("topic1-0 topic2-0"), "consumer2": tps("topic1-1"),
                     "consumer3": tps("topic2-1")}
    assert java.run(strategy, topics, subs).assignment == expected
    renamed_subs = [dataclasses.replace(s, member_id=n) for s, n in zip(subs, ("A", "B", "C"), strict=True)]
    assert java.run(strategy, topics, renamed_subs).assignment == {
        "A": tps("topic1-0 topic2-0"), "B": tps("topic1-1"), "C": tps("topic2-1")}


# --------------------------------------------------------------------------------------------------
# Known differences, pinned
# --------------------------------------------------------------------------------------------------


def test_roundrobin_orders_topics_as_java_does(java: JavaAssignorPeer) -> None:
    """RoundRobinAssignor lists topics in a ``TreeSet`` (``String.compareTo``): "\U0001F600x" (a
    surrogate pair, 0xD83D...) comes before "\uFF21". Kafka's broker refuses such topic names, but
    the model takes any string, and ``model.assignors.order.java_string_key`` exists for this."""
    topics = {"\uFF21": 1, "\U0001F600x": 1}
    subs = [member("consumer-1", list(topics)), member("consumer-2", list(topics))]
    java_answer = java.run("roundrobin", topics, subs).assignment
    assert java_answer == {"consumer-1": (TP("\U0001F600x", 0),), "consumer-2": (TP("\uFF21", 0),)}
    assert dict(assign("roundrobin", topics, subs).assignment) == java_answer


def test_claim_of_a_partition_that_does_not_exist(java: JavaAssignorPeer) -> None:
    """Java checks only the topic of a claim: a claim of topic-7 (topic has 2 partitions) is kept and
    assigned back -- a partition that does not exist. The model drops such claims (its documented
    deviation, model/assignors/sticky_claims.py)."""
    topics = {"topic": 2}
    subs = [member("consumer1", T, tps("topic-7"), G), member("consumer2", T, (), G)]
    java_result = java.run("sticky", topics, subs)
    assert TP("topic", 7) in java_result.assignment["consumer1"]
    model = assign("sticky", topics, subs).assignment
    assert TP("topic", 7) not in {tp for tps_ in model.values() for tp in tps_}
    assert sorted(tp for tps_ in model.values() for tp in tps_) == [TP("topic", 0), TP("topic", 1)]


def test_both_fail_when_the_previous_owner_was_set_aside(java: JavaAssignorPeer) -> None:
    """docs/assign.md: a stale claimer that subscribes to nothing with metadata is set aside as fixed,
    yet is the previous owner of a partition the general builder wants to move: Java throws
    NullPointerException in performReassignments, the model raises StickyAssignorFailure."""
    topics = {"t0": 6, "t1": 0}
    subs = [member("m43-0", ["t1"], tps("t0-2 t0-4 t0-5"), -1),
            member("m41-1", ["t1"], tps("t0-3 t0-4 t0-2 t0-1 t0-0 t0-5"), 2),
            member("m5-2", ["t0"], (), 3),
            member("m6-3", ["t0", "t1"], tps("t0-3 t0-4 t0-1 t0-0 t0-2"), 3)]
    for strategy in STICKY_STRATEGIES:
        assert hash_order_dependence(strategy, topics, subs) == ()
        with pytest.raises(JavaAssignorFailure) as java_failure:
            java.run(strategy, topics, subs)
        assert java_failure.value.exception == "java.lang.NullPointerException"
        assert "performReassignments" in java_failure.value.at[0]
        with pytest.raises(StickyAssignorFailure):
            assign(strategy, topics, subs)


# --------------------------------------------------------------------------------------------------
# The peer itself
# --------------------------------------------------------------------------------------------------


def test_peer_reports_versions_times_and_builders(java: JavaAssignorPeer) -> None:
    assert java.kafka_clients_version == "4.1.1"
    subs = [member("a", ["t"], tps("t-0 t-1 t-2 t-3"), 1), member("b", ["t"])]
    result = java.run("cooperative-sticky", {"t": 4}, subs, repeat=3)
    assert len(result.runs) == 3 and result.millis == min(result.runs) and result.millis > 0
    assert result.wall_millis >= sum(result.runs) + result.prepare_millis and result.prepare_millis > 0
    assert result.cpu_millis <= result.millis + 1.0 and result.gc_millis == 0  # one thread: CPU <= wall
    collected = java.run("cooperative-sticky", {"t": 4}, subs, gc=True)
    assert collected.gc_millis > 0 and collected.assignment == result.assignment
    # sticky reads its claims from user data: every repeated run must still see them
    subs3 = [member("a", ["t"], tps("t-0 t-1 t-2"), 1), member("b", ["t"], tps("t-3"), 1), member("c", ["t"])]
    once = java.run("sticky", {"t": 6}, subs3)
    # a keeps minQuota = 2 of its 3, b keeps its 1; t-2, t-4, t-5 go round robin over b, c
    assert once.assignment == {"a": tps("t-0 t-1"), "b": tps("t-2 t-3"), "c": tps("t-4 t-5")}
    assert java.run("sticky", {"t": 6}, subs3, repeat=3).assignment == once.assignment
    assert result.builder == "constrained" and result.transferring_source == "partitionsTransferringOwnership"
    assert result.assignment == {"a": tps("t-0 t-1"), "b": ()} and result.transferring == frozenset(tps("t-2 t-3"))
    general = java.run("cooperative-sticky", {"t": 4, "u": 1}, [*subs, member("c", ["u"])])
    assert general.builder == "general" and general.transferring_source == "derived"
    # performReassignments walks the partitions in order: t-0 and t-1 leave a for b, withheld
    assert general.transferring == frozenset(tps("t-0 t-1"))
    assert general.assignment == {"a": tps("t-2 t-3"), "b": (), "c": tps("u-0")}
    assert java.run("range", {"t": 4}, subs).builder is None
    assignment, transferring, millis = java.assign("roundrobin", {"t": 4}, subs)
    assert assignment == {"a": tps("t-0 t-2"), "b": tps("t-1 t-3")} and transferring == frozenset() and millis > 0


def test_peer_refuses_a_bad_request_and_carries_on(java: JavaAssignorPeer) -> None:
    reply = java.request({"strategy": "range", "topics": {"t": "three"}, "members": []})
    assert reply["error"]["kind"] == "request"
    assert 'topics["t"]: expected an integer' in reply["error"]["message"]
    with pytest.raises(ValueError, match="unknown strategy"):
        java.run("uniform", {"t": 1}, [member("a", ["t"])])
    assert java.request({"strategy": "nope", "topics": {}, "members": []})["error"]["kind"] == "request"
    assert java.run("range", {"t": 1}, [member("a", ["t"])]).assignment == {"a": (TP("t", 0),)}


def test_peer_jvm_ends_with_the_block() -> None:
    with JavaAssignorPeer() as peer:
        proc = peer._proc
        assert proc is not None and proc.poll() is None
    assert proc.poll() is not None


def test_peer_that_cannot_start_says_why() -> None:
    with pytest.raises(JavaPeerError, match="NoSuchOption"), JavaAssignorPeer(jvm_args=["-XX:+NoSuchOption"]):
        pass


def _fake_project(root: Path) -> Path:
    (root / "src" / "main" / "java").mkdir(parents=True)
    (root / "pom.xml").write_text("<project/>")
    (root / "src" / "main" / "java" / "Peer.java").write_text("class Peer {}")
    return root


def test_jar_freshness(tmp_path: Path) -> None:
    import os
    project = _fake_project(tmp_path)
    assert not jar_is_fresh(project)
    (project / "target" / "lib").mkdir(parents=True)
    (project / "target" / "lib" / "kafka-clients-4.1.1.jar").write_bytes(b"")
    jar = project / "target" / "groupspec-assignor-peer.jar"
    jar.write_bytes(b"")
    os.utime(project / "pom.xml", (1_000, 1_000))
    os.utime(project / "src" / "main" / "java" / "Peer.java", (1_000, 1_000))
    os.utime(jar, (2_000, 2_000))
    assert jar_is_fresh(project)
    os.utime(project / "src" / "main" / "java" / "Peer.java", (3_000, 3_000))
    assert not jar_is_fresh(project)


def test_build_without_maven_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = _fake_project(tmp_path)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(JavaPeerUnavailable, match="`mvn` is not on PATH"):
        build(project)


def test_failed_build_quotes_maven(tmp_path: Path) -> None:
    if shutil.which("mvn") is None:
        pytest.skip("mvn is not on PATH")
    project = _fake_project(tmp_path)
    (project / "pom.xml").write_text("<project>this is not a POM")
    with pytest.raises(JavaPeerUnavailable, match="building the Java assignor peer failed") as failure:
        build(project)
    assert "pom.xml" in str(failure.value) or "POM" in str(failure.value)
