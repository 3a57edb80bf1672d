"""The embedded coordinator: librdkafka's mock cluster, created inside this process through ctypes.

librdkafka ships a small in-process imitation of a Kafka cluster (``src/rdkafka_mock.c``,
``rdkafka_mock_cgrp.c``, ``rdkafka_mock_handlers.c``; API in ``src/rdkafka_mock.h``). Each mock
broker listens on a loopback TCP port (``INADDR_LOOPBACK``, an ephemeral port) and speaks the
Kafka wire protocol well enough for real clients: Metadata, Produce, Fetch, ListOffsets,
FindCoordinator, OffsetCommit / OffsetFetch and the classic group protocol (JoinGroup,
SyncGroup, Heartbeat, LeaveGroup), plus KIP-848's ConsumerGroupHeartbeat. The confluent-kafka
wheel carries a librdkafka build that exports the ``rd_kafka_mock_*`` functions, so no broker,
JVM or download is needed: this module loads that very library with :mod:`ctypes`.

How it starts (``rd_kafka_mock_cluster_new``): the mock needs an ``rd_kafka_t`` to own it
("required for internal book keeping"), so :class:`MockCluster` first makes a producer handle
with ``rd_kafka_new`` (no bootstrap servers: it never talks to anything), then asks for
``brokers`` mock brokers with ids 1..N. The cluster runs on its own librdkafka thread and lives
until ``rd_kafka_mock_cluster_destroy``; the owning handle is destroyed after it. The context
manager always does both, in that order, also when the body raises; an ``atexit`` hook catches
clusters a caller forgot to close (a mock thread that outlives the interpreter crashes it).

What the mock's classic group coordinator is (read from ``rdkafka_mock_cgrp.c``, v2.12.1), and
where it differs from Apache Kafka's (docs/embedded-coordinator.md has the observed details):

- States Empty, Joining, Syncing, Rebalancing, Up (not Kafka's five). A join from Empty waits
  ``group.initial.rebalance.delay.ms`` (3000 by default; :meth:`set_initial_rebalance_delay_ms`);
  a later rebalance always waits ``session.timeout.ms - 1000`` (of the most recent joiner),
  whether or not every member has already rejoined: there is no "all members joined" shortcut.
- Member ids are made up by the mock (``"%p"`` of the member struct); there is no KIP-394
  MEMBER_ID_REQUIRED round trip, and no static membership: ``group.instance.id`` is stored and
  used only to pick the leader, a restarted instance is simply a new member.
- The protocol is "the leader's first protocol", not a vote.
- SyncGroup: responses are held until every member has an assignment; the leader's SyncGroup
  completes the round at once, and a follower whose SyncGroup arrives after it gets
  INVALID_REQUEST (the group is Up, where SyncGroup is not accepted). :mod:`conformance.proxy`
  works around that for clients that send their SyncGroup late.

Only loopback: the mock binds 127.0.0.1; :meth:`MockCluster.advertise` only ever takes a port.
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import glob
import importlib.util
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

# rd_kafka_type_t (rdkafka.h)
_RD_KAFKA_PRODUCER = 0
# rd_kafka_conf_res_t (rdkafka.h)
_RD_KAFKA_CONF_OK = 0

ENV_LIBRDKAFKA = "GROUPSPEC_LIBRDKAFKA"
"""Environment variable naming a librdkafka shared library to use instead of the wheel's."""


class MockClusterError(RuntimeError):
    """The mock cluster could not be created or refused an operation."""


@dataclass(frozen=True)
class LibraryInfo:
    """Which librdkafka the mock cluster runs on."""

    path: str
    version: str  # rd_kafka_version_str(), e.g. "2.12.1"
    version_int: int  # rd_kafka_version(), e.g. 0x020c01ff


