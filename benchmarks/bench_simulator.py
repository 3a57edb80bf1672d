"""The model's simulator: trace events per second, and against real clients on the same scenario.

Run: ``python -m benchmarks simulator`` (about a minute: the peer runs in real time) or
``python -m benchmarks simulator -- --quick --no-peer`` (seconds).

**What is measured.** ``model.system_run.simulate`` runs a 20-member group through ten minutes of
simulated time with churn (every 15 s one member leaves and joins again 5 s later), once with the
eager ``range`` assignor and once with ``cooperative-sticky``, without the invariant monitor (the
mining corpus is generated that way) and with it (``model.invariants.protocol.Monitor`` watching
every transition, as ``groupspec simulate`` runs). Twice each: group
membership only, and with records (``model.consumption``): producers append 5 records to every
partition every 200 ms and every member auto-commits, so the trace holds VerifiableConsumer's
``records_consumed`` per poll and an ``offsets_committed`` per commit, as a corpus mined for
delivery violations would. Reported: trace events
per CPU second (``time.process_time``, best of ``--repeat``; events are everything the trace holds,
member and coordinator events alike), transitions per second, how many simulated seconds one
CPU second covers, and trace events per CPU second with the monitor on.

**The peer.** Nothing else simulates Kafka's consumer-group protocol, so the closest honest peer is
the real thing: four confluent-kafka (librdkafka) consumers, one thread each, against the embedded
coordinator (``conformance.mock_cluster``: librdkafka's mock cluster, loopback only), running a
scenario -- four members join, one leaves at 12 s, the rest leave at 22 s -- and the model running
the *same* scenario. Compared: the rebalance callbacks (partitions assigned / revoked / lost) each
produced, the wall time each took to complete the scenario, and callbacks per second. The mock's
coordinator is not Kafka's (it waits ``session.timeout.ms - 1000`` before completing a rebalance, see
docs/embedded-coordinator.md), so the two traces differ in timing and count; the ratio says how much
faster the model answers "what happens in this scenario" than running it.

Output: a table on stdout, and ``reports/bench/simulator.{json,md,html}`` (``--out DIR``).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from model.invariants.protocol import Monitor
from model.scenario import Scenario, parse
from model.system_run import Run, simulate

CALLBACKS = ("partitions_assigned", "partitions_revoked", "partitions_lost")


def churn_scenario(members: int, assignor: str, until_ms: int, records: bool = False) -> Scenario:
    """``members`` consumers on two topics; every 15 s one leaves and rejoins 5 s later. With
    ``records``, 5 records to every partition every 200 ms, consumed from the earliest offset."""
    def join(at: int, name: str) -> dict[str, Any]:
        return {"at": at, "do": "join", "member": name, "assignors": [assignor], "topics": ["orders", "audit"]}
    steps: list[dict[str, Any]] = []
    if records:
        steps += [{"at": 0, "do": "produce", "topic": topic, "records": 5, "every_ms": 200, "until": until_ms}
                  for topic in ("orders", "audit")]
    steps += [join(0, f"m{i:02d}") for i in range(members)]
    t, k = 20000, 0
    while t < until_ms - 30000:
        name = f"m{k % members:02d}"
        steps += [{"at": t, "do": "leave", "member": name}, join(t + 5000, name)]
        t, k = t + 15000, k + 1
    config: dict[str, Any] = {"session_timeout_ms": 10000, "max_poll_interval_ms": 30000,
                              "heartbeat_interval_ms": 3000, "initial_rebalance_delay_ms": 0}
    if records:
        config["auto_offset_reset"] = "earliest"
    return parse({"topics": {"orders": 3 * members, "audit": members}, "config": config, "steps": steps,
                  "until": until_ms})


def peer_scenario() -> dict[str, Any]:
    """The scenario both sides run: four members join, m0 leaves at 12 s, the rest at 22 s."""
    steps: list[dict[str, Any]] = [{"at": 0, "do": "join", "member": f"m{i}", "assignors": ["range"],
                                    "topics": ["orders"]} for i in range(4)]
    steps.append({"at": 12000, "do": "leave", "member": "m0"})
    steps += [{"at": 22000, "do": "leave", "member": f"m{i}"} for i in (1, 2, 3)]
    return {"topics": {"orders": 8},
            "config": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "max_poll_interval_ms": 300000,
                       "initial_rebalance_delay_ms": 0},
            "steps": steps, "until": 22000}


def best_of(repeat: int, fn: Callable[[], Run]) -> tuple[Run, float, float]:
    """Run ``fn`` ``repeat`` times; the last result and the best CPU and wall seconds."""
    cpu, wall, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        result = fn()
        cpu, wall = min(cpu, time.process_time() - c0), min(wall, time.perf_counter() - w0)
    assert result is not None
    return result, cpu, wall


def measure_model(members: int, assignor: str, until_ms: int, repeat: int, records: bool = False) -> dict[str, Any]:
    """The simulator alone (what a corpus generator runs), and with the invariant monitor watching
    every transition (what ``groupspec simulate`` runs)."""
    scenario = churn_scenario(members, assignor, until_ms, records)
    run, cpu, wall = best_of(repeat, lambda: simulate(scenario, seed=1))

    def monitored() -> Run:
        monitor = Monitor(scenario.config)
        checked = simulate(scenario, seed=1, observer=monitor.observe)
        monitor.finish(checked.final)
        return checked

    _, checked_cpu, _ = best_of(repeat, monitored)
    return {"workload": "records" if records else "group only", "members": members, "assignor": assignor,
            "simulated_s": until_ms / 1000, "events": len(run.events),
            "transitions": run.transitions, "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
            "events_per_s": round(len(run.events) / cpu), "transitions_per_s": round(run.transitions / cpu),
            "simulated_s_per_cpu_s": round(until_ms / 1000 / cpu, 1),
            "monitored_cpu_s": round(checked_cpu, 3), "monitored_events_per_s": round(len(run.events) / checked_cpu)}


def run_real_clients(doc: dict[str, Any]) -> dict[str, Any]:
    """The peer: the scenario's joins and leaves with confluent-kafka consumers on the mock cluster."""
    from confluent_kafka import Consumer

    from conformance.mock_cluster import MockCluster

    callbacks: list[tuple[float, str, str]] = []
    lock = threading.Lock()
    config = doc["config"]
    leave_at = {s["member"]: s["at"] / 1000 for s in doc["steps"] if s["do"] == "leave"}
    names = [s["member"] for s in doc["steps"] if s["do"] == "join"]

    def consumer(name: str, bootstrap: str, start: float) -> None:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-simulator",
                      "session.timeout.ms": config["session_timeout_ms"],
                      "heartbeat.interval.ms": config["heartbeat_interval_ms"],
                      "partition.assignment.strategy": "range", "enable.auto.commit": True})

        def record(kind: str) -> Callable[[Any, Any], None]:
            def callback(_: Any, __: Any) -> None:
                with lock:
                    callbacks.append((time.monotonic() - start, name, kind))
            return callback

        c.subscribe(list(doc["topics"]), on_assign=record("partitions_assigned"),
                    on_revoke=record("partitions_revoked"), on_lost=record("partitions_lost"))
        while time.monotonic() - start < leave_at[name]:
            c.poll(0.05)
        c.close()

    topics = dict(doc["topics"])
    with MockCluster(topics=topics, initial_rebalance_delay_ms=config["initial_rebalance_delay_ms"]) as cluster:
        c0, start = time.process_time(), time.monotonic()
        threads = [threading.Thread(target=consumer, args=(n, cluster.bootstrap_servers, start)) for n in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall, cpu = time.monotonic() - start, time.process_time() - c0
    return {"callbacks": len(callbacks), "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "callbacks_per_wall_s": round(len(callbacks) / wall, 2)}


def measure_peer(repeat: int) -> dict[str, Any]:
    doc = peer_scenario()
    scenario = parse(doc)
    run, cpu, wall = best_of(repeat, lambda: simulate(scenario, seed=1))
    model_callbacks = sum(1 for e in run.events if e["name"] in CALLBACKS)
    model = {"callbacks": model_callbacks, "events": len(run.events), "wall_s": round(wall, 4),
             "cpu_s": round(cpu, 4), "callbacks_per_wall_s": round(model_callbacks / wall)}
    try:
        real = run_real_clients(doc)
    except Exception as exc:  # no confluent-kafka, or its librdkafka cannot make a mock cluster
        return {"scenario": "4 members join, m0 leaves at 12 s, the others at 22 s (range, 8 partitions)",
                "model": model, "real_clients": None, "unavailable": f"{type(exc).__name__}: {exc}"}
    return {"scenario": "4 members join, m0 leaves at 12 s, the others at 22 s (range, 8 partitions)",
            "model": model, "real_clients": real,
            "ratio_callbacks_per_s": round(model["callbacks_per_wall_s"] / max(real["callbacks_per_wall_s"], 1e-9)),
            "ratio_completion_time": round(real["wall_s"] / max(model["wall_s"], 1e-9))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks simulator", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="two simulated minutes instead of ten")
    parser.add_argument("--no-peer", action="store_true", help="skip the real clients")
    parser.add_argument("--repeat", type=int, default=3, help="best of N (default 3)")
    parser.add_argument("--out", type=Path, default=Path("reports/bench"), help="where simulator.json goes")
    args = parser.parse_args(argv)
    until = 120_000 if args.quick else 600_000
    rows = [measure_model(20, assignor, until, args.repeat, records)
            for records in (False, True) for assignor in ("range", "cooperative-sticky")]
    print(f"{'workload':<12}{'assignor':<20}{'members':>8}{'sim s':>7}{'events':>9}{'transitions':>12}{'cpu s':>8}"
          f"{'events/s':>10}{'trans/s':>9}{'sim s/cpu s':>12}{'monitored ev/s':>15}")
    for r in rows:
        print(f"{r['workload']:<12}{r['assignor']:<20}{r['members']:>8}{r['simulated_s']:>7.0f}{r['events']:>9}"
              f"{r['transitions']:>12}"
              f"{r['cpu_s']:>8.2f}{r['events_per_s']:>10}{r['transitions_per_s']:>9}{r['simulated_s_per_cpu_s']:>12}"
              f"{r['monitored_events_per_s']:>15}")
    peer: dict[str, Any] | None = None
    if not args.no_peer:
        peer = measure_peer(args.repeat)
        m, real = peer["model"], peer["real_clients"]
        print(f"\npeer: {peer['scenario']}")
        print(f"  model:        {m['callbacks']} callbacks in {m['wall_s']:.4f} s wall ({m['callbacks_per_wall_s']} /s)")
        if real is None:
            print(f"  real clients: unavailable ({peer['unavailable']})")
        else:
            print(f"  real clients: {real['callbacks']} callbacks in {real['wall_s']:.1f} s wall "
                  f"({real['callbacks_per_wall_s']} /s; confluent-kafka on librdkafka's mock cluster)")
            print(f"  ratio: {peer['ratio_callbacks_per_s']}x callbacks/s, scenario completes "
                  f"{peer['ratio_completion_time']}x sooner")
    data = {"benchmark": "simulator", "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                                                  "cpus": os.cpu_count()},
            "command": "python -m benchmarks simulator" + (" -- " + " ".join(argv) if argv else ""),
            "model": rows, "peer": peer}
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        from groupspec.render import Document, Table, write_report
        doc = Document("Simulator benchmark", [Table(list(rows[0]), [list(r.values()) for r in rows],
                                                     caption="model.system_run.simulate, 20 members, churn")])
        write_report(args.out, "simulator", data, doc)
    except ImportError:
        import json
        (args.out / "simulator.json").write_text(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
