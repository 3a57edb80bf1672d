"""OffsetCommit on a classic group: ClassicGroup.validateOffsetCommit's checks in order, what is
stored, and the ``commit-old-generation`` mutant (Kafka 4.1.1, OffsetMetadataManager.commitOffset);
OffsetFetch (OffsetMetadataManager.fetchOffsets): what a consumer reads back when it is assigned a
partition."""

from __future__ import annotations

from dataclasses import replace

from model.classic.coordinator import DEAD, EMPTY, committed, member
from model.messages import NO_OFFSET, Errors, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse
from model.types import TopicPartition
from tests.model.test_coordinator_harness import SESSION, Harness, tp


def error(h: Harness, conn: str) -> Errors:
    r = h.reply(conn)
    assert isinstance(r, OffsetCommitResponse), r
    assert {e for _, e in r.partition_errors} <= {r.error}
    return r.error


def test_offset_commit_from_current_generation_in_stable_is_stored() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.commit("a#1", ids["a#1"], 1, offsets=((tp(0), 5), (tp(2), 7)))
    assert h.reply("a#1") == OffsetCommitResponse(Errors.NONE, ((tp(0), Errors.NONE), (tp(2), Errors.NONE)))
    h.commit("b#1", ids["b#1"], 1, offsets=((tp(0), 9),))
    assert committed(h.group) == {tp(0): 9, tp(2): 7}


def test_offset_commit_resets_the_session_in_stable() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1"])
    h.advance(9000)
    h.commit("a#1", ids["a#1"], 1)
    a = member(h.group, ids["a#1"])
    assert a is not None and a.heartbeat_deadline == h.now + SESSION


def test_offset_commit_old_generation_is_illegal_generation() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1"])
    h.commit("a#1", ids["a#1"], 0)
    assert error(h, "a#1") is Errors.ILLEGAL_GENERATION
    assert committed(h.group) == {}


def test_offset_commit_unknown_member_is_unknown_member_id_before_generation() -> None:
    h = Harness()
    h.stable_group(dynamic=["a#1"])
    h.commit("z#1", "zombie", 0)
    assert error(h, "z#1") is Errors.UNKNOWN_MEMBER_ID


def test_offset_commit_fenced_instance_id() -> None:
    h = Harness()
    h.join("c#1", instance_id="ic")
    h.settle()
    h.finish_sync({"c#1": "ic-1"})
    h.join("c#2", instance_id="ic")
    h.commit("c#1", "ic-1", 1, instance_id="ic")
    assert error(h, "c#1") is Errors.FENCED_INSTANCE_ID


def test_offset_commit_in_completing_rebalance_is_rebalance_in_progress() -> None:
    h = Harness()
    a = h.new_member("a#1")
    h.settle()
    h.commit("a#1", a, 1)
    assert error(h, "a#1") is Errors.REBALANCE_IN_PROGRESS
    h.commit("a#1", a, 0)  # the generation is checked before the state
    assert error(h, "a#1") is Errors.ILLEGAL_GENERATION


def test_offset_commit_in_preparing_rebalance_with_current_generation_is_accepted() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.join("a#1", ids["a#1"])
    h.advance(1000)
    h.commit("b#1", ids["b#1"], 1)  # the generation that is ending: its members may still commit
    assert error(h, "b#1") is Errors.NONE
    b = member(h.group, ids["b#1"])
    assert b is not None and b.heartbeat_deadline == h.now + SESSION


def test_simple_consumer_commit_on_empty_group_is_accepted() -> None:
    h = Harness()
    h.commit("s#1", "", -1, offsets=((TopicPartition("x", 3), 42),))
    assert error(h, "s#1") is Errors.NONE
    assert committed(h.group) == {TopicPartition("x", 3): 42}
    assert h.group.state is EMPTY


def test_commit_generation_minus_one_from_outside_a_live_group_is_unknown_member_id() -> None:
    h = Harness()
    h.stable_group(dynamic=["a#1"])
    h.commit("s#1", "", -1)
    assert error(h, "s#1") is Errors.UNKNOWN_MEMBER_ID


def test_commit_generation_minus_one_from_a_member_of_a_live_group_is_illegal_generation() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1"])
    h.commit("a#1", ids["a#1"], -1)
    assert error(h, "a#1") is Errors.ILLEGAL_GENERATION


def test_commit_with_a_generation_to_an_empty_group_is_unknown_member_id() -> None:
    h = Harness()
    h.commit("a#1", "a-1", 0)
    assert error(h, "a#1") is Errors.UNKNOWN_MEMBER_ID


def test_offset_commit_on_dead_group_is_coordinator_not_available() -> None:
    h = Harness()
    h.group = replace(h.group, state=DEAD)
    h.commit("s#1", "", -1)
    assert error(h, "s#1") is Errors.COORDINATOR_NOT_AVAILABLE


