"""The round invariants of model.invariants.assignment: a held and a violated case for each,
the claim-cleaning rules, and the promise table."""

from __future__ import annotations

import pytest

from model.invariants.assignment import (
    BALANCED,
    COMPLETE,
    REVOKE_BEFORE_ASSIGN,
    REVOKE_ONLY_MOVED,
    ROUND_INVARIANTS,
    SINGLE_OWNER,
    STICKY,
    SUBSCRIBED_ONLY,
    AssignmentProblem,
    ClaimRejection,
    balanced,
    check_round,
    complete,
    promised,
    revoke_before_assign,
    revoke_only_moved,
    single_owner,
    sticky,
    subscribed_only,
    valid_claims,
    violated,
)
from model.invariants.catalogue import CATALOGUE
from model.types import GroupAssignment, Subscription, TopicPartition


def tp(name: str) -> TopicPartition:
    topic, _, number = name.rpartition("-")
    return TopicPartition(topic, int(number))


def tps(*names: str) -> tuple[TopicPartition, ...]:
    return tuple(sorted(tp(n) for n in names))


def member(member_id: str, topics: str, owned: str = "", generation: int = -1) -> Subscription:
    return Subscription(member_id, tuple(topics.split()), tps(*owned.split()), generation)


def problem(topics: dict[str, int], *members: Subscription) -> AssignmentProblem:
    return AssignmentProblem.of(topics, members)


def result(transferring: str = "", **assignment: str) -> GroupAssignment:
    return GroupAssignment({m: tps(*names.split()) for m, names in assignment.items()},
                           frozenset(tps(*transferring.split())))


def test_round_invariant_ids_are_catalogue_ids() -> None:
    assert set(ROUND_INVARIANTS) <= CATALOGUE.keys()


# ---------------------------------------------------------------- claims


def test_valid_claims_drop_unknown_topics_and_missing_partitions() -> None:
    p = problem({"t": 2}, member("a", "t", "t-0 t-2 u-0"), Subscription("b", ("t",), (TopicPartition("t", -1),)))
    claims = valid_claims(p.partitions_per_topic, p.subscriptions)
    assert claims.owned == {"a": frozenset(tps("t-0")), "b": frozenset()}
    reasons = {(c.member_id, str(c.partition)): c.reason for c in claims.ignored}
    assert reasons == {("a", "t-2"): ClaimRejection.NO_SUCH_PARTITION, ("a", "u-0"): ClaimRejection.UNKNOWN_TOPIC,
                       ("b", "t--1"): ClaimRejection.NO_SUCH_PARTITION}


def test_higher_generation_claim_wins_and_the_stale_one_is_superseded() -> None:
    p = problem({"t": 1}, member("a", "t", "t-0", generation=3), member("b", "t", "t-0", generation=5))
    claims = valid_claims(p.partitions_per_topic, p.subscriptions)
    assert claims.owner == {tp("t-0"): "b"}
    assert [(c.member_id, c.reason) for c in claims.ignored] == [("a", ClaimRejection.SUPERSEDED)]


def test_same_generation_conflict_voids_the_partition_for_everyone() -> None:
    p = problem({"t": 1}, member("a", "t", "t-0", 4), member("b", "t", "t-0", 4), member("c", "t", "t-0", 7))
    claims = valid_claims(p.partitions_per_topic, p.subscriptions)
    assert claims.owner == {}
    assert {c.reason for c in claims.ignored} == {ClaimRejection.CONFLICT}


def test_a_partition_listed_twice_by_one_member_is_a_conflict_as_in_kafka() -> None:
    p = problem({"t": 2}, Subscription("a", ("t",), (tp("t-0"), tp("t-0"), tp("t-1")), 2))
    claims = valid_claims(p.partitions_per_topic, p.subscriptions)
    assert claims.owned["a"] == frozenset(tps("t-1"))


def test_claim_cleaning_does_not_depend_on_member_order() -> None:
    members = [member("a", "t", "t-0 t-1", 4), member("b", "t", "t-0", 4), member("c", "t", "t-0 t-1", 7),
               member("d", "t", "t-1", 2)]
    first = valid_claims({"t": 2}, members)
    second = valid_claims({"t": 2}, list(reversed(members)))
    assert first.owner == second.owner == {tp("t-1"): "c"}


