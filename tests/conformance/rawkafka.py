"""A blocking, one-request-at-a-time Kafka connection for tests, using kafka-python's protocol classes.

Lets a test speak the group protocol to the mock cluster step by step (JoinGroup from two members,
then the leader's SyncGroup before the follower's, ...), which real clients only do by chance.
"""

from __future__ import annotations

import socket
from typing import Any

from kafka.protocol.parser import KafkaProtocol


class RawConnection:
    def __init__(self, host_port: str, client_id: str = "groupspec-test", timeout_s: float = 10.0) -> None:
        host, port = host_port.rsplit(":", 1)
        assert host == "127.0.0.1", "tests only talk to loopback"
        self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self.protocol = KafkaProtocol(client_id=client_id)

    def send(self, request: Any) -> None:
        self.protocol.send_request(request)
        self.sock.sendall(self.protocol.send_bytes())

    def receive(self) -> Any:
        while True:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("connection closed by the broker")
            responses = self.protocol.receive_bytes(data)
            if responses:
                assert len(responses) == 1
                return responses[0][1]

    def request(self, request: Any) -> Any:
        self.send(request)
        return self.receive()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
