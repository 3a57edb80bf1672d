"""The mutation-testing tooling: mutants made by Cosmic Ray, the per-layer verdicts, the score file and its
place in the proof report (benchmarks/bench_mutation.py, model/proofs/mutation_score.py).

The campaign itself (minutes per mutant) runs in ``tox -e mutation``, not here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import bench_mutation as bm
from groupspec.proof_report import _mutation_score
from groupspec.render import Table
from model.proofs import mutation_score


def _row(mid: str, **verdicts: str) -> dict[str, Any]:
    return {"id": mid, "before": "a < b", "after": "a <= b", "any": "x",
            "layers": {k: {"verdict": v, "seconds": 1.0, "detail": None} for k, v in verdicts.items()}}


def test_a_layer_kills_when_its_findings_differ_from_the_unmutated_model() -> None:
    base = {"status": "ok", "result": {"s1.json": [], "s2.json": ["committed-not-ahead/violation"]}}
    same = {"status": "ok", "result": {"s1.json": [], "s2.json": ["committed-not-ahead/violation"]}}
    lost = {"status": "ok", "result": {"s1.json": [], "s2.json": []}}
    new = {"status": "ok", "result": {"s1.json": ["single-owner/violation"], "s2.json": ["committed-not-ahead/violation"]}}
    assert bm.verdict("checker", same, base) == "survived"
    assert bm.verdict("checker", lost, base) == "violation"  # a finding the correct model has, gone, is a change
    assert bm.verdict("monitor", new, base) == "violation"
    assert bm.verdict("monitor", {"status": "crash"}, base) == "crash"
    assert bm.verdict("proofs", {"status": "ok", "result": {"model-explore-invariants": "proved",
                                                            "delivery-tie": "failed"}}, base) == "violation"
    assert bm.verdict("proofs", {"status": "ok", "result": {"model-explore-invariants": "proved"}}, base) == "survived"
    assert bm.verdict("tests", {"status": "fail"}, base) == "violation"
    assert bm.verdict("tests", {"status": "timeout"}, base) == "timeout"


def test_scores_leave_equivalent_mutants_out_and_count_each_layer() -> None:
    rows = [_row("m1", tests="violation", proofs="survived"), _row("m2", tests="survived", proofs="crash"),
            _row("m3", tests="survived", proofs="survived"), _row("m4", tests="survived", proofs="survived")]
    for r in rows:
        killed = [v["verdict"] for v in r["layers"].values() if v["verdict"] != "survived"]
        r["any"] = killed[0] if killed else "survived"
    s = bm.summarise(rows, {"m4": {"id": "m4", "why": "same value"}}, ("tests", "proofs"))
    assert (s["counted"], s["equivalent"]) == (3, 1)
    assert s["layers"]["tests"]["killed"] == 1 and s["layers"]["proofs"]["killed"] == 1
    assert s["layers"]["proofs"]["crash"] == 1 and s["layers"]["proofs"]["killed_by_verdict"] == 0
    assert s["layers"]["any"]["killed"] == 2
    lo, hi = s["layers"]["any"]["interval95"]
    assert lo < 2 / 3 < hi
    surv = bm.survivors(rows, ("tests", "proofs"), {"m4": {"why": "same value"}})
    assert [(x["id"], x["escaped"], x["equivalent"]) for x in surv] == [
        ("m1", ["proofs"], None), ("m2", ["tests"], None), ("m3", ["tests", "proofs"], None),
        ("m4", ["tests", "proofs"], "same value")]


def test_first_kills_credit_the_obligation_that_failed() -> None:
    doc = {"mutants": [{"layers": {"proofs": {"detail": {"model-explore-invariants": "proved", "delivery-tie": "failed"}}}},
                       {"layers": {"proofs": {"detail": {"model-explore-invariants": "failed"}}}},
                       {"layers": {"proofs": {"detail": ["a crash's last line"]}}}]}
    assert mutation_score.first_kills(doc) == {"delivery-tie": 1, "model-explore-invariants": 1}


def test_cosmic_ray_makes_reproducible_mutants_of_the_model() -> None:
    pytest.importorskip("cosmic_ray")
    population = bm.enumerate_mutants(["model/assignors/range.py"])
    assert len(population) > 10
    module, operator, occurrence, line = population[0]
    made = bm.make(module, operator, occurrence)
    assert made is not None
    mutant, text = made
    source = (bm.ROOT / module).read_text(encoding="utf-8")
    assert text != source and mutant.line == line
    assert mutant.before in source.splitlines()[line - 1]
    compile(text, module, "exec")  # a mutant is valid Python: the layers judge its behaviour, not its syntax
    assert bm.make(module, operator, occurrence) == made


def test_the_proof_report_shows_the_measured_score_beside_the_obligations(tmp_path: Path) -> None:
    score = {"date": "2026-11-25 22:00 UTC", "commit": "c823042", "command": "python -m benchmarks mutation",
             "scope": ["model/classic/member"], "population": 100, "sample": 3, "complete": True,
             "summary": {"counted": 3, "equivalent": 0, "layers": {
                 "tests": {"killed": 2, "score": 0.667, "interval95": [0.2, 0.94], "killed_by_verdict": 2,
                           "crash": 0, "timeout": 0}}},
             "first_kills": {"model-explore-invariants": 1},
             "survivors": [{"id": "model/classic/member/state.py:52:NumberReplacer#5", "before": "X = 1",
                            "after": "X = 2", "escaped": ["tests"], "equivalent": None}]}
    path = tmp_path / "score.json"
    path.write_text(json.dumps(score), encoding="utf-8")
    doc = {"mutation_score": mutation_score.for_report(path),
           "obligations": [{"id": "model-explore-invariants"}, {"id": "protocol-single-owner"}]}
    section = _mutation_score(doc)
    text = json.dumps([b if isinstance(b, str) else getattr(b, "rows", None) for b in section.blocks])
    assert "c823042" in text and "2026-11-25" in text
    tables = [b for b in section.blocks if isinstance(b, Table)]
    assert ["model-explore-invariants", "yes", 1] in tables[1].rows
    assert ["protocol-single-owner", "no: reads only the Z3 encoding", "-"] in tables[1].rows
    assert tables[2].rows[0][0] == "model/classic/member/state.py:52:NumberReplacer#5"
    assert mutation_score.for_report(tmp_path / "absent.json") is None


def test_committed_equivalent_mutants_still_name_lines_of_the_model() -> None:
    doc = json.loads(mutation_score.EQUIVALENT_FILE.read_text(encoding="utf-8"))
    for entry in doc["equivalent"]:
        module, line = entry["id"].split(":")[:2]
        source = (bm.ROOT / module).read_text(encoding="utf-8")
        assert entry["before"] in source, f"{entry['id']}: the line is gone; review the entry"
        assert entry["why"].strip(), f"{entry['id']}: an equivalent mutant says why"


def test_groupspec_prove_reports_the_committed_score_beside_its_obligations(tmp_path: Path) -> None:
    from groupspec.cli import main

    committed = mutation_score.load()
    assert committed is not None, "model/proofs/mutation_score.json is committed"
    assert main(["prove", "--quiet", "--only", "range-balance", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "proof.json").read_text(encoding="utf-8"))
    assert doc["mutation_score"]["commit"] == committed["commit"] and doc["held"] is True
    md = (tmp_path / "proof.md").read_text(encoding="utf-8")
    section = md[md.index("## Mutation score (measured)"):md.index("## Assumptions")]
    assert f"at commit {committed['commit']}" in section and committed["date"] in section
    assert "| range-balance | yes |" in section
