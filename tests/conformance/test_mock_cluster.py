"""The embedded coordinator's life cycle and controls (conformance/mock_cluster.py)."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import confluent_kafka
import pytest

from conformance import mock_cluster
from conformance.mock_cluster import MockCluster, MockClusterError, find_librdkafka, library_info

pytestmark = pytest.mark.clients


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def _find_coordinator(host_port: str, group: str) -> tuple[int, int, int]:
    """FindCoordinator v0 by hand (api key 10): (error code, node id, port)."""
    host, port = host_port.rsplit(":", 1)
    client_id = b"groupspec-test"
    body = struct.pack(">hhih", 10, 0, 7, len(client_id)) + client_id
    body += struct.pack(">h", len(group)) + group.encode()
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = sock.recv(4096)
            assert chunk, "broker closed the connection"
            data += chunk
    payload = data[4:]
    (correlation, error, node) = struct.unpack_from(">ihi", payload, 0)
    assert correlation == 7
    (host_len,) = struct.unpack_from(">h", payload, 10)
    (node_port,) = struct.unpack_from(">i", payload, 12 + host_len)
    return error, node, node_port


def test_library_is_the_one_confluent_kafka_uses() -> None:
    info = library_info()
    assert "librdkafka" in info.path
    assert info.version == confluent_kafka.libversion()[0]
    assert info.version_int == confluent_kafka.libversion()[1]


def test_a_missing_override_library_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(mock_cluster.ENV_LIBRDKAFKA, "/nonexistent/librdkafka.so.1")
    with pytest.raises(MockClusterError, match="/nonexistent/librdkafka.so.1"):
        find_librdkafka()


def test_brokers_listen_on_loopback_while_open_and_stop_on_exit() -> None:
    with MockCluster(brokers=3, topics={"orders": 6}) as cluster:
        ports = cluster.broker_ports
        assert sorted(ports) == [1, 2, 3]
        assert cluster.bootstrap_servers == ",".join(f"127.0.0.1:{ports[b]}" for b in (1, 2, 3))
        assert all(_port_open(p) for p in ports.values())
    assert not cluster.running
    assert not any(_port_open(p) for p in ports.values())


def test_the_cluster_is_destroyed_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError, match="boom"), MockCluster() as cluster:
        port = cluster.broker_ports[1]
        raise RuntimeError("boom")
    assert not cluster.running
    assert not _port_open(port)
    cluster.close()  # a second close is harmless


def test_topics_have_the_requested_partition_counts() -> None:
    with MockCluster(topics={"orders": 6}) as cluster:
        cluster.create_topic("payments", 3)
        consumer = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "t"})
        try:
            metadata = consumer.list_topics(timeout=10)
        finally:
            consumer.close()
        assert len(metadata.topics["orders"].partitions) == 6
        assert len(metadata.topics["payments"].partitions) == 3
        assert cluster.topics == {"orders": 6, "payments": 3}


def test_a_broker_set_down_refuses_connections_until_set_up() -> None:
    with MockCluster(brokers=2) as cluster:
        port = cluster.broker_ports[2]
        cluster.set_broker_down(2)
        assert not _port_open(port)  # librdkafka closes the listening socket
        cluster.set_broker_up(2)
        assert _port_open(port)
        assert _find_coordinator(f"127.0.0.1:{port}", "g")[0] == 0


def test_moving_the_coordinator_changes_find_coordinator() -> None:
    with MockCluster(brokers=3) as cluster:
        bootstrap = cluster.bootstrap_servers.split(",")[0]
        cluster.set_coordinator("orders-group", 3)
        error, node, port = _find_coordinator(bootstrap, "orders-group")
        assert (error, node, port) == (0, 3, cluster.broker_ports[3])
        cluster.set_coordinator("orders-group", 2)
        assert _find_coordinator(bootstrap, "orders-group")[1] == 2


def test_advertise_changes_the_port_clients_are_sent_to() -> None:
    with MockCluster(brokers=1) as cluster:
        real = cluster.broker_ports[1]
        cluster.advertise(1, 45678)
        assert _find_coordinator(f"127.0.0.1:{real}", "g")[2] == 45678
        cluster.advertise(1, real)
        assert _find_coordinator(f"127.0.0.1:{real}", "g")[2] == real


def test_the_mock_log_is_written_in_librdkafka_format(tmp_path: Path) -> None:
    log = tmp_path / "mock.log"
    with MockCluster(topics={"orders": 2}, log_path=log) as cluster:
        cluster.create_topic("more", 1)
    text = log.read_text()
    assert 'Created topic "orders" with 2 partition(s)' in text
    assert 'Created topic "more" with 1 partition(s)' in text
    assert text.startswith("%7|")


@pytest.mark.parametrize("bad", [0, -1])
def test_bad_arguments_are_refused(bad: int) -> None:
    with pytest.raises(ValueError, match="brokers must be >= 1"):
        MockCluster(brokers=bad)
    with MockCluster() as cluster, pytest.raises(ValueError, match="partitions must be >= 1"):
        cluster.create_topic("t", bad)


def test_operations_outside_the_block_say_so() -> None:
    cluster = MockCluster()
    with pytest.raises(MockClusterError, match="not running"):
        _ = cluster.bootstrap_servers
    with pytest.raises(MockClusterError, match="not running"):
        cluster.set_broker_down(1)


def test_an_unknown_broker_is_an_error_from_librdkafka() -> None:
    with MockCluster(brokers=1) as cluster, pytest.raises(MockClusterError, match="broker 7 down"):
        cluster.set_broker_down(7)
