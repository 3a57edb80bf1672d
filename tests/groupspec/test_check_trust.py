"""`groupspec check` verdicts a user can trust: runs kept apart, nothing read is no pass, deep JSON,
bad fields, and a cooperative overlap named by the rule it breaks (issue 16)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from groupspec.cli import main
from tests.traces.support import REAL, ev, findings, run, write_jsonl

KAFKA = REAL.parent / "kafka-4.1.1"

COOP = {"protocol": "cooperative", "group": "g"}


def test_each_directory_is_a_run_of_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Five real captures that all call their group orders-group: each holds alone, so together too."""
    dirs = sorted(p for p in REAL.iterdir() if p.is_dir())
    assert len(dirs) >= 2
    alone = {d.name: run(d)["verdict"] for d in dirs}
    together = run(dirs)
    assert together["verdict"] in ("held", "warning")
    assert not [f for f in together["findings"] if f["severity"] == "violation"]
    runs = together["input"]["runs"]
    assert [Path(r["run"]).name for r in runs] == [d.name for d in dirs]
    assert {Path(r["run"]).name: r["verdict"] for r in runs} == alone
    for r, d in zip(runs, dirs, strict=True):  # which files formed which run
        assert r["files"] and all(Path(f).is_relative_to(d) for f in r["files"])
    assert sorted(together["groups"]) == sorted(f"orders-group @ {d}" for d in dirs)
    # merged on request, they make one group of every member: the accident the default avoids
    merged = run(dirs, merge_runs=True)
    assert list(merged["groups"]) == ["orders-group"]
    assert merged["verdict"] == "violation"  # members of different captures look like intruders
    assert main(["check", *map(str, dirs)]) == 0
    out = capsys.readouterr().out
    assert f"{len(dirs)} runs, checked apart" in out


