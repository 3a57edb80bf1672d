"""The trace events the checker consumes, where each came from, and what was wrong with a line.

Every reader turns its format into the events of :mod:`model.events` (docs/design.md, "Formats" 2): a
``dict`` with ``name`` and ``timestamp`` (ms since the epoch) and, per name, the fields Apache
Kafka's VerifiableConsumer prints (``partitions`` as ``{"topic", "partition"}`` objects;
``records_consumed`` partitions also carry ``count``, ``minOffset``, ``maxOffset``;
``offsets_committed`` carries ``offsets`` (``topic``, ``partition``, ``offset``) and
``success``), plus the optional context fields (``group``, ``member``, ``member_id``,
``instance_id``, ``generation``, ``protocol``, ``assignor``, ``client``) and the coordinator
events read from broker logs.

A reader yields *located* events: ``(timestamp, source, seq, line, event)``. The first three make
the merge order (time, then file, then position in the file: ``seq`` grows with every event, since
one log line may give several); ``line`` is the evidence a finding cites (``file:line``). The
event dict is never compared. Lines a reader cannot use are not dropped silently: they are
counted per reason in :class:`InputStats` (with the first few locations), and ``--strict`` turns
any of them into an error.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from model import events as ev

Located = tuple[int, int, int, int, dict[str, Any]]  # (timestamp ms, source, seq, line number, event)
TP = tuple[str, int]  # (topic, partition): the checker's hashable partition key

EVENT_NAMES = ev.STANDARD_NAMES
OWNERSHIP_NAMES = frozenset({ev.PARTITIONS_ASSIGNED, ev.PARTITIONS_REVOKED, ev.PARTITIONS_LOST})
CLIENT_CONTEXT_NAMES = frozenset({ev.GROUP_JOINED, ev.GROUP_SYNCED})
COORDINATOR_NAMES = frozenset({ev.COORDINATOR_REBALANCE, ev.COORDINATOR_STABLE, ev.COORDINATOR_MEMBER_REMOVED,
                               ev.COORDINATOR_STATE, ev.COORDINATOR_OFFSET_COMMIT})

# Why a line was not used. Each is counted; --strict makes any of them exit 2.
INVALID_JSON = "invalid-json"  # not JSON (or JSON cut in the middle of the file)
TRUNCATED = "truncated"  # the file's last line stops mid-event (a process killed while writing)
BINARY = "binary"  # NUL bytes or bytes that are not UTF-8
NOT_AN_OBJECT = "not-an-object"  # JSON, but not an object
MISSING_NAME = "missing-name"  # an object without a string "name"
UNKNOWN_EVENT = "unknown-event"  # a name that is not a trace event
BAD_TIMESTAMP = "bad-timestamp"  # no usable "timestamp" (or "_time")
BAD_FIELD = "bad-field"  # a field of the wrong shape (e.g. partitions not a list of topic-partitions)
UNPARSED_LOG_LINE = "unparsed-log-line"  # a log line that starts like a rebalance message but does not parse
NO_TIMESTAMP = "no-timestamp"  # a rebalance log line with no timestamp before it in its file

SKIP_REASONS = (INVALID_JSON, TRUNCATED, BINARY, NOT_AN_OBJECT, MISSING_NAME, UNKNOWN_EVENT, BAD_TIMESTAMP,
                BAD_FIELD, UNPARSED_LOG_LINE, NO_TIMESTAMP)


class BadField(ValueError):
    """An event field of the wrong shape; the message names the field."""


class TraceInputError(Exception):
    """A trace set that cannot be used at all (a missing file, a format no reader knows).

    The message names the file (and line); ``groupspec check`` prints it and exits 2.
    """

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None) -> None:
        where = source or ""
        if line is not None:
            where = f"{where}:{line}" if where else f"line {line}"
        super().__init__(f"{where}: {message}" if where else message)


@dataclass
class Source:
    """One input file of a trace set.

    ``label`` is how evidence names it (the path as the user gave it). ``member`` is the member its
    events belong to when they do not say (VerifiableConsumer writes one file per consumer, so the
    file is the member). Client logs name their consumers by client id, unless client ids repeat
    across the files of the set (``consumer-<group>-1`` in every JVM, ``python@host`` in every
    kafkatest process): then the file is the member.
    """

    index: int
    path: Path
    label: str
    format: str
    member: str
    members: frozenset[str] = frozenset()  # the members the detector saw in the file's first lines
    named_by_file: bool = False  # client ids are not unique in the set: the file is the member
    member_prefix: str = ""  # ... or, for a log of several consumers, "<file>/" before each client id
    naive_offset_ms: int | None = None  # the zone of times written without one (None: this machine's)
    group: str | None = None  # the group of its events that name none (a callback trace paired with its log)
    group_hint: str | None = None  # the group a client log's first lines name (for that pairing)
    # does the file show every commit its consumer made? True: yes (groupspec, kafkatest: they print
    # auto-commits too); False: it shows none or only some (a client log; VerifiableConsumer output of a run
    # with --enable-autocommit); None: cannot tell (see traces.readers.jsonl.commits_shown)
    commits_shown: bool | None = None

    def member_name(self, client_id: str) -> str:
        """The member a client log line belongs to."""
        if self.named_by_file or not client_id:
            return self.member
        return self.member_prefix + client_id


@dataclass
class InputStats:
    """What was read: lines, events and skipped lines per reason, with the first few locations."""

    max_examples: int = 20
    strict: bool = False  # the first skipped line is an error (TraceInputError)
    events: int = 0
    lines: int = 0
    ignored: int = 0  # log lines with nothing about the group protocol in them (not errors)
    superseded: int = 0  # client-log assignment lines dropped because a callback trace covers the member
    skipped: Counter[str] = field(default_factory=Counter)
    examples: list[dict[str, str]] = field(default_factory=list)
    events_per_source: Counter[int] = field(default_factory=Counter)

    def skip(self, source: Source, line: int, reason: str, detail: str = "") -> None:
        if self.strict:
            raise TraceInputError(f"{reason}{': ' + detail[:120] if detail else ''} (--strict: no line may be "
                                  f"skipped)", source=source.label, line=line)
        self.skipped[reason] += 1
        if len(self.examples) < self.max_examples:
            example = {"where": f"{source.label}:{line}", "reason": reason}
            if detail:
                example["detail"] = detail[:200]
            self.examples.append(example)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


def partitions_field(event: dict[str, Any], key: str = "partitions") -> list[TP]:
    """The ``(topic, partition)`` keys of ``event[key]``; :class:`BadField` if it is not a list of them."""
    value = event.get(key, ())
    if not isinstance(value, list | tuple):
        raise BadField(f"{key} is not a list")
    out: list[TP] = []
    for item in value:
        try:
            topic = item["topic"]
            partition = item["partition"]
        except (KeyError, TypeError):
            raise BadField(f"{key} has an entry without topic and partition: {item!r:.80}") from None
        if not isinstance(topic, str) or not isinstance(partition, int) or isinstance(partition, bool):
            raise BadField(f"{key} has an entry with a bad topic or partition: {item!r:.80}")
        out.append((topic, partition))
    return out


def int_field(event: dict[str, Any], key: str) -> int | None:
    """``event[key]`` as an int, None when absent or null; :class:`BadField` when it is not a number."""
    value = event.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadField(f"{key} is not a number: {value!r:.40}")
    if isinstance(value, float) and not math.isfinite(value):
        raise BadField(f"{key} is not a finite number: {value!r:.40}")
    return int(value)


def tp_label(tp: TP) -> str:
    """``topic-partition``, the way Kafka prints a TopicPartition."""
    return f"{tp[0]}-{tp[1]}"


def tp_json(tp: TP) -> dict[str, Any]:
    return {"topic": tp[0], "partition": tp[1]}


def open_lines(path: Path) -> IO[bytes]:
    """``path`` opened for reading binary lines (gzip if it ends in .gz); iterate it, then close it.

    Iterating the file object itself is the fast way to read lines: one line at a time, never the
    whole file.
    """
    if path.suffix == ".gz":
        import gzip

        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb", buffering=1 << 20)


def iter_lines(path: Path) -> Iterator[bytes]:
    """The raw lines of ``path``, one at a time (for readers where a generator's cost does not matter)."""
    with open_lines(path) as fh:
        yield from fh


def text_lines(source: Source, stats: InputStats) -> Iterator[tuple[int, str]]:
    """The numbered lines of a text log (1-based), decoded as UTF-8.

    A line with a NUL byte or that is not UTF-8 is counted as ``BINARY`` against its line number
    and skipped, never dropped silently. Once the file is exhausted, the number of lines read is
    added to ``stats.lines``.
    """
    n = 0
    for raw in iter_lines(source.path):
        n += 1
        if b"\x00" in raw:
            stats.skip(source, n, BINARY)
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            stats.skip(source, n, BINARY)
            continue
        yield n, line
    stats.lines += n
