"""The classic group protocol as a symbolic transition system (the encoding the protocol proofs use).

This is ``model.system`` -- coordinator (``model.classic.coordinator``) + consumers (``model.classic.member``) +
network (``model.network``) -- abstracted into a form Z3 can reason about for *any* number of
consumers and partitions.

Sorts and state
---------------

Three uninterpreted sorts: **K**, consumer incarnations (one per process start: the connection
``a#1``, ``a#2``, ...); **P**, partitions; **I**, static instance ids. State is a set of functions
over them (``Field``); quantifiers range over K, P and I only, integers appear only as values
(generations). The coordinator's member entries are keyed by the incarnation that holds them: the
one whose JoinGroup created the member id (``generate_member_id`` runs on the request's connection)
or, after a static replacement, the new incarnation. Each incarnation holds at most one entry at a
time (a member id is never reused; a consumer gets a new one only after it reset its old one, and
per-connection FIFO delivers its LeaveGroup before its next JoinGroup).

Coordinator: ``gst`` (Empty / PreparingRebalance / CompletingRebalance / Stable), ``ggen``,
``gcoop`` (the selected protocol is cooperative-sticky), ``inG(k)`` / ``pend(k)`` (member / KIP-394
pending member), ``stored(k,p)`` (``Member.assignment``), ``claim(k,p)`` and ``claimGen(k)`` (the
owned partitions and generation in k's JoinGroup metadata), ``awJ(k)`` / ``awS(k)`` (parked
JoinGroup / SyncGroup), ``lead(k)``.

Consumer (``model.classic.member.Member``): ``alive``, ``cst`` (MemberState), ``fut`` (the JoinGroup ->
SyncGroup future: None / Join / Sync / Succeeded / Failed), ``cgen`` (generation id, -1 = none),
``hasId``, ``np`` (``needs_join_prepare``), ``jres(k,p)`` (the assignment of a succeeded future),
``owns(k,p)`` (``Member.owned``), and the configuration ``static(k)``, ``inst(k)``, ``coop(k)``.

Network (per-connection FIFO, ``model.network``): at most one JoinGroup, SyncGroup and LeaveGroup of
an incarnation is in flight at a time (its JoinGroup -> SyncGroup chain is sequential), so each is a
slot: ``jreq`` with its payload (``rqClaim``, ``rqGen``, ``rqHasId``), ``jrsp`` (ok / unknown member /
member id required / other error) with ``rGen``, ``rLead``; ``sreq`` with ``sqGen``, ``sqLead``;
``srsp`` (ok / rebalance in progress / illegal generation / unknown member / other) with ``rasg``
and ``rsGen``; ``lreq``. FIFO between slots of one connection is kept where it matters: a
connection's SyncGroup is delivered before its LeaveGroup, and both before its JoinGroup.
Heartbeats are abstracted away: a heartbeat answer is a consumer step (reset or rejoin request)
whose guard is what makes the coordinator give that answer. The leader's assignment in flight is
``sqAsg(k,x,p)``: the assignment k's SyncGroup carries (when k led).

Ghost (history) state, for the proofs only: ``og(k)``, the generation whose SyncGroup gave k what it
owns (``partitions_assigned``'s generation), and ``asgTo(g,p)`` / ``asgHas(g,p)``, the member the
coordinator's generation-g assignment gave partition p.

Time is abstracted away: every timer may fire at any moment (assumption ``timers-any-time``), which
over-approximates every choice of timeouts. Topics and subscriptions are abstracted to what the
invariants need: a cooperative consumer may revoke any subset of what it owns in ``onJoinPrepare``
(the partitions of topics it no longer subscribes to), and may refuse an assignment (one that does
not match its subscription).

Micro-steps
-----------

A transition of the executable model is one or a few *micro-steps* here (a delivered request may
also complete the join phase; a timer step may expire several timers). Each micro-step is a small
function with its guard and its updates; everything it does not update is unchanged. The list
``ACTIONS`` is the whole relation. Mutants switch micro-steps the same way they switch the
executable model (``stale-owned-after-sync-rebalance``, ``static-rejoin-rebalances``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import z3

Z = Any

# -- enumerations ---------------------------------------------------------------------------------

GSt, (EMPTY, PREP, COMPL, STABLE) = z3.EnumSort("GSt", ["Empty", "PreparingRebalance", "CompletingRebalance",
                                                         "Stable"])
CSt, (UNJOINED, C_PREP, C_COMPL, C_STABLE) = z3.EnumSort("CSt", ["UNJOINED", "PREPARING_REBALANCE",
                                                                 "COMPLETING_REBALANCE", "STABLE"])
Fut, (F_NONE, F_JOIN, F_SYNC, F_SUCC, F_FAIL) = z3.EnumSort("Fut", ["none", "join", "sync", "succeeded", "failed"])
JR, (JR_NONE, JR_OK, JR_UNK, JR_MIR, JR_OTH) = z3.EnumSort("JR", ["none", "ok", "unknown_member_id",
                                                                  "member_id_required", "other_error"])
SR, (SR_NONE, SR_OK, SR_RIP, SR_ILL, SR_UNK, SR_OTH) = z3.EnumSort("SR", ["none", "ok", "rebalance_in_progress",
                                                                          "illegal_generation",
                                                                          "unknown_member_id", "other_error"])
CR, (CR_NONE, CR_OK, CR_RIP, CR_ILL, CR_UNK, CR_FENCED) = z3.EnumSort("CR", ["none", "ok", "rebalance_in_progress",
                                                                          "illegal_generation", "unknown_member_id",
                                                                          "fenced_instance_id"])
NO_GEN = -1


# -- the universe --------------------------------------------------------------------------------

@dataclass
class Sorts:
    """The sorts of one encoding: uninterpreted (unbounded) or finite (bounded, named elements)."""

    K: Any
    P: Any
    I: Any  # noqa: E741 - the sort of instance ids
    ks: tuple[Any, ...] | None = None
    ps: tuple[Any, ...] | None = None
    is_: tuple[Any, ...] | None = None
    gens: tuple[int, ...] | None = None  # the generations a finite encoding ranges over
    expand: bool = True  # finite sorts: expand quantifiers into conjunctions (else keep them, Z3 instantiates)

    @staticmethod
    def unbounded(tag: str = "") -> Sorts:
        return Sorts(z3.DeclareSort(f"K{tag}"), z3.DeclareSort(f"P{tag}"), z3.DeclareSort(f"I{tag}"))

    @staticmethod
    def finite(k: int, p: int, i: int, max_gen: int, tag: str = "", expand: bool = True) -> Sorts:
        K, ks = z3.EnumSort(f"K{k}_{tag}", [f"k{x}" for x in range(k)])
        P, ps = z3.EnumSort(f"P{p}_{tag}", [f"p{x}" for x in range(p)])
        In, is_ = z3.EnumSort(f"I{i}_{tag}", [f"i{x}" for x in range(i)])
        return Sorts(K, P, In, tuple(ks), tuple(ps), tuple(is_), tuple(range(NO_GEN, max_gen + 1)), expand)

    @property
    def finite_(self) -> bool:
        return self.ks is not None

    def elements(self, sort: Any) -> Sequence[Any]:
        if sort == self.K and self.ks is not None:
            return self.ks
        if sort == self.P and self.ps is not None:
            return self.ps
        if sort == self.I and self.is_ is not None:
            return self.is_
        if sort == z3.IntSort() and self.gens is not None:
            return [z3.IntVal(g) for g in self.gens]
        raise ValueError("no finite elements")

    _counter = itertools.count()

    def forall(self, sorts: Sequence[Any], body: Callable[..., Z]) -> Z:
        if self.finite_ and self.expand:
            return z3.And([body(*xs) for xs in itertools.product(*(self.elements(s) for s in sorts))])
        xs = [z3.Const(f"v{next(self._counter)}", s) for s in sorts]
        return z3.ForAll(xs, body(*xs))

    def exists(self, sorts: Sequence[Any], body: Callable[..., Z]) -> Z:
        if self.finite_ and self.expand:
            return z3.Or([body(*xs) for xs in itertools.product(*(self.elements(s) for s in sorts))])
        xs = [z3.Const(f"v{next(self._counter)}", s) for s in sorts]
        return z3.Exists(xs, body(*xs))


# -- the state ------------------------------------------------------------------------------------

B, INT = z3.BoolSort(), z3.IntSort()


def _fields(s: Sorts) -> dict[str, tuple[Any, ...]]:
    """Field name -> (argument sorts..., value sort). Constants have no argument sorts."""
    K, P, In = s.K, s.P, s.I
    return {
        # coordinator
        "gst": (GSt,), "ggen": (INT,), "gcoop": (B,),
        "inG": (K, B), "pend": (K, B), "stored": (K, P, B), "claim": (K, P, B), "claimGen": (K, INT),
        "awJ": (K, B), "awS": (K, B), "lead": (K, B),
        # configuration of an incarnation (never changes)
        "static": (K, B), "inst": (K, In), "coop": (K, B), "cs": (K, B), "ac": (K, B),
        # consumer
        "used": (K, B), "alive": (K, B), "cst": (K, CSt), "fut": (K, Fut), "cgen": (K, INT), "hasId": (K, B),
        "np": (K, B), "jres": (K, P, B), "owns": (K, P, B),
        "pcDone": (K, B),  # onJoinPrepare's auto-commit was answered (JoinPrepareCommit.DONE)
        # network
        "jreq": (K, B), "rqClaim": (K, P, B), "rqGen": (K, INT), "rqHasId": (K, B),
        "jrsp": (K, JR), "rGen": (K, INT), "rLead": (K, B),
        "sreq": (K, B), "sqGen": (K, INT), "sqLead": (K, B),
        "srsp": (K, SR), "rasg": (K, P, B), "rsGen": (K, INT),
        "lreq": (K, B), "jFirst": (K, B),
        "creq": (K, B), "cqGen": (K, INT), "crsp": (K, CR),
        "sqAsg": (K, K, P, B),
        # ghost
        "og": (K, INT), "asgTo": (INT, P, K), "asgHas": (INT, P, B),
        "hasAdd": (INT, P, B),  # generation g's assignment added p to asgTo(g,p), which did not claim it
        "rej": (K, INT),  # the last generation the coordinator rejected for k (ILLEGAL_GENERATION), or -1
        "badCommit": (B,),  # an OffsetCommit was accepted from a consumer not in the current generation
    }


CONFIG_FIELDS = ("static", "inst", "coop", "cs", "ac")


class State:
    """One valuation of the state: a z3 constant or function per field."""

    def __init__(self, sorts: Sorts, tag: str) -> None:
        self.sorts = sorts
        self.tag = tag
        self.sig = _fields(sorts)
        self.f: dict[str, Any] = {}
        for name, sig in self.sig.items():
            if len(sig) == 1:
                self.f[name] = z3.Const(f"{name}{tag}", sig[0])
            else:
                self.f[name] = z3.Function(f"{name}{tag}", *sig)

    def __getattr__(self, name: str) -> Any:
        f = self.__dict__.get("f")
        if f is not None and name in f:
            return f[name]
        raise AttributeError(name)


Update = Mapping[str, Any]  # field -> new value (constant) or callable(args) -> new value


#: The answers in flight to a consumer, and their payloads. The network drops an answer to a closed
#: connection (model.network.Network.send_response), so writes to them only reach live incarnations.
RESPONSE_FIELDS = frozenset({"jrsp", "rGen", "rLead", "srsp", "rasg", "rsGen", "crsp"})


def frame(s: State, t: State, changes: Update) -> Z:
    """``t`` equals ``s`` except for ``changes``; configuration fields never change; answers to dead
    incarnations are dropped."""
    u = s.sorts
    out = []
    for name, sig in s.sig.items():
        new = changes.get(name)
        if new is not None and name in RESPONSE_FIELDS:
            new = _to_live(s, name, new)
        if len(sig) == 1:
            out.append(t.f[name] == (s.f[name] if new is None else new))
            continue
        arg_sorts = sig[:-1]
        if new is None:
            if not (u.finite_ and u.expand) and INT in arg_sorts:
                out.append(_int_frame(s, t, name, arg_sorts))
            else:
                out.append(u.forall(arg_sorts, lambda *a, n=name: t.f[n](*a) == s.f[n](*a)))
        else:
            out.append(u.forall(arg_sorts, lambda *a, n=name, fn=new: t.f[n](*a) == fn(*a)))
    return z3.And(out)


def _to_live(s: State, name: str, new: Callable[..., Z]) -> Callable[..., Z]:
    return lambda x, *rest: z3.If(s.alive(x), new(x, *rest), s.f[name](x, *rest))


def _int_frame(s: State, t: State, name: str, arg_sorts: Sequence[Any]) -> Z:
    xs = [z3.Const(f"w{next(Sorts._counter)}", a) for a in arg_sorts]
    return z3.ForAll(xs, t.f[name](*xs) == s.f[name](*xs), patterns=[t.f[name](*xs)])


def at(k: Z, value: Any, else_: Callable[[Z], Z]) -> Callable[[Z], Z]:
    """Point update of a K-indexed field: ``x -> value if x == k else else_(x)``."""
    return lambda x: z3.If(x == k, value, else_(x))


def at2(k: Z, value: Callable[[Z], Z], else_: Callable[[Z, Z], Z]) -> Callable[[Z, Z], Z]:
    """Row update of a (K, P)-indexed field: ``(x, p) -> value(p) if x == k else else_(x, p)``."""
    return lambda x, p: z3.If(x == k, value(p), else_(x, p))


# -- derived predicates ---------------------------------------------------------------------------

def zombie(s: State, k: Z) -> Z:
    """``model.invariants.protocol.is_zombie``: the group no longer counts k (its member id is not a
    member, or it has reset its generation / member id)."""
    return z3.Or(z3.Not(s.inG(k)), s.cgen(k) == NO_GEN, z3.Not(s.hasId(k)))


def joined(s: State, k: Z) -> Z:
    """The heartbeat thread runs (``MemberState.has_not_joined`` is false)."""
    return z3.Or(s.cst(k) == C_COMPL, s.cst(k) == C_STABLE)


def empty_row(s: State, rel: str, k: Z) -> Z:
    u = s.sorts
    return u.forall([u.P], lambda p: z3.Not(s.f[rel](k, p)))


# -- micro-steps ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Action:
    """A micro-step: ``relation(s, t, k, choice)`` is its guard and updates for incarnation k.

    ``choice`` is a fresh K constant for steps that pick a second incarnation (the new leader, the
    static member being replaced); ``kind`` groups micro-steps by the executable model's action.
    """

    name: str
    kind: str  # consumer / coordinator / fault
    relation: Callable[[State, State, Z, Z, Any, frozenset[str]], Z]
    doc: str


ACTIONS: list[Action] = []


def action(name: str, kind: str, doc: str) -> Callable[[Callable[..., Z]], Callable[..., Z]]:
    def wrap(fn: Callable[..., Z]) -> Callable[..., Z]:
        ACTIONS.append(Action(name, kind, fn, doc))
        return fn

    return wrap


def _reset(s: State, k: Z, keep_id: Z) -> dict[str, Any]:
    """``resetStateAndRejoin``: UNJOINED, generation -1, member id kept iff ``keep_id``."""
    return {"cst": at(k, UNJOINED, s.cst), "cgen": at(k, z3.IntVal(NO_GEN), s.cgen),
            "hasId": at(k, z3.And(keep_id, s.hasId(k)), s.hasId), "np": at(k, z3.BoolVal(True), s.np)}


# ---- consumer: poll() -----------------------------------------------------------------------------

@action("poll-complete-join", "consumer",
        "poll() handles a succeeded JoinGroup/SyncGroup chain: onJoinComplete takes the assignment "
        "(owned := assigned; cooperative revokes owned - assigned), or refuses one that does not match "
        "the subscription (member._finish_join, _on_join_complete)")
def poll_complete_join(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    refuse = z3.Bool(f"refuse{t.tag}")
    ok = z3.And(s.cgen(k) != NO_GEN, s.cst(k) == C_STABLE)
    take = z3.And(ok, z3.Not(refuse))
    # A dynamic consumer that drops its member id here sends no LeaveGroup: its entry stays in the
    # group under the old id (until its session expires) while it joins again under a new one. The
    # old entry moves to ``c``, an incarnation that never runs, standing for the abandoned member id.
    abandon = z3.And(z3.Not(ok), z3.Not(s.static(k)), z3.Or(s.inG(k), s.pend(k)))
    f = z3.BoolVal(False)

    def moved(fn: Callable[[Z], Z]) -> Callable[[Z], Z]:
        return lambda x: z3.If(abandon, z3.If(x == c, fn(k), z3.If(x == k, f, fn(x))), fn(x))

    def moved2(fn: Callable[[Z, Z], Z]) -> Callable[[Z, Z], Z]:
        return lambda x, p: z3.If(abandon, z3.If(x == c, fn(k, p), z3.If(x == k, f, fn(x, p))), fn(x, p))

    return z3.And(
        s.alive(k), s.fut(k) == F_SUCC,
        z3.Implies(abandon, z3.And(c != k, z3.Not(s.used(c)))),
        frame(s, t, {
            "fut": at(k, F_NONE, s.fut),
            "owns": at2(k, lambda p: z3.If(take, s.jres(k, p), s.owns(k, p)), s.owns),
            "og": at(k, z3.If(take, s.cgen(k), s.og(k)), s.og),
            "np": at(k, z3.BoolVal(True), s.np),
            "cst": at(k, z3.If(ok, s.cst(k), UNJOINED), s.cst),
            "cgen": at(k, z3.If(ok, s.cgen(k), z3.IntVal(NO_GEN)), s.cgen),
            "hasId": at(k, z3.And(ok, s.hasId(k)), s.hasId),
            "used": lambda x: z3.Or(s.used(x), z3.And(abandon, x == c)),
            "inG": moved(s.inG), "pend": moved(s.pend), "lead": moved(s.lead), "awJ": moved(s.awJ),
            "awS": moved(s.awS), "stored": moved2(s.stored), "claim": moved2(s.claim),
            "claimGen": lambda x: z3.If(z3.And(abandon, x == c), s.claimGen(k), s.claimGen(x)),
            "static": lambda x: z3.If(z3.And(abandon, x == c), f, s.static(x)),
            "cs": lambda x: z3.If(z3.And(abandon, x == c), s.cs(k), s.cs(x)),
            "coop": lambda x: z3.If(z3.And(abandon, x == c), s.coop(k), s.coop(x)),
            "asgTo": lambda g, p: z3.If(z3.And(abandon, g == s.ggen, s.asgTo(g, p) == k), c, s.asgTo(g, p)),
        }))


@action("poll-failed-join", "consumer",
        "poll() handles a failed chain: it forgets it (and rejoins at once, or later)")
def poll_failed_join(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    return z3.And(s.alive(k), s.fut(k) == F_FAIL, frame(s, t, {"fut": at(k, F_NONE, s.fut)}))


def _auto_commit(s: State, k: Z) -> Z:
    """An auto-commit of what k owns would be sent: enabled, STABLE (``generationIfStable``), something
    owned, and no commit of k in flight (its answer handled too)."""
    u = s.sorts
    return z3.And(s.alive(k), s.ac(k), s.cst(k) == C_STABLE, u.exists([u.P], lambda p: s.owns(k, p)),
                  z3.Not(s.creq(k)), s.crsp(k) == CR_NONE)


def _send_commit(s: State, k: Z) -> dict[str, Any]:
    return {"creq": at(k, z3.BoolVal(True), s.creq), "cqGen": at(k, s.cgen(k), s.cqGen)}


@action("poll-join-prepare-commit", "consumer",
        "poll() needs to (re)join and onJoinPrepare sends its auto-commit, then returns false: the JoinGroup "
        "waits for the commit's answer (member._on_join_prepare, ConsumerCoordinator.onJoinPrepare)")
def poll_join_prepare_commit(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    return z3.And(_auto_commit(s, k), s.np(k), s.fut(k) == F_NONE, z3.Not(s.pcDone(k)),
                  frame(s, t, _send_commit(s, k)))


@action("poll-send-join", "consumer",
        "poll() needs to (re)join, with no commit of its own in flight or unanswered (onJoinPrepare's "
        "auto-commit was answered first): onJoinPrepare's callbacks (lost if the generation or member id "
        "was reset; eager revokes everything; cooperative revokes partitions of unsubscribed topics), then "
        "JoinGroup with the owned partitions and generation as metadata (member._on_join_prepare, "
        "_send_join_group)")
def poll_send_join(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    u = s.sorts
    drop = z3.Function(f"unsubscribed{t.tag}", u.P, B)  # partitions of topics it no longer subscribes to
    reset = z3.Or(s.cgen(k) == NO_GEN, z3.Not(s.hasId(k)))

    def owned_after(p: Z) -> Z:
        keep = z3.If(reset, z3.BoolVal(False),
                     z3.If(s.coop(k), z3.And(s.owns(k, p), z3.Not(drop(p))), z3.BoolVal(False)))
        return z3.If(s.np(k), keep, s.owns(k, p))

    other_meta = z3.Function(f"metadata_owned{t.tag}", u.P, B)  # e.g. the sticky assignor's memory
    # onJoinPrepare sends its auto-commit first (poll-join-prepare-commit) unless it has none to send
    would_commit = z3.And(s.np(k), s.ac(k), s.cst(k) == C_STABLE, u.exists([u.P], lambda p: s.owns(k, p)))
    return z3.And(
        s.alive(k), s.fut(k) == F_NONE, z3.Not(s.jreq(k)), z3.Not(s.creq(k)), s.crsp(k) == CR_NONE,
        z3.Or(z3.Not(would_commit), s.pcDone(k)),
        frame(s, t, {
            "pcDone": at(k, z3.BoolVal(False), s.pcDone),
            "owns": at2(k, owned_after, s.owns),
            "np": at(k, z3.BoolVal(False), s.np),
            "jreq": at(k, z3.BoolVal(True), s.jreq), "jFirst": at(k, z3.BoolVal(False), s.jFirst),
            "rqClaim": at2(k, lambda p: z3.If(z3.Or(s.coop(k), s.cs(k)), owned_after(p), other_meta(p)),
                           s.rqClaim),
            "rqGen": at(k, s.cgen(k), s.rqGen),
            "rqHasId": at(k, s.hasId(k), s.rqHasId),
            "cst": at(k, C_PREP, s.cst),
            "fut": at(k, F_JOIN, s.fut),
        }))


# ---- consumer: the heartbeat thread and heartbeat answers ----------------------------------------

@action("heartbeat-poll-timeout", "consumer",
        "the heartbeat thread finds max.poll.interval.ms expired: a dynamic member sends LeaveGroup; "
        "either way it resets its generation and member id (member.maybe_leave_group)")
def heartbeat_poll_timeout(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    leave = z3.And(z3.Not(s.static(k)), s.hasId(k))
    return z3.And(
        s.alive(k), joined(s, k),
        frame(s, t, {**_reset(s, k, z3.BoolVal(False)),
                     "lreq": at(k, z3.Or(s.lreq(k), leave), s.lreq)}))


@action("heartbeat-illegal-generation", "consumer",
        "a Heartbeat is answered ILLEGAL_GENERATION (the member's generation is not the group's): reset "
        "the generation, keep the member id (KAFKA-13419)")
def heartbeat_illegal_generation(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    # FIFO: the answer was produced when the group had moved past the consumer's generation, so a
    # JoinGroup answer still ahead of it in the queue carries a later generation.
    fifo = z3.Implies(s.jrsp(k) == JR_OK, s.rGen(k) > s.cgen(k))
    return z3.And(s.alive(k), s.cgen(k) != s.ggen, s.cgen(k) != NO_GEN, fifo,
                  frame(s, t, {**_reset(s, k, z3.BoolVal(True)), "rej": at(k, s.cgen(k), s.rej)}))


@action("heartbeat-unknown-member", "consumer",
        "a Heartbeat is answered UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID (the member id is no longer a "
        "member): reset generation and member id")
def heartbeat_unknown_member(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    return z3.And(s.alive(k), s.hasId(k), z3.Not(s.inG(k)), z3.Not(s.pend(k)),
                  frame(s, t, _reset(s, k, z3.BoolVal(False))))


# ---- consumer: JoinGroup / SyncGroup answers ---------------------------------------------------------

@action("receive-join-ok", "consumer",
        "a JoinGroup answer with a generation: COMPLETING_REBALANCE in that generation; the leader runs the "
        "assignor on the member list; SyncGroup is sent (member._on_join_group_response)")
def receive_join_ok(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    u = s.sorts
    content = z3.Function(f"assignment{t.tag}", u.K, u.P, B)  # what the leader's assignor returned
    left = s.cst(k) != C_PREP
    leads = z3.And(z3.Not(left), s.rLead(k))
    common = {"jrsp": at(k, JR_NONE, s.jrsp)}
    return z3.And(
        s.alive(k), s.jrsp(k) == JR_OK, s.fut(k) == F_JOIN, s.crsp(k) == CR_NONE,
        z3.If(left,
              frame(s, t, {**common, "fut": at(k, F_FAIL, s.fut)}),
              frame(s, t, {**common,
                           "cst": at(k, C_COMPL, s.cst), "cgen": at(k, s.rGen(k), s.cgen),
                           "hasId": at(k, z3.BoolVal(True), s.hasId),
                           "fut": at(k, F_SYNC, s.fut),
                           "sreq": at(k, z3.BoolVal(True), s.sreq), "sqGen": at(k, s.rGen(k), s.sqGen),
                           "sqLead": at(k, leads, s.sqLead),
                           "sqAsg": lambda y, x, p: z3.If(y == k, z3.And(leads, content(x, p)), s.sqAsg(y, x, p))
                           })))


@action("receive-join-error", "consumer",
        "a JoinGroup error: UNKNOWN_MEMBER_ID resets generation and member id; MEMBER_ID_REQUIRED adopts "
        "the member id it carries (KIP-394); any other error just fails the attempt")
def receive_join_error(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    e = s.jrsp(k)
    unk = z3.And(e == JR_UNK, z3.Bool(f"generation_unchanged{t.tag}"))  # else the reset already happened
    mir = e == JR_MIR
    return z3.And(
        s.alive(k), z3.Or(e == JR_UNK, mir, e == JR_OTH), s.fut(k) == F_JOIN, s.crsp(k) == CR_NONE,
        frame(s, t, {
            "jrsp": at(k, JR_NONE, s.jrsp), "fut": at(k, F_FAIL, s.fut),
            "cst": at(k, z3.If(unk, UNJOINED, s.cst(k)), s.cst),
            "cgen": at(k, z3.If(z3.Or(unk, mir), z3.IntVal(NO_GEN), s.cgen(k)), s.cgen),
            "hasId": at(k, z3.If(unk, z3.BoolVal(False), z3.If(mir, z3.BoolVal(True), s.hasId(k))), s.hasId),
            "np": at(k, z3.Or(unk, s.np(k)), s.np),
        }))


@action("receive-sync-ok", "consumer",
        "a SyncGroup answer with an assignment: STABLE, the future succeeds with it -- unless the heartbeat "
        "thread reset the generation meanwhile (member._on_sync_group_response)")
def receive_sync_ok(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    ok = z3.And(s.cgen(k) != NO_GEN, s.cst(k) == C_COMPL, z3.Not(z3.Bool(f"protocol_mismatch{t.tag}")))
    return z3.And(
        s.alive(k), s.srsp(k) == SR_OK, s.fut(k) == F_SYNC,
        frame(s, t, {
            "srsp": at(k, SR_NONE, s.srsp),
            "fut": at(k, z3.If(ok, F_SUCC, F_FAIL), s.fut),
            "cst": at(k, z3.If(ok, C_STABLE, s.cst(k)), s.cst),
            "jres": at2(k, lambda p: z3.If(ok, s.rasg(k, p), s.jres(k, p)), s.jres),
        }))


@action("receive-sync-error", "consumer",
        "a SyncGroup error: REBALANCE_IN_PROGRESS rejoins keeping the generation; ILLEGAL_GENERATION resets "
        "the generation but keeps the member id (KAFKA-13419); UNKNOWN_MEMBER_ID resets both")
def receive_sync_error(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    e = s.srsp(k)
    ill = e == SR_ILL
    unk = e == SR_UNK
    stale_kept = "stale-owned-after-sync-rebalance" in mutants
    resets = z3.And(s.cgen(k) != NO_GEN, z3.Or(unk, z3.And(ill, z3.BoolVal(not stale_kept))))
    return z3.And(
        s.alive(k), z3.Or(e == SR_RIP, ill, unk, e == SR_OTH), s.fut(k) == F_SYNC,
        frame(s, t, {
            "srsp": at(k, SR_NONE, s.srsp), "fut": at(k, F_FAIL, s.fut),
            "rej": at(k, z3.If(z3.And(ill, s.cgen(k) != NO_GEN), s.cgen(k), s.rej(k)), s.rej),
            "cst": at(k, z3.If(resets, UNJOINED, s.cst(k)), s.cst),
            "cgen": at(k, z3.If(resets, z3.IntVal(NO_GEN), s.cgen(k)), s.cgen),
            "hasId": at(k, z3.If(z3.And(resets, unk), z3.BoolVal(False), s.hasId(k)), s.hasId),
            "np": at(k, z3.Or(resets, s.np(k)), s.np),
        }))


# ---- faults -------------------------------------------------------------------------------------

@action("start", "fault",
        "a consumer process incarnation starts (MemberStarts, or the start half of MemberRestarts)")
def start(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    return z3.And(
        z3.Not(s.used(k)), z3.Not(s.inG(k)), z3.Not(s.pend(k)),
        frame(s, t, {
            "used": at(k, z3.BoolVal(True), s.used), "alive": at(k, z3.BoolVal(True), s.alive),
            "cst": at(k, UNJOINED, s.cst), "fut": at(k, F_NONE, s.fut), "cgen": at(k, z3.IntVal(NO_GEN), s.cgen),
            "hasId": at(k, z3.BoolVal(False), s.hasId), "np": at(k, z3.BoolVal(True), s.np),
            "pcDone": at(k, z3.BoolVal(False), s.pcDone),
            "owns": at2(k, lambda p: z3.BoolVal(False), s.owns),
            "jres": at2(k, lambda p: z3.BoolVal(False), s.jres),
            "og": at(k, z3.IntVal(NO_GEN), s.og), "rej": at(k, z3.IntVal(NO_GEN), s.rej),
        }))


def _process_ends(s: State, k: Z) -> dict[str, Any]:
    """What every end of incarnation k's process changes (crash, close, die): it is not alive, owns
    nothing, and no answer to it is read any more (member._die / close give its partitions up)."""
    f = z3.BoolVal(False)
    return {"alive": at(k, f, s.alive), "owns": at2(k, lambda p: f, s.owns),
            "jrsp": at(k, JR_NONE, s.jrsp), "srsp": at(k, SR_NONE, s.srsp), "crsp": at(k, CR_NONE, s.crsp)}


@action("crash", "fault",
        "a process dies without a word (MemberCrashes, the crash half of MemberRestarts, or a fatal error): "
        "it owns nothing any more; its queued requests are dropped, and answers to it are never read")
def crash(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    f = z3.BoolVal(False)
    return z3.And(
        s.alive(k),
        frame(s, t, {
            **_process_ends(s, k),
            "jreq": at(k, f, s.jreq), "sreq": at(k, f, s.sreq), "lreq": at(k, f, s.lreq), "creq": at(k, f, s.creq),
        }))


@action("close-commit", "fault",
        "KafkaConsumer.close() first commits what is owned synchronously (maybeAutoCommitOffsetsSync); the "
        "answer is handled (receive-commit-answer) before the rest of close (member.close_commit)")
def close_commit(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    # a STABLE consumer has no JoinGroup/SyncGroup chain under way (its SyncGroup answer may await poll())
    return z3.And(_auto_commit(s, k), z3.Or(s.fut(k) == F_NONE, s.fut(k) == F_SUCC), frame(s, t, _send_commit(s, k)))


@action("close", "fault",
        "KafkaConsumer.close() after its commit was answered: revoked or lost callbacks, LeaveGroup from a "
        "dynamic member that is in the group, and the process ends; its queued requests still go out "
        "(member.close)")
def close(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    leave = z3.And(s.cst(k) != UNJOINED, s.hasId(k), z3.Not(s.static(k)))
    return z3.And(
        s.alive(k), z3.Or(z3.Not(_auto_commit(s, k)), s.pcDone(k)),  # close-commit first, and its answer
        frame(s, t, {
            **_process_ends(s, k),
            "lreq": at(k, z3.Or(s.lreq(k), leave), s.lreq),
            "jFirst": at(k, z3.If(z3.And(leave, z3.Not(s.lreq(k))), s.jreq(k), s.jFirst(k)), s.jFirst),
            **_reset(s, k, z3.BoolVal(False)),
        }))


@action("die", "fault",
        "poll() throws a fatal error (FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL, ...): partitions lost, "
        "the process ends without leaving; requests already queued still go out (member._die)")
def die(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    return z3.And(
        s.alive(k),
        frame(s, t, {**_process_ends(s, k), "fut": at(k, F_NONE, s.fut), "cst": at(k, UNJOINED, s.cst)}))


# ---- coordinator: requests ------------------------------------------------------------------------

def join_deliverable(s: State, k: Z) -> Z:
    """k's JoinGroup is the oldest request of its connection (per-connection FIFO)."""
    return z3.And(s.jreq(k), z3.Not(s.sreq(k)), z3.Not(s.creq(k)), z3.Or(z3.Not(s.lreq(k)), s.jFirst(k)))


