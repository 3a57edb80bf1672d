"""The model's four assignors against kafka-python's, on Kafka's own scale problems.

Run: ``python -m benchmarks assignors`` (full: Kafka's scale tests, minutes) or
``python -m benchmarks assignors -- --quick`` (small problems, seconds).

For each problem (benchmarks/problems.py) every assignor runs the *fresh* assignment and then the
*re-assignment* in which members 1..n-1 report what they were given (Kafka's scale tests do exactly
this). The model's assignors run in this process; kafka-python's (``range``, ``roundrobin``,
``sticky``: kafka-python 2.3.3 has no cooperative-sticky) run in a forked child that is killed when
it exceeds ``--timeout``. Only the assignor call is timed on both sides: for kafka-python
``assignor.assign(cluster, members)`` with the cluster metadata and decoded member metadata built
beforehand (tests/peers.py), for the model ``assign(partitions_per_topic, subscriptions)``, which
includes building the model's own result tuples. The model's cooperative-sticky is compared with
kafka-python's (eager) sticky, the only sticky peer there is.

Times are CPU seconds of the process doing the work (``time.process_time``, the best of
``--repeat`` runs), so that other work on a shared machine disturbs them less; wall seconds are
recorded too. ``ratio`` is kafka-python's time over the model's (above 1: the model is faster).

Output: a table on stdout, and reports/bench/assignors.{json,md,html} (``--out``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import multiprocessing
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import problems as P
from model.assignors import assign as model_assign
from model.types import GroupAssignment

MODEL = ("range", "roundrobin", "sticky", "cooperative-sticky")
PEER_OF = {"range": "range", "roundrobin": "roundrobin", "sticky": "sticky", "cooperative-sticky": "sticky"}


@dataclass
class Case:
    problem: P.Problem
    peer_sticky: bool  # run kafka-python's sticky here (it does not finish the large ones)


def cases(quick: bool) -> list[Case]:
    if quick:
        return [Case(P.uniform(10, 100, 40), True), Case(P.halves(10, 40, 40), True)]
    return [
        # kafka-python's sticky finishes these
        Case(P.uniform(50, 200, 200), True),
        Case(P.halves(50, 200, 200), True),
        # Kafka's scale tests (AbstractStickyAssignorTest)
        Case(P.halves(100, 200, 500), True),
        Case(P.uniform(500, 2000, 2000), False),
        Case(P.last_one_topic(500, 2000, 2000), False),
    ]


def _timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """(best CPU seconds, wall seconds of that run, result)."""
    best_cpu, best_wall, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if cpu < best_cpu:
            best_cpu, best_wall = cpu, wall
    return best_cpu, best_wall, result


def _peer_child(conn: Any, strategy: str, problem: P.Problem, repeat: int) -> None:
    import logging

    from tests.peers import ASSIGNORS, kafka_python_cluster, kafka_python_members

    logging.disable(logging.CRITICAL)  # kafka-python logs at WARNING per conflicting claim
    cluster = kafka_python_cluster(problem.partitions_per_topic, problem.subscriptions)
    members = list(kafka_python_members(strategy, problem.subscriptions).values())  # kafka-python 3.0: a list
    assignor = ASSIGNORS[strategy]()
    try:
        cpu, wall, result = _timed(lambda: assignor.assign(cluster, members), repeat)
    except Exception as e:  # a kafka-python bug on this input: report it, do not die
        conn.send({"error": f"{type(e).__name__} in kafka-python"})
    else:
        conn.send({"cpu": cpu, "wall": wall, "assigned": sum(len(a.partitions()) for a in result.values())})
    conn.close()


def run_peer(strategy: str, problem: P.Problem, repeat: int, timeout: float) -> dict[str, Any]:
    """kafka-python's assignor in a forked child; {"cpu", "wall", "assigned"} or {"timeout": seconds}."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_peer_child, args=(child, strategy, problem, repeat), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            return {"timeout": timeout}
        answer: dict[str, Any] = parent.recv()
        return answer
    except EOFError:
        return {"error": f"kafka-python child exited with {proc.exitcode}"}
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        parent.close()


def run_model(strategy: str, problem: P.Problem, repeat: int) -> tuple[dict[str, Any], GroupAssignment]:
    cpu, wall, result = _timed(
        lambda: model_assign(strategy, problem.partitions_per_topic, problem.subscriptions), repeat)
    assigned = sum(len(t) for t in result.assignment.values())
    return {"cpu": cpu, "wall": wall, "assigned": assigned, "withheld": len(result.transferring)}, result


