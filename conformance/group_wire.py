"""The group protocol on the wire: every client's group requests and responses, decoded one way.

A conformance run needs to know what each member *sent* and what the coordinator *answered*, not
what a client chose to log. The proxy (:mod:`conformance.proxy`) sits on every connection between
the clients and the coordinator and hands each request frame and each response frame here. What is
decoded, with the field names of Kafka's message schemas (clients/src/main/resources/common/message/
*.json, 4.x):

- **JoinGroup** (api key 11) request: group id, session and rebalance timeouts, member id, group
  instance id, protocol type, and per protocol (assignor) its name and its *subscription metadata*
  (ConsumerProtocolSubscription: topics, owned partitions (v1+), generation (v2+), rack (v3+) and
  the user data; the eager ``sticky`` assignor's user data (Java ``StickyAssignor.serializeTopicPartitionAssignment``:
  the previous assignment and its generation) is decoded too, since that is where an eager sticky
  member says what it owned). Response: error, generation, protocol name, leader, member id, and the
  members with their metadata (only the leader's response has them).
- **SyncGroup** (14) request: generation, member id, instance id, and the leader's assignments
  (ConsumerProtocolAssignment per member). Response: error and the member's assignment.
- **Heartbeat** (12), **LeaveGroup** (13), **OffsetCommit** (8): the ids, generation and the error
  codes of the answer; OffsetCommit also the offsets.

Decoding uses kafka-python's protocol package (``kafka.protocol``, generated from those same JSON
schemas since kafka-python 3.0), a maintained library, rather than hand-written parsers: one decoder
for every client, whatever request version it picked. A response carries only its correlation id;
the proxy remembers (api key, version) per correlation id per connection (:class:`Correlations`).

Each decoded message is a :class:`WireMessage`, written as one JSON line (``group-wire.jsonl``).
A frame that cannot be decoded is recorded as ``undecodable`` with the reason, never dropped
silently and never guessed at.
"""

from __future__ import annotations

import io
import struct
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

with warnings.catch_warnings():
    # kafka-python 3.0 loads its schemas with importlib.resources' deprecated read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.errors as kafka_errors
    from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
    from kafka.protocol.api_header import RequestHeader
    from kafka.protocol.consumer.group import (
        HeartbeatRequest,
        HeartbeatResponse,
        JoinGroupRequest,
        JoinGroupResponse,
        LeaveGroupRequest,
        LeaveGroupResponse,
        OffsetCommitRequest,
        OffsetCommitResponse,
        SyncGroupRequest,
        SyncGroupResponse,
    )
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP, OFFSET_COMMIT = 11, 14, 12, 13, 8

# api key -> (name, request class, response class)
GROUP_APIS: dict[int, tuple[str, Any, Any]] = {
    JOIN_GROUP: ("JoinGroup", JoinGroupRequest, JoinGroupResponse),
    SYNC_GROUP: ("SyncGroup", SyncGroupRequest, SyncGroupResponse),
    HEARTBEAT: ("Heartbeat", HeartbeatRequest, HeartbeatResponse),
    LEAVE_GROUP: ("LeaveGroup", LeaveGroupRequest, LeaveGroupResponse),
    OFFSET_COMMIT: ("OffsetCommit", OffsetCommitRequest, OffsetCommitResponse),
}


# KIP-848's ConsumerGroupHeartbeat is recorded by its head only (api, version, correlation id, client id,
# and that it was answered): kafka-python's protocol package has no schema for it (kafka/protocol/
# api_key.py names the key, nothing more), and the consumer protocol's runs are judged by the trace
# checker, not by their wire (conformance/kip848.py). What the harness needs of it is when a member's
# first heartbeat was answered: librdkafka calls no assign callback for an empty first assignment.
CONSUMER_GROUP_HEARTBEAT = 68
HEAD_ONLY_APIS: dict[int, str] = {CONSUMER_GROUP_HEARTBEAT: "ConsumerGroupHeartbeat"}


