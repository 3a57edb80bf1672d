"""Tests added for mutants of model/ that every layer let through (benchmarks/bench_mutation.py; the list and
why each matters is in docs/proofs.md, "Mutation testing"). Each pins one behaviour a user relies on that no
earlier test, example scenario, random walk or proof obligation reached.
"""

from __future__ import annotations

import pytest

from model import system as sy
from model.classic.coordinator import ModelPreconditionError, member
from model.types import TopicPartition
from tests.model.test_coordinator_harness import Harness


def test_producing_to_one_partition_appends_to_that_partition_only() -> None:
    """A scenario's ``produce`` step with a ``partition`` (docs/scenarios.md); the mutant
    ``model/system.py:686:ReplaceUnaryOperator_Delete_Not`` refused every partition that exists."""
    config = sy.SystemConfig()
    state = sy.initial_state(config, [("t", 3)])
    result = sy.step(state, sy.RecordsProduced("t", 5, partition=1), config)
    assert result is not None
    after, _ = result
    assert dict(after.log) == {TopicPartition("t", 1): 5}
    # a partition the topic does not have is not a step
    assert sy.step(state, sy.RecordsProduced("t", 5, partition=3), config) is None
    assert sy.step(state, sy.RecordsProduced("t", 5, partition=-1), config) is None


@pytest.mark.parametrize("partition", [None, 1], ids=["every-partition", "one-partition"])
def test_a_produce_of_no_records_is_not_a_step(partition: int | None) -> None:
    """A produce that appends no record is refused (``step`` returns None), so a run lists it among the steps
    it could not take instead of counting a transition that changed nothing. The scenario parser refuses
    ``records: 0`` already; this holds the system for callers that build actions themselves
    (model.proofs.explore). The mutant ``model/system.py:726:NumberReplacer`` (``a.count <= -1``) took it."""
    config = sy.SystemConfig()
    state = sy.initial_state(config, [("t", 4)])
    assert sy.step(state, sy.RecordsProduced("t", 0, partition), config) is None
    assert sy.step(state, sy.RecordsProduced("t", 1, partition), config) is not None


def test_the_coordinator_takes_any_rebalance_timeout_of_at_least_one_ms() -> None:
    """Kafka accepts every positive rebalance timeout; the model's one precondition is >= 1 ms (its timers
    need a deadline after now). The mutant ``model/classic/coordinator/join.py:81:NumberReplacer#0`` moved
    the bound to 2 ms."""
    h = Harness()
    member_id = h.new_member("a#1", rebalance=1)
    assert member(h.group, member_id) is not None
    with pytest.raises(ModelPreconditionError):
        Harness().join("b#1", rebalance=0)


def test_every_action_is_described_as_what_it_does() -> None:
    """``describe`` is the line a user reads for each step: in the proof report's counterexample paths
    (``model.proofs.explore``), in the tie's divergences and in ``groupspec simulate``'s skipped steps. The
    mutant ``model/system.py:823:AddNot#78`` described every action after MemberResumes as "resumes polling"
    (or raised), and no test read the lines."""
    config = sy.SystemConfig()
    state = sy.initial_state(config, [("t", 3)])
    lines = {
        sy.MemberPolls("a"): "a polls",
        sy.HeartbeatThreadRuns("a"): "a's heartbeat thread runs",
        sy.MemberResumes("a"): "a resumes polling",
        sy.MemberThaws("a"): "a's process runs again (SIGCONT)",
        sy.MemberFreezes("a", 4000): "a's whole process stops for 4000 ms (SIGSTOP)",
        sy.CoordinatorTimerFires(): "a coordinator timer fires",
        sy.ClockAdvances(7000): "clock advances to 7000 ms",
        sy.MemberStarts("a", ("t",), ("range",), "a-i"): "a starts as static a-i, assignors ['range'], topics ['t']",
        sy.MemberStalls("a", 5000): "a stalls for 5000 ms",
        sy.MemberSubscribes("a", ("t", "u")): "a subscribes to ['t', 'u']",
        sy.PartitionsAdded("t", 5): "topic t grows to 5 partitions",
        sy.RecordsProduced("t", 3, partition=1): "producers append 3 records to partition 1 of t",
        sy.RecordsProduced("t", 3): "producers append 3 records to each partition of t",
        sy.CoordinatorElected(): "a new coordinator is elected and loads the group",
        sy.MemberCrashes("a"): "a crashes",
        sy.MemberRestarts("a"): "a restarts",
        sy.MemberLeaves("a"): "a leaves (close)",
    }
    assert {action: sy.describe(state, action) for action in lines} == lines
