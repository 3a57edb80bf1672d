"""The same job on a real Spark standalone cluster: a master and one worker from the installed PySpark.

Both listen on 127.0.0.1 only (SPARK_LOCAL_IP, free ports); the job goes in by ``spark-submit
--master spark://127.0.0.1:PORT`` with the project's packages shipped by ``--py-files``, and its
findings must equal the in-process run's. The master and the worker are stopped by pid when the
test ends, also when it fails.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_analysis.submit import package_zip

pyspark = pytest.importorskip("pyspark")
SPARK_HOME = Path(pyspark.__file__).parent
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": sys.executable,
                "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOG_DIR": str(tmp), "SPARK_WORKER_DIR": str(tmp / "work"),
                "PYTHONPATH": str(ROOT)})
    return env


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise AssertionError(f"process exited ({proc.returncode}) before '{text}': {log.read_text()[-2000:]}")
        time.sleep(0.5)
    raise AssertionError(f"'{text}' not in {log} after {timeout_s} s: {log.read_text()[-2000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)  # its own process group: the JVM spark-class started
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    env = _env(tmp_path)
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    started: list[subprocess.Popen[bytes]] = []
    try:
        master_log = tmp_path / "master.log"
        with master_log.open("wb") as out:
            master = subprocess.Popen([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                       "--port", str(port), "--webui-port", str(ui)], env=env, stdout=out,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        started.append(master)
        _wait_for(master_log, "I have been elected leader", master)
        url = f"spark://127.0.0.1:{port}"
        worker_log = tmp_path / "worker.log"
        with worker_log.open("wb") as out:
            worker = subprocess.Popen([spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                                       "--webui-port", str(worker_ui), "--cores", "2", "--memory", "1g",
                                       "--work-dir", str(tmp_path / "work")], env=env, stdout=out,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        started.append(worker)
        _wait_for(worker_log, "Successfully registered with master", worker)
        yield url, env
    finally:
        for proc in reversed(started):
            _stop(proc)


@pytest.mark.slow
def test_the_job_on_a_standalone_cluster_finds_what_local_finds(cluster: tuple[str, dict[str, str]], tmp_path: Path,
                                                                 samples_corpus: Path,
                                                                 samples_mined: dict[str, Any]) -> None:
    url, env = cluster
    zipped = package_zip(tmp_path / "groupspec.zip")
    out = tmp_path / "cluster-out"
    # spark-submit in a session of its own: on a hang, the driver's JVM and its Python go with it (killpg)
    submit = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-submit"), "--master", url, "--py-files", str(zipped),
                               "--conf", "spark.executor.memory=768m", "--conf", "spark.driver.host=127.0.0.1",
                               # a user's partition count is kept (the session's two per core is only a default),
                               # and the findings do not depend on it
                               "--conf", "spark.sql.shuffle.partitions=3",
                               str(ROOT / "spark_analysis" / "submit.py"), str(samples_corpus), "--out", str(out)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        # a guard against a hang, not a time limit: a quiet machine takes 2-3 minutes, a loaded one took more
        # than 15 (the old guard) with every step progressing
        _, stderr = submit.communicate(timeout=2400)
    finally:
        _stop(submit)
    assert submit.returncode in (0, 1), stderr.decode(errors="replace")[-3000:]
    report = json.loads((out / "mine.json").read_text())
    assert report["spark"]["master"] == url
    assert report["spark"]["shuffle_partitions"] == 3
    assert report["violations"] == samples_mined["violations"]
    assert report["warnings"] == samples_mined["warnings"]
    assert report["input"]["events"] == samples_mined["input"]["events"]
    assert report["warnings"], "the samples hold findings: equal empty lists would prove nothing"