class WireError(ValueError):
    """A frame that cannot be decoded (truncated, an unknown version, not Kafka framing)."""


def error_name(code: int) -> str:
    """Kafka's name for an error code (``NONE`` for 0), as the model's ``Errors`` spell them."""
    if code == 0:
        return "NONE"
    try:
        return str(kafka_errors.for_code(code).message)
    except Exception:  # an unknown code: say so rather than guess
        return f"UNKNOWN_ERROR_{code}"


def tp_list(pairs: Iterable[Any]) -> list[dict[str, Any]]:
    """A schema's [(topic, [partitions])] as docs/design.md's sorted [{"topic", "partition"}]."""
    out = [{"topic": str(topic), "partition": int(p)} for topic, partitions in pairs for p in partitions]
    return sorted(out, key=lambda d: (d["topic"], d["partition"]))


def _pairs(items: Iterable[Any]) -> list[tuple[str, list[int]]]:
    """(topic, partitions) of a schema struct list, whatever the struct's field names."""
    out: list[tuple[str, list[int]]] = []
    for item in items or ():
        if isinstance(item, tuple | list):
            out.append((item[0], list(item[1])))
        else:
            out.append((item.topic, list(item.partitions)))
    return out


def decode_subscription(metadata: bytes | None, assignor: str | None = None) -> dict[str, Any]:
    """ConsumerProtocolSubscription (any version) as JSON; ``owned`` is where the member says what it
    owns: the owned partitions field (v1+, cooperative), or for the eager ``sticky`` assignor the
    previous assignment in its user data (v0 has no owned field)."""
    if not metadata:
        return {"topics": [], "owned": [], "generation": None, "version": None}
    sub = ConsumerProtocolSubscription.decode(bytes(metadata))
    user_data = bytes(sub.user_data) if sub.user_data else b""
    owned = tp_list(_pairs(getattr(sub, "owned_partitions", None) or ()))
    generation = getattr(sub, "generation_id", None)
    out: dict[str, Any] = {"version": sub.version, "topics": sorted(sub.topics),
                           "owned": owned, "generation": generation if generation not in (None, -1) else None,
                           "rack": getattr(sub, "rack_id", None), "user_data": user_data.hex()}
    if assignor == "sticky" and user_data:
        decoded = sticky_user_data(user_data)
        if decoded is None:  # kept as evidence, not guessed at
            out["sticky_user_data_error"] = "neither Java's StickyAssignor format nor kafka-python 3.0's"
        else:
            pairs, generation, fmt = decoded
            out["owned"] = tp_list(pairs)
            out["generation"] = generation if generation not in (None, -1) else None
            out["owned_from"] = f"sticky user data ({fmt})"
    return out


def _java_sticky(data: bytes) -> tuple[list[tuple[str, list[int]]], int | None]:
    """Java's StickyAssignor user data (StickyAssignor.serializeTopicPartitionAssignment, 4.1.1):
    STICKY_ASSIGNOR_USER_DATA_V1 = [topic: string, partitions: [int32]], generation: int32, no version
    header; V0 has no generation. Raises on anything else (trailing bytes included)."""
    pos = 0

    def take(fmt: str) -> Any:
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(data):
            raise WireError("short")
        value = struct.unpack_from(fmt, data, pos)[0]
        pos += size
        return value

    pairs: list[tuple[str, list[int]]] = []
    for _ in range(take(">i")):
        n = take(">h")
        if n < 0 or pos + n > len(data):
            raise WireError("bad topic")
        topic = data[pos:pos + n].decode("utf-8")
        pos += n
        pairs.append((topic, [take(">i") for _ in range(take(">i"))]))
    generation = take(">i") if pos < len(data) else None
    if pos != len(data):
        raise WireError("trailing bytes")
    return pairs, generation