def test_a_valid_claim_may_be_of_a_topic_no_longer_subscribed() -> None:
    claims = valid_claims({"t": 1, "u": 1}, [member("a", "u", "t-0", 1)])
    assert claims.owner == {tp("t-0"): "a"}


# ---------------------------------------------------------------- single-owner


def test_single_owner_holds_when_partitions_are_disjoint() -> None:
    p = problem({"t": 2}, member("a", "t"), member("b", "t"))
    assert single_owner(p, result(a="t-0", b="t-1"), "range").held


def test_single_owner_names_the_partition_given_to_two_members() -> None:
    p = problem({"t": 2}, member("a", "t"), member("b", "t"))
    v = single_owner(p, result(a="t-0 t-1", b="t-1"), "range")
    assert not v.held
    assert [(f.members, f.partitions) for f in v.findings] == [(("a", "b"), tps("t-1"))]


def test_single_owner_flags_a_partition_listed_twice_for_one_member() -> None:
    p = problem({"t": 1}, member("a", "t"))
    v = single_owner(p, GroupAssignment({"a": (tp("t-0"), tp("t-0"))}), "range")
    assert not v.held and v.findings[0].members == ("a",)


# ---------------------------------------------------------------- subscribed-only


def test_subscribed_only_holds_for_subscribed_partitions() -> None:
    p = problem({"t": 1, "u": 1}, member("a", "t u"), member("b", "u"))
    assert subscribed_only(p, result(a="t-0", b="u-0"), "roundrobin").held


def test_subscribed_only_flags_unsubscribed_missing_and_non_member_assignments() -> None:
    p = problem({"t": 1, "u": 1}, member("a", "t"))
    v = subscribed_only(p, result(a="t-0 u-0 t-5", z="t-0"), "roundrobin")
    assert not v.held
    found = {(f.members, f.partitions) for f in v.findings}
    assert found == {(("a",), tps("t-5")), (("a",), tps("u-0")), (("z",), tps("t-0"))}


# ---------------------------------------------------------------- complete


def test_complete_ignores_topics_nobody_subscribes_to() -> None:
    p = problem({"t": 2, "unused": 3}, member("a", "t missing"))
    assert complete(p, result(a="t-0 t-1"), "range").held


def test_complete_lists_the_partitions_without_owner() -> None:
    p = problem({"t": 3}, member("a", "t"), member("b", "t"))
    v = complete(p, result(transferring="t-2", a="t-0", b=""), "cooperative-sticky")
    assert not v.held
    assert v.findings[0].partitions == tps("t-1", "t-2")
    assert "1 of them withheld" in v.findings[0].message


# ---------------------------------------------------------------- balanced


def test_range_balance_is_per_topic_and_allows_group_wide_skew() -> None:
    # RangeAssignor's javadoc example: C0 gets 4, C1 gets 2, yet each topic is split 2/1.
    p = problem({"t0": 3, "t1": 3}, member("C0", "t0 t1"), member("C1", "t0 t1"))
    assert balanced(p, result(C0="t0-0 t0-1 t1-0 t1-1", C1="t0-2 t1-2"), "range").held
    assert not balanced(p, result(C0="t0-0 t0-1 t1-0 t1-1", C1="t0-2 t1-2"), "roundrobin").held


def test_range_balance_fails_when_one_topic_is_split_unevenly() -> None:
    p = problem({"t": 4}, member("a", "t"), member("b", "t"), member("c", "t"))
    v = balanced(p, result(a="t-0 t-1", b="t-2 t-3", c=""), "range")
    assert not v.held and set(v.findings[0].members) == {"a", "b", "c"}


def test_kafka_balance_allows_skew_a_member_cannot_take() -> None:
    # The StickyAssignor javadoc's example 2: C0{t0}, C1{t0,t1}, C2{t0,t1,t2}; t0/t1/t2 with 1/2/3 partitions.
    p = problem({"t0": 1, "t1": 2, "t2": 3}, member("C0", "t0"), member("C1", "t0 t1"), member("C2", "t0 t1 t2"))
    assert balanced(p, result(C0="t0-0", C1="t1-0 t1-1", C2="t2-0 t2-1 t2-2"), "sticky").held


