"""A small driver for the coordinator model (used by the other test_coordinator* modules), and tests
of the properties every caller of the model relies on: states are hashable values, runs are
deterministic, and every request is answered or parked."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from model.classic.coordinator import (
    CoordinatorConfig,
    Group,
    Reply,
    expire,
    initial_group,
    next_deadline,
    receive,
)
from model.classic.coordinator.state import PREPARING_REBALANCE, STABLE, member
from model.messages import (
    ConsumerProtocolSubscription,
    Errors,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitRequest,
    Request,
    Response,
    SyncGroupRequest,
)
from model.types import TopicPartition

SUB = ConsumerProtocolSubscription(topics=("t",))
SUB2 = ConsumerProtocolSubscription(topics=("t", "u"))
RANGE = (("range", SUB),)
ROUNDROBIN = (("roundrobin", SUB),)
RANGE_THEN_RR = (("range", SUB), ("roundrobin", SUB))
RR_THEN_RANGE = (("roundrobin", SUB), ("range", SUB))

SESSION = 10_000
REBALANCE = 30_000


def tp(p: int, topic: str = "t") -> TopicPartition:
    return TopicPartition(topic, p)


class Harness:
    """Drives one group: sends requests, advances the clock, remembers every reply and event."""

    def __init__(self, config: CoordinatorConfig | None = None, mutants: Iterable[str] = ()) -> None:
        self.config = config or CoordinatorConfig()
        self.mutants = frozenset(mutants)
        self.group: Group = initial_group(self.config)
        self.now = 0
        self.replies: list[Reply] = []  # of the last call
        self.events: list[dict[str, Any]] = []  # of the last call
        self.history: list[Reply] = []
        self.all_events: list[dict[str, Any]] = []

    # --- sending and time ----------------------------------------------------------------

    def send(self, conn: str, request: Request) -> list[Reply]:
        self.group, replies, events = receive(self.group, conn, request, self.now, self.config, self.mutants)
        return self._record(replies, events)

    def advance(self, ms: int) -> list[Reply]:
        """Move the clock forward by ``ms`` and fire every timer due."""
        self.now += ms
        self.group, replies, events = expire(self.group, self.now, self.config, self.mutants)
        return self._record(replies, events)

    def advance_to_next_deadline(self) -> list[Reply]:
        deadline = next_deadline(self.group)
        assert deadline is not None, "no timer pending"
        return self.advance(deadline - self.now)

    def settle(self) -> list[Reply]:
        """Fire timers until the join phase is over (at most 20)."""
        out: list[Reply] = []
        for _ in range(20):
            if self.group.state is not PREPARING_REBALANCE:
                return out
            out += self.advance_to_next_deadline()
        raise AssertionError("the join phase never completed")

    def _record(self, replies: Sequence[Reply], events: Sequence[dict[str, Any]]) -> list[Reply]:
        self.replies = list(replies)
        self.events = list(events)
        self.history += replies
        self.all_events += events
        return self.replies

    def reply(self, conn: str) -> Response:
        """The one reply the last call sent on ``conn``."""
        found = [r.response for r in self.replies if r.conn == conn]
        assert len(found) == 1, f"expected one reply on {conn}, got {found} (all: {self.replies})"
        return found[0]

    def no_reply(self, conn: str) -> None:
        assert all(r.conn != conn for r in self.replies), f"unexpected reply on {conn}: {self.replies}"

    def events_named(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["name"] == name]

    # --- requests ------------------------------------------------------------------------

    def join(self, conn: str, member_id: str = "", instance_id: str | None = None,
             protocols: tuple[tuple[str, ConsumerProtocolSubscription], ...] = RANGE,
             session: int = SESSION, rebalance: int = REBALANCE, reason: str = "") -> list[Reply]:
        return self.send(conn, JoinGroupRequest(member_id, instance_id, session, rebalance, protocols, reason))

    def sync(self, conn: str, member_id: str, generation: int | None = None,
             assignments: tuple[tuple[str, tuple[TopicPartition, ...]], ...] = (),
             instance_id: str | None = None, protocol_name: str | None = None) -> list[Reply]:
        gen = self.group.generation if generation is None else generation
        return self.send(conn, SyncGroupRequest(member_id, instance_id, gen, protocol_name, assignments))

    def heartbeat(self, conn: str, member_id: str, generation: int | None = None,
                  instance_id: str | None = None) -> list[Reply]:
        gen = self.group.generation if generation is None else generation
        return self.send(conn, HeartbeatRequest(member_id, instance_id, gen))

    def leave(self, conn: str, *identities: tuple[str, str | None]) -> list[Reply]:
        return self.send(conn, LeaveGroupRequest(tuple(identities)))

    def commit(self, conn: str, member_id: str, generation: int,
               offsets: tuple[tuple[TopicPartition, int], ...] = ((TopicPartition("t", 0), 5),),
               instance_id: str | None = None) -> list[Reply]:
        return self.send(conn, OffsetCommitRequest(member_id, instance_id, generation, offsets))

    # --- common sequences ----------------------------------------------------------------

    def new_member(self, conn: str, protocols: tuple[tuple[str, ConsumerProtocolSubscription], ...] = RANGE,
                   rebalance: int = REBALANCE, session: int = SESSION) -> str:
        """KIP-394's two steps: MEMBER_ID_REQUIRED, then the JoinGroup with that id (parked or answered)."""
        self.join(conn, protocols=protocols, rebalance=rebalance, session=session)
        first = self.reply(conn)
        assert isinstance(first, JoinGroupResponse) and first.error is Errors.MEMBER_ID_REQUIRED, first
        self.join(conn, first.member_id, protocols=protocols, rebalance=rebalance, session=session)
        return first.member_id

    def stable_group(self, dynamic: Sequence[str] = (), static: Sequence[tuple[str, str]] = (),
                     partitions: int = 4, session: int = SESSION) -> dict[str, str]:
        """Bring an Empty group to Stable: members join (dynamic by conn, static as (conn, instance
        id)), the join phase completes, the leader assigns ``partitions`` round-robin, all sync.
        Returns conn -> member id."""
        ids: dict[str, str] = {}
        for conn in dynamic:
            ids[conn] = self.new_member(conn, session=session)
        for conn, instance in static:
            self.join(conn, instance_id=instance, session=session)
            ids[conn] = f"{instance}-{self.group.member_id_seq}"
        self.settle()
        return self.finish_sync(ids, partitions)

    def finish_sync(self, ids: dict[str, str], partitions: int = 4) -> dict[str, str]:
        """The join phase has just completed: everyone syncs, the leader with an assignment."""
        leader = self.group.leader
        assert leader is not None
        order = sorted(ids.values())
        assignment = tuple((mid, tuple(tp(p) for p in range(partitions) if order[p % len(order)] == mid))
                           for mid in order)
        by_id = {mid: conn for conn, mid in ids.items()}
        for mid in order:
            if mid != leader:
                self.sync(by_id[mid], mid, instance_id=self.instance_of(mid))
        self.sync(by_id[leader], leader, assignments=assignment, instance_id=self.instance_of(leader))
        assert self.group.state is STABLE, self.group.state
        return ids

    def instance_of(self, member_id: str) -> str | None:
        m = member(self.group, member_id)
        return None if m is None else m.instance_id


