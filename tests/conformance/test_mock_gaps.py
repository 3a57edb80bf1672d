"""The embedded coordinator's known gaps, each verified step by step over the wire.

Every test speaks the group protocol by hand (kafka-python's protocol classes over a socket), so
the order of requests is the test's, not a race's. Each asserts what librdkafka's mock does and
names what Apache Kafka does instead (group-coordinator/.../GroupMetadataManager.java, 4.1.1); if
a librdkafka upgrade closes a gap, its test fails and docs/embedded-coordinator.md must change.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kafka.errors import KafkaProtocolError
from kafka.protocol.old.commit import OffsetCommitRequest
from kafka.protocol.old.group import HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest

from conformance.mock_cluster import MockCluster
from conformance.proxy import proxied
from tests.conformance.rawkafka import RawConnection

pytestmark = pytest.mark.clients

GROUP = "g"
SESSION_MS = 2000  # the mock waits session - 1000 ms in Joining after the first generation
METADATA = b"\x00\x00\x00\x00\x00\x01\x00\x06orders\x00\x00\x00\x00"  # ConsumerProtocolSubscription v0: [orders]

NONE, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, INVALID_REQUEST = 0, 22, 27, 42
FENCED_INSTANCE_ID, MEMBER_ID_REQUIRED = 82, 79


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(topics={"orders": 2}, initial_rebalance_delay_ms=100) as mc:
        yield mc


def join_v4(member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest[4](GROUP, SESSION_MS, SESSION_MS, member_id, "consumer", [("range", METADATA)])


def join_v5(instance_id: str | None, member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest[5](GROUP, SESSION_MS, SESSION_MS, member_id, instance_id, "consumer",
                               [("range", METADATA)])


def join_two(bootstrap: str) -> tuple[RawConnection, RawConnection, object, object]:
    """Two members join together; returns (leader conn, follower conn, leader resp, follower resp)."""
    a, b = RawConnection(bootstrap), RawConnection(bootstrap)
    a.send(join_v4())
    b.send(join_v4())
    ra, rb = a.receive(), b.receive()
    assert ra.error_code == rb.error_code == NONE
    if ra.leader_id != ra.member_id:
        a, b, ra, rb = b, a, rb, ra
    assert ra.leader_id == ra.member_id and rb.leader_id == ra.member_id
    return a, b, ra, rb


def leader_sync(resp: object, follower_id: str) -> SyncGroupRequest:
    return SyncGroupRequest[3](GROUP, resp.generation_id, resp.member_id, None,  # type: ignore[attr-defined]
                               [(resp.member_id, b"leader"), (follower_id, b"follower")])  # type: ignore[attr-defined]


def follower_sync(resp: object) -> SyncGroupRequest:
    return SyncGroupRequest[3](GROUP, resp.generation_id, resp.member_id, None, [])  # type: ignore[attr-defined]


def test_a_follower_syncing_after_the_leader_gets_invalid_request(cluster: MockCluster) -> None:
    """Kafka answers a late follower from the stored assignment (classicGroupSyncToStable); the mock
    has already cleared it and moved to Up, where SyncGroup is INVALID_REQUEST."""
    a, b, ra, rb = join_two(cluster.bootstrap_servers)
    with a, b:
        assert a.request(leader_sync(ra, rb.member_id)).error_code == NONE
        late = b.request(follower_sync(rb))
        assert late.error_code == INVALID_REQUEST
        assert late.member_assignment in (None, b"")


def test_through_the_proxy_the_same_order_succeeds(cluster: MockCluster) -> None:
    """The proxy holds the leader's SyncGroup until the follower's has gone through."""
    with proxied(cluster, hold_timeout_ms=5000) as (proxy, bootstrap):
        a, b, ra, rb = join_two(bootstrap)
        with a, b:
            a.send(leader_sync(ra, rb.member_id))  # first on the wire, held by the proxy
            follower = b.request(follower_sync(rb))
            leader = a.receive()
        assert (leader.error_code, follower.error_code) == (NONE, NONE)
        assert (leader.member_assignment, follower.member_assignment) == (b"leader", b"follower")
        assert proxy.stats.leader_syncs_held == 1
        assert proxy.stats.released_all_synced == 1 and proxy.stats.released_timeout == 0


def test_the_proxy_releases_the_leader_when_a_follower_never_syncs(cluster: MockCluster) -> None:
    with proxied(cluster, hold_timeout_ms=300) as (proxy, bootstrap):
        a, b, ra, rb = join_two(bootstrap)
        with a, b:
            leader = a.request(leader_sync(ra, rb.member_id))
        assert leader.error_code == NONE
        assert proxy.stats.released_timeout == 1 and proxy.stats.released_all_synced == 0


def test_no_member_id_required_round_trip(cluster: MockCluster) -> None:
    """KIP-394: Kafka answers a v4+ JoinGroup with an empty member id MEMBER_ID_REQUIRED and an id to
    rejoin with; the mock makes up an id and adds the member at once."""
    with RawConnection(cluster.bootstrap_servers) as conn:
        resp = conn.request(join_v4())
    assert resp.error_code == NONE != MEMBER_ID_REQUIRED
    assert resp.member_id.startswith("0x")  # the address of the mock's member struct


def test_no_static_membership(cluster: MockCluster) -> None:
    """KIP-345: Kafka replaces a known group.instance.id's member (same assignment, no rebalance in
    Stable) and fences the old member id with FENCED_INSTANCE_ID. The mock adds a second member
    with the same instance id, rebalances, and the old id is merely out of date."""
    with RawConnection(cluster.bootstrap_servers) as first:
        r1 = first.request(join_v5("instance-1"))
        assert r1.error_code == NONE and r1.leader_id == r1.member_id
        assert first.request(SyncGroupRequest[3](GROUP, r1.generation_id, r1.member_id, "instance-1",
                                                 [(r1.member_id, b"a")])).error_code == NONE
        with RawConnection(cluster.bootstrap_servers) as restarted:
            r2 = restarted.request(join_v5("instance-1"))
        assert r2.error_code == NONE
        assert r2.member_id != r1.member_id
        assert r2.generation_id == r1.generation_id + 1  # a rebalance happened
        assert r2.leader_id == r1.member_id  # the old incarnation, not replaced, still leads
        beat = first.request(HeartbeatRequest[3](GROUP, r1.generation_id, r1.member_id, "instance-1"))
        assert beat.error_code == ILLEGAL_GENERATION != FENCED_INSTANCE_ID


def test_offset_commit_is_refused_while_members_rejoin(cluster: MockCluster) -> None:
    """Kafka accepts a commit of the current generation in PreparingRebalance
    (ClassicGroup.validateOffsetCommit refuses only CompletingRebalance); the mock's Joining
    state answers REBALANCE_IN_PROGRESS."""
    with RawConnection(cluster.bootstrap_servers) as first:
        r1 = first.request(join_v4())
        assert first.request(SyncGroupRequest[3](GROUP, r1.generation_id, r1.member_id, None,
                                                 [(r1.member_id, b"")])).error_code == NONE
        with RawConnection(cluster.bootstrap_servers) as second:
            second.send(join_v4())  # parked: the group is now Joining
            # The two connections are not ordered with each other: heartbeat until the mock has seen
            # the JoinGroup (bounded), so that the commit below meets the Joining state.
            deadline = time.monotonic() + 5.0
            while True:
                beat = first.request(HeartbeatRequest[1](GROUP, r1.generation_id, r1.member_id))
                if beat.error_code != NONE or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            assert beat.error_code == REBALANCE_IN_PROGRESS
            commit = first.request(OffsetCommitRequest[2](
                GROUP, r1.generation_id, r1.member_id, -1, [("orders", [(0, 5, "")])]))
            assert commit.topics[0][1][0][1] == REBALANCE_IN_PROGRESS
            assert second.receive().error_code == NONE


def test_leave_group_v3_is_not_understood(cluster: MockCluster) -> None:
    """The mock announces LeaveGroup up to v4 but parses every version as v0-v2 (one member id);
    its answer to a v3 request (a members array) cannot be decoded, which is why kafka-python
    must use api_version <= (2, 3, 0) against it. v2 works."""
    with RawConnection(cluster.bootstrap_servers) as conn:
        resp = conn.request(join_v4())
        with pytest.raises(KafkaProtocolError):
            conn.request(LeaveGroupRequest[3](GROUP, [(resp.member_id, None)]))
    with RawConnection(cluster.bootstrap_servers) as conn:
        resp = conn.request(join_v4())
        assert conn.request(LeaveGroupRequest[2](GROUP, resp.member_id)).error_code == NONE
