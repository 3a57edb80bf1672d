"""The proofs bound to the executable model: model.proofs.explore, and hand-put bugs it must catch.

The bugs (tests/model/hand_bugs.py) are not registered mutants: they are edits of model.classic's
functions, applied as monkeypatches, so nothing in the encoding knows about them.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from model import system as sy
from model.messages import Errors
from model.proofs import explore as ex
from model.proofs import obligations as reg
from model.proofs import replay as rp
from model.proofs.abstraction import Tracker
from model.proofs.core import RunConfig
from tests.model import hand_bugs


def test_the_correct_model_breaks_nothing_in_every_reachable_state() -> None:
    r = ex.explore(("range",), ex.Bounds(2, 2, 3, 30, 60000), tie=False)
    assert r.exhausted and r.findings == []
    assert r.states > 1000 and r.transitions > r.states  # both consumers start, rebalance, crash or leave


@pytest.mark.slow
def test_frozen_consumers_are_reached_within_and_past_the_session_and_keep_every_invariant_and_the_tie() -> None:
    """The freeze case at its default bounds, on the correct model: consumers thaw within and past their
    session, the client's own session timer runs out at the thaw (it drops its connection), and nothing is
    found -- neither by the invariants and the frozen process's frame nor by the forward tie, which leaves
    only the client-side disconnects with group traffic in flight unchecked (counted)."""
    for ob_id, tie in (("model-explore-invariants", False), ("model-explore-tie", True)):
        (g, b), = [(g, b) for _, g, b in ex.cases(reg.get(ob_id).bounds) if b.freezes and g == ("range",)]
        r = ex.explore(g, b, tie=tie)
        assert r.exhausted and r.findings == [], r.findings[:1]
        assert min(r.thaws_within, r.thaws_past, r.disconnects) > 0
        assert r.cut < r.disconnects and (r.cut == 0 or tie)


def _kind(b: ex.Bounds) -> str:
    return "freeze" if b.freezes else "stall" if b.stalls else "fresh"


def _explored(ob_id: str, kind: str, members: int, *, converse: bool = False) -> Callable[[], str]:
    """One range case (``fresh``, ``stall`` or ``freeze``) of an obligation's exploration at its *default*
    bounds (``ex.cases``), as the default ``groupspec prove`` runs it (with the forward tie for
    model-explore-tie): its findings (at most one), each as ``kind: what``."""
    def run() -> str:
        picked = [(g, b) for _, g, b in ex.cases(reg.get(ob_id).bounds)
                  if _kind(b) == kind and b.members == members and g[0] == "range"]
        assert len(picked) == 1
        g, b = picked[0]
        found = ex.explore(g, b, tie=ob_id == "model-explore-tie", converse=converse, stop_after=1).findings
        return " ".join(f"{f.kind}: {f.what}" for f in found)
    return run


def _failed(ob_id: str) -> Callable[[], str]:
    """The whole obligation, run as the default ``groupspec prove`` runs it: it must fail; its failed
    queries' notes."""
    def run() -> str:
        out = reg.get(ob_id).run(RunConfig())
        assert out.status.value == "failed", ob_id
        return " ".join(q.note for q in out.queries if not q.ok)
    return run


#: Which part of the default ``groupspec prove`` fails on each hand-put bug, and what it says. Every bug
#: of tests/model/hand_bugs.py is here (test_every_hand_bug_is_listed).
CAUGHT_BY: dict[str, tuple[str, Callable[[], str]]] = {
    "sync-before-store": ("invariant: single-owner", _failed("model-explore-invariants")),
    "eager-keeps-partitions": ("invariant: eager-revoke-all", _failed("model-explore-invariants")),
    "generation-not-bumped": ("single-owner", _explored("model-explore-invariants", "stall", 2)),
    "heartbeat-illegal-generation-kept": ("HeartbeatResponse", _explored("model-explore-tie", "stall", 2)),
    "leave-ignored": ("tie:", _explored("model-explore-tie", "fresh", 2)),
    "failed-join-not-retried": ("converse: the encoding allows poll-failed-join",
                                _explored("model-explore-tie", "fresh", 1, converse=True)),
    "committed-offset-ignored": ("receives OffsetFetchResponse", _failed("model-explore-delivery")),
    "frozen-heartbeats": ("process is frozen, yet its state changed",
                          _explored("model-explore-invariants", "freeze", 2)),
    "stalled-consumer-deaf": ("converse: the encoding allows receive-",
                              _explored("model-explore-tie", "stall", 2, converse=True)),
    "thaw-timers-restarted": ("thaw changed more than that it is frozen",
                              _explored("model-explore-invariants", "freeze", 2)),
    "expired-member-kept": ("", _failed("converges-after-change")),
    "cooperative-keeps-revoked": ("", _failed("converges-after-change")),
    "heartbeat-rebalance-ignored": ("", _failed("converges-after-change")),
}


def test_every_hand_bug_is_listed() -> None:
    assert set(CAUGHT_BY) == set(hand_bugs.BUGS)


@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(CAUGHT_BY))
def test_every_hand_put_bug_fails_the_default_prove(bug: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each bug makes an obligation of the default ``groupspec prove`` fail, at its default bounds."""
    expected, run = CAUGHT_BY[bug]
    hand_bugs.apply(bug, monkeypatch)
    found = run()
    assert found and expected in found, found[:600]


def _rejected_heartbeat() -> tuple[sy.SystemState, sy.Action, Tracker]:
    """A seeded run's transition in which a heartbeat answered ILLEGAL_GENERATION about the consumer's
    current generation is delivered, with the tie's history up to it."""
    for seed in range(200):
        run = rp.random_run(seed, members=3, partitions=3, steps=150)
        tracker = Tracker()
        for before, action, after, events in run:
            if rp.forced(before, action) and isinstance(action, sy.DeliverResponse) \
                    and before.network.head_response(action.conn).error is Errors.ILLEGAL_GENERATION:
                return before, action, tracker
            tracker.observe(before, action, after, events)
    raise AssertionError("no seeded run delivers a rejected heartbeat")


def test_the_tie_reads_the_coordinators_heartbeat_answer_not_the_consumers_reaction(
        monkeypatch: pytest.MonkeyPatch) -> None:
    before, action, tracker = _rejected_heartbeat()
    config = rp.replay_config()

    def check() -> rp.StepCheck:
        result = sy.step(before, action, config)
        assert result is not None
        after, events = result
        nxt = tracker.copy()
        nxt.observe(before, action, after, events)
        return rp.check_step(before, action, after, events, tracker, nxt, frozenset(), 20_000)

    correct = check()
    assert correct.ok and not correct.stutter and correct.micro_steps[0].startswith("heartbeat-illegal-generation")
    hand_bugs.apply("heartbeat-illegal-generation-kept", monkeypatch)
    buggy = check()
    assert not buggy.ok  # before: a stutter, accepted


def test_every_obligation_says_what_it_is_about() -> None:
    assert reg.check_registry() == []
    assert "not tied" in reg.about("protocol-steps-reachable")
    assert reg.about("model-explore-tie").startswith("both")
