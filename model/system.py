"""A consumer group as one transition system: coordinator + members + network + clock.

A state (:class:`SystemState`) is a frozen value: the time, the coordinator's group
(``model.classic.coordinator``), every consumer process (its configuration and, while it runs, its
``model.classic.member.Member``), the messages in flight (``model.network``), and the cluster metadata
(partition counts). Its transitions are a closed set of small actions, named actor + verb + object:

system actions, which happen by themselves --

* :class:`DeliverRequest` -- the coordinator handles the oldest request of one connection, unless
  that connection is muted (:func:`muted`: a JoinGroup or SyncGroup of it is parked in the group);
* :class:`DeliverResponse` -- a member handles the oldest response of its connection (only while
  one of its threads reads the socket: ``member.can_receive``);
* :class:`MemberPolls` -- a member's application thread calls ``poll()`` and has something to do;
* :class:`HeartbeatThreadRuns` -- a member's heartbeat thread is due (a heartbeat, a poll timeout);
* :class:`MemberResumes` -- a stalled application thread comes back;
* :class:`MemberThaws` -- a frozen process runs again (SIGCONT);
* :class:`CoordinatorTimerFires` -- a coordinator timer is due (session, join, sync, ...);
* :class:`ClockAdvances` -- time moves on, to at most the next deadline;

* :class:`CoordinatorElected` -- after a coordinator failure, a new leader of the group's
  ``__consumer_offsets`` partition takes over and loads the group;

faults and operator actions, which the environment chooses --

* :class:`MemberStarts`, :class:`MemberCrashes`, :class:`MemberRestarts` (same configuration and
  instance id, new incarnation), :class:`MemberLeaves` (``close()``), :class:`MemberStalls`
  (no ``poll()`` for a while), :class:`MemberFreezes` (the whole process stops: SIGSTOP, a VM
  pause), :class:`MemberSubscribes`, :class:`PartitionsAdded`,
  :class:`RecordsProduced` (producers append to partitions' logs), :class:`CoordinatorMoves`
  (leadership of the group's partition moves to another broker), :class:`CoordinatorFails` (its
  leader dies; no coordinator until a new leader is elected).

**The coordinator's home** (:class:`CoordinatorHome`): the group's coordinator is the leader of
partition ``abs(hash(group.id)) % offsets.topic.num.partitions`` of ``__consumer_offsets``
(``model.classic.coordinator.home``). The model has ``brokers`` brokers, ids 0..n-1; the partition's first
leader is ``partition % brokers`` and leadership moves to the next id. A group request that reaches a
broker that is not the coordinator is answered NOT_COORDINATOR (COORDINATOR_NOT_AVAILABLE while the
partition has no leader) by that broker, at once; FindCoordinator is answered by any broker from its
metadata. When leadership moves, the old coordinator unloads the group (its parked requests answered
NOT_COORDINATOR), the requests still queued for it get the same answer, and the new leader loads the
group from the log (``model.classic.coordinator.load``). While the partition has no leader, nothing runs the
group's timers.

:func:`step` is pure and guard-first: it returns ``(next state, events)``, or None when the action is
not enabled. :func:`enabled` lists the enabled system actions.

**Time** is explicit and advances only when nothing else can happen now: message delivery takes no
time, and every timer that is due fires before the clock moves on. So ``ClockAdvances`` is enabled
only when no delivery, poll, heartbeat-thread step, resume or coordinator timer is enabled, and
it moves at most to the next deadline. Among the actions enabled at one instant the order is free
(that is the system's non-determinism), with one rule: a coordinator timer due now fires before
the coordinator handles a request at now (``model.classic.coordinator.expire``'s contract).

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
from dataclasses import dataclass, field, replace
from typing import Any

from model import events as ev
from model.classic import coordinator as co
from model.classic import member as mb
from model.classic.coordinator.home import coordinator_partition
from model.classic.member import Member, MemberConfig, Metadata
from model.consumption import DeliveryConfig, Log
from model.messages import Errors, FindCoordinatorRequest, FindCoordinatorResponse, Request, SyncGroupResponse
from model.network import Disconnect, Network
from model.system_evolve import evolver
from model.types import TopicPartition

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
class MemberThaws:
    """The end of a :class:`MemberFreezes`: the process's threads run again."""

    member: str


@dataclass(frozen=True, slots=True)
class CoordinatorTimerFires:
    pass


@dataclass(frozen=True, slots=True)
class ClockAdvances:
    to: int


