"""Proof benchmarks, each side by side with its peer, as a ratio in one run.

1. **Stickiness certificate vs Z3 Optimize.** The same oracle problems (``model.stickiness``),
   certified two ways: ours (two feasibility queries: k kept is reachable, k+1 is not, over
   symmetry-reduced count variables) and Z3's ``Optimize`` maximising the kept count over the same
   constraints. Optimize gets a time limit; when it hits it, the ratio is a lower bound ("> x").
2. **Unbounded induction vs brute force.** The protocol's safety invariants proved by induction
   for every number of consumers and partitions (``model.proofs.protocol``), against exhaustive
   breadth-first exploration of the executable model itself (``model.system``, the TLA+-style
   approach) from the empty group with consumers starting, crashing and leaving, at growing bounds
   (consumers x partitions, a depth limit, a state limit). The table shows how far brute force gets
   and how long it takes, next to the time of the proof that covers every bound.
3. The whole default ``groupspec prove`` run, and each unbounded obligation's time.

``python -m benchmarks proofs [-- --quick]``; results go to reports/bench/proofs.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections import deque
from pathlib import Path
from typing import Any

import z3

from model import system as sy
from model.proofs import certificate, protocol
from model.proofs.core import RunConfig
from model.proofs.solver import Prover
from model.stickiness import oracle_problem, solve


def _certificate_vs_optimize(sizes: list[tuple[int, int]], optimize_limit_s: float) -> list[dict[str, Any]]:
    from model.proofs import concrete

    rows = []
    for (members, partitions), kind in [(size, kind) for size in sizes for kind in (0, 1)]:
        # instances() alternates equal (Quota constraint) and unequal (Counts) subscriptions
        topics, subs, _ = certificate.instances(7, 2, members, partitions)[kind]
        result = concrete.run_assignor("sticky", topics, subs)
        problem = oracle_problem(topics, subs, result.assignment)
        t0 = time.perf_counter()
        prover = Prover(timeout_ms=600_000)
        k, ok = certificate.certify(topics, subs, result.assignment, prover, "bench")
        ours = time.perf_counter() - t0
        constraints, kept, _ = certificate._encode(problem, "_opt")
        opt = z3.Optimize()
        opt.set("timeout", int(optimize_limit_s * 1000))
        opt.add(*constraints)
        opt.maximize(kept)
        t0 = time.perf_counter()
        answer = opt.check()
        theirs = time.perf_counter() - t0
        optimum = opt.model().eval(kept).as_long() if answer == z3.sat else None
        timed_out = answer != z3.sat or theirs >= optimize_limit_s * 0.99
        rows.append({"subscriptions": "equal" if kind == 0 else "unequal",
                     "members": len(subs), "partitions": sum(topics.values()), "k": k, "certified": ok,
                     "certificate_s": round(ours, 3), "optimize_s": round(theirs, 3),
                     "optimize_result": optimum if not timed_out else "timeout",
                     "flow_k": solve(problem),
                     "ratio": (">" if timed_out else "") + f"{theirs / ours:.1f}"})
    return rows


def _brute_force(members: int, partitions: int, max_states: int, max_depth: int) -> dict[str, Any]:
    """Exhaustive BFS over model.system from the empty group, faults included, checking the catalogue's
    per-generation single ownership on every state (the property the induction proves)."""
    config = sy.SystemConfig(session_timeout_ms=6000, rebalance_timeout_ms=4000, heartbeat_interval_ms=3000,
                             max_poll_interval_ms=300000)
    start = sy.initial_state(config, [("t", partitions)])
    names = [f"m{i}" for i in range(members)]
    seen = {start}
    queue: deque[tuple[sy.SystemState, int]] = deque([(start, 0)])
    t0 = time.perf_counter()
    depth_reached = 0
    complete = True
    while queue:
        state, depth = queue.popleft()
        depth_reached = max(depth_reached, depth)
        if depth >= max_depth:
            complete = False
            continue
        actions: list[sy.Action] = list(sy.enabled(state))
        for n in names:
            p = sy.process(state, n)
            if p is None or p.member is None:
                actions.append(sy.MemberStarts(n, ("t",), ("cooperative-sticky",)))
            else:
                actions += [sy.MemberCrashes(n), sy.MemberLeaves(n)]
        for a in actions:
            res = sy.step(state, a, config)
            if res is None or res[0] in seen:
                continue
            if len(seen) >= max_states:
                complete = False
                break
            seen.add(res[0])
            queue.append((res[0], depth + 1))
        if len(seen) >= max_states:
            complete = False
            break
    return {"consumers": members, "partitions": partitions, "states": len(seen), "depth": depth_reached,
            "exhausted": complete, "seconds": round(time.perf_counter() - t0, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_proofs")
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    parser.add_argument("--out", default="reports/bench", help="directory for proofs.json")
    args = parser.parse_args(argv)
    quick = args.quick

    sizes = [(20, 200), (60, 600)] if quick else [(40, 400), (120, 1200), (300, 3000), (600, 6000)]
    cert = _certificate_vs_optimize(sizes, optimize_limit_s=10 if quick else 60)
    print("certificate (k reachable, k+1 not) vs Z3 Optimize, same constraints")
    print(f"{'subs':>8} {'members':>8} {'partitions':>10} {'k':>6} {'certificate s':>14} {'Optimize s':>11} "
          f"{'ratio':>7}")
    for r in cert:
        print(f"{r['subscriptions']:>8} {r['members']:>8} {r['partitions']:>10} {r['k']:>6} {r['certificate_s']:>14.3f} "
              f"{r['optimize_s']:>11.3f} {r['ratio']:>7}")

    t0 = time.perf_counter()
    proof_times = {}
    for ob in protocol.OBLIGATIONS:
        s0 = time.perf_counter()
        out = ob.run(RunConfig())
        proof_times[ob.id] = (round(time.perf_counter() - s0, 3), out.status.value)
    induction_s = time.perf_counter() - t0
    bounds = [(2, 2), (3, 2)] if quick else [(2, 2), (3, 2), (3, 3), (4, 4)]
    brute = [_brute_force(m, p, max_states=20_000 if quick else 200_000, max_depth=40 if quick else 80)
             for m, p in bounds]
    print(f"\nunbounded induction (all protocol obligations, every consumer/partition count): {induction_s:.2f} s")
    print(f"{'consumers':>9} {'partitions':>10} {'states':>8} {'depth':>6} {'exhausted':>9} {'seconds':>8} "
          f"{'ratio vs proof':>15}")
    for b in brute:
        print(f"{b['consumers']:>9} {b['partitions']:>10} {b['states']:>8} {b['depth']:>6} {str(b['exhausted']):>9} "
              f"{b['seconds']:>8.2f} {b['seconds'] / induction_s:>15.2f}")

    doc = {"machine": {"python": platform.python_version(), "platform": platform.platform(),
                       "z3": z3.get_version_string()},
           "quick": quick, "certificate_vs_optimize": cert,
           "induction_seconds": round(induction_s, 3), "protocol_obligations": proof_times, "brute_force": brute}
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "proofs.json").write_text(json.dumps(doc, indent=2) + "\n")
    print(f"\nwritten {out_dir / 'proofs.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
