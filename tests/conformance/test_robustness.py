"""The campaign runner ends what it starts: on Ctrl-C, on a hung client, on a failing test.

- Ctrl-C (SIGINT to the process group, as a terminal sends it) or SIGTERM to the runner alone, on a
  real ``groupspec conform``: it stops the runs in progress, writes conformance.json with what
  finished, exits 2, and leaves no process of its group behind (clients, idle warm drivers).
- A client that does not exit at its deadline after SIGTERM is killed, and the run is an ``error``,
  not a divergence (tests/conformance/hung_driver.py: librdkafka's driver ignoring SIGTERM).
- An exception inside a real run (a failing test) kills its clients and the pool's idle drivers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance import campaign
from conformance import real_run as rr
from conformance.drivers import process
from conformance.drivers.process import WarmPool, read_events
from tests.conformance.scenarios import join, scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = scenario(join(0, "a"), join(30000, "b"), until=60000, partitions=4)


def group_members(pgid: int) -> list[int]:
    """Pids of the live processes in process group ``pgid`` (from /proc; zombies are not alive)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(stat.parent.name))
    return pids


def as_a_terminal_starts_it() -> None:
    """In the child, before exec: SIGINT back to its default, as a shell gives a foreground job.

    A process started with SIGINT ignored keeps it ignored across exec, and Python then installs no
    KeyboardInterrupt handler: that is POSIX's rule for the background jobs of a non-interactive
    shell (``cmd &`` in a script), and ``nohup``. A test suite launched that way (as three CI runs
    of 2026-11-26 were) would start a ``conform`` that rightly ignores Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def started_clients(out: Path) -> list[Path]:
    return [p for p in out.glob("runs/*/*#*.jsonl")
            if any(e.get("name") == "startup_complete" for e in read_events(p))]


@pytest.mark.clients
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process groups from /proc (Linux)")
@pytest.mark.parametrize("stop", ["ctrl-c", "sigterm"])
def test_an_interrupt_stops_conform_writes_what_finished_and_leaves_no_process(tmp_path: Path, stop: str) -> None:
    out = tmp_path / "out"
    # Far more runs than can finish between the first client's start and the SIGINT, even on a loaded machine (with
    # 4 planned, all four once finished first and conform rightly exited 0): the interrupt always lands mid-campaign.
    planned = 40
    proc = subprocess.Popen([sys.executable, "-m", "groupspec", "conform", "--strategies", "range", "--examples", str(planned),
                             "--workers", "2", "--out", str(out)], cwd=ROOT, start_new_session=True,
                            preexec_fn=as_a_terminal_starts_it,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    pgid = proc.pid
    try:
        deadline = time.monotonic() + 120
        while not started_clients(out) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert started_clients(out), "no client started"
        children = [p for p in group_members(pgid) if p != proc.pid]
        assert children, "the runs' client processes share conform's process group"
        if stop == "ctrl-c":  # a terminal's Ctrl-C: SIGINT to the whole foreground process group
            os.killpg(pgid, signal.SIGINT)
        else:  # kill, timeout, a CI job's cancel: SIGTERM to the runner alone
            os.kill(proc.pid, signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)  # prompt: runs in progress are not waited for
        assert proc.returncode == 2, stderr
        assert "interrupted" in stderr
        data = json.loads((out / "conformance.json").read_text())
        assert data["interrupted"]["planned"] == planned
        assert data["interrupted"]["finished"] == len(data["runs"]) < planned
        assert group_members(pgid) == []
    finally:
        if proc.poll() is None or group_members(pgid):
            os.killpg(pgid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.mark.clients
def test_a_hung_client_is_killed_at_its_deadline_and_the_run_is_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(process.DRIVER_MODULES, "hung-client", "tests.conformance.hung_driver")
    monkeypatch.setitem(rr.CLIENT_ASSIGNORS, "hung-client", ("range",))
    monkeypatch.setattr(rr, "STOP_DEADLINE_S", 3.0)
    with WarmPool(spares=1) as pool:
        record = campaign.run_scenario(SCENARIO, ["hung-client", "confluent-kafka"], tmp_path / "run", pool=pool)
    assert record.verdict == "error"
    assert record.error is not None and "a#1" in record.error and "hung client" in record.error
    trace = read_events(tmp_path / "run" / "a#1.jsonl")
    assert any(e["name"] == "partitions_assigned" for e in trace)  # it ran as a real client ...
    assert not any(e["name"] == "shutdown_complete" for e in trace)  # ... and never closed: it was killed
    assert json.loads((tmp_path / "run" / "run.json").read_text())["verdict"] == "error"


@pytest.mark.clients
def test_a_failing_test_inside_a_run_leaves_no_client_and_no_idle_driver(tmp_path: Path) -> None:
    members = {"a": "kafka-python", "b": "aiokafka"}
    seen: list[subprocess.Popen[bytes]] = []
    pool = WarmPool(spares=1)
    with pytest.raises(RuntimeError, match="a failing test"), pool:
        pool.prime(["kafka-python", "aiokafka"])
        with rr.RealRun(SCENARIO, members, tmp_path, pool=pool) as run:
            for step in SCENARIO["steps"]:
                run._apply(step)
                run._joined(step["member"])
            seen += [p.proc for p in run._fleet]
            seen += [p for idle in pool._idle.values() for p in idle]
            assert all(p.poll() is None for p in seen)
            raise RuntimeError("a failing test")
    assert len(seen) == 4
    assert all(p.poll() is not None for p in seen)
