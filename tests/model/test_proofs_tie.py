"""The tie between the symbolic model and the executable one, on hypothesis-generated runs, and the
stickiness certificate on instances a wrong optimum must fail."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model import system as sy
from model.proofs import certificate, findings, replay
from model.proofs.abstraction import Tracker, elements, valuation
from model.proofs.core import RunConfig
from model.proofs.solver import Prover
from model.types import Subscription, TopicPartition


@pytest.mark.slow
def test_replay_obligations_hold_on_default_bounds() -> None:
    for ob in (replay.replay_tie, replay.replay_converse):
        out = ob.run(RunConfig())
        assert out.status.value == "proved", [(q.name, q.note) for q in out.queries if not q.ok]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), members=st.integers(1, 3), partitions=st.integers(1, 3),
       faults=st.sampled_from([0.05, 0.12, 0.2]), variant=st.sampled_from([0, 1]))
def test_every_concrete_step_is_a_symbolic_step(seed: int, members: int, partitions: int, faults: float,
                                                variant: int) -> None:
    run = replay.random_run(seed, members=members, partitions=partitions, steps=60, faults=faults, variant=variant)
    result = replay.replay(run)
    assert not result.failures, [(f.action, f.detail) for f in result.failures]
    assert result.steps == len(run)


def test_a_wrong_step_is_not_a_symbolic_step() -> None:
    """The replay can fail: a concrete step with a tampered outcome does not match any micro-step."""
    run = replay.random_run(3, members=2, partitions=2, steps=80)
    tracker = Tracker()
    for before, action, after, events in run:
        nxt = tracker.copy()
        nxt.observe(before, action, after, events)
        if isinstance(action, sy.DeliverResponse) and after.group.generation > 0 and sy.running(after):
            # pretend the coordinator jumped two generations ahead during a consumer's step
            fake = replace(after, group=replace(after.group, generation=after.group.generation + 2))
            check = replay.check_step(before, action, fake, events, tracker, nxt, frozenset(), 20000)
            assert not check.ok
            return
        tracker = nxt
    raise AssertionError("the run never delivered a response after a generation formed")


def test_abstraction_reads_the_coordinator_and_the_consumers() -> None:
    run = replay.random_run(11, members=2, partitions=2, steps=120, faults=0.02)
    tracker = Tracker()
    for before, action, after, events in run:
        tracker.observe(before, action, after, events)
    last = run[-1][2]
    ks, ps, insts = elements([last], tracker)
    v = valuation(last, tracker, ks, ps, insts, range(-1, last.group.generation + 3))
    assert v.get("ggen") == last.group.generation
    for m in sy.running(last):
        owned = {p for p in ps if v.get("owns", (m.conn, p))}
        assert owned == {f"{tp.topic}-{tp.partition}" for tp in m.owned}


def test_certificate_rejects_a_wrong_optimum(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    topics = {"t": 4}
    subs = [Subscription("a", ("t",), owned=(TopicPartition("t", 0), TopicPartition("t", 1)), generation=1),
            Subscription("b", ("t",), owned=(TopicPartition("t", 2),), generation=1)]
    assignment = {"a": (TopicPartition("t", 0), TopicPartition("t", 1)),
                  "b": (TopicPartition("t", 2), TopicPartition("t", 3))}
    prover = Prover()
    k, ok = certificate.certify(topics, subs, assignment, prover, "by hand")
    assert (k, ok) == (3, True)
    monkeypatch.setattr(certificate, "solve", lambda problem: 2)  # an oracle that under-reports
    prover = Prover()
    _, ok = certificate.certify(topics, subs, assignment, prover, "under-reported")
    assert not ok
    monkeypatch.setattr(certificate, "solve", lambda problem: 4)  # one that over-reports
    prover = Prover()
    _, ok = certificate.certify(topics, subs, assignment, prover, "over-reported")
    assert not ok


def test_static_member_stale_ownership_finding_reproduces() -> None:
    found = findings.static_member_stale_ownership()
    assert found["reproduced"], found["statement"]
    assert any(e["name"] == "partitions_assigned" for e in found["counterexample"])
