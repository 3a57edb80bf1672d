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
are the scenario's divided by :data:`TIME_SCALE` (a 6 s session becomes 1.5 s), so that a rebalance on
the mock takes a fraction of a second; generated scenarios space their steps far enough apart that
the model, too, settles between steps.

**What a step does** (``freeze`` is not a scenario step: SIGSTOP / SIGCONT are offered by
:class:`~conformance.drivers.process.ConsumerProcess` for a stall past the session timeout, which the
scenario format cannot express yet):

| step | real |
|---|---|
| join | start a driver process (client, assignors, topics, instance id, commit policy) |
| crash | SIGKILL |
| restart | SIGKILL if running, then start again with the same configuration and latest topics |
| leave | SIGTERM: the driver closes the consumer (LeaveGroup) |
| stall | the driver stops polling for ``for_ms`` (scaled); its heartbeat goes on |
| subscribe | the driver calls subscribe(topics) |
| add_partitions | a new topic: created on the mock; more partitions for an existing one: unsupported on the mock |
| produce | a producer appends records (``every_ms``: only the first batch; later firings are unsupported) |
| move_coordinator | the mock's coordinator for the group moves to the next broker |
| fail_coordinator | the coordinator's broker goes down for ``for_ms`` (scaled), then up |

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
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.drivers.process import ConsumerProcess, DriverConfig, Fleet, read_events
from conformance.mock_cluster import MockCluster
from conformance.proxy import SyncGroupProxy, proxied

TIME_SCALE = 4
MIN_SESSION_MS = 2000
QUIET_MS = 600  # no JoinGroup / SyncGroup for this long (real ms): the group has settled
SETTLE_DEADLINE_S = 25.0

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


def unsupported(doc: Mapping[str, Any], clients: Mapping[str, str], cluster: str = "mock") -> list[str]:
    """Why this scenario cannot run with these clients on this coordinator (empty: it can)."""
    why: list[str] = []
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
    error: str | None = None
    seconds: float = 0.0


