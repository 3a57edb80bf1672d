"""The real Apache Kafka broker as a component: fetched, started, ready, restarted, and always stopped.

One broker serves the whole module (a JVM start costs seconds); the tests that need a broker of their
own (port taken, Ctrl-C on the command line) start it themselves and stop it in ``finally``. Skipped
only where ``java`` 17+ is missing, or ``mvn`` is missing and the jars are not cached.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.drivers.process import wait_until
from conformance.kafka import DEFAULT_VERSION, KafkaBroker, KafkaUnavailable, env_problem
from conformance.kafka.broker import STARTED_MESSAGE
from conformance.kafka.jars import fetch, is_complete, jar_dir

PROJECT_ROOT = Path(__file__).resolve().parents[2]
_PROBLEM = env_problem()
pytestmark = pytest.mark.skipif(_PROBLEM is not None, reason=f"Apache Kafka cannot run here: {_PROBLEM}")


def _connectable(bootstrap: str) -> bool:
    host, _, port = bootstrap.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child still answers kill(0); its /proc status says Z
    try:
        return " Z " not in Path(f"/proc/{pid}/stat").read_text().split(")", 1)[1][:3] + " "
    except FileNotFoundError:
        return False


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    with KafkaBroker(workdir=tmp_path_factory.mktemp("kafka")) as b:
        yield b


def _partitions(broker: KafkaBroker, topic: str) -> int:
    out = broker.run_tool("org.apache.kafka.tools.TopicCommand",
                          ["--bootstrap-server", broker.bootstrap, "--describe", "--topic", topic])
    return sum(1 for line in out.splitlines() if "Partition:" in line and "Leader:" in line)


def test_jars_are_cached_once_with_the_log4j2_backend() -> None:
    directory = jar_dir(DEFAULT_VERSION)
    result = fetch(DEFAULT_VERSION)
    assert is_complete(directory) and result.seconds == 0.0
    names = {p.name for p in directory.glob("*.jar")}
    for prefix in ("kafka_2.13-", "kafka-tools-", "kafka-clients-", "kafka-group-coordinator-",
                   "log4j-slf4j-impl-", "log4j-core-"):
        assert any(n.startswith(prefix) for n in names), prefix


def test_started_broker_is_ready_on_localhost_with_the_test_settings(broker: KafkaBroker) -> None:
    assert broker.alive and broker.bootstrap.startswith("127.0.0.1:")
    assert _connectable(broker.bootstrap)
    assert broker.server_log.read_text().count(STARTED_MESSAGE) >= 1
    props = broker.properties_path.read_text()
    assert "group.initial.rebalance.delay.ms=0" in props and "offsets.topic.num.partitions=1" in props


def test_topics_are_created_grown_and_produced_to(broker: KafkaBroker) -> None:
    broker.create_topic("grow", 2)
    assert _partitions(broker, "grow") == 2
    broker.add_partitions("grow", 5)
    assert _partitions(broker, "grow") == 5
    out = broker.produce("grow", 5)
    sent = [line for line in out.splitlines() if '"producer_send_success"' in line]
    assert len(sent) == 5


def test_restart_keeps_ports_and_data_and_appends_the_log(broker: KafkaBroker) -> None:
    broker.create_topic("kept", 3)
    bootstrap, pid = broker.bootstrap, broker.pid
    starts = broker.server_log.read_text().count(STARTED_MESSAGE)
    broker.restart()
    assert broker.bootstrap == bootstrap and broker.pid != pid and pid is not None and not _pid_alive(pid)
    assert broker.server_log.read_text().count(STARTED_MESSAGE) == starts + 1
    assert _partitions(broker, "kept") == 3
    broker.restart(hard=True)
    assert _partitions(broker, "kept") == 3


def test_a_taken_port_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        b = KafkaBroker(workdir=tmp_path, port=port, start_timeout_s=60)
        try:
            with pytest.raises(KafkaUnavailable, match="already in use") as info:
                b.start()
        finally:
            b.close()
    assert f"127.0.0.1:{port}" in str(info.value) and str(b.log_dir) in str(info.value)
    assert not b.alive and (b.log_dir / "server.log").exists()


def test_missing_jars_without_maven_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KafkaUnavailable, match="mvn"):
        fetch(DEFAULT_VERSION, tmp_path, mvn=str(tmp_path / "no-mvn-here"))


def test_an_unknown_version_exits_2_with_one_message(tmp_path: Path) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "GROUPSPEC_CACHE": str(tmp_path), "PYTHONPATH": str(PROJECT_ROOT), "TMPDIR": str(temp)}
    proc = subprocess.run([sys.executable, "-m", "conformance.kafka", "--kafka-version", "0.0.1-groupspec-none"],
                          capture_output=True, text=True, env=env, timeout=300, check=False, cwd=PROJECT_ROOT)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("groupspec: fetching Apache Kafka 0.0.1-groupspec-none with Maven failed")
    assert not (tmp_path / "kafka" / "0.0.1-groupspec-none").exists()
    # the broker's own temporary work directory (no --workdir) goes with the failed start
    assert not [p.name for p in temp.iterdir() if p.name.startswith("groupspec-kafka-")]


def test_command_line_broker_stops_on_ctrl_c(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    # a relative --workdir (the broker JVM runs inside it, so the harness must make it absolute)
    proc = subprocess.Popen([sys.executable, "-m", "conformance.kafka", "--workdir", tmp_path.name,
                             "--topic", "hand:2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=tmp_path.parent)
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("Ctrl-C"):
                break
        bootstrap = next(ln.split(": ", 1)[1].strip() for ln in lines if ln.startswith("bootstrap:"))
        assert _connectable(bootstrap)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        wait_until(lambda: not _connectable(bootstrap), 10, "the broker's port to close")
        assert (tmp_path / "logs" / "server.log").read_text().count(STARTED_MESSAGE) == 1
        assert not (tmp_path / "data").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_cluster_id_never_reads_as_an_option(monkeypatch: pytest.MonkeyPatch) -> None:
    """The storage tool takes an id starting with '-' for an option; such a draw is drawn again."""
    import uuid

    from conformance.kafka import broker

    draws = iter([uuid.UUID(bytes=b"\xfb" + b"\x00" * 15), uuid.UUID(int=7)])  # the first encodes to "-w..."
    monkeypatch.setattr(broker.uuid, "uuid4", lambda: next(draws))
    assert broker.new_cluster_id() == broker.base64.urlsafe_b64encode(uuid.UUID(int=7).bytes).decode().rstrip("=")
