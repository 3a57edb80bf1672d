"""Random request sequences against the coordinator model: the group state is always legal.

A hypothesis state machine sends JoinGroup, SyncGroup, Heartbeat, LeaveGroup and OffsetCommit --
some from well-behaved members (their own id, generation and instance id), some garbled (stale
generations, unknown or fenced ids, other protocols, bad session timeouts) -- and lets time pass.
After every step it checks, independently of the model's own assertions:

- every status change (read from the trace events) is an edge of Kafka's table, the chain of them
  starts at the previous state and ends at the current one;
- the generation never decreases;
- the leader is a member, or there is none exactly when there are no members;
- every member of a CompletingRebalance / Stable group belongs to the current generation;
- timers and parked requests exist only in the states that own them;
- replies go only to the request's connection or to connections with a parked request of that kind,
  and every request is answered or parked.

A failing example prints the rule calls that replay it. A last test checks that random runs reach
every edge of the table outside Dead, so that these checks are not vacuous.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from model.classic.coordinator import (
    ALLOWED_PREDECESSORS,
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    CoordinatorConfig,
    GroupState,
    ModelPreconditionError,
    expire,
    initial_group,
    receive,
)
from model.classic.coordinator.state import is_pending_member
from model.messages import (
    ConsumerProtocolSubscription,
    Errors,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    Request,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.types import TopicPartition

CONNS = ["a#1", "a#2", "b#1", "b#2", "c#1", "d#1", "e#1", "f#1"]
INSTANCES = [None, None, "ia", "ib"]
SUB = ConsumerProtocolSubscription(topics=("t",))
PROTOCOLS = [
    (("range", SUB),),
    (("range", SUB),),
    (("roundrobin", SUB),),
    (("range", SUB), ("roundrobin", SUB)),
    (("roundrobin", SUB), ("range", SUB)),
    (("range", ConsumerProtocolSubscription(topics=("t", "u"))),),
    (),
]
PARTITIONS = [TopicPartition("t", p) for p in range(4)]
CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=2000, new_member_join_timeout_ms=25_000, max_group_size=4)
EDGES_REACHED: set[tuple[str, str]] = set()
RESPONSE_OF = {JoinGroupRequest: JoinGroupResponse, SyncGroupRequest: SyncGroupResponse,
               HeartbeatRequest: HeartbeatResponse, LeaveGroupRequest: LeaveGroupResponse,
               OffsetCommitRequest: OffsetCommitResponse}


class CoordinatorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.group = initial_group(CONFIG)
        self.now = 0
        self.seen_ids: list[str] = ["ghost"]
        self.conn_of: dict[str, str] = {}  # member id -> the connection it was handed out on
        self.last_replies: tuple[Any, ...] = ()
        self.mutants: frozenset[str] = frozenset()

    # --- drawing parts of requests ----------------------------------------------------------

    def draw_identity(self, data: st.DataObject) -> tuple[str, str | None]:
        """Mostly a current member with its own instance id; sometimes anything."""
        current = [(m.member_id, m.instance_id) for m in self.group.members]
        pending = [(p.member_id, None) for p in self.group.pending_members]
        choices = current + pending
        if choices and data.draw(st.integers(0, 3)) > 0:
            return data.draw(st.sampled_from(choices))
        return data.draw(st.sampled_from(["", *self.seen_ids])), data.draw(st.sampled_from(INSTANCES))

    def draw_generation(self, data: st.DataObject) -> int:
        return data.draw(st.sampled_from([self.group.generation] * 3 + [self.group.generation - 1, -1]))

    # --- rules ----------------------------------------------------------------------------

    @rule(data=st.data(), conn=st.sampled_from(CONNS), fresh=st.booleans(),
          protocols=st.sampled_from(PROTOCOLS), session=st.sampled_from([10_000, 20_000, 20_000, 5000]),
          rebalance=st.sampled_from([5000, 15_000, 30_000]))
    def join(self, data: st.DataObject, conn: str, fresh: bool,
             protocols: tuple[tuple[str, ConsumerProtocolSubscription], ...], session: int, rebalance: int) -> None:
        if fresh:
            member_id, instance = "", data.draw(st.sampled_from(INSTANCES))
        else:
            member_id, instance = self.draw_identity(data)
        request = JoinGroupRequest(member_id, instance, session, rebalance, protocols)
        try:
            self.deliver(conn, request)
        except ModelPreconditionError:
            # Kafka fails internally (IllegalStateException) on exactly this request, once the
            # session timeout, group size and protocol checks have passed.
            assert instance is not None and is_pending_member(self.group, member_id)

    @rule(data=st.data(), conn=st.sampled_from(CONNS), protocol=st.sampled_from([None, None, "range", "other"]))
    def sync(self, data: st.DataObject, conn: str, protocol: str | None) -> None:
        member_id, instance = self.draw_identity(data)
        assignments: tuple[tuple[str, tuple[TopicPartition, ...]], ...] = ()
        if member_id == self.group.leader:
            owners = [m.member_id for m in self.group.members] + ["ghost"]
            drawn = data.draw(st.lists(st.sampled_from(owners), min_size=len(PARTITIONS), max_size=len(PARTITIONS)))
            assignments = tuple((owner, tuple(tp for tp, o in zip(PARTITIONS, drawn, strict=True) if o == owner))
                                for owner in sorted(set(drawn)))
        self.deliver(conn, SyncGroupRequest(member_id, instance, self.draw_generation(data), protocol, assignments))

    @rule(data=st.data(), conn=st.sampled_from(CONNS))
    def heartbeat(self, data: st.DataObject, conn: str) -> None:
        member_id, instance = self.draw_identity(data)
        self.deliver(conn, HeartbeatRequest(member_id, instance, self.draw_generation(data)))

    @rule(data=st.data(), conn=st.sampled_from(CONNS), admin=st.booleans())
    def leave(self, data: st.DataObject, conn: str, admin: bool) -> None:
        member_id, instance = self.draw_identity(data)
        identities = [("", data.draw(st.sampled_from(INSTANCES)))] if admin else []
        self.deliver(conn, LeaveGroupRequest(((member_id, instance), *identities)))

    @rule(data=st.data(), conn=st.sampled_from(CONNS), offset=st.integers(0, 100))
    def commit(self, data: st.DataObject, conn: str, offset: int) -> None:
        member_id, instance = self.draw_identity(data)
        if data.draw(st.booleans()):
            member_id, instance = "", None
        request = OffsetCommitRequest(member_id, instance, self.draw_generation(data), ((PARTITIONS[0], offset),))
        self.deliver(conn, request)

    @rule(conn=st.sampled_from(CONNS), instance=st.sampled_from(INSTANCES), protocols=st.sampled_from(PROTOCOLS[:5]))
    def client_joins(self, conn: str, instance: str | None,
                     protocols: tuple[tuple[str, ConsumerProtocolSubscription], ...]) -> None:
        """A new consumer starts: JoinGroup with no id, and again with the id it is handed (KIP-394)."""
        self.deliver(conn, JoinGroupRequest("", instance, 20_000, 15_000, protocols))
        for reply in self.last_replies:
            r = reply.response
            if reply.conn == conn and isinstance(r, JoinGroupResponse) and r.error is Errors.MEMBER_ID_REQUIRED:
                self.deliver(conn, JoinGroupRequest(r.member_id, None, 20_000, 15_000, protocols))

    @rule(data=st.data())
    def member_does_the_right_thing(self, data: st.DataObject) -> None:
        """A member behaves as a client would: rejoins in PreparingRebalance, syncs in
        CompletingRebalance (the leader with an assignment), heartbeats otherwise; a pending member
        comes back with its id."""
        pending = [p.member_id for p in self.group.pending_members]
        choices = [m.member_id for m in self.group.members] + pending
        if not choices:
            return
        member_id = data.draw(st.sampled_from(choices))
        conn = self.conn_of.get(member_id, "a#1")
        if member_id in pending:
            self.deliver(conn, JoinGroupRequest(member_id, None, 20_000, 15_000, PROTOCOLS[0]))
            return
        m = next(x for x in self.group.members if x.member_id == member_id)
        g = self.group
        if g.state is PREPARING_REBALANCE and m.awaiting_join is None:
            request: Request = JoinGroupRequest(member_id, m.instance_id, m.session_timeout_ms,
                                                m.rebalance_timeout_ms, m.protocols)
        elif (g.state is COMPLETING_REBALANCE and m.awaiting_sync is None
              and not (g.leader == member_id and self.followers_still_to_sync() and data.draw(st.booleans()))):
            # (a leader often syncs last, so that followers are parked when something intervenes)
            assignments = tuple((x.member_id, (PARTITIONS[i],)) for i, x in enumerate(g.members[:4]))
            request = SyncGroupRequest(member_id, m.instance_id, g.generation, g.protocol_name,
                                       assignments if g.leader == member_id else ())
        else:
            request = HeartbeatRequest(member_id, m.instance_id, g.generation)
        self.deliver(conn, request)

    def followers_still_to_sync(self) -> bool:
        return any(m.awaiting_sync is None and m.member_id != self.group.leader for m in self.group.members)

    @rule(ms=st.sampled_from([0, 500, 2000, 5000, 9000, 15_000, 31_000]))
    def tick(self, ms: int) -> None:
        self.now += ms
        before = self.group
        self.group, replies, events = expire(self.group, self.now, CONFIG)
        self.check_step(before, None, None, replies, events)

    # --- checking one step ------------------------------------------------------------------

    def deliver(self, conn: str, request: Request) -> None:
        before = self.group
        self.group, replies, events = receive(self.group, conn, request, self.now, CONFIG, self.mutants)
        self.last_replies = replies
        self.check_step(before, conn, request, replies, events)

    def check_step(self, before: Any, conn: str | None, request: Request | None,
                   replies: tuple[Any, ...], events: tuple[dict[str, Any], ...]) -> None:
        after = self.group
        # Status changes, from the events alone.
        current = before.state
        for e in events:
            assert e["group"] == CONFIG.group_id and "member" not in e
            if "state" in e:
                target = GroupState(e["state"])
                assert e["previous_state"] == current.value
                assert current in ALLOWED_PREDECESSORS[target], f"{current.value} -> {target.value}"
                EDGES_REACHED.add((current.value, target.value))
                current = target
        assert current is after.state
        assert after.generation >= before.generation
        # Replies: to the request's connection, or to a parked request of the same kind.
        parked_join = {m.awaiting_join for m in before.members if m.awaiting_join is not None}
        parked_sync = {m.awaiting_sync for m in before.members if m.awaiting_sync is not None}
        for reply in replies:
            if reply.conn == conn and request is not None and isinstance(reply.response, RESPONSE_OF[type(request)]):
                continue
            expected = parked_join if isinstance(reply.response, JoinGroupResponse) else parked_sync
            assert isinstance(reply.response, JoinGroupResponse | SyncGroupResponse)
            assert reply.conn in expected, f"reply to {reply.conn}, which had no parked request: {reply}"
        if request is not None:
            answered = any(r.conn == conn and isinstance(r.response, RESPONSE_OF[type(request)]) for r in replies)
            parked_now = {m.awaiting_join for m in after.members} | {m.awaiting_sync for m in after.members}
            assert answered or (isinstance(request, JoinGroupRequest | SyncGroupRequest) and conn in parked_now)
        for reply in replies:
            if isinstance(reply.response, JoinGroupResponse) and reply.response.member_id:
                self.seen_ids.append(reply.response.member_id)
                self.conn_of.setdefault(reply.response.member_id, reply.conn)
        for m in after.members:
            if m.awaiting_join is not None:
                self.conn_of[m.member_id] = m.awaiting_join

    # --- invariants of every state ------------------------------------------------------------

    @invariant()
    def group_is_legal(self) -> None:
        g = self.group
        ids = [m.member_id for m in g.members]
        assert ids == sorted(set(ids)), "member ids are unique"
        instances = [m.instance_id for m in g.members if m.instance_id is not None]
        assert len(instances) == len(set(instances)), "one member per instance id"
        assert not set(ids) & {p.member_id for p in g.pending_members}
        assert g.state is not DEAD
        if g.members:
            assert g.leader in ids
        else:
            assert g.leader is None
        if g.state is EMPTY:
            assert not g.members and g.protocol_name is None
        if g.state in (COMPLETING_REBALANCE, STABLE):
            assert all(m.joined_generation == g.generation for m in g.members)
            assert g.protocol_name is not None
            assert all(any(name == g.protocol_name for name, _ in m.protocols) for m in g.members)
        assert (g.join_timer is not None) == (g.state is PREPARING_REBALANCE)
        if g.sync_timer is not None:
            assert g.state in (COMPLETING_REBALANCE, STABLE) and g.sync_timer.generation == g.generation
        assert all(m.awaiting_join is None for m in g.members) or g.state is PREPARING_REBALANCE
        assert all(m.awaiting_sync is None for m in g.members) or g.state is COMPLETING_REBALANCE
        assert all(m.is_new is False for m in g.members) or g.state is PREPARING_REBALANCE


class MutatedCoordinatorMachine(CoordinatorMachine):
    """The same checks hold with the coordinator mutants switched on: they break promises to clients
    (fencing, no-rebalance restarts), not the shape of the state machine."""

    def __init__(self) -> None:
        super().__init__()
        self.mutants = frozenset({"commit-old-generation", "static-rejoin-rebalances"})


SETTINGS = settings(max_examples=120, stateful_step_count=50,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def test_random_request_sequences_keep_the_group_legal() -> None:
    run_state_machine_as_test(CoordinatorMachine, settings=SETTINGS)


def test_random_request_sequences_keep_the_group_legal_under_mutants() -> None:
    run_state_machine_as_test(MutatedCoordinatorMachine, settings=settings(SETTINGS, max_examples=40))


def test_random_runs_reach_every_edge_outside_dead() -> None:
    # A coverage claim about the rules, not about one lucky draw: derandomized, so a run that misses an
    # edge misses it every time (it once missed Stable -> PreparingRebalance on an unlucky random seed).
    EDGES_REACHED.clear()
    run_state_machine_as_test(CoordinatorMachine, settings=settings(SETTINGS, derandomize=True, database=None))
    table = {(before.value, target.value) for target, befores in ALLOWED_PREDECESSORS.items()
             for before in befores if DEAD not in (before, target)}
    assert table - EDGES_REACHED == set()
