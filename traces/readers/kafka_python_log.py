"""kafka-python logs (loggers ``kafka.coordinator`` / ``kafka.coordinator.consumer``), as member events.

kafka-python 2.x logs, from kafka/coordinator/base.py and consumer.py:

==============================================================  ======================================
message                                                         event
==============================================================  ======================================
Successfully joined group G <Generation N (member_id: M,        ``group_joined`` (generation, member_id,
protocol: P)>  (BaseCoordinator._handle_join_group_response)    assignor P)
Setting newly assigned partitions {TopicPartition(topic='t',    ``partitions_assigned``: the whole
partition=0), ...} for group G  (ConsumerCoordinator.           assignment (kafka-python is eager)
_on_join_complete)
Revoking previously assigned partitions {...} for group G       ``partitions_revoked``
(ConsumerCoordinator._on_join_prepare)
Updating subscribed topics to: ['t']  (SubscriptionState.        the member's ``subscription`` from then on
change_subscription)
(Re-)joining group G                                            the start of a rebalance (context)
Leaving consumer group G (member M).  (BaseCoordinator.         context
maybe_leave_group)
==============================================================  ======================================

Older releases printed ``Successfully joined group G with generation N`` and ``set([...])``; both
are read. aiokafka, which started as a port of kafka-python, logs the assignment, revocation and
subscription lines in the same words (aiokafka/consumer/group_coordinator.py), so its logs are read
too (its JoinGroup line differs and is not read). kafka-python's log lines carry no client id: the file is the member. Python's logging
prints no time unless its format asks for ``%(asctime)s``; a line without one takes the time of the
line before it, and a file with none at all cannot be merged (``no-timestamp``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from traces.readers.logtime import keyword_lines
from traces.schema import UNPARSED_LOG_LINE, InputStats, Located, Source

FORMAT = "kafka-python-log"

_JOINED = re.compile(r"Successfully joined group (?P<group>\S+) <Generation (?P<gen>-?\d+) \(member_id: "
                     r"(?P<member_id>[^,]*), protocol: (?P<proto>[^)]*)\)>")
_JOINED_OLD = re.compile(r"Successfully joined group (?P<group>\S+) with generation (?P<gen>-?\d+)")
_SETTING = re.compile(r"Setting newly assigned partitions (?P<tps>.*) for group (?P<group>\S+?)\s*$")
# kafka-python 3.x adds why: "... for group G on close" (ConsumerCoordinator._on_join_prepare / close)
_REVOKING = re.compile(r"Revoking previously assigned partitions (?P<tps>.*) for group (?P<group>\S+?)"
                       r"(?: on \w+(?: \w+)*)?\s*$")
_TP = re.compile(r"TopicPartition\(topic=u?'(?P<topic>[^']*)', partition=(?P<partition>-?\d+)\)")
_SUBSCRIBED = re.compile(r"Updating subscribed topics to: (?P<topics>.*?)\s*$")
_QUOTED = re.compile(r"u?'([^']*)'")
_KEYWORDS = ("Successfully joined group", "Setting newly assigned partitions", "Revoking previously assigned",
             "Updating subscribed topics to")


def _tps(text: str) -> list[dict[str, Any]]:
    body = text.strip()
    found = [{"topic": m["topic"], "partition": int(m["partition"])} for m in _TP.finditer(body)]
    if not found and body not in ("set()", "{}", "[]", "set([])", "frozenset()"):
        raise ValueError(f"not a set of TopicPartitions: {body[:80]!r}")
    return found


def read(source: Source, stats: InputStats) -> Iterator[Located]:
    src = source.index
    seq = 0
    produced = 0
    ctx: dict[str, Any] = {"member": source.member, "protocol": "eager"}
    for n, line, last_ts, _ in keyword_lines(source, stats, _KEYWORDS):
        event: dict[str, Any] | None = None
        try:
            if (hit := _JOINED.search(line)) is not None:
                ctx.update(group=hit["group"], generation=int(hit["gen"]), member_id=hit["member_id"],
                           assignor=hit["proto"])
                event = {"name": "group_joined"}
            elif (hit := _JOINED_OLD.search(line)) is not None:
                ctx.update(group=hit["group"], generation=int(hit["gen"]))
                event = {"name": "group_joined"}
            elif (hit := _SETTING.search(line)) is not None:
                ctx["group"] = hit["group"]
                event = {"name": "partitions_assigned", "partitions": _tps(hit["tps"])}
            elif (hit := _REVOKING.search(line)) is not None:
                ctx["group"] = hit["group"]
                event = {"name": "partitions_revoked", "partitions": _tps(hit["tps"])}
            elif (hit := _SUBSCRIBED.search(line)) is not None:
                ctx["subscription"] = _QUOTED.findall(hit["topics"])
                continue
        except ValueError as exc:
            stats.skip(source, n, UNPARSED_LOG_LINE, str(exc))
            continue
        if event is None:
            stats.skip(source, n, UNPARSED_LOG_LINE, line.strip()[:120])
            continue
        event.update(ctx, timestamp=last_ts)
        seq += 1
        produced += 1
        yield last_ts, src, seq, n, event
    stats.events_per_source[src] += produced


def sniff(lines: list[str]) -> tuple[str, int, frozenset[str]] | None:
    """A log with kafka-python's coordinator messages; logger names alone are not enough: Apache Kafka's
    own loggers (``org.apache.kafka.coordinator.group...``, quoted in a README) contain them too."""
    score = sum(3 for line in lines if any(k in line for k in _KEYWORDS))
    if not score:
        return None
    score += sum(1 for line in lines if ("kafka.coordinator" in line or "kafka.conn" in line
                                         or "kafka.consumer" in line) and "org.apache.kafka" not in line)
    return FORMAT, min(85, 10 + score), frozenset()
