"""Running a scenario through the transition system: the simulator's scheduling policy.

``model.system`` says what *may* happen; this module picks one run, deterministically for a given
seed. The policy, in order, at every point of a run:

1. **Scenario steps first.** When the clock reaches a step's ``at``, the step's fault action is taken
   before anything else that happens at that instant (steps at the same time in document order). A
   step that is not enabled when its time comes (the member died of a fatal error meanwhile, say) is
   skipped and reported.
2. **Then local work, by member name.** A member resuming, polling, or running its heartbeat thread
   (the first such action of the first member in name order). Local work takes no time.
3. **Then coordinator timers**, when one is due (before any request is delivered at that instant).
4. **Then deliveries, chosen by the seed.** Among the connections with a message that can be
   delivered now (requests to the coordinator, responses a member can read), one is picked with
   ``random.Random(seed)``. Different seeds give different, equally legal interleavings; the same
   seed gives the same run.
5. **Only then the clock advances**, to the next deadline or the next step, whichever is first.

The run covers every instant up to and including ``until``. Everything is pure: the seed is the
only source of choice, so a run is reproduced by (scenario, seed, mutants).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from model import system as sy
from model.classic import member as mb
from model.scenario import Scenario
from model.system import Action, SystemConfig, SystemState

Event = dict[str, Any]
Observer = Callable[[SystemState, Action, SystemState, tuple[Event, ...]], None]

_LOCAL = (sy.MemberThaws, sy.MemberResumes, sy.MemberPolls, sy.HeartbeatThreadRuns)


@dataclass
class Run:
    """What a run produced: the trace, the final state, and the steps that could not be taken."""

    config: SystemConfig
    events: list[Event] = field(default_factory=list)
    final: SystemState | None = None
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (step index, why)
    transitions: int = 0


def choose(state: SystemState, rng: random.Random) -> Action | None:
    """The next system action under the policy above (steps aside), or None when only the clock
    could move. (:class:`Scheduler` computes the same choice faster.)"""
    actions = sy.urgent_actions(state)
    if not actions:
        return None
    deliveries: list[Action] = []
    timer: Action | None = None
    for a in actions:
        if isinstance(a, _LOCAL):
            return a
        if isinstance(a, (sy.CoordinatorTimerFires, sy.CoordinatorElected)):
            timer = a
        else:
            deliveries.append(a)
    if timer is not None:
        return timer
    return deliveries[rng.randrange(len(deliveries))] if len(deliveries) > 1 else deliveries[0]


class _Timers:
    """Each member's next deadline of one kind, and the members whose deadline has come.

    A heap finds deadlines as they fall due (stale entries are skipped lazily); a member whose
    deadline has come stays in ``_due`` until its deadline changes, since time only moves forward."""

    def __init__(self) -> None:
        self.at: dict[str, int] = {}
        self._heap: list[tuple[int, str]] = []  # (deadline, name)
        self._due: set[str] = set()

    def put(self, name: str, deadline: int | None) -> None:
        if deadline is None:
            if self.at.pop(name, None) is not None:
                self._due.discard(name)
        elif self.at.get(name) != deadline:
            self.at[name] = deadline
            self._due.discard(name)
            heapq.heappush(self._heap, (deadline, name))

    def due(self, now: int) -> set[str]:
        """The members whose deadline is at or before ``now`` (do not modify the result)."""
        heap, at = self._heap, self.at
        while heap and heap[0][0] <= now:
            deadline, name = heapq.heappop(heap)
            if at.get(name) == deadline:
                self._due.add(name)
        return self._due

    def earliest(self) -> int | None:
        return min(self.at.values()) if self.at else None


class Scheduler:
    """:func:`choose`, computed incrementally.

    States are immutable, so a member's pending local work and next deadline depend only on the
    member value and the metadata, and the coordinator's next deadline only on the group value.
    The scheduler remembers them, refreshes only the members whose value changed since the last
    call (most transitions change one member, or none: :func:`touched` says which), keeps the
    members with poll work in a set and the others' deadlines in heaps. The choice is the same as
    :func:`choose`'s: the first member in name order with local work due, then a due coordinator
    timer, then a seeded pick among the deliveries.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self._processes: tuple[tuple[str, sy.Process], ...] | None = None
        self._metadata: object = None
        self._log: object = None
        self._index: dict[str, int] = {}  # member name -> its entry in ``_processes``
        self._seen: dict[str, mb.Member] = {}  # the member value each entry below was computed from
        self._work: set[str] = set()  # members whose poll() has something to do
        self._local = _Timers()  # each member's next heartbeat-thread step or end of a stall
        self._polls = _Timers()  # each member's next poll work that waits for a time (model.classic.member.poll_due)
        self._readable: dict[str, str] = {}  # member -> its connection, while a thread reads that socket
        self._readable_conns: set[str] = set()  # the values of ``_readable``
        self._group: tuple[object, object, int | None] = (None, None, None)
        self._muted: tuple[object, object, frozenset[str]] = (None, None, frozenset())

    def _refresh(self, state: SystemState, touched: str | None = None) -> None:
        processes = state.processes
        if processes is self._processes and state.metadata is self._metadata and state.log is self._log:
            return
        before = self._processes
        full = state.metadata is not self._metadata
        if state.log is not self._log and not full:
            self._records_arrived(state)  # only record work depends on the log
        self._processes, self._metadata, self._log = processes, state.metadata, state.log
        if processes is before and not full:
            return
        if touched is not None and not full and before is not None and len(before) == len(processes):
            # The transition changed one member's process at most: look at that entry only.
            i = self._index[touched]
            name, p = processes[i]
            if p is not before[i][1]:
                self._update(name, p, state, False)
            return
        self._index = {name: i for i, (name, _) in enumerate(processes)}
        if not full and before is not None and len(before) == len(processes):
            # One process replaced, or a few. States share their unchanged entries, so the changed
            # ones are those that are not the very same object as before.
            changed = [entry for entry, old in zip(processes, before, strict=True) if entry is not old]
        else:
            changed = list(processes)
            for name in [n for n in self._seen if n not in self._index]:
                self._forget(name)
        for name, p in changed:
            self._update(name, p, state, full)

    def _update(self, name: str, p: sy.Process, state: SystemState, full: bool) -> None:
        if p.member is None:
            self._forget(name)
        elif full or self._seen.get(name) is not p.member:
            self._compute(name, p.member, state)

    def _records_arrived(self, state: SystemState) -> None:
        """The log grew: members with records to read now have poll work."""
        for name, m in self._seen.items():
            if name not in self._work and m.consumption is not None and mb.poll_has_work(m, state.metadata, state.log):
                self._work.add(name)

    def _forget(self, name: str) -> None:
        self._seen.pop(name, None)
        self._work.discard(name)
        self._local.put(name, None)
        self._polls.put(name, None)
        self._readable_conns.discard(self._readable.pop(name, ""))

    def _compute(self, name: str, m: mb.Member, state: SystemState) -> None:
        self._seen[name] = m
        self._readable_conns.discard(self._readable.pop(name, ""))
        if mb.can_receive(m):
            self._readable[name] = m.conn
            self._readable_conns.add(m.conn)
        if mb.poll_has_work(m, state.metadata, state.log):
            self._work.add(name)
        else:
            self._work.discard(name)
        self._polls.put(name, mb.poll_due(m))
        if m.frozen_until is not None:  # a frozen process does nothing but thaw (its stall ends no earlier)
            self._local.put(name, m.frozen_until)
            return
        heartbeat, stall = mb.heartbeat_deadline(m), m.stalled_until
        self._local.put(name, stall if heartbeat is None else heartbeat if stall is None else min(heartbeat, stall))

    def coordinator_deadline(self, state: SystemState) -> int | None:
        group, home, deadline = self._group
        if group is not state.group or home is not state.home:
            deadline = sy.coordinator_deadline(state)
            self._group = (state.group, state.home, deadline)
        return deadline

    def muted(self, state: SystemState) -> frozenset[str]:
        """``model.system.muted`` of the state, computed once per group value (and set of orphaned
        SyncGroups)."""
        if self._muted[0] is not state.group or self._muted[1] is not state.network.orphaned:
            self._muted = (state.group, state.network.orphaned, sy.muted(state.group, state.network))
        return self._muted[2]

    def choose(self, state: SystemState, touched: str | None = None) -> Action | None:
        """The next action in ``state``. ``touched``: the only member whose process may differ
        from the state of the previous call (see :func:`touched`); None when unknown."""
        self._refresh(state, touched)
        now = state.now
        work = self._work
        local = self._local.due(now)
        polls = self._polls.due(now)
        if work or local or polls:
            name = min(min(names) for names in (work, local, polls) if names)
            m = self._seen[name]
            if m.frozen_until is not None:
                return sy.MemberThaws(name)  # only its thaw can be due (_compute)
            if m.stalled_until is not None and m.stalled_until <= now:
                return sy.MemberResumes(name)
            if name in work or name in polls:
                return sy.MemberPolls(name)
            return sy.HeartbeatThreadRuns(name)
        deadline = self.coordinator_deadline(state)
        if deadline is not None and deadline <= now:
            return sy.coordinator_action(state)
        network = state.network
        requests = network.requests
        if requests:
            quiet = self.muted(state)
            if quiet:
                requests = tuple(entry for entry in requests if entry[0] not in quiet)
        readable = self._readable_conns
        responses = [conn for conn, _ in network.responses if conn in readable]
        count = len(requests) + len(responses)
        if count == 0:
            return None
        pick = self.rng.randrange(count) if count > 1 else 0
        if pick < len(requests):
            return sy.DeliverRequest(requests[pick][0])
        return sy.DeliverResponse(responses[pick - len(requests)])

    def next_deadline(self, state: SystemState) -> int | None:
        self._refresh(state)
        deadlines = [d for d in (self.coordinator_deadline(state), self._local.earliest(), self._polls.earliest())
                     if d is not None]
        return min(deadlines) if deadlines else None


