"""Apache Kafka Java consumer logs (kafka-clients), as member events.

The consumer logs through a ``LogContext`` whose prefix names it: ``[Consumer clientId=C,
groupId=G] `` or, for a static member, ``[Consumer instanceId=I, clientId=C, groupId=G] ``
(clients/.../consumer/internals/ConsumerUtils.java ``createLogContext``). The client id is the
member; one log may hold several consumers of one JVM. Messages, from Kafka 4.1.1's
clients/src/main/java/org/apache/kafka/clients/consumer/internals/:

==========================================================  =========================================
message                                                     event
==========================================================  =========================================
Successfully joined group with generation                   ``group_joined`` (generation, member_id,
Generation{generationId=N, memberId='M', protocol='P'}      assignor P)  AbstractCoordinator.JoinGroup-
                                                            ResponseHandler
Successfully synced group in generation Generation{...}     ``group_synced``  SyncGroupResponseHandler
Adding newly assigned partitions: [t-0, t-1]                ``partitions_assigned``
                                                            ConsumerRebalanceListenerInvoker.invoke-
                                                            PartitionsAssigned
Revoke previously assigned partitions [t-0]                 ``partitions_revoked`` (invokePartitionsRevoked)
Lost previously assigned partitions [t-0]                   ``partitions_lost`` (invokePartitionsLost)
Updating assignment with / Assigned partitions: ... /       ``group_synced`` with protocol cooperative:
Current owned partitions: ... (a tab-indented block)        ConsumerCoordinator.onJoinComplete logs it for
                                                            the COOPERATIVE protocol only
Member M with epoch E transitioned from S to T              the consumer protocol (KIP-848, AsyncKafka-
                                                            Consumer): member id M (and ``member_epoch`` E)
                                                            on the member's next events; the epoch is the
                                                            member's, not a group generation
                                                            (AbstractMembershipManager.transitionTo)
Request joining group due to: R                             the reason given to the next ``group_joined``
                                                            (AbstractCoordinator.requestRejoin)
Subscribed to topic(s): a, b                                the member's ``subscription`` from then on
                                                            (ClassicKafkaConsumer / AsyncKafkaConsumer
                                                            ``subscribe``)
App info kafka.consumer for C unregistered                  ``shutdown_complete`` (AppInfoParser, on close)
==========================================================  =========================================

Clients before 3.x printed partition lists without brackets ("Adding newly assigned partitions:
t-0, t-1"); both are read. The generation of the callbacks is the last one joined.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from traces.readers.logtime import java_tp_list, leading_timestamp, looks_like_log
from traces.schema import NO_TIMESTAMP, UNPARSED_LOG_LINE, InputStats, Located, Source, text_lines

FORMAT = "java-consumer-log"

_PREFIX = re.compile(r"\[Consumer (?:instanceId=(?P<instance>[^,\]]*), )?clientId=(?P<client>[^,\]]*), "
                     r"groupId=(?P<group>[^\]]*)\] ")
_GENERATION = r"Generation\{generationId=(?P<gen>-?\d+), memberId='(?P<member_id>[^']*)', protocol='(?P<proto>[^']*)'\}"
_JOINED = re.compile(r"Successfully joined group with generation " + _GENERATION)
_SYNCED = re.compile(r"Successfully synced group in generation " + _GENERATION)
_ADDING = re.compile(r"Adding newly assigned partitions:? ?(?P<tps>.*?)\s*$")
_REVOKE = re.compile(r"Revoke previously assigned partitions:? ?(?P<tps>.*?)\s*$")
_LOST = re.compile(r"Lost previously assigned partitions:? ?(?P<tps>.*?)\s*$")
_EPOCH = re.compile(r"Member (?P<member_id>\S+) with epoch (?P<epoch>-?\d+) transitioned from (?P<src>\w+) to "
                    r"(?P<dst>\w+)")
_REJOIN = re.compile(r"Request joining group due to: (?P<reason>.*?)\s*$")
_SUBSCRIBED = re.compile(r"Subscribed to topic\(s\): (?P<topics>.*?)\s*$")
_UNREGISTERED = re.compile(r"App info kafka\.consumer for (?P<client>\S+) unregistered")
_BLOCK_FIELD = re.compile(r"^\s*(?P<label>Assigned partitions|Current owned partitions|Added partitions|"
                          r"Revoked partitions)[^:]*:\s*(?P<tps>\[.*\]|.*?)\s*$")
_LOGGER_SUFFIX = re.compile(r"\s\((?:[a-z_][\w$]*\.)+[A-Za-z_][\w$]*\)\s*$")
_KEYWORDS = ("Successfully joined group", "Successfully synced group", "assigned partitions", "transitioned from",
             "Updating assignment with", "Request joining group due to", "Subscribed to topic",
             "App info kafka.consumer for")


class _Member:
    __slots__ = ("group", "instance", "generation", "member_id", "assignor", "reason", "subscription", "epoch")

    def __init__(self, group: str, instance: str | None) -> None:
        self.group = group
        self.instance = instance
        self.generation: int | None = None
        self.member_id: str | None = None
        self.assignor: str | None = None
        self.reason: str | None = None
        self.subscription: list[str] | None = None
        self.epoch: int | None = None  # KIP-848 member epoch: per member, not a group generation


def _tps(text: str) -> list[dict[str, Any]]:
    return [{"topic": t, "partition": p} for t, p in java_tp_list(text)]


def read(source: Source, stats: InputStats) -> Iterator[Located]:
    src = source.index
    seq = 0
    produced = 0
    last_ts: int | None = None
    members: dict[str, _Member] = {}
    block: tuple[str, int, int, dict[str, Any]] | None = None  # (client, ts, line, fields) of "Updating assignment"

    def context(client: str, m: _Member) -> dict[str, Any]:
        ctx: dict[str, Any] = {"member": client, "group": m.group}
        if m.instance:
            ctx["instance_id"] = m.instance
        if m.member_id:
            ctx["member_id"] = m.member_id
        if m.generation is not None:
            ctx["generation"] = m.generation
        if m.assignor:
            ctx["assignor"] = m.assignor
        if m.subscription is not None:
            ctx["subscription"] = m.subscription
        if m.epoch is not None:
            ctx["member_epoch"] = m.epoch
        return ctx

    def flush_block() -> Iterator[Located]:
        nonlocal block, seq, produced
        if block is None:
            return
        client, ts, line_no, fields = block
        block = None
        m = members[client]
        event = {"name": "group_synced", "timestamp": ts, **context(client, m), "protocol": "cooperative"}
        if "Assigned partitions" in fields:
            event["assignment"] = fields["Assigned partitions"]
        if "Current owned partitions" in fields:
            event["owned"] = fields["Current owned partitions"]
        seq += 1
        produced += 1
        yield ts, src, seq, line_no, event

    for n, line in text_lines(source, stats):
        if block is not None:
            field_match = _BLOCK_FIELD.match(line)
            if field_match and line[:1] in ("\t", " "):
                try:
                    block[3][field_match["label"]] = _tps(field_match["tps"])
                except ValueError as exc:
                    stats.skip(source, n, UNPARSED_LOG_LINE, str(exc))
                continue
            yield from flush_block()
        if not any(k in line for k in _KEYWORDS):
            stats.ignored += 1
            found = leading_timestamp(line, source.naive_offset_ms)
            if found is not None:
                last_ts = found[0]
            continue
        found = leading_timestamp(line, source.naive_offset_ms)
        if found is not None:
            last_ts = found[0]
        if last_ts is None:
            stats.skip(source, n, NO_TIMESTAMP, line[:80])
            continue
        text = _LOGGER_SUFFIX.sub("", line.rstrip("\r\n"))
        prefix = _PREFIX.search(text)
        unregistered = _UNREGISTERED.search(text)
        if prefix is None:
            if unregistered and source.member_name(unregistered["client"]) in members:
                client = source.member_name(unregistered["client"])
                seq += 1
                produced += 1
                yield last_ts, src, seq, n, {"name": "shutdown_complete", "timestamp": last_ts,
                                             **context(client, members[client])}
                members.pop(client)
            else:
                stats.ignored += 1
            continue
        client = source.member_name(prefix["client"])
        m = members.get(client)
        if m is None:
            m = members[client] = _Member(prefix["group"], prefix["instance"])
        elif prefix["instance"]:
            m.instance = prefix["instance"]
        body = text[prefix.end():]
        event: dict[str, Any] | None = None
        try:
            if (hit := _JOINED.search(body)) is not None:
                m.generation, m.member_id, m.assignor = int(hit["gen"]), hit["member_id"], hit["proto"] or None
                event = {"name": "group_joined", **context(client, m)}
                if m.reason:
                    event["reason"] = m.reason
                    m.reason = None
            elif (hit := _SYNCED.search(body)) is not None:
                m.generation, m.member_id = int(hit["gen"]), hit["member_id"]
                event = {"name": "group_synced", **context(client, m)}
            elif (hit := _ADDING.search(body)) is not None:
                event = {"name": "partitions_assigned", **context(client, m), "partitions": _tps(hit["tps"])}
            elif (hit := _REVOKE.search(body)) is not None:
                event = {"name": "partitions_revoked", **context(client, m), "partitions": _tps(hit["tps"])}
            elif (hit := _LOST.search(body)) is not None:
                event = {"name": "partitions_lost", **context(client, m), "partitions": _tps(hit["tps"])}
            elif (hit := _EPOCH.search(body)) is not None:
                # the consumer protocol's membership (KIP-848): the member id the coordinator's lines name. The
                # epoch is the member's own and is not a generation: members of one group are at different epochs
                m.member_id, m.epoch = hit["member_id"], int(hit["epoch"])
                continue
            elif "Updating assignment with" in body:
                block = (client, last_ts, n, {})
                continue
            elif (hit := _REJOIN.search(body)) is not None:
                m.reason = hit["reason"]
                continue
            elif (hit := _SUBSCRIBED.search(body)) is not None:
                m.subscription = [t.strip() for t in hit["topics"].split(",") if t.strip()]
                continue
            else:
                stats.ignored += 1
                continue
        except ValueError as exc:
            stats.skip(source, n, UNPARSED_LOG_LINE, str(exc))
            continue
        event["timestamp"] = last_ts
        seq += 1
        produced += 1
        yield last_ts, src, seq, n, event
    yield from flush_block()
    stats.events_per_source[src] += produced


def sniff(lines: list[str]) -> tuple[str, int, frozenset[str]] | None:
    """A log4j log with consumer lines; a text that only quotes some (a README) is none."""
    if not looks_like_log(lines):
        return None
    clients: set[str] = set()
    for line in lines:
        m = _PREFIX.search(line)
        if m:
            clients.add(m["client"])
    return (FORMAT, 95, frozenset(clients)) if clients else None


def group_of(lines: list[str]) -> str | None:
    """The group the first consumer line of a log names, for pairing the log with its callback trace."""
    for line in lines:
        m = _PREFIX.search(line)
        if m and m["group"]:
            return m["group"]
    return None
