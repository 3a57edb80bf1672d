"""model.proofs.contracts: the transition functions' contracts fail, by their own verdict, on the mutants of
model/ that every obligation let through before (docs/proofs.md, "Mutation testing").

Each mutant is the one-line edit Cosmic Ray made (written here as text, so the test needs no mutation tool),
applied to a copy of model/ in a temporary directory; the obligation runs there in a child process. The
unmutated model proves both obligations (tests/model/test_proofs.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from model.proofs import contracts
from model.proofs.core import RunConfig

ROOT = Path(__file__).resolve().parents[2]

#: (file, the line as it is, the line as the mutant has it, the obligation, the contract that must fail)
SURVIVORS = {
    "heartbeat.py:109": ("model/classic/member/heartbeat.py", "error is not Errors.ILLEGAL_GENERATION)",
                         "error is Errors.ILLEGAL_GENERATION)", "model-member-contracts",
                         "heartbeat-error-identity"),
    "heartbeat.py:122": ("model/classic/member/heartbeat.py",
                         "return _with(m, finding_coordinator=False, coordinator_node=r.node,",
                         "return _with(m, finding_coordinator=True, coordinator_node=r.node,",
                         "model-member-contracts", "coordinator-found-again"),
    "join.py:229": ("model/classic/coordinator/join.py", "if matches(m, request.protocols):",
                    "if not matches(m, request.protocols):", "model-coordinator-contracts",
                    "join-retry-in-sync-phase"),
    "join.py:173": ("model/classic/coordinator/join.py", "    if group.state is STABLE:\n        unchanged",
                    "    if not group.state is STABLE:\n        unchanged", "model-coordinator-contracts",
                    "static-rejoin-by-state"),
    "load.py:151": ("model/classic/coordinator/load.py",
                    "elif previous in (COMPLETING_REBALANCE, STABLE) and m.awaiting_sync is not None:",
                    "elif previous in (COMPLETING_REBALANCE, STABLE) and m.awaiting_sync is None:",
                    "model-coordinator-contracts", "unload-answers-parked"),
    "rebalance.py:200": ("model/classic/coordinator/rebalance.py",
                         "if group.state in (DEAD, EMPTY, PREPARING_REBALANCE) or not pending:",
                         "if not group.state in (DEAD, EMPTY, PREPARING_REBALANCE) or not pending:",
                         "model-coordinator-contracts", "sync-timer-while-pending"),
}

_CHILD = """
import json, sys
from model.proofs import obligations
from model.proofs.core import RunConfig
out = obligations.get(sys.argv[1]).run(RunConfig())
print(json.dumps({"status": str(out.status), "failed": [q.name.split(":")[0] for q in out.queries if not q.ok]}))
"""


@pytest.mark.parametrize("survivor", sorted(SURVIVORS))
def test_the_contracts_fail_on_the_mutant(survivor: str, tmp_path: Path) -> None:
    path, before, after, obligation_id, contract = SURVIVORS[survivor]
    shutil.copytree(ROOT / "model", tmp_path / "model", ignore=shutil.ignore_patterns("__pycache__"))
    source = (tmp_path / path).read_text(encoding="utf-8")
    assert source.count(before) == 1, f"{survivor}: the line is no longer in {path}"
    (tmp_path / path).write_text(source.replace(before, after), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", _CHILD, obligation_id], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]  # a verdict, not a crash
    got = json.loads(done.stdout)
    assert got["status"] == "failed" and contract in got["failed"], got


def test_every_contract_applies_somewhere_and_says_how_often() -> None:
    for ob in contracts.OBLIGATIONS:
        out = ob.run(RunConfig(bounds={"seeds": 12}))
        checked = out.facts["checked_at"]
        assert set(checked) == set(contracts.GROUP_CONTRACTS if "coordinator" in ob.id else contracts.MEMBER_CONTRACTS)
        assert all(n > 0 for n in checked.values()), checked
        assert out.status.value == "proved", [q.note for q in out.queries if not q.ok]


def test_a_contract_that_applies_nowhere_fails_as_vacuous() -> None:
    out = contracts.model_coordinator_contracts.run(RunConfig(bounds={"seeds": 0}))
    assert out.status.value == "failed"
    assert all("vacuous" in q.note for q in out.queries if not q.name.startswith("runs:"))
