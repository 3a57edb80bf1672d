"""One consumer group run against the embedded coordinator: members join, leave, die; records flow.

:class:`GroupRun` puts together a :class:`~conformance.mock_cluster.MockCluster` (optionally behind
the :mod:`conformance.proxy`), a producer, and a :class:`~conformance.drivers.process.Fleet` of
driver processes, and offers the steps a scenario is made of -- :meth:`GroupRun.join`,
:meth:`GroupRun.leave` (SIGTERM: the consumer closes and leaves the group), :meth:`GroupRun.crash`
(SIGKILL: a zombie the coordinator keeps until its session times out), :meth:`GroupRun.produce`
-- and the conditions to wait for between them: :meth:`GroupRun.wait_stable` (the live members'
partitions, folded from their traces, cover the topic exactly once and are balanced) and
:meth:`GroupRun.wait_drained` (every produced record has been committed). Each step is written to
a timeline (wall-clock milliseconds) that is saved next to the traces as ``scenario.json``.

Every wait has a deadline; on a timeout the error says what was expected and what was seen.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.drivers.process import ConsumerProcess, DriverConfig, Fleet, read_events, wait_until
from conformance.mock_cluster import MockCluster
from conformance.proxy import SyncGroupProxy, proxied
from model.types import TopicPartition


@dataclass
class RunConfig:
    """What a run uses: client, assignor, group and topic, timeouts."""

    client: str
    assignor: str = "range"
    group: str = "orders-group"
    topic: str = "orders"
    partitions: int = 6
    session_timeout_ms: int = 3000
    heartbeat_interval_ms: int = 300
    initial_rebalance_delay_ms: int = 500
    proxy: bool = False
    options: dict[str, str] = field(default_factory=dict)
    wait_timeout_s: float = 30.0


class GroupRun:
    """A running scenario; use as ``with GroupRun(config, out_dir) as run: ...``."""

    def __init__(self, config: RunConfig, out_dir: Path) -> None:
        self.config = config
        self.out_dir = Path(out_dir)
        self.members: dict[str, ConsumerProcess] = {}
        self.timeline: list[dict[str, Any]] = []
        self.produced: dict[int, int] = dict.fromkeys(range(config.partitions), 0)
        self.cluster: MockCluster | None = None
        self.proxy: SyncGroupProxy | None = None
        self.bootstrap = ""
        self._stack = contextlib.ExitStack()
        self._fleet = Fleet()
        self._producer: Any = None

    # -- life cycle -------------------------------------------------------------------------

    def __enter__(self) -> GroupRun:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        try:
            cfg = self.config
            self.cluster = self._stack.enter_context(MockCluster(
                brokers=1, topics={cfg.topic: cfg.partitions},
                initial_rebalance_delay_ms=cfg.initial_rebalance_delay_ms,
                log_path=self.out_dir / "mock-coordinator.log"))
            self.bootstrap = self.cluster.bootstrap_servers
            if cfg.proxy:
                self.proxy, self.bootstrap = self._stack.enter_context(
                    proxied(self.cluster, log_path=self.out_dir / "proxy.log",
                            wire_path=self.out_dir / "group-wire.jsonl"))
            self._stack.enter_context(self._fleet)
            self._note("cluster_started", bootstrap=self.bootstrap)
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        try:
            if self._producer is not None:
                self._producer.flush(5)
                self._producer = None
        finally:
            # Fleet first (reverse order), then proxy, then cluster. The exception is passed on so
            # that after a failure the fleet kills its processes at once instead of waiting for them.
            self._stack.__exit__(exc_type, exc, tb)

    # -- steps ------------------------------------------------------------------------------

    def join(self, member: str) -> ConsumerProcess:
        """Start a consumer named ``member``; its trace is <member>.jsonl, its log <member>.log."""
        cfg = self.config
        proc = self._fleet.start(DriverConfig(
            client=cfg.client, member=member, group=cfg.group, topics=(cfg.topic,), bootstrap=self.bootstrap,
            events_path=self.out_dir / f"{member}.jsonl", log_path=self.out_dir / f"{member}.log",
            assignor=cfg.assignor, session_timeout_ms=cfg.session_timeout_ms,
            heartbeat_interval_ms=cfg.heartbeat_interval_ms, options=dict(cfg.options)))
        self.members[member] = proc
        self._note("member_started", member=member, pid=proc.pid)
        return proc

    def leave(self, member: str) -> int:
        """SIGTERM: the consumer closes (LeaveGroup) and writes shutdown_complete."""
        self._note("member_stopping", member=member)
        code = self.members[member].stop()
        self._note("member_stopped", member=member, exit_code=code)
        return code

    def crash(self, member: str) -> None:
        """SIGKILL: no LeaveGroup, no shutdown_complete; the coordinator expires it later."""
        self.members[member].kill()
        self._note("member_killed", member=member)

    def produce(self, per_partition: int) -> None:
        """Produce ``per_partition`` records to every partition and wait for the acknowledgements."""
        from confluent_kafka import Producer  # the parent's producer; the consumers are other processes

        if self._producer is None:
            self._producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0,
                                       "client.id": "groupspec-producer"})
        failures: list[str] = []

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                failures.append(str(err))

        for partition in range(self.config.partitions):
            for _ in range(per_partition):
                n = self.produced[partition]
                self._producer.produce(self.config.topic, key=f"p{partition}".encode(),
                                       value=f"record-{partition}-{n}".encode(), partition=partition,
                                       on_delivery=delivered)
                self.produced[partition] = n + 1
        remaining = self._producer.flush(self.config.wait_timeout_s)
        if remaining or failures:
            raise RuntimeError(f"produce failed: {remaining} undelivered, errors {failures[:3]}")
        self._note("records_produced", per_partition=per_partition, end_offsets=dict(self.produced))

    # -- conditions -------------------------------------------------------------------------

    def live(self) -> list[ConsumerProcess]:
        return [p for p in self.members.values() if p.alive]

    def ownership(self) -> dict[str, set[TopicPartition]]:
        return {p.member: p.owned() for p in self.live()}

    def stable_assignment(self) -> dict[str, set[TopicPartition]] | None:
        """The live members' ownership if it is a stable one, else None.

        Stable: every partition owned by exactly one live member, every live member owns some,
        and the counts differ by at most one (what range, roundrobin and the sticky assignors all
        give one topic with equal subscriptions).
        """
        owned = self.ownership()
        if not owned:
            return None
        everything = {TopicPartition(self.config.topic, p) for p in range(self.config.partitions)}
        counts = [len(s) for s in owned.values()]
        union: set[TopicPartition] = set().union(*owned.values())
        if union != everything or sum(counts) != len(everything):
            return None
        if min(counts) == 0 or max(counts) - min(counts) > 1:
            return None
        return owned

    def wait_stable(self, what: str = "a stable assignment") -> dict[str, set[TopicPartition]]:
        owned = wait_until(self.stable_assignment, self.config.wait_timeout_s, what, self._describe)
        assert owned is not None  # wait_until returns only a truthy value
        self._note("stable", assignment={m: sorted(tp.partition for tp in s) for m, s in sorted(owned.items())})
        return owned

    def committed(self) -> dict[int, int]:
        """Highest successfully committed offset per partition, over every member's trace."""
        best: dict[int, int] = {}
        for proc in self.members.values():
            for ev in read_events(proc.config.events_path):
                if ev.get("name") != "offsets_committed" or not ev.get("success"):
                    continue
                for o in ev.get("offsets", ()):
                    if o.get("topic") == self.config.topic and "error" not in o:
                        p = int(o["partition"])
                        best[p] = max(best.get(p, -1), int(o["offset"]))
        return best

    def drained(self) -> bool:
        committed = self.committed()
        return all(committed.get(p, 0) >= end for p, end in self.produced.items() if end > 0)

    def wait_drained(self) -> None:
        wait_until(self.drained, self.config.wait_timeout_s, "every produced record committed",
                   lambda: f"produced {self.produced}, committed {self.committed()}")
        self._note("drained", committed=self.committed())

    # -- records ----------------------------------------------------------------------------

    def _describe(self) -> str:
        return "; ".join(f"{m}: {sorted(tp.partition for tp in s)}" for m, s in sorted(self.ownership().items())) \
            or "no live member"

    def _note(self, step: str, **fields: Any) -> None:
        self.timeline.append({"timestamp": time.time_ns() // 1_000_000, "step": step, **fields})

    def write_scenario(self, extra: dict[str, Any] | None = None) -> Path:
        """Write scenario.json: the configuration, the timeline of steps, the proxy's counters."""
        data: dict[str, Any] = {
            "config": {k: v for k, v in vars(self.config).items()},
            "timeline": self.timeline,
        }
        if self.proxy is not None:
            data["proxy"] = vars(self.proxy.stats)
        if extra:
            data.update(extra)
        path = self.out_dir / "scenario.json"
        path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
        return path


@contextlib.contextmanager
def group_run(config: RunConfig, out_dir: Path) -> Iterator[GroupRun]:
    with GroupRun(config, out_dir) as run:
        yield run
