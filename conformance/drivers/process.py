"""Running driver processes: start, stop cleanly, kill, read their traces, wait for a condition.

Every consumer is its own process (``sys.executable -m conformance.drivers.<client>``) so that a
SIGKILL leaves a real zombie: a member the coordinator still counts until its session times
out, whose trace simply ends. :class:`Fleet` owns the processes it started and always ends them
(SIGTERM, then SIGKILL after a grace period) when its ``with`` block ends, also on an exception;
it never signals a process it did not start.

Waiting is by polling the trace files with a deadline (:func:`wait_until`); nothing here sleeps
for a fixed time to "let things settle".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypeVar

from conformance.clients import launcher
from model.types import TopicPartition

DRIVER_MODULES = {
    "confluent-kafka": "conformance.drivers.confluent_kafka",
    "kafka-python": "conformance.drivers.kafka_python",
    "aiokafka": "conformance.drivers.aiokafka",
    "kafkatest": "conformance.drivers.kafkatest",
    # These two exec a JVM in place of the Python launcher (same pid, so signals reach the Java client).
    "java": "conformance.drivers.java_consumer",
    "verifiable-consumer": "conformance.drivers.verifiable_consumer",
}

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Drivers that are a JVM: Kafka configuration names on -X, no control file (stall by <events>.stall).
JAVA_CLIENTS = ("java", "verifiable-consumer")

T = TypeVar("T")


def interpreter(client: str) -> list[str]:
    """How a driver of ``client`` is launched: the Python that runs it -- this interpreter for a plain
    name, the release's own environment for ``NAME==VERSION`` (:func:`conformance.clients.launcher`)."""
    return [launcher(client)[0]]


def driver_env() -> dict[str, str]:
    """The environment of every driver process: this project importable, output unbuffered."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


class WaitTimeout(AssertionError):
    """A condition did not come true before its deadline (message says which, and what was seen)."""


def wait_until(predicate: Callable[[], T], timeout_s: float, what: str,
               describe: Callable[[], str] | None = None, interval_s: float = 0.05) -> T:
    """Poll ``predicate`` until it returns a truthy value (returned), or raise :class:`WaitTimeout`."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            seen = f"; last seen: {describe()}" if describe is not None else ""
            raise WaitTimeout(f"timed out after {timeout_s:.0f}s waiting for {what}{seen}")
        time.sleep(interval_s)


def read_events(path: Path) -> list[dict[str, Any]]:
    """The events of a JSON Lines trace; a torn last line (process killed mid-write) is skipped."""
    events: list[dict[str, Any]] = []
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return events
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def owned_after(events: Sequence[dict[str, Any]]) -> set[TopicPartition]:
    """What a member owns after its events: assigned adds, revoked / lost remove, shutdown clears.

    This fold is right for both protocols: an eager member revokes everything before it is
    assigned its new (whole) assignment; a cooperative one is told only what is added / removed.
    """
    owned: set[TopicPartition] = set()
    for ev in events:
        name = ev.get("name")
        tps = {TopicPartition(p["topic"], p["partition"]) for p in ev.get("partitions", ())
               if isinstance(p, dict) and "topic" in p and "partition" in p}
        if name == "partitions_assigned":
            owned |= tps
        elif name in ("partitions_revoked", "partitions_lost"):
            owned -= tps
        elif name == "shutdown_complete":
            owned.clear()
    return owned


def shared_once(owned: dict[str, set[TopicPartition]],
                full: set[TopicPartition]) -> dict[str, set[TopicPartition]] | None:
    """``owned`` (member -> partitions) when the members own every partition of ``full`` exactly once, else None.

    The settle test of a run on any coordinator: no partition held by two members (a rebalance still in
    flight, or a zombie not yet fenced) and none left unowned."""
    union: set[TopicPartition] = set()
    for tps in owned.values():
        if union & tps:
            return None
        union |= tps
    return owned if union == full else None


