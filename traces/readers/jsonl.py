"""JSON Lines: groupspec's own traces, Apache Kafka's VerifiableConsumer, confluent-kafka's kafkatest.

One reader for three producers of the same shape (docs/design.md, "Formats" 2):

- **VerifiableConsumer** (Apache Kafka, tools/src/main/java/org/apache/kafka/tools/VerifiableConsumer.java)
  prints one JSON object per line on stdout: ``{"timestamp": ms, "name": ..., ...}`` with
  ``startup_complete``, ``partitions_assigned`` / ``partitions_revoked`` (``partitions``: topic,
  partition; from ``onPartitionsAssigned`` / ``onPartitionsRevoked``), ``records_consumed``
  (``count``, ``partitions``: topic, partition, count, minOffset, maxOffset -- one per poll),
  ``record_data`` (verbose only), ``offsets_committed`` (``offsets``, ``success``, ``error``) and
  ``shutdown_complete``. One process, one file: the file is the member. It has no listener for
  ``onPartitionsLost``, whose default calls ``onPartitionsRevoked``, so a lost assignment is printed
  as ``partitions_revoked``.
- **kafkatest** (confluent-kafka-python, ``confluent_kafka/kafkatest/verifiable_client.py``
  ``VerifiableClient.send``) prints the same events with ``_time`` -- ``str(datetime.now())``, local
  time -- instead of ``timestamp``.
- **groupspec** JSON Lines add ``partitions_lost``, ``group_joined``, ``group_synced``, the
  coordinator events and the context fields (:mod:`model.events`); the model's simulator and the
  conformance drivers write it.

The hot path is one ``orjson.loads`` per line (``json.loads`` if orjson is missing) and three
checks, and the shape of the events whose fields both ``groupspec check`` and ``groupspec corpus
--from`` read (a poll, a commit, a ``record_data``), refused whole here so that neither reads one by
half; everything else about an event is checked where it is used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from model import events as ev
from traces.readers.logtime import parse_datetime_text
from traces.schema import (
    BAD_FIELD,
    BAD_TIMESTAMP,
    BINARY,
    EVENT_NAMES,
    INVALID_JSON,
    MISSING_NAME,
    NOT_AN_OBJECT,
    TRUNCATED,
    UNKNOWN_EVENT,
    InputStats,
    Located,
    Source,
    open_lines,
)

try:
    import orjson

    loads: Callable[[bytes], Any] = orjson.loads
except ImportError:  # pragma: no cover - orjson is the fast path, json the fallback
    import json

    loads = json.loads

FORMATS = ("groupspec", "verifiable-consumer", "kafkatest")
LIFECYCLE = frozenset({ev.STARTUP_COMPLETE, ev.SHUTDOWN_COMPLETE})


def parser_keys(*names: str) -> tuple[str, ...]:
    """The ``str`` objects the parser puts in the dicts it builds for these object keys.

    orjson keeps one ``str`` object per distinct key it has seen (its key cache) and puts that very
    object in every dict it builds. A dict compares a key by identity before it compares characters,
    so looking a key up with the parser's own object skips a string comparison; the hot paths (the
    reader below, ``Checker.run``) look up about twenty keys per event. Only a shortcut: should the
    cache drop a key, or json be the parser, the look-up still finds it by its characters.
    """
    import json

    return tuple(loads(json.dumps(dict.fromkeys(names, 0)).encode()))


K_NAME, K_TIMESTAMP = parser_keys("name", "timestamp")
K_OFFSETS, K_OFFSET, K_TOPIC, K_PARTITION, K_SUCCESS = parser_keys("offsets", "offset", "topic", "partition", "success")
K_PARTITIONS, K_MIN_OFFSET, K_MAX_OFFSET = parser_keys("partitions", "minOffset", "maxOffset")
# The two names of most events (one per poll, one per commit), compared before the set look-up:
# comparing two strings is cheaper than hashing the fresh one the parser made.
COMMON_NAMES = (ev.RECORDS_CONSUMED, ev.OFFSETS_COMMITTED)


def classify_bad_line(raw: bytes) -> str | None:
    """Why ``raw`` is not JSON: binary, truncated (the last line, cut short) or invalid; None if blank."""
    if not raw.strip():
        return None
    if b"\x00" in raw:
        return BINARY
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return BINARY
    if not raw.endswith(b"\n"):  # only the file's last line can lack its newline
        return TRUNCATED
    return INVALID_JSON


def commit_field_error(obj: dict[str, Any]) -> str | None:
    """What is wrong with an ``offsets_committed`` event's fields (docs/trace-format.md), or None.

    ``offsets`` is a list of ``{"topic", "partition", "offset"}`` with a string topic and integer
    partition and offset (``"offset": "ten"`` is no commit of anything; VerifiableConsumer's
    ``CommitData``: a String topic, an int partition, a long offset); ``success`` is true or false.
    Checked here, before the checker counts the commit, so ``--strict`` refuses it and a wrong entry
    refuses the whole commit on both sides (``groupspec check`` and ``groupspec corpus --from``). Half
    of a consumer's events are commits: :func:`read` inlines the common case (every entry's topic a
    string, partition and offset integers, ``success`` a boolean) and calls this only when it fails, to
    name what is wrong.
    """
    offsets = obj.get(K_OFFSETS, ())
    if type(offsets) is list:
        k_topic, k_partition, k_offset = K_TOPIC, K_PARTITION, K_OFFSET
        for item in offsets:
            if type(item) is not dict or type(item.get(k_offset)) is not int \
                    or type(item.get(k_partition)) is not int or type(item.get(k_topic)) is not str:
                break
        else:
            success = obj.get(K_SUCCESS, True)
            if success is True or success is False:
                return None
    return _commit_error(obj)


def _commit_error(obj: dict[str, Any]) -> str | None:
    offsets = obj.get("offsets", [])
    if not isinstance(offsets, list):
        return "offsets is not a list"
    for item in offsets:
        if not isinstance(item, dict):
            return f"offsets has an entry that is not an object: {item!r:.60}"
        topic, partition, offset = item.get("topic"), item.get("partition"), item.get("offset")
        if not isinstance(topic, str) or type(partition) is not int:
            return f"offsets has an entry with a bad topic or partition: {item!r:.60}"
        if type(offset) is not int:
            return f"offset of {topic}-{partition} is not an integer: {offset!r:.40}"
    success = obj.get("success", True)
    if not isinstance(success, bool):
        return f"success is not true or false: {success!r:.40}"
    return None


def poll_field_error(obj: dict[str, Any]) -> str | None:
    """What is wrong with a ``records_consumed`` event's fields (docs/trace-format.md), or None.

    ``partitions`` is a list of ``{"topic", "partition", "minOffset", "maxOffset"}`` with a string topic, an integer
    partition, and integer offsets with ``maxOffset`` not below ``minOffset`` (VerifiableConsumer's
    ``RecordSetSummary``: the first and last offset of the poll); an entry may leave out both offsets (null), which
    says the poll's position is not known, never one of them. Checked here, before the checker sees the poll, so a
    wrong entry refuses the whole poll: the checker would otherwise move the member's position by the entries before
    it and then refuse the line (docs/check.md, "Input that cannot be used"), and ``groupspec corpus --from`` reads
    through this reader too. Half of a consumer's events are polls: :func:`read` inlines the common case and calls
    this only when it fails, to name what is wrong (or to accept an entry without offsets).
    """
    parts = obj.get("partitions")
    if not isinstance(parts, list):
        return "partitions is not a list"
    for item in parts:
        if not isinstance(item, dict):
            return f"partitions has an entry that is not an object: {item!r:.60}"
        topic, partition = item.get("topic"), item.get("partition")
        if not isinstance(topic, str) or type(partition) is not int:
            return f"partitions has an entry with a bad topic or partition: {item!r:.60}"
        low, high = item.get("minOffset"), item.get("maxOffset")
        if low is None and high is None:
            continue
        if type(low) is not int or type(high) is not int:
            return f"minOffset / maxOffset of {topic}-{partition} are not integers: {low!r:.20}, {high!r:.20}"
        if high < low:
            return f"maxOffset {high} of {topic}-{partition} is below minOffset {low}"
    return None


def record_field_error(obj: dict[str, Any]) -> str | None:
    """What is wrong with a ``record_data`` event's fields (docs/trace-format.md), or None.

    VerifiableConsumer ``--verbose`` prints one per record it consumed (``VerifiableConsumer.RecordData``: a String
    ``topic``, an int ``partition``, a long ``offset``, beside the record's ``key`` and ``value``, which nothing
    reads). The checker takes it as a poll of that one offset (``Checker._record_data``) and ``groupspec corpus
    --from`` writes it as a row: checked here, before either side sees it, so one of the wrong shape is a
    ``bad-field`` line on both and an event of neither (a topic 7 would be a partition (7, 0) to the checker and a
    row with topic null to the corpus; a float offset a position both truncated).
    """
    topic, partition, offset = obj.get("topic"), obj.get("partition"), obj.get("offset")
    if not isinstance(topic, str) or type(partition) is not int:
        return f"topic / partition is not a topic-partition: {topic!r:.40}, {partition!r:.20}"
    if type(offset) is not int:
        return f"offset of {topic}-{partition} is not an integer: {offset!r:.40}"
    return None


# the events whose fields the reader checks, by name: what names the first thing wrong with one
FIELD_ERRORS: dict[str, Callable[[dict[str, Any]], str | None]] = {
    ev.RECORDS_CONSUMED: poll_field_error, ev.OFFSETS_COMMITTED: commit_field_error, ev.RECORD_DATA: record_field_error}


def nesting_detail(exc: Exception, raw: bytes) -> str:
    """What a bad line's example says: "nested too deeply" (as ``groupspec assign`` says it) or its start."""
    if isinstance(exc, RecursionError) or "depth limit" in str(exc) or "recursion" in str(exc).lower():
        return "nested too deeply: " + preview(raw)[:40]
    return preview(raw)


