"""The invariant monitor looks only at what a transition changed (``model.invariants.protocol``):
members whose value changed, and the overlap check only after some member's partitions changed.
These tests hand it transitions a correct model never makes, and compare it on random walks with a
monitor that looks at everything, to show the shortcuts miss nothing."""

from __future__ import annotations

from collections import Counter
from dataclasses import astuple, replace

from model import events as ev
from model import system as sy
from model.classic.member import Member
from model.invariants.protocol import (
    GENERATION_MONOTONIC,
    REVOKE_BEFORE_ASSIGN,
    SINGLE_OWNER,
    STATIC_REJOIN,
    ZOMBIE_OVERLAP,
    Monitor,
    _changed_members,
    generation_monotonic,
)
from model.system import SystemState
from tests.model.test_stateful_walks import walk
from tests.model.test_system_support import join, run_doc, scenario

RANGE = ["range"]


def settled_pair() -> tuple[Monitor, SystemState, Member, Member]:
    """Two members a and b that have settled on disjoint halves of topic t, and their monitor."""
    out = run_doc(scenario({"t": 4}, [join(0, "a", ["t"], RANGE), join(0, "b", ["t"], RANGE)], 30000))
    assert out.failed() == []
    a, b = sy.running_member(out.final, "a"), sy.running_member(out.final, "b")
    assert a is not None and b is not None and a.owned and b.owned and not a.owned & b.owned
    return out.monitor, out.final, a, b


def test_a_generation_going_down_is_seen_whichever_way_the_state_was_built() -> None:
    _, state, a, _ = settled_pair()
    older = replace(a, generation=replace(a.generation, generation_id=a.generation.generation_id - 1))
    after = sy._put_member(state, older)
    assert [(m.name, n.name) for m, n in _changed_members(state, after)] == [("a", "a")]
    assert [v.members for v in generation_monotonic(state, after)] == [("a",)]
    rebuilt = replace(state, processes=tuple(list(state.processes)))  # equal entries, a new tuple
    assert _changed_members(state, rebuilt) == [] and generation_monotonic(state, rebuilt) == []


def test_an_overlap_made_without_an_event_is_reported_at_the_next_event() -> None:
    """b takes a's partitions in a transition that prints nothing; the next transition prints an
    event but changes no ownership. The overlap must be reported then, as before the shortcut."""
    monitor, state, a, b = settled_pair()
    seen = len(monitor.violations)
    grabbed = sy._put_member(state, replace(b, owned=b.owned | a.owned))
    monitor.observe(state, sy.HeartbeatThreadRuns("b"), grabbed, ())
    assert monitor.violations[seen:] == []  # ownership is checked when events are printed
    later = replace(grabbed, now=grabbed.now + 1)
    event = {"name": ev.GROUP_SYNCED, "timestamp": later.now, "member": "a"}
    monitor.observe(grabbed, sy.HeartbeatThreadRuns("a"), later, (event,))
    found = [v for v in monitor.violations[seen:] if v.invariant == SINGLE_OWNER]
    assert {tp for v in found for tp in v.partitions} == set(a.owned)  # one violation per partition
    assert all(set(v.members) == {"a", "b"} for v in found)


def test_monitor_reports_a_generation_going_down_through_observe() -> None:
    monitor, state, a, _ = settled_pair()
    older = replace(a, generation=replace(a.generation, generation_id=a.generation.generation_id - 1))
    monitor.observe(state, sy.HeartbeatThreadRuns("a"), sy._put_member(state, older), ())
    assert any(v.invariant == GENERATION_MONOTONIC and v.members == ("a",) for v in monitor.violations)


# Random walks rich in overlaps: a cooperative assignor that does not withhold moving partitions makes
# single-owner violations, stalls past the session timeout make zombies, static restarts rebalance.
WALKS = ((("cooperative-sticky",), "coop-no-withhold", range(16)),
         (("cooperative-sticky", "range"), "static-rejoin-rebalances", range(6)),
         (("cooperative-sticky",), "stale-owned-after-sync-rebalance", range(6)))


def test_the_shortcuts_report_exactly_what_looking_at_everything_reports() -> None:
    """The same seeded walks, watched by the monitor as ``groupspec simulate`` runs it and by one that
    looks at every member after every transition: the same violations, at the same times, with the
    same members, partitions and messages."""
    found: Counter[str] = Counter()
    for assignors, mutant, seeds in WALKS:
        for seed in seeds:
            fast, _ = walk(seed, assignors, frozenset({mutant}), steps=600, fault_rate=0.12)
            slow, _ = walk(seed, assignors, frozenset({mutant}), steps=600, fault_rate=0.12, from_scratch=True)
            assert [astuple(v) for v in fast.violations] == [astuple(v) for v in slow.violations], f"{mutant}, seed {seed}"
            found.update(v.invariant for v in slow.violations)
    # the comparison is not an empty one
    assert found[SINGLE_OWNER] > 20 and found[ZOMBIE_OVERLAP] > 5 and found[REVOKE_BEFORE_ASSIGN] > 20
    assert found[STATIC_REJOIN] > 0