@dataclass(frozen=True, slots=True)
class CoordinatorElected:
    pass


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
class MemberFreezes:
    """The whole consumer process stops for ``for_ms`` (SIGSTOP, then SIGCONT): no heartbeat, no
    poll, nothing read from the socket (``model.classic.member.freeze``); unlike
    :class:`MemberStalls`, which stops only the application thread. A frozen process can still be
    killed (crash, restart); it cannot leave, subscribe or stall until it thaws."""

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


@dataclass(frozen=True, slots=True)
class RecordsProduced:
    """Producers append ``count`` records to each partition of ``topic`` (or to ``partition`` only)."""

    topic: str
    count: int
    partition: int | None = None


@dataclass(frozen=True, slots=True)
class CoordinatorMoves:
    """Leadership of the group's ``__consumer_offsets`` partition moves to the next broker (a
    controlled shutdown, a reassignment): the new leader loads the group at once."""


@dataclass(frozen=True, slots=True)
class CoordinatorFails:
    """The coordinator's broker dies: the partition has no leader for ``for_ms``, then the next
    broker is elected and loads the group."""

    for_ms: int


SystemAction = (DeliverRequest | DeliverResponse | MemberPolls | HeartbeatThreadRuns | MemberResumes
                | MemberThaws | CoordinatorTimerFires | ClockAdvances | CoordinatorElected)
Fault = (MemberStarts | MemberCrashes | MemberRestarts | MemberLeaves | MemberStalls | MemberFreezes
         | MemberSubscribes | PartitionsAdded | RecordsProduced | CoordinatorMoves | CoordinatorFails)
Action = SystemAction | Fault
# The faults that can move the group: every Fault but RecordsProduced, which only grows the log and
# changes nothing the coordinator or a member's group state sees (the monitor's converges and
# static-rejoin take these as disturbances; a producer appending every few hundred ms must not be one).
GROUP_FAULTS = (MemberStarts, MemberCrashes, MemberRestarts, MemberLeaves, MemberStalls, MemberFreezes,
                MemberSubscribes, PartitionsAdded, CoordinatorMoves, CoordinatorFails)

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
    delivery: DeliveryConfig | None = None  # records, positions and commits (None: group membership only)
    brokers: int = 3
    mutants: frozenset[str] = frozenset()
    metadata_max_age_ms: int = mb.DEFAULT_METADATA_MAX_AGE_MS  # metadata.max.age.ms of every consumer

    def member_config(self, name: str, assignors: tuple[str, ...], instance_id: str | None) -> MemberConfig:
        return mb.member_config(
            name, assignors, instance_id=instance_id, session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms, heartbeat_interval_ms=self.heartbeat_interval_ms,
            max_poll_interval_ms=self.max_poll_interval_ms, group_id=self.coordinator.group_id,
            auto_commit=self.auto_commit, delivery=self.delivery, metadata_max_age_ms=self.metadata_max_age_ms)


@dataclass(frozen=True, slots=True)
class Process:
    """One consumer process: its configuration, how many times it was started, and the running
    incarnation (None while it is down: never restarted after a crash, a close or a fatal error)."""

    config: MemberConfig
    incarnation: int
    member: Member | None
    topics: tuple[str, ...]  # what it subscribes to when (re)started: its latest subscription


@dataclass(frozen=True, slots=True)
class CoordinatorHome:
    """Which broker coordinates the group: the leader of ``partition`` of ``__consumer_offsets``
    (None while it has none, until ``elected_at``); ``last`` is the latest leader."""

    partition: int
    leader: int | None
    last: int
    elected_at: int | None = None


@dataclass(frozen=True, slots=True)
class SystemState:
    now: int
    group: co.Group
    processes: tuple[tuple[str, Process], ...]  # sorted by member name
    network: Network
    metadata: Metadata  # topic -> partition count, sorted by topic
    log: Log = ()  # log end offset of every partition that has records, sorted
    home: CoordinatorHome = CoordinatorHome(0, 0, 0)


_evolve_state = evolver(SystemState)
_evolve_process = evolver(Process)


def _state(state: SystemState, **changes: Any) -> SystemState:
    return _evolve_state(state, changes)


def _process(p: Process, **changes: Any) -> Process:
    return _evolve_process(p, changes)


def initial_state(config: SystemConfig, topics: Iterable[tuple[str, int]] = (), now: int = 0) -> SystemState:
    partition = coordinator_partition(config.coordinator.group_id, config.coordinator.offsets_topic_num_partitions)
    leader = partition % config.brokers
    return SystemState(now=now, group=co.initial_group(config.coordinator), processes=(), network=Network(),
                       metadata=tuple(sorted(topics)), home=CoordinatorHome(partition, leader, leader))


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


