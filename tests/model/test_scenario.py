"""The scenario format: what parses into which actions, and the one-line error for each mistake."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from model import system as sy
from model.scenario import DEFAULT_RUN_AFTER_LAST_STEP_MS, ScenarioError, parse

BRIEF = {
    "topics": {"orders": 6},
    "config": {"session_timeout_ms": 10000, "rebalance_timeout_ms": 30000, "heartbeat_interval_ms": 3000,
               "initial_rebalance_delay_ms": 0, "max_poll_interval_ms": 300000},
    "steps": [
        {"at": 0, "do": "join", "member": "a", "assignors": ["cooperative-sticky"], "topics": ["orders"],
         "instance_id": None},
        {"at": 500, "do": "join", "member": "b", "assignors": ["range"], "topics": ["orders"], "instance_id": "b-1"},
        {"at": 8000, "do": "crash", "member": "a"},
        {"at": 9000, "do": "restart", "member": "b"},
        {"at": 12000, "do": "stall", "member": "b", "for_ms": 15000},
        {"at": 30000, "do": "leave", "member": "b"},
        {"at": 31000, "do": "subscribe", "member": "a", "topics": ["orders", "audit"]},
        {"at": 32000, "do": "add_partitions", "topic": "orders", "count": 8}],
    "until": 60000}


def with_steps(*steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"topics": {"t": 2}, "steps": list(steps), **extra}


def error_of(doc: Any) -> str:
    with pytest.raises(ScenarioError) as info:
        parse(doc)
    return str(info.value)


def test_the_brief_example_parses_into_fault_actions_in_order() -> None:
    doc = copy.deepcopy(BRIEF)
    doc["steps"][6]["at"] = 31000  # a must be running again for "subscribe": restart it first
    doc["steps"].insert(6, {"at": 31000, "do": "restart", "member": "a"})
    sc = parse(doc)
    assert sc.topics == (("orders", 6),)
    assert sc.until == 60000
    assert [type(s.action) for s in sc.steps] == [
        sy.MemberStarts, sy.MemberStarts, sy.MemberCrashes, sy.MemberRestarts, sy.MemberStalls, sy.MemberLeaves,
        sy.MemberRestarts, sy.MemberSubscribes, sy.PartitionsAdded]
    assert sc.steps[1].action == sy.MemberStarts("b", ("orders",), ("range",), "b-1")
    assert sc.steps[4].action == sy.MemberStalls("b", 15000)
    assert sc.steps[8].action == sy.PartitionsAdded("orders", 8)
    assert [s.index for s in sc.steps] == list(range(9))


def test_the_brief_example_as_printed_is_rejected_at_the_subscribe_of_a_crashed_member() -> None:
    assert error_of(BRIEF) == "steps[6].member: member a is not running here (not joined yet, crashed or left)"


def test_config_defaults_are_kafkas() -> None:
    sc = parse(with_steps())
    c = sc.config
    assert (c.session_timeout_ms, c.heartbeat_interval_ms, c.max_poll_interval_ms, c.rebalance_timeout_ms) == \
        (45000, 3000, 300000, 300000)
    assert c.coordinator.initial_rebalance_delay_ms == 3000
    assert c.auto_commit is True
    assert sc.until == DEFAULT_RUN_AFTER_LAST_STEP_MS


def test_rebalance_timeout_and_max_poll_interval_follow_each_other_when_only_one_is_given() -> None:
    assert parse(with_steps(config={"max_poll_interval_ms": 20000})).config.rebalance_timeout_ms == 20000
    assert parse(with_steps(config={"rebalance_timeout_ms": 25000})).config.max_poll_interval_ms == 25000
    both = parse(with_steps(config={"rebalance_timeout_ms": 25000, "max_poll_interval_ms": 40000})).config
    assert (both.rebalance_timeout_ms, both.max_poll_interval_ms) == (25000, 40000)


def test_join_defaults_to_kafkas_assignor_list() -> None:
    sc = parse(with_steps({"at": 0, "do": "join", "member": "a", "topics": ["t"]}))
    assert sc.steps[0].action == sy.MemberStarts("a", ("t",), ("range", "cooperative-sticky"), None)


@pytest.mark.parametrize(("doc", "message"), [
    ([], "a scenario is a JSON object, got list"),
    ({"steps": []}, "topics: missing"),
    ({"topics": {"t": 0}, "steps": []}, "topics.t: must be at least 1, got 0"),
    ({"topics": {"t": 1}}, "steps: missing"),
    ({"topics": {"t": 1}, "steps": [], "extra": 1}, 'extra: unknown field; expected "topics", "config", "steps", "until"'),
    (with_steps(config={"session_timeout": 1}),
     "config.session_timeout: unknown setting; known: group_id, session_timeout_ms, rebalance_timeout_ms, "
     "heartbeat_interval_ms, initial_rebalance_delay_ms, max_poll_interval_ms, enable_auto_commit, "
     "auto_offset_reset, auto_commit_interval_ms, max_poll_records, commit, commit_on_revoke, processing, "
     "processing_ms, brokers, metadata_max_age_ms"),
    (with_steps(config={"heartbeat_interval_ms": 10000, "session_timeout_ms": 10000}),
     "config.heartbeat_interval_ms: must be lower than session_timeout_ms (10000 >= 10000), as the consumer "
     "requires (Heartbeat's constructor)"),
    (with_steps(config={"session_timeout_ms": "10s"}), "config.session_timeout_ms: expected an integer, got str"),
    (with_steps(config={"enable_auto_commit": "yes"}), "config.enable_auto_commit: expected true or false, got str"),
    (with_steps({"at": 0, "do": "jump", "member": "a"}),
     'steps[0]: unknown action "jump"; known: join, crash, restart, stall, freeze, leave, subscribe, add_partitions, '
     'produce, move_coordinator, fail_coordinator'),
    (with_steps({"at": 0, "member": "a"}), 'steps[0]: missing "do"'),
    (with_steps({"do": "crash", "member": "a"}), 'steps[0]: missing "at"'),
    (with_steps({"at": -1, "do": "crash", "member": "a"}), "steps[0].at: must be at least 0, got -1"),
    (with_steps({"at": 0, "do": "join", "member": "a"}), 'steps[0]: "join" needs "topics"'),
    (with_steps({"at": 0, "do": "join", "member": "a", "topics": ["t"], "color": "red"}),
     'steps[0].color: unknown field for "join"'),
    (with_steps({"at": 0, "do": "join", "member": "a", "topics": []}),
     "steps[0].topics: expected a non-empty list of topic names"),
    (with_steps({"at": 0, "do": "join", "member": "a", "topics": ["t", "t"]}), "steps[0].topics: lists a topic twice"),
    (with_steps({"at": 0, "do": "join", "member": "a", "topics": ["t"], "assignors": ["fair", 7]}),
     "steps[0].assignors[1]: expected a non-empty string, got int"),
    (with_steps({"at": 0, "do": "join", "member": "a#1", "topics": ["t"]}),
     "steps[0].member: member name 'a#1' contains \"#\", which separates incarnations"),
    (with_steps({"at": 0, "do": "join", "member": "a", "topics": ["t"], "assignors": ["fair"]}),
     'steps[0].assignors[0]: unknown assignor "fair"; known: range, roundrobin, sticky, cooperative-sticky'),
    (with_steps({"at": 0, "do": "join", "member": "a", "topics": ["t"], "assignors": ["range", "range"]}),
     "steps[0].assignors: lists an assignor twice"),
    (with_steps({"at": 0, "do": "crash", "member": "a"}),
     "steps[0].member: member a is not running here (not joined yet, crashed or left)"),
    (with_steps({"at": 0, "do": "restart", "member": "a"}),
     "steps[0].member: member a has never joined; restart needs a join first"),
    (with_steps({"at": 0, "do": "join", "member": "a", "topics": ["t"]},
                {"at": 5, "do": "join", "member": "a", "topics": ["t"]}),
     "steps[1].member: member a is already running"),
    (with_steps({"at": 0, "do": "join", "member": "a", "topics": ["t"]},
                {"at": 5, "do": "stall", "member": "a", "for_ms": 0}),
     "steps[1].for_ms: must be at least 1, got 0"),
    (with_steps({"at": 10, "do": "add_partitions", "topic": "t", "count": 3},
                {"at": 5, "do": "add_partitions", "topic": "t", "count": 4}),
     "steps[1].at: 5 is before the previous step's time 10; steps are listed in time order"),
    (with_steps({"at": 0, "do": "add_partitions", "topic": "t", "count": 2}),
     "steps[0].count: topic t already has 2 partitions; a partition count can only grow"),
    (with_steps({"at": 100, "do": "add_partitions", "topic": "t", "count": 3}, until=50),
     "until: 50 is before the last step (at 100)"),
    (with_steps({"at": True, "do": "crash", "member": "a"}), "steps[0].at: expected an integer, got bool"),
])
def test_a_bad_scenario_is_one_line_naming_the_place(doc: Any, message: str) -> None:
    assert error_of(doc) == message


def test_a_member_can_join_again_after_leaving_with_another_configuration() -> None:
    sc = parse(with_steps({"at": 0, "do": "join", "member": "a", "topics": ["t"], "assignors": ["range"]},
                          {"at": 5, "do": "leave", "member": "a"},
                          {"at": 9, "do": "join", "member": "a", "topics": ["t"],
                           "assignors": ["cooperative-sticky", "range"]}))
    assert sc.steps[2].action == sy.MemberStarts("a", ("t",), ("cooperative-sticky", "range"), None)


def test_new_topics_can_be_created_by_add_partitions() -> None:
    sc = parse(with_steps({"at": 0, "do": "add_partitions", "topic": "audit", "count": 3}))
    assert sc.steps[0].action == sy.PartitionsAdded("audit", 3)


def test_every_example_scenario_parses() -> None:
    examples = sorted(Path(__file__).resolve().parents[2].joinpath("examples").glob("scenario-*.json"))
    assert examples, "no examples/scenario-*.json"
    for path in examples:
        parse(json.loads(path.read_text()))
