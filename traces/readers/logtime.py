"""What the log readers share: the timestamp at the start of a log line, the lines worth reading with
their time, and Kafka's partition lists.

Timestamps. Kafka's log4j pattern (``config/log4j2.yaml`` in 4.x, ``log4j.properties`` before:
``[%d] %p %m (%c)%n``) prints ``[2025-01-31 12:00:00,123]``; Python's ``logging`` prints
``2025-01-31 12:00:00,123``; ISO-8601 layouts print ``2025-01-31T12:00:00.123Z`` or with an offset.
A time without a zone is read in the zone ``--log-timezone`` names: by default the local zone of
the machine running the check (right when the files were written where they are checked; set TZ or
``--log-timezone UTC`` otherwise). The files of one trace set are compared with each other, so what
matters is that they agree (``--skew-ms`` absorbs the rest). librdkafka's own log line
carries seconds since the epoch (``%7|1738324800.123|FAC|name| ...``, rdkafka.c
``rd_kafka_log_print``) and is read in its own reader.

Partition lists. A Java ``TopicPartition`` prints as ``topic-partition``
(clients/.../common/TopicPartition.java ``toString``); a collection of them as
``[orders-0, orders-1]`` (4.x, a ``SortedSet``) or ``orders-0, orders-1`` (older clients joined
them with ``Utils.join``). Topic names may contain ``-``, so the partition is after the last one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from traces.schema import NO_TIMESTAMP, TP, InputStats, Source, text_lines

_TS = re.compile(
    r"\[?(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[,.](\d{1,9}))?"
    r"(?:\s?(Z|[+-]\d{2}:?\d{2}))?\]?"
)
_HOUR_CACHE: dict[tuple[int, int, int, int, int | None], int] = {}


def _hour_ms(year: int, month: int, day: int, hour: int, naive_offset_ms: int | None) -> int:
    """Epoch ms of the start of an hour; ``naive_offset_ms`` None means the local zone."""
    key = (year, month, day, hour, naive_offset_ms)
    cached = _HOUR_CACHE.get(key)
    if cached is None:
        if naive_offset_ms is None:
            cached = int(datetime(year, month, day, hour).timestamp()) * 1000  # naive: local time
        else:
            cached = int(datetime(year, month, day, hour, tzinfo=UTC).timestamp()) * 1000 - naive_offset_ms
        if len(_HOUR_CACHE) > 65536:
            _HOUR_CACHE.clear()
        _HOUR_CACHE[key] = cached
    return cached


def parse_zone(text: str) -> int | None:
    """``local`` -> None; ``UTC`` / ``Z`` -> 0; ``+02:00`` / ``-0530`` -> the offset in ms; ValueError else."""
    value = text.strip()
    if value.lower() == "local":
        return None
    if value.upper() in ("UTC", "Z", "GMT"):
        return 0
    m = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", value)
    if m is None:
        raise ValueError(f"not a time zone: {text!r} (local, UTC, or an offset like +02:00)")
    sign = 1 if m.group(1) == "+" else -1
    return sign * (int(m.group(2)) * 60 + int(m.group(3))) * 60_000


def zone_text(offset_ms: int | None) -> str:
    """The text :func:`parse_zone` reads back as ``offset_ms``: None -> ``local``, 0 -> ``UTC``, else ``+HH:MM``."""
    if offset_ms is None:
        return "local"
    if offset_ms == 0:
        return "UTC"
    hours, minutes = divmod(abs(offset_ms) // 60_000, 60)
    return f"{'-' if offset_ms < 0 else '+'}{hours:02d}:{minutes:02d}"


def leading_timestamp(line: str, naive_offset_ms: int | None = None) -> tuple[int, int] | None:
    """``(epoch ms, end of the timestamp in line)`` for a timestamp at the start of ``line``, or None."""
    m = _TS.match(line)
    if m is None:
        return None
    year, month, day, hh, mm, ss, frac, zone = m.groups()
    try:
        if zone:
            ms = _hour_ms(int(year), int(month), int(day), int(hh), 0)
        else:
            ms = _hour_ms(int(year), int(month), int(day), int(hh), naive_offset_ms)
    except (ValueError, OverflowError, OSError):
        return None
    ms += (int(mm) * 60 + int(ss)) * 1000
    if frac:
        ms += int((frac + "00")[:3])
    if zone and zone != "Z":
        sign = -1 if zone[0] == "+" else 1  # 12:00+02:00 is 10:00Z
        digits = zone[1:].replace(":", "")
        ms += sign * (int(digits[:2]) * 60 + int(digits[2:4])) * 60_000
    return ms, m.end()


def keyword_lines(source: Source, stats: InputStats, keywords: Sequence[str]) -> Iterator[tuple[int, str, int, int]]:
    """The lines of a text log that contain one of ``keywords``, each with its time: ``(line number,
    line, epoch ms, where the message starts after the timestamp)``. Every line's leading timestamp
    counts, keyword or not; a line without one (a continuation of the line above) takes the last one
    seen and its message starts at 0. A line without a keyword is counted ignored; a keyword line
    before any timestamp is skipped as NO_TIMESTAMP."""
    last_ts: int | None = None
    for n, line in text_lines(source, stats):
        found = leading_timestamp(line, source.naive_offset_ms)
        if found is not None:
            last_ts = found[0]
        if not any(k in line for k in keywords):
            stats.ignored += 1
            continue
        if last_ts is None:
            stats.skip(source, n, NO_TIMESTAMP, line[:80])
            continue
        yield n, line, last_ts, (0 if found is None else found[1])


def looks_like_log(lines: list[str]) -> bool:
    """Do these first lines of a file have the shape of a log whose lines start with their time?

    A log written by log4j (a broker's ``server.log``, a Java client's log) starts with a timestamped
    line, and most of its lines that are not continuations (a stack trace's indented frames) start
    with one too. A README, a report or an issue that *quotes* a few such lines does not: it starts
    with a title or prose, and its quotes are a minority. Only the readers whose format is
    timestamp-first ask this; the message patterns then decide what the lines mean.
    """
    stamped = other = 0
    first: bool | None = None
    for line in lines:
        if not line.strip() or line[:1] in (" ", "\t"):
            continue
        found = _TS.match(line) is not None
        if first is None:
            first = found
        if found:
            stamped += 1
        elif not line.startswith(("Caused by:", "java.", "org.", "kafka.", "\tat ", "...")):
            other += 1
    return bool(first) and stamped >= 4 * other


def parse_datetime_text(text: str, naive_offset_ms: int | None = None) -> int | None:
    """Epoch ms of a ``YYYY-MM-DD HH:MM:SS[.ffffff]`` text (Python's ``str(datetime.now())``), or None."""
    found = leading_timestamp(text.strip(), naive_offset_ms)
    return None if found is None else found[0]


def java_tp(text: str) -> TP:
    """``orders-3`` -> ``("orders", 3)``; ValueError when it is not ``topic-partition``."""
    topic, sep, number = text.strip().rpartition("-")
    if not sep or not topic or not number.isdigit():
        raise ValueError(f"not a topic-partition: {text!r}")
    return topic, int(number)


def java_tp_list(text: str) -> list[TP]:
    """A Java collection of TopicPartitions, bracketed or not; ``[]`` and ``""`` are empty."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1].strip()
    if not body:
        return []
    return [java_tp(item) for item in body.split(",")]