def muted(group: co.Group, network: Network | None = None) -> frozenset[str]:
    """The connections the coordinator's broker reads nothing from: those with a JoinGroup or SyncGroup
    parked in the group. Kafka's ``SocketServer`` mutes a connection once it has read a request and
    unmutes it only when that request's response is sent (``Processor``: ``mute`` after a receive,
    ``unmute`` in ``processCompletedSends``), and ``GroupMetadataManager`` relies on it while it
    parks a JoinGroup / SyncGroup (``awaitingJoinFuture`` / ``awaitingSyncFuture``). The requests a
    muted connection sent meanwhile (a LeaveGroup on close, heartbeats, commits) wait behind it."""
    parked = frozenset(c for m in group.members for c in (m.awaiting_join, m.awaiting_sync) if c is not None)
    # a SyncGroup left parked by a consumer that disconnected mutes its old socket, not the new one
    return parked - network.orphaned if network is not None and network.orphaned else parked


def coordinator_deadline(state: SystemState) -> int | None:
    """When the coordinator side next acts: a group timer, or, while the group's partition has no
    leader, the election (no timers run then)."""
    if state.home.leader is None:
        return state.home.elected_at
    return co.next_deadline(state.group)


def coordinator_due(state: SystemState) -> bool:
    deadline = coordinator_deadline(state)
    return deadline is not None and deadline <= state.now


def coordinator_action(state: SystemState) -> SystemAction:
    """The coordinator-side action that is due (call when :func:`coordinator_due`)."""
    return CoordinatorElected() if state.home.leader is None else CoordinatorTimerFires()


def member_polls_now(m: Member, state: SystemState) -> bool:
    if mb.poll_has_work(m, state.metadata, state.log):
        return True
    due = mb.poll_due(m)
    return due is not None and due <= state.now


def urgent_actions(state: SystemState) -> list[SystemAction]:
    """Every system action enabled at ``state.now`` other than the clock: what must happen before
    time can move on."""
    actions: list[SystemAction] = []
    now = state.now
    if coordinator_due(state):
        actions.append(coordinator_action(state))
    else:
        quiet = muted(state.group, state.network)
        actions.extend(DeliverRequest(c) for c in state.network.request_conns() if c not in quiet)
    for conn in state.network.response_conns():
        m = member_by_conn(state, conn)
        if m is not None and mb.can_receive(m):
            actions.append(DeliverResponse(conn))
    for _, p in state.processes:
        m = p.member
        if m is None:
            continue
        if m.frozen_until is not None:  # a frozen process does nothing but thaw
            if m.frozen_until <= now:
                actions.append(MemberThaws(m.name))
            continue
        if m.stalled_until is not None and m.stalled_until <= now:
            actions.append(MemberResumes(m.name))
        if member_polls_now(m, state):
            actions.append(MemberPolls(m.name))
        hb = mb.heartbeat_deadline(m)
        if hb is not None and hb <= now:
            actions.append(HeartbeatThreadRuns(m.name))
    return actions


def next_deadline(state: SystemState) -> int | None:
    """The earliest future time something is scheduled: a coordinator timer, a heartbeat thread
    step, the end of a stall."""
    deadlines: list[int] = []
    d = coordinator_deadline(state)
    if d is not None:
        deadlines.append(d)
    for _, p in state.processes:
        m = p.member
        if m is None:
            continue
        hb = mb.heartbeat_deadline(m)
        if hb is not None:
            deadlines.append(hb)
        due = mb.poll_due(m)
        if due is not None:
            deadlines.append(due)
        if m.stalled_until is not None:
            deadlines.append(m.stalled_until)
        if m.frozen_until is not None:
            deadlines.append(m.frozen_until)
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


def _not_coordinator(home: CoordinatorHome) -> Errors:
    """What a broker that is not the group's coordinator answers."""
    return Errors.COORDINATOR_NOT_AVAILABLE if home.leader is None else Errors.NOT_COORDINATOR


def _send(network: Network, home: CoordinatorHome, m: Member, requests: tuple[Request | Disconnect, ...]) -> Network:
    """Queue what ``m`` sent. A group request sent to a broker that is not the coordinator is
    answered at once by that broker (NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE). (A
    :class:`Disconnect` is handled by :func:`_with_member` before.)"""
    for r in requests:
        if isinstance(r, Disconnect):
            continue
        if isinstance(r, FindCoordinatorRequest) or m.coordinator_node == home.leader:
            network = network.send_request(m.conn, r)
        else:
            network = network.send_response(m.conn, co.error_response(r, _not_coordinator(home)))
    return network