def touched(action: Action) -> str | None:
    """The one member whose process a system action may change (None: any, as far as the
    scheduler knows). A member's own actions change only its process; the coordinator's and the
    clock's change none, which the scheduler sees without being told."""
    if isinstance(action, (sy.MemberPolls, sy.HeartbeatThreadRuns, sy.MemberResumes, sy.MemberThaws)):
        return action.member
    if isinstance(action, sy.DeliverResponse):
        return action.conn.split("#", 1)[0]
    return None


def simulate(scenario: Scenario, *, seed: int = 0, mutants: frozenset[str] = frozenset(),
             observer: Observer | None = None, max_transitions_per_instant: int = 200_000) -> Run:
    """Run ``scenario`` to its ``until`` under the scheduling policy, with ``mutants`` switched on.

    ``observer(before, action, after, events)`` is called after every transition (the invariant
    monitor uses it). ``max_transitions_per_instant`` guards against a model bug that would never
    let time advance (a rebalance loop taking no time); hitting it raises ``RuntimeError``.
    """
    config = replace(scenario.config, mutants=frozenset(mutants))
    scheduler = Scheduler(random.Random(seed))
    state = sy.initial_state(config, scenario.topics)
    run = Run(config=config)
    steps = scenario.steps
    next_step = 0
    events = run.events

    def take(action: Action, trusted: bool = False) -> bool:
        nonlocal state
        result = sy.step(state, action, config, trusted=trusted)
        if result is None:
            return False
        after, emitted = result
        if observer is not None:
            observer(state, action, after, emitted)
        events.extend(emitted)
        state = after
        run.transitions += 1
        return True

    instant, at_instant = state.now, 0
    hint: str | None = None
    while True:
        if state.now != instant:
            instant, at_instant = state.now, 0
        while next_step < len(steps) and steps[next_step].at <= state.now:
            step = steps[next_step]
            hint = None
            if not take(step.action):
                run.skipped.append((step.index, f"{sy.describe(state, step.action)}: not possible at "
                                                f"{state.now} ms"))
            next_step += 1
        action = scheduler.choose(state, hint)
        hint = None
        if action is not None:
            at_instant += 1
            if at_instant > max_transitions_per_instant:
                raise RuntimeError(f"time does not advance: {max_transitions_per_instant} transitions at "
                                   f"{state.now} ms")
            take(action, trusted=True)
            hint = touched(action)
            continue
        targets = [scenario.until + 1]
        deadline = scheduler.next_deadline(state)
        if deadline is not None:
            targets.append(deadline)
        if next_step < len(steps):
            targets.append(steps[next_step].at)
        target = min(targets)
        if target > scenario.until:
            if state.now < scenario.until:
                take(sy.ClockAdvances(scenario.until), trusted=True)
            break
        take(sy.ClockAdvances(target), trusted=True)
    run.final = state
    return run
