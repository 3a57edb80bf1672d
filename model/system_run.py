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

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from model import system as sy
from model.scenario import Scenario
from model.system import Action, SystemConfig, SystemState

Event = dict[str, Any]
Observer = Callable[[SystemState, Action, SystemState, tuple[Event, ...]], None]

_LOCAL = (sy.MemberResumes, sy.MemberPolls, sy.HeartbeatThreadRuns)


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
    could move."""
    actions = sy.urgent_actions(state)
    if not actions:
        return None
    deliveries: list[Action] = []
    timer: Action | None = None
    for a in actions:
        if isinstance(a, _LOCAL):
            return a
        if isinstance(a, sy.CoordinatorTimerFires):
            timer = a
        else:
            deliveries.append(a)
    if timer is not None:
        return timer
    return deliveries[rng.randrange(len(deliveries))] if len(deliveries) > 1 else deliveries[0]


def simulate(scenario: Scenario, *, seed: int = 0, mutants: frozenset[str] = frozenset(),
             observer: Observer | None = None, max_transitions: int = 50_000_000) -> Run:
    """Run ``scenario`` to its ``until`` under the scheduling policy, with ``mutants`` switched on.

    ``observer(before, action, after, events)`` is called after every transition (the invariant
    monitor uses it). ``max_transitions`` guards against a model bug that would never let time
    advance; hitting it raises ``RuntimeError``.
    """
    config = replace(scenario.config, mutants=frozenset(mutants))
    rng = random.Random(seed)
    state = sy.initial_state(config, scenario.topics)
    run = Run(config=config)
    steps = scenario.steps
    next_step = 0
    events = run.events

    def take(action: Action) -> bool:
        nonlocal state
        result = sy.step(state, action, config)
        if result is None:
            return False
        after, emitted = result
        if observer is not None:
            observer(state, action, after, emitted)
        events.extend(emitted)
        state = after
        run.transitions += 1
        return True

    while True:
        while next_step < len(steps) and steps[next_step].at <= state.now:
            step = steps[next_step]
            if not take(step.action):
                run.skipped.append((step.index, f"{sy.describe(state, step.action)}: not possible at "
                                                f"{state.now} ms"))
            next_step += 1
        action = choose(state, rng)
        if action is not None:
            if run.transitions >= max_transitions:
                raise RuntimeError(f"no progress after {max_transitions} transitions at {state.now} ms")
            take(action)
            continue
        targets = [scenario.until + 1]
        deadline = sy.next_deadline(state)
        if deadline is not None:
            targets.append(deadline)
        if next_step < len(steps):
            targets.append(steps[next_step].at)
        target = min(targets)
        if target > scenario.until:
            break
        take(sy.ClockAdvances(target))
    run.final = state
    return run