def _disconnect(state: SystemState, network: Network, conn: str) -> Network:
    """A consumer drops its connection to the coordinator (:class:`model.network.Disconnect`): every
    request it had in flight fails on its side as a DisconnectException, which its handlers treat as
    COORDINATOR_NOT_AVAILABLE (a retriable error; ``CoordinatorResponseHandler.onFailure``). The
    coordinator keeps a SyncGroup it holds parked; its answer goes to the old socket."""
    gone = Errors.COORDINATOR_NOT_AVAILABLE
    answered = tuple(r if isinstance(r, FindCoordinatorResponse) else replace(r, error=gone)
                     for r in network.responses_for(conn))
    parked_sync = any(cm.awaiting_sync == conn for cm in state.group.members) and conn not in network.orphaned
    parked = (SyncGroupResponse(gone),) if parked_sync else ()
    queued = tuple(co.error_response(r, gone) for r in network.requests_for(conn)
                   if not isinstance(r, FindCoordinatorRequest))
    return network.disconnect(conn, answered + parked + queued, parked_sync)


def _with_member(state: SystemState, m: Member, requests: tuple[Request | Disconnect, ...],
                 network: Network | None = None) -> SystemState:
    """Store the member's new state and queue what it sent on ``network`` (default: the state's);
    a member that died closes its connection, and its process is down."""
    network = state.network if network is None else network
    if any(isinstance(r, Disconnect) for r in requests):
        network = _disconnect(state, network, m.conn)
    network = _send(network, state.home, m, requests)
    p = process(state, m.name)
    assert p is not None
    if m.fatal is None:
        p = _process(p, member=m)
    else:
        network = network.close(m.conn, drop_requests=False)
        p = _process(p, member=None, topics=m.subscription)
    return _state(state, processes=_with_process(state.processes, m.name, p), network=network)


def _deliver_request(state: SystemState, a: DeliverRequest, config: SystemConfig, trusted: bool = False) -> Result:
    if state.network.head_request(a.conn) is None or (not trusted and coordinator_due(state)) \
            or a.conn in muted(state.group, state.network):
        return None
    network, request = state.network.pop_request(a.conn)
    if isinstance(request, FindCoordinatorRequest):  # any broker answers from its metadata
        leader = state.home.leader
        answer = FindCoordinatorResponse(Errors.NONE, leader) if leader is not None else \
            FindCoordinatorResponse(Errors.COORDINATOR_NOT_AVAILABLE)
        return _state(state, network=network.send_response(a.conn, answer)), ()
    group, replies, events = co.receive(state.group, a.conn, request, state.now, config.coordinator,
                                        config.mutants)
    network = _reply(network, replies)
    return _state(state, group=group, network=network), events


def _deliver_response(state: SystemState, a: DeliverResponse, config: SystemConfig, trusted: bool = False) -> Result:
    m = member_by_conn(state, a.conn)
    if m is None or not mb.can_receive(m) or state.network.head_response(a.conn) is None:
        return None
    network, response = state.network.pop_response(a.conn)
    m, requests, events = mb.receive(m, response, state.now, state.metadata, config.mutants, state.log)
    return _with_member(state, m, requests, network), events


def _member_polls(state: SystemState, a: MemberPolls, config: SystemConfig, trusted: bool = False) -> Result:
    m = running_member(state, a.member)
    if m is None or m.frozen or (not trusted and not member_polls_now(m, state)):
        return None
    m, requests, events = mb.poll(m, state.now, state.metadata, config.mutants, state.log)
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
    if m is None or m.frozen or m.stalled_until is None or m.stalled_until > state.now:
        return None
    return _put_member(state, mb.resume(m, state.now)), ()


def _member_thaws(state: SystemState, a: MemberThaws, config: SystemConfig, trusted: bool = False) -> Result:
    m = running_member(state, a.member)
    if m is None or m.frozen_until is None or m.frozen_until > state.now:
        return None
    return _put_member(state, mb.thaw(m, state.now)), ()


