"""A coordinator event with a field of the wrong shape is one bad-field line and nothing else.

docs/check.md, "Input that cannot be used": the checker checks every field a ``coordinator_*`` handler reads before it
changes anything (``traces.coordinator_checks.refuse_bad_coordinator``), so the report of a trace with such a line is
the report of the trace without it, plus the one bad-field line: no group counted as seen by the coordinator, no
generation, state or stored assignment taken from the half of the line before the wrong field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.traces.support import consumed, ev, run_events, tp, tps

# a member of group g and the coordinator's view of it; the malformed line goes between the two coordinator events
MEMBER = [ev("startup_complete", 0, group="g"), ev("group_joined", 4, group="g", member_id="a-1", generation=1),
          ev("partitions_assigned", 10, parts=[0, 1], group="g", member_id="a-1", generation=1),
          consumed(20, 0, 0, 4, group="g", generation=1), ev("shutdown_complete", 40, group="g")]
BEFORE = ev("coordinator_stable", 5, group="g", generation=1, members=["a-1"], state="Stable", assignor="range",
            assignment={"a-1": tps(0, 1)})
AFTER = ev("coordinator_rebalance", 30, group="g", generation=1, reason="removing member a-1 on LeaveGroup")

# each shape a handler refuses, as a line whose fields before the wrong one would change the report if applied: a
# group h (seen by the coordinator, its generation 9), or g's stored assignment (single-owner checked, t-0 twice)
MALFORMED: dict[str, tuple[dict[str, Any], str]] = {
    "stable-member-count": (ev("coordinator_stable", 15, group="h", generation=9, state="Stable", member_count="3"),
                            "member_count is not a number"),
    "stable-members": (ev("coordinator_stable", 15, group="h", generation=9, state="Stable", members=["h-1", 7]),
                       "members is not a list of member ids"),
    "stable-assignment-entry": (
        ev("coordinator_stable", 15, group="g", generation=1, state="Stable", members=["a-1", "b-1"],
           assignment={"a-1": tps(0), "b-1": [tp("t", 0), {"topic": 7, "partition": 0}]}),
        "assignment of member b-1 has an entry with a bad topic or partition"),
    "stable-assignment-not-object": (
        ev("coordinator_stable", 15, group="h", generation=9, state="Stable", assignment=["h-1"]),
        "assignment is not an object of member ids"),
    "group-not-string": (ev("coordinator_rebalance", 15, group=7, generation=9, reason="x"), "group is not a string"),
    "generation-not-number": (ev("coordinator_rebalance", 15, group="h", generation="9"),
                              "generation is not a number"),
    "state-not-string": (ev("coordinator_rebalance", 15, group="h", generation=9, state=["Stable"]),
                         "state is not a string"),
    "rebalance-reason": (ev("coordinator_rebalance", 15, group="h", generation=9, reason=7),
                         "reason is not a string"),
    "removed-without-member-id": (
        ev("coordinator_member_removed", 15, group="h", generation=9, reason="session-timeout"),
        "coordinator_member_removed without a member_id"),
    "removed-instance-id": (
        ev("coordinator_member_removed", 15, group="h", member_id="h-1", instance_id=1, reason="fenced"),
        "instance_id is not a string"),
    "state-member-assignment": (
        ev("coordinator_state", 15, group="h", generation=9, detail="member-assignment", member_id="h-1",
           partitions=[{"topic": "t"}]),
        "partitions has an entry without topic and partition"),
    "state-member-assignment-id": (
        ev("coordinator_state", 15, group="h", generation=9, detail="member-assignment", partitions=tps(0)),
        "member assignment without member_id"),
    "state-detail": (ev("coordinator_state", 15, group="h", generation=9, detail=7), "detail is not a string"),
    "offset-commit-entry": (
        ev("coordinator_offset_commit", 15, group="h", generation=9,
           offsets=[{"topic": "t", "partition": 0, "offset": 3}, {"topic": "t", "partition": 1}]),
        "offset of t-1 is not an integer"),
    "offset-commit-no-offsets": (ev("coordinator_offset_commit", 15, group="h", generation=9),
                                 "offsets is not a list"),
}


def _report(tmp_path: Path, coordinator: list[dict[str, Any]]) -> dict[str, Any]:
    report = run_events(tmp_path, {"a": MEMBER, "coord": coordinator})
    # the two traces' folders differ: the report of each with its own folder's name taken out
    return json.loads(json.dumps(report).replace(str(tmp_path), "DIR"))


@pytest.mark.parametrize("shape", sorted(MALFORMED))
def test_a_malformed_coordinator_event_changes_nothing_but_the_bad_field_count(tmp_path: Path, shape: str) -> None:
    line, words = MALFORMED[shape]
    without = _report(tmp_path / "without", [BEFORE, AFTER])
    got = _report(tmp_path / "with", [BEFORE, line, AFTER])
    assert got["input"]["skipped_examples"] == [
        {"where": "DIR/coord.jsonl:2", "reason": "bad-field",
         "detail": got["input"]["skipped_examples"][0]["detail"]}]
    assert got["input"]["skipped_examples"][0]["detail"].startswith(f"{line['name']}: {words}")
    expected = dict(without, input={**without["input"], "lines": without["input"]["lines"] + 1,
                                    "skipped": {"bad-field": 1},
                                    "skipped_examples": got["input"]["skipped_examples"]})
    assert got == expected
    assert "h" not in got["groups"]
