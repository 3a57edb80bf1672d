"""Reading SyncGroup requests off the wire (conformance/proxy.py), checked against kafka-python's encoder.

The frames are encoded with kafka-python's protocol package (3.0: generated from Kafka's JSON schemas),
which is also what decodes them (conformance/group_wire.py); the flexible-version frames below are
written byte by byte from SyncGroupRequest.json so that the decoder is not only checked against itself.
"""

from __future__ import annotations

import struct

import pytest
from kafka.protocol.consumer.group import HeartbeatRequest, SyncGroupRequest

from conformance.proxy import ProtocolError, parse_sync_group, request_header

pytestmark = pytest.mark.clients  # kafka-python's protocol classes encode the frames


def frame(request: object, version: int, correlation_id: int = 42, client_id: str = "k1") -> bytes:
    """A request frame as kafka-python puts it on the wire, without the size prefix."""
    request.with_header(correlation_id=correlation_id, client_id=client_id)  # type: ignore[attr-defined]
    return bytes(request.encode(version=version, header=True))  # type: ignore[attr-defined]


def sync(group: str, generation: int, member: str, assignments: list[tuple[str, bytes]],
         instance_id: str | None = None) -> SyncGroupRequest:
    return SyncGroupRequest(group_id=group, generation_id=generation, member_id=member, group_instance_id=instance_id,
                            protocol_type="consumer", protocol_name="range",
                            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                                         for m, a in assignments])


def heartbeat(group: str, generation: int, member: str) -> HeartbeatRequest:
    return HeartbeatRequest(group_id=group, generation_id=generation, member_id=member, group_instance_id=None)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_leader_sync_group_v0_to_v2(version: int) -> None:
    req = sync("orders-group", 7, "m-1", [("m-1", b"\x00\x01"), ("m-2", b"")])
    parsed = parse_sync_group(frame(req, version))
    assert parsed is not None
    assert (parsed.version, parsed.group_id, parsed.generation_id, parsed.member_id) == (version, "orders-group", 7, "m-1")
    assert parsed.assigned_members == ("m-1", "m-2") and parsed.is_leader


def test_follower_sync_group_v3_with_instance_id() -> None:
    req = sync("g", 3, "m-2", [], instance_id="instance-2")
    parsed = parse_sync_group(frame(req, 3))
    assert parsed is not None and not parsed.is_leader
    assert (parsed.group_id, parsed.generation_id, parsed.member_id) == ("g", 3, "m-2")


def test_other_requests_are_not_sync_groups() -> None:
    assert parse_sync_group(frame(heartbeat("g", 3, "m-2"), 1)) is None
    assert request_header(frame(heartbeat("g", 3, "m-2"), 1, correlation_id=9)) == (12, 1, 9)


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
    data = frame(sync("orders-group", 3, "m-1", [("m-1", b"abc")]), 1)
    with pytest.raises(ProtocolError, match="SyncGroup v1 request"):
        parse_sync_group(data[:20])  # cut inside the group id


def test_a_short_assignment_is_kept_as_evidence_not_guessed() -> None:
    """kafka-python's decoder returns a bytes field cut short as it is; the assignment inside it then
    fails to decode and is recorded as undecodable with its raw bytes."""
    from conformance.group_wire import decode_request

    data = frame(sync("g", 3, "m-1", [("m-1", b"abc")]), 1)
    _, fields = decode_request(data[:-2])
    assert fields is not None and fields["assignments"]["m-1"]["partitions"] is None
    assert "undecodable" in fields["assignments"]["m-1"]
