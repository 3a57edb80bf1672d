"""What every consumer driver shares: its command line, the trace writer, and how it stops.

A driver is one consumer process. It is started by :mod:`conformance.drivers.process` as
``python -m conformance.drivers.<client> --bootstrap ... --group ... --member NAME --events FILE``
and writes what its client did as groupspec trace events (JSON Lines, docs/design.md "Formats" 2, names
from :mod:`model.events`), one line per event, flushed at once so that a process killed with
SIGKILL leaves a trace that ends where it died. The client library's own log goes to the
driver's stderr, which the parent redirects to a file.

Stopping: SIGTERM (or SIGINT) asks the driver to leave its poll loop, close the consumer (which
leaves the group) and write ``shutdown_complete``; SIGKILL is the crash / zombie case.

Records: the consume loop mirrors Apache Kafka's VerifiableConsumer
(tools/.../VerifiableConsumer.java, ``onRecordsReceived``): after each poll that returned records it
writes one ``records_consumed`` event (``count``, and per partition ``count``, ``minOffset``,
``maxOffset``), then commits ``maxOffset + 1`` of each of those partitions synchronously and writes
``offsets_committed`` (``offsets``: topic, partition, offset; ``success``; ``error`` when it failed).
``--commit none`` makes no commit, ``--commit auto`` leaves it to the client's auto-commit.

Commands while running (the conformance runner, conformance/real_run.py): the runner appends a JSON line
to ``<events>.ctl`` and sends SIGUSR1; at its next loop turn the driver applies it -- ``{"subscribe":
[topics]}`` calls the client's subscribe, ``{"stall_ms": N}`` stops calling poll for N ms (the client's
heartbeat goes on, so past ``max.poll.interval.ms`` the member leaves the group, as a long batch would).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import IO, Any

from model.events import (
    OFFSETS_COMMITTED,
    PARTITIONS_ASSIGNED,
    PARTITIONS_LOST,
    PARTITIONS_REVOKED,
    RECORDS_CONSUMED,
    SHUTDOWN_COMPLETE,
    STARTUP_COMPLETE,
    event,
)
from model.types import TopicPartition, tps_to_json

__all__ = [
    "OFFSETS_COMMITTED", "PARTITIONS_ASSIGNED", "PARTITIONS_LOST", "PARTITIONS_REVOKED",
    "RECORDS_CONSUMED", "SHUTDOWN_COMPLETE", "STARTUP_COMPLETE",
    "DriverArgs", "EventWriter", "StopFlag", "PartitionSummary", "now_ms", "parse_args", "startup_fields",
    "summarize",
]

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
# The Python clients' log lines as traces.readers.kafka_python_log reads them (time first).
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class DriverArgs:
    bootstrap: str
    group: str
    topics: tuple[str, ...]
    member: str
    assignor: str
    events: str
    session_timeout_ms: int
    heartbeat_interval_ms: int
    poll_ms: int
    max_records: int
    client_option: tuple[tuple[str, str], ...]
    commit: str = "sync"  # sync: commit after each poll (VerifiableConsumer); none; auto (enable.auto.commit)
    instance_id: str | None = None
    max_poll_interval_ms: int | None = None

    @property
    def assignors(self) -> tuple[str, ...]:
        """``--assignor`` may list several, comma-separated, in preference order (Kafka's
        partition.assignment.strategy)."""
        return tuple(a for a in self.assignor.split(",") if a)

    @property
    def protocol(self) -> str:
        """The rebalance protocol the assignors make: cooperative only when every one supports it
        (ConsumerCoordinator's constructor: the highest protocol common to all), as the model says."""
        return "cooperative" if all(a == "cooperative-sticky" for a in self.assignors) else "eager"


def parse_args(prog: str, argv: Sequence[str] | None, assignors: Iterable[str] = ASSIGNORS) -> DriverArgs:
    parser = argparse.ArgumentParser(prog=prog, description="one consumer of a groupspec conformance run")
    parser.add_argument("--bootstrap", required=True, help="bootstrap servers, host:port[,host:port]")
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", action="append", required=True, dest="topics")
    parser.add_argument("--member", required=True, help="this consumer's name in the trace (also its client id)")
    parser.add_argument("--assignor", default="range",
                        help=f"assignor, or several comma-separated in preference order: {', '.join(assignors)}")
    parser.add_argument("--events", required=True, help="groupspec JSON Lines written here")
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=500)
    parser.add_argument("--poll-ms", type=int, default=200)
    parser.add_argument("--max-records", type=int, default=100, help="records per poll at most")
    parser.add_argument("--commit", default="sync", choices=["sync", "none", "auto"],
                        help="sync: commitSync after each poll's records; none; auto: enable.auto.commit")
    parser.add_argument("--instance-id", default=None, help="group.instance.id (static membership)")
    parser.add_argument("--max-poll-interval-ms", type=int, default=None)
    parser.add_argument("-X", action="append", default=[], metavar="KEY=VALUE",
                        help="extra client configuration (client-specific names)")
    ns = parser.parse_args(argv)
    bad = [a for a in ns.assignor.split(",") if a not in assignors]
    if bad or not ns.assignor:
        parser.error(f"--assignor {ns.assignor!r}: this client offers {', '.join(assignors)}")
    options: list[tuple[str, str]] = []
    for item in ns.X:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"-X {item!r}: expected KEY=VALUE")
        options.append((key, value))
    return DriverArgs(
        bootstrap=ns.bootstrap, group=ns.group, topics=tuple(ns.topics), member=ns.member,
        assignor=ns.assignor, events=ns.events, session_timeout_ms=ns.session_timeout_ms,
        heartbeat_interval_ms=ns.heartbeat_interval_ms, poll_ms=ns.poll_ms, max_records=ns.max_records,
        client_option=tuple(options), commit=ns.commit, instance_id=ns.instance_id,
        max_poll_interval_ms=ns.max_poll_interval_ms,
    )


