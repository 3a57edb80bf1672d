"""A consumer group as one transition system: coordinator + members + network + clock.

A state (:class:`SystemState`) is a frozen value: the time, the coordinator's group
(``model.coordinator``), every consumer process (its configuration and, while it runs, its
``model.member.Member``), the messages in flight (``model.network``), and the cluster metadata
(partition counts). Its transitions are a closed set of small actions, named actor + verb + object:

system actions, which happen by themselves --

* :class:`DeliverRequest` -- the coordinator handles the oldest request of one connection;
* :class:`DeliverResponse` -- a member handles the oldest response of its connection (only while
  one of its threads reads the socket: ``member.can_receive``);
* :class:`MemberPolls` -- a member's application thread calls ``poll()`` and has something to do;
* :class:`HeartbeatThreadRuns` -- a member's heartbeat thread is due (a heartbeat, a poll timeout);
* :class:`MemberResumes` -- a stalled application thread comes back;
* :class:`CoordinatorTimerFires` -- a coordinator timer is due (session, join, sync, ...);
* :class:`ClockAdvances` -- time moves on, to at most the next deadline;

faults and operator actions, which the environment chooses --

* :class:`MemberStarts`, :class:`MemberCrashes`, :class:`MemberRestarts` (same configuration and
  instance id, new incarnation), :class:`MemberLeaves` (``close()``), :class:`MemberStalls`
  (no ``poll()`` for a while), :class:`MemberSubscribes`, :class:`PartitionsAdded`.

:func:`step` is pure and guard-first: it returns ``(next state, events)``, or None when the action is
not enabled. :func:`enabled` lists the enabled system actions.

**Time** is explicit and advances only when nothing else can happen now: message delivery takes no
time, and every timer that is due fires before the clock moves on. So ``ClockAdvances`` is enabled
only when no delivery, poll, heartbeat-thread step, resume or coordinator timer is enabled, and
it moves at most to the next deadline. Among the actions enabled at one instant the order is free
(that is the system's non-determinism), with one rule: a coordinator timer due now fires before
the coordinator handles a request at now (``model.coordinator.expire``'s contract).

**Trace events** are the members' (``partitions_assigned`` / ``_revoked`` / ``_lost``,
``group_joined``, ``group_synced``, ``startup_complete``, ``shutdown_complete``) and the
coordinator's (``coordinator_*``). A crash prints nothing in a real trace; the model, which knows,
emits ``shutdown_complete`` with ``reason: "crash"`` so that a trace says when the process and its
ownership ended.

Connection ids are ``<member>#<incarnation>``; the coordinator derives member ids from the part
before ``#``, so member names contain no ``#``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from model import coordinator as co
from model import events as ev
from model import member as mb
from model.member import Member, MemberConfig, Metadata
from model.messages import Request
from model.network import Network
from model.system_evolve import evolver

Event = dict[str, Any]

# -- actions -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeliverRequest:
    conn: str


@dataclass(frozen=True, slots=True)
class DeliverResponse:
    conn: str


@dataclass(frozen=True, slots=True)
class MemberPolls:
    member: str


@dataclass(frozen=True, slots=True)
class HeartbeatThreadRuns:
    member: str


@dataclass(frozen=True, slots=True)
class MemberResumes:
    member: str


@dataclass(frozen=True, slots=True)
class CoordinatorTimerFires:
    pass


@dataclass(frozen=True, slots=True)
class ClockAdvances:
    to: int


@dataclass(frozen=True, slots=True)
class MemberStarts:
    """A consumer process starts and subscribes (``join`` in a scenario)."""

    member: str
    topics: tuple[str, ...]
    assignors: tuple[str, ...] = mb.DEFAULT_ASSIGNORS
    instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class MemberCrashes:
    member: str


@dataclass(frozen=True, slots=True)
class MemberRestarts:
    """Crash (if running) and start again: same configuration, same instance id, its latest
    subscription, a new incarnation and connection."""

    member: str


@dataclass(frozen=True, slots=True)
class MemberLeaves:
    """``KafkaConsumer.close()``."""

    member: str


@dataclass(frozen=True, slots=True)
class MemberStalls:
    member: str
    for_ms: int


@dataclass(frozen=True, slots=True)
class MemberSubscribes:
    member: str
    topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PartitionsAdded:
    """A topic is created, or its partition count raised (Kafka never lowers it)."""

    topic: str
    count: int


SystemAction = (DeliverRequest | DeliverResponse | MemberPolls | HeartbeatThreadRuns | MemberResumes
                | CoordinatorTimerFires | ClockAdvances)
Fault = (MemberStarts | MemberCrashes | MemberRestarts | MemberLeaves | MemberStalls | MemberSubscribes
         | PartitionsAdded)
Action = SystemAction | Fault
FAULTS = (MemberStarts, MemberCrashes, MemberRestarts, MemberLeaves, MemberStalls, MemberSubscribes,
          PartitionsAdded)

# -- state ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SystemConfig:
    """The coordinator's settings, the consumers' group settings, and the mutants switched on
    (passed to the coordinator, the members and the leaders' assignors alike)."""

    coordinator: co.CoordinatorConfig = field(default_factory=co.CoordinatorConfig)
    session_timeout_ms: int = mb.DEFAULT_SESSION_TIMEOUT_MS
    rebalance_timeout_ms: int = mb.DEFAULT_MAX_POLL_INTERVAL_MS
    heartbeat_interval_ms: int = mb.DEFAULT_HEARTBEAT_INTERVAL_MS
    max_poll_interval_ms: int = mb.DEFAULT_MAX_POLL_INTERVAL_MS
    auto_commit: bool = True
    mutants: frozenset[str] = frozenset()

    def member_config(self, name: str, assignors: tuple[str, ...], instance_id: str | None) -> MemberConfig:
        return mb.member_config(
            name, assignors, instance_id=instance_id, session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms, heartbeat_interval_ms=self.heartbeat_interval_ms,
            max_poll_interval_ms=self.max_poll_interval_ms, group_id=self.coordinator.group_id,
            auto_commit=self.auto_commit)


@dataclass(frozen=True, slots=True)
class Process:
    """One consumer process: its configuration, how many times it was started, and the running
    incarnation (None while it is down: never restarted after a crash, a close or a fatal error)."""

    config: MemberConfig
    incarnation: int
    member: Member | None
    topics: tuple[str, ...]  # what it subscribes to when (re)started: its latest subscription


@dataclass(frozen=True, slots=True)
class SystemState:
    now: int
    group: co.Group
    processes: tuple[tuple[str, Process], ...]  # sorted by member name
    network: Network
    metadata: Metadata  # topic -> partition count, sorted by topic


_evolve_state = evolver(SystemState)
_evolve_process = evolver(Process)


def _state(state: SystemState, **changes: Any) -> SystemState:
    return _evolve_state(state, changes)


def _process(p: Process, **changes: Any) -> Process:
    return _evolve_process(p, changes)


def initial_state(config: SystemConfig, topics: Iterable[tuple[str, int]] = (), now: int = 0) -> SystemState:
    return SystemState(now=now, group=co.initial_group(config.coordinator), processes=(), network=Network(),
                       metadata=tuple(sorted(topics)))


def process(state: SystemState, name: str) -> Process | None:
    for n, p in state.processes:
        if n == name:
            return p
    return None


def running(state: SystemState) -> tuple[Member, ...]:
    """The members whose process runs, by name."""
    return tuple(p.member for _, p in state.processes if p.member is not None)


def running_member(state: SystemState, name: str) -> Member | None:
    p = process(state, name)
    return None if p is None else p.member


def member_by_conn(state: SystemState, conn: str) -> Member | None:
    m = running_member(state, conn.split("#", 1)[0])
    return m if m is not None and m.conn == conn else None


def _with_process(procs: tuple[tuple[str, Process], ...], name: str, p: Process) -> tuple[tuple[str, Process], ...]:
    """``procs`` with ``name``'s process inserted or replaced, kept sorted by name (the entries of
    the other processes are shared, not copied)."""
    for i, (n, _) in enumerate(procs):
        if n == name:
            return procs[:i] + ((name, p),) + procs[i + 1:]
        if n > name:
            return procs[:i] + ((name, p),) + procs[i:]
    return procs + ((name, p),)


def _put_process(state: SystemState, name: str, p: Process) -> SystemState:
    return _state(state, processes=_with_process(state.processes, name, p))


def _put_member(state: SystemState, m: Member) -> SystemState:
    p = process(state, m.name)
    assert p is not None
    return _put_process(state, m.name, _process(p, member=m))


# -- what is enabled -----------------------------------------------------------------------------


def coordinator_due(state: SystemState) -> bool:
    deadline = co.next_deadline(state.group)
    return deadline is not None and deadline <= state.now


def urgent_actions(state: SystemState) -> list[SystemAction]:
    """Every system action enabled at ``state.now`` other than the clock: what must happen before
    time can move on."""
    actions: list[SystemAction] = []
    now = state.now
    if coordinator_due(state):
        actions.append(CoordinatorTimerFires())
    else:
        actions.extend(DeliverRequest(c) for c in state.network.request_conns())
    for conn in state.network.response_conns():
        m = member_by_conn(state, conn)
        if m is not None and mb.can_receive(m):
            actions.append(DeliverResponse(conn))
    for _, p in state.processes:
        m = p.member
        if m is None:
            continue
        if m.stalled_until is not None and m.stalled_until <= now:
            actions.append(MemberResumes(m.name))
        if mb.poll_has_work(m, state.metadata):
            actions.append(MemberPolls(m.name))
        hb = mb.heartbeat_deadline(m)
        if hb is not None and hb <= now:
            actions.append(HeartbeatThreadRuns(m.name))
    return actions


def next_deadline(state: SystemState) -> int | None:
    """The earliest future time something is scheduled: a coordinator timer, a heartbeat thread
    step, the end of a stall."""
    deadlines: list[int] = []
    d = co.next_deadline(state.group)
    if d is not None:
        deadlines.append(d)
    for _, p in state.processes:
        m = p.member
        if m is None:
            continue
        hb = mb.heartbeat_deadline(m)
        if hb is not None:
            deadlines.append(hb)
        if m.stalled_until is not None:
            deadlines.append(m.stalled_until)
    return min(deadlines) if deadlines else None


def enabled(state: SystemState) -> list[SystemAction]:
    """The enabled system actions: the urgent ones, or else the clock advancing to the next
    deadline (nothing at all when the system is quiescent for ever)."""
    actions = urgent_actions(state)
    if actions:
        return actions
    deadline = next_deadline(state)
    return [] if deadline is None else [ClockAdvances(deadline)]


# -- transitions ---------------------------------------------------------------------------------

Result = tuple[SystemState, tuple[Event, ...]] | None


def step(state: SystemState, action: Action, config: SystemConfig, *, trusted: bool = False) -> Result:
    """Take ``action`` from ``state``: ``(next state, events)``, or None when it is not enabled.

    ``trusted=True`` skips the costlier guards (a coordinator timer being due, a poll having work,
    the clock being allowed to move) for a caller that chose ``action`` from what is enabled, as
    the simulator does; the result is the same for an enabled action.
    """
    handler = _HANDLERS.get(type(action))
    if handler is None:
        raise TypeError(f"not an action: {action!r}")
    return handler(state, action, config, trusted)


def _send(network: Network, conn: str, requests: tuple[Request, ...]) -> Network:
    for r in requests:
        network = network.send_request(conn, r)
    return network


def _with_member(state: SystemState, m: Member, requests: tuple[Request, ...],
                 network: Network | None = None) -> SystemState:
    """Store the member's new state and queue what it sent on ``network`` (default: the state's);
    a member that died closes its connection, and its process is down."""
    network = _send(state.network if network is None else network, m.conn, requests)
    p = process(state, m.name)
    assert p is not None
    if m.fatal is None:
        p = _process(p, member=m)
    else:
        network = network.close(m.conn, drop_requests=False)
        p = _process(p, member=None, topics=m.subscription)
    return _state(state, processes=_with_process(state.processes, m.name, p), network=network)


def _deliver_request(state: SystemState, a: DeliverRequest, config: SystemConfig, trusted: bool = False) -> Result:
    if state.network.head_request(a.conn) is None or (not trusted and coordinator_due(state)):
        return None
    network, request = state.network.pop_request(a.conn)
    group, replies, events = co.receive(state.group, a.conn, request, state.now, config.coordinator,
                                        config.mutants)
    for reply in replies:
        network = network.send_response(reply.conn, reply.response)
    return _state(state, group=group, network=network), events


def _deliver_response(state: SystemState, a: DeliverResponse, config: SystemConfig, trusted: bool = False) -> Result:
    m = member_by_conn(state, a.conn)
    if m is None or not mb.can_receive(m) or state.network.head_response(a.conn) is None:
        return None
    network, response = state.network.pop_response(a.conn)
    m, requests, events = mb.receive(m, response, state.now, state.metadata, config.mutants)
    return _with_member(state, m, requests, network), events


def _member_polls(state: SystemState, a: MemberPolls, config: SystemConfig, trusted: bool = False) -> Result:
    m = running_member(state, a.member)
    if m is None or (not trusted and not mb.poll_has_work(m, state.metadata)):
        return None
    m, requests, events = mb.poll(m, state.now, state.metadata, config.mutants)
    return _with_member(state, m, requests), events


def _heartbeat_thread_runs(state: SystemState, a: HeartbeatThreadRuns, config: SystemConfig, trusted: bool = False) -> Result:
    m = running_member(state, a.member)
    if m is None:
        return None
    deadline = mb.heartbeat_deadline(m)
    if deadline is None or deadline > state.now:
        return None
    m, requests, events = mb.heartbeat_tick(m, state.now)
    return _with_member(state, m, requests), events


def _member_resumes(state: SystemState, a: MemberResumes, config: SystemConfig, trusted: bool = False) -> Result:
    m = running_member(state, a.member)
    if m is None or m.stalled_until is None or m.stalled_until > state.now:
        return None
    return _put_member(state, mb.resume(m, state.now)), ()


def _coordinator_timer_fires(state: SystemState, a: CoordinatorTimerFires, config: SystemConfig, trusted: bool = False) -> Result:
    if not coordinator_due(state):
        return None
    group, replies, events = co.expire(state.group, state.now, config.coordinator, config.mutants)
    network = state.network
    for reply in replies:
        network = network.send_response(reply.conn, reply.response)
    return _state(state, group=group, network=network), events


def _clock_advances(state: SystemState, a: ClockAdvances, config: SystemConfig, trusted: bool = False) -> Result:
    if a.to <= state.now:
        return None
    if not trusted:
        deadline = next_deadline(state)
        if urgent_actions(state) or (deadline is not None and a.to > deadline):
            return None
    return _state(state, now=a.to), ()


# -- faults --------------------------------------------------------------------------------------


def _start(state: SystemState, name: str, config: MemberConfig, topics: tuple[str, ...],
           incarnation: int) -> tuple[SystemState, tuple[Event, ...]]:
    m, events = mb.start(config, f"{name}#{incarnation}", topics, state.now)
    return _put_process(state, name, Process(config, incarnation, m, m.subscription)), events


def _member_starts(state: SystemState, a: MemberStarts, config: SystemConfig, trusted: bool = False) -> Result:
    p = process(state, a.member)
    if p is not None and p.member is not None:
        return None
    if "#" in a.member or not a.topics:
        return None
    cfg = config.member_config(a.member, a.assignors, a.instance_id)
    return _start(state, a.member, cfg, a.topics, 1 if p is None else p.incarnation + 1)


def _crash(state: SystemState, name: str) -> tuple[SystemState, tuple[Event, ...]]:
    p = process(state, name)
    assert p is not None and p.member is not None
    m = p.member
    event = mb.member_event(m, ev.SHUTDOWN_COMPLETE, state.now, reason="crash")
    state = _put_process(state, name, _process(p, member=None, topics=m.subscription))
    return _state(state, network=state.network.close(m.conn, drop_requests=True)), (event,)


def _member_crashes(state: SystemState, a: MemberCrashes, config: SystemConfig, trusted: bool = False) -> Result:
    if running_member(state, a.member) is None:
        return None
    return _crash(state, a.member)


def _member_restarts(state: SystemState, a: MemberRestarts, config: SystemConfig, trusted: bool = False) -> Result:
    p = process(state, a.member)
    if p is None:
        return None
    events: tuple[Event, ...] = ()
    if p.member is not None:
        state, events = _crash(state, a.member)
        p = process(state, a.member)
        assert p is not None
    state, started = _start(state, a.member, p.config, p.topics, p.incarnation + 1)
    return state, events + started


def _member_leaves(state: SystemState, a: MemberLeaves, config: SystemConfig, trusted: bool = False) -> Result:
    p = process(state, a.member)
    if p is None or p.member is None:
        return None
    m, requests, events = mb.close(p.member, state.now)
    network = _send(state.network, m.conn, requests).close(m.conn, drop_requests=False)
    state = _put_process(state, a.member, _process(p, member=None, topics=m.subscription))
    return _state(state, network=network), events


def _member_stalls(state: SystemState, a: MemberStalls, config: SystemConfig, trusted: bool = False) -> Result:
    m = running_member(state, a.member)
    if m is None or a.for_ms <= 0:
        return None
    return _put_member(state, mb.stall(m, state.now, a.for_ms)), ()


def _member_subscribes(state: SystemState, a: MemberSubscribes, config: SystemConfig, trusted: bool = False) -> Result:
    m = running_member(state, a.member)
    if m is None or not a.topics:
        return None
    return _put_member(state, mb.subscribe(m, a.topics)), ()


def _partitions_added(state: SystemState, a: PartitionsAdded, config: SystemConfig, trusted: bool = False) -> Result:
    counts = dict(state.metadata)
    if a.count <= counts.get(a.topic, 0):
        return None
    counts[a.topic] = a.count
    return _state(state, metadata=tuple(sorted(counts.items()))), ()


_HANDLERS: dict[type, Callable[[SystemState, Any, SystemConfig, bool], Result]] = {
    DeliverRequest: _deliver_request,
    DeliverResponse: _deliver_response,
    MemberPolls: _member_polls,
    HeartbeatThreadRuns: _heartbeat_thread_runs,
    MemberResumes: _member_resumes,
    CoordinatorTimerFires: _coordinator_timer_fires,
    ClockAdvances: _clock_advances,
    MemberStarts: _member_starts,
    MemberCrashes: _member_crashes,
    MemberRestarts: _member_restarts,
    MemberLeaves: _member_leaves,
    MemberStalls: _member_stalls,
    MemberSubscribes: _member_subscribes,
    PartitionsAdded: _partitions_added,
}


# -- descriptions (counterexamples read like a story) --------------------------------------------------


def describe(state: SystemState, action: Action) -> str:
    """One line saying what ``action`` does in ``state`` (call it before stepping)."""
    if isinstance(action, DeliverRequest):
        head = state.network.head_request(action.conn)
        return f"coordinator receives {type(head).__name__} from {action.conn}"
    if isinstance(action, DeliverResponse):
        head_r = state.network.head_response(action.conn)
        return f"{action.conn} receives {type(head_r).__name__}"
    if isinstance(action, MemberPolls):
        return f"{action.member} polls"
    if isinstance(action, HeartbeatThreadRuns):
        return f"{action.member}'s heartbeat thread runs"
    if isinstance(action, MemberResumes):
        return f"{action.member} resumes polling"
    if isinstance(action, CoordinatorTimerFires):
        return "a coordinator timer fires"
    if isinstance(action, ClockAdvances):
        return f"clock advances to {action.to} ms"
    if isinstance(action, MemberStarts):
        static = f" as static {action.instance_id}" if action.instance_id else ""
        return f"{action.member} starts{static}, assignors {list(action.assignors)}, topics {list(action.topics)}"
    if isinstance(action, MemberStalls):
        return f"{action.member} stalls for {action.for_ms} ms"
    if isinstance(action, MemberSubscribes):
        return f"{action.member} subscribes to {list(action.topics)}"
    if isinstance(action, PartitionsAdded):
        return f"topic {action.topic} grows to {action.count} partitions"
    verb = {MemberCrashes: "crashes", MemberRestarts: "restarts", MemberLeaves: "leaves (close)"}[type(action)]
    return f"{action.member} {verb}"
