"""`groupspec verify`: the main job's report and verdict (proofs and real clients are tested apart)."""

import json
import shutil
from pathlib import Path

from groupspec.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _examples(tmp_path: Path, *names: str) -> Path:
    d = tmp_path / "examples"
    d.mkdir()
    for name in names:
        shutil.copy(EXAMPLES / name, d / name)
    return d


def test_verify_writes_the_three_reports_and_holds_on_good_examples(tmp_path, capsys):
    examples = _examples(tmp_path, "assign-roundrobin-two-topics.json", "scenario-eager-join-leave-crash.json")
    out = tmp_path / "out"
    code = main(["verify", "--skip-proofs", "--skip-clients", "--examples", str(examples), "--out", str(out)])
    data = json.loads((out / "verify.json").read_text())
    assert [p["part"] for p in data["parts"]] == ["assignors", "model scenarios", "mutants"]
    assert data["assignors"][0]["ok"] and all(r["ok"] for r in data["scenarios"])
    # The two-topic roundrobin example is what catches the reset-per-topic mutant (balanced).
    rr = next(r for r in data["mutants"] if r["mutant"] == "roundrobin-reset-per-topic")
    assert rr["assign_examples"] == ["balanced"]
    assert (out / "verify.md").read_text().startswith("# groupspec verify")
    assert "<table>" in (out / "verify.html").read_text()
    # Mutants no example catches make the mutants part fail: the verdict says so rather than hiding it.
    uncaught = [r["mutant"] for r in data["mutants"]
                if not (r["model_monitor"] or r["checker"] or r["assign_examples"])]
    assert code == (1 if uncaught else 0)
    assert "rerun:" in capsys.readouterr().out


def test_verify_fails_when_an_example_breaks_a_promise(tmp_path):
    examples = tmp_path / "examples"
    examples.mkdir()
    # Kafka's own sticky assignor gives partitions to a member with an empty subscription when it is
    # visited first (docs/assign.md); the model reproduces that, and verify must report it.
    (examples / "assign-empty-first.json").write_text(json.dumps({
        "strategy": "sticky", "topics": {"t": 2},
        "members": [{"member_id": "a", "topics": []}, {"member_id": "b", "topics": ["t"]}]}))
    out = tmp_path / "out"
    code = main(["verify", "--skip-proofs", "--skip-clients", "--examples", str(examples), "--out", str(out)])
    data = json.loads((out / "verify.json").read_text())
    assert code == 1
    assert data["assignors"][0]["violated"] == ["subscribed-only"]


def test_verify_rejects_a_missing_examples_directory(tmp_path, capsys):
    code = main(["verify", "--skip-proofs", "--skip-clients", "--examples", str(tmp_path / "nope")])
    assert code == 2
    assert "not a directory" in capsys.readouterr().err


def test_verify_headline_lists_the_known_kafka_behaviours_it_met(tmp_path, capsys):
    """A scenario where Kafka itself breaks single-owner: the verdict holds and says so, naming the behaviour."""
    examples = _examples(tmp_path, "scenario-static-zombie.json")
    out = tmp_path / "out"
    main(["verify", "--skip-proofs", "--skip-clients", "--examples", str(examples), "--out", str(out)])
    data = json.loads((out / "verify.json").read_text())
    assert data["scenarios"] and all(r["ok"] for r in data["scenarios"])
    assert list(data["known_behaviours"]) == ["static-zombie-rejoin"]
    assert data["known_behaviours"]["static-zombie-rejoin"]["invariants"] == ["single-owner"]
    md = (out / "verify.md").read_text()
    assert "everything held" not in md
    assert "## Known Kafka behaviours met" in md and "static-zombie-rejoin" in md
    # one scenario catches few mutants, so this run fails on them; held, its headline would list the behaviour
    from groupspec.commands.verify import headline

    assert data["ok"] is False and headline(data).startswith("NOT HELD: mutants failed")
    held = dict(data, ok=True)
    assert headline(held) == "held, with 1 known Kafka behaviour(s) (listed below): static-zombie-rejoin (single-owner)"
    assert headline(dict(held, known_behaviours={})) == "held"