def test_kafka_balance_fails_when_the_light_member_could_take_a_partition() -> None:
    # Round robin's answer to the same problem: C1 has 1, C2 has 4 and holds t1-1, which C1 could take.
    p = problem({"t0": 1, "t1": 2, "t2": 3}, member("C0", "t0"), member("C1", "t0 t1"), member("C2", "t0 t1 t2"))
    v = balanced(p, result(C0="t0-0", C1="t1-0", C2="t1-1 t2-0 t2-1 t2-2"), "sticky")
    assert not v.held
    assert v.findings[0].members == ("C1", "C2") and v.findings[0].partitions == tps("t1-1")


# ---------------------------------------------------------------- sticky


def test_sticky_holds_when_members_keep_their_quota() -> None:
    # Kafka's testStickiness shape: one member leaves, the others keep what they had.
    p = problem({"t": 3}, member("c0", "t", "t-0", 2), member("c2", "t", "t-1", 2), member("c3", "t", "t-2", 2))
    assert sticky(p, result(c0="t-0", c2="t-1", c3="t-2"), "sticky").held


def test_sticky_flags_a_member_that_lost_partitions_within_its_min_quota() -> None:
    p = problem({"t": 4}, member("a", "t", "t-0 t-1", 1), member("b", "t", "t-2 t-3", 1))
    v = sticky(p, result(a="t-0 t-2", b="t-1 t-3"), "sticky")
    assert not v.held
    assert any(f.members == ("a",) for f in v.findings)


def test_sticky_counts_the_members_kept_at_max_quota() -> None:
    # 5 partitions over 2 members: minQuota 2, maxQuota 3, one member at maxQuota. a owned 3, so a keeps 3.
    p = problem({"t": 5}, member("a", "t", "t-0 t-1 t-2", 1), member("b", "t", "t-3 t-4", 1))
    assert sticky(p, result(a="t-0 t-1 t-2", b="t-3 t-4"), "sticky").held
    v = sticky(p, result(a="t-0 t-1", b="t-2 t-3 t-4"), "sticky")
    assert not v.held and "maxQuota=3" in v.findings[-1].message


def test_sticky_counts_a_partition_kept_by_its_newest_claimer_despite_an_older_tie() -> None:
    # m2 (generation 8) lists t-0 twice: a tie, so no claim of t-0 is valid in every Kafka order. But m1
    # claims it with generation 10, and when Kafka meets m1 first it lets m1 keep t-0 (then m1 keeps
    # maxQuota = 2 of t-0, t-1, t-2): that must not count as m1 losing its quota.
    p = problem({"t": 6}, Subscription("m1", ("t",), tps("t-0", "t-1", "t-2"), 10),
                Subscription("m2", ("t",), (tp("t-0"), tp("t-0")), 8),
                member("a", "t"), member("b", "t"))  # 6 partitions over 4 members: minQuota 1, 2 at maxQuota 2
    claims = valid_claims(p.partitions_per_topic, p.subscriptions)
    assert tp("t-0") not in claims.owner and claims.tied == {"m1": frozenset(tps("t-0"))}
    assert sticky(p, result(m1="t-0 t-1", m2="t-2 t-3", a="t-4", b="t-5"), "sticky").held
    assert not sticky(p, result(m1="t-3", m2="t-0 t-4", a="t-1 t-5", b="t-2"), "sticky").held


def test_sticky_ignores_claims_of_topics_no_longer_subscribed() -> None:
    p = problem({"t": 2, "u": 2}, member("a", "t", "u-0 u-1", 1), member("b", "t", "", 1))
    assert sticky(p, result(a="t-0", b="t-1"), "sticky").held


def test_sticky_flags_a_swap_between_two_members() -> None:
    # Unequal subscriptions: only the no-swap promise applies.
    p = problem({"t": 2, "u": 1}, member("a", "t u", "t-0", 1), member("b", "t", "t-1", 1))
    v = sticky(p, result(a="t-1 u-0", b="t-0"), "sticky")
    assert not v.held
    assert v.findings[0].members == ("a", "b") and v.findings[0].partitions == tps("t-0", "t-1")


# ---------------------------------------------------------------- revoke-before-assign


