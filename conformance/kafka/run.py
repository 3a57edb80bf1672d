"""One group run on a real Apache Kafka broker: members join, leave, die, stall; records flow; the broker bounces.

:class:`BrokerRun` puts a :class:`~conformance.kafka.broker.KafkaBroker` and a
:class:`~conformance.drivers.process.Fleet` of driver processes together and offers the steps a scenario
is made of, each written to a timeline (wall-clock ms, saved as ``scenario.json``):

- :meth:`BrokerRun.join` starts a member (any driver: ``java``, ``verifiable-consumer``,
  ``confluent-kafka``, ``kafka-python``, ...), :meth:`BrokerRun.leave` stops it with SIGTERM (a clean
  close), :meth:`BrokerRun.kill` with SIGKILL (a zombie until its session expires),
  :meth:`BrokerRun.freeze` / :meth:`BrokerRun.thaw` SIGSTOP / SIGCONT it (both its threads stop),
  :meth:`BrokerRun.stall` / :meth:`BrokerRun.resume` stop only the Java driver's application thread;
- :meth:`BrokerRun.produce` writes records with Kafka's VerifiableProducer (its output kept as
  ``producer-N.out``), :meth:`BrokerRun.add_partitions` grows the topic, :meth:`BrokerRun.restart_broker`
  bounces the broker;
- waits, each with a deadline: :meth:`BrokerRun.wait_stable` (the named members' partitions, folded from
  their traces, cover the topic exactly once), :meth:`BrokerRun.wait_consumed` (every produced record was
  consumed by some member), :meth:`BrokerRun.wait_log` (a line of the broker's server.log matches).

Nothing sleeps to "let things settle" except :meth:`BrokerRun.pause`, used where a scenario needs time to
pass on purpose (a session to expire while a member is frozen), and recorded in the timeline.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from conformance.drivers.java_consumer import resume as resume_driver
from conformance.drivers.java_consumer import stall as stall_driver
from conformance.drivers.process import (
    ConsumerProcess,
    DriverConfig,
    Fleet,
    owned_after,
    shared_once,
    wait_until,
)
from conformance.kafka.broker import KafkaBroker
from conformance.kafka.jars import DEFAULT_VERSION
from model.types import TopicPartition


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class BrokerRun:
    """A scenario on its own broker; ``with BrokerRun(out_dir, ...) as run:`` always stops everything.

    ``out_dir`` receives the traces and logs of the members, the producer's output, ``server.log`` (copied
    from the broker's log directory when the run ends) and ``scenario.json``.
    """

    def __init__(self, out_dir: Path, *, group: str, topic: str = "orders", partitions: int = 4,
                 version: str = DEFAULT_VERSION, session_timeout_ms: int = 3000, heartbeat_interval_ms: int = 300,
                 wait_timeout_s: float = 60.0, broker_dir: Path | None = None) -> None:
        self.out_dir = Path(out_dir).resolve()
        self.group = group
        self.topic = topic
        self.partitions = partitions
        self.version = version
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.wait_timeout_s = wait_timeout_s
        self.broker = KafkaBroker(version, broker_dir or (self.out_dir / ".broker"))
        self.fleet = Fleet()
        self.members: dict[str, ConsumerProcess] = {}
        self.clients: dict[str, str] = {}
        self.timeline: list[dict[str, Any]] = []
        self.produced: dict[int, int] = dict.fromkeys(range(partitions), 0)  # partition -> end offset
        self._producers = 0

    # -- life cycle -------------------------------------------------------------------------------

    def __enter__(self) -> BrokerRun:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.broker.start()
            self.note("broker_started", bootstrap=self.broker.bootstrap, kafka=self.version)
            self.broker.create_topic(self.topic, self.partitions)
            self.note("topic_created", topic=self.topic, partitions=self.partitions)
        except BaseException:
            self._finish()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._finish(graceful=exc is None)

    def _finish(self, graceful: bool = True) -> None:
        try:
            self.fleet.shutdown(graceful=graceful)
            for name, proc in self.members.items():
                if proc.proc.returncode is not None and not any(
                        e["step"] in ("left", "killed", "ended") and e.get("member") == name for e in self.timeline):
                    self.note("ended", member=name, exit_code=proc.proc.returncode)
        finally:
            self.broker.close()
            self.note("broker_stopped")
            if self.broker.server_log.exists():
                shutil.copyfile(self.broker.server_log, self.out_dir / "server.log")
            self._write_scenario()

    def note(self, step: str, **fields: Any) -> None:
        self.timeline.append({"at": now_ms(), "step": step, **fields})

    def _write_scenario(self) -> None:
        doc = {"kafka": self.version, "group": self.group, "topic": self.topic, "partitions": self.partitions,
               "session_timeout_ms": self.session_timeout_ms, "heartbeat_interval_ms": self.heartbeat_interval_ms,
               "members": {m: self.clients[m] for m in self.members},
               "produced": {str(p): n for p, n in self.produced.items()},
               "timeline": self.timeline}
        (self.out_dir / "scenario.json").write_text(json.dumps(doc, indent=1) + "\n")

    # -- members ----------------------------------------------------------------------------------

    def join(self, member: str, client: str = "java", *, assignor: str = "range", wait: bool = True,
             group: str | None = None, **options: str) -> ConsumerProcess:
        """Start member ``member``; with ``wait``, until its trace shows a first assignment callback.

        ``group`` puts it in another group than the run's (several groups on one broker)."""
        config = DriverConfig(client=client, member=member, group=group or self.group, topics=(self.topic,),
                              bootstrap=self.broker.bootstrap, events_path=self.out_dir / f"{member}.jsonl",
                              log_path=self.out_dir / f"{member}.log", assignor=assignor,
                              session_timeout_ms=self.session_timeout_ms,
                              heartbeat_interval_ms=self.heartbeat_interval_ms, options=dict(options))
        if member in self.members:
            # a restart of the same member name: keep the first incarnation's files, start new ones
            n = sum(1 for e in self.timeline if e["step"] == "joined" and e["member"] == member) + 1
            config.events_path = self.out_dir / f"{member}.{n}.jsonl"
            config.log_path = self.out_dir / f"{member}.{n}.log"
            member_key = f"{member}.{n}"
        else:
            member_key = member
        proc = self.fleet.start(config)
        self.members[member_key] = proc
        self.clients[member_key] = client
        self.note("joined", member=member_key, client=client, assignor=assignor, group=config.group,
                  options=dict(options),
                  events=config.events_path.name, log=config.log_path.name)
        if wait:
            wait_until(lambda: proc.alive is False or any(e.get("name") == "partitions_assigned" for e in proc.events()),
                       self.wait_timeout_s, f"{member_key} to get a first assignment")
            if not proc.alive:
                raise RuntimeError(f"{member_key} exited ({proc.proc.returncode}); see {config.log_path}")
        return proc

    def leave(self, member: str) -> None:
        code = self.members[member].stop()
        self.note("left", member=member, exit_code=code)

    def kill(self, member: str) -> None:
        self.members[member].kill()
        self.note("killed", member=member)

    def freeze(self, member: str) -> None:
        os.kill(self.members[member].pid, signal.SIGSTOP)
        self.note("frozen", member=member)

    def thaw(self, member: str) -> None:
        os.kill(self.members[member].pid, signal.SIGCONT)
        self.note("thawed", member=member)

    def stall(self, member: str) -> None:
        stall_driver(self.members[member].config.events_path)
        self.note("stalled", member=member)

    def resume(self, member: str) -> None:
        resume_driver(self.members[member].config.events_path)
        self.note("resumed", member=member)

    def pause(self, seconds: float, why: str) -> None:
        self.note("pause", seconds=seconds, why=why)
        time.sleep(seconds)

    # -- broker and records -----------------------------------------------------------------------

    def restart_broker(self, *, hard: bool = False) -> None:
        self.note("broker_restarting", hard=hard)
        self.broker.restart(hard=hard)
        self.note("broker_restarted")

    def add_partitions(self, total: int) -> None:
        """Grow the topic to ``total`` partitions; :meth:`wait_stable` then expects all of them owned."""
        self.broker.add_partitions(self.topic, total)
        for p in range(self.partitions, total):
            self.produced[p] = 0
        self.partitions = total
        self.note("partitions_added", total=total)

    def produce(self, count: int) -> None:
        self._producers += 1
        out = self.out_dir / f"producer-{self._producers}.out"
        text = self.broker.produce(self.topic, count, out=out)
        for line in text.splitlines():
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                continue
            if ev.get("name") == "producer_send_success":
                p = int(ev["partition"])
                self.produced[p] = max(self.produced[p], int(ev["offset"]) + 1)
        self.note("produced", count=count, out=out.name, ends={str(p): n for p, n in self.produced.items()})

    # -- waits ------------------------------------------------------------------------------------

    def owned(self, member: str) -> set[TopicPartition]:
        return owned_after(self.members[member].events())

    def _describe(self, members: list[str]) -> str:
        return "; ".join(f"{m}: {sorted(f'{tp.topic}-{tp.partition}' for tp in self.owned(m))}" for m in members)

    def wait_stable(self, *members: str, what: str = "") -> dict[str, set[TopicPartition]]:
        """Until the named members own every partition exactly once (by their traces)."""
        names = list(members)
        full = {TopicPartition(self.topic, p) for p in range(self.partitions)}

        owned = wait_until(lambda: shared_once({m: self.owned(m) for m in names}, full), self.wait_timeout_s, f"{', '.join(names)} to share {self.topic} ({what})",
                           describe=lambda: self._describe(names))
        self.note("stable", members=names, owned={m: sorted(tp.partition for tp in tps) for m, tps in owned.items()})
        return owned

    def consumed_ends(self) -> dict[int, int]:
        ends = dict.fromkeys(range(self.partitions), 0)
        for proc in self.members.values():
            for ev in proc.events():
                if ev.get("name") != "records_consumed":
                    continue
                for part in ev.get("partitions", ()):
                    if part.get("topic") == self.topic and "maxOffset" in part:
                        p = int(part["partition"])
                        ends[p] = max(ends[p], int(part["maxOffset"]) + 1)
        return ends

    def wait_consumed(self) -> None:
        """Until every record produced so far was consumed by some member."""
        wait_until(lambda: all(self.consumed_ends()[p] >= n for p, n in self.produced.items()),
                   self.wait_timeout_s, "every produced record to be consumed",
                   describe=lambda: f"produced {self.produced}, consumed {self.consumed_ends()}")
        self.note("consumed", ends={str(p): n for p, n in self.produced.items()})

    def log_lines(self, pattern: str) -> list[str]:
        try:
            text = self.broker.server_log.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return []
        rx = re.compile(pattern)
        return [line for line in text.splitlines() if rx.search(line)]

    def wait_log(self, pattern: str, what: str, *, count: int = 1) -> str:
        """Until server.log has ``count`` lines matching ``pattern``; the last of them."""
        lines = wait_until(lambda: (ls := self.log_lines(pattern)) and len(ls) >= count and ls,
                           self.wait_timeout_s, f"server.log to show {what}")
        self.note("broker_log", what=what, line=lines[-1][:300])
        return lines[-1]


__all__ = ["BrokerRun"]
