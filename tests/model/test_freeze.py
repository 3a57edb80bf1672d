"""A whole-process freeze (``freeze`` step, ``MemberFreezes``): SIGSTOP then SIGCONT.

Kafka's consumer keeps its timers as wall-clock deadlines (``Heartbeat``'s session, heartbeat and
poll ``Timer`` objects, updated from the clock when a thread next looks), so a process that was
stopped sees on its thaw the time that passed: ``AbstractCoordinator.HeartbeatThread.run`` then
finds ``heartbeat.sessionTimeoutExpired`` and marks the coordinator unknown, while the coordinator,
which heard no heartbeat, has expired the member (``GroupCoordinator`` / ``GroupMetadataManager``
session expiry). A stall (``MemberStalls``) stops only the application thread: the heartbeat goes on.
"""

from __future__ import annotations

from typing import Any

from model import system as sy
from model.classic import member as mb
from model.invariants.protocol import WARNINGS, Monitor
from model.scenario import parse
from model.system_run import simulate

CONFIG = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000, "max_poll_interval_ms": 12000,
          "initial_rebalance_delay_ms": 0}


def scenario(do: str, for_ms: int) -> dict[str, Any]:
    return {"topics": {"orders": 4}, "config": dict(CONFIG),
            "steps": [{"at": 0, "do": "join", "member": "a", "topics": ["orders"], "assignors": ["range"]},
                      {"at": 10000, "do": "join", "member": "b", "topics": ["orders"], "assignors": ["range"]},
                      {"at": 30000, "do": do, "member": "a", "for_ms": for_ms}],
            "until": 60000}


def run(doc: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    sc = parse(doc)
    monitor = Monitor(sc.config)
    result = simulate(sc, seed=0, observer=monitor.observe)
    assert result.final is not None and not result.skipped
    monitor.finish(result.final)
    return result.events, [v.invariant for v in monitor.violations if v.invariant not in WARNINGS]


def named(events: list[dict[str, Any]], name: str, member: str | None = None) -> list[dict[str, Any]]:
    return [e for e in events if e["name"] == name and (member is None or e.get("member") == member)]


def test_a_freeze_step_parses_to_member_freezes() -> None:
    sc = parse(scenario("freeze", 9000))
    assert sc.steps[-1].action == sy.MemberFreezes("a", 9000)


def test_a_frozen_member_neither_heartbeats_nor_reads_nor_polls() -> None:
    m, _ = mb.start(mb.member_config("a", ("range",)), "a#1", ("orders",), 0)
    frozen = mb.freeze(m, 100, 5000)
    assert frozen.frozen and frozen.stalled
    assert mb.heartbeat_deadline(frozen) is None
    assert not mb.can_receive(frozen)
    assert not mb.poll_has_work(frozen, (("orders", 4),))
    assert mb.poll_due(frozen) is None
    thawed = mb.thaw(frozen, 5100)
    assert not thawed.frozen and thawed.stalled  # the application thread comes back as from a stall
    assert mb.can_receive(mb.resume(thawed, 5100))


def test_freeze_past_the_session_expires_the_member_and_on_thaw_it_finds_its_partitions_lost() -> None:
    events, failed = run(scenario("freeze", 9000))
    assert failed == []
    removed = [e for e in named(events, "coordinator_member_removed") if e.get("reason") == "session-timeout"]
    # The coordinator expires a while it is frozen (its last heartbeat before 30 s, plus the 6 s session).
    assert removed and 30000 < removed[0]["timestamp"] < 39000
    # b takes every partition while a is still frozen ...
    b_all = [e for e in named(events, "partitions_assigned", "b") if 30000 < e["timestamp"] < 39000]
    assert b_all and len(b_all[-1]["partitions"]) == 4
    # ... and a, nothing of which ran while frozen, learns only at the thaw: its partitions are lost
    # (its session timer expired: coordinator unknown, then UNKNOWN_MEMBER_ID), and it rejoins.
    a_after = [e for e in events if e.get("member") == "a" and e["timestamp"] >= 30000]
    assert a_after[0]["timestamp"] >= 39000
    assert a_after[0]["name"] == "partitions_lost"
    assert named(events, "partitions_assigned", "a")[-1]["timestamp"] >= 39000


def test_a_stall_as_long_keeps_the_member_in_the_group() -> None:
    """The contrast: the heartbeat thread of a stalled member goes on, so no session expires."""
    events, failed = run(scenario("stall", 9000))
    assert failed == []
    assert not [e for e in named(events, "coordinator_member_removed") if e.get("reason") == "session-timeout"]
    assert not named(events, "partitions_lost", "a")


def test_a_freeze_within_the_session_changes_nothing_in_the_group() -> None:
    events, failed = run(scenario("freeze", 3000))
    assert failed == []
    assert not named(events, "coordinator_member_removed")
    assert not [e for e in events if e["timestamp"] > 30000 and e["name"].startswith("partitions_")]


def test_a_frozen_member_can_be_killed_but_not_closed() -> None:
    config = parse(scenario("freeze", 9000)).config
    state = sy.initial_state(config, (("orders", 4),))
    state, _ = sy.step(state, sy.MemberStarts("a", ("orders",), ("range",)), config) or (state, ())
    frozen = sy.step(state, sy.MemberFreezes("a", 5000), config)
    assert frozen is not None
    state = frozen[0]
    assert sy.step(state, sy.MemberLeaves("a"), config) is None  # close() needs the application thread
    assert sy.step(state, sy.MemberStalls("a", 100), config) is None
    assert sy.step(state, sy.MemberCrashes("a"), config) is not None
    assert sy.MemberThaws("a") not in sy.enabled(state)
    later = sy.step(state, sy.ClockAdvances(5000), config, trusted=True)
    assert later is not None and sy.MemberThaws("a") in sy.urgent_actions(later[0])