class EventWriter:
    """Appends trace events to a JSON Lines file, one flushed line each, with fixed context fields.

    Thread-safe: librdkafka's and kafka-python's rebalance callbacks run on the polling thread,
    but a commit callback or the signal handler may not.
    """

    def __init__(self, path: str, **context: Any) -> None:
        self._file: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        self._context = {k: v for k, v in context.items() if v is not None}
        self._lock = threading.Lock()

    def write(self, name: str, **fields: Any) -> dict[str, Any]:
        """Write one event. ``partitions`` as TopicPartitions is written sorted (model.events.event);
        as dicts (records_consumed's per-partition summaries) it is written as given."""
        partitions = fields.pop("partitions", None)
        ev = event(name, now_ms(), **{**self._context, **fields})
        if partitions is not None:
            ev["partitions"] = (tps_to_json(partitions) if all(isinstance(p, TopicPartition) for p in partitions)
                                else list(partitions))
        line = json.dumps(ev, separators=(",", ":"), sort_keys=False)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()
        return ev

    def update_context(self, **fields: Any) -> None:
        """Change context fields for the events that follow (after ``subscribe``: the new
        ``subscription``, which the trace checker reads from any event for ``subscribed-only``)."""
        with self._lock:
            self._context.update({k: v for k, v in fields.items() if v is not None})

    def close(self) -> None:
        with self._lock:
            self._file.close()


