"""librdkafka logs with ``debug=cgrp``, as member events.

librdkafka prints ``%<level>|<sec>.<ms>|<FACILITY>|<client name>| [thrd:<thread>]: <message>`` on
stderr (src/rdkafka.c ``rd_kafka_log_print``); through confluent-kafka-python with a ``logger``
the same message arrives as ``<FACILITY> [<client name>] [thrd:...]: <message>`` after Python's
own prefix (confluent_kafka.c ``log_cb``). The client name is ``<client.id>#consumer-<n>``; the
client id is the member (or the file, when it is librdkafka's default ``rdkafka``). Messages read,
from librdkafka 2.12's src/rdkafka_cgrp.c:

================================================================  ==================================
message (facility)                                                event
================================================================  ==================================
JoinGroup response: GenerationId N, Protocol P, LeaderId L[ (me)],  ``group_joined`` (generation,
my MemberId M, member metadata count C: (no error)  (JOINGROUP)    member_id, leader, assignor P)
List with N partition(s): / `` topic [p] offset ...``              the group assignment as it now is
(GRPASSIGNMENT, after ``rd_kafka_cgrp_group_assignment_set`` /    (rd_kafka_topic_partition_list_log);
``..._modify``) and "clearing group assignment" (ASSIGNMENT)      what left it is
                                                                  ``partitions_revoked`` (or
                                                                  ``partitions_lost`` after a LOST
                                                                  line), what joined it
                                                                  ``partitions_assigned``
Group "g": current assignment of N partition(s) lost: R  (LOST)   the next removal is a loss
Group "g": Joining/Rejoining group ...: R  /  Group "g"           the reason given to the next
(re)joining in join-state S with N assigned partition(s): R       ``group_joined``
(REJOIN)
Consumer group sub-system terminated (CGRPTERM)                   ``shutdown_complete``
================================================================  ==================================

librdkafka's mock cluster (src/rdkafka_mock_cgrp.c, facility MOCK, ``debug=mock``) logs its group
coordinator, which the checker reads as coordinator events: "Mock consumer group G with N member(s)
changing state A -> B: R" (into Joining: ``coordinator_rebalance`` with reason R; into Up:
``coordinator_stable``; into Empty: ``coordinator_state`` Empty), "Consumer group G with N member(s)
is rebalancing: elected leader is L ..., generation id N" (``coordinator_state``
CompletingRebalance with the generation), "Member M session timed out for group G" and "Member M is
leaving group G" (``coordinator_member_removed``, session-timeout / left).

The protocol is ``cooperative`` when the JoinGroup's protocol (the assignor) is
``cooperative-sticky``, else ``eager`` (rd_kafka_cgrp_rebalance_protocol). librdkafka's group
assignment changes when the rebalance is handled, which may precede the application's
``on_assign`` / ``on_revoke`` by a little: when a callback trace of the same consumer is in the
trace set, these assignment events are context only (see :class:`traces.schema.Source`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from traces.readers.logtime import leading_timestamp
from traces.schema import NO_TIMESTAMP, UNPARSED_LOG_LINE, InputStats, Located, Source, text_lines

FORMAT = "librdkafka-log"

_NATIVE = re.compile(r"^%(?P<level>\d)\|(?P<sec>\d+)\.(?P<ms>\d{3})\|(?P<fac>[A-Z0-9_]+)\|(?P<name>[^|]*)\| ?"
                     r"(?:\[thrd:[^\]]*\]: )?(?P<msg>.*?)\s*$")
_PYLOG = re.compile(r"\b(?P<fac>[A-Z][A-Z0-9_]+) \[(?P<name>[^\]]*#(?:consumer|producer)-\d+)\] "
                    r"(?:\[thrd:[^\]]*\]: )?(?P<msg>.*?)\s*$")
_JOIN = re.compile(r"JoinGroup response: GenerationId (?P<gen>-?\d+), Protocol (?P<proto>\S*), LeaderId "
                   r"(?P<leader>\S*?)(?P<me> \(me\))?, my MemberId (?P<member_id>\S*), member metadata count "
                   r"(?P<count>-?\d+): (?P<error>.*)$")
_GROUP = re.compile(r'Group "(?P<group>[^"]*)"')
_LIST_HEAD = re.compile(r"^List with (?P<count>\d+) partition\(s\):")
_LIST_ITEM = re.compile(r"^\s*(?P<topic>\S+) \[(?P<partition>-?\d+)\] offset")
_REJOIN = re.compile(r'Group "[^"]*"(?::)? (?:Joining|Rejoining) group[^:]*: (?P<reason>.*)$'
                     r'|Group "[^"]*" \(re\)joining in join-state \S+ with \d+ assigned partition\(s\): (?P<reason2>.*)$')
_FACILITIES = frozenset({"JOINGROUP", "GRPASSIGNMENT", "ASSIGNMENT", "LOST", "REJOIN", "CGRPTERM", "CGRPSTATE",
                         "CGRPJOINSTATE", "MEMBERID", "MOCK"})
# rdkafka_mock_cgrp.c (classic groups of the mock cluster)
_MOCK_STATE = re.compile(r"^Mock consumer group (?P<group>\S+) with (?P<count>\d+) member\(s\) changing state "
                         r"(?P<old>\w+) -> (?P<new>\w+): (?P<reason>.*)$")
_MOCK_ELECTED = re.compile(r"^Consumer group (?P<group>\S+) with (?P<count>\d+) member\(s\) is rebalancing: elected "
                           r"leader is (?P<leader>\S+) \(group\.instance\.id = [^)]*\), generation id (?P<gen>-?\d+)")
_MOCK_TIMEOUT = re.compile(r"^Member (?P<member>\S+) session timed out for group (?P<group>\S+)")
_MOCK_LEAVE = re.compile(r"^Member (?P<member>\S+) is leaving group (?P<group>\S+)")


def mock_events(msg: str, generations: dict[str, int]) -> list[dict[str, Any]]:
    """The coordinator events of one line of the mock cluster's group coordinator."""
    if (m := _MOCK_STATE.match(msg)) is not None:
        group, new = m["group"], m["new"]
        gen = generations.get(group)
        if new == "Joining":
            return [{"name": "coordinator_rebalance", "group": group, "reason": m["reason"],
                     "state": "PreparingRebalance", "previous_state": m["old"], **({"generation": gen} if gen else {})}]
        if new == "Up":
            return [{"name": "coordinator_stable", "group": group, "state": "Stable", "member_count": int(m["count"]),
                     **({"generation": gen} if gen else {})}]
        if new == "Empty":
            return [{"name": "coordinator_state", "group": group, "state": "Empty"}]
        return []
    if (m := _MOCK_ELECTED.match(msg)) is not None:
        generations[m["group"]] = int(m["gen"])
        return [{"name": "coordinator_state", "group": m["group"], "state": "CompletingRebalance",
                 "generation": int(m["gen"]), "leader": m["leader"], "member_count": int(m["count"])}]
    if (m := _MOCK_TIMEOUT.match(msg)) is not None:
        return [{"name": "coordinator_member_removed", "group": m["group"], "member_id": m["member"],
                 "reason": "session-timeout"}]
    if (m := _MOCK_LEAVE.match(msg)) is not None:
        return [{"name": "coordinator_member_removed", "group": m["group"], "member_id": m["member"],
                 "reason": "left"}]
    return []