def test_one_member_name_from_several_captures_in_one_run_is_warned(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Two real Kafka 4.1.1 captures whose consumers are both called m1 and m2, under one parent directory:
    named as the parent, they are one run, and two processes read as one member give violations neither
    capture has. The check says why; each directory named alone is two clean runs and no warning."""
    for name in ("java-eager", "broker-restart"):
        shutil.copytree(KAFKA / name, tmp_path / "captures" / name)
    parent = tmp_path / "captures"
    apart = run(sorted(parent.iterdir()))
    assert apart["verdict"] != "violation" and apart["input"]["shared_members"] == []
    together = run(parent)
    assert together["verdict"] == "violation"  # what the warning explains
    assert together["input"]["shared_members"] == [
        {"run": str(parent), "directories": [str(parent / "broker-restart"), str(parent / "java-eager")], "members": ["m1", "m2"]}]
    assert main(["check", str(parent)]) == 1
    out = capsys.readouterr().out
    assert "warning: members m1, m2 are read from files of one format in 2 directories" in out
    # a member's callback trace and its client log in two directories are one consumer: not warned
    split = tmp_path / "split"
    for fmt, suffix in (("jsonl", ".jsonl"), ("logs", ".log")):
        (split / fmt).mkdir(parents=True)
        for member in ("m1", "m2", "m3"):
            shutil.copy(KAFKA / "java-eager" / f"{member}{suffix}", split / fmt)
    shutil.copy(KAFKA / "java-eager" / "server.log", split / "logs")
    assert run(split)["input"]["shared_members"] == []


def test_overlapping_runs_of_one_group_are_warned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("a", "b"):
        write_jsonl(tmp_path / name / "c.jsonl", [ev("partitions_assigned", 1000, parts=[0], group="g"),
                                                 ev("partitions_revoked", 5000, parts=[0], group="g")])
    write_jsonl(tmp_path / "later" / "c.jsonl", [ev("partitions_assigned", 9000, parts=[0], group="g")])
    report = run([tmp_path / "a", tmp_path / "b", tmp_path / "later"])
    assert report["verdict"] == "held"
    assert report["input"]["run_overlaps"] == [
        {"group": "g", "runs": [str(tmp_path / "a"), str(tmp_path / "b")], "from": 1000, "to": 5000}]
    assert main(["check", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "warning: group g is reported by runs" in capsys.readouterr().out


def test_a_file_with_no_event_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"a": 1}\n')
    assert main(["check", "--format", "groupspec", str(wrong)]) == 2
    err = capsys.readouterr().err
    assert "wrong.json: no event read: 1 line(s) skipped (missing-name 1" in err
    assert "nothing was checked" in err
    empty_dir = tmp_path / "d"
    write_jsonl(empty_dir / "x.jsonl", [{"name": "partitions_assigned"}])  # no timestamp
    assert main(["check", str(empty_dir), str(wrong.parent / "d")]) == 2


@pytest.mark.parametrize("command,text", [
    ("simulate", "[" * 2000 + "]" * 2000),
    ("check", '{"a":' * 2000 + "1" + "}" * 2000),
    ("assign", "[" * 2000 + "]" * 2000),
])
def test_deep_json_is_nested_too_deeply_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   command: str, text: str) -> None:
    path = tmp_path / "deep.json"
    path.write_text(text + "\n")
    assert main([command, str(path)]) == 2
    err = capsys.readouterr().err
    assert "nested too deeply" in err and "Traceback" not in err
    assert str(path) in err


def test_a_deep_line_among_events_is_skipped_as_nested_too_deeply(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [ev("partitions_assigned", 1, parts=[0])])
    with path.open("a") as fh:
        fh.write('{"a":' * 2000 + "1" + "}" * 2000 + "\n")
    report = run(path)
    assert report["input"]["skipped"] == {"invalid-json": 1}
    assert report["input"]["skipped_examples"][0]["detail"].startswith("nested too deeply")


def test_a_commit_of_offset_ten_is_a_bad_field(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [
        ev("partitions_assigned", 1, parts=[0]),
        ev("offsets_committed", 2, offsets=[{"topic": "t", "partition": 0, "offset": "ten"}], success=True)])
    report = run(path)
    assert report["input"]["skipped"] == {"bad-field": 1}
    assert "offset of t-0 is not an integer: 'ten'" in report["input"]["skipped_examples"][0]["detail"]
    assert report["opportunities"].get("commit-owned-only", 0) == 0  # not counted as a commit
    from traces.schema import TraceInputError

    with pytest.raises(TraceInputError, match=r"t\.jsonl:2: bad-field"):
        run(path, strict=True)


def _coop(name: str, ts: int, member: str, gen: int, **fields: object) -> dict[str, object]:
    return ev(name, ts, member=member, member_id=f"{member}-1", generation=gen, **COOP, **fields)


def test_cooperative_overlap_is_revoke_before_assign_and_single_owner(tmp_path: Path) -> None:
    """Both in generation 2; b is given t-0 while a, its owner, still holds it; a revokes it only in generation 3."""
    path = write_jsonl(tmp_path / "t.jsonl", [
        _coop("group_joined", 1000, "a", 1),
        _coop("partitions_assigned", 1010, "a", 1, parts=[0, 1]),
        _coop("group_joined", 2000, "a", 2),
        _coop("group_joined", 2000, "b", 2),
        _coop("partitions_assigned", 2010, "b", 2, parts=[0]),
        _coop("group_joined", 3000, "a", 3),
        _coop("group_joined", 3000, "b", 3),
        _coop("partitions_revoked", 3010, "a", 3, parts=[0]),
    ])
    got = sorted((f["invariant"], tuple(f["members"])) for f in findings(run(path)))
    assert got == [("revoke-before-assign", ("a", "b")), ("single-owner", ("a", "b"))]


def test_an_owner_left_out_of_the_generation_is_single_owner_only(tmp_path: Path) -> None:
    """a never joins generation 2 (a zombie the trace cannot prove one): the assignor never heard of its
    partitions, so no cooperative rule was broken -- the overlap is single-owner's alone."""
    path = write_jsonl(tmp_path / "t.jsonl", [
        _coop("group_joined", 1000, "a", 1),
        _coop("partitions_assigned", 1010, "a", 1, parts=[0]),
        _coop("group_joined", 2000, "b", 2),
        _coop("partitions_assigned", 2010, "b", 2, parts=[0]),
        _coop("partitions_revoked", 3010, "a", 1, parts=[0]),
    ])
    assert "revoke-before-assign" not in {f["invariant"] for f in findings(run(path))}


def test_the_static_zombie_scenario_is_single_owner_only() -> None:
    """The model's static-zombie-rejoin (a known Kafka behaviour): the stalled static member is left out of
    the generation that gives its partitions away, so model and checker agree on single-owner alone."""
    from groupspec.commands.verify import EXAMPLES, _simulate

    row = _simulate(EXAMPLES / "scenario-static-zombie.json", 0, frozenset())
    assert row["model"] == row["checker"] == ["single-owner"]


def test_runs_keep_their_files_apart_in_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = REAL / "confluent-kafka-range"
    for name in ("x", "y"):
        shutil.copytree(src, tmp_path / name)
    assert main(["check", "--json", str(tmp_path / "x"), str(tmp_path / "y")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {s["run"] for s in report["input"]["sources"]} == {str(tmp_path / "x"), str(tmp_path / "y")}
    assert report["input"]["run_overlaps"]  # the same capture twice: same group, same time
