"""The golden set (tests/model/golden.py) still gives the digests recorded after issue 12.

A refactor of the model must leave every trace, verdict and final state byte-identical; a change of
behaviour fails here until its author records the new digests
(``python -m tests.model.golden record tests/model/golden_digests/after-issue12.json``) and says in
docs/protocol-model.md which runs changed and why.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.model import golden

RECORDED = Path(__file__).parent / "golden_digests" / "after-issue12.json"


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