# --- tests of what every caller relies on ---------------------------------------------------


def _scenario(h: Harness) -> None:
    ids = h.stable_group(dynamic=["a#1", "b#1"], static=[("c#1", "ic")])
    h.commit("a#1", ids["a#1"], h.group.generation)
    h.join("c#2", instance_id="ic")
    h.leave("b#1", (ids["b#1"], None))
    h.advance(40_000)


def test_runs_are_deterministic_and_states_are_hashable_values() -> None:
    first, second = Harness(), Harness()
    _scenario(first)
    _scenario(second)
    assert first.group == second.group
    assert hash(first.group) == hash(second.group)
    assert first.history == second.history
    assert first.all_events == second.all_events
    assert {first.group, second.group} == {first.group}


def test_generated_member_ids_are_client_id_or_instance_id_and_a_counter() -> None:
    h = Harness()
    h.join("alpha#1")
    first = h.reply("alpha#1")
    h.join("alpha#2", instance_id="inst")
    assert isinstance(first, JoinGroupResponse)
    assert first.member_id == "alpha-1"
    assert member(h.group, "inst-2") is not None


def test_every_reply_goes_to_the_connection_of_its_request() -> None:
    h = Harness()
    h.join("a#1")
    assert [r.conn for r in h.replies] == ["a#1"]
    a = h.reply("a#1")
    assert isinstance(a, JoinGroupResponse)
    h.join("a#1", a.member_id)
    h.no_reply("a#1")  # parked
    h.join("b#1")
    assert [r.conn for r in h.replies] == ["b#1"]
    h.settle()
    assert sorted(r.conn for r in h.replies) == ["a#1"]  # b never came back with its id