def preview(raw: bytes) -> str:
    return raw[:80].decode("utf-8", "replace").rstrip("\r\n")


def event_timestamp(obj: dict[str, Any], naive_offset_ms: int | None = None) -> int | None:
    """``timestamp`` (ms; a float is truncated), or kafkatest's ``_time`` text; None if unusable."""
    ts = obj.get("timestamp")
    if isinstance(ts, bool):
        return None
    if isinstance(ts, int):
        return ts
    if isinstance(ts, float):
        return int(ts) if ts == ts and abs(ts) < 1e18 else None
    text = obj.get("_time")
    if isinstance(text, str):
        return parse_datetime_text(text, naive_offset_ms)
    return None


def read(source: Source, stats: InputStats) -> Iterator[Located]:
    """The events of one JSON Lines file, in file order, bad lines counted in ``stats``.

    One line at a time: each event reaches the checker while it is still in the CPU's cache
    (reading ahead in batches measured slower).
    """
    names = EVENT_NAMES
    consumed, committed = COMMON_NAMES
    parse, k_name, k_timestamp, int_type = loads, K_NAME, K_TIMESTAMP, int  # locals: the loop's cheapest names
    k_offsets, k_offset, k_success = K_OFFSETS, K_OFFSET, K_SUCCESS
    k_partitions, k_min_offset, k_max_offset, k_topic, k_partition = (
        K_PARTITIONS, K_MIN_OFFSET, K_MAX_OFFSET, K_TOPIC, K_PARTITION)
    list_type, str_type = list, str
    recorded, field_errors = ev.RECORD_DATA, FIELD_ERRORS
    src = source.index
    n = 0
    dropped = 0  # blank and bad lines
    with open_lines(source.path) as lines:
        for n, raw in enumerate(lines, 1):  # noqa: B007 -- n is read after the loop
            try:
                obj = parse(raw)
                name = obj[k_name]  # a subscript, not obj.get: the common case pays for no method call
                if name == consumed:  # poll_field_error's common case, inlined: half the events are polls
                    # subscripts, not .get: a missing field (KeyError) or an entry that is no object (TypeError: only
                    # a dict takes a str subscript) sends the poll to poll_field_error, which names what is wrong
                    try:
                        parts = obj[k_partitions]
                        valid = type(parts) is list_type
                        if valid:
                            for item in parts:
                                low = item[k_min_offset]
                                high = item[k_max_offset]
                                if type(low) is not int_type or type(high) is not int_type or high < low \
                                        or type(item[k_topic]) is not str_type or type(item[k_partition]) is not int_type:
                                    valid = False
                                    break
                    except (KeyError, TypeError):
                        valid = False
                elif name == committed:  # commit_field_error's common case, inlined: half the events are commits
                    # subscripts as for polls; an absent offsets or success (commit_field_error accepts both) and an
                    # entry that is no object go to commit_field_error
                    try:
                        offsets = obj[k_offsets]
                        success = obj[k_success]
                        # identity, not `in (True, False)`: 1 and 0 equal True and False but are no booleans
                        valid = type(offsets) is list_type and (success is True or success is False)
                        if valid:
                            for item in offsets:
                                # the whole entry, as for polls: a topic 7 would be a partition (7, 0) to the checker
                                # (never owned: commit-owned-only) and a row with topic null to corpus --from
                                if type(item[k_offset]) is not int_type or type(item[k_topic]) is not str_type \
                                        or type(item[k_partition]) is not int_type:
                                    valid = False
                                    break
                    except (KeyError, TypeError):
                        valid = False
                elif name not in names:
                    dropped += 1
                    stats.skip(source, n, UNKNOWN_EVENT if isinstance(name, str) else MISSING_NAME, preview(raw))
                    continue
                else:
                    valid = name != recorded  # a record_data (verbose output only) is checked by record_field_error
                if not valid:
                    bad = field_errors[name](obj)
                    # the whole event is refused: half a poll moves positions by half, half a commit is none
                    if bad is not None:
                        dropped += 1
                        stats.skip(source, n, BAD_FIELD, f"{name}: {bad}")
                        continue
            except (ValueError, RecursionError) as exc:  # RecursionError: json (not orjson) on deep nesting
                dropped += 1
                reason = classify_bad_line(raw)
                if reason is not None:
                    stats.skip(source, n, reason, nesting_detail(exc, raw))
                continue
            except (KeyError, TypeError):  # no "name", an unhashable one, or not an object at all
                dropped += 1
                if isinstance(obj, dict):
                    stats.skip(source, n, MISSING_NAME, preview(raw))
                else:
                    stats.skip(source, n, NOT_AN_OBJECT, preview(raw))
                continue
            ts = obj.get(k_timestamp)
            if type(ts) is not int_type:
                ts = event_timestamp(obj, source.naive_offset_ms)
                if ts is None:
                    dropped += 1
                    stats.skip(source, n, BAD_TIMESTAMP, preview(raw))
                    continue
                obj["timestamp"] = ts
            yield ts, src, n, n, obj
    stats.lines += n
    stats.events_per_source[src] += n - dropped


