"""A loopback TCP proxy in front of a coordinator: decodes every group request and response, and
holds back the leader's SyncGroup (for the mock cluster).

Every request and response frame of the group protocol that passes is decoded by
:mod:`conformance.group_wire` (kafka-python's protocol package) and kept in ``messages`` /
written to ``wire_path`` (group-wire.jsonl): what the conformance comparison reads. The rest of
this docstring is about the hold.

Why: librdkafka's mock coordinator (rdkafka_mock_cgrp.c) completes a generation the moment the
leader's SyncGroup arrives -- the leader's request carries every member's assignment, so
``assignment_cnt == member_cnt`` and ``rd_kafka_mock_cgrp_classic_sync_done`` answers the parked
SyncGroups, clears the stored assignments and moves the group to Up. A follower whose SyncGroup
comes after that is answered INVALID_REQUEST (Up accepts no SyncGroup). Apache Kafka instead
keeps the assignment and answers a late follower from it (GroupMetadataManager
``classicGroupSyncToStable``). librdkafka followers are usually fast enough; kafka-python's are
not: its follower's SyncGroup regularly arrives in the same millisecond as, or after, the leader's,
and kafka-python raises InvalidRequestError out of ``poll()``.

What the proxy does: it forwards every byte unchanged, but reads the requests a client sends
(Kafka framing: int32 size, then the request header: api key, api version, correlation id,
client id). A SyncGroup (api key 14) that carries assignments is the leader's; the proxy keeps
it, and everything behind it on that connection, until every other member named in those
assignments has had its own SyncGroup for the same group and generation forwarded, plus a short
settle time so the mock reads them first, or until ``hold_timeout_ms`` passes (a member that was
killed never sends one). Responses are never touched, and per-connection request order is kept,
so clients see an ordinary broker that answers the leader a little later.

To be in the path of every connection, not only the bootstrap one, the proxy listens on one port
per broker and the mock is told to advertise those ports (``MockCluster.advertise``). It binds
127.0.0.1 only and connects to 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from conformance import group_wire as wire
from conformance.mock_cluster import MockCluster

LOOPBACK = "127.0.0.1"
SYNC_GROUP = wire.SYNC_GROUP


class ProtocolError(ValueError):
    """A request frame could not be read."""


@dataclass(frozen=True)
class SyncGroupRequest:
    """The parts of a SyncGroupRequest the proxy needs to hold the leader's (SyncGroupRequest.json)."""

    version: int
    group_id: str
    generation_id: int
    member_id: str
    assigned_members: tuple[str, ...]  # empty for a follower

    @property
    def is_leader(self) -> bool:
        return bool(self.assigned_members)


MAX_FRAME_BYTES = 100 * 1024 * 1024  # a size beyond this is a stream out of step, not a frame


async def read_frame(reader: asyncio.StreamReader, what: str) -> tuple[bytes, bytes]:
    """One Kafka frame off the stream: (its int32 size prefix as read, the frame after it), so that
    the proxy forwards the very bytes it read."""
    size_bytes = await reader.readexactly(4)
    (size,) = struct.unpack(">i", size_bytes)
    if size < 0 or size > MAX_FRAME_BYTES:
        raise ProtocolError(f"{what} frame size {size}")
    return size_bytes, await reader.readexactly(size)


def request_header(frame: bytes) -> tuple[int, int, int]:
    """(api key, api version, correlation id) of a request frame (without its size prefix)."""
    head = wire.request_head(frame)
    return head.api_key, head.api_version, head.correlation_id


def parse_sync_group(frame: bytes) -> SyncGroupRequest | None:
    """The SyncGroup in a request frame, or None if the frame is another request."""
    try:
        head, fields = wire.decode_request(frame)
    except wire.WireError as exc:
        raise ProtocolError(str(exc)) from None
    if head.api_key != SYNC_GROUP or fields is None:
        return None
    return SyncGroupRequest(head.api_version, fields["group_id"], fields["generation"], fields["member_id"],
                            tuple(fields["assignments"]))


@dataclass
class ProxyStats:
    """What the proxy did, for reports and tests."""

    connections: int = 0
    sync_groups: int = 0
    leader_syncs_held: int = 0
    released_all_synced: int = 0
    released_timeout: int = 0
    waits_ms: list[int] = field(default_factory=list)