def sticky_user_data(data: bytes) -> tuple[list[tuple[str, list[int]]], int | None, str] | None:
    """The previous assignment and generation in a ``sticky`` member's user data, and which format
    it was written in: Java's (the reference; aiokafka writes it too) or kafka-python 3.0's, which puts
    an int16 version before the same struct (docs/findings.md, kafka-python-sticky-user-data-version)."""
    try:
        pairs, generation = _java_sticky(data)
        return pairs, generation, "java"
    except (WireError, UnicodeDecodeError):
        pass
    try:
        decoded = StickyAssignorUserData.decode(data)
    except Exception:
        return None
    return _pairs(decoded.previous_assignment), getattr(decoded, "generation", None), "kafka-python-3"


def decode_assignment(data: bytes | None) -> dict[str, Any]:
    """ConsumerProtocolAssignment as JSON: the assigned partitions and the user data (hex)."""
    if not data:
        return {"partitions": [], "user_data": ""}
    try:
        a = ConsumerProtocolAssignment.decode(bytes(data))
    except Exception as exc:  # the rest of the request still decodes; this one is evidence as it is
        return {"partitions": None, "undecodable": f"{type(exc).__name__}: {exc}", "raw": bytes(data).hex()}
    return {"partitions": tp_list(_pairs(a.assigned_partitions)),
            "user_data": bytes(a.user_data).hex() if a.user_data else ""}


@dataclass(frozen=True)
class RequestHead:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def request_head(frame: bytes) -> RequestHead:
    """Api key, version, correlation id and client id of a request frame (no size prefix)."""
    if len(frame) < 8:
        raise WireError(f"request frame of {len(frame)} bytes")
    api_key, version, correlation = struct.unpack_from(">hhi", frame, 0)
    (n,) = struct.unpack_from(">h", frame, 8) if len(frame) >= 10 else (-1,)
    client_id = frame[10:10 + n].decode("utf-8", "replace") if n >= 0 else None
    return RequestHead(api_key, version, correlation, client_id)


@dataclass
class WireMessage:
    """One decoded group request or response, as written to group-wire.jsonl."""

    timestamp: int
    conn: int
    kind: str  # request / response
    api: str
    version: int
    correlation_id: int
    client_id: str | None
    fields: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"timestamp": self.timestamp, "conn": self.conn, "kind": self.kind, "api": self.api,
                "version": self.version, "correlation_id": self.correlation_id, "client_id": self.client_id,
                **self.fields}


def _join_request(r: Any) -> dict[str, Any]:
    return {"group_id": r.group_id, "member_id": r.member_id,
            "instance_id": getattr(r, "group_instance_id", None), "session_timeout_ms": r.session_timeout_ms,
            "rebalance_timeout_ms": getattr(r, "rebalance_timeout_ms", None), "protocol_type": r.protocol_type,
            "protocols": [{"name": p.name, **decode_subscription(p.metadata, p.name)} for p in r.protocols]}


def _join_response(r: Any) -> dict[str, Any]:
    protocol = getattr(r, "protocol_name", None)
    return {"error": error_name(r.error_code), "generation": r.generation_id, "protocol": protocol,
            "leader": r.leader, "member_id": r.member_id,
            "members": [{"member_id": m.member_id, "instance_id": getattr(m, "group_instance_id", None),
                         **decode_subscription(m.metadata, protocol)} for m in r.members]}


def _sync_request(r: Any) -> dict[str, Any]:
    return {"group_id": r.group_id, "generation": r.generation_id, "member_id": r.member_id,
            "instance_id": getattr(r, "group_instance_id", None), "protocol": getattr(r, "protocol_name", None),
            "assignments": {a.member_id: decode_assignment(a.assignment) for a in r.assignments}}


def _sync_response(r: Any) -> dict[str, Any]:
    return {"error": error_name(r.error_code), "protocol": getattr(r, "protocol_name", None),
            "assignment": decode_assignment(r.assignment)}


