"""librdkafka's KIP-848 consumer protocol (``group.protocol=consumer``), judged by what needs no classic model.

Does the embedded coordinator serve it? Yes. librdkafka's mock cluster answers ConsumerGroupHeartbeat
(``rdkafka_mock_handlers.c`` ``rd_kafka_mock_handle_ConsumerGroupHeartbeat``, API version 1, read in the
v2.15.0 sources and on the master of July 2026; the wheel's librdkafka 2.16.0 serves it, tried here): it keeps
a consumer group of its own (``rdkafka_mock_cgrp.c``, ``rd_kafka_mock_cgrp_consumer_*``) with member epochs,
a target assignment computed on the coordinator (``rd_kafka_mock_cgrp_consumer_target_assignment_calculate_
range``, a range assignment, unless a test sets one by hand), incremental revocation before assignment
(``..._member_needs_revocation`` / ``..._member_next_assignment``), a session timer
(group.consumer.session.timeout.ms, 30 s by default: :meth:`MockCluster.set_consumer_group_timeouts`) and
static members. The Apache Kafka broker serves it too (``--cluster kafka``; GroupMetadataManager's
consumer groups, with its server-side ``uniform`` / ``range`` assignors).

What is compared, and what is not. groupspec's model has only the classic protocol (JoinGroup /
SyncGroup generations, client-side assignors, eager and cooperative members). A KIP-848 run can therefore
only be judged by what does not need that model: the trace checker's verdicts on the real traces
(``single-owner``, ``revoke-before-assign``, ``commit-owned-only``, and the delivery rules ``no-gap``,
``monotonic-consumption``, ``committed-not-ahead``), each reported as the checker gives it -- held,
violation, or unchecked with the checker's reason. The comparisons that need a KIP-848 model are reported
"unsupported: no KIP-848 model", once, with why (:data:`UNSUPPORTED`), and never as a pass.

In ``groupspec conform`` the consumer protocol is the matrix's ``consumer-protocol`` column: the campaign's
scenarios run under it (conformance/real_run.py ``protocol="consumer"``) and :func:`judge` turns the checker's
report into the run's comparison. This module's own command runs one fixed scenario:

The run (one scenario, fixed): members a, b, c (confluent-kafka, ``group.protocol=consumer``, commitSync
after each poll) join one after another on a 6-partition topic; records are produced and consumed; c leaves
(a clean close); b is SIGKILLed (the coordinator fences it when its session expires) and a alone takes every
partition; more records are produced and consumed. ``python -m conformance.kip848 [--cluster mock|kafka]
--out DIR`` runs it: DIR keeps the traces, the client logs, the coordinator's log (mock.log or server.log)
and ``kip848.json``. Exit 0 when the checker found no violation, 1 when it found one, 2 when the run could
not be made (the reason on one line).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from conformance.drivers.process import (
    ConsumerProcess,
    DriverConfig,
    Fleet,
    owned_after,
    shared_once,
    wait_until,
)
from model.types import TopicPartition

if TYPE_CHECKING:
    from conformance.compare import Comparison

CLIENT = "confluent-kafka"
GROUP = "kip848"
TOPIC = "orders"
PARTITIONS = 6
SESSION_MS = 3000  # group.consumer.session.timeout.ms on the mock (Kafka's harness: 6000, conformance/kafka/broker.py)
HEARTBEAT_MS = 500
WAIT_S = 60.0
OPTIONS = {"group.protocol": "consumer"}
# The checker's invariants a KIP-848 run is judged by (the checker's own names).
CHECKED = ("single-owner", "revoke-before-assign", "commit-owned-only", "no-gap", "monotonic-consumption",
           "committed-not-ahead")
UNSUPPORTED = [
    {"comparison": "per generation, the assignor",
     "why": "unsupported: no KIP-848 model -- the consumer protocol's assignment is computed by the coordinator "
            "(the mock's range target assignment; Kafka's uniform / range ServerSideAssignor) and sent in "
            "ConsumerGroupHeartbeat responses; the model has only the classic protocol's client-side assignors fed "
            "by JoinGroup / SyncGroup, so there is no leader input to replay"},
    {"comparison": "per member, the reaction",
     "why": "unsupported: no KIP-848 model -- a KIP-848 member reconciles toward its target assignment by member "
            "epoch (revoke what it must give up, acknowledge, then receive), with no JoinGroup, SyncGroup or "
            "generation; the model's member is the classic one (eager / cooperative)"},
    {"comparison": "the whole run through simulate",
     "why": "unsupported: no KIP-848 model -- the scenario format and simulate have no consumer protocol, so "
            "there is no model verdict to set beside the checker's, and no rebalance bound for member epochs"},
]


class Run(Protocol):
    """What the scenario needs of a coordinator harness (the mock's :class:`MockRun`, Kafka's BrokerRun)."""

    def join(self, member: str, client: str = ..., *, assignor: str = ..., wait: bool = ...,
             group: str | None = ..., **options: str) -> ConsumerProcess: ...

    def leave(self, member: str) -> None: ...

    def kill(self, member: str) -> None: ...

    def produce(self, count: int) -> None: ...

    def wait_stable(self, *members: str, what: str = "") -> dict[str, set[TopicPartition]]: ...

    def wait_consumed(self) -> None: ...


class MockRun:
    """The scenario's steps on librdkafka's mock cluster (the same calls as conformance.kafka.run.BrokerRun)."""

    def __init__(self, out_dir: Path) -> None:
        from conformance.mock_cluster import MockCluster

        self.out_dir = out_dir
        self.cluster = MockCluster(topics={TOPIC: PARTITIONS}, initial_rebalance_delay_ms=0,
                                   log_path=out_dir / "mock.log", debug="mock,cgrp")
        self.fleet = Fleet()
        self.members: dict[str, ConsumerProcess] = {}
        self.produced = dict.fromkeys(range(PARTITIONS), 0)

    def __enter__(self) -> MockRun:
        self.cluster.start()
        self.cluster.set_consumer_group_timeouts(SESSION_MS, HEARTBEAT_MS)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self.fleet.shutdown(graceful=exc is None)
        finally:
            self.cluster.close()

    def join(self, member: str, client: str = CLIENT, *, assignor: str = "range", wait: bool = True,
             group: str | None = None, **options: str) -> ConsumerProcess:
        proc = self.fleet.start(DriverConfig(
            client=client, member=member, group=group or GROUP, topics=(TOPIC,),
            bootstrap=self.cluster.bootstrap_servers, events_path=self.out_dir / f"{member}.jsonl",
            log_path=self.out_dir / f"{member}.log", assignor=assignor, options=dict(options)))
        self.members[member] = proc
        if wait:
            wait_until(lambda: not proc.alive or any(e.get("name") == "partitions_assigned" for e in proc.events()),
                       WAIT_S, f"{member} to get a first assignment")
            if not proc.alive:
                raise RuntimeError(f"{member} exited ({proc.proc.returncode}); see {proc.config.log_path}")
        return proc

    def leave(self, member: str) -> None:
        self.members[member].stop()

    def kill(self, member: str) -> None:
        self.members[member].kill()

    def produce(self, count: int) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.cluster.bootstrap_servers, "client.id": "kip848-producer"})
        for i in range(count):
            producer.produce(TOPIC, str(i).encode(), partition=i % PARTITIONS)
            self.produced[i % PARTITIONS] += 1
        if producer.flush(30) != 0:
            raise RuntimeError("the producer could not deliver its records to the mock cluster")

    def wait_stable(self, *members: str, what: str = "") -> dict[str, set[TopicPartition]]:
        full = {TopicPartition(TOPIC, p) for p in range(PARTITIONS)}

        return wait_until(lambda: shared_once({m: owned_after(self.members[m].events()) for m in members}, full),
                          WAIT_S, f"{', '.join(members)} to share {TOPIC} ({what})")

    def wait_consumed(self) -> None:
        def ends() -> dict[int, int]:
            out = dict.fromkeys(range(PARTITIONS), 0)
            for proc in self.members.values():
                for ev in proc.events():
                    for part in ev.get("partitions", ()) if ev.get("name") == "records_consumed" else ():
                        out[part["partition"]] = max(out[part["partition"]], part["maxOffset"] + 1)
            return out

        wait_until(lambda: all(ends()[p] >= n for p, n in self.produced.items()), WAIT_S,
                   "every produced record to be consumed", describe=lambda: f"{self.produced} vs {ends()}")


def scenario(run: Run) -> None:
    """Join three, consume, a clean leave, a kill (fenced at session expiry), consume again."""
    for member in ("a", "b", "c"):
        run.join(member, CLIENT, **OPTIONS)
    run.wait_stable("a", "b", "c", what="three members")
    run.produce(60)
    run.wait_consumed()
    run.leave("c")
    run.wait_stable("a", "b", what="after c left")
    run.kill("b")
    run.wait_stable("a", what="after b was killed and its session expired")
    run.produce(60)
    run.wait_consumed()
    run.leave("a")


def verdicts(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per invariant of :data:`CHECKED`: what the checker said (held / violation / unchecked, with why)."""
    out: dict[str, dict[str, Any]] = {}
    for invariant in CHECKED:
        found = [f for f in report["findings"] if f["invariant"] == invariant and f["severity"] == "violation"]
        reasons = [u["reason"] for u in report["unchecked"] if u["invariant"] == invariant]
        partial = all(u.get("partial") for u in report["unchecked"] if u["invariant"] == invariant)
        if found:
            out[invariant] = {"verdict": "violation", "findings": [f["message"] for f in found]}
        elif reasons and not partial:
            out[invariant] = {"verdict": "unchecked", "why": reasons}
        elif invariant in report["checked"] or reasons:
            out[invariant] = {"verdict": "held", **({"partly unchecked": reasons} if reasons else {})}
        else:
            out[invariant] = {"verdict": "unchecked", "why": ["the checker did not judge it on this run"]}
    return out


