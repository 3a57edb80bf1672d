"""Reading SyncGroup requests off the wire (conformance/proxy.py), checked against kafka-python's encoder."""

from __future__ import annotations

import struct

import pytest
from kafka.protocol.group import HeartbeatRequest, SyncGroupRequest

from conformance.proxy import ProtocolError, parse_sync_group, request_header

pytestmark = pytest.mark.clients  # kafka-python's protocol classes encode the frames


def frame(request: object, correlation_id: int = 42, client_id: str = "k1") -> bytes:
    """A request frame as kafka-python puts it on the wire, without the size prefix."""
    header = request.build_header(correlation_id=correlation_id, client_id=client_id)  # type: ignore[attr-defined]
    return header.encode() + request.encode()  # type: ignore[attr-defined]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_leader_sync_group_v0_to_v2(version: int) -> None:
    req = SyncGroupRequest[version]("orders-group", 7, "m-1", [("m-1", b"\x00\x01"), ("m-2", b"")])
    parsed = parse_sync_group(frame(req))
    assert parsed is not None
    assert (parsed.version, parsed.group_id, parsed.generation_id, parsed.member_id) == (version, "orders-group", 7, "m-1")
    assert parsed.assigned_members == ("m-1", "m-2") and parsed.is_leader


def test_follower_sync_group_v3_with_instance_id() -> None:
    req = SyncGroupRequest[3]("g", 3, "m-2", "instance-2", [])
    parsed = parse_sync_group(frame(req))
    assert parsed is not None and not parsed.is_leader
    assert (parsed.group_id, parsed.generation_id, parsed.member_id) == ("g", 3, "m-2")


def test_other_requests_are_not_sync_groups() -> None:
    assert parse_sync_group(frame(HeartbeatRequest[1]("g", 3, "m-2"))) is None
    assert request_header(frame(HeartbeatRequest[1]("g", 3, "m-2"), correlation_id=9)) == (12, 1, 9)


def _compact_str(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    data = s.encode()
    return _uvarint(len(data) + 1) + data


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _flexible_sync_group(version: int, members: list[tuple[str, bytes]]) -> bytes:
    """SyncGroupRequest v4/v5 per SyncGroupRequest.json: request header v2 (client id still an int16
    string, then tagged fields), compact strings and arrays, a tagged-field block per struct."""
    client_id = b"rdkafka"
    out = struct.pack(">hhih", 14, version, 5, len(client_id)) + client_id + b"\x00"
    out += _compact_str("orders-group") + struct.pack(">i", 11) + _compact_str("leader-id") + _compact_str(None)
    if version >= 5:
        out += _compact_str("consumer") + _compact_str("range")
    out += _uvarint(len(members) + 1)
    for member_id, assignment in members:
        out += _compact_str(member_id) + _uvarint(len(assignment) + 1) + assignment + b"\x00"
    # a top-level tagged field (tag 0, 2 bytes) the parser must not trip over
    return out + b"\x01\x00\x02\xab\xcd"


@pytest.mark.parametrize("version", [4, 5])
def test_flexible_versions(version: int) -> None:
    long_assignment = bytes(200)  # length 201 needs a two-byte uvarint
    parsed = parse_sync_group(_flexible_sync_group(version, [("leader-id", long_assignment), ("f-1", b"x")]))
    assert parsed is not None
    assert (parsed.group_id, parsed.generation_id, parsed.member_id) == ("orders-group", 11, "leader-id")
    assert parsed.assigned_members == ("leader-id", "f-1")


def test_a_truncated_sync_group_is_a_protocol_error() -> None:
    data = frame(SyncGroupRequest[1]("g", 3, "m-1", [("m-1", b"abc")]))
    with pytest.raises(ProtocolError, match="truncated"):
        parse_sync_group(data[:-2])
