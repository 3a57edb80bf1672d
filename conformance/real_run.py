"""One scenario (docs/scenarios.md) run by real clients against a real coordinator.

The scenario file is the one ``groupspec simulate`` runs through the model; here its steps happen to
real consumer processes (:mod:`conformance.drivers`) against librdkafka's mock cluster, with the
proxy (:mod:`conformance.proxy`) decoding every group request and response on the way
(``group-wire.jsonl``). Which client runs which member is not in the scenario (the format says what
happens, not how a client does it): :func:`member_clients` deals the ``--clients`` list out to the
members in the order they first join, so (scenario, clients) names a run and replays it.

**Time.** A real run does not follow the scenario's milliseconds: the comparison is about what the
protocol determines, not timing (docs/conformance.md). Steps happen in the scenario's order; after
each the run waits until the group is *quiet* (no JoinGroup / SyncGroup for a while, every member's
request answered) and, for steps whose effect is a timeout, until that timeout has passed. Timeouts
are the scenario's divided by :data:`TIME_SCALE` (a 6 s session becomes 1.5 s, at least
:data:`MIN_SESSION_MS`), so that a rebalance on the mock takes a fraction of a second; generated
scenarios space their steps far enough apart that the model, too, settles between steps. A stall's or
a freeze's length is mapped so that it falls on the same side of the session and poll timeouts as in
the scenario, with margins the mock needs (:meth:`RealRun.scaled`).

**What a step does:**

| step | real |
|---|---|
| join | start a driver process (client, assignors, topics, instance id, commit policy) |
| crash | SIGKILL |
| restart | SIGKILL if running, then start again with the same configuration and latest topics |
| leave | SIGTERM: the driver closes the consumer (LeaveGroup) |
| stall | the driver stops polling for ``for_ms`` (scaled); its heartbeat goes on |
| freeze | SIGSTOP the whole process (heartbeat thread included), SIGCONT ``for_ms`` (scaled) later |
| subscribe | the driver calls subscribe(topics) |
| add_partitions | a new topic: created on the mock; more partitions for an existing one: unsupported on the mock |
| produce | a producer appends records (``every_ms``: only the first batch; later firings are unsupported) |
| move_coordinator | the mock's coordinator for the group moves to the next broker |
| fail_coordinator | the coordinator's broker goes down for ``for_ms`` (scaled), then up |

**Protocols.** ``protocol="classic"`` (JoinGroup / SyncGroup, the default) or ``"consumer"``: KIP-848's
consumer protocol (``group.protocol=consumer``: ConsumerGroupHeartbeat, the assignment computed by the
coordinator, member epochs), which librdkafka and the Java consumer speak and both coordinators serve
(conformance/kip848.py says what is judged there). The scenario is the same file; its assignor is the
coordinator's (``group.remote.assignor``), the session and heartbeat are the coordinator's (set on the mock
with ``rd_kafka_mock_set_group_consumer_session_timeout_ms``, on Kafka with
``group.consumer.session.timeout.ms``), and the run settles on the members' traces, not the wire (the
group's requests are heartbeats all the time): every partition of the live members' topics owned
exactly once, unchanged for :data:`QUIET_MS`.

Steps a (client, coordinator) pair cannot do are listed by :func:`unsupported` before the run, with
why; a scenario with any is not run and its verdict is ``unsupported``.

**Coordinators.** ``cluster="mock"``: librdkafka's mock cluster (three brokers unless the scenario says
otherwise), the proxy holding the leader's SyncGroup (mock gap 1). ``cluster="kafka"``: an Apache Kafka
4.1.1 broker (:mod:`conformance.kafka`, one KRaft node) that advertises the proxy's port; the Java
consumer (``java``) is the reference client there.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.drivers.process import (
    ConsumerProcess,
    DriverConfig,
    Fleet,
    WarmPool,
    owned_after,
    read_events,
    shared_once,
)
from conformance.mock_cluster import MockCluster
from conformance.proxy import SyncGroupProxy, proxied
from model.types import TopicPartition

TIME_SCALE = 4
MIN_SESSION_MS = 2000
QUIET_MS = 600  # no JoinGroup / SyncGroup for this long (real ms): the group has settled
SETTLE_DEADLINE_S = 25.0
# A client that has not exited this long after SIGTERM (a clean close) is hung: it is killed and the
# run is an error, never a divergence (the comparison would blame the client for the harness's kill).
STOP_DEADLINE_S = 10.0
# The mock expires members on a once-a-second sweep (rdkafka_mock_cgrp.c, the session timer), so a
# real member is surely expired only a heartbeat plus a second after its session: a freeze past the
# session lasts session + FREEZE_PAST_MS at least, and ends FREEZE_BEFORE_POLL_MS before max.poll
# (FREEZE_ROOM_MS between the two); one within the session ends SESSION_MARGIN_MS before it.
FREEZE_PAST_MS = 1300
FREEZE_BEFORE_POLL_MS = 300
FREEZE_ROOM_MS = 2000
SESSION_MARGIN_MS = 700

# What each client offers on the classic protocol (its own assignor classes; checked in
# tests/conformance/test_real_run.py against the installed libraries).
CLIENT_ASSIGNORS: dict[str, tuple[str, ...]] = {
    # librdkafka: range, roundrobin, cooperative-sticky (rdkafka_assignor.c); no eager sticky.
    "confluent-kafka": ("range", "roundrobin", "cooperative-sticky"),
    # kafka-python 3.0: kafka/coordinator/assignors/{range,roundrobin,sticky,cooperative_sticky}.py
    "kafka-python": ("range", "roundrobin", "sticky", "cooperative-sticky"),
    # aiokafka 0.14: aiokafka/coordinator/assignors/{range,roundrobin,sticky}; no KIP-429.
    "aiokafka": ("range", "roundrobin", "sticky"),
    # The reference: kafka-clients 4.1.1 through conformance/java/consumer (ConsumerDriver.java).
    "java": ("range", "roundrobin", "sticky", "cooperative-sticky"),
}
CLUSTERS = ("mock", "kafka")
PROTOCOLS = ("classic", "consumer")
# The clients that speak KIP-848's consumer protocol (group.protocol=consumer): librdkafka 2.4+
# (rdkafka_cgrp.c rd_kafka_cgrp_consumer_*) and kafka-clients' AsyncKafkaConsumer. kafka-python 3.0.12
# and aiokafka 0.14.0 have only the classic protocol (no ConsumerGroupHeartbeat request in either).
CONSUMER_PROTOCOL_CLIENTS = ("confluent-kafka", "java")
# The consumer protocol's heartbeat interval (the coordinator's, sent in every heartbeat response):
# Kafka's floor in this harness (conformance/kafka/broker.py group.consumer.min.heartbeat.interval.ms).
CONSUMER_HEARTBEAT_MS = 500
CLIENTS = tuple(CLIENT_ASSIGNORS)
JAVA = "java"
# Commit policies the drivers implement (docs/scenarios.md ``commit`` / ``enable_auto_commit``).
COMMIT_POLICIES = ("auto", "sync", "none")


def offered_assignors(client: str) -> tuple[str, ...]:
    """The assignors ``client`` offers; for a release (``NAME==VERSION``), what its driver found in it."""
    if client in CLIENT_ASSIGNORS:
        return CLIENT_ASSIGNORS[client]
    from conformance.clients import made

    return made(client).assignors


def member_clients(doc: Mapping[str, Any], clients: Sequence[str]) -> dict[str, str]:
    """Members in the order they first join, dealt ``clients`` round-robin."""
    out: dict[str, str] = {}
    for step in doc.get("steps", ()):
        if step.get("do") == "join" and step["member"] not in out:
            out[step["member"]] = clients[len(out) % len(clients)]
    return out


def commit_policy(doc: Mapping[str, Any]) -> str | None:
    """The drivers' commit policy for a scenario's config, or None if they have none for it."""
    config = doc.get("config", {})
    if config.get("enable_auto_commit", True):
        return "auto"
    if config.get("commit_on_revoke") or config.get("processing", "sync") != "sync":
        return None
    policy = config.get("commit", "none")
    return policy if policy in COMMIT_POLICIES else None


def unsupported(doc: Mapping[str, Any], clients: Mapping[str, str], cluster: str = "mock",
                protocol: str = "classic") -> list[str]:
    """Why this scenario cannot run with these clients on this coordinator and protocol (empty: it can)."""
    why: list[str] = []
    if protocol == "consumer":
        from conformance.clients import base_name

        for client in sorted({c for c in clients.values() if base_name(c) not in CONSUMER_PROTOCOL_CLIENTS}):
            why.append(f"{client} has no KIP-848 consumer protocol (group.protocol=consumer): it speaks only the "
                       "classic JoinGroup / SyncGroup protocol")
    if commit_policy(doc) is None:
        why.append("the drivers implement auto-commit, commitSync after each poll, or no commit; not "
                   "commitAsync, commit_on_revoke or asynchronous processing")
    topics = dict(doc.get("topics", {}))
    for i, step in enumerate(doc.get("steps", ())):
        do = step.get("do")
        if do == "join":
            client = clients[step["member"]]
            offered = offered_assignors(client)
            missing = [a for a in step.get("assignors", ["range", "cooperative-sticky"]) if a not in offered]
            if protocol == "consumer":
                # The coordinator assigns: the mock computes range only (rdkafka_mock_cgrp.c
                # rd_kafka_mock_cgrp_consumer_target_assignment_calculate_range); Kafka offers uniform and
                # range (group.consumer.assignors). One member asks for one (group.remote.assignor).
                served = ("range",) if cluster == "mock" else ("uniform", "range")
                asked = step.get("assignors", ["range"])
                missing = [] if len(asked) == 1 and asked[0] in served else [",".join(asked)]
                if missing:
                    why.append(f"steps[{i}]: the consumer protocol's assignor is the coordinator's, one per member: "
                               f"the {cluster} coordinator serves {', '.join(served)}")
                    missing = []
            if missing:
                why.append(f"steps[{i}]: {client} offers no {', '.join(missing)} assignor on the classic "
                           f"protocol (it offers {', '.join(offered)})")
            if step.get("instance_id") is not None and cluster == "mock":
                why.append(f"steps[{i}]: static membership (instance_id): the mock cluster has none "
                           "(docs/embedded-coordinator.md)")
        elif do == "add_partitions":
            if step["topic"] in topics and cluster == "mock":
                why.append(f"steps[{i}]: more partitions for an existing topic: the mock cluster has no "
                           "CreatePartitions and rd_kafka_mock_topic_create refuses an existing topic")
            topics[step["topic"]] = step["count"]
        elif do == "produce" and step.get("every_ms") is not None:
            why.append(f"steps[{i}]: periodic producers (every_ms) are not run against real clients yet")
        elif do in ("move_coordinator", "fail_coordinator") and cluster == "kafka":
            why.append(f"steps[{i}]: {do}: the Apache Kafka harness is one KRaft node, so the coordinator "
                       "cannot move to another broker")
        elif do == "subscribe" and clients.get(step["member"]) == JAVA:
            why.append(f"steps[{i}]: subscribe: the Java driver takes its topics at start only")
        if do == "join" and clients[step["member"]] == JAVA and len(step.get("assignors", ["range", "x"])) > 1:
            why.append(f"steps[{i}]: the Java driver takes one assignor")
    if JAVA in clients.values() and commit_policy(doc) == "none":
        why.append("the Java driver commits after each poll or auto-commits; it has no 'no commit' mode")
    return why


@dataclass
class RealRunResult:
    out_dir: Path
    clients: dict[str, str]  # member -> client
    traces: list[Path] = field(default_factory=list)
    wire: list[dict[str, Any]] = field(default_factory=list)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    topics: list[tuple[int, dict[str, int]]] = field(default_factory=list)  # (real ms, partition counts)
    failed_starts: list[str] = field(default_factory=list)
    coordinator_log: Path | None = None  # the mock's log or the broker's server.log
    error: str | None = None
    seconds: float = 0.0
    # Where the wall time went (seconds): setup, start (a member's process until its first JoinGroup),
    # step (what a step itself takes: a stall, an outage, a clean close), wait (a timeout the step's
    # effect needs), settle (until the group is quiet), stop (closing the members at the end), teardown.
    phases: dict[str, float] = field(default_factory=dict)

    def add_phase(self, name: str, seconds: float) -> None:
        self.phases[name] = round(self.phases.get(name, 0.0) + seconds, 3)


class Cancelled(BaseException):
    """The campaign was interrupted (Ctrl-C): the run stops where it is and its processes are killed.
    A BaseException so that no ``except Exception`` on the way turns it into a run's error."""