def judge(report: dict[str, Any]) -> Comparison:
    """A consumer-protocol run of ``groupspec conform`` judged by the checker's report on its real traces:
    a violation of one of :data:`CHECKED` is a difference (comparison ``whole-run``, kind
    ``checker-violation``, detail the invariant); what the checker left unchecked is said with its reason;
    what held is a note. There is no model run to set beside it (:data:`UNSUPPORTED`)."""
    from conformance.compare import Comparison, Difference

    out = Comparison()
    for invariant, body in verdicts(report).items():
        if body["verdict"] == "violation":
            out.differences.append(Difference(
                "whole-run", invariant, f"the real run violates {invariant} (the trace checker's invariant, which "
                f"holds under either protocol): {body['findings'][0]}", {"real": body["findings"]},
                kind="checker-violation", detail=invariant))
        elif body["verdict"] == "unchecked":
            out.unchecked.append(f"whole-run {invariant}: {'; '.join(body['why'])}")
        else:
            partly = body.get("partly unchecked")
            out.notes.append(f"checker: {invariant} held" + (f" (partly unchecked: {'; '.join(partly)})" if partly else ""))
    return out


def run(cluster: str, out: Path) -> dict[str, Any]:
    """Run the scenario on ``cluster`` into ``out``; the document written as ``out/kip848.json``."""
    from conformance.campaign import client_versions
    from conformance.compare import check_real_traces

    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    if cluster == "kafka":
        from conformance.kafka.run import BrokerRun

        with BrokerRun(out, group=GROUP, topic=TOPIC, partitions=PARTITIONS) as broker_run:
            scenario(broker_run)
    else:
        with MockRun(out) as mock_run:
            scenario(mock_run)
    traces = sorted(out.glob("*.jsonl"))
    coordinator_log = out / ("server.log" if cluster == "kafka" else "mock.log")
    report = check_real_traces([*traces, *([coordinator_log] if coordinator_log.exists() else [])])
    versions = client_versions()
    doc = {"tool": "conformance.kip848", "cluster": cluster, "protocol": "consumer (KIP-848)",
           "client": f"{CLIENT} {versions.get(CLIENT)} (librdkafka {versions.get('librdkafka')})",
           "seconds": round(time.monotonic() - started, 1),
           "checker": {"verdict": report["verdict"], "invariants": verdicts(report),
                       "warnings": sorted({f["invariant"] for f in report["findings"] if f["severity"] == "warning"})},
           "unsupported": UNSUPPORTED}
    (out / "kip848.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return doc


def summary(doc: dict[str, Any]) -> str:
    lines = [f"KIP-848 consumer protocol, {doc['client']} on the {doc['cluster']} coordinator "
             f"({doc['seconds']} s): checker {doc['checker']['verdict']}"]
    for invariant, body in doc["checker"]["invariants"].items():
        why = "; ".join(body.get("why", body.get("findings", [])))
        lines.append(f"  {body['verdict']:9s} {invariant}" + (f" -- {why}" if why else ""))
    lines += [f"  {u['comparison']}: {u['why']}" for u in doc["unsupported"]]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.kip848", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster", choices=["mock", "kafka"], default="mock")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        doc = run(args.cluster, args.out)
    except Exception as exc:  # the run could not be made: an infrastructure failure, said on one line
        print(f"conformance.kip848: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
              file=sys.stderr)
        return 2
    sys.stdout.write(summary(doc))
    return 1 if any(b["verdict"] == "violation" for b in doc["checker"]["invariants"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