def measure(case: Case, repeat: int, timeout: float, log: Callable[[str], None]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for strategy in MODEL:
        fresh = case.problem
        model, first = run_model(strategy, fresh, repeat)
        again = P.reassign(fresh, first)
        model_again, _ = run_model(strategy, again, repeat)
        peer = PEER_OF[strategy]
        for phase, problem, mine in (("fresh", fresh, model), ("re-assign", again, model_again)):
            row: dict[str, Any] = {"problem": fresh.name, "phase": phase, "partitions": fresh.partitions,
                                   "members": len(fresh.subscriptions), "assignor": strategy, "model": mine,
                                   "peer": f"kafka-python {peer}"}
            if peer == "sticky" and not case.peer_sticky:
                row["kafka_python"] = {"skipped": "not run: too large for it"}
            elif strategy == "cooperative-sticky" and "sticky" in _peer_cache(rows, fresh.name, phase):
                row["kafka_python"] = _peer_cache(rows, fresh.name, phase)["sticky"]
            else:
                row["kafka_python"] = run_peer(peer, problem, repeat, timeout)
            theirs = row["kafka_python"].get("cpu")
            row["ratio"] = theirs / mine["cpu"] if theirs is not None and mine["cpu"] > 0 else None
            rows.append(row)
            log(_line(row))
    return rows


def _peer_cache(rows: list[dict[str, Any]], name: str, phase: str) -> dict[str, dict[str, Any]]:
    return {r["assignor"]: r["kafka_python"] for r in rows
            if r["problem"] == name and r["phase"] == phase and r["assignor"] == "sticky"}


def _secs(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def _peer_cell(peer: dict[str, Any]) -> str:
    if "cpu" in peer:
        return _secs(peer["cpu"])
    if "timeout" in peer:
        return f"> {peer['timeout']:.0f} (timeout)"
    return str(peer.get("skipped") or peer.get("error"))



def _line(row: dict[str, Any]) -> str:
    ratio = "" if row["ratio"] is None else f"  x{row['ratio']:.1f}"
    return (f"  {row['problem']:<32} {row['phase']:<9} {row['assignor']:<18} model {_secs(row['model']['cpu'])} s"
            f"  kafka-python {_peer_cell(row['kafka_python'])}{ratio}")


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"python": sys.version.split()[0], "implementation": platform.python_implementation(),
                            "platform": platform.platform(), "cpus": os.cpu_count()}
    with contextlib.suppress(OSError):
        info["load_average"] = os.getloadavg()
    try:
        import kafka
        info["kafka_python"] = kafka.__version__
    except ImportError:
        pass
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks assignors", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small problems, a few seconds")
    parser.add_argument("--timeout", type=float, help="seconds allowed to each kafka-python run (default 20 quick, 300 full)")
    parser.add_argument("--repeat", type=int, help="runs per measurement, best kept (default 3 quick, 1 full)")
    parser.add_argument("--out", type=Path, default=Path("reports/bench"))
    args = parser.parse_args(argv)
    timeout = args.timeout or (20.0 if args.quick else 300.0)
    repeat = args.repeat or (3 if args.quick else 1)

    from groupspec.render import Document, Table, to_markdown, write_report

    warm = P.halves(4, 3, 4)  # imports and first-call costs out of the measurements
    for strategy in MODEL:
        model_assign(strategy, warm.partitions_per_topic, warm.subscriptions)
    rows: list[dict[str, Any]] = []
    for case in cases(args.quick):
        print(f"{case.problem.name}: {case.problem.partitions} partitions, {len(case.problem.subscriptions)} members",
              flush=True)
        rows.extend(measure(case, repeat, timeout, lambda s: print(s, flush=True)))

    table = Table(
        ["problem", "phase", "assignor", "model CPU s", "model wall s", "kafka-python", "kafka-python CPU s", "ratio"],
        [[r["problem"], r["phase"], r["assignor"], _secs(r["model"]["cpu"]), _secs(r["model"]["wall"]), r["peer"],
          _peer_cell(r["kafka_python"]), "" if r["ratio"] is None else f"{r['ratio']:.1f}"] for r in rows],
        caption="CPU seconds of the assignor call, best of the runs; ratio = kafka-python / model.")
    info = machine()
    command = "python -m benchmarks assignors" + (" -- " + " ".join(argv) if argv else "")
    doc = Document("Assignor benchmark: model vs kafka-python", [
        f"Command: `{command}`. Machine: {info['implementation']} {info['python']}, {info['cpus']} CPUs, "
        f"{info['platform']}; load average at the end {info.get('load_average')}.",
        table])
    print()
    print(to_markdown(doc))
    data = {"benchmark": "assignors", "command": command, "quick": args.quick, "repeat": repeat,
            "timeout": timeout, "machine": info, "rows": rows}
    for path in write_report(args.out, "assignors", data, doc):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