def _coordinator_timer_fires(state: SystemState, a: CoordinatorTimerFires, config: SystemConfig, trusted: bool = False) -> Result:
    if state.home.leader is None or not coordinator_due(state):
        return None
    group, replies, events = co.expire(state.group, state.now, config.coordinator, config.mutants)
    network = _reply(state.network, replies)
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
    m, events = mb.start(config, f"{name}#{incarnation}", topics, state.now, state.home.leader)
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
    if p is None or p.member is None or p.member.frozen:  # close() is a call of the (stopped) application
        return None
    m, requests, committed = mb.close_commit(p.member, state.now)
    if requests:  # maybeAutoCommitOffsetsSync waits for the answer before onLeavePrepare
        state = _state(state, network=_send(state.network, state.home, m, requests))
        state, m, answered = _await_pending(state, m, config)
        committed += answered
    m, requests, events = mb.close(m, state.now)
    events = committed + events
    state = _state(state, network=_send(state.network, state.home, m, requests))
    if m.consumption is not None:
        state, m, answered = _await_pending(state, m, config)
        events = events[:-1] + answered + events[-1:]  # shutdown_complete stays last
    network = state.network.close(m.conn, drop_requests=False)
    state = _put_process(state, a.member, _process(p, member=None, topics=m.subscription))
    return _state(state, network=network), events


def _await_pending(state: SystemState, m: Member, config: SystemConfig) -> tuple[SystemState, Member, tuple[Event, ...]]:
    """``KafkaConsumer.close`` waits for the answers to what it sent (``maybeAutoCommitOffsetsSync``,
    ``awaitPendingRequests``): the coordinator handles the closing member's queued requests in
    order (its due timers first), and the member reads the answers (returned as it is after them),
    so a commit made on close is in the trace. Requests behind a parked JoinGroup / SyncGroup wait
    (:func:`muted`). Used for the commit of ``close()`` always, and with records for everything
    else; without records the other answers only matter to the group, which handles the requests
    as before, at any later point."""
    events: list[Event] = []
    while True:
        if state.home.leader is not None and coordinator_due(state):
            result = _coordinator_timer_fires(state, CoordinatorTimerFires(), config)
        elif state.network.head_request(m.conn) is not None and m.conn not in muted(state.group, state.network):
            result = _deliver_request(state, DeliverRequest(m.conn), config, trusted=True)
        elif state.network.head_response(m.conn) is not None:
            network, response = state.network.pop_response(m.conn)
            m, _, answered = mb.receive(m, response, state.now, state.metadata, config.mutants, state.log)
            result = _state(state, network=network), answered
        else:
            return state, m, tuple(events)
        assert result is not None
        state, emitted = result
        events.extend(emitted)


def _member_stalls(state: SystemState, a: MemberStalls, config: SystemConfig, trusted: bool = False) -> Result:
    m = running_member(state, a.member)
    if m is None or m.frozen or a.for_ms <= 0:
        return None
    return _put_member(state, mb.stall(m, state.now, a.for_ms)), ()


def _member_freezes(state: SystemState, a: MemberFreezes, config: SystemConfig, trusted: bool = False) -> Result:
    m = running_member(state, a.member)
    if m is None or a.for_ms <= 0:
        return None
    return _put_member(state, mb.freeze(m, state.now, a.for_ms)), ()


def _member_subscribes(state: SystemState, a: MemberSubscribes, config: SystemConfig, trusted: bool = False) -> Result:
    m = running_member(state, a.member)
    if m is None or m.frozen or not a.topics:
        return None
    return _put_member(state, mb.subscribe(m, a.topics)), ()


def _partitions_added(state: SystemState, a: PartitionsAdded, config: SystemConfig, trusted: bool = False) -> Result:
    counts = dict(state.metadata)
    if a.count <= counts.get(a.topic, 0):
        return None
    counts[a.topic] = a.count
    return _state(state, metadata=tuple(sorted(counts.items()))), ()


def _records_produced(state: SystemState, a: RecordsProduced, config: SystemConfig, trusted: bool = False) -> Result:
    partitions = dict(state.metadata).get(a.topic, 0)
    if a.count <= 0 or partitions == 0 or (a.partition is not None and not 0 <= a.partition < partitions):
        return None
    log = dict(state.log)
    for p in range(partitions) if a.partition is None else (a.partition,):
        tp = TopicPartition(a.topic, p)
        log[tp] = log.get(tp, 0) + a.count
    return _state(state, log=tuple(sorted(log.items()))), ()


def _reply(network: Network, replies: tuple[co.Reply, ...]) -> Network:
    """Queue the coordinator's replies, each on the connection its request came from."""
    for reply in replies:
        network = network.send_response(reply.conn, reply.response)
    return network