class RealRun:
    """Run ``doc`` with ``clients`` (member -> client) into ``out_dir``; ``with RealRun(...) as r: r.run()``."""

    def __init__(self, doc: Mapping[str, Any], clients: Mapping[str, str], out_dir: Path,
                 settle_deadline_s: float = SETTLE_DEADLINE_S, cluster: str = "mock",
                 pool: WarmPool | None = None, cancel: threading.Event | None = None,
                 protocol: str = "classic") -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol {protocol!r}: one of {', '.join(PROTOCOLS)}")
        self.doc = doc
        self.protocol = protocol
        self.cancel = cancel or threading.Event()
        self.cluster_kind = cluster
        self.broker: Any = None  # conformance.kafka.KafkaBroker with --cluster kafka
        self.clients = dict(clients)
        self.out_dir = Path(out_dir)
        self.settle_deadline_s = settle_deadline_s
        config = doc.get("config", {})
        self.group = str(config.get("group_id", "group"))
        self.brokers = int(config.get("brokers", 3))
        # The mock ends every join phase after the first session.timeout.ms - 1000 ms, however long the
        # rebalance timeout (docs/embedded-coordinator.md gap 6; findings.json mock-join-window): members
        # must hear of the rebalance (a heartbeat) and rejoin within that, or they are left out and lose
        # their partitions. Hence a 2 s session (a 1 s window) and fifteen heartbeats per session. A 1.5 s
        # session (0.5 s window) halves the rebalance time but, on a loaded machine, leaves cooperative
        # members out of generations (they rejoin 0.3-0.5 s after the heartbeat that tells them).
        self.session_ms = max(int(config.get("session_timeout_ms", 45000)) // TIME_SCALE, MIN_SESSION_MS)
        self.heartbeat_ms = max(min(int(config.get("heartbeat_interval_ms", 3000)) // TIME_SCALE,
                                    self.session_ms // 15), 50)
        max_poll = config.get("max_poll_interval_ms", config.get("rebalance_timeout_ms", 300000))
        self.model_session_ms = int(config.get("session_timeout_ms", 45000))
        self.model_max_poll_ms = int(max_poll)
        # Room between the two timeouts for a freeze past the session but not past max.poll (scaled).
        self.max_poll_ms = max(int(max_poll) // TIME_SCALE, self.session_ms + FREEZE_ROOM_MS)
        self.initial_delay_ms = int(config.get("initial_rebalance_delay_ms", 3000)) // TIME_SCALE
        self.commit = commit_policy(doc) or "sync"
        self.topics: dict[str, int] = dict(doc["topics"])
        self.result = RealRunResult(self.out_dir, dict(self.clients))
        self.processes: dict[str, ConsumerProcess] = {}
        self.incarnation: dict[str, int] = {}
        self.member_topics: dict[str, tuple[str, ...]] = {}
        self.member_join: dict[str, dict[str, Any]] = {}
        self.coordinator = 1
        self.cluster: MockCluster | None = None
        self.proxy: SyncGroupProxy | None = None
        self.bootstrap = ""
        self._stack = contextlib.ExitStack()
        self._fleet = Fleet(stop_timeout_s=STOP_DEADLINE_S, pool=pool)
        self._producer: Any = None
        self._start = time.monotonic()

    # -- life cycle ---------------------------------------------------------------------------

    def __enter__(self) -> RealRun:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        with self._phase("setup"):
            return self._enter()

    def _enter(self) -> RealRun:
        if self.cluster_kind == "kafka":
            try:
                self._enter_kafka()
            except BaseException:
                self._stack.close()
                raise
            self.result.topics.append((self._now(), dict(self.topics)))
            return self
        try:
            self.cluster = self._stack.enter_context(MockCluster(
                brokers=max(self.brokers, 1), topics=self.topics, initial_rebalance_delay_ms=self.initial_delay_ms,
                log_path=self.out_dir / "mock-coordinator.log"))
            self.cluster.set_coordinator(self.group, self.coordinator)
            if self.protocol == "consumer":
                self.cluster.set_consumer_group_timeouts(self.session_ms, CONSUMER_HEARTBEAT_MS)
            self.result.coordinator_log = self.out_dir / "mock-coordinator.log"
            self.proxy, self.bootstrap = self._stack.enter_context(proxied(
                self.cluster, log_path=self.out_dir / "proxy.log", wire_path=self.out_dir / "group-wire.jsonl"))
            self._stack.enter_context(self._fleet)
        except BaseException:
            self._stack.close()
            raise
        self.result.topics.append((self._now(), dict(self.topics)))
        return self

    def _enter_kafka(self) -> None:
        """An Apache Kafka broker (conformance.kafka, one KRaft node) behind the proxy: the broker
        advertises the proxy's port, so every client connection, the coordinator's included, passes
        through it and is decoded. No SyncGroup is held: Kafka answers a late follower itself."""
        from conformance.kafka import KafkaBroker
        from conformance.kafka.broker import free_port

        broker_port, controller_port, proxy_port = free_port(), free_port(), free_port()
        self.proxy = SyncGroupProxy({1: broker_port}, listen_ports={1: proxy_port}, hold=False,
                                    log_path=self.out_dir / "proxy.log", wire_path=self.out_dir / "group-wire.jsonl")
        self.proxy.start()
        self._stack.callback(self.proxy.close)
        advertised = f"PLAINTEXT://127.0.0.1:{proxy_port},CONTROLLER://127.0.0.1:{controller_port}"
        settings = {"advertised.listeners": advertised, "group.initial.rebalance.delay.ms": str(self.initial_delay_ms)}
        if self.protocol == "consumer":  # the consumer protocol's session is the broker's (KIP-848)
            settings.update({"group.consumer.session.timeout.ms": str(self.session_ms),
                             "group.consumer.heartbeat.interval.ms": str(CONSUMER_HEARTBEAT_MS)})
        self.broker = self._stack.enter_context(KafkaBroker(
            workdir=self.out_dir / "kafka", port=broker_port, controller_port=controller_port, settings=settings))
        self.result.coordinator_log = self.broker.server_log
        for topic, partitions in self.topics.items():
            self.broker.create_topic(topic, partitions)
        self.bootstrap = f"127.0.0.1:{proxy_port}"
        self._stack.enter_context(self._fleet)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        t0 = time.monotonic()
        try:
            if self._producer is not None and exc is None:
                self._producer.flush(5)
            self._producer = None
        finally:
            # On an exception (Ctrl-C included) the fleet kills its processes at once (Fleet.__exit__).
            self._stack.__exit__(exc_type, exc, tb)
            self.result.add_phase("teardown", time.monotonic() - t0)
            if self.proxy is not None:
                self.result.wire = list(self.proxy.messages)
            self.result.seconds = round(time.monotonic() - self._start, 2)
            (self.out_dir / "timeline.json").write_text(json.dumps(self.result.timeline, indent=1) + "\n")

    def _now(self) -> int:
        return time.time_ns() // 1_000_000

    def scaled(self, model_ms: int) -> int:
        """A stall's or freeze's length in real ms: on the same side of the session and max.poll
        timeouts as ``model_ms`` is in the scenario (within the session; past it but within max.poll;
        past max.poll), each band mapped linearly with the margins above."""
        session, max_poll = self.model_session_ms, self.model_max_poll_ms
        if max_poll <= session:
            return max(model_ms // TIME_SCALE, 1)
        if model_ms < session:
            return max(model_ms * (self.session_ms - SESSION_MARGIN_MS) // session, 1)
        if model_ms <= max_poll:
            room = self.max_poll_ms - self.session_ms - FREEZE_PAST_MS - FREEZE_BEFORE_POLL_MS
            return self.session_ms + FREEZE_PAST_MS + (model_ms - session) * room // (max_poll - session)
        return self.max_poll_ms + 1000 + (model_ms - max_poll) // TIME_SCALE

    @contextlib.contextmanager
    def _phase(self, name: str) -> Iterator[None]:
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.result.add_phase(name, time.monotonic() - t0)

    def _sleep(self, seconds: float) -> None:
        """Sleep, or raise :class:`Cancelled` at once when the campaign is interrupted."""
        if self.cancel.wait(max(seconds, 0.0)):
            raise Cancelled()

    def _note(self, step: str, **fields: Any) -> None:
        self.result.timeline.append({"timestamp": self._now(), "step": step, **fields})

    # -- the run ------------------------------------------------------------------------------

    def run(self) -> RealRunResult:
        try:
            for i, step in enumerate(self.doc["steps"]):
                extra: dict[str, Any] = {}
                if step["do"] == "stall" and int(step["for_ms"]) > self.model_max_poll_ms:
                    extra["past_max_poll"] = True
                if step["do"] == "freeze" and int(step["for_ms"]) > self.model_session_ms:
                    extra["past_session"] = True
                self._note(step["do"], index=i, **{k: v for k, v in step.items() if k not in ("do", "at")}, **extra)
                since = self._now()
                with self._phase("step"):
                    wait_ms = self._apply(step)
                if step["do"] in ("join", "restart"):
                    with self._phase("start"):
                        self._joined(step["member"])
                self._settle(wait_ms, since, step["do"])
            self._note("end")
            with self._phase("stop"):
                # One member after another, as before: closing all at once once left an aiokafka
                # member silent and unstoppable for 10 s (not understood; see docs/benchmarks.md).
                for proc in list(self._fleet.live()):
                    proc.stop(STOP_DEADLINE_S)
            hung = [p.member for p in self._fleet if p.hung]
            if hung:
                self.result.error = (f"client process(es) {', '.join(hung)} did not exit within {STOP_DEADLINE_S:.0f} s "
                                     "of SIGTERM (a clean close) and were killed: a hung client")
        except Exception as exc:  # the fleet, proxy and cluster are still stopped by __exit__
            self.result.error = f"{type(exc).__name__}: {exc}"
        # The members' own traces only (the directory also holds group-wire.jsonl and the model's trace).
        self.result.traces = sorted(p.config.events_path for p in self._fleet)
        return self.result

    def _apply(self, step: Mapping[str, Any]) -> int:
        """Do one step; return how long (real ms) its effect may take to show, besides rebalancing."""
        do = step["do"]
        member = step.get("member")
        if do == "join":
            self.member_join[member] = dict(step)
            self.member_topics[member] = tuple(step["topics"])
            self._start_member(member)
            return 0
        # The mock checks sessions once a second. Under the consumer protocol the settle itself waits
        # for the fence (_settle): the survivors cannot cover the dead member's partitions before it.
        expiry = self._expiry_ms() if self.protocol == "classic" else 0
        if do == "crash":
            self.processes[member].kill()
            return expiry
        if do == "restart":
            proc = self.processes.get(member)
            if proc is not None:
                proc.kill()
            self._start_member(member)
            return expiry
        if do == "leave":
            self.processes[member].stop(STOP_DEADLINE_S)
            return 0
        if do == "freeze":
            proc = self.processes[member]
            proc.freeze()
            try:
                self._sleep(self.scaled(int(step["for_ms"])) / 1000)
            finally:
                proc.thaw()
            return 300
        if do == "stall":
            for_ms = self.scaled(int(step["for_ms"]))
            proc = self.processes[member]
            if self.clients[member] == JAVA:  # ConsumerDriver.java stalls while <events>.stall exists
                stall = Path(f"{proc.config.events_path}.stall")
                stall.touch()
                self._sleep(for_ms / 1000)
                stall.unlink(missing_ok=True)
                return 300
            proc.command({"stall_ms": for_ms})
            return for_ms + 300
        if do == "subscribe":
            self.member_topics[member] = tuple(step["topics"])
            self.processes[member].command({"subscribe": list(step["topics"])})
            return 0
        if do == "add_partitions":
            if self.broker is not None:
                if step["topic"] in self.topics:
                    self.broker.add_partitions(step["topic"], int(step["count"]))
                else:
                    self.broker.create_topic(step["topic"], int(step["count"]))
            else:
                assert self.cluster is not None
                self.cluster.create_topic(step["topic"], int(step["count"]))
            self.topics[step["topic"]] = int(step["count"])
            self.result.topics.append((self._now(), dict(self.topics)))
            return 1000  # the leader notices at its next metadata refresh
        if do == "produce":
            self._produce(step["topic"], int(step["records"]), step.get("partition"))
            return 0
        if do == "move_coordinator":
            assert self.cluster is not None
            self.coordinator = self.coordinator % max(self.brokers, 1) + 1
            self.cluster.set_coordinator(self.group, self.coordinator)
            return 500
        if do == "fail_coordinator":
            assert self.cluster is not None
            # Reconnect backoffs do not scale: an outage near the session timeout would make clients
            # give up their membership (librdkafka: "session timed out ... without a successful response
            # from the group coordinator"), which the scenario (for_ms below the session) does not ask for.
            down_ms = min(max(int(step["for_ms"]) // TIME_SCALE, 1), self.session_ms // 3)
            self.cluster.set_broker_down(self.coordinator)
            self._sleep(down_ms / 1000)
            self.cluster.set_broker_up(self.coordinator)
            return 500
        raise ValueError(f"unknown step {do!r}")

    def _start_member(self, member: str) -> None:
        n = self.incarnation.get(member, 0) + 1
        self.incarnation[member] = n
        join = self.member_join[member]
        name = f"{member}#{n}"
        client = self.clients[member]
        assignors = join.get("assignors", ["range"] if client == JAVA else ["range", "cooperative-sticky"])
        options: dict[str, str] = {}
        if self.protocol == "consumer":
            # The Java driver makes --assignor its group.remote.assignor (ConsumerDriver.java).
            options = {"group.protocol": "consumer"} | ({} if client == JAVA else
                                                        {"group.remote.assignor": assignors[0]})
        proc = self._fleet.start(DriverConfig(
            client=client, member=name, group=self.group, topics=self.member_topics[member],
            bootstrap=self.bootstrap, events_path=self.out_dir / f"{name}.jsonl",
            log_path=self.out_dir / f"{name}.log",
            assignor=",".join(assignors),
            session_timeout_ms=self.session_ms, heartbeat_interval_ms=self.heartbeat_ms, commit=self.commit,
            instance_id=join.get("instance_id"), max_poll_interval_ms=self.max_poll_ms, options=options,
            ))
        self.processes[member] = proc

    def _produce(self, topic: str, records: int, partition: int | None) -> None:
        from confluent_kafka import Producer

        if self._producer is None:
            self._producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0,
                                       "client.id": "groupspec-producer"})
        parts = [partition] if partition is not None else list(range(self.topics[topic]))
        for p in parts:
            for n in range(records):
                self._producer.produce(topic, value=f"{topic}-{p}-{n}".encode(), partition=p)
        if self._producer.flush(10):
            raise RuntimeError(f"produce to {topic}: records left undelivered")

    def _joined(self, member: str) -> None:
        """Wait until the member's new process has sent its first JoinGroup (a Python client takes
        a second to start); a process that dies first is a failed start."""
        assert self.proxy is not None
        name = f"{member}#{self.incarnation[member]}"
        deadline = time.monotonic() + self.settle_deadline_s
        while time.monotonic() < deadline:
            self._check_starts()
            if self.protocol == "consumer":
                # No JoinGroup: its first ConsumerGroupHeartbeat answered (the Java consumer calls its assign
                # callback on an empty first assignment, librdkafka does not: the trace cannot tell).
                if _heartbeat_answered(self.proxy.messages, name):
                    return
            elif any(m["api"] == "JoinGroup" and m["kind"] == "request" and m.get("client_id") == name
                     for m in self.proxy.messages):
                return
            if not self.processes[member].alive:
                return
            self._sleep(0.05)
        self._note("join_timeout", member=name)
        first = "JoinGroup" if self.protocol == "classic" else "ConsumerGroupHeartbeat that was answered"
        raise RuntimeError(f"client {name} ({self.clients[member]}) hung: its process runs but sent no {first} "
                           f"within {self.settle_deadline_s:.0f} s; see {self.processes[member].config.log_path}")

    def _settle(self, wait_ms: int, since: int, do: str = "") -> None:
        """Wait ``wait_ms``, then until the group is quiet: no JoinGroup / SyncGroup request for
        :data:`QUIET_MS` since the step, every one answered, and no live member left mid-rebalance by the
        coordinator's last answer to it (:func:`rejoins_due`); a member that died at start is an error.

        Quiet time alone is not enough: Kafka answers a new member's first JoinGroup MEMBER_ID_REQUIRED
        (KIP-394) and the member sends the second one when its client gets to it -- on a machine at load 15,
        a JVM took longer than :data:`QUIET_MS`, the run went on to the next step, and that join's
        generation was counted in the next step's window (test_campaign_kafka.py, "one rebalance too many").

        After a crash the wait ends early at the first JoinGroup sent since the step: the coordinator
        has expired the dead member and the survivors are rejoining, which is what the wait was for
        (only a session expiry makes a rebalance there: nothing else happens between two steps)."""
        assert self.proxy is not None
        proxy = self.proxy
        if self.protocol == "consumer":
            # After a kill the group settles only once the coordinator has fenced the member, up to a session
            # later: the deadline starts after that, as the classic settle's starts after its expiry wait.
            self._settle_consumer(wait_ms, self._expiry_ms() if do in ("crash", "restart") else 0)
            return
        if wait_ms:
            with self._phase("wait"):
                if do == "crash":
                    deadline_ms = self._now() + wait_ms
                    while self._now() < deadline_ms and not any(
                            m["api"] == "JoinGroup" and m["kind"] == "request" and m["timestamp"] >= since
                            for m in proxy.messages):
                        self._check_starts()
                        self._sleep(0.05)
                else:
                    self._sleep(wait_ms / 1000)
        with self._phase("settle"):
            deadline = time.monotonic() + self.settle_deadline_s
            while True:
                self._check_starts()
                rebalancing = [m for m in proxy.messages if m["api"] in ("JoinGroup", "SyncGroup")]
                last = rebalancing[-1]["timestamp"] if rebalancing else 0
                open_requests = _unanswered(rebalancing)
                if (not open_requests and self._now() - max(last, since) >= QUIET_MS
                        and not rejoins_due(proxy.messages, self._live_clients())):
                    return
                if time.monotonic() >= deadline:
                    self._note("settle_timeout", open_requests=len(open_requests))
                    return
                self._sleep(0.05)

    def _settle_consumer(self, wait_ms: int, fence_ms: int = 0) -> None:
        """The consumer protocol's settle: wait ``wait_ms``, then until the live members own every partition
        of their topics exactly once (:func:`shared_once`, by their traces) and nothing changed for
        :data:`QUIET_MS`. A dead member's partitions are the coordinator's to give only after it fenced
        the member (session expiry, or the leave heartbeat), so this waits for the fence too, ``fence_ms``
        at the most, besides the settle's deadline."""
        if wait_ms:
            with self._phase("wait"):
                self._sleep(wait_ms / 1000)
        with self._phase("settle"):
            deadline = time.monotonic() + self.settle_deadline_s + fence_ms / 1000
            seen: dict[str, frozenset[TopicPartition]] | None = None
            since = time.monotonic()
            while True:
                self._check_starts()
                live = {m: p for m, p in self.processes.items() if p.alive}
                owned = {m: frozenset(owned_after(p.events())) for m, p in live.items()}
                if owned != seen:
                    seen, since = owned, time.monotonic()
                full = {TopicPartition(t, n) for m in live for t in self.member_topics[m] if t in self.topics
                        for n in range(self.topics[t])}
                if (shared_once({m: set(tps) for m, tps in owned.items()}, full) is not None
                        and time.monotonic() - since >= QUIET_MS / 1000):
                    return
                if time.monotonic() >= deadline:
                    self._note("settle_timeout", owned={m: sorted(f"{tp.topic}-{tp.partition}" for tp in tps)
                                                        for m, tps in owned.items()})
                    return
                self._sleep(0.05)

    def _expiry_ms(self) -> int:
        """How long after a kill the coordinator has expired the member: its session, plus the mock's
        once-a-second check."""
        return self.session_ms + 1200

    def _live_clients(self) -> set[str]:
        """The client ids (``a#1``) of the member processes still running."""
        return {f"{m}#{self.incarnation[m]}" for m, p in self.processes.items() if p.alive}

    def _check_starts(self) -> None:
        for member, proc in self.processes.items():
            if not proc.alive and not proc.killed and proc.proc.returncode not in (0, -15, None):
                events = read_events(proc.config.events_path)
                if not any(e.get("name") == "startup_complete" for e in events):
                    msg = f"{member} ({self.clients[member]}) exited with {proc.proc.returncode} before startup"
                    if msg not in self.result.failed_starts:
                        self.result.failed_starts.append(msg)
                        raise RuntimeError(f"client failed to start: {msg}; see {proc.config.log_path}")


def rejoins_due(messages: Sequence[Mapping[str, Any]], clients: set[str]) -> list[str]:
    """The members among ``clients`` (client ids) that the coordinator's last group answer to them leaves
    mid-rebalance, so the group is not settled whatever the quiet time: a JoinGroup answer of any kind (a
    SyncGroup must follow NONE; another JoinGroup follows MEMBER_ID_REQUIRED -- AbstractCoordinator.
    JoinGroupResponseHandler, "send another join group request in next cycle" -- or any other error), or
    a SyncGroup or Heartbeat answered with an error (REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID,
    ILLEGAL_GENERATION: the member rejoins). A SyncGroup or Heartbeat answered NONE is settled."""
    conn_client: dict[int, str] = {}
    for m in messages:
        if m["kind"] == "request" and m.get("client_id"):
            conn_client.setdefault(int(m["conn"]), str(m["client_id"]))
    last: dict[str, Mapping[str, Any]] = {}
    for m in messages:
        who = conn_client.get(int(m["conn"]))
        if m["kind"] == "response" and who in clients and m["api"] in ("JoinGroup", "SyncGroup", "Heartbeat"):
            last[who] = m
    return sorted(who for who, m in last.items() if m["api"] == "JoinGroup" or m.get("error") != "NONE")


def _heartbeat_answered(messages: Sequence[Mapping[str, Any]], client_id: str) -> bool:
    """Was a ConsumerGroupHeartbeat of ``client_id`` answered (a response on its connection and correlation id)?"""
    sent = {(m["conn"], m["correlation_id"]) for m in messages
            if m["api"] == "ConsumerGroupHeartbeat" and m["kind"] == "request" and m.get("client_id") == client_id}
    return any(m["api"] == "ConsumerGroupHeartbeat" and m["kind"] == "response"
               and (m["conn"], m["correlation_id"]) in sent for m in messages)


def _unanswered(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    pending: dict[tuple[int, int], dict[str, Any]] = {}
    for m in messages:
        key = (m["conn"], m["correlation_id"])
        if m["kind"] == "request":
            pending[key] = m
        else:
            pending.pop(key, None)
    return list(pending.values())


@contextlib.contextmanager
def real_run(doc: Mapping[str, Any], clients: Mapping[str, str], out_dir: Path) -> Iterator[RealRun]:
    with RealRun(doc, clients, out_dir) as run:
        yield run
