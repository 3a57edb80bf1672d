"""``groupspec prove``: the three report files, their contents, and the exit codes the issue states."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groupspec.cli import main
from model.proofs import obligations as reg
from model.proofs.core import Obligation, Outcome, RunConfig
from model.proofs.solver import Query, Status


def _run(tmp_path: Path, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main(["prove", "--out", str(tmp_path), "--quiet", *args])
    doc = json.loads((tmp_path / "proof.json").read_text()) if (tmp_path / "proof.json").exists() else {}
    return code, doc


def test_writes_json_markdown_and_html_and_exits_0_when_everything_holds(tmp_path: Path) -> None:
    code, doc = _run(tmp_path, "--only", "range-balance", "--only", "sticky-claims-single-owner")
    assert code == 0
    for name in ("proof.json", "proof.md", "proof.html"):
        assert (tmp_path / name).stat().st_size > 0
    assert doc["solver"].startswith("z3 ")
    ids = [o["id"] for o in doc["obligations"]]
    assert ids == ["range-balance", "sticky-claims-single-owner"]
    for o in doc["obligations"]:
        assert {"id", "invariant", "scope", "bounds", "status", "seconds"} <= set(o)
        assert o["status"] == "proved" and o["scope"] in ("unbounded", "bounded")
    mutants = {m["name"]: m for m in doc["mutants"]}
    assert set(mutants) == {"range-ceil-quota", "double-claim-both-keep"}
    for m in mutants.values():
        assert m["status"] == "refuted"
        assert m["counterexample"] and all("name" in e and "timestamp" in e for e in m["counterexample"])
    assert doc["assumptions"] and all({"id", "statement", "used_by"} <= set(a) for a in doc["assumptions"])
    md = (tmp_path / "proof.md").read_text()
    first_table = md.index("| obligation | invariant |")
    assert first_table < md.index("## Assumptions")  # the summary table comes first
    assert "ownership under double-claim-both-keep" in md  # the counterexample's timeline
    html = (tmp_path / "proof.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html


def test_protocol_mutant_counterexample_is_a_trace_of_the_executable_model(tmp_path: Path) -> None:
    code, doc = _run(tmp_path, "--only", "commit-old-generation")
    assert code == 0
    (m,) = doc["mutants"]
    assert m["status"] == "refuted" and m["invariant"] == "commit-owned-only"
    names = {e["name"] for e in m["counterexample"]}
    assert {"startup_complete", "group_joined"} <= names


def test_unknown_only_name_is_bad_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["prove", "--out", str(tmp_path), "--quiet", "--only", "no-such-obligation"])
    assert code == 2
    err = capsys.readouterr().err
    assert "no-such-obligation" in err and "Traceback" not in err


def test_bad_timeout_is_bad_usage(tmp_path: Path) -> None:
    assert main(["prove", "--out", str(tmp_path), "--quiet", "--timeout-ms", "0"]) == 2


def _fake(status: Status, mutants: tuple[str, ...] = ()) -> Obligation:
    def run(cfg: RunConfig) -> Outcome:
        result = "unsat" if status is Status.PROVED else ("sat" if status is Status.FAILED else "unknown")
        return Outcome(status, (Query("a claim", "unsat", result),), "fake")

    return Obligation(id=f"fake-{status.value}", invariant="single-owner", scope="unbounded", statement="fake",
                      assumptions=(), source="test", run=run, mutants=mutants)


@pytest.mark.parametrize("status", [Status.FAILED, Status.UNKNOWN])
def test_exit_1_when_an_obligation_is_not_proved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 status: Status) -> None:
    fake = _fake(status)
    monkeypatch.setattr(reg, "OBLIGATIONS", (fake,))
    monkeypatch.setattr(reg, "BY_ID", {fake.id: fake})
    code, doc = _run(tmp_path, "--only", fake.id)
    assert code == 1
    assert doc["obligations"][0]["status"] == status.value


def test_a_proof_whose_mutants_all_survive_is_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake(Status.PROVED, mutants=("range-ceil-quota",))  # "proved" even under the mutant
    monkeypatch.setattr(reg, "OBLIGATIONS", (fake,))
    monkeypatch.setattr(reg, "BY_ID", {fake.id: fake})
    code, doc = _run(tmp_path, "--only", fake.id)
    assert code == 1
    assert doc["obligations"][0]["status"] == "failed"
    assert doc["mutants"][0]["status"] == "survived"


def test_unwritable_out_is_bad_usage(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("not a directory")
    assert main(["prove", "--out", str(target / "sub"), "--quiet", "--only", "range-exact-cover"]) == 2


def test_proof_headline_names_the_proved_form_when_the_catalogue_form_fails() -> None:
    """A finding says the catalogue's single-owner fails in the correct model: the headline must not say
    "single-owner proved" but name what is proved, by the obligation's own id."""
    from groupspec.proof_report import build_document, headline
    from groupspec.render import to_markdown

    doc = {"held": True, "solver": "z3", "timeout_ms": 1, "seed": 0,
           "summary": {"obligations": 2, "proved": 2, "mutants": 0, "refuted": 0, "unbounded_max_seconds": 0.1,
                       "total_seconds": 0.2},
           "obligations": [_ob("protocol-single-owner"), _ob("replay-tie")], "mutants": [], "assumptions": [],
           "findings": [{"id": "static-member-stale-ownership", "invariant": "single-owner",
                         "statement": "single_owner does not hold in the correct model",
                         "explanation": "the per-generation form proved by protocol-single-owner holds"}]}
    text = headline(doc)
    assert "what is proved is protocol-single-owner" in text and "replay-tie" not in text
    assert "the catalogue's single-owner does not hold in the correct model (finding static-member-stale-ownership" in text
    md = to_markdown(build_document(doc))
    assert "| protocol-single-owner | single-owner, per-generation form protocol-single-owner" in md


def _ob(ident: str) -> dict:
    return {"id": ident, "invariant": "single-owner", "scope": "unbounded", "bounds": {}, "status": "proved",
            "seconds": 0.1, "refutes": [], "mutants": [], "statement": "s", "summary": "", "source": "x",
            "assumptions": [], "queries": []}