class StopFlag:
    """Set by SIGTERM / SIGINT; the poll loop checks it. SIGUSR1 says a command waits in the
    control file (``<events>.ctl``, see :meth:`commands`)."""

    def __init__(self, control_path: str | None = None) -> None:
        self._event = threading.Event()
        self._control = threading.Event()
        self._control_path = control_path
        self._done = 0
        signal.signal(signal.SIGTERM, self._handler)
        signal.signal(signal.SIGINT, self._handler)
        signal.signal(signal.SIGUSR1, lambda signum, frame: self._control.set())

    def commands(self) -> list[dict[str, Any]]:
        """Commands the runner appended to the control file since the last call, as JSON objects:
        ``{"subscribe": [topics]}`` (KafkaConsumer.subscribe) or ``{"stall_ms": N}`` (the application
        stops polling for N ms while the client's heartbeat goes on: a long batch)."""
        if not self._control.is_set() or self._control_path is None:
            return []
        self._control.clear()
        try:
            with open(self._control_path, encoding="utf-8") as fh:
                lines = [json.loads(line) for line in fh if line.strip()]
        except (OSError, json.JSONDecodeError):
            return []
        new, self._done = lines[self._done:], len(lines)
        return new

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self._event.set()

    @property
    def stopped(self) -> bool:
        return self._event.is_set()


@dataclass
class PartitionSummary:
    """VerifiableConsumer's RecordSetSummary for one partition of one poll."""

    topic: str
    partition: int
    count: int
    min_offset: int
    max_offset: int

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "count": self.count,
                "minOffset": self.min_offset, "maxOffset": self.max_offset}


def summarize(records: Iterable[tuple[str, int, int]]) -> list[PartitionSummary]:
    """Per-partition summary of (topic, partition, offset) triples, sorted by partition."""
    by_tp: dict[TopicPartition, PartitionSummary] = {}
    for topic, partition, offset in records:
        tp = TopicPartition(topic, partition)
        s = by_tp.get(tp)
        if s is None:
            by_tp[tp] = PartitionSummary(topic, partition, 1, offset, offset)
        else:
            s.count += 1
            s.min_offset = min(s.min_offset, offset)
            s.max_offset = max(s.max_offset, offset)
    return [by_tp[tp] for tp in sorted(by_tp)]


def tps(partitions: Iterable[Any]) -> list[TopicPartition]:
    """Any client's topic-partition objects (``.topic``, ``.partition``) as the model's."""
    return [TopicPartition(p.topic, p.partition) for p in partitions]


def write_consumed(out: EventWriter, records: list[tuple[str, int, int]],
                   ident: dict[str, Any]) -> list[PartitionSummary]:
    """Write ``records_consumed`` for one poll and return its per-partition summaries."""
    summaries = summarize(records)
    out.write(RECORDS_CONSUMED, count=len(records), partitions=[s.to_json() for s in summaries], **ident)
    return summaries


def write_committed(out: EventWriter, summaries: list[PartitionSummary], ident: dict[str, Any],
                    error: str | None = None) -> None:
    """Write ``offsets_committed`` for a commit of each summary's next offset; ``error`` if it failed."""
    committed = [{"topic": s.topic, "partition": s.partition, "offset": s.max_offset + 1} for s in summaries]
    if error is None:
        out.write(OFFSETS_COMMITTED, offsets=committed, success=True, **ident)
    else:
        out.write(OFFSETS_COMMITTED, offsets=committed, success=False, error=error, **ident)


def startup_fields(args: DriverArgs) -> dict[str, Any]:
    """Fields of ``startup_complete``: the topics subscribed to (``subscription``, which the trace
    checker reads for ``subscribed-only``) and the pid, to match a trace to its process and log."""
    return {"subscription": sorted(args.topics), "pid": os.getpid()}


def log_to_stderr(levels: Mapping[str, int], keep: Callable[[logging.LogRecord], bool] | None = None) -> None:
    """A Python client's own log on stderr (the file the parent keeps): WARNING and up from everything,
    and the client's loggers at ``levels``; ``keep``, when given, drops the records it refuses."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    if keep is not None:
        handler.addFilter(keep)
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def option_value(value: str) -> Any:
    """The value of a ``--client-option KEY=VALUE`` for a Python client: a whole number, true / false,
    or the text as given."""
    if value.lstrip("-").isdigit():
        return int(value)
    if value in ("true", "false"):
        return value == "true"
    return value