class SyncGroupProxy:
    """The proxy: ``upstreams`` maps a broker id to the loopback port the broker listens on."""

    def __init__(self, upstreams: dict[int, int], *, hold_timeout_ms: int = 1500, settle_ms: int = 50,
                 log_path: str | Path | None = None, wire_path: str | Path | None = None,
                 hold: bool = True, listen_ports: dict[int, int] | None = None) -> None:
        self.upstreams = dict(upstreams)
        # Fixed ports to listen on (broker id -> port), for a broker told beforehand to advertise them.
        self.listen_ports = dict(listen_ports or {})
        self.hold = hold
        # Every decoded group request and response (conformance.group_wire), in the order the proxy
        # saw them; also appended to ``wire_path`` as JSON Lines when given.
        self.messages: list[dict[str, Any]] = []
        self._wire_path = Path(wire_path) if wire_path is not None else None
        self._wire: IO[str] | None = None
        self._conn_ids = itertools.count(1)
        self.hold_timeout_ms = hold_timeout_ms
        self.settle_ms = settle_ms
        self.ports: dict[int, int] = {}
        self.stats = ProxyStats()
        self._log_path = Path(log_path) if log_path is not None else None
        self._log: IO[str] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._servers: list[asyncio.base_events.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._synced: dict[tuple[str, int], set[str]] = {}
        # generation -> member ids the coordinator answered a JoinGroup for: only they will sync. The mock
        # names in the leader's member list also members that never rejoined (docs/embedded-coordinator.md
        # gap 7); waiting for their SyncGroup would hold the leader until the group had moved on.
        self._answered: dict[int, set[str]] = {}
        self._cond: asyncio.Condition | None = None

    # -- life cycle -------------------------------------------------------------------------

    def __enter__(self) -> SyncGroupProxy:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def start(self) -> dict[int, int]:
        """Listen (one port per broker) and return {broker id: proxy port}."""
        if self._log_path is not None:
            self._log = open(self._log_path, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())
        if self._wire_path is not None:
            self._wire = open(self._wire_path, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())
        loop = asyncio.new_event_loop()
        self._loop = loop
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._listen())
            except BaseException as exc:  # reported to start() below
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="groupspec-syncgroup-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(10) or failure:
            self.close()
            raise RuntimeError(f"proxy did not start: {failure[0] if failure else 'timeout'}")
        return dict(self.ports)

    async def _listen(self) -> None:
        self._cond = asyncio.Condition()
        for broker_id, upstream_port in self.upstreams.items():
            server = await asyncio.start_server(self._accept(upstream_port), LOOPBACK,
                                                self.listen_ports.get(broker_id, 0))
            self._servers.append(server)
            self.ports[broker_id] = server.sockets[0].getsockname()[1]
            self._note(f"broker {broker_id}: 127.0.0.1:{self.ports[broker_id]} -> 127.0.0.1:{upstream_port}")

    def close(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            fut = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            with contextlib.suppress(Exception):
                fut.result(10)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
        if loop is not None and not loop.is_running():
            loop.close()
        self._loop = self._thread = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._wire is not None:
            self._wire.close()
            self._wire = None

    async def _shutdown(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for server in self._servers:
            with contextlib.suppress(Exception):
                await server.wait_closed()

    # -- forwarding -------------------------------------------------------------------------

    def _accept(self, upstream_port: int) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], None]:
        def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.ensure_future(self._serve(reader, writer, upstream_port))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        return accepted

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter, port: int) -> None:
        self.stats.connections += 1
        conn = next(self._conn_ids)
        try:
            up_r, up_w = await asyncio.open_connection(LOOPBACK, port)
        except OSError as exc:
            self._note(f"upstream 127.0.0.1:{port} refused: {exc}")
            client_w.close()
            return
        pending = wire.Correlations()
        down = asyncio.ensure_future(self._responses(up_r, client_w, conn, pending))
        try:
            await self._requests(client_r, up_w, conn, pending)
        except (asyncio.IncompleteReadError, ConnectionError, ProtocolError):
            pass
        finally:
            down.cancel()
            for w in (up_w, client_w):
                w.close()
            await asyncio.gather(down, return_exceptions=True)

    async def _responses(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: int,
                         pending: wire.Correlations) -> None:
        """Forward response frames unchanged; decode those that answer a group request."""
        try:
            while True:
                size_bytes, frame = await read_frame(reader, "response")
                self._record_response(conn, pending, frame)
                writer.write(size_bytes + frame)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError, asyncio.IncompleteReadError, ProtocolError):
            pass
        finally:
            writer.close()

    def _record_response(self, conn: int, pending: wire.Correlations, frame: bytes) -> None:
        try:
            correlation = wire.response_correlation(frame)
        except wire.WireError:
            return
        sent = pending.answered(correlation)
        if sent is None:
            return
        api_key, version = sent
        if api_key in wire.HEAD_ONLY_APIS:
            self._record(wire.WireMessage(time.time_ns() // 1_000_000, conn, "response", wire.HEAD_ONLY_APIS[api_key],
                                          version, correlation, None, {}))
            return
        try:
            fields = wire.decode_response(frame, api_key, version)
        except wire.WireError as exc:
            fields = {"undecodable": str(exc)}
        if api_key == wire.JOIN_GROUP and fields.get("error") == "NONE":
            self._answered.setdefault(int(fields["generation"]), set()).add(str(fields["member_id"]))
        self._record(wire.WireMessage(time.time_ns() // 1_000_000, conn, "response", wire.GROUP_APIS[api_key][0],
                                      version, correlation, None, fields))

    def _record(self, message: wire.WireMessage) -> None:
        doc = message.to_json()
        self.messages.append(doc)
        if self._wire is not None:
            self._wire.write(json.dumps(doc, separators=(",", ":")) + "\n")
            self._wire.flush()

    async def _requests(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: int,
                        pending: wire.Correlations) -> None:
        while True:
            size_bytes, frame = await read_frame(reader, "request")
            sync = self._record_request(conn, pending, frame)
            if sync is not None:
                self.stats.sync_groups += 1
                if sync.is_leader and self.hold:
                    await self._hold(sync)
            writer.write(size_bytes + frame)
            await writer.drain()
            if sync is not None and not sync.is_leader:
                await self._synced_member(sync)

    def _record_request(self, conn: int, pending: wire.Correlations, frame: bytes) -> SyncGroupRequest | None:
        """Decode and record a group request; return it when it is a SyncGroup (for the hold)."""
        try:
            head = wire.request_head(frame)
        except wire.WireError as exc:
            self._note(f"unreadable request, forwarded as is: {exc}")
            return None
        if head.api_key in wire.HEAD_ONLY_APIS:
            pending.sent(head)
            self._record(wire.WireMessage(time.time_ns() // 1_000_000, conn, "request", wire.HEAD_ONLY_APIS[head.api_key],
                                          head.api_version, head.correlation_id, head.client_id, {}))
            return None
        if head.api_key not in wire.GROUP_APIS:
            return None
        pending.sent(head)
        name = wire.GROUP_APIS[head.api_key][0]
        try:
            _, fields = wire.decode_request(frame)
        except wire.WireError as exc:
            self._note(f"unreadable {name}, forwarded as is: {exc}")
            fields = {"undecodable": str(exc)}
        assert fields is not None
        self._record(wire.WireMessage(time.time_ns() // 1_000_000, conn, "request", name, head.api_version,
                                      head.correlation_id, head.client_id, fields))
        if head.api_key != SYNC_GROUP or "undecodable" in fields:
            return None
        return SyncGroupRequest(head.api_version, fields["group_id"], fields["generation"], fields["member_id"],
                                tuple(fields["assignments"]))

    async def _synced_member(self, sync: SyncGroupRequest) -> None:
        assert self._cond is not None
        async with self._cond:
            self._synced.setdefault((sync.group_id, sync.generation_id), set()).add(sync.member_id)
            self._cond.notify_all()
        self._note(f"follower SyncGroup forwarded: group={sync.group_id} generation={sync.generation_id} "
                   f"member={sync.member_id}")

    async def _hold(self, sync: SyncGroupRequest) -> None:
        assert self._cond is not None
        key = (sync.group_id, sync.generation_id)
        await asyncio.sleep(0.02)  # the followers' JoinGroup answers, sent with the leader's, pass other tasks
        others = (set(sync.assigned_members) - {sync.member_id}) & self._answered.get(sync.generation_id, set())
        self.stats.leader_syncs_held += 1
        start = time.monotonic()
        self._note(f"leader SyncGroup held: group={sync.group_id} generation={sync.generation_id} "
                   f"leader={sync.member_id} waiting for {sorted(others)}")
        try:
            async with self._cond:
                await asyncio.wait_for(
                    self._cond.wait_for(lambda: others <= self._synced.get(key, set())),
                    self.hold_timeout_ms / 1000)
            await asyncio.sleep(self.settle_ms / 1000)
            self.stats.released_all_synced += 1
            how = "all followers synced"
        except TimeoutError:
            self.stats.released_timeout += 1
            missing = sorted(others - self._synced.get(key, set()))
            how = f"hold timeout, never synced: {missing}"
        waited = int((time.monotonic() - start) * 1000)
        self.stats.waits_ms.append(waited)
        self._note(f"leader SyncGroup released after {waited} ms ({how}): group={sync.group_id} "
                   f"generation={sync.generation_id}")
        # Older generations can no longer complete: forget them.
        for old in [k for k in self._synced if k[0] == sync.group_id and k[1] < sync.generation_id]:
            del self._synced[old]

    def _note(self, message: str) -> None:
        if self._log is not None:
            now = time.time()
            self._log.write(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(now))},"
                            f"{int(now * 1000) % 1000:03d} proxy {message}\n")
            self._log.flush()


@contextlib.contextmanager
def proxied(cluster: MockCluster, *, hold_timeout_ms: int = 1500, log_path: str | Path | None = None,
            wire_path: str | Path | None = None, hold: bool = True) -> Iterator[tuple[SyncGroupProxy, str]]:
    """Put a :class:`SyncGroupProxy` in front of every broker of a running cluster.

    Yields (proxy, bootstrap servers through the proxy). The brokers advertise the proxy's ports
    while the block runs and their own ports again afterwards.
    """
    upstreams = cluster.broker_ports
    proxy = SyncGroupProxy(upstreams, hold_timeout_ms=hold_timeout_ms, log_path=log_path, wire_path=wire_path,
                           hold=hold)
    ports = proxy.start()
    try:
        for broker_id, port in ports.items():
            cluster.advertise(broker_id, port)
        yield proxy, ",".join(f"{LOOPBACK}:{ports[b]}" for b in sorted(ports))
    finally:
        if cluster.running:
            for broker_id, port in upstreams.items():
                cluster.advertise(broker_id, port)
        proxy.close()