def _leave_request(r: Any) -> dict[str, Any]:
    members = [{"member_id": m.member_id, "instance_id": getattr(m, "group_instance_id", None)}
               for m in (getattr(r, "members", None) or ())]
    if getattr(r, "member_id", None):
        members.insert(0, {"member_id": r.member_id, "instance_id": None})
    return {"group_id": r.group_id, "members": members}


def _commit_request(r: Any) -> dict[str, Any]:
    generation = getattr(r, "generation_id_or_member_epoch", getattr(r, "generation_id", None))
    return {"group_id": r.group_id, "generation": generation, "member_id": getattr(r, "member_id", None),
            "instance_id": getattr(r, "group_instance_id", None),
            "offsets": sorted(({"topic": t.name, "partition": p.partition_index, "offset": p.committed_offset}
                               for t in r.topics for p in t.partitions),
                              key=lambda d: (d["topic"], d["partition"]))}


def _commit_response(r: Any) -> dict[str, Any]:
    errors = sorted({error_name(p.error_code) for t in r.topics for p in t.partitions})
    return {"error": errors[0] if len(errors) == 1 else ("NONE" if not errors else ",".join(errors))}


_REQUEST_FIELDS = {JOIN_GROUP: _join_request, SYNC_GROUP: _sync_request, LEAVE_GROUP: _leave_request,
                   OFFSET_COMMIT: _commit_request,
                   HEARTBEAT: lambda r: {"group_id": r.group_id, "generation": r.generation_id,
                                         "member_id": r.member_id}}
_RESPONSE_FIELDS = {JOIN_GROUP: _join_response, SYNC_GROUP: _sync_response, OFFSET_COMMIT: _commit_response,
                    HEARTBEAT: lambda r: {"error": error_name(r.error_code)},
                    LEAVE_GROUP: lambda r: {"error": error_name(r.error_code)}}


def decode_request(frame: bytes) -> tuple[RequestHead, dict[str, Any] | None]:
    """The head of any request frame, and the decoded fields when it is a group request."""
    head = request_head(frame)
    api = GROUP_APIS.get(head.api_key)
    if api is None:
        return head, None
    _, request_cls, _ = api
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            request = request_cls.decode(frame, version=head.api_version, header=True)
        return head, _REQUEST_FIELDS[head.api_key](request)
    except Exception as exc:
        raise WireError(f"{api[0]} v{head.api_version} request: {type(exc).__name__}: {exc}") from None


def decode_response(frame: bytes, api_key: int, version: int) -> dict[str, Any]:
    """The fields of a group response frame (correlation id first; no size prefix)."""
    name, _, response_cls = GROUP_APIS[api_key]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            response = response_cls.decode(io.BytesIO(frame).read(), version=version, header=True)
        return _RESPONSE_FIELDS[api_key](response)
    except Exception as exc:
        raise WireError(f"{name} v{version} response: {type(exc).__name__}: {exc}") from None


def response_correlation(frame: bytes) -> int:
    if len(frame) < 4:
        raise WireError(f"response frame of {len(frame)} bytes")
    return int(struct.unpack_from(">i", frame, 0)[0])


class Correlations:
    """Per connection: correlation id -> (api key, version) of the group requests in flight."""

    def __init__(self) -> None:
        self._pending: dict[int, tuple[int, int]] = {}

    def sent(self, head: RequestHead) -> None:
        if head.api_key in GROUP_APIS or head.api_key in HEAD_ONLY_APIS:
            self._pending[head.correlation_id] = (head.api_key, head.api_version)

    def answered(self, correlation_id: int) -> tuple[int, int] | None:
        return self._pending.pop(correlation_id, None)


__all__ = ["GROUP_APIS", "HEAD_ONLY_APIS", "Correlations", "RequestHead", "WireError", "WireMessage", "decode_assignment",
           "decode_request", "decode_response", "decode_subscription", "error_name", "request_head",
           "response_correlation", "RequestHeader"]
