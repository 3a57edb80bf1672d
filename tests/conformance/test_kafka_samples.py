"""The committed captures of real Apache Kafka runs (tests/traces/samples/kafka-4.1.1) are whole and say their verdict.

What the checker's tests rely on: every case directory holds the broker's server.log (a real one: it
says ``Kafka Server started``), each member's trace and client log, scenario.json, README.md and an
expected.json of the shape docs/kafka-broker.md documents, naming only catalogue invariants, with an
overall verdict consistent with its invariants. The captures themselves are produced by
``python -m conformance.kafka.capture``; one short case is re-captured here on a live broker.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.kafka import env_problem
from conformance.kafka.capture import CASES, capture, zombie_acts
from model.invariants.catalogue import CATALOGUE

SAMPLES = Path(__file__).resolve().parents[1] / "traces" / "samples" / "kafka-4.1.1"
EXPECTED_VALUES = {"held", "violation", "unchecked", "unchecked-or-held"}
CASE_DIRS = sorted(p for p in SAMPLES.iterdir() if p.is_dir() and not p.name.startswith(".")) if SAMPLES.is_dir() else []


def _check_case_dir(case_dir: Path) -> dict[str, Any]:
    doc = json.loads((case_dir / "expected.json").read_text())
    assert doc["case"] == case_dir.name and doc["kafka"] == "4.1.1"
    assert doc["verdict"] in ("held", "violation")
    assert set(doc["allowed_warnings"]) <= {inv for inv, i in CATALOGUE.items()}
    for inv, v in doc["invariants"].items():
        assert inv in CATALOGUE, inv
        assert v["expected"] in EXPECTED_VALUES and v["why"], (inv, v)
    broken = [inv for inv, v in doc["invariants"].items() if v["expected"] == "violation"]
    assert (doc["verdict"] == "violation") == bool(broken)
    assert doc["facts"]
    assert "Kafka Server started" in (case_dir / "server.log").read_text()
    scenario = json.loads((case_dir / "scenario.json").read_text())
    assert scenario["timeline"][0]["step"] == "broker_started"
    for member in scenario["members"]:
        events = (case_dir / f"{member}.jsonl").read_text().splitlines()
        assert json.loads(events[0])["name"] == "startup_complete", member
        assert (case_dir / f"{member}.log").exists()
    assert (case_dir / "README.md").read_text().startswith(f"# {case_dir.name}")
    return doc


def test_every_case_is_captured() -> None:
    assert {p.name for p in CASE_DIRS} == {c.name for c in CASES}


@pytest.mark.parametrize("case_dir", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_captured_case_is_whole_and_states_its_verdict(case_dir: Path) -> None:
    _check_case_dir(case_dir)


def test_zombie_rule_counts_only_acts_after_the_new_owner_got_the_partition() -> None:
    def ev(name: str, t: int, parts: list[int], **kw: Any) -> dict[str, Any]:
        key = "offsets" if name == "offsets_committed" else "partitions"
        return {"name": name, "timestamp": t, key: [{"topic": "o", "partition": p} for p in parts], **kw}

    new_owner = [ev("partitions_assigned", 100, [0])]
    zombie = [ev("partitions_assigned", 10, [0, 1]), ev("records_consumed", 50, [0]),
              ev("records_consumed", 150, [1]), ev("offsets_committed", 160, [0], success=False)]
    assert zombie_acts(zombie, new_owner) == []
    zombie.append(ev("records_consumed", 170, [0]))
    assert zombie_acts(zombie, new_owner) == ["records_consumed at 170 on o-0"]
    zombie.append(ev("partitions_lost", 180, [0, 1]))
    zombie.append(ev("records_consumed", 190, [0]))  # after letting go: not a zombie act
    assert len(zombie_acts(zombie, new_owner)) == 1
    # given back to the zombie later (the other member revoked it): its own again
    zombie += [ev("partitions_assigned", 200, [0]), ev("records_consumed", 210, [0])]
    assert len(zombie_acts(zombie, new_owner)) == 1


@pytest.mark.skipif(env_problem() is not None, reason=f"Apache Kafka cannot run here: {env_problem()}")
def test_capture_writes_a_case_with_its_verdict(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "java-cooperative")
    out = capture(case, tmp_path)
    doc = _check_case_dir(out)
    assert doc["verdict"] == "held" and doc["allowed_warnings"] == ["zombie-overlap"]
    assert not (tmp_path / ".java-cooperative.broker").exists()
