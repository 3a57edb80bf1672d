"""The delivery proofs (model.proofs.delivery) can fail where they should: the assumption they state
is needed, the tie rejects record steps the symbolic model does not allow, and the mutant's
concrete run loses records that the correct model delivers."""

from __future__ import annotations

import random

import pytest

from model.proofs import delivery as dl
from model.proofs.core import RunConfig
from model.proofs.solver import Prover
from model.records import summarize, totals
from model.system_run import simulate
from model.types import TopicPartition

MUTANT = frozenset({"position-ignores-committed"})
TP = TopicPartition("t", 0)


def test_auto_commit_over_async_processing_breaks_the_induction_at_the_commit() -> None:
    """The assumption delivery-settings is needed: without it the commit step breaks at-least-once."""
    broken = dl._induction(Prover(), frozenset(), f=dl._frame(safe=False))
    assert broken == ["commit-sent"]


def test_committed_not_ahead_shows_the_documented_loss_is_reachable() -> None:
    out = dl.delivery_committed_not_ahead.run(RunConfig())
    tight = [q for q in out.queries if q.name.startswith("tight")]
    assert len(tight) == 2 and all(q.result == "sat" for q in tight)


def _abstract(committed: int, member: dl.Local, log_end: int = 20) -> dl.Abstract:
    return dl.Abstract(log_end=log_end, committed=committed, in_flight=-1, members={"b#1": member})


def test_the_tie_accepts_a_position_from_the_committed_offset() -> None:
    chains = dl.Chains(dl.mutant_scenario().config, 5000)
    before = _abstract(10, (True, False, 0, 0, True, True, 10))
    after = _abstract(10, (True, True, 10, 10, False, False, 0))
    assert chains.explained(before, after, 1) == "sat"


def test_the_tie_rejects_a_position_that_ignores_the_committed_offset() -> None:
    chains = dl.Chains(dl.mutant_scenario().config, 5000)  # auto.offset.reset = latest
    before = _abstract(10, (True, False, 0, 0, True, True, 10), log_end=100)
    after = _abstract(10, (True, True, 100, 100, False, False, 0), log_end=100)
    assert chains.explained(before, after, 5) == "unsat"  # not even with 4 polls of 5 after placing at 10


def test_the_tie_rejects_a_position_going_back_or_jumping_past_max_poll_records() -> None:
    chains = dl.Chains(dl.mutant_scenario().config, 5000)  # max.poll.records = 5
    at = _abstract(2, (True, True, 8, 8, False, False, 0))
    assert chains.explained(at, _abstract(2, (True, True, 6, 6, False, False, 0)), 5) == "unsat"
    assert chains.explained(at, _abstract(2, (True, True, 14, 14, False, False, 0)), 1) == "unsat"
    assert chains.explained(at, _abstract(2, (True, True, 13, 13, False, False, 0)), 1) == "sat"


def test_the_tie_finds_the_mutant_at_the_offset_fetch_answer() -> None:
    result = dl.TieResult()
    dl.check_run(dl.mutant_scenario(), 0, result, 5000, mutants=MUTANT)
    assert result.divergences
    assert "receives OffsetFetchResponse" in result.divergences[0]
    clean = dl.TieResult()
    dl.check_run(dl.mutant_scenario(), 0, clean, 5000)
    assert clean.divergences == [] and clean.consumed_checked > 0


@pytest.mark.parametrize("reset, lost, duplicated", [("latest", True, False), ("earliest", False, True)])
def test_the_mutant_loses_records_under_latest_and_rereads_under_earliest(reset: str, lost: bool,
                                                                          duplicated: bool) -> None:
    scenario = dl.mutant_scenario(reset)
    correct = simulate(scenario, seed=0)
    mutated = simulate(scenario, seed=0, mutants=MUTANT)
    assert correct.final is not None and mutated.final is not None
    good = totals(summarize(correct.events, correct.final.log))
    bad = totals(summarize(mutated.events, mutated.final.log))
    assert good.lost == 0 and good.duplicated == 0 and good.consumed == good.produced
    assert (bad.lost > 0) is lost
    assert (bad.duplicated > 0) is duplicated


def test_the_mutant_is_refuted_with_the_records_it_loses() -> None:
    out = dl.delivery_no_gap.run(RunConfig(mutants=MUTANT))
    assert out.refutes and out.violated == "no-gap"
    assert out.facts["broken_by"] == ["fetch-received"]
    assert out.facts["records"]["with_mutant"]["lost"] > 0
    assert "OffsetFetchResponse" in out.facts["first_divergence"]


@pytest.mark.parametrize("policy", ["sync-revoke", "sync", "auto", "async-commit"])
def test_committing_groups_reading_from_the_earliest_offset_lose_nothing(policy: str) -> None:
    """What the proof says, on concrete runs: with a commit policy and earliest, no record is lost."""
    rng = random.Random(7)
    for seed in range(3):
        scenario = dl.random_scenario(rng, policy, reset="earliest")
        run = simulate(scenario, seed=seed)
        assert run.final is not None
        records = totals(summarize(run.events, run.final.log))
        assert records.consumed > 0
        assert records.lost == 0 and records.before_start == 0
