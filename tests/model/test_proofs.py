"""The proof obligations: every one is proved on the default bounds, every mutant is refuted with a
concrete counterexample, and the proofs can fail (a proof that cannot fail proves nothing)."""

from __future__ import annotations

import pytest
import z3

from model.mutants import MUTANTS
from model.proofs import delivery, protocol
from model.proofs import obligations as reg
from model.proofs import protocol_model as pm
from model.proofs.core import RunConfig
from model.proofs.protocol_invariants import INVARIANTS
from model.proofs.solver import Prover, Status

FAST = [ob for ob in reg.OBLIGATIONS if ob.id not in {"replay-tie", "replay-converse"}]


def test_registry_is_consistent() -> None:
    assert reg.check_registry() == []
    covered = {m for ob in reg.OBLIGATIONS for m in ob.mutants}
    assert covered == set(MUTANTS), "every registered mutant must be run by some obligation"
    catalogue_ids = {ob.invariant for ob in reg.OBLIGATIONS}
    assert {"single-owner", "revoke-before-assign", "generation-monotonic", "eager-revoke-all",
            "static-rejoin", "converges", "balanced", "sticky"} <= catalogue_ids


@pytest.mark.parametrize("ob", FAST, ids=lambda ob: ob.id)
def test_obligation_is_proved(ob: reg.Obligation) -> None:
    out = ob.run(RunConfig())
    failed = [(q.name, q.result, q.note) for q in out.queries if not q.ok]
    assert out.status is Status.PROVED, failed
    assert out.queries, "an obligation without queries proves nothing"
    if ob.scope == "unbounded":
        assert any(q.expect in ("unsat", "sat") for q in out.queries), "an unbounded proof is solver queries"


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_is_refuted_with_a_concrete_trace(mutant: str) -> None:
    runs = [ob for ob in reg.OBLIGATIONS if mutant in ob.mutants]
    assert runs
    refuted = [ob.run(RunConfig(mutants=frozenset({mutant}))) for ob in runs[:1]]
    out = refuted[0]
    assert out.status is Status.FAILED
    assert out.refutes, out.summary
    assert out.violated is not None
    assert all({"name", "timestamp"} <= set(e) for e in out.counterexample)
    # the trace shows ownership or the coordinator at work, not just bookkeeping
    assert any(e["name"] in {"partitions_assigned", "partitions_revoked", "group_joined", "coordinator_rebalance"}
               for e in out.counterexample)


def test_protocol_induction_fails_exactly_where_each_mutant_changes_the_model() -> None:
    prover = Prover()
    broken = protocol._induction(prover, protocol.GENERATIONS, frozenset({"stale-owned-after-sync-rebalance"}))
    assert broken == ["receive-sync-error"]
    prover = Prover()
    broken = protocol._induction(prover, protocol.COMMITS, frozenset({"commit-old-generation"}))
    assert broken == ["coordinator-offset-commit"]
    prover = Prover()
    broken = protocol._induction(prover, protocol.REVOKE_BEFORE_ASSIGN, frozenset({"coop-no-withhold"}))
    assert broken == ["coordinator-sync"]


def test_delivery_induction_fails_exactly_where_the_mutant_changes_the_model() -> None:
    assert delivery._induction(Prover(), frozenset()) == []
    broken = delivery._induction(Prover(), frozenset({"position-ignores-committed"}))
    assert broken == ["fetch-received"]


def test_no_two_owners_alone_is_not_inductive() -> None:
    """Without its strengthening the single-owner invariant is not preserved: a reason to state them."""
    u = pm.Sorts.unbounded("weak")
    s, t = pm.State(u, "_w0"), pm.State(u, "_w1")
    k, c = z3.Const("k", u.K), z3.Const("c", u.K)
    weak = INVARIANTS["single-owner"]
    solver = z3.Solver()
    solver.set("timeout", 20000)
    solver.add(weak.build(s), pm.action_by_name("poll-complete-join").relation(s, t, k, c, None, frozenset()),
               z3.Not(weak.build(t)))
    assert solver.check() == z3.sat


def test_unknown_is_a_failure() -> None:
    prover = Prover(timeout_ms=50)
    x, y, w = z3.Ints("x y w")
    prover.witness("a cube sum that Z3 cannot settle in 50 ms", [x > 0, y > 0, w > 0, x * x * x + y * y * y == w * w * w])
    assert prover.status in (Status.UNKNOWN, Status.FAILED)
    assert prover.status is not Status.PROVED


def test_select_by_invariant_and_mutant() -> None:
    obligations, mutants = reg.select(["single-owner"])
    assert {ob.invariant for ob in obligations} == {"single-owner"}
    obligations, mutants = reg.select(["commit-old-generation"])
    assert mutants == ["commit-old-generation"]
    assert [ob.id for ob in obligations] == ["protocol-commit-fencing"]
    with pytest.raises(KeyError, match="unknown obligation"):
        reg.select(["no-such-thing"])
