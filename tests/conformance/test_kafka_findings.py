"""The evidence that Kafka 4.1.1 does what the model says it does (tests/traces/samples/kafka-4.1.1-findings).

Each finding's run (``python -m conformance.kafka.findings NAME``) is kept; these tests read the claim off the
kept files again -- broker log lines and trace events -- so evidence that does not show the claim fails here.
No broker is started.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from conformance.drivers.process import owned_after
from conformance.kafka.findings import REPLAYS, _overlaps
from model.invariants.protocol import KNOWN_GAPS

EVIDENCE = Path(__file__).resolve().parents[1] / "traces" / "samples" / "kafka-4.1.1-findings"


def _events(run: str, member: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (EVIDENCE / run / f"{member}.jsonl").read_text().splitlines()]


def _log(run: str) -> str:
    return (EVIDENCE / run / "server.log").read_text()


def test_every_replayed_finding_is_a_known_gap_of_the_model_with_evidence() -> None:
    assert set(REPLAYS) <= set(KNOWN_GAPS)
    for name in REPLAYS:
        assert (EVIDENCE / name / "server.log").exists(), name
        assert f"## {name}: confirmed" in (EVIDENCE / "README.md").read_text()


def test_static_rejoin_left_added_partitions_without_owner() -> None:
    run = "static-rejoin-keeps-stale-assignment"
    log = _log(run)
    assert "Static member which joins during Stable stage and doesn't affect the selected protocol will not " \
           "trigger a rebalance" in log
    assert "Skipped assignment for returning static leader" in (EVIDENCE / run / "s1.2.log").read_text()
    timeline = json.loads((EVIDENCE / run / "scenario.json").read_text())["timeline"]
    grown_to_8 = next(t["at"] for t in timeline if t["step"] == "partitions_added" and t["total"] == 8)
    before = [e for e in _events(run, "s1.2") + _events(run, "s2") if e["timestamp"] < grown_to_8]
    owned = owned_after([e for e in before if e["member"] == "s1"]) | owned_after(
        [e for e in before if e["member"] == "s2"])
    assert {tp.partition for tp in owned} == {0, 1, 2, 3}  # 4 and 5 (added while s1 was away): nobody


def test_static_zombie_revoked_partitions_another_member_had_been_given() -> None:
    run = "static-zombie-rejoin"
    overlap = _overlaps(_events(run, "s1"), _events(run, "d2") + _events(run, "d3"))
    assert overlap and {how for _, how in overlap} == {"partitions_revoked"}
    s1 = _events(run, "s1")
    d3 = _events(run, "d3")
    given = min(e["timestamp"] for e in d3 if e["name"] == "partitions_assigned" and e["partitions"])
    both = [e for e in s1 if e["name"] == "records_consumed" and e["timestamp"] > given]
    assert both, "s1 consumed after d3 was given its partitions"
    assert "consumer poll timeout has expired" not in (EVIDENCE / run / "s1.log").read_text()


def test_reloaded_group_hands_out_a_generation_number_again() -> None:
    log = _log("load-forgets-generation")
    gens = [int(g) for g in re.findall(r"Stabilized group load-forgets generation (\d+)", log)]
    assert len(gens) != len(set(gens))  # a number stabilized twice
    repeated = next(g for g in gens if gens.count(g) > 1)
    first, second = [m.start() for m in re.finditer(rf"Stabilized group load-forgets generation {repeated} ", log)]
    assert log.find("Loaded classic group load-forgets", first) in range(first, second)
