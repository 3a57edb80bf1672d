"""The first run of a new user (issue 16): --version, README commands that write nothing into the
repository, --out refused before the work, assign's summary for people, the design document."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from groupspec.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_version_answers(capsys: pytest.CaptureFixture[str]) -> None:
    import groupspec

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith(f"groupspec {groupspec.__version__} (Python ")


def _try_block() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    start = readme.index("T=$(mktemp -d)")
    block = readme[start:readme.index("```", start)]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_try_block_writes_only_into_its_scratch_directory() -> None:
    commands = _try_block()
    assert commands[0] == "T=$(mktemp -d)"
    for command in commands[1:]:
        for target in re.findall(r"(?:>|--out)\s+(\S+)", command):
            assert target.startswith("$T/"), command


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="git and a git checkout are needed to see what changed in the repository")
def test_the_try_block_leaves_the_repository_as_it_was(tmp_path: Path) -> None:
    """Run the README's commands (all but the minute of proofs) from the repository root, as a user would."""
    before = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout
    commands = [c for c in _try_block() if " prove " not in c]
    shim = tmp_path / "bin" / "groupspec"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m groupspec "$@"\n')
    shim.chmod(0o755)
    script = "set -u\n" + "\n".join(f"{{ {c}; }} >/dev/null 2>&1; echo \"$? {c[:40]}\"" if not c.startswith("T=") else c
                                    for c in commands)
    env = dict(os.environ, PATH=f"{shim.parent}:{os.environ['PATH']}", PYTHONPATH=str(ROOT),
               PYTHONDONTWRITEBYTECODE="1")  # bytecode caches are Python's, not the commands'
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, env=env, check=True)
    codes = [int(line.split()[0]) for line in done.stdout.splitlines()]
    assert codes == [0, 1, 0, 0, 0, 0, 0, 0], done.stdout  # the mutant line exits 1, as the README says
    after = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout
    assert after == before


def test_prove_refuses_an_unwritable_out_before_proving(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["prove", "--out", str(blocker / "reports")]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "cannot write there" in err
    assert "proving" not in err  # refused before the first obligation


def test_assign_prints_a_summary_for_people_beside_its_json(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["assign", str(ROOT / "examples" / "assign-cooperative-join.json"), "--mutant",
                 "coop-no-withhold"]) == 1
    captured = capsys.readouterr()
    json.loads(captured.out)  # stdout stays one JSON document
    err = captured.err
    assert "cooperative-sticky with mutant coop-no-withhold: 3 member(s), 6 partition(s) assigned" in err
    assert "  consumer-3-c2d8: orders-2, orders-5 (0 kept)" in err
    assert "moves: orders-2 consumer-1-4f1c -> consumer-3-c2d8, orders-5 consumer-2-9a07 -> consumer-3-c2d8" in err
    assert "VIOLATED: revoke-before-assign; held: single-owner" in err
    assert main(["assign", str(ROOT / "examples" / "assign-cooperative-join.json")]) == 0
    err = capsys.readouterr().err
    assert "withheld while they change owner (revoked now, assigned in the next rebalance): orders-2, orders-5" in err
    assert main(["assign", "--quiet", str(ROOT / "examples" / "assign-cooperative-join.json")]) == 0
    assert capsys.readouterr().err == ""


def test_the_design_document_is_in_the_repository_and_cited() -> None:
    from model.invariants.catalogue import CATALOGUE

    design = (ROOT / "docs" / "design.md").read_text()
    for inv in CATALOGUE:
        assert f"| `{inv}` |" in design, inv
    for heading in ("## Layers", "## Formats", "## The invariant catalogue", "## Real components, and how each starts"):
        assert heading in design
    cited = [p for p in ROOT.rglob("*") if p.suffix in (".py", ".md") and ".git" not in p.parts
             and "DESIGN.md" in p.read_text(errors="replace") and p.name != "test_first_run.py"]
    assert cited == []
