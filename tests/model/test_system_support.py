"""Helpers shared by the system tests (no tests here): build scenarios, run them with the invariant
monitor, and look at the trace."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from model import events as ev
from model.invariants.protocol import WARNINGS, Monitor, Violation
from model.scenario import parse
from model.system import Action, SystemState
from model.system_run import Run, simulate
from model.types import TopicPartition

FAST = {"session_timeout_ms": 10000, "max_poll_interval_ms": 30000, "heartbeat_interval_ms": 3000,
        "initial_rebalance_delay_ms": 0}


@dataclass
class Outcome:
    run: Run
    monitor: Monitor
    transitions: list[tuple[SystemState, Action, SystemState, tuple[dict[str, Any], ...]]]

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.run.events

    @property
    def final(self) -> SystemState:
        assert self.run.final is not None
        return self.run.final

    def failed(self) -> list[Violation]:
        return [v for v in self.monitor.violations if v.invariant not in WARNINGS]

    def named(self, name: str, member: str | None = None, since: int = -1) -> list[dict[str, Any]]:
        return [e for e in self.events if e["name"] == name and e["timestamp"] >= since
                and (member is None or e.get("member") == member)]

    def owned(self, member: str) -> frozenset[TopicPartition]:
        from model import system as sy
        m = sy.running_member(self.final, member)
        return frozenset() if m is None else m.owned


def run_doc(doc: dict[str, Any], *, seed: int = 0, mutants: frozenset[str] = frozenset(),
            keep_transitions: bool = False) -> Outcome:
    scenario = parse(doc)
    monitor = Monitor(replace(scenario.config, mutants=mutants))
    kept: list[tuple[SystemState, Action, SystemState, tuple[dict[str, Any], ...]]] = []

    def observe(before: SystemState, action: Action, after: SystemState, events: tuple[dict[str, Any], ...]) -> None:
        monitor.observe(before, action, after, events)
        if keep_transitions:
            kept.append((before, action, after, events))

    result = simulate(scenario, seed=seed, mutants=mutants, observer=observe)
    assert result.final is not None
    monitor.finish(result.final)
    return Outcome(result, monitor, kept)


def scenario(topics: dict[str, int], steps: list[dict[str, Any]], until: int, **config: Any) -> dict[str, Any]:
    return {"topics": topics, "config": {**FAST, **config}, "steps": steps, "until": until}


def join(at: int, member: str, topics: list[str], assignors: list[str], instance_id: str | None = None) -> dict[str, Any]:
    return {"at": at, "do": "join", "member": member, "topics": topics, "assignors": assignors,
            "instance_id": instance_id}


def tps(*names: str) -> frozenset[TopicPartition]:
    out = set()
    for n in names:
        topic, _, p = n.rpartition("-")
        out.add(TopicPartition(topic, int(p)))
    return frozenset(out)


def partitions(e: dict[str, Any]) -> frozenset[TopicPartition]:
    return frozenset(ev.partitions_of(e))


def drive(state: SystemState, config: Any, stop: Any = None, limit: int = 100_000,
          until: int | None = None) -> tuple[SystemState, list[dict[str, Any]]]:
    """Run the system by hand, taking the first enabled action each time (the clock last), until
    ``stop(state)`` holds, the clock would pass ``until``, or nothing is enabled."""
    from model import system as sy
    events: list[dict[str, Any]] = []
    for _ in range(limit):
        if stop is not None and stop(state):
            return state, events
        actions = sy.enabled(state)
        if not actions:
            return state, events
        action = actions[0]
        if isinstance(action, sy.ClockAdvances) and until is not None and action.to > until:
            return state, events
        result = sy.step(state, action, config)
        assert result is not None, action
        state, emitted = result
        events.extend(emitted)
    raise AssertionError("drive: no stop after the limit")
