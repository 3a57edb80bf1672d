"""The network between the consumers and the group coordinator.

Semantics, in one paragraph: every consumer process incarnation has one connection to the
coordinator, named by its connection id (``"a#1"``: member ``a``, first incarnation). Each
connection carries two queues, requests (member -> coordinator) and responses (coordinator ->
member). Each queue is **reliable and FIFO**: a message is delivered exactly once, in the order it
was sent on that connection, and nothing is duplicated, corrupted or reordered within a
connection. Queues of different connections are independent: the order of deliveries across
connections is free (the transition system makes it a choice). When an incarnation dies its
connection is **closed**: responses still queued for it are dropped and later ones are discarded.
A crash also drops the requests it had queued (the process died before they left); a clean close
keeps them, because ``KafkaConsumer.close`` waits for its pending requests, the LeaveGroup among
them (``AbstractCoordinator.close`` -> ``awaitPendingRequests``).

That is the contract Kafka's clients get from one TCP connection to the coordinator (the
``NetworkClient`` keeps one connection per node and at most ``max.in.flight.requests.per.connection``
requests in flight, answered in order). **One request at a time on the broker side**: the broker
reads one request of a connection, then mutes the connection until that request's response is sent
(``SocketServer``'s ``Processor``: ``mute`` after a completed receive, ``unmute`` once the send
completes). Most group requests are answered at once, but the coordinator parks a JoinGroup until
the join phase completes and a follower's SyncGroup until the leader's arrives
(``GroupMetadataManager``: "sockets are muted while the JoinGroup request is parked"); while one
is parked, nothing else the member sent on that connection is read -- its LeaveGroup on close, its
heartbeats, its commits wait in this queue behind it. The network itself only keeps the queues;
the muting is the system's guard on delivering a request (``model.system.muted``), because which
connections are muted is the coordinator's state. When
the coordinator moves or fails, the requests queued for it are answered with an error by the broker
they reached (:meth:`Network.answer_queued`); a member's connection id stays the same when it
reconnects to a new coordinator, and when it drops its connection on its own (:class:`Disconnect`,
the client's session timer: :meth:`Network.disconnect`). Not modelled: request timeouts, other
disconnects of a live process, and ``close()``'s timeout (default 30 s): a closed consumer's queued
requests are always read eventually, also when a parked JoinGroup keeps them waiting longer.

The value is a frozen, hashable record of two tuples of ``(conn, queue)`` pairs sorted by
connection id; queues are tuples. Every function returns a new value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from model.messages import (
    FindCoordinatorRequest,
    Request,
    Response,
    SyncGroupRequest,
    SyncGroupResponse,
)

Queue = tuple[tuple[str, tuple[object, ...]], ...]


def _put(queues: Queue, conn: str, message: object) -> Queue:
    """``queues`` with ``message`` appended to the queue of ``conn`` (created if missing)."""
    for i, (c, q) in enumerate(queues):
        if c == conn:
            return queues[:i] + ((c, q + (message,)),) + queues[i + 1:]
        if c > conn:
            return queues[:i] + ((conn, (message,)),) + queues[i:]
    return queues + ((conn, (message,)),)


def _pop(queues: Queue, conn: str) -> tuple[Queue, object]:
    """``queues`` without the head message of ``conn``'s queue, and that message."""
    for i, (c, q) in enumerate(queues):
        if c == conn:
            rest = q[1:]
            if rest:
                return queues[:i] + ((c, rest),) + queues[i + 1:], q[0]
            return queues[:i] + queues[i + 1:], q[0]
    raise KeyError(f"no message queued on connection {conn!r}")


def _head(queues: Queue, conn: str) -> object | None:
    for c, q in queues:
        if c == conn:
            return q[0]
    return None


@dataclass(frozen=True, slots=True)
class Disconnect:
    """Not a Kafka request: a consumer asks for its connection to the coordinator to be closed and
    reopened (``markCoordinatorUnknown`` -> ``NetworkClient.disconnect``). Everything it had in
    flight fails on its side (``DisconnectException``); a request the coordinator holds parked
    stays parked there, and its eventual answer goes to the old, closed socket
    (:meth:`Network.disconnect`)."""