class _Member:
    __slots__ = ("group", "generation", "member_id", "assignor", "assignment", "lost", "reason",
                 "list_left", "list_items", "list_line")

    def __init__(self) -> None:
        self.group: str | None = None
        self.generation: int | None = None
        self.member_id: str | None = None
        self.assignor: str | None = None
        self.assignment: set[tuple[str, int]] = set()
        self.lost = False
        self.reason: str | None = None
        self.list_left = 0
        self.list_items: list[tuple[str, int]] = []
        self.list_line = 0


def client_id_of(client_name: str) -> str:
    """``c1#consumer-1`` -> ``c1``; librdkafka's default client id ``rdkafka`` says nothing: ``""``."""
    base = client_name.split("#", 1)[0]
    return "" if base == "rdkafka" else base


def split_line(line: str, naive_offset_ms: int | None = None) -> tuple[int | None, str, str, str] | None:
    """(epoch ms or None, facility, client name, message) of a librdkafka log line, or None."""
    m = _NATIVE.match(line)
    if m is not None:
        return int(m["sec"]) * 1000 + int(m["ms"]), m["fac"], m["name"], m["msg"]
    m = _PYLOG.search(line)
    if m is not None:
        found = leading_timestamp(line, naive_offset_ms)
        return (found[0] if found else None), m["fac"], m["name"], m["msg"]
    return None