def sniff(lines: list[str]) -> tuple[str, int, frozenset[str]] | None:
    """(format, confidence, members named) when the first lines look like trace events, else None.

    A file whose first line is an event is JSON Lines whatever follows (the reader counts the bad
    lines); otherwise most of the first lines must be events. Objects with a ``name`` that is no
    trace event are another tool's: Apache Kafka's VerifiableProducer prints ``startup_complete``
    and ``shutdown_complete`` too (tools/.../VerifiableProducer.java), around ``producer_send_success``
    / ``producer_send_error`` / ``tool_data``. A file where such events outnumber trace events, or
    whose only trace events are the lifecycle ones, is not a consumer's trace.
    """
    import json

    seen = 0
    bad = 0
    foreign = 0
    group_events = 0
    first_good: bool | None = None
    fmt = "verifiable-consumer"
    members: set[str] = set()
    for line in lines:
        text = line.strip()
        if not text:
            continue
        obj = None
        if text.startswith("{"):
            try:
                obj = json.loads(text)
            except (ValueError, RecursionError):  # RecursionError: nested too deeply, not an event
                obj = None
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            bad += 1  # bad lines are the reader's to count, not a reason to refuse the file, unless most are
            if first_good is None:
                first_good = False
            continue
        if first_good is None:
            first_good = True
        if obj["name"] not in EVENT_NAMES:
            foreign += 1  # another tool's event (VerifiableProducer's producer_send_success, tool_data)
            continue
        seen += 1
        if obj["name"] not in LIFECYCLE:
            group_events += 1
        if isinstance(obj.get("member"), str):
            members.add(obj["member"])
        if "_time" in obj and "timestamp" not in obj:
            fmt = "kafkatest"
        elif fmt != "kafkatest" and (obj["name"].startswith("coordinator_")
                                     or any(k in obj for k in ("member", "group", "member_id", "generation"))):
            fmt = "groupspec"
    if foreign > seen or (foreign and not group_events):
        return None  # e.g. a VerifiableProducer's output: its startup/shutdown lines make no consumer
    return (fmt, 100, frozenset(members)) if seen and (first_good or bad <= seen) else None