def find_librdkafka() -> str:
    """Path of the librdkafka shared library bundled with the installed confluent-kafka wheel.

    Order: ``$GROUPSPEC_LIBRDKAFKA`` (an error if it names no file); the wheel's vendored copy (``confluent_kafka.libs/`` on
    Linux wheels as auditwheel names it, ``.dylibs/`` on macOS); a system ``librdkafka``.
    Raises :class:`MockClusterError` naming every place it looked.
    """
    looked: list[str] = []
    override = os.environ.get(ENV_LIBRDKAFKA)
    if override:
        if os.path.isfile(override):
            return override
        raise MockClusterError(f"${ENV_LIBRDKAFKA}={override}: no such file")
    spec = importlib.util.find_spec("confluent_kafka")
    if spec is not None and spec.submodule_search_locations:
        pkg_dir = Path(next(iter(spec.submodule_search_locations)))
        patterns = [
            str(pkg_dir.parent / "confluent_kafka.libs" / "librdkafka*.so*"),
            str(pkg_dir / ".dylibs" / "librdkafka*.dylib"),
            str(pkg_dir.parent / "confluent_kafka.libs" / "librdkafka*.dll"),
        ]
        for pattern in patterns:
            hits = sorted(glob.glob(pattern))
            if hits:
                return hits[0]
            looked.append(pattern)
    else:
        looked.append("the confluent_kafka package (not installed)")
    system = ctypes.util.find_library("rdkafka")
    if system:
        return system
    looked.append("a system librdkafka (ctypes.util.find_library)")
    raise MockClusterError("librdkafka not found; looked in: " + "; ".join(looked))


_LIB_LOCK = threading.Lock()
_LIB: ctypes.CDLL | None = None


def _declare(lib: ctypes.CDLL) -> None:
    """Argument and result types of the functions used (rdkafka.h, rdkafka_mock.h, v2.12)."""
    vp, cp, i32, i16, ci = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_int16, ctypes.c_int
    sigs: dict[str, tuple[Any, list[Any]]] = {
        "rd_kafka_version": (ci, []),
        "rd_kafka_version_str": (cp, []),
        "rd_kafka_conf_new": (vp, []),
        "rd_kafka_conf_destroy": (None, [vp]),
        "rd_kafka_conf_set": (ci, [vp, cp, cp, cp, ctypes.c_size_t]),
        "rd_kafka_conf_set_log_cb": (None, [vp, vp]),
        "rd_kafka_new": (vp, [ci, vp, cp, ctypes.c_size_t]),
        "rd_kafka_destroy": (None, [vp]),
        "rd_kafka_name": (cp, [vp]),
        "rd_kafka_err2str": (cp, [ci]),
        "rd_kafka_mock_cluster_new": (vp, [vp, ci]),
        "rd_kafka_mock_cluster_destroy": (None, [vp]),
        "rd_kafka_mock_cluster_bootstraps": (cp, [vp]),
        "rd_kafka_mock_topic_create": (ci, [vp, cp, ci, ci]),
        "rd_kafka_mock_broker_set_down": (ci, [vp, i32]),
        "rd_kafka_mock_broker_set_up": (ci, [vp, i32]),
        "rd_kafka_mock_broker_set_rtt": (ci, [vp, i32, ci]),
        "rd_kafka_mock_broker_set_host_port": (None, [vp, i32, cp, ci]),
        "rd_kafka_mock_coordinator_set": (ci, [vp, cp, cp, i32]),
        "rd_kafka_mock_group_initial_rebalance_delay_ms": (None, [vp, i32]),
        "rd_kafka_mock_set_apiversion": (ci, [vp, i16, i16, i16]),
        # KIP-848 (rdkafka_mock.h, 2.6+): the consumer protocol's session and heartbeat are the broker's
        "rd_kafka_mock_set_group_consumer_session_timeout_ms": (None, [vp, ci]),
        "rd_kafka_mock_set_group_consumer_heartbeat_interval_ms": (None, [vp, ci]),
    }
    for name, (restype, argtypes) in sigs.items():
        try:
            fn = getattr(lib, name)
        except AttributeError as exc:
            raise MockClusterError(
                f"{lib._name}: does not export {name}; the mock cluster needs librdkafka >= 2.x "
                "built with the mock API (the confluent-kafka wheels are)"
            ) from exc
        fn.restype = restype
        fn.argtypes = argtypes