@dataclass
class DriverConfig:
    """One consumer: which client, which group, and where its trace and log go."""

    client: str
    member: str
    group: str
    topics: tuple[str, ...]
    bootstrap: str
    events_path: Path
    log_path: Path
    assignor: str = "range"
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 500
    options: dict[str, str] = field(default_factory=dict)
    commit: str = "sync"
    instance_id: str | None = None
    max_poll_interval_ms: int | None = None

    def argv(self) -> list[str]:
        # The one hook for other releases (conformance/clients.py): ``NAME==VERSION`` runs NAME's driver
        # under that release's environment; a plain name under this interpreter.
        client = launcher(self.client)[1]
        try:
            module = DRIVER_MODULES[client]
        except KeyError:
            raise ValueError(f"unknown client {self.client!r}; known: {sorted(DRIVER_MODULES)}") from None
        argv = [*interpreter(self.client), "-m", module, "--bootstrap", self.bootstrap, "--group", self.group,
                "--member", self.member, "--assignor", self.assignor, "--events", str(self.events_path),
                "--session-timeout-ms", str(self.session_timeout_ms),
                "--heartbeat-interval-ms", str(self.heartbeat_interval_ms)]
        for topic in self.topics:
            argv += ["--topic", topic]
        if self.client in JAVA_CLIENTS:
            # The Java driver takes Kafka's consumer configuration names (ConsumerDriver.java).
            extra = {"enable.auto.commit": "true" if self.commit == "auto" else None,
                     "group.instance.id": self.instance_id,
                     "max.poll.interval.ms": None if self.max_poll_interval_ms is None else str(self.max_poll_interval_ms)}
            for key, value in extra.items():
                if value is not None:
                    argv += ["-X", f"{key}={value}"]
        else:
            if self.commit != "sync":
                argv += ["--commit", self.commit]
            if self.instance_id is not None:
                argv += ["--instance-id", self.instance_id]
            if self.max_poll_interval_ms is not None:
                argv += ["--max-poll-interval-ms", str(self.max_poll_interval_ms)]
        for key, value in self.options.items():
            argv += ["-X", f"{key}={value}"]
        return argv


