"""Other releases of a client in environments of their own (conformance/clients.py, ``conform --client``).

The release used is kafka-python 2.2.15 (a real release from the package index, pure Python: seconds to
install), beside the pinned kafka-python 3.0.12: the campaign test runs both on the same scenario, on the
mock cluster. Building an environment needs the package index, as the project's own install does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conformance import clients
from conformance.real_run import unsupported

ROOT = Path(__file__).resolve().parents[2]
RELEASE = "kafka-python==2.2.15"


def _conform(*args: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if cache is not None:
        env["GROUPSPEC_CLIENTS_CACHE"] = str(cache)
    return subprocess.run([sys.executable, "-m", "groupspec", "conform", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900, check=False)


@pytest.mark.parametrize("bad, says", [
    ("kafka-pyton==2.2.15", "unknown client 'kafka-pyton'"),
    ("java==4.1.1", "unknown client 'java'"),
    ("kafka-python", "expected NAME==VERSION"),
    ("kafka-python==2.x", "is not a release version"),
    ("kafka-python>=2.2", "expected NAME==VERSION"),
])
def test_a_bad_name_or_version_is_exit_2_with_one_line(bad: str, says: str, tmp_path: Path) -> None:
    done = _conform("--client", bad, "--out", str(tmp_path / "out"), cache=tmp_path / "cache")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    assert not (tmp_path / "cache").exists()  # refused before anything was built


def test_a_version_pip_cannot_get_is_exit_2_with_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    done = _conform("--client", "kafka-python==99.0.0", "--out", str(tmp_path / "out"), cache=tmp_path / "cache")
    assert done.returncode == 2, done.stderr
    [line] = [ln for ln in done.stderr.splitlines() if ln.startswith("groupspec")]
    assert "kafka-python==99.0.0: pip cannot get it" in line and "99.0.0" in line.split("pip cannot get it")[1]
    assert not (tmp_path / "cache" / "kafka-python-99.0.0").exists()


def test_an_environment_is_made_once_by_two_callers_at_once_and_reused(tmp_path: Path) -> None:
    release = clients.parse_release(RELEASE)
    made: list[clients.Environment] = []
    callers = [threading.Thread(target=lambda: made.append(clients.environment(release, root=tmp_path)))
               for _ in range(2)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert sorted(e.fresh for e in made) == [False, True]  # the lock: one built it, the other found it made
    env = made[0]
    assert env.client == "kafka-python 2.2.15"
    assert env.assignors == ("range", "roundrobin", "sticky")  # KIP-429 came to kafka-python in 2.3
    marker = (env.path / clients.MARKER).stat().st_mtime_ns
    again = clients.environment(release, root=tmp_path)
    assert not again.fresh and (env.path / clients.MARKER).stat().st_mtime_ns == marker
    version = subprocess.run([str(env.python), "-c", "import kafka; print(kafka.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version == "2.2.15"


def test_a_half_built_environment_is_built_again(tmp_path: Path) -> None:
    release = clients.parse_release(RELEASE)
    (tmp_path / release.dirname / "bin").mkdir(parents=True)  # a build killed before its marker
    env = clients.environment(release, root=tmp_path)
    assert env.fresh and env.client == "kafka-python 2.2.15"


def test_two_releases_run_the_same_scenarios_side_by_side(tmp_path: Path) -> None:
    """One campaign, the pinned kafka-python and 2.2.15 in its own environment: a matrix row each, every
    version named, each release's drivers running its own library."""
    out = tmp_path / "out"
    done = _conform("--clients", "kafka-python", "--client", RELEASE, "--strategies", "range", "--examples", "1",
                    "--seed", "1", "--workers", "1", "--out", str(out))
    assert done.returncode in (0, 1), done.stderr  # 1: a divergence is a verdict, not a failure to run
    data = json.loads((out / "conformance.json").read_text())
    assert data["versions"][RELEASE].startswith("2.2.15") and data["versions"]["kafka-python"] == "3.0.12"
    assert sorted(k.split(" | ")[0] for k in data["matrix"]) == ["kafka-python", RELEASE]
    runs = {r["client"]: r for r in data["runs"]}
    assert set(runs) == {"kafka-python", RELEASE} and data["counts"]["error"] == 0
    assert runs[RELEASE]["client_version"] == f"{RELEASE} 2.2.15 (own environment)"
    assert f"--clients {RELEASE}" in runs[RELEASE]["replay"]
    for client, library in ((RELEASE, "kafka-python 2.2.15"), ("kafka-python", "kafka-python 3.0.12")):
        traces = list(Path(runs[client]["dir"]).glob("*#1.jsonl"))
        assert traces
        for trace in traces:
            first = json.loads(trace.read_text().splitlines()[0])
            assert first["client"] == library
    # what this release lacks is unsupported for it, with why, and not for the pinned one
    cooperative = {"topics": {"t": 2}, "steps": [{"at": 0, "do": "join", "member": "a",
                                                  "assignors": ["cooperative-sticky"], "topics": ["t"]}]}
    [why] = unsupported(cooperative, {"a": RELEASE})
    assert f"{RELEASE} offers no cooperative-sticky" in why
    assert unsupported(cooperative, {"a": "kafka-python"}) == []