def leave_deliverable(s: State, k: Z) -> Z:
    return z3.And(s.lreq(k), z3.Not(s.sreq(k)), z3.Not(s.creq(k)), z3.Not(z3.And(s.jreq(k), s.jFirst(k))))


def _to_prepare(s: State, ch: dict[str, Any]) -> dict[str, Any]:
    """``prepareRebalance`` on top of the changes ``ch``: PreparingRebalance; from CompletingRebalance
    the stored assignment is wiped and parked SyncGroups are answered REBALANCE_IN_PROGRESS."""
    u = s.sorts
    was_compl = s.gst == COMPL
    aws = ch.get("awS", s.awS)
    stored = ch.get("stored", s.stored)
    srsp = ch.get("srsp", s.srsp)
    out = dict(ch)
    out["gst"] = PREP
    out["stored"] = lambda x, p: z3.If(was_compl, z3.BoolVal(False), stored(x, p))
    out["srsp"] = lambda x: z3.If(z3.And(was_compl, aws(x)), SR_RIP, srsp(x))
    out["awS"] = lambda x: z3.And(z3.Not(was_compl), aws(x))
    del u
    return out


def _member_entry(s: State, k: Z, claim: Callable[[Z], Z], claim_gen: Z) -> dict[str, Any]:
    """k's JoinGroup is parked as a (new or updated) member with this metadata."""
    return {"inG": at(k, z3.BoolVal(True), s.inG), "pend": at(k, z3.BoolVal(False), s.pend),
            "awJ": at(k, z3.BoolVal(True), s.awJ),
            "claim": at2(k, claim, s.claim), "claimGen": at(k, claim_gen, s.claimGen)}


