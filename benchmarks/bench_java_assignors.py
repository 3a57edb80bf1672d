"""The model's assignors against Apache Kafka's Java assignors (kafka-clients 4.1.1), on Kafka's scale problems.

Run: ``python -m benchmarks java_assignors`` (full: Kafka's scale tests, minutes, a 4 GB JVM) or
``python -m benchmarks java_assignors -- --quick`` (small problems, seconds).

Problems (benchmarks/problems.py, after AbstractStickyAssignorTest): ``uniform(500, 2000, 2000)``
(testLargeAssignmentAndGroupWithUniformSubscription: 1,000,000 partitions, 2,000 members, everyone
subscribes to everything) and ``halves(100, 200, 500)``
(testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout: member i takes the first half of the
topics when i % 4 == 0, else the second half). Each is assigned fresh, then re-assigned with members
1..n-1 reporting what the *model* gave them (``problems.reassign``, as Kafka's tests do), so both
sides solve the same two problems.

What is timed:

* **model**: ``model.assignors.assign(...)`` in this process; wall and CPU seconds, best of ``--repeat``;
* **Java in-JVM**: ``ConsumerPartitionAssignor.assign(Cluster, GroupSubscription)`` alone, measured
  with ``System.nanoTime`` inside the peer JVM (conformance/java_assignors.py), best of ``--repeat``
  calls, each on a new assignor instance, after a warm-up of every assignor on a small problem so
  that the JIT has compiled the hot paths (a leader that has rebalanced before is warm too);
* **Java wall**: the whole round trip seen from Python for one call -- encoding the problem as JSON,
  the pipe, parsing, building and serializing the subscriptions as the members' clients would,
  the assignment, and decoding the answer into the model's types. This is what the differential
  tests pay per problem, not what a Kafka leader pays.

``model/java`` is the model's wall time over Java's in-JVM time (above 1: Java is faster).
``same`` says whether the two answers are identical (assignment and withheld partitions); on these
problems they must be, as Java's hash order plays no part in them (tests/conformance/test_java_assignors.py).

Output: a table on stdout and reports/bench/java_assignors.{json,md,html} (``--out``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import problems as P
from conformance.java_assignors import JavaAssignorPeer, JavaResult
from model.assignors import assign as model_assign
from model.types import GroupAssignment

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")


def cases(quick: bool) -> list[P.Problem]:
    if quick:
        return [P.uniform(50, 200, 200), P.halves(20, 100, 100)]
    return [P.uniform(500, 2000, 2000), P.halves(100, 200, 500)]


def run_model(strategy: str, problem: P.Problem, repeat: int) -> tuple[dict[str, float], GroupAssignment]:
    best_wall, best_cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        result = model_assign(strategy, problem.partitions_per_topic, problem.subscriptions)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if wall < best_wall:
            best_wall, best_cpu = wall, cpu
    assert result is not None
    return {"wall_ms": best_wall * 1000.0, "cpu_ms": best_cpu * 1000.0}, result


def run_java(java: JavaAssignorPeer, strategy: str, problem: P.Problem, repeat: int
             ) -> tuple[dict[str, Any], JavaResult]:
    best: JavaResult | None = None
    walls = []
    for _ in range(repeat):
        gc.collect()
        result = java.run(strategy, problem.partitions_per_topic, problem.subscriptions)
        walls.append(result.wall_millis)
        if best is None or result.millis < best.millis:
            best = result
    assert best is not None
    return {"jvm_ms": best.millis, "wall_ms": min(walls), "builder": best.builder}, best


def same(model: GroupAssignment, java: JavaResult) -> bool:
    return dict(model.assignment) == java.assignment and model.transferring == java.transferring


def warm_up(java: JavaAssignorPeer) -> None:
    """Run every assignor of both sides on small problems, fresh and re-assigned, a few times."""
    for problem in (P.uniform(20, 50, 30), P.halves(20, 30, 30)):
        for strategy in STRATEGIES:
            first = model_assign(strategy, problem.partitions_per_topic, problem.subscriptions)
            again = P.reassign(problem, first)
            for _ in range(5):
                java.run(strategy, problem.partitions_per_topic, problem.subscriptions)
                java.run(strategy, again.partitions_per_topic, again.subscriptions)


def measure(java: JavaAssignorPeer, problem: P.Problem, repeat: int, log: Callable[[str], None]
            ) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for strategy in STRATEGIES:
        model, first = run_model(strategy, problem, repeat)
        again = P.reassign(problem, first)
        phases = (("fresh", problem, model, first), ("re-assign", again, *run_model(strategy, again, repeat)))
        for phase, each, mine, model_result in phases:
            theirs, java_result = run_java(java, strategy, each, repeat)
            row = {"problem": problem.name, "phase": phase, "partitions": problem.partitions,
                   "members": len(problem.subscriptions), "assignor": strategy, "model": mine, "java": theirs,
                   "ratio": mine["wall_ms"] / theirs["jvm_ms"] if theirs["jvm_ms"] > 0 else None,
                   "same": same(model_result, java_result)}
            rows.append(row)
            log(_line(row))
    return rows


def _ms(x: float | None) -> str:
    if x is None:
        return ""
    return f"{x:.2f}" if x < 10 else f"{x:.0f}"


def _line(row: dict[str, Any]) -> str:
    ratio = "" if row["ratio"] is None else f"  model/java {row['ratio']:.1f}"
    return (f"  {row['problem']:<26} {row['phase']:<9} {row['assignor']:<18} model {_ms(row['model']['wall_ms'])} ms"
            f"  java {_ms(row['java']['jvm_ms'])} ms (wall {_ms(row['java']['wall_ms'])} ms){ratio}"
            f"  same={'yes' if row['same'] else 'NO'}")


def machine(java: JavaAssignorPeer, heap: str) -> dict[str, Any]:
    info: dict[str, Any] = {"python": sys.version.split()[0], "implementation": platform.python_implementation(),
                            "platform": platform.platform(), "cpus": os.cpu_count(),
                            "java": java.java_version, "kafka_clients": java.kafka_clients_version, "jvm_heap": heap}
    with contextlib.suppress(OSError):
        info["load_average"] = os.getloadavg()
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks java_assignors", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small problems, a few seconds")
    parser.add_argument("--repeat", type=int, help="runs per measurement, best kept (default 3 quick, 1 full)")
    parser.add_argument("--heap", help="the peer JVM's -Xmx (default 1g quick, 4g full)")
    parser.add_argument("--out", type=Path, default=Path("reports/bench"))
    args = parser.parse_args(argv)
    repeat = args.repeat or (3 if args.quick else 1)
    heap = args.heap or ("1g" if args.quick else "4g")

    from groupspec.render import Document, Table, to_markdown, write_report

    rows: list[dict[str, Any]] = []
    with JavaAssignorPeer(heap=heap) as java:
        warm_up(java)
        for problem in cases(args.quick):
            print(f"{problem.name}: {problem.partitions} partitions, {len(problem.subscriptions)} members", flush=True)
            rows.extend(measure(java, problem, repeat, lambda s: print(s, flush=True)))
        info = machine(java, heap)

    table = Table(
        ["problem", "phase", "assignor", "model wall ms", "model CPU ms", "Java in-JVM ms", "Java wall ms (JSON)",
         "model/java", "same"],
        [[r["problem"], r["phase"], r["assignor"], _ms(r["model"]["wall_ms"]), _ms(r["model"]["cpu_ms"]),
          _ms(r["java"]["jvm_ms"]), _ms(r["java"]["wall_ms"]),
          "" if r["ratio"] is None else f"{r['ratio']:.1f}", "yes" if r["same"] else "NO"] for r in rows],
        caption="Best of the runs. model/java = model wall time / Java in-JVM time (above 1: Java is "
                "faster). Java wall = one call's round trip from Python, JSON included.")
    command = "python -m benchmarks java_assignors" + (" -- " + " ".join(argv) if argv else "")
    doc = Document("Assignor benchmark: model vs Apache Kafka's Java assignors", [
        f"Command: `{command}`. Machine: {info['implementation']} {info['python']}, Java {info['java']} "
        f"(-Xmx{heap}), kafka-clients {info['kafka_clients']}, {info['cpus']} CPUs, {info['platform']}; "
        f"load average at the end {info.get('load_average')}.",
        table])
    print()
    print(to_markdown(doc))
    data = {"benchmark": "java_assignors", "command": command, "quick": args.quick, "repeat": repeat,
            "machine": info, "rows": rows}
    for path in write_report(args.out, "java_assignors", data, doc):
        print(f"wrote {path}")
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