def test_commit_old_generation_mutant_accepts_a_stale_generation_only() -> None:
    h = Harness(mutants={"commit-old-generation"})
    ids = h.stable_group(dynamic=["a#1"])
    h.commit("a#1", ids["a#1"], 0, offsets=((tp(1), 3),))
    assert error(h, "a#1") is Errors.NONE
    assert committed(h.group) == {tp(1): 3}
    h.commit("z#1", "zombie", 0)  # identity is still checked
    assert error(h, "z#1") is Errors.UNKNOWN_MEMBER_ID


# --- OffsetFetch ------------------------------------------------------------------------------


def fetch(h: Harness, conn: str, *partitions: TopicPartition) -> OffsetFetchResponse:
    before, seq = h.group, len(h.all_events)
    h.send(conn, OffsetFetchRequest(tuple(partitions)))
    assert h.group == before, "OffsetFetch must not change the group"
    assert len(h.all_events) == seq, "OffsetFetch must not emit events"
    r = h.reply(conn)
    assert isinstance(r, OffsetFetchResponse), r
    return r


def test_offset_fetch_returns_the_last_committed_offset_and_no_offset_elsewhere() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.commit("a#1", ids["a#1"], 1, offsets=((tp(0), 5), (tp(2), 7)))
    h.commit("b#1", ids["b#1"], 1, offsets=((tp(0), 9),))
    r = fetch(h, "b#1", tp(2), tp(1), tp(0), TopicPartition("other", 0))
    assert r == OffsetFetchResponse(Errors.NONE, ((tp(2), 7), (tp(1), NO_OFFSET), (tp(0), 9),
                                                  (TopicPartition("other", 0), NO_OFFSET)))


def test_offset_fetch_on_a_group_that_never_committed_is_all_no_offset() -> None:
    h = Harness()
    assert fetch(h, "a#1", tp(0), tp(1)) == OffsetFetchResponse(Errors.NONE, ((tp(0), NO_OFFSET), (tp(1), NO_OFFSET)))


def test_offset_fetch_checks_no_member_or_generation_in_any_live_state() -> None:
    """OffsetFetch v8 names no member and no generation: anyone reads the offsets, mid-rebalance too."""
    h = Harness()
    ids = h.stable_group(dynamic=["a#1", "b#1"])
    h.commit("a#1", ids["a#1"], 1, offsets=((tp(3), 11),))
    expected = OffsetFetchResponse(Errors.NONE, ((tp(3), 11),))
    assert fetch(h, "stranger#1", tp(3)) == expected  # Stable, not a member
    h.join("a#1", ids["a#1"])
    assert h.group.state.value == "PreparingRebalance"
    assert fetch(h, "b#1", tp(3)) == expected
    h.join("b#1", ids["b#1"])
    assert h.group.state.value == "CompletingRebalance"
    assert fetch(h, "b#1", tp(3)) == expected


def test_offset_fetch_sees_a_simple_consumers_commit_on_an_empty_group() -> None:
    h = Harness()
    h.commit("s#1", "", -1, offsets=((TopicPartition("x", 3), 42),))
    assert fetch(h, "s#1", TopicPartition("x", 3)) == OffsetFetchResponse(Errors.NONE, ((TopicPartition("x", 3), 42),))


def test_offset_fetch_does_not_see_a_rejected_commit() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1"])
    h.commit("a#1", ids["a#1"], 1, offsets=((tp(0), 5),))
    h.commit("a#1", ids["a#1"], 0, offsets=((tp(0), 99),))  # ILLEGAL_GENERATION
    assert fetch(h, "a#1", tp(0)).offsets == ((tp(0), 5),)


def test_offset_fetch_does_not_count_as_a_heartbeat() -> None:
    h = Harness()
    ids = h.stable_group(dynamic=["a#1"])
    deadline = member(h.group, ids["a#1"]).heartbeat_deadline  # type: ignore[union-attr]
    h.advance(SESSION // 2)
    fetch(h, "a#1", tp(0))
    a = member(h.group, ids["a#1"])
    assert a is not None and a.heartbeat_deadline == deadline


def test_offset_fetch_on_dead_group_is_no_offset_everywhere_without_error() -> None:
    """ClassicGroup.validateOffsetFetch throws GroupIdNotFoundException for Dead, and fetchOffsets
    answers every partition INVALID_OFFSET (failAllPartitions), not COORDINATOR_NOT_AVAILABLE."""
    h = Harness()
    ids = h.stable_group(dynamic=["a#1"])
    h.commit("a#1", ids["a#1"], 1, offsets=((tp(0), 5),))
    h.group = replace(h.group, state=DEAD)
    assert fetch(h, "a#1", tp(0), tp(1)) == OffsetFetchResponse(Errors.NONE, ((tp(0), NO_OFFSET), (tp(1), NO_OFFSET)))
