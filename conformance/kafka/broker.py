"""One Apache Kafka broker in KRaft combined mode on 127.0.0.1: started, restarted and always stopped.

The node is both broker and controller (``process.roles=broker,controller``), listens on two free
ports of 127.0.0.1 (clients, controller) that stay the same across restarts, and keeps its data in
``<workdir>/data``, formatted fresh when the broker is first started
(``kafka.tools.StorageTool format --standalone``, KIP-853's single-voter dynamic quorum). The settings
that make group tests fast and deterministic are in :data:`TEST_SETTINGS`, each with its reason.

Logs go to ``<workdir>/logs`` (``conformance/kafka/log4j2.xml``: Kafka's layout; GroupMetadataManager and
OffsetMetadataManager at DEBUG) and are kept when the broker stops; ``server.log`` is appended to across
restarts. The JVM's own stdout / stderr go to ``logs/broker.out``.

Readiness is a *new* ``Kafka Server started`` line in server.log (``KafkaRaftServer.startup`` logs
``KafkaBroker.STARTED_MESSAGE`` once the broker and controller are up), awaited with a deadline; a
broker that exits first, or is not up by then, raises :class:`~conformance.kafka.jars.KafkaUnavailable`
with the reason found in its log (a port already in use is named) and the log's path. Stopping is
SIGTERM (Kafka's controlled shutdown) and SIGKILL after a grace period; :meth:`KafkaBroker.kill` is the
hard crash. The harness only ever signals the JVM it started.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

from conformance.kafka.jars import DEFAULT_VERSION, KafkaUnavailable, classpath, fetch

HERE = Path(__file__).resolve().parent
LOG4J2_CONFIG = HERE / "log4j2.xml"
TOOLS_LOG4J2_CONFIG = HERE / "tools-log4j2.xml"
STARTED_MESSAGE = "Kafka Server started"  # kafka.server.KafkaBroker.STARTED_MESSAGE
_TAIL_LINES = 30

#: Broker settings for group tests, beyond the KRaft node's own (listeners, roles, quorum, log.dirs).
TEST_SETTINGS: dict[str, str] = {
    # GroupCoordinatorConfig: the first rebalance of an empty classic group waits 3 s by default for
    # more members; tests want each join to be seen as it happens.
    "group.initial.rebalance.delay.ms": "0",
    # Classic members may ask for sessions down to 1 s (default floor 6 s), so expiry is quick.
    "group.min.session.timeout.ms": "1000",
    # Consumer protocol (KIP-848): the broker sets the session and heartbeat; defaults 45 s / 5 s would
    # keep a killed member for 45 s.
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
    # One partition for the offsets topic: every group has the same coordinator partition, and the
    # broker creates one log instead of fifty at the first FindCoordinator.
    "offsets.topic.num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.num.partitions": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "num.partitions": "1",
    "auto.create.topics.enable": "false",
}


def free_port() -> int:
    """A port of 127.0.0.1 nobody listens on now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def new_cluster_id() -> str:
    """A cluster id as ``kafka.tools.StorageTool random-uuid`` prints one (URL-safe base64 of 16 bytes).

    Like Kafka's ``Uuid.randomUuid`` it draws again when the text starts with ``-``: the storage
    tool would read such an id as an option, and the broker would not start (about 1 start in 64).
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


def java_problem(java: str | None = None) -> str | None:
    """``None`` when a JDK 17+ ``java`` is on PATH (Kafka 4 needs 17), else why not."""
    exe = java or shutil.which("java")
    if exe is None:
        return "`java` is not on PATH (Apache Kafka 4 needs a JDK 17+)"
    proc = subprocess.run([exe, "-version"], capture_output=True, text=True, check=False)
    match = re.search(r'version "(\d+)', proc.stderr + proc.stdout)
    if match is None or int(match.group(1)) < 17:
        return f"`{exe} -version` is not Java 17+ (Apache Kafka 4 needs 17): {proc.stderr.strip()[:200]!r}"
    return None


def _tail(path: Path, lines: int = _TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no such file)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty)"


_LIVE: weakref.WeakSet[KafkaBroker] = weakref.WeakSet()


@atexit.register
def _stop_live_brokers() -> None:  # a forgotten broker must not outlive the Python process
    for broker in list(_LIVE):
        broker.stop()


class KafkaBroker:
    """One KRaft broker+controller; ``with KafkaBroker(workdir=d) as broker:`` starts and always stops it."""

    def __init__(self, version: str = DEFAULT_VERSION, workdir: Path | str | None = None, *, port: int = 0,
                 controller_port: int = 0, settings: Mapping[str, str] | None = None,
                 start_timeout_s: float = 90.0, stop_timeout_s: float = 30.0, heap: str = "512m",
                 java: str | None = None, jar_root: Path | None = None) -> None:
        self.version = version
        # absolute: the JVM runs with the work directory as its cwd
        self._own_workdir = workdir is None  # made here: removed by close() when nothing was written to it
        self.workdir = (Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="groupspec-kafka-"))).resolve()
        self.port = port or free_port()
        self.controller_port = controller_port or free_port()
        self.settings = {**TEST_SETTINGS, **(settings or {})}
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.heap = heap
        self.java = java
        self.jar_root = jar_root
        self.cluster_id = new_cluster_id()
        self.start_seconds: list[float] = []  # wall time of each start, JVM launch to readiness
        self._proc: subprocess.Popen[bytes] | None = None
        self._out: IO[bytes] | None = None
        self._formatted = False
        self._classpath: str | None = None

    # -- where things are ---------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_dir(self) -> Path:
        return self.workdir / "logs"

    @property
    def server_log(self) -> Path:
        """The coordinator's log (the broker's server.log; a single node is every group's coordinator)."""
        return self.log_dir / "server.log"

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    @property
    def properties_path(self) -> Path:
        return self.workdir / "server.properties"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- lifecycle ----------------------------------------------------------------------------------

    def __enter__(self) -> KafkaBroker:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def properties(self) -> dict[str, str]:
        return {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            **self.settings,
        }

    def _java(self) -> str:
        problem = java_problem(self.java)
        if problem is not None:
            raise KafkaUnavailable(f"cannot start Apache Kafka {self.version}: {problem}")
        return self.java or shutil.which("java") or "java"

    def _cp(self) -> str:
        if self._classpath is None:
            self._classpath = classpath(fetch(self.version, self.jar_root).directory)
        return self._classpath

    def java_command(self, main_class: str, args: Sequence[str], *, tools_logging: bool = True,
                     heap: str = "256m") -> list[str]:
        """A JVM command running ``main_class`` of the Kafka jars (tools log warnings to stderr)."""
        jvm = [self._java(), f"-Xmx{heap}", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", self._cp()]
        if tools_logging:
            jvm.append(f"-Dlog4j2.configurationFile={TOOLS_LOG4J2_CONFIG}")
        return [*jvm, main_class, *args]

    def _format(self) -> None:
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.properties_path.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        cmd = self.java_command("kafka.tools.StorageTool",
                                ["format", "--standalone", "-t", self.cluster_id, "-c", str(self.properties_path)])
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
        (self.log_dir / "storage-format.out").write_text(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            raise KafkaUnavailable(
                f"formatting the storage of Apache Kafka {self.version} failed (exit {proc.returncode}); "
                f"see {self.log_dir / 'storage-format.out'}: {(proc.stderr or proc.stdout).strip()[-500:]}")
        self._formatted = True

    def _started_count(self) -> int:
        try:
            with open(self.server_log, encoding="utf-8", errors="replace") as f:
                return sum(1 for line in f if STARTED_MESSAGE in line)
        except FileNotFoundError:
            return 0

    def start(self) -> None:
        """Start the broker (formatting its storage the first time) and wait until it is up."""
        if self.alive:
            return
        java = self._java()
        cp = self._cp()
        if not self._formatted:
            self._format()
        before = self._started_count()
        self._out = open(self.log_dir / "broker.out", "ab")  # noqa: SIM115 (closed in _reap)
        cmd = [java, f"-Xmx{self.heap}", f"-Xms{self.heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true",
               f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}", f"-Dkafka.logs.dir={self.log_dir}",
               "-cp", cp, "kafka.Kafka", str(self.properties_path)]
        launched = time.monotonic()
        # Its own session: a Ctrl-C in the terminal reaches the harness, which stops the broker in order.
        self._proc = subprocess.Popen(cmd, stdout=self._out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      cwd=self.workdir, start_new_session=True)
        _LIVE.add(self)
        deadline = launched + self.start_timeout_s
        while self._started_count() <= before:
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self._reap()
                raise KafkaUnavailable(self._why_not_started(f"exited with code {code} before it was up"))
            if time.monotonic() >= deadline:
                self.kill()
                raise KafkaUnavailable(self._why_not_started(f"was not up after {self.start_timeout_s:.0f}s (killed)"))
            time.sleep(0.1)
        self.start_seconds.append(time.monotonic() - launched)

    def _why_not_started(self, what: str) -> str:
        text = _tail(self.server_log, 200) + "\n" + _tail(self.log_dir / "broker.out", 200)
        reason = ""
        if "Address already in use" in text:
            reason = f": a port is already in use (127.0.0.1:{self.port} for clients, " \
                     f"127.0.0.1:{self.controller_port} for the controller)"
        else:
            fatal = [ln for ln in text.splitlines() if " ERROR " in ln or "Exception" in ln]
            if fatal:
                reason = f": {fatal[0].strip()[:300]}"
        return (f"Apache Kafka {self.version} on {self.bootstrap} {what}{reason}; its log is kept in "
                f"{self.log_dir} (server.log, broker.out)")

    def stop(self) -> None:
        """Controlled shutdown (SIGTERM), SIGKILL after ``stop_timeout_s``. Logs and data are kept."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        self._reap()

    def kill(self) -> None:
        """SIGKILL: the broker crashes (no controlled shutdown, nothing flushed)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        self._reap()

    def restart(self, *, hard: bool = False) -> None:
        """Stop (SIGTERM, or SIGKILL when ``hard``) and start again on the same ports and storage."""
        if hard:
            self.kill()
        else:
            self.stop()
        self.start()

    def close(self) -> None:
        """Stop the broker and delete its data; the logs stay in ``log_dir``."""
        try:
            self.stop()
        finally:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            if self._own_workdir:  # a temporary directory nobody will read: gone unless it holds logs
                with contextlib.suppress(OSError):
                    self.workdir.rmdir()

    def _reap(self) -> None:
        _LIVE.discard(self)
        if self._out is not None and not self._out.closed:
            self._out.close()

    # -- topics and records -------------------------------------------------------------------------

    def run_tool(self, main_class: str, args: Sequence[str], *, timeout_s: float = 120.0) -> str:
        """Run one Kafka tool against this broker; its stdout, or :class:`KafkaUnavailable` if it failed."""
        cmd = self.java_command(main_class, args)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout_s,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise KafkaUnavailable(f"{main_class} {' '.join(args)} did not finish in {timeout_s:.0f}s") from None
        if proc.returncode != 0:
            raise KafkaUnavailable(f"{main_class} {' '.join(args)} exited {proc.returncode}: "
                                   f"{(proc.stderr or proc.stdout).strip()[-800:]}")
        return proc.stdout

    def create_topic(self, name: str, partitions: int) -> None:
        self.run_tool("org.apache.kafka.tools.TopicCommand",
                      ["--bootstrap-server", self.bootstrap, "--create", "--topic", name,
                       "--partitions", str(partitions), "--replication-factor", "1"])

    def add_partitions(self, name: str, total: int) -> None:
        """Grow topic ``name`` to ``total`` partitions (Kafka never shrinks one)."""
        self.run_tool("org.apache.kafka.tools.TopicCommand",
                      ["--bootstrap-server", self.bootstrap, "--alter", "--topic", name, "--partitions", str(total)])

    def produce(self, topic: str, count: int, *, out: Path | None = None) -> str:
        """Produce ``count`` records with Kafka's VerifiableProducer (acks=all); its JSON output is returned
        (and written to ``out`` when given). Values are ``0 .. count-1``, without keys, spread over the
        partitions by ``RoundRobinPartitioner`` (the default partitioner would put a small batch in one)."""
        config = self.workdir / "producer.properties"
        config.write_text("partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner\n")
        text = self.run_tool("org.apache.kafka.tools.VerifiableProducer",
                             ["--bootstrap-server", self.bootstrap, "--topic", topic, "--max-messages", str(count),
                              "--acks", "-1", "--producer.config", str(config)])
        if out is not None:
            out.write_text(text)
        return text


def env_problem(version: str = DEFAULT_VERSION, java: str | None = None) -> str | None:
    """Why Kafka cannot run here (no ``java`` 17+, or no ``mvn`` and no cached jars); ``None`` if it can."""
    problem = java_problem(java)
    if problem is not None:
        return problem
    from conformance.kafka.jars import is_complete, jar_dir

    if not is_complete(jar_dir(version)) and shutil.which("mvn") is None:
        return f"`mvn` is not on PATH and the jars of Apache Kafka {version} are not cached in {jar_dir(version)}"
    return None



__all__ = ["LOG4J2_CONFIG", "STARTED_MESSAGE", "TEST_SETTINGS", "KafkaBroker", "env_problem", "free_port",
           "java_problem", "new_cluster_id"]