class ConsumerProcess:
    """A started driver process. Only ever signals its own pid."""

    def __init__(self, config: DriverConfig, warm: subprocess.Popen[bytes] | None = None) -> None:
        self.config = config
        config.events_path.parent.mkdir(parents=True, exist_ok=True)
        config.events_path.write_text("")
        argv = config.argv()
        self._log: IO[bytes] = open(config.log_path, "wb")  # noqa: SIM115 (closed in _reap)
        self.warm = False
        if warm is not None:
            # A process of the WarmPool: it has imported its driver; the go makes it that driver.
            assert warm.stdin is not None
            go = {"argv": argv[argv.index("-m") + 2:], "log": str(config.log_path)}
            try:
                warm.stdin.write((json.dumps(go) + "\n").encode())
                warm.stdin.close()
                self.warm = True
            except BrokenPipeError:  # it died since the pool looked: start cold instead
                warm.wait()
        if self.warm:
            assert warm is not None
            self.proc = warm
        else:
            self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=str(PROJECT_ROOT), env=driver_env())
        self.killed = False
        self.hung = False  # did not exit within its deadline after SIGTERM, and was killed

    @property
    def member(self) -> str:
        return self.config.member

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def events(self) -> list[dict[str, Any]]:
        return read_events(self.config.events_path)

    def owned(self) -> set[TopicPartition]:
        return owned_after(self.events())

    def command(self, command: dict[str, Any]) -> None:
        """Hand the driver a command (``{"subscribe": [...]}``, ``{"stall_ms": N}``): appended to
        its control file, then SIGUSR1; the driver applies it at its next poll loop turn."""
        path = Path(str(self.config.events_path) + ".ctl")
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(command) + "\n")
        if self.alive:
            self.proc.send_signal(signal.SIGUSR1)

    def freeze(self) -> None:
        """SIGSTOP: the whole process stops, heartbeat thread included (a VM pause, a long GC)."""
        if self.alive:
            self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        if self.alive:
            self.proc.send_signal(signal.SIGCONT)

    def stop(self, timeout_s: float = 15.0) -> int:
        """SIGTERM (clean close: LeaveGroup, shutdown_complete); SIGKILL if it does not exit in time."""
        if self.alive:
            self.proc.send_signal(signal.SIGCONT)  # harmless if running; a frozen one must wake to close
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.hung = True
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._reap()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL: the process dies without leaving the group (a zombie until its session expires)."""
        if self.alive:
            self.killed = True
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._reap()

    def _reap(self) -> None:
        if not self._log.closed:
            self._log.close()


class WarmPool:
    """Driver processes started ahead of time (:mod:`conformance.drivers.warm`), ``spares`` per client.

    :meth:`take` hands out an idle process that has imported its driver and starts its replacement,
    so that a run's join does not wait for Python to import a client library. Java drivers are not
    pooled (they exec a JVM; the import is not what they wait for). ``with WarmPool() as pool`` ends
    every idle process (SIGKILL: it has not joined anything) also on an exception; a process handed
    out belongs to the :class:`Fleet` that took it.
    """

    def __init__(self, spares: int = 2) -> None:
        self.spares = spares
        self._idle: dict[str, list[subprocess.Popen[bytes]]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self.taken = 0
        self.missed = 0

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @staticmethod
    def pooled(client: str) -> bool:
        return client in DRIVER_MODULES and client not in JAVA_CLIENTS

    def _spawn(self, client: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([*interpreter(client), "-m", "conformance.drivers.warm", DRIVER_MODULES[client]],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                cwd=str(PROJECT_ROOT), env=driver_env())

    def prime(self, clients: Sequence[str]) -> None:
        """Start the spares of these clients now (a campaign does it before its first run)."""
        with self._lock:
            for client in dict.fromkeys(clients):
                if not self.pooled(client) or self._closed:
                    continue
                idle = self._idle.setdefault(client, [])
                while len(idle) < self.spares:
                    idle.append(self._spawn(client))

    def take(self, client: str) -> subprocess.Popen[bytes] | None:
        """A live idle process for ``client`` (its replacement is started), or None: start cold."""
        if not self.pooled(client):
            return None
        with self._lock:
            if self._closed:
                return None
            idle = self._idle.setdefault(client, [])
            found = None
            while idle and found is None:
                proc = idle.pop(0)
                if proc.poll() is None:
                    found = proc
                else:  # died while idle (its import failed?): a cold start will show why in its log
                    proc.wait()
            while len(idle) < self.spares:
                idle.append(self._spawn(client))
            if found is None:
                self.missed += 1
            else:
                self.taken += 1
            return found

    def close(self) -> None:
        with self._lock:
            self._closed = True
            procs = [p for idle in self._idle.values() for p in idle]
            self._idle.clear()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
            if proc.stdin is not None:
                proc.stdin.close()


class Fleet:
    """The consumer processes of one run; ``with Fleet() as fleet`` always ends them all.

    ``pool``: take Python drivers from this :class:`WarmPool` when it has one ready."""

    def __init__(self, stop_timeout_s: float = 15.0, pool: WarmPool | None = None) -> None:
        self.processes: list[ConsumerProcess] = []
        self.stop_timeout_s = stop_timeout_s
        self.pool = pool

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.shutdown(graceful=exc is None)

    def start(self, config: DriverConfig) -> ConsumerProcess:
        proc = ConsumerProcess(config, warm=self.pool.take(config.client) if self.pool is not None else None)
        self.processes.append(proc)
        return proc

    def live(self) -> list[ConsumerProcess]:
        return [p for p in self.processes if p.alive]

    def __iter__(self) -> Iterator[ConsumerProcess]:
        return iter(self.processes)

    def shutdown(self, graceful: bool = True) -> None:
        """Stop every live process: SIGTERM then SIGKILL (graceful), or SIGKILL at once."""
        for proc in self.processes:
            if proc.alive and graceful:
                proc.proc.send_signal(signal.SIGCONT)
                proc.proc.send_signal(signal.SIGTERM)
        for proc in self.processes:
            try:
                if graceful:
                    proc.stop(self.stop_timeout_s)
                else:
                    proc.kill()
            except Exception:  # a stuck process must not keep the others alive
                if proc.alive:
                    proc.proc.kill()
                    proc.proc.wait(timeout=10)
                proc._reap()