def _unload(state: SystemState, config: SystemConfig, error: Errors) -> tuple[SystemState, tuple[Event, ...]]:
    """The old coordinator gives the group up (``GroupMetadataManager.onUnloaded``): every group
    request still queued for it gets ``error`` from the broker (FindCoordinator goes to any broker
    and stays queued), then its parked requests are answered NOT_COORDINATOR."""
    group, replies, events = co.unload(state.group, state.now, config.coordinator)
    network = state.network.answer_queued(
        lambda r: None if isinstance(r, FindCoordinatorRequest) else co.error_response(r, error))
    return _state(state, group=group, network=_reply(network, replies)), events


def _load(state: SystemState, leader: int, config: SystemConfig) -> tuple[SystemState, tuple[Event, ...]]:
    group, replies, events = co.load_with_events(state.group, state.now, config.coordinator, config.mutants)
    home = CoordinatorHome(state.home.partition, leader, leader)
    return _state(state, group=group, network=_reply(state.network, replies), home=home), events


def _coordinator_moves(state: SystemState, a: CoordinatorMoves, config: SystemConfig, trusted: bool = False) -> Result:
    if state.home.leader is None or config.brokers < 2:
        return None
    state, unloaded = _unload(state, config, Errors.NOT_COORDINATOR)
    state, loaded = _load(state, (state.home.last + 1) % config.brokers, config)
    return state, unloaded + loaded


def _coordinator_fails(state: SystemState, a: CoordinatorFails, config: SystemConfig, trusted: bool = False) -> Result:
    if state.home.leader is None or a.for_ms <= 0 or config.brokers < 2:
        return None
    # The dead broker answers nothing and logs nothing: every request its clients had sent it,
    # queued or parked in the group, fails when the connection breaks (a DisconnectException), which
    # the client treats as these errors: markCoordinatorUnknown, and retry (a parked JoinGroup rejoins).
    state, _ = _unload(state, config, Errors.COORDINATOR_NOT_AVAILABLE)
    home = CoordinatorHome(state.home.partition, None, state.home.last, state.now + a.for_ms)
    return _state(state, home=home), ()


def _coordinator_elected(state: SystemState, a: CoordinatorElected, config: SystemConfig, trusted: bool = False) -> Result:
    home = state.home
    if home.leader is not None or home.elected_at is None or home.elected_at > state.now:
        return None
    return _load(state, (home.last + 1) % config.brokers, config)


_HANDLERS: dict[type, Callable[[SystemState, Any, SystemConfig, bool], Result]] = {
    DeliverRequest: _deliver_request,
    DeliverResponse: _deliver_response,
    MemberPolls: _member_polls,
    HeartbeatThreadRuns: _heartbeat_thread_runs,
    MemberResumes: _member_resumes,
    MemberThaws: _member_thaws,
    CoordinatorTimerFires: _coordinator_timer_fires,
    ClockAdvances: _clock_advances,
    MemberStarts: _member_starts,
    MemberCrashes: _member_crashes,
    MemberRestarts: _member_restarts,
    MemberLeaves: _member_leaves,
    MemberStalls: _member_stalls,
    MemberFreezes: _member_freezes,
    MemberSubscribes: _member_subscribes,
    PartitionsAdded: _partitions_added,
    RecordsProduced: _records_produced,
    CoordinatorMoves: _coordinator_moves,
    CoordinatorFails: _coordinator_fails,
    CoordinatorElected: _coordinator_elected,
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
    if isinstance(action, MemberThaws):
        return f"{action.member}'s process runs again (SIGCONT)"
    if isinstance(action, MemberFreezes):
        return f"{action.member}'s whole process stops for {action.for_ms} ms (SIGSTOP)"
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
    if isinstance(action, RecordsProduced):
        where = f"partition {action.partition} of" if action.partition is not None else "each partition of"
        return f"producers append {action.count} records to {where} {action.topic}"
    if isinstance(action, CoordinatorMoves):
        return f"the coordinator moves from broker {state.home.leader}"
    if isinstance(action, CoordinatorFails):
        return f"the coordinator (broker {state.home.leader}) fails; no leader for {action.for_ms} ms"
    if isinstance(action, CoordinatorElected):
        return "a new coordinator is elected and loads the group"
    verb = {MemberCrashes: "crashes", MemberRestarts: "restarts", MemberLeaves: "leaves (close)"}[type(action)]
    return f"{action.member} {verb}"
