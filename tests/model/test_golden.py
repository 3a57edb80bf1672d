"""The golden set (tests/model/golden.py) still gives the digests recorded after issue 17.

A refactor of the model must leave every trace, verdict and final state byte-identical; a change of
behaviour fails here until its author records the new digests
(``python -m tests.model.golden record tests/model/golden_digests/after-issue17.json``) and says in
docs/protocol-model.md which runs changed and why.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.model import golden

RECORDED = Path(__file__).parent / "golden_digests" / "after-issue17.json"
# after-issue12.json: the same runs but for the two stuck-group examples issue 17 added (every other
# digest, verdicts included, is byte-identical: the new invariants fire on no earlier run).
EARLIER = Path(__file__).parent / "golden_digests" / "after-issue12.json"


def test_the_golden_set_is_unchanged(tmp_path: Path) -> None:
    now = tmp_path / "now.json"
    assert golden.record(now, None) == 0
    before, after = json.loads(RECORDED.read_text(encoding="utf-8")), json.loads(now.read_text(encoding="utf-8"))
    assert before.keys() == after.keys()
    changed = [run for run in sorted(before) if before[run] != after[run]]
    assert not changed, f"{len(changed)} golden runs changed, e.g. {changed[:5]}"


def test_compare_reports_a_changed_run(tmp_path: Path) -> None:
    digests = json.loads(RECORDED.read_text(encoding="utf-8"))
    run = sorted(digests)[0]
    changed = {**digests, run: {**digests[run], "trace": "0" * 16}}
    (tmp_path / "a.json").write_text(json.dumps(digests), encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps(changed), encoding="utf-8")
    assert golden.compare(tmp_path / "a.json", tmp_path / "a.json") == 0
    assert golden.compare(tmp_path / "a.json", tmp_path / "b.json") == 1


def test_issue_17_only_added_runs() -> None:
    """The stuck-group invariants left every earlier run (trace and verdicts) as it was."""
    before, now = json.loads(EARLIER.read_text(encoding="utf-8")), json.loads(RECORDED.read_text(encoding="utf-8"))
    assert set(before) < set(now)
    assert {run for run in before if before[run] != now[run]} == set()
    assert {run.split("/")[1] for run in set(now) - set(before)} == {"scenario-rebalance-thrash",
                                                                      "scenario-scale-out-kicks-stable"}