def test_revoke_before_assign_holds_when_the_moving_partition_is_withheld() -> None:
    p = problem({"t": 2}, member("a", "t", "t-0 t-1", 1), member("b", "t", "", -1))
    assert revoke_before_assign(p, result(transferring="t-1", a="t-0", b=""), "cooperative-sticky").held


def test_revoke_before_assign_flags_a_partition_moved_in_one_round() -> None:
    p = problem({"t": 2}, member("a", "t", "t-0 t-1", 1), member("b", "t", "", -1))
    v = revoke_before_assign(p, result(a="t-0", b="t-1"), "cooperative-sticky")
    assert not v.held and v.findings[0].members == ("a", "b")


def test_revoke_before_assign_revokes_from_the_valid_owner_and_adds_against_claims_as_sent() -> None:
    # b's claim of t-0 is stale (generation 2 < 5) but b still holds t-0: handing it back to b is no
    # addition (Kafka's validateCooperativeAssignment), so no new overlap arises in this round.
    p = problem({"t": 1}, member("a", "t", "t-0", 5), member("b", "t", "t-0", 2))
    assert revoke_before_assign(p, result(a="", b="t-0"), "cooperative-sticky").held
    assert revoke_before_assign(p, result(a="t-0", b=""), "cooperative-sticky").held
    # c never claimed t-0: giving it to c while a (the valid owner) revokes it is a move in one round.
    p = problem({"t": 1}, member("a", "t", "t-0", 5), member("c", "t", "", 2))
    v = revoke_before_assign(p, result(a="", c="t-0"), "cooperative-sticky")
    assert not v.held and v.findings[0].members == ("a", "c")


# ---------------------------------------------------------------- revoke-only-moved


def test_revoke_only_moved_allows_moves_and_unsubscribed_topics() -> None:
    p = problem({"t": 2, "u": 1}, member("a", "t", "t-0 t-1 u-0", 1), member("b", "t u", "", -1))
    assert revoke_only_moved(p, result(transferring="t-1 u-0", a="t-0", b=""), "cooperative-sticky").held


def test_revoke_only_moved_flags_a_partition_dropped_for_nothing() -> None:
    p = problem({"t": 2}, member("a", "t", "t-0 t-1", 1), member("b", "t", "", -1))
    v = revoke_only_moved(p, result(a="t-0", b=""), "cooperative-sticky")
    assert not v.held and v.findings[0].partitions == tps("t-1")


# ---------------------------------------------------------------- promises


def test_promise_table() -> None:
    equal = problem({"t": 2}, member("a", "t"), member("b", "t"))
    unequal = problem({"t": 2, "u": 1}, member("a", "t"), member("b", "t u"))
    empty = result(a="", b="")
    assert promised("range", equal, empty) == {SINGLE_OWNER, SUBSCRIBED_ONLY, COMPLETE, BALANCED}
    assert promised("roundrobin", equal, empty) == {SINGLE_OWNER, SUBSCRIBED_ONLY, COMPLETE, BALANCED}
    assert promised("roundrobin", unequal, empty) == {SINGLE_OWNER, SUBSCRIBED_ONLY, COMPLETE}
    assert promised("sticky", unequal, empty) == {SINGLE_OWNER, SUBSCRIBED_ONLY, COMPLETE, BALANCED, STICKY}
    coop = {SINGLE_OWNER, SUBSCRIBED_ONLY, STICKY, REVOKE_BEFORE_ASSIGN, REVOKE_ONLY_MOVED}
    assert promised("cooperative-sticky", equal, empty) == coop | {COMPLETE, BALANCED}
    assert promised("cooperative-sticky", equal, result(transferring="t-0", a="", b="")) == coop
    with pytest.raises(ValueError, match="known: range"):
        promised("fair", equal, empty)


def test_check_round_runs_every_predicate_and_violated_keeps_only_promises() -> None:
    p = problem({"t": 2}, member("a", "t", "t-0 t-1", 1), member("b", "t", "", -1))
    moved = result(a="t-0", b="t-1")
    verdicts = check_round("range", p, moved)
    assert list(verdicts) == list(ROUND_INVARIANTS)
    assert not verdicts[REVOKE_BEFORE_ASSIGN].held
    assert violated("range", p, moved) == []  # eager: no revoke-* promise
    assert violated("cooperative-sticky", p, moved) == [REVOKE_BEFORE_ASSIGN]