def read(source: Source, stats: InputStats) -> Iterator[Located]:
    src = source.index
    seq = 0
    produced = 0
    last_ts: int | None = None
    members: dict[str, _Member] = {}
    mock_generations: dict[str, int] = {}

    def context(name: str, m: _Member) -> dict[str, Any]:
        ctx: dict[str, Any] = {"member": name}
        if m.group is not None:
            ctx["group"] = m.group
        if m.member_id:
            ctx["member_id"] = m.member_id
        if m.generation is not None:
            ctx["generation"] = m.generation
        if m.assignor:
            ctx["assignor"] = m.assignor
            ctx["protocol"] = "cooperative" if m.assignor == "cooperative-sticky" else "eager"
        return ctx

    def change(name: str, m: _Member, now: set[tuple[str, int]], ts: int, line_no: int) -> Iterator[Located]:
        nonlocal seq, produced
        gone = sorted(m.assignment - now)
        new = sorted(now - m.assignment)
        m.assignment = now
        if gone:
            kind = "partitions_lost" if m.lost else "partitions_revoked"
            seq += 1
            produced += 1
            yield ts, src, seq, line_no, {"name": kind, "timestamp": ts, **context(name, m),
                                          "partitions": [{"topic": t, "partition": p} for t, p in gone]}
        if new:
            seq += 1
            produced += 1
            yield ts, src, seq, line_no, {"name": "partitions_assigned", "timestamp": ts, **context(name, m),
                                          "partitions": [{"topic": t, "partition": p} for t, p in new]}
        m.lost = False

    for n, line in text_lines(source, stats):
        parts = split_line(line, source.naive_offset_ms)
        if parts is None:
            stats.ignored += 1
            continue
        ts, fac, client, msg = parts
        if ts is not None:
            last_ts = ts
        if fac not in _FACILITIES:
            stats.ignored += 1
            continue
        if last_ts is None:
            stats.skip(source, n, NO_TIMESTAMP, line[:80])
            continue
        if fac == "MOCK":
            for event in mock_events(msg, mock_generations):
                event["timestamp"] = last_ts
                seq += 1
                produced += 1
                yield last_ts, src, seq, n, event
            continue
        name = source.member_name(client_id_of(client))
        m = members.get(name)
        if m is None:
            m = members[name] = _Member()
        group = _GROUP.search(msg)
        if group is not None:
            m.group = group["group"]
        if fac == "GRPASSIGNMENT":
            head = _LIST_HEAD.match(msg)
            if head is not None:
                m.list_left = int(head["count"])
                m.list_items = []
                m.list_line = n
                if m.list_left == 0:
                    yield from change(name, m, set(), last_ts, n)
                continue
            item = _LIST_ITEM.match(msg)
            if item is None or m.list_left <= 0:
                stats.skip(source, n, UNPARSED_LOG_LINE, msg[:120])
                continue
            m.list_items.append((item["topic"], int(item["partition"])))
            m.list_left -= 1
            if m.list_left == 0:
                yield from change(name, m, set(m.list_items), last_ts, m.list_line)
            continue
        if fac == "ASSIGNMENT" and "clearing group assignment" in msg:
            yield from change(name, m, set(), last_ts, n)
            continue
        if fac == "LOST" and "lost:" in msg and "no longer considered lost" not in msg:
            m.lost = True
            continue
        if fac == "LOST":
            m.lost = False
            continue
        if fac == "JOINGROUP":
            hit = _JOIN.search(msg)
            if hit is None:
                if msg.startswith("JoinGroup response: GenerationId"):
                    stats.skip(source, n, UNPARSED_LOG_LINE, msg[:120])
                else:
                    stats.ignored += 1
                continue
            if hit["error"] != "(no error)":
                stats.ignored += 1
                continue
            m.generation, m.member_id, m.assignor = int(hit["gen"]), hit["member_id"], hit["proto"] or None
            event = {"name": "group_joined", "timestamp": last_ts, **context(name, m),
                     "leader": hit["leader"]}
            if m.reason:
                event["reason"] = m.reason
                m.reason = None
            seq += 1
            produced += 1
            yield last_ts, src, seq, n, event
            continue
        if fac == "REJOIN":
            hit = _REJOIN.search(msg)
            if hit is not None:
                m.reason = hit["reason"] or hit["reason2"]
            continue
        if fac == "CGRPTERM" and msg.startswith("Consumer group sub-system terminated"):
            if m.assignment:
                yield from change(name, m, set(), last_ts, n)
            seq += 1
            produced += 1
            yield last_ts, src, seq, n, {"name": "shutdown_complete", "timestamp": last_ts, **context(name, m)}
            continue
        stats.ignored += 1
    stats.events_per_source[src] += produced


def sniff(lines: list[str]) -> tuple[str, int, frozenset[str]] | None:
    names: set[str] = set()
    hits = 0
    for line in lines:
        parts = split_line(line)
        if parts is not None:
            hits += 1
            if parts[1] != "MOCK":
                names.add(client_id_of(parts[2]))
    if not hits:
        return None
    return FORMAT, 90, frozenset(n for n in names if n)
