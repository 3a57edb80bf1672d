"""A whole-process freeze (``freeze`` step: SIGSTOP, then SIGCONT) run by real clients on the mock.

librdkafka (b) is frozen past the session: the mock expires it while it is stopped (a generation
without it), and at the thaw it finds its partitions lost and rejoins -- what the model's run of the
same file says. A freeze within the session changes nothing. The run is compared with the model as
every run is (conformance/compare.py) and must pass.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance import campaign, strategies
from conformance.drivers.process import read_events

SCENARIO: dict[str, Any] = {
    "topics": {"orders": 6},
    "config": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000, "max_poll_interval_ms": 12000,
               "initial_rebalance_delay_ms": 0, "enable_auto_commit": False, "commit": "sync"},
    "steps": [{"at": 0, "do": "join", "member": "a", "assignors": ["range"], "topics": ["orders"]},
              {"at": 30000, "do": "join", "member": "b", "assignors": ["range"], "topics": ["orders"]},
              {"at": 60000, "do": "join", "member": "c", "assignors": ["range"], "topics": ["orders"]},
              {"at": 90000, "do": "freeze", "member": "b", "for_ms": 9000},
              {"at": 120000, "do": "freeze", "member": "c", "for_ms": 3000}],
    "until": 150000}


def test_freezes_are_drawn_within_and_past_the_session() -> None:
    docs = strategies.draw(11, 40)
    lengths = {s["for_ms"] for d in docs for s in d["steps"] if s["do"] == "freeze"}
    assert lengths == {3000, 9000}
    assert "freeze-past-session" in {strategies.kind(d) for d in docs}


@pytest.mark.clients
def test_a_frozen_member_is_expired_and_finds_its_partitions_lost_as_the_model_says(tmp_path: Path) -> None:
    record = campaign.run_scenario(SCENARIO, ["aiokafka", "confluent-kafka"], tmp_path / "run")
    assert record.members == {"a": "aiokafka", "b": "confluent-kafka", "c": "aiokafka"}
    assert record.verdict == "pass", (record.error, record.comparison.get("differences"))
    timeline = json.loads((tmp_path / "run" / "timeline.json").read_text())
    freeze_b, freeze_c = (int(t["timestamp"]) for t in timeline if t["step"] == "freeze")
    b = [e for e in read_events(tmp_path / "run" / "b#1.jsonl") if freeze_b <= e["timestamp"] < freeze_c]
    assert [e["name"] for e in b if e["name"].startswith("partitions_")][:2] == ["partitions_lost",
                                                                                  "partitions_assigned"]
    # Meanwhile the group went on without b: a generation whose JoinGroup answer lists two members.
    wire = [json.loads(line) for line in (tmp_path / "run" / "group-wire.jsonl").read_text().splitlines() if line]
    answers = [m for m in wire if m["api"] == "JoinGroup" and m["kind"] == "response" and m.get("members")
               and freeze_b <= m["timestamp"] < freeze_c]
    assert any(len(m["members"]) == 2 for m in answers)
    # The model's run of the same file: b's partitions lost at its thaw, c's freeze within the session quiet.
    model = [json.loads(line) for line in (tmp_path / "run" / "model-trace.jsonl").read_text().splitlines()]
    assert [e["timestamp"] for e in model if e["name"] == "partitions_lost" and e.get("member") == "b"] == [99000]
    assert not [e for e in model if e["timestamp"] >= 120000 and e["name"].startswith("partitions_")]
