"""The state table of the classic group (ClassicGroupState) and how it is enforced."""

from __future__ import annotations

from dataclasses import replace

import pytest

from model.classic.coordinator import ALLOWED_PREDECESSORS, GroupState, InvalidTransition, initial_group
from model.classic.coordinator.ops import Effects, transition_to
from model.classic.coordinator.state import CoordinatorConfig, can_rebalance

# ClassicGroupState's static block, Kafka 4.1.1 (group-coordinator/.../classic/ClassicGroupState.java):
#   EMPTY.addValidPreviousStates(PREPARING_REBALANCE);
#   PREPARING_REBALANCE.addValidPreviousStates(STABLE, COMPLETING_REBALANCE, EMPTY);
#   COMPLETING_REBALANCE.addValidPreviousStates(PREPARING_REBALANCE);
#   STABLE.addValidPreviousStates(COMPLETING_REBALANCE);
#   DEAD.addValidPreviousStates(STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD);
KAFKA_TABLE = {
    "Empty": {"PreparingRebalance"},
    "PreparingRebalance": {"Stable", "CompletingRebalance", "Empty"},
    "CompletingRebalance": {"PreparingRebalance"},
    "Stable": {"CompletingRebalance"},
    "Dead": {"Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead"},
}


def test_allowed_predecessors_equal_kafka_table() -> None:
    assert {target.value: {s.value for s in before} for target, before in ALLOWED_PREDECESSORS.items()} == KAFKA_TABLE


def test_state_names_are_kafkas() -> None:
    assert [s.value for s in GroupState] == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]


@pytest.mark.parametrize("source", list(GroupState))
@pytest.mark.parametrize("target", list(GroupState))
def test_transition_to_checks_the_table(source: GroupState, target: GroupState) -> None:
    group = replace(initial_group(CoordinatorConfig()), state=source)
    fx = Effects(0, CoordinatorConfig())
    if source in ALLOWED_PREDECESSORS[target]:
        after = transition_to(group, target, fx)
        assert (after.state, after.previous_state) == (target, source)
        assert fx.events[-1]["state"] == target.value and fx.events[-1]["previous_state"] == source.value
    else:
        with pytest.raises(InvalidTransition):
            transition_to(group, target, fx)
        assert fx.events == []


def test_can_rebalance_means_preparing_rebalance_may_follow() -> None:
    for s in GroupState:
        group = replace(initial_group(CoordinatorConfig()), state=s)
        assert can_rebalance(group) == (s in {GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE})


@pytest.mark.parametrize("s", list(GroupState))
def test_each_state_documents_how_it_answers_each_request(s: GroupState) -> None:
    doc = s.__doc__ or ""
    for request in ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "Goes to"):
        assert request in doc, f"{s.value} does not say how it answers {request}"
