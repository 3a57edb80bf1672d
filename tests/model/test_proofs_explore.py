"""The proofs bound to the executable model: model.proofs.explore, and hand-put bugs it must catch.

The bugs (tests/model/hand_bugs.py) are not registered mutants: they are edits of model.classic's
functions, applied as monkeypatches, so nothing in the encoding knows about them.
"""

from __future__ import annotations

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


@pytest.mark.parametrize(("bug", "invariant"), [("sync-before-store", "single-owner"),
                                                ("eager-keeps-partitions", "eager-revoke-all")])
def test_a_hand_put_bug_fails_model_explore_invariants(bug: str, invariant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    hand_bugs.apply(bug, monkeypatch)
    out = reg.get("model-explore-invariants").run(RunConfig())  # its default bounds
    assert out.status.value == "failed"
    notes = " ".join(q.note for q in out.queries if not q.ok)
    assert f"invariant: {invariant}" in notes


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
