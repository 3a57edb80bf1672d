"""The abstraction function: a state of ``model.system`` (plus a little history) as a symbolic valuation.

A proof about the symbolic model (``model.proofs.protocol_model``) says something about the executable
model only through this map: every concrete state is read as a valuation of the symbolic fields, and
``model.proofs.replay`` checks that every concrete step is a short sequence of symbolic micro-steps
between the two valuations. The map is written out field by field below, each line saying where in
the concrete state the value comes from.

Elements. K: one element per consumer incarnation, named by its connection (``a#1``), and one per
member id a dynamic consumer abandoned without leaving (``ghost:<member id>``); P: the partitions
(``orders-0``); I: the static instance ids.

History. A few symbolic fields are not in the concrete state and are kept by a :class:`Tracker`
fed with every concrete transition: which element holds each member id (the connection whose
JoinGroup created it; a ghost once abandoned), each incarnation's ownership generation (the
generation of its last ``partitions_assigned``), the assignment the coordinator stored for each
generation and which of its partitions were *added* (not claimed by their assignee), the generation
the coordinator last rejected for each consumer, the generation of each SyncGroup answer in
flight, and whether a commit from an old generation was ever accepted. History variables constrain
nothing; they only name facts of the run so far.

Fields that mean nothing in a state (the payload of a message that is not in flight, the client
fields of a dead incarnation) are left out of the valuation: the replay leaves them free.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from model import events as ev
from model import system as sy
from model.classic import coordinator as co
from model.classic import member as mb
from model.messages import (
    NO_GENERATION,
    Errors,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.types import RebalanceProtocol, TopicPartition

COOPERATIVE_STICKY = "cooperative-sticky"

Value = Any  # bool | int | str (an enum constant's name, or an element name)
Table = dict[tuple[Any, ...], Value]


@dataclass
class Valuation:
    """Field -> {argument tuple -> value}; constants under the key ``()``. Missing entries are free."""

    ks: list[str]
    ps: list[str]
    insts: list[str]
    fields: dict[str, Table] = field(default_factory=dict)

    def put(self, name: str, args: tuple[Any, ...], value: Value) -> None:
        self.fields.setdefault(name, {})[args] = value

    def get(self, name: str, args: tuple[Any, ...] = ()) -> Value:
        return self.fields.get(name, {}).get(args)


def tp_name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


@dataclass
class Tracker:
    """The history the abstraction needs, updated by :meth:`observe` after every concrete step."""

    holder: dict[str, str] = field(default_factory=dict)  # member id -> element
    og: dict[str, int] = field(default_factory=dict)  # conn -> ownership generation
    asg: dict[tuple[int, str], str] = field(default_factory=dict)  # (generation, partition) -> element
    added: set[tuple[int, str]] = field(default_factory=set)
    rej: dict[str, int] = field(default_factory=dict)
    rs_gen: dict[str, int] = field(default_factory=dict)  # conn -> generation of its SyncGroup answer
    bad_commit: bool = False
    ghosts: set[str] = field(default_factory=set)
    incarnations: dict[str, tuple[str, Any]] = field(default_factory=dict)  # conn -> (name, MemberConfig)

    def copy(self) -> Tracker:
        return Tracker(dict(self.holder), dict(self.og), dict(self.asg), set(self.added), dict(self.rej),
                       dict(self.rs_gen), self.bad_commit, set(self.ghosts), dict(self.incarnations))

    # -- feeding -----------------------------------------------------------------------------

    def observe(self, before: sy.SystemState, action: sy.Action, after: sy.SystemState,
                events: Iterable[dict[str, Any]]) -> None:
        for _, p in after.processes:
            for i in range(1, p.incarnation + 1):
                self.incarnations.setdefault(f"{p.config.name}#{i}", (p.config.name, p.config))
        old_ids = _entry_ids(before.group)
        conn = action.conn if isinstance(action, sy.DeliverRequest) else None
        for mid in _entry_ids(after.group) - old_ids:
            self.holder.setdefault(mid, conn if conn is not None else f"ghost:{mid}")
        if isinstance(action, sy.DeliverRequest):
            self._request_delivered(before, action, after)
        if isinstance(action, sy.MemberPolls):
            self._abandoned(before, action.member, after)
        if isinstance(action, sy.DeliverResponse):
            self._response_delivered(before, action, after)
        events = list(events)
        for e in events:
            if e["name"] == ev.PARTITIONS_ASSIGNED and e.get("member") is not None:
                m = sy.running_member(after, e["member"])
                if m is not None:
                    self.og[m.conn] = int(e.get("generation", NO_GENERATION))
            if e["name"] == ev.COORDINATOR_MEMBER_REMOVED and e.get("reason") == "fenced" and e.get("replaced_by"):
                old, new = e["member_id"], e["replaced_by"]
                old_el = self.holder.get(old)
                self.holder.setdefault(new, self.holder.get(new, conn or f"ghost:{new}"))
                gen = before.group.generation  # the replacement precedes any join completion in this step
                for key, el in list(self.asg.items()):
                    if key[0] == gen and el == old_el:
                        self.asg[key] = self.holder[new]
        self._responses_created(before, after)

    def _request_delivered(self, before: sy.SystemState, action: sy.DeliverRequest, after: sy.SystemState) -> None:
        request = before.network.head_request(action.conn)
        g0, g1 = before.group, after.group
        if isinstance(request, SyncGroupRequest) and g0.state is co.COMPLETING_REBALANCE \
                and g1.state is co.STABLE and g1.generation == g0.generation:
            # the leader's SyncGroup stored generation g's assignment
            gen = g1.generation
            coop = g1.protocol_name == COOPERATIVE_STICKY
            for m in g1.members:
                el = self.holder.get(m.member_id, f"ghost:{m.member_id}")
                claimed = set(claims_of(m))
                for tp in m.assignment:
                    self.asg[(gen, tp_name(tp))] = el
                    if coop and tp not in claimed:
                        self.added.add((gen, tp_name(tp)))
        if isinstance(request, OffsetCommitRequest):
            answers = [r.response for r in _new_responses(before, after, action.conn)]
            accepted = any(isinstance(r, OffsetCommitResponse) and r.error is Errors.NONE for r in answers)
            if accepted and request.generation >= 0 and request.generation != g0.generation:
                self.bad_commit = True

    def _abandoned(self, before: sy.SystemState, name: str, after: sy.SystemState) -> None:
        m0, m1 = sy.running_member(before, name), sy.running_member(after, name)
        if m0 is None or m1 is None or m0.conn != m1.conn or not m0.config.dynamic:
            return
        old = m0.generation.member_id
        if not old or m1.generation.member_id == old:
            return
        if old in _entry_ids(after.group) and self.holder.get(old) == m0.conn:
            ghost = f"ghost:{old}"
            self.holder[old] = ghost
            self.ghosts.add(ghost)
            gen = before.group.generation
            for key, el in list(self.asg.items()):
                if key[0] == gen and el == m0.conn:
                    self.asg[key] = ghost

    def _response_delivered(self, before: sy.SystemState, action: sy.DeliverResponse, after: sy.SystemState) -> None:
        response = before.network.head_response(action.conn)
        m0 = sy.member_by_conn(before, action.conn)
        if m0 is None:
            return
        g = m0.generation.generation_id
        if isinstance(response, SyncGroupResponse) and response.error is Errors.ILLEGAL_GENERATION \
                and m0.join is mb.JoinFuture.SYNC and g != NO_GENERATION:
            self.rej[action.conn] = g
        # the coordinator's answer, about the generation the consumer had when it sent the heartbeat, is what
        # records the rejection -- not whether the consumer reset (that would make the tie circular)
        if isinstance(response, HeartbeatResponse) and response.error is Errors.ILLEGAL_GENERATION \
                and g != NO_GENERATION and m0.heartbeats_in_flight and m0.heartbeats_in_flight[0] == m0.generation:
            self.rej[action.conn] = g

    def _responses_created(self, before: sy.SystemState, after: sy.SystemState) -> None:
        for conn, _queue in after.network.responses:
            for r in _new_responses(before, after, conn):
                if isinstance(r.response, SyncGroupResponse) and r.response.error is Errors.NONE:
                    self.rs_gen[conn] = after.group.generation


@dataclass
class _Reply:
    response: Any


def _new_responses(before: sy.SystemState, after: sy.SystemState, conn: str) -> list[_Reply]:
    q0 = dict(before.network.responses).get(conn, ())
    q1 = dict(after.network.responses).get(conn, ())
    # responses are appended; a delivery pops the head
    if q1[: len(q0)] == q0:
        return [_Reply(r) for r in q1[len(q0):]]
    if q1[: len(q0) - 1] == q0[1:]:
        return [_Reply(r) for r in q1[len(q0) - 1:]]
    return [_Reply(r) for r in q1 if r not in q0]


def _entry_ids(group: co.Group) -> set[str]:
    return {m.member_id for m in group.members} | {p.member_id for p in group.pending_members}


def claims_of(m: co.Member) -> tuple[TopicPartition, ...]:
    """The owned partitions a member entry's metadata claims: the cooperative-sticky protocol's if it
    lists one, else its first protocol's (the sticky assignor's carry its memory instead)."""
    return claims_in(m.protocols)


def claims_in(protocols: tuple[tuple[str, Any], ...]) -> tuple[TopicPartition, ...]:
    for name, meta in protocols:
        if name == COOPERATIVE_STICKY:
            return tuple(meta.owned)
    if not protocols:
        return ()
    meta = protocols[0][1]
    return tuple(meta.owned if meta.user_data is None else meta.user_data[0])


def claim_gen_in(protocols: tuple[tuple[str, Any], ...]) -> int:
    for name, meta in protocols:
        if name == COOPERATIVE_STICKY:
            return int(meta.generation)
    if not protocols:
        return NO_GENERATION
    meta = protocols[0][1]
    return int(meta.generation if meta.user_data is None else meta.user_data[1])


# -- the valuation ---------------------------------------------------------------------------------

_GST = {co.EMPTY: "Empty", co.PREPARING_REBALANCE: "PreparingRebalance",
        co.COMPLETING_REBALANCE: "CompletingRebalance", co.STABLE: "Stable"}
_CST = {mb.MemberState.UNJOINED: "UNJOINED", mb.MemberState.PREPARING_REBALANCE: "PREPARING_REBALANCE",
        mb.MemberState.COMPLETING_REBALANCE: "COMPLETING_REBALANCE", mb.MemberState.STABLE: "STABLE"}
_FUT = {mb.JoinFuture.NONE: "none", mb.JoinFuture.JOIN: "join", mb.JoinFuture.SYNC: "sync",
        mb.JoinFuture.SUCCEEDED: "succeeded", mb.JoinFuture.FAILED: "failed"}


def _join_answer(r: JoinGroupResponse) -> str:
    if r.error is Errors.NONE:
        return "ok"
    if r.error is Errors.UNKNOWN_MEMBER_ID:
        return "unknown_member_id"
    if r.error is Errors.MEMBER_ID_REQUIRED:
        return "member_id_required"
    return "other_error"


def _sync_answer(r: SyncGroupResponse) -> str:
    return {Errors.NONE: "ok", Errors.REBALANCE_IN_PROGRESS: "rebalance_in_progress",
            Errors.ILLEGAL_GENERATION: "illegal_generation",
            Errors.UNKNOWN_MEMBER_ID: "unknown_member_id"}.get(r.error, "other_error")


def _commit_answer(r: OffsetCommitResponse) -> str:
    return {Errors.NONE: "ok", Errors.REBALANCE_IN_PROGRESS: "rebalance_in_progress",
            Errors.ILLEGAL_GENERATION: "illegal_generation", Errors.UNKNOWN_MEMBER_ID: "unknown_member_id",
            Errors.FENCED_INSTANCE_ID: "fenced_instance_id"}.get(r.error, "unknown_member_id")


def elements(states: Iterable[sy.SystemState], tracker: Tracker) -> tuple[list[str], list[str], list[str]]:
    """The K, P and I elements needed to read these states."""
    ks: set[str] = set(tracker.incarnations) | set(tracker.ghosts)
    ps: set[str] = set()
    insts: set[str] = set()
    for st in states:
        for _, p in st.processes:
            for i in range(1, p.incarnation + 1):
                ks.add(f"{p.config.name}#{i}")
            if p.config.instance_id is not None:
                insts.add(p.config.instance_id)
        for topic, count in st.metadata:
            ps.update(f"{topic}-{i}" for i in range(count))
        for entry in st.group.members:
            ps.update(tp_name(tp) for tp in (*entry.assignment, *claims_of(entry)))
            if entry.instance_id is not None:
                insts.add(entry.instance_id)
        for consumer in sy.running(st):
            ps.update(tp_name(tp) for tp in consumer.owned)
    ks.update(tracker.holder.values())
    ps.update(key[1] for key in tracker.asg)
    for _name, cfg in tracker.incarnations.values():
        if cfg.instance_id is not None:
            insts.add(cfg.instance_id)
    return sorted(ks) or ["(unused)"], sorted(ps) or ["(none)"], sorted(insts) or ["(none)"]


def valuation(state: sy.SystemState, tracker: Tracker, ks: list[str], ps: list[str], insts: list[str],
              gens: Iterable[int]) -> Valuation:
    """The symbolic valuation of ``state`` (see the module docstring for what is left free)."""
    v = Valuation(ks, ps, insts)
    g = state.group
    v.put("gst", (), _GST[g.state])
    v.put("ggen", (), g.generation)
    v.put("gcoop", (), g.protocol_name == COOPERATIVE_STICKY and g.state in (co.COMPLETING_REBALANCE, co.STABLE)
          or (g.protocol_name == COOPERATIVE_STICKY and g.state is co.PREPARING_REBALANCE))
    v.put("badCommit", (), tracker.bad_commit)

    entries: dict[str, co.Member] = {}
    for entry in g.members:
        entries[tracker.holder.get(entry.member_id, f"ghost:{entry.member_id}")] = entry
    pending = {tracker.holder.get(p.member_id, f"ghost:{p.member_id}") for p in g.pending_members}
    running: dict[str, mb.Member] = {m.conn: m for m in sy.running(state)}
    used = {f"{p.config.name}#{i}" for _, p in state.processes for i in range(1, p.incarnation + 1)}
    req_q = dict(state.network.requests)
    rsp_q = dict(state.network.responses)

    for k in ks:
        cfg = tracker.incarnations.get(k, (None, None))[1]
        ghost = k.startswith("ghost:")
        m_entry = entries.get(k)
        v.put("inG", (k,), m_entry is not None)
        v.put("pend", (k,), k in pending)
        v.put("used", (k,), k in used or (ghost and (m_entry is not None or k in tracker.ghosts)))
        if cfg is not None:
            v.put("static", (k,), cfg.instance_id is not None)
            v.put("inst", (k,), cfg.instance_id if cfg.instance_id is not None else None)
            v.put("coop", (k,), cfg.protocol is RebalanceProtocol.COOPERATIVE)
            v.put("cs", (k,), COOPERATIVE_STICKY in cfg.assignors)
            v.put("ac", (k,), bool(getattr(cfg, "auto_commit", True)))
        elif ghost:
            v.put("static", (k,), False)
        # coordinator entry
        v.put("awJ", (k,), m_entry is not None and m_entry.awaiting_join is not None)
        v.put("awS", (k,), m_entry is not None and m_entry.awaiting_sync is not None)
        v.put("lead", (k,), m_entry is not None and g.leader == m_entry.member_id)
        stored = {tp_name(tp) for tp in m_entry.assignment} if m_entry is not None else set()
        for p in ps:
            v.put("stored", (k, p), p in stored)
        if m_entry is not None:
            claimed = {tp_name(tp) for tp in claims_of(m_entry)}
            for p in ps:
                v.put("claim", (k, p), p in claimed)
            v.put("claimGen", (k,), claim_gen_in(m_entry.protocols))
        # consumer
        m = running.get(k)
        v.put("alive", (k,), m is not None and m.fatal is None)
        if m is not None and m.fatal is None:
            v.put("cst", (k,), _CST[m.state])
            v.put("fut", (k,), _FUT[m.join])
            v.put("cgen", (k,), m.generation.generation_id)
            v.put("hasId", (k,), bool(m.generation.member_id))
            v.put("np", (k,), m.needs_join_prepare)
            v.put("pcDone", (k,), m.prepare_commit is mb.JoinPrepareCommit.DONE)
            owned = {tp_name(tp) for tp in m.owned}
            for p in ps:
                v.put("owns", (k, p), p in owned)
            if m.join is mb.JoinFuture.SUCCEEDED and isinstance(m.join_result, mb.Assignment):
                res = {tp_name(tp) for tp in m.join_result.partitions}
                for p in ps:
                    v.put("jres", (k, p), p in res)
            v.put("og", (k,), tracker.og.get(k, NO_GENERATION))
            v.put("rej", (k,), tracker.rej.get(k, NO_GENERATION))
        else:
            for p in ps:
                v.put("owns", (k, p), False)
        # requests in flight, in queue order
        queue = req_q.get(k, ())
        join = next((r for r in queue if isinstance(r, JoinGroupRequest)), None)
        sync = next((r for r in queue if isinstance(r, SyncGroupRequest)), None)
        leave = next((r for r in queue if isinstance(r, LeaveGroupRequest)), None)
        commit = next((r for r in queue if isinstance(r, OffsetCommitRequest)), None)
        v.put("jreq", (k,), join is not None)
        v.put("sreq", (k,), sync is not None)
        v.put("lreq", (k,), leave is not None)
        v.put("creq", (k,), commit is not None)
        if join is not None:
            claimed = {tp_name(tp) for tp in claims_in(join.protocols)}
            for p in ps:
                v.put("rqClaim", (k, p), p in claimed)
            v.put("rqGen", (k,), claim_gen_in(join.protocols))
            v.put("rqHasId", (k,), bool(join.member_id))
            if leave is not None:
                v.put("jFirst", (k,), queue.index(join) < queue.index(leave))
        if sync is not None:
            v.put("sqGen", (k,), sync.generation)
            v.put("sqLead", (k,), bool(sync.assignments))
            given = {(mid, tp_name(tp)) for mid, tps in sync.assignments for tp in tps}
            for x in ks:
                x_ids = {mid for mid, el in tracker.holder.items() if el == x}
                for p in ps:
                    v.put("sqAsg", (k, x, p), any((mid, p) in given for mid in x_ids))
        if commit is not None:
            v.put("cqGen", (k,), commit.generation)
        # responses in flight (heartbeat and leave answers are abstracted away)
        rq = rsp_q.get(k, ())
        jr = next((r for r in rq if isinstance(r, JoinGroupResponse)), None)
        sr = next((r for r in rq if isinstance(r, SyncGroupResponse)), None)
        cr = next((r for r in rq if isinstance(r, OffsetCommitResponse)), None)
        alive = m is not None and m.fatal is None
        v.put("jrsp", (k,), _join_answer(jr) if jr is not None and alive else "none")
        v.put("srsp", (k,), _sync_answer(sr) if sr is not None and alive else "none")
        v.put("crsp", (k,), _commit_answer(cr) if cr is not None and alive else "none")
        if jr is not None and jr.error is Errors.NONE:
            v.put("rGen", (k,), jr.generation)
            v.put("rLead", (k,), jr.leader == jr.member_id and not jr.skip_assignment)
        if sr is not None and sr.error is Errors.NONE:
            answered = {tp_name(tp) for tp in sr.assignment}
            for p in ps:
                v.put("rasg", (k, p), p in answered)
            if k in tracker.rs_gen:
                v.put("rsGen", (k,), tracker.rs_gen[k])

    for gen in gens:
        for p in ps:
            owner = tracker.asg.get((gen, p))
            v.put("asgHas", (gen, p), owner is not None)
            if owner is not None:
                v.put("asgTo", (gen, p), owner)
            v.put("hasAdd", (gen, p), (gen, p) in tracker.added)
    return v


def max_generation(states: Iterable[sy.SystemState], tracker: Tracker) -> int:
    top = max((st.group.generation for st in states), default=0)
    top = max([top, *(key[0] for key in tracker.asg)])
    return top


def diff(a: Valuation, b: Valuation) -> dict[str, list[tuple[tuple[Any, ...], Value, Value]]]:
    """Where two valuations differ (both pinned), for reports."""
    out: dict[str, list[tuple[tuple[Any, ...], Value, Value]]] = {}
    for name in sorted(set(a.fields) | set(b.fields)):
        ta, tb = a.fields.get(name, {}), b.fields.get(name, {})
        for args in sorted(set(ta) & set(tb), key=repr):
            if ta[args] != tb[args]:
                out.setdefault(name, []).append((args, ta[args], tb[args]))
    return out


def config_of(tracker: Tracker, conn: str) -> Mapping[str, Any] | None:
    entry = tracker.incarnations.get(conn)
    return None if entry is None else {"name": entry[0], "config": entry[1]}
