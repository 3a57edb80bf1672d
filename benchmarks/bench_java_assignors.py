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
* **Java**: ``ConsumerPartitionAssignor.assign(Cluster, GroupSubscription)`` alone, measured inside
  the peer JVM (conformance/java_assignors.py): wall time (``System.nanoTime``) and the CPU time of
  the thread that ran it (``ThreadMXBean``; garbage collection and JIT compilation run on other
  threads: the JSON report also has the whole JVM's CPU time, at the operating system's 10 ms
  resolution), best of ``--java-repeat`` runs of one
  request, each on a new assignor instance after a ``System.gc()`` (so that the call is not charged
  for collecting the request's parsing garbage), after a warm-up of every assignor on small
  problems (a leader that has rebalanced before is warm too);
* **Java round trip**: one call as seen from Python -- encoding the problem as JSON, the pipe,
  parsing, building and serializing the subscriptions as the members' clients would, one
  assignment, decoding the answer into the model's types. This is what the differential tests pay
  per problem, not what a Kafka leader pays.

``model/java`` is the model's time over Java's (above 1: Java is faster), by wall time and by CPU
time; on a shared machine the CPU ratio is the steadier one.
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
    """One request, the assignor run ``repeat`` times inside the JVM (the problem crosses the pipe once)."""
    gc.collect()
    r = java.run(strategy, problem.partitions_per_topic, problem.subscriptions, repeat=repeat, gc=True)
    # The round trip of one call: everything the request cost but the other runs and the collections.
    round_trip = r.wall_millis - sum(r.runs) - r.gc_millis + r.millis
    return {"jvm_ms": r.millis, "jvm_cpu_ms": r.process_cpu_millis, "thread_cpu_ms": r.cpu_millis,
            "runs_ms": list(r.runs), "prepare_ms": r.prepare_millis, "round_trip_ms": round_trip,
            "builder": r.builder}, r


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


def _ratio(model: float, java: float) -> float | None:
    return model / java if java > 0 else None


def measure(java: JavaAssignorPeer, problem: P.Problem, repeat: int, java_repeat: int, log: Callable[[str], None]
            ) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for strategy in STRATEGIES:
        model, first = run_model(strategy, problem, repeat)
        again = P.reassign(problem, first)
        phases = (("fresh", problem, model, first), ("re-assign", again, *run_model(strategy, again, repeat)))
        for phase, each, mine, model_result in phases:
            theirs, java_result = run_java(java, strategy, each, java_repeat)
            row = {"problem": problem.name, "phase": phase, "partitions": problem.partitions,
                   "members": len(problem.subscriptions), "assignor": strategy, "model": mine, "java": theirs,
                   "ratio": _ratio(mine["wall_ms"], theirs["jvm_ms"]),
                   "cpu_ratio": _ratio(mine["cpu_ms"], theirs["thread_cpu_ms"]),
                   "same": same(model_result, java_result)}
            rows.append(row)
            log(_line(row))
    return rows


def _ms(x: float | None) -> str:
    if x is None:
        return ""
    return f"{x:.2f}" if x < 10 else f"{x:.0f}"


def _x(ratio: float | None) -> str:
    return "" if ratio is None else f"{ratio:.2f}"


def _line(row: dict[str, Any]) -> str:
    m, j = row["model"], row["java"]
    return (f"  {row['problem']:<26} {row['phase']:<9} {row['assignor']:<18}"
            f" model {_ms(m['wall_ms'])} ms (CPU {_ms(m['cpu_ms'])})"
            f"  java {_ms(j['jvm_ms'])} ms (CPU {_ms(j['thread_cpu_ms'])}, round trip {_ms(j['round_trip_ms'])})"
            f"  model/java {_x(row['ratio'])} (CPU {_x(row['cpu_ratio'])})  same={'yes' if row['same'] else 'NO'}")


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
    parser.add_argument("--repeat", type=int, help="model runs per measurement, best kept (default 3 quick, 1 full)")
    parser.add_argument("--java-repeat", type=int,
                        help="Java runs per measurement inside the JVM, best kept (default 3 quick, 2 full)")
    parser.add_argument("--heap", help="the peer JVM's -Xmx (default 1g quick, 4g full)")
    parser.add_argument("--out", type=Path, default=Path("reports/bench"))
    args = parser.parse_args(argv)
    repeat = args.repeat or (3 if args.quick else 1)
    java_repeat = args.java_repeat or (3 if args.quick else 2)
    heap = args.heap or ("1g" if args.quick else "4g")

    from groupspec.render import Document, Table, to_markdown, write_report

    rows: list[dict[str, Any]] = []
    with JavaAssignorPeer(heap=heap) as java:
        warm_up(java)
        for problem in cases(args.quick):
            print(f"{problem.name}: {problem.partitions} partitions, {len(problem.subscriptions)} members", flush=True)
            rows.extend(measure(java, problem, repeat, java_repeat, lambda s: print(s, flush=True)))
        info = machine(java, heap)

    table = Table(
        ["problem", "phase", "assignor", "model ms", "model CPU ms", "Java ms", "Java CPU ms", "model/java",
         "model/java CPU", "Java round trip ms", "same"],
        [[r["problem"], r["phase"], r["assignor"], _ms(r["model"]["wall_ms"]), _ms(r["model"]["cpu_ms"]),
          _ms(r["java"]["jvm_ms"]), _ms(r["java"]["thread_cpu_ms"]), _x(r["ratio"]), _x(r["cpu_ratio"]),
          _ms(r["java"]["round_trip_ms"]), "yes" if r["same"] else "NO"] for r in rows],
        caption=f"Model: best of {repeat} run(s) in this process. Java: best of {java_repeat} run(s) inside the "
                "JVM, each on a new assignor instance after a System.gc(); Java CPU is the CPU time of the thread "
                "that ran the assignor (GC and JIT threads not included; the JSON report also has the whole "
                "JVM's, at 10 ms resolution). model/java above 1: Java is faster. Java round "
                "trip: one call from Python, JSON both ways and subscriptions built as clients build them.")
    command = "python -m benchmarks java_assignors" + (" -- " + " ".join(argv) if argv else "")
    doc = Document("Assignor benchmark: model vs Apache Kafka's Java assignors", [
        f"Command: `{command}`. Machine: {info['implementation']} {info['python']}, Java {info['java']} "
        f"(-Xmx{heap}), kafka-clients {info['kafka_clients']}, {info['cpus']} CPUs, {info['platform']}; "
        f"load average at the end {info.get('load_average')}.",
        table])
    print()
    print(to_markdown(doc))
    data = {"benchmark": "java_assignors", "command": command, "quick": args.quick, "repeat": repeat,
            "java_repeat": java_repeat,
            "machine": info, "rows": rows}
    for path in write_report(args.out, "java_assignors", data, doc):
        print(f"wrote {path}")
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
