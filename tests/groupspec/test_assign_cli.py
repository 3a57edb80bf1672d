"""``groupspec assign``: output, exit codes, and one clear line for every kind of bad input."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from groupspec.cli import main
from model.assignors import ASSIGNORS
from model.invariants.assignment import ROUND_INVARIANTS
from model.mutants import MUTANTS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("assign-*.json"))


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any, str]:
    code = main(["assign", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def write(tmp_path: Path, document: Any, name: str = "problem.json") -> Path:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document, indent=1), encoding="utf-8")
    return path


def simple(strategy: str = "range", **member_fields: Any) -> dict[str, Any]:
    return {"strategy": strategy, "topics": {"t1": 3, "t2": 2},
            "members": [{"member_id": "c1", "topics": ["t1"], **member_fields},
                        {"member_id": "c2", "topics": ["t1", "t2"]}]}


# ---------------------------------------------------------------- output and exit codes


def test_output_has_the_issue_fields_and_a_valid_assignment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([str(write(tmp_path, simple()))], capsys)
    assert code == 0, err
    assert list(out)[:4] == ["assignment", "transferring", "invariants", "stickiness_gap"]
    assert out["assignment"] == {"c1": [{"topic": "t1", "partition": 0}, {"topic": "t1", "partition": 1}],
                                 "c2": [{"topic": "t1", "partition": 2}, {"topic": "t2", "partition": 0},
                                        {"topic": "t2", "partition": 1}]}
    assert out["transferring"] == []
    assert list(out["invariants"]) == list(ROUND_INVARIANTS)
    assert out["promised"] == ["single-owner", "subscribed-only", "complete", "balanced"]
    assert out["violated"] == []


def test_reads_the_problem_from_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(simple("roundrobin"))))
    code, out, _ = run(["-"], capsys)
    assert code == 0 and set(out["assignment"]) == {"c1", "c2"}


def test_failed_invariants_carry_details_even_when_not_promised(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    # c2 owned t1-0 (generation 3); range ignores ownership and moves it to c1 in the same round.
    problem = simple(generation=3)
    problem["members"][1].update(owned=[{"topic": "t1", "partition": 0}], generation=3)
    code, out, _ = run([str(write(tmp_path, problem))], capsys)
    assert code == 0  # range is eager: it promises no revoke-* property
    assert out["invariants"]["revoke-before-assign"] is False
    detail = out["details"]["revoke-before-assign"]
    assert detail["promised"] is False
    assert detail["findings"][0]["partitions"] == [{"topic": "t1", "partition": 0}]
    assert out["stickiness"]["kept"] == 0 and out["stickiness_gap"] == out["stickiness"]["gap"]


def test_junk_claims_are_accepted_and_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    problem = simple(owned=[{"topic": "t1", "partition": -1}, {"topic": "nope", "partition": 0},
                            {"topic": "t1", "partition": 99}])
    code, out, _ = run([str(write(tmp_path, problem))], capsys)
    assert code == 0
    assert sorted(c["reason"] for c in out["ignored_claims"]) == ["no-such-partition", "no-such-partition",
                                                                  "unknown-topic"]


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_runs_and_holds(example: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([str(example)], capsys)
    assert code == 0, err
    assert out["violated"] == []


def test_examples_cover_every_strategy() -> None:
    strategies = {json.loads(p.read_text())["strategy"] for p in EXAMPLES}
    assert strategies == set(ASSIGNORS)


def test_cooperative_join_withholds_the_moving_partitions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([str(ROOT / "examples" / "assign-cooperative-join.json")], capsys)
    assert code == 0
    assert len(out["transferring"]) == 2
    assert out["assignment"]["consumer-3-c2d8"] == []
    assert "complete" not in out["promised"] and "revoke-before-assign" in out["promised"]


def test_a_mutant_that_breaks_a_promise_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    example = str(ROOT / "examples" / "assign-cooperative-join.json")
    code, out, _ = run([example, "--mutant", "coop-no-withhold"], capsys)
    assert code == 1
    assert out["mutants"] == ["coop-no-withhold"]
    assert "revoke-before-assign" in out["violated"]
    assert out["details"]["revoke-before-assign"]["promised"] is True


def test_out_writes_json_markdown_and_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([str(write(tmp_path, simple())), "--out", str(tmp_path / "r")], capsys)
    assert code == 0
    assert json.loads((tmp_path / "r" / "assign.json").read_text()) == out
    assert "single-owner" in (tmp_path / "r" / "assign.md").read_text()
    assert (tmp_path / "r" / "assign.html").read_text().lstrip().lower().startswith("<!doctype html")


def test_report_escapes_member_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    problem = simple()
    problem["members"][0]["member_id"] = "<script>alert(1)</script>"
    code, _, _ = run([str(write(tmp_path, problem)), "--out", str(tmp_path / "r")], capsys)
    assert code == 0
    assert "<script>alert" not in (tmp_path / "r" / "assign.html").read_text()


# ---------------------------------------------------------------- bad input: exit 2, one line naming the field


def _bad(tmp_path: Path, capsys: pytest.CaptureFixture[str], document: Any) -> str:
    path = write(tmp_path, document)
    code, out, err = run([str(path)], capsys)
    assert code == 2 and out is None
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith(f"groupspec assign: {path}")
    return lines[0]


def _member(**fields: Any) -> dict[str, Any]:
    return {"strategy": "range", "topics": {"t1": 3}, "members": [{"member_id": "c1", "topics": ["t1"], **fields}]}


@pytest.mark.parametrize(("document", "expected"), [
    ({"topics": {}, "members": []}, "strategy: missing required field"),
    ({"strategy": 3, "topics": {}, "members": []}, "strategy: expected a string, got an integer"),
    ({"strategy": "fair", "topics": {}, "members": []}, 'unknown strategy "fair"; known: range, roundrobin'),
    ({"strategy": "range", "members": []}, "topics: missing required field"),
    ({"strategy": "range", "topics": [], "members": []}, "topics: expected an object"),
    ({"strategy": "range", "topics": {"t1": -3}, "members": []}, 'topics["t1"]: must be >= 0, got -3'),
    ({"strategy": "range", "topics": {"t1": 2.5}, "members": []}, 'topics["t1"]: expected an integer'),
    ({"strategy": "range", "topics": {"t1": True}, "members": []}, 'topics["t1"]: expected an integer, got a boolean'),
    ({"strategy": "range", "topics": {}}, "members: missing required field"),
    ({"strategy": "range", "topics": {}, "members": {}}, "members: expected an array"),
    ({"strategy": "range", "topics": {}, "members": [], "extra": 1}, "extra: unknown field"),
    ({"strategy": "range", "topics": {}, "members": ["c1"]}, "members[0]: expected an object, got a string"),
    ({"strategy": "range", "topics": {}, "members": [{"topics": []}]}, "members[0].member_id: missing required"),
    ({"strategy": "range", "topics": {}, "members": [{"member_id": "c1"}]}, "members[0].topics: missing required"),
    (_member(topics="t1"), "members[0].topics: expected an array, got a string"),
    (_member(topics=["t1", 7]), "members[0].topics[1]: expected a string"),
    (_member(topics=["t1", "t1"]), 'members[0].topics[1]: topic "t1" is listed twice'),
    (_member(owned={"topic": "t1"}), "members[0].owned: expected an array"),
    (_member(owned=[{"topic": "t1", "partition": "x"}]), "members[0].owned[0].partition: expected an integer"),
    (_member(owned=[{"topic": "t1"}]), "members[0].owned[0].partition: missing required field"),
    (_member(owned=[{"topic": "t1", "partition": 0, "offset": 5}]), "members[0].owned[0].offset: unknown field"),
    (_member(generation="3"), "members[0].generation: expected an integer, got a string"),
    (_member(generation=-2), "members[0].generation: must be >= -1, got -2"),
    (_member(instance_id=5), "members[0].instance_id: expected a string or null"),
    (_member(rack=[]), "members[0].rack: expected a string or null, got an array"),
    (_member(onwed=[]), "members[0].onwed: unknown field"),
    (_member(member_id=""), "members[0].member_id: must not be empty"),
])
def test_bad_field_names_its_json_path(tmp_path: Path, capsys: pytest.CaptureFixture[str], document: Any,
                                       expected: str) -> None:
    assert expected in _bad(tmp_path, capsys, document)


def test_duplicate_member_ids_name_both(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = {"strategy": "range", "topics": {"t": 1},
           "members": [{"member_id": "c1", "topics": ["t"]}, {"member_id": "c2", "topics": ["t"]},
                       {"member_id": "c1", "topics": ["t"]}]}
    line = _bad(tmp_path, capsys, doc)
    assert 'members[2].member_id: duplicate member id "c1" (also members[0])' in line


def test_duplicate_instance_ids_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = {"strategy": "range", "topics": {"t": 1},
           "members": [{"member_id": "c1", "instance_id": "i", "topics": ["t"]},
                       {"member_id": "c2", "instance_id": "i", "topics": ["t"]}]}
    assert 'members[1].instance_id: duplicate instance id "i"' in _bad(tmp_path, capsys, doc)


def test_the_line_of_the_offending_object_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = ('{"strategy": "range",\n "topics": {"t1": 3},\n "members": [\n'
            '  {"member_id": "c1", "topics": ["t1"]},\n'
            '  {"member_id": "c2", "topics": ["t1"],\n'
            '   "owned": [{"topic": "t1", "partition": 0},\n'
            '             {"topic": "t1", "partition": null}]}\n ]}\n')
    line = _bad(tmp_path, capsys, text)
    assert line == (f"groupspec assign: {tmp_path / 'problem.json'}:7: members[1].owned[1].partition: "
                    "expected an integer, got null")


def test_invalid_json_names_line_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _bad(tmp_path, capsys, '{"strategy": "range",\n "topics": {"t1": 3,}\n}')
    assert ":2: invalid JSON: Expecting property name enclosed in double quotes (column 21)" in line


def test_duplicate_keys_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _bad(tmp_path, capsys, '{"strategy": "range",\n "topics": {"t1": 3, "t1": 4}, "members": []}')
    assert ':2: duplicate key "t1" in one object' in line


def test_a_document_that_is_not_an_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "the document: expected an object, got an array" in _bad(tmp_path, capsys, "[1, 2]")


def test_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run([str(tmp_path / "missing.json")], capsys)
    assert code == 2 and err.strip() == f"groupspec assign: {tmp_path / 'missing.json'}: cannot read: No such file or directory"
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"strategy": "r\xe9"}')
    code, _, err = run([str(path)], capsys)
    assert code == 2 and "not UTF-8" in err


def test_unknown_mutant_and_non_assignor_mutant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write(tmp_path, simple()))
    code, _, err = run([path, "--mutant", "no-such-mutant"], capsys)
    assert code == 2 and "unknown mutant(s) no-such-mutant" in err
    other = next(name for name, m in MUTANTS.items() if not m.where.startswith("model.assignors."))
    code, _, err = run([path, "--mutant", other], capsys)
    assert code == 2 and f"{other} is a mutant of" in err


def test_missing_argument_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["assign"])
    assert exc.value.code == 2


def test_an_input_on_which_kafkas_assignor_throws_exits_1_with_the_reason(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Java's GeneralAssignmentBuilder throws NullPointerException here (model/assignors/sticky_general.py).
    claims = [{"topic": "t0", "partition": p} for p in range(4)]
    problem = {"strategy": "sticky", "topics": {"t0": 4, "t1": 1}, "members": [
        {"member_id": "a", "topics": ["t0"], "owned": claims, "generation": 5},
        {"member_id": "b", "topics": ["t1"], "owned": claims[:1], "generation": 4},
        {"member_id": "c", "topics": ["t0"], "generation": 5}]}
    code, out, err = run([str(write(tmp_path, problem))], capsys)
    assert code == 1 and err.startswith("sticky: the assignor fails on this input, as Kafka's does")
    assert out["assignment"] is None and "NullPointerException" in out["assignor_failure"]