@dataclass(frozen=True, slots=True)
class Network:
    """Messages in flight, per connection and direction. Empty queues are not stored."""

    requests: Queue = ()  # member -> coordinator
    responses: Queue = ()  # coordinator -> member
    closed: frozenset[str] = frozenset()  # connections of dead incarnations
    # connections whose parked SyncGroup was left behind by a disconnect: its answer is dropped, and it
    # no longer mutes the connection (the consumer talks on a new socket)
    orphaned: frozenset[str] = frozenset()

    # -- sending -----------------------------------------------------------------------------

    def send_request(self, conn: str, request: Request) -> Network:
        """A member sends ``request`` (a closed connection's process sends nothing more)."""
        return Network(_put(self.requests, conn, request), self.responses, self.closed, self.orphaned)

    def send_response(self, conn: str, response: Response) -> Network:
        """The coordinator answers on ``conn``; dropped if the connection is closed (the
        incarnation that asked is gone)."""
        if conn in self.closed:
            return self
        if conn in self.orphaned and isinstance(response, SyncGroupResponse):  # to the old socket: lost
            return Network(self.requests, self.responses, self.closed, self.orphaned - {conn})
        return Network(self.requests, _put(self.responses, conn, response), self.closed, self.orphaned)

    def answer_queued(self, answer: Callable[[Request], Response | None]) -> Network:
        """Every queued request that ``answer`` gives a response for leaves its queue and is
        answered on its connection; the others stay queued, in order."""
        network = Network((), self.responses, self.closed, self.orphaned)
        for conn, queue in self.requests:
            for request in queue:
                response = answer(request)  # type: ignore[arg-type]
                if response is None:
                    network = network.send_request(conn, request)  # type: ignore[arg-type]
                else:
                    network = network.send_response(conn, response)
        return network

    # -- delivering --------------------------------------------------------------------------

    def pop_request(self, conn: str) -> tuple[Network, Request]:
        queues, message = _pop(self.requests, conn)
        orphaned = self.orphaned
        if conn in orphaned and isinstance(message, SyncGroupRequest):
            orphaned = orphaned - {conn}  # the coordinator replaces the parked SyncGroup by this one
        return Network(queues, self.responses, self.closed, orphaned), message  # type: ignore[return-value]

    def pop_response(self, conn: str) -> tuple[Network, Response]:
        queues, message = _pop(self.responses, conn)
        return Network(self.requests, queues, self.closed, self.orphaned), message  # type: ignore[return-value]

    def head_request(self, conn: str) -> Request | None:
        return _head(self.requests, conn)  # type: ignore[return-value]

    def head_response(self, conn: str) -> Response | None:
        return _head(self.responses, conn)  # type: ignore[return-value]

    def responses_for(self, conn: str) -> tuple[Response, ...]:
        """The responses queued for ``conn``, oldest first."""
        for c, q in self.responses:
            if c == conn:
                return q  # type: ignore[return-value]
        return ()

    def request_conns(self) -> Iterator[str]:
        """Connections with a request waiting, in connection-id order."""
        return (c for c, _ in self.requests)

    def response_conns(self) -> Iterator[str]:
        """Connections with a response waiting, in connection-id order."""
        return (c for c, _ in self.responses)

    def empty(self) -> bool:
        return not self.requests and not self.responses

    def in_flight(self) -> int:
        return sum(len(q) for _, q in self.requests) + sum(len(q) for _, q in self.responses)

    # -- connection life ---------------------------------------------------------------------

    def close(self, conn: str, *, drop_requests: bool) -> Network:
        """The incarnation behind ``conn`` is gone: drop the responses queued for it, and its
        queued requests too when ``drop_requests`` (a crash)."""
        requests = tuple(p for p in self.requests if p[0] != conn) if drop_requests else self.requests
        return Network(requests, tuple(p for p in self.responses if p[0] != conn), self.closed | {conn},
                       self.orphaned)

    def requests_for(self, conn: str) -> tuple[Request, ...]:
        """The requests queued on ``conn``, oldest first."""
        for c, q in self.requests:
            if c == conn:
                return q  # type: ignore[return-value]
        return ()

    def disconnect(self, conn: str, failures: tuple[Response, ...], parked_sync: bool) -> Network:
        """The consumer behind ``conn`` drops its connection and opens a new one (:class:`Disconnect`):
        what was queued either way is gone, and ``failures`` -- what the consumer's handlers see for
        each request it had in flight (``DisconnectException``), in the order sent -- take the
        responses' place. A SyncGroup the coordinator holds parked (``parked_sync``) stays parked
        there; its answer will be dropped, and it mutes the new connection no more. A FindCoordinator
        goes to any broker, not over this connection, and stays queued."""
        keep = tuple(r for r in self.requests_for(conn) if isinstance(r, FindCoordinatorRequest))
        requests = tuple(p for p in self.requests if p[0] != conn)
        responses = tuple(p for p in self.responses if p[0] != conn)
        if failures:
            responses = _put(responses, conn, failures[0])
            for response in failures[1:]:
                responses = _put(responses, conn, response)
        network = Network(requests, responses, self.closed, self.orphaned | {conn} if parked_sync else self.orphaned)
        for r in keep:
            network = network.send_request(conn, r)
        return network