def commits_shown(fmt: str, lines: list[str]) -> bool | None:
    """Does a callback trace of format ``fmt`` show every commit its consumer made? (see Source.commits_shown)

    groupspec traces and confluent-kafka's kafkatest consumer print every commit, automatic ones
    included (kafkatest prints from librdkafka's ``on_commit``, which auto-commits call too).
    Apache Kafka's VerifiableConsumer prints only the commits it makes itself: without
    ``--enable-autocommit`` it calls ``commitSync`` after every poll and prints the result
    (VerifiableConsumer.run / onComplete), with it the consumer commits on its own and nothing is
    printed. So two polls with no ``offsets_committed`` between them mean auto-commit (False), an
    ``offsets_committed`` means explicit commits (True); a file whose first lines show neither
    cannot tell (None).
    """
    if fmt != "verifiable-consumer":
        return True
    import json

    polled = False
    for line in lines:
        text = line.strip()
        if not text.startswith("{"):
            continue
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):  # a deep line is the reader's to report, not this look's
            continue
        name = obj.get("name") if isinstance(obj, dict) else None
        if name == ev.OFFSETS_COMMITTED:
            return True
        if name == ev.RECORDS_CONSUMED:
            if polled:
                return False
            polled = True
        elif name == ev.STARTUP_COMPLETE:
            polled = False  # a restart: the process before may have been killed between a poll and its commit
    return None