class RealRun:
    """Run ``doc`` with ``clients`` (member -> client) into ``out_dir``; ``with RealRun(...) as r: r.run()``."""

    def __init__(self, doc: Mapping[str, Any], clients: Mapping[str, str], out_dir: Path,
                 settle_deadline_s: float = SETTLE_DEADLINE_S, cluster: str = "mock") -> None:
        self.doc = doc
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
        self.max_poll_ms = max(int(max_poll) // TIME_SCALE, self.session_ms)
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
        self._fleet = Fleet(stop_timeout_s=10.0)
        self._producer: Any = None
        self._start = time.monotonic()

    # -- life cycle ---------------------------------------------------------------------------

    def __enter__(self) -> RealRun:
        self.out_dir.mkdir(parents=True, exist_ok=True)
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
        self.broker = self._stack.enter_context(KafkaBroker(
            workdir=self.out_dir / "kafka", port=broker_port, controller_port=controller_port,
            settings={"advertised.listeners": advertised,
                      "group.initial.rebalance.delay.ms": str(self.initial_delay_ms)}))
        for topic, partitions in self.topics.items():
            self.broker.create_topic(topic, partitions)
        self.bootstrap = f"127.0.0.1:{proxy_port}"
        self._stack.enter_context(self._fleet)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        try:
            if self._producer is not None:
                self._producer.flush(5)
                self._producer = None
        finally:
            self._stack.__exit__(exc_type, exc, tb)
            if self.proxy is not None:
                self.result.wire = list(self.proxy.messages)
            self.result.seconds = round(time.monotonic() - self._start, 2)
            (self.out_dir / "timeline.json").write_text(json.dumps(self.result.timeline, indent=1) + "\n")

    def _now(self) -> int:
        return time.time_ns() // 1_000_000

    def _note(self, step: str, **fields: Any) -> None:
        self.result.timeline.append({"timestamp": self._now(), "step": step, **fields})

    # -- the run ------------------------------------------------------------------------------

    def run(self) -> RealRunResult:
        try:
            for i, step in enumerate(self.doc["steps"]):
                extra = {"past_max_poll": True} if step["do"] == "stall" and \
                    int(step["for_ms"]) // TIME_SCALE > self.max_poll_ms else {}
                self._note(step["do"], index=i, **{k: v for k, v in step.items() if k not in ("do", "at")}, **extra)
                since = self._now()
                wait_ms = self._apply(step)
                if step["do"] in ("join", "restart"):
                    self._joined(step["member"])
                self._settle(wait_ms, since)
            self._note("end")
            for proc in list(self._fleet.live()):
                proc.stop(10.0)
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
        if do == "crash":
            self.processes[member].kill()
            return self.session_ms + 1200  # the mock checks sessions once a second
        if do == "restart":
            proc = self.processes.get(member)
            if proc is not None:
                proc.kill()
            self._start_member(member)
            return self.session_ms + 1200
        if do == "leave":
            self.processes[member].stop(10.0)
            return 0
        if do == "stall":
            for_ms = max(int(step["for_ms"]) // TIME_SCALE, 1)
            proc = self.processes[member]
            if self.clients[member] == JAVA:  # ConsumerDriver.java stalls while <events>.stall exists
                stall = Path(f"{proc.config.events_path}.stall")
                stall.touch()
                time.sleep(for_ms / 1000)
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
            time.sleep(down_ms / 1000)
            self.cluster.set_broker_up(self.coordinator)
            return 500
        raise ValueError(f"unknown step {do!r}")

    def _start_member(self, member: str) -> None:
        n = self.incarnation.get(member, 0) + 1
        self.incarnation[member] = n
        join = self.member_join[member]
        name = f"{member}#{n}"
        client = self.clients[member]
        proc = self._fleet.start(DriverConfig(
            client=client, member=name, group=self.group, topics=self.member_topics[member],
            bootstrap=self.bootstrap, events_path=self.out_dir / f"{name}.jsonl",
            log_path=self.out_dir / f"{name}.log",
            assignor=",".join(join.get("assignors", ["range"] if client == JAVA else ["range", "cooperative-sticky"])),
            session_timeout_ms=self.session_ms, heartbeat_interval_ms=self.heartbeat_ms, commit=self.commit,
            instance_id=join.get("instance_id"), max_poll_interval_ms=self.max_poll_ms,
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
            if any(m["api"] == "JoinGroup" and m["kind"] == "request" and m.get("client_id") == name
                   for m in self.proxy.messages):
                return
            if not self.processes[member].alive:
                return
            time.sleep(0.05)
        self._note("join_timeout", member=name)

    def _settle(self, wait_ms: int, since: int) -> None:
        """Wait ``wait_ms``, then until the group is quiet: no JoinGroup / SyncGroup request for
        :data:`QUIET_MS` since the step and every one answered; a member that died at start is an error."""
        if wait_ms:
            time.sleep(wait_ms / 1000)
        deadline = time.monotonic() + self.settle_deadline_s
        assert self.proxy is not None
        while True:
            self._check_starts()
            messages = self.proxy.messages
            rebalancing = [m for m in messages if m["api"] in ("JoinGroup", "SyncGroup")]
            last = rebalancing[-1]["timestamp"] if rebalancing else 0
            open_requests = _unanswered(rebalancing)
            if not open_requests and self._now() - max(last, since) >= QUIET_MS:
                return
            if time.monotonic() >= deadline:
                self._note("settle_timeout", open_requests=len(open_requests))
                return
            time.sleep(0.05)

    def _check_starts(self) -> None:
        for member, proc in self.processes.items():
            if not proc.alive and not proc.killed and proc.proc.returncode not in (0, -15, None):
                events = read_events(proc.config.events_path)
                if not any(e.get("name") == "startup_complete" for e in events):
                    msg = f"{member} ({self.clients[member]}) exited with {proc.proc.returncode} before startup"
                    if msg not in self.result.failed_starts:
                        self.result.failed_starts.append(msg)
                        raise RuntimeError(f"client failed to start: {msg}; see {proc.config.log_path}")


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