def load_librdkafka() -> ctypes.CDLL:
    """The librdkafka library (loaded once per process; the same copy confluent_kafka uses)."""
    global _LIB
    with _LIB_LOCK:
        if _LIB is None:
            path = find_librdkafka()
            try:
                lib = ctypes.CDLL(path)
            except OSError as exc:
                raise MockClusterError(f"{path}: cannot load: {exc}") from exc
            _declare(lib)
            _LIB = lib
        return _LIB


def library_info() -> LibraryInfo:
    """Path and version of the librdkafka the mock cluster runs on."""
    lib = load_librdkafka()
    raw = lib.rd_kafka_version_str()
    return LibraryInfo(path=lib._name, version=raw.decode() if raw else "?", version_int=lib.rd_kafka_version())


# void (*log_cb)(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
_LOG_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p)

_OPEN: set[MockCluster] = set()
_OPEN_LOCK = threading.Lock()


def _close_all_at_exit() -> None:
    with _OPEN_LOCK:
        clusters = list(_OPEN)
    for cluster in clusters:
        cluster.close()


atexit.register(_close_all_at_exit)


class MockCluster:
    """librdkafka's mock cluster as a context manager.

    >>> with MockCluster(brokers=1, topics={"orders": 6}) as cluster:   # doctest: +SKIP
    ...     consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, ...})

    ``initial_rebalance_delay_ms`` sets the mock's ``group.initial.rebalance.delay.ms`` (the
    mock's default is 3000, as Kafka's). ``log_path``: if given, the mock's own debug log
    (``debug=mock``: group state changes, leader election with the generation, joins, leaves,
    session timeouts) is written there in librdkafka's log line format. Every method raises
    :class:`MockClusterError` on an error code from librdkafka.
    """

    def __init__(
        self,
        brokers: int = 1,
        topics: Mapping[str, int] | None = None,
        *,
        initial_rebalance_delay_ms: int | None = None,
        log_path: str | os.PathLike[str] | None = None,
        debug: str = "mock",
    ) -> None:
        if brokers < 1:
            raise ValueError(f"brokers must be >= 1, got {brokers}")
        self._brokers = brokers
        self._topics = dict(topics if topics is not None else {"orders": 6})
        self._initial_delay = initial_rebalance_delay_ms
        self._log_path = Path(log_path) if log_path is not None else None
        self._debug = debug
        self._lib: ctypes.CDLL | None = None
        self._rk: int | None = None
        self._mcluster: int | None = None
        self._log_file: IO[str] | None = None
        self._log_lock = threading.Lock()
        self._log_cb: Any = None  # keeps the ctypes callback alive as long as the handle
        self._bootstraps = ""
        self._lock = threading.Lock()

    # -- life cycle -------------------------------------------------------------------------

    def __enter__(self) -> MockCluster:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> None:
        """Create the owning handle and the cluster, then the topics. Idempotent failure cleanup."""
        with self._lock:
            if self._mcluster is not None:
                return
            try:
                self._start_locked()
            except BaseException:
                self._close_locked()
                raise
        with _OPEN_LOCK:
            _OPEN.add(self)

    def _start_locked(self) -> None:
        lib = load_librdkafka()
        self._lib = lib
        conf = lib.rd_kafka_conf_new()
        if not conf:
            raise MockClusterError("rd_kafka_conf_new failed")
        errstr = ctypes.create_string_buffer(512)
        settings = {"client.id": "groupspec-mock-owner", "log.connection.close": "false"}
        if self._log_path is None:
            # The owner has no bootstrap.servers, which librdkafka notes (level 5) on stderr.
            settings["log_level"] = "4"
        else:
            settings["debug"] = self._debug
            self._log_file = open(self._log_path, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())
            self._log_cb = _LOG_CB(self._write_log)
            lib.rd_kafka_conf_set_log_cb(conf, ctypes.cast(self._log_cb, ctypes.c_void_p))
        for key, value in settings.items():
            if lib.rd_kafka_conf_set(conf, key.encode(), value.encode(), errstr, len(errstr)) != _RD_KAFKA_CONF_OK:
                lib.rd_kafka_conf_destroy(conf)
                raise MockClusterError(f"rd_kafka_conf_set({key}={value}): {errstr.value.decode()}")
        # rd_kafka_new takes ownership of conf on success only.
        rk = lib.rd_kafka_new(_RD_KAFKA_PRODUCER, conf, errstr, len(errstr))
        if not rk:
            lib.rd_kafka_conf_destroy(conf)
            raise MockClusterError(f"rd_kafka_new: {errstr.value.decode()}")
        self._rk = rk
        mcluster = lib.rd_kafka_mock_cluster_new(rk, self._brokers)
        if not mcluster:
            raise MockClusterError(f"rd_kafka_mock_cluster_new(brokers={self._brokers}) failed")
        self._mcluster = mcluster
        self._bootstraps = (lib.rd_kafka_mock_cluster_bootstraps(mcluster) or b"").decode()
        if self._initial_delay is not None:
            lib.rd_kafka_mock_group_initial_rebalance_delay_ms(mcluster, self._initial_delay)
        for name, partitions in self._topics.items():
            self._create_topic_locked(name, partitions, 1)

    def close(self) -> None:
        """Destroy the cluster, then its owning handle. Safe to call twice."""
        with self._lock:
            self._close_locked()
        with _OPEN_LOCK:
            _OPEN.discard(self)

    def _close_locked(self) -> None:
        lib = self._lib
        if lib is not None:
            if self._mcluster is not None:
                lib.rd_kafka_mock_cluster_destroy(self._mcluster)
                self._mcluster = None
            if self._rk is not None:
                lib.rd_kafka_destroy(self._rk)
                self._rk = None
        with self._log_lock:
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None

    @property
    def running(self) -> bool:
        return self._mcluster is not None

    # -- what clients need ------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """``host:port[,host:port...]`` of the mock brokers (127.0.0.1, ephemeral ports)."""
        self._require()
        return self._bootstraps

    @property
    def broker_ports(self) -> dict[int, int]:
        """The port each broker id listens on (ids 1..N in bootstrap order)."""
        self._require()
        return {i + 1: int(hp.rsplit(":", 1)[1]) for i, hp in enumerate(self._bootstraps.split(","))}

    @property
    def topics(self) -> dict[str, int]:
        return dict(self._topics)

    @property
    def library(self) -> LibraryInfo:
        return library_info()

    # -- operations -------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1) -> None:
        """``rd_kafka_mock_topic_create``: the mock has no CreateTopics API, only this."""
        with self._lock:
            self._create_topic_locked(name, partitions, replication_factor)

    def _create_topic_locked(self, name: str, partitions: int, replication_factor: int) -> None:
        if partitions < 1:
            raise ValueError(f"topic {name!r}: partitions must be >= 1, got {partitions}")
        lib, mc = self._handles()
        self._check(lib.rd_kafka_mock_topic_create(mc, name.encode(), partitions, replication_factor),
                    f"create topic {name!r}")
        self._topics[name] = partitions

    def set_broker_down(self, broker_id: int) -> None:
        """Disconnect the broker's clients and refuse new connections (no leader change)."""
        lib, mc = self._handles()
        self._check(lib.rd_kafka_mock_broker_set_down(mc, broker_id), f"broker {broker_id} down")

    def set_broker_up(self, broker_id: int) -> None:
        """Accept connections on the broker again."""
        lib, mc = self._handles()
        self._check(lib.rd_kafka_mock_broker_set_up(mc, broker_id), f"broker {broker_id} up")

    def set_broker_rtt(self, broker_id: int, rtt_ms: int) -> None:
        """Delay every response of a broker by ``rtt_ms`` (-1: all brokers)."""
        lib, mc = self._handles()
        self._check(lib.rd_kafka_mock_broker_set_rtt(mc, broker_id, rtt_ms), f"broker {broker_id} rtt")

    def set_coordinator(self, group: str, broker_id: int) -> None:
        """Move the group's coordinator to ``broker_id`` (``rd_kafka_mock_coordinator_set``).

        The mock keeps no group state per broker: the group stays as it is, and the old
        coordinator answers NOT_COORDINATOR from now on.
        """
        lib, mc = self._handles()
        self._check(lib.rd_kafka_mock_coordinator_set(mc, b"group", group.encode(), broker_id),
                    f"coordinator of {group!r} -> {broker_id}")

    def set_initial_rebalance_delay_ms(self, delay_ms: int) -> None:
        """``group.initial.rebalance.delay.ms`` for groups that start from Empty from now on."""
        lib, mc = self._handles()
        lib.rd_kafka_mock_group_initial_rebalance_delay_ms(mc, delay_ms)

    def set_consumer_group_timeouts(self, session_timeout_ms: int, heartbeat_interval_ms: int) -> None:
        """KIP-848 groups (``group.protocol=consumer``): group.consumer.session.timeout.ms and
        group.consumer.heartbeat.interval.ms, which that protocol sets on the broker, not the client
        (the mock's defaults are 30000 / 3000, rdkafka_mock.c ``rd_kafka_mock_cluster_new``)."""
        lib, mc = self._handles()
        lib.rd_kafka_mock_set_group_consumer_session_timeout_ms(mc, session_timeout_ms)
        lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(mc, heartbeat_interval_ms)

    def set_api_version(self, api_key: int, min_version: int, max_version: int) -> None:
        """Restrict the versions of one API the brokers announce (-1, -1: disable it)."""
        lib, mc = self._handles()
        self._check(lib.rd_kafka_mock_set_apiversion(mc, api_key, min_version, max_version),
                    f"api {api_key} versions {min_version}..{max_version}")

    def advertise(self, broker_id: int, port: int) -> None:
        """Make Metadata / FindCoordinator name ``127.0.0.1:port`` for this broker.

        The broker keeps listening where it was; this is how a proxy in front of it is put in
        the path of every connection, not only the bootstrap one.
        """
        lib, mc = self._handles()
        lib.rd_kafka_mock_broker_set_host_port(mc, broker_id, b"127.0.0.1", port)

    # -- helpers ----------------------------------------------------------------------------

    def _require(self) -> None:
        if self._mcluster is None:
            raise MockClusterError("the mock cluster is not running (use it inside `with MockCluster(...)`)")

    def _handles(self) -> tuple[ctypes.CDLL, int]:
        self._require()
        assert self._lib is not None and self._mcluster is not None
        return self._lib, self._mcluster

    def _check(self, err: int, what: str) -> None:
        if err:
            assert self._lib is not None
            msg = self._lib.rd_kafka_err2str(err)
            raise MockClusterError(f"{what}: {msg.decode() if msg else err}")

    def _write_log(self, rk: int, level: int, fac: bytes | None, buf: bytes | None) -> None:
        """librdkafka's log_cb, called on librdkafka's threads: one line in its own format
        (``%LEVEL|SECONDS.MILLIS|FACILITY|NAME| message``, as rd_kafka_log_print writes)."""
        now = time.time()
        lib = self._lib
        name = lib.rd_kafka_name(rk) if lib is not None and rk else None
        line = (
            f"%{level}|{int(now)}.{int(now * 1000) % 1000:03d}|{(fac or b'').decode(errors='replace')}|"
            f"{(name or b'?').decode(errors='replace')}| {(buf or b'').decode(errors='replace')}\n"
        )
        with self._log_lock:
            if self._log_file is not None:
                self._log_file.write(line)
                self._log_file.flush()