@action("coordinator-join-new-dynamic", "coordinator",
        "JoinGroup with no member id from a dynamic member: a new pending member id, answered "
        "MEMBER_ID_REQUIRED (KIP-394; coordinator.join.join_new_member)")
def co_join_new_dynamic(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    return z3.And(
        join_deliverable(s, k), z3.Not(s.rqHasId(k)), z3.Not(s.static(k)),
        frame(s, t, {"jreq": at(k, z3.BoolVal(False), s.jreq), "pend": at(k, z3.BoolVal(True), s.pend),
                     "jrsp": at(k, JR_MIR, s.jrsp)}))


@action("coordinator-join-member", "coordinator",
        "JoinGroup adds or updates a member and parks it: a pending member's second JoinGroup, a new static "
        "member, or a known member rejoining; outside PreparingRebalance it starts a rebalance "
        "(add_member_then_rebalance_or_complete_join, update_member_then_rebalance_or_complete_join)")
def co_join_member(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    u = s.sorts
    new_static = z3.And(z3.Not(s.rqHasId(k)), s.static(k),
                        z3.Not(u.exists([u.K], lambda x: z3.And(s.inG(x), s.static(x), s.inst(x) == s.inst(k)))))
    pending = z3.And(s.rqHasId(k), s.pend(k))
    known = z3.And(s.rqHasId(k), s.inG(k), s.gst != EMPTY)
    entry = _member_entry(s, k, lambda p: s.rqClaim(k, p), s.rqGen(k))
    leaderless = u.forall([u.K], lambda x: z3.Not(s.lead(x)))
    ch = {**entry, "jreq": at(k, z3.BoolVal(False), s.jreq),
          # ClassicGroup.add: the first member added to a group without a leader becomes its leader
          "lead": lambda x: z3.Or(s.lead(x), z3.And(leaderless, x == k, z3.Not(known)))}
    return z3.And(
        join_deliverable(s, k), z3.Or(new_static, pending, known),
        z3.If(s.gst == PREP, frame(s, t, ch), frame(s, t, _to_prepare(s, ch))))


@action("coordinator-join-current", "coordinator",
        "JoinGroup from a known member with unchanged metadata in CompletingRebalance, or from a follower in "
        "Stable: answered at once with the current generation (coordinator.join.join_existing_member)")
def co_join_current(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    u = s.sorts
    same = z3.And(u.forall([u.P], lambda p: s.rqClaim(k, p) == s.claim(k, p)), s.rqGen(k) == s.claimGen(k))
    return z3.And(
        join_deliverable(s, k), s.rqHasId(k), s.inG(k), same,
        z3.Or(s.gst == COMPL, z3.And(s.gst == STABLE, z3.Not(s.lead(k)))),
        frame(s, t, {"jreq": at(k, z3.BoolVal(False), s.jreq), "jrsp": at(k, JR_OK, s.jrsp),
                     "rGen": at(k, s.ggen, s.rGen), "rLead": at(k, z3.And(s.gst == COMPL, s.lead(k)), s.rLead)}))


@action("coordinator-join-rejected", "coordinator",
        "JoinGroup refused: UNKNOWN_MEMBER_ID (not a member, or the group is Empty), FENCED_INSTANCE_ID, "
        "INCONSISTENT_GROUP_PROTOCOL, ...")
def co_join_rejected(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    known = z3.And(s.inG(k), s.gst != EMPTY)
    err = z3.Const(f"join_error{t.tag}", JR)
    return z3.And(
        join_deliverable(s, k), z3.Or(err == JR_UNK, err == JR_OTH),
        z3.Implies(err == JR_UNK, z3.And(s.rqHasId(k), z3.Not(known), z3.Not(s.pend(k)))),
        frame(s, t, {"jreq": at(k, z3.BoolVal(False), s.jreq), "jrsp": at(k, err, s.jrsp)}))


@action("coordinator-static-replace", "coordinator",
        "JoinGroup with no member id from a static member whose instance id is known: its entry (and "
        "assignment) moves to the new member id, the old one's parked requests are fenced; Stable answers "
        "at once with the current generation, CompletingRebalance rebalances (KAFKA-9801), "
        "PreparingRebalance parks it (KIP-345; update_static_member_then_rebalance_or_complete_join)")
def co_static_replace(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    old = c  # the incarnation holding the instance id
    # the selected protocol would not change (so the new incarnation supports it)
    keep_gen = z3.And(z3.Bool(f"same_protocol{t.tag}"), z3.Implies(s.gcoop, s.cs(k)))
    no_rebalance = z3.And(s.gst == STABLE, keep_gen, z3.BoolVal("static-rejoin-rebalances" not in mutants))

    def moved(fn: Callable[..., Z], value_k: Z) -> Callable[[Z], Z]:
        return lambda x: z3.If(x == k, value_k, z3.If(x == old, z3.BoolVal(False), fn(x)))

    ch: dict[str, Any] = {
        "jreq": at(k, z3.BoolVal(False), s.jreq),
        "inG": moved(s.inG, z3.BoolVal(True)),
        "lead": moved(s.lead, s.lead(old)),
        "stored": lambda x, p: z3.If(x == k, s.stored(old, p), z3.If(x == old, z3.BoolVal(False), s.stored(x, p))),
        "claim": at2(k, lambda p: s.rqClaim(k, p), s.claim), "claimGen": at(k, s.rqGen(k), s.claimGen),
        "awJ": moved(s.awJ, z3.Not(no_rebalance)),
        "awS": moved(s.awS, z3.BoolVal(False)),
        "jrsp": lambda x: z3.If(x == k, z3.If(no_rebalance, JR_OK, s.jrsp(k)),
                                z3.If(z3.And(x == old, s.awJ(old)), JR_OTH, s.jrsp(x))),
        "srsp": lambda x: z3.If(z3.And(x == old, s.awS(old)), SR_OTH, s.srsp(x)),
        "rGen": at(k, z3.If(no_rebalance, s.ggen, s.rGen(k)), s.rGen),
        "rLead": at(k, z3.If(no_rebalance, z3.BoolVal(False), s.rLead(k)), s.rLead),
        # ghost: the current generation's assignment follows the entry
        "asgTo": lambda g, p: z3.If(z3.And(g == s.ggen, s.asgTo(g, p) == old), k, s.asgTo(g, p)),
    }
    return z3.And(
        join_deliverable(s, k), z3.Not(s.rqHasId(k)), s.static(k),
        s.inG(old), s.static(old), s.inst(old) == s.inst(k),
        z3.Or(s.gst == STABLE, s.gst == COMPL, s.gst == PREP),
        z3.If(z3.Or(no_rebalance, s.gst == PREP), frame(s, t, ch), frame(s, t, _to_prepare(s, ch))))


@action("coordinator-sync", "coordinator",
        "SyncGroup: Empty / not a member -> UNKNOWN_MEMBER_ID (FENCED_INSTANCE_ID for a replaced static "
        "member); another generation -> ILLEGAL_GENERATION; PreparingRebalance -> REBALANCE_IN_PROGRESS; "
        "CompletingRebalance parks it, and the leader's stores its assignment, answers every parked "
        "SyncGroup and makes the group Stable; Stable answers with the stored assignment "
        "(coordinator.requests.handle_sync_group)")
def co_sync(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    u = s.sorts
    f = z3.BoolVal(False)
    base = {"sreq": at(k, f, s.sreq)}
    unknown = z3.Or(s.gst == EMPTY, z3.Not(s.inG(k)))
    illegal = z3.And(z3.Not(unknown), s.sqGen(k) != s.ggen)
    valid = z3.And(z3.Not(unknown), z3.Not(illegal))
    leader_sync = z3.And(valid, s.gst == COMPL, s.lead(k))

    def stored_new(x: Z, p: Z) -> Z:
        return z3.And(s.inG(x), s.sqLead(k), s.sqAsg(k, x, p))

    pick = z3.Function(f"pick{t.tag}", u.P, u.K)  # the member the leader gave p (one at most)
    has = z3.Function(f"picked{t.tag}", u.P, B)
    leader_facts = z3.And(
        u.forall([u.K, u.P], lambda x, p: z3.Implies(stored_new(x, p), z3.And(has(p), pick(p) == x))),
        u.forall([u.P], lambda p: z3.Implies(has(p), stored_new(pick(p), p))),
        assignor_facts(s, stored_new, mutants))
    def parked(x: Z) -> Z:
        return z3.Or(x == k, s.awS(x))

    leader_ch = {**base, "gst": STABLE, "stored": stored_new,
                 "awS": lambda x: f,
                 "srsp": lambda x: z3.If(parked(x), SR_OK, s.srsp(x)),
                 "rasg": lambda x, p: z3.If(parked(x), stored_new(x, p), s.rasg(x, p)),
                 "rsGen": lambda x: z3.If(parked(x), s.ggen, s.rsGen(x)),
                 "asgTo": lambda g, p: z3.If(g == s.ggen, pick(p), s.asgTo(g, p)),
                 "asgHas": lambda g, p: z3.If(g == s.ggen, has(p), s.asgHas(g, p)),
                 "hasAdd": lambda g, p: z3.If(g == s.ggen, z3.And(s.gcoop, has(p), z3.Not(s.claim(pick(p), p))),
                                              s.hasAdd(g, p))}
    park_ch = {**base, "awS": at(k, z3.BoolVal(True), s.awS)}
    stable_ch = {**base, "srsp": at(k, SR_OK, s.srsp), "rasg": at2(k, lambda p: s.stored(k, p), s.rasg),
                 "rsGen": at(k, s.ggen, s.rsGen)}
    fenced = z3.Bool(f"fenced_instance{t.tag}")
    error = z3.If(unknown, z3.If(z3.And(fenced, s.gst != EMPTY, s.static(k)), SR_OTH, SR_UNK),
                  z3.If(illegal, SR_ILL, SR_RIP))
    error_ch = {**base, "srsp": at(k, error, s.srsp)}
    return z3.And(
        s.sreq(k),
        z3.If(leader_sync, z3.And(leader_facts, frame(s, t, leader_ch)),
              z3.If(z3.And(valid, s.gst == COMPL), frame(s, t, park_ch),
                    z3.If(z3.And(valid, s.gst == STABLE), frame(s, t, stable_ch), frame(s, t, error_ch)))))


def assignor_facts(s: State, assigned: Callable[[Z, Z], Z], mutants: frozenset[str] = frozenset()) -> Z:
    """What the proofs of the assignors establish about the leader's assignment, relative to the
    member list (the coordinator's metadata): one owner per partition (sticky-claims-single-owner and
    the exact covers of range / roundrobin), and, when cooperative-sticky is the group's protocol, no
    partition added to one member while another claims it and loses it (coop-withhold)."""
    u = s.sorts
    single = u.forall([u.K, u.K, u.P], lambda a, b, p: z3.Implies(z3.And(assigned(a, p), assigned(b, p)), a == b))
    withhold = u.forall([u.K, u.K, u.P], lambda a, b, p: z3.Implies(
        z3.And(s.gcoop, a != b, s.inG(b), assigned(a, p), z3.Not(s.claim(a, p))),
        z3.Not(z3.And(s.claim(b, p), z3.Not(assigned(b, p))))))
    facts = []
    if "double-claim-both-keep" not in mutants:  # the mutant keeps a doubly claimed partition twice
        facts.append(single)
    if "coop-no-withhold" not in mutants:  # the mutant hands moving partitions over at once
        facts.append(withhold)
    return z3.And(facts) if facts else z3.BoolVal(True)


@action("coordinator-leave", "coordinator",
        "LeaveGroup: a pending member is dropped; a member is removed (its parked JoinGroup answered "
        "UNKNOWN_MEMBER_ID) and Stable / CompletingRebalance start a rebalance (handle_leave_group)")
def co_leave(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    f = z3.BoolVal(False)
    member = s.inG(k)
    removal = _removal(s, k, c)
    guard = removal.pop("_guard")
    ch = {"lreq": at(k, f, s.lreq), "pend": at(k, f, s.pend), **removal}
    return z3.And(
        leave_deliverable(s, k), z3.Implies(member, guard),
        z3.If(z3.And(member, z3.Or(s.gst == STABLE, s.gst == COMPL)), frame(s, t, _to_prepare(s, ch)),
              z3.If(member, frame(s, t, ch), frame(s, t, {"lreq": at(k, f, s.lreq), "pend": at(k, f, s.pend)}))))


def _removal(s: State, k: Z, c: Z) -> dict[str, Any]:
    """``ClassicGroup.remove`` of k's entry (its parked JoinGroup answered UNKNOWN_MEMBER_ID); if it
    led the group, another member ``c`` takes over (the first remaining one in member-id order), or
    nobody when it was the last."""
    f = z3.BoolVal(False)
    u = s.sorts
    others = u.exists([u.K], lambda x: z3.And(s.inG(x), x != k))
    heir_ok = z3.Implies(z3.And(s.lead(k), others), z3.And(s.inG(c), c != k))
    return {"inG": at(k, f, s.inG), "awJ": at(k, f, s.awJ), "awS": at(k, f, s.awS),
            "lead": lambda x: z3.If(x == k, f, z3.Or(s.lead(x), z3.And(s.lead(k), others, x == c))),
            "stored": at2(k, lambda p: f, s.stored),
            "jrsp": at(k, z3.If(s.awJ(k), JR_UNK, s.jrsp(k)), s.jrsp),
            "_guard": heir_ok}


@action("coordinator-offset-commit", "coordinator",
        "OffsetCommit (the consumer's auto-commit before a rebalance or on close, with the member id and "
        "generation it had when it sent it): not a member -> UNKNOWN_MEMBER_ID (FENCED_INSTANCE_ID for a "
        "replaced static member); a generation other than the group's -> ILLEGAL_GENERATION (skipped by the "
        "commit-old-generation mutant); CompletingRebalance -> REBALANCE_IN_PROGRESS; else accepted "
        "(coordinator.validation.validate_offset_commit)")
def co_offset_commit(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    member = z3.And(s.inG(k), s.gst != EMPTY)
    generation_ok = z3.Or(s.cqGen(k) == s.ggen, z3.BoolVal("commit-old-generation" in mutants))
    accepted = z3.And(member, generation_ok, s.gst != COMPL)
    fenced = z3.Bool(f"commit_fenced_instance{t.tag}")
    answer = z3.If(accepted, CR_OK,
                   z3.If(z3.Not(member), z3.If(z3.And(fenced, s.static(k)), CR_FENCED, CR_UNK),
                         z3.If(z3.Not(generation_ok), CR_ILL, CR_RIP)))
    return z3.And(s.creq(k), z3.Not(s.sreq(k)),
                  frame(s, t, {"creq": at(k, z3.BoolVal(False), s.creq),
                               "crsp": at(k, z3.If(s.alive(k), answer, CR_NONE), s.crsp),
                               "badCommit": z3.Or(s.badCommit, z3.And(accepted, s.cqGen(k) != s.ggen))}))


@action("receive-commit-answer", "consumer",
        "an OffsetCommit answer: UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION reset the consumer like a heartbeat "
        "error (unless it is already joining a newer generation); FENCED_INSTANCE_ID makes the next poll() "
        "throw; REBALANCE_IN_PROGRESS asks for a rejoin (member._on_offset_commit_response)")
def receive_commit_answer(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    e = s.crsp(k)
    still_current = z3.Bool(f"commit_generation_current{t.tag}")  # generation == sent, or not PREPARING
    resets = z3.And(z3.Or(e == CR_UNK, e == CR_ILL), still_current)
    keep_id = e == CR_ILL
    return z3.And(
        s.alive(k), e != CR_NONE,
        frame(s, t, {"crsp": at(k, CR_NONE, s.crsp), "pcDone": at(k, z3.BoolVal(True), s.pcDone),
                     "cst": at(k, z3.If(resets, UNJOINED, s.cst(k)), s.cst),
                     "cgen": at(k, z3.If(resets, z3.IntVal(NO_GEN), s.cgen(k)), s.cgen),
                     "hasId": at(k, z3.And(s.hasId(k), z3.Or(z3.Not(resets), keep_id)), s.hasId),
                     "np": at(k, z3.Or(s.np(k), resets), s.np)}))


# ---- coordinator: timers and phase changes ------------------------------------------------------------

@action("coordinator-remove-member", "coordinator",
        "a member is removed by a timer: session expiry, pending-sync expiry (KAFKA-12890), or an expired "
        "KIP-394 pending member; Stable / CompletingRebalance then rebalance (coordinator_timers)")
def co_remove_member(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    f = z3.BoolVal(False)
    removal = _removal(s, k, c)
    guard = removal.pop("_guard")
    ch = {**removal, "pend": at(k, f, s.pend)}
    return z3.And(
        z3.Or(s.inG(k), s.pend(k)), z3.Implies(s.inG(k), guard),
        z3.If(z3.And(s.inG(k), z3.Or(s.gst == STABLE, s.gst == COMPL)), frame(s, t, _to_prepare(s, ch)),
              frame(s, t, ch)))


@action("coordinator-prepare-rebalance", "coordinator",
        "Stable or CompletingRebalance enters PreparingRebalance for a reason not modelled apart (the "
        "leader's rejoin, a changed metadata, a pending-sync expiry after its removals)")
def co_prepare_rebalance(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    return z3.And(z3.Or(s.gst == STABLE, s.gst == COMPL), frame(s, t, _to_prepare(s, {})))


@action("coordinator-complete-join", "coordinator",
        "the join phase completes (everyone rejoined, or the join timer fired): dynamic members that did not "
        "rejoin are removed, the leader is kept or re-elected among those that did, the generation goes up, "
        "the protocol is chosen and every parked JoinGroup is answered (coordinator.rebalance.complete_join)")
def co_complete_join(s: State, t: State, k: Z, c: Z, n: Any, mutants: frozenset[str]) -> Z:
    u = s.sorts
    f, tr = z3.BoolVal(False), z3.BoolVal(True)

    def stays(x: Z) -> Z:
        return z3.And(s.inG(x), z3.Or(s.awJ(x), s.static(x)))

    someone = u.exists([u.K], lambda x: z3.And(s.inG(x), s.awJ(x)))
    remains = u.exists([u.K], stays)
    new_leader = c  # kept if it rejoined, else some member that rejoined
    coop = z3.Bool(f"cooperative_sticky{t.tag}")
    leader_stays = u.exists([u.K], lambda x: z3.And(stays(x), s.lead(x)))
    removal = {
        "inG": stays,
        "stored": lambda x, p: z3.And(stays(x), s.stored(x, p)),
        # removing the leader hands leadership to a remaining member (ClassicGroup.remove)
        "lead": lambda x: z3.If(leader_stays, z3.And(stays(x), s.lead(x)), z3.And(remains, x == c, stays(c))),
    }
    nobody = frame(s, t, removal)  # members remain but none rejoined: wait another rebalance timeout
    def parked(x: Z) -> Z:
        return z3.And(s.inG(x), s.awJ(x))

    gen = s.ggen + 1
    complete_ch = {
        **removal,
        "ggen": gen,
        "gst": z3.If(remains, COMPL, EMPTY),
        "gcoop": z3.And(remains, coop),
        "lead": lambda x: z3.And(remains, x == new_leader),
        "awJ": lambda x: z3.And(s.awJ(x), z3.Not(s.inG(x))),
        "awS": lambda x: f,
        "jrsp": lambda x: z3.If(parked(x), JR_OK, s.jrsp(x)),
        "rGen": lambda x: z3.If(parked(x), gen, s.rGen(x)),
        "rLead": lambda x: z3.If(parked(x), x == new_leader, s.rLead(x)),
        # ghost: the new generation (and the one after) have no assignment yet
        "asgHas": lambda g, p: z3.If(z3.Or(g == gen, g == gen + 1), f, s.asgHas(g, p)),
        "hasAdd": lambda g, p: z3.If(z3.Or(g == gen, g == gen + 1), f, s.hasAdd(g, p)),
    }
    leader_ok = z3.And(s.inG(new_leader), s.awJ(new_leader),
                       z3.Implies(u.exists([u.K], lambda x: z3.And(s.lead(x), s.inG(x), s.awJ(x))),
                                  s.lead(new_leader)))
    # cooperative-sticky is chosen only if every member supports it; a cooperative consumer supports nothing else
    coop_ok = z3.And(u.forall([u.K], lambda x: z3.Implies(z3.And(stays(x), s.coop(x)), coop)),
                     u.forall([u.K], lambda x: z3.Implies(z3.And(stays(x), coop), s.cs(x))))
    return z3.And(
        s.gst == PREP,
        z3.If(someone, z3.And(leader_ok, coop_ok, frame(s, t, complete_ch)),
              z3.If(remains, nobody, frame(s, t, {**complete_ch, "lead": lambda x: f}))),
        tr)


# -- the whole relation ----------------------------------------------------------------------------

def step(s: State, t: State, k: Z, c: Z, mutants: frozenset[str], only: Iterable[str] | None = None) -> Z:
    """Some micro-step from ``s`` to ``t`` (restricted to ``only``, if given)."""
    names = set(only) if only is not None else None
    return z3.Or([a.relation(s, t, k, c, None, mutants) for a in ACTIONS if names is None or a.name in names])


def initial(s: State) -> Z:
    """No incarnation has started, the group is Empty in generation 0, nothing is in flight."""
    u = s.sorts
    f = z3.BoolVal(False)
    return z3.And(
        s.gst == EMPTY, s.ggen == 0, z3.Not(s.gcoop), z3.Not(s.badCommit),
        u.forall([u.K], lambda x: z3.And(
            z3.Implies(s.coop(x), s.cs(x)),  # a cooperative consumer's assignors are all cooperative-sticky
            z3.Not(s.used(x)), z3.Not(s.alive(x)), z3.Not(s.inG(x)), z3.Not(s.pend(x)), z3.Not(s.awJ(x)),
            z3.Not(s.awS(x)), z3.Not(s.lead(x)), z3.Not(s.jreq(x)), z3.Not(s.sreq(x)), z3.Not(s.lreq(x)),
            z3.Not(s.creq(x)), s.crsp(x) == CR_NONE,
            s.jrsp(x) == JR_NONE, s.srsp(x) == SR_NONE, s.fut(x) == F_NONE, s.cst(x) == UNJOINED,
            s.cgen(x) == NO_GEN, z3.Not(s.hasId(x)), s.og(x) == NO_GEN, s.claimGen(x) == NO_GEN,
            s.rej(x) == NO_GEN)),
        u.forall([u.K, u.P], lambda x, p: z3.And(
            z3.Not(s.owns(x, p)), z3.Not(s.stored(x, p)), z3.Not(s.claim(x, p)), z3.Not(s.jres(x, p)),
            z3.Not(s.rqClaim(x, p)), z3.Not(s.rasg(x, p)))),
        _no_assignment_yet(s),
        f == f)


def _no_assignment_yet(s: State) -> Z:
    u = s.sorts
    if u.finite_:
        return u.forall([INT, u.P], lambda g, p: z3.And(z3.Not(s.asgHas(g, p)), z3.Not(s.hasAdd(g, p))))
    g = z3.Int("g_init")
    p = z3.Const("p_init", u.P)
    return z3.ForAll([g, p], z3.And(z3.Not(s.asgHas(g, p)), z3.Not(s.hasAdd(g, p))))


def action_by_name(name: str) -> Action:
    for a in ACTIONS:
        if a.name == name:
            return a
    raise KeyError(name)
