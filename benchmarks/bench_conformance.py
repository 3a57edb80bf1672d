"""Conformance campaigns on the mock: scenarios per minute, one group at a time vs two side by side.

``python -m benchmarks conformance [-- --examples N --seed S --workers 1,2,4 --cold --keep DIR]``: draws ``N`` range scenarios (three or
four members of a mixed librdkafka / kafka-python / aiokafka group, conformance/strategies.py), runs them
once with one worker and once with two (the peer is the sequential run: the ratio says what running
independent groups side by side on the machine's cores buys), and measures how long each rebalance took
on the wire (first JoinGroup of a generation to its last SyncGroup answer). Numbers go to
reports/bench/conformance.json; docs/benchmarks.md records them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from conformance import campaign, strategies

CLIENTS = ["confluent-kafka", "kafka-python", "aiokafka"]


def rebalance_ms(run_dir: Path) -> list[int]:
    """Per generation: first JoinGroup answer's generation -> (first JoinGroup request since the previous
    generation completed, last SyncGroup answer of that generation)."""
    wire = [json.loads(line) for line in (run_dir / "group-wire.jsonl").read_text().splitlines() if line]
    out: list[int] = []
    start: int | None = None
    for m in wire:
        if m["api"] == "JoinGroup" and m["kind"] == "request" and start is None:
            start = m["timestamp"]
        if m["api"] == "SyncGroup" and m["kind"] == "response" and m.get("error") == "NONE" and start is not None:
            out.append(m["timestamp"] - start)
            start = None
    return out


def measure(plan: campaign.Plan, workers: int, warm: bool = True, keep: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="groupspec-bench-") as tmp:
        out = Path(tmp) if keep is None else keep / f"workers-{workers}{'' if warm else '-cold'}"
        t0 = time.monotonic()
        records = campaign.campaign(plan, out, workers=workers, warm=warm)
        wall = time.monotonic() - t0
        rebalances = [ms for r in records if r.verdict != "unsupported" for ms in rebalance_ms(Path(r.out_dir))]
    phases: dict[str, float] = {}
    for r in records:
        for name, seconds in r.phases.items():
            phases[name] = phases.get(name, 0.0) + seconds
    steps: dict[str, int] = {}
    for _, doc, _ in plan.runs:
        for step in doc["steps"]:
            steps[step["do"]] = steps.get(step["do"], 0) + 1
    n = max(len(records), 1)
    return {"workers": workers, "warm": warm, "scenarios": len(records), "wall_s": round(wall, 1),
            "per_minute": round(len(records) / wall * 60, 1),
            "verdicts": {v: sum(1 for r in records if r.verdict == v) for v in campaign.VERDICTS},
            "divergent_runs": [Path(r.out_dir).name for r in records if r.verdict == "divergence"],
            "rebalance_ms_median": statistics.median(rebalances) if rebalances else None,
            "rebalance_ms_p90": sorted(rebalances)[int(len(rebalances) * 0.9)] if rebalances else None,
            "rebalances": len(rebalances), "rebalances_per_scenario": round(len(rebalances) / n, 1),
            "steps": steps,
            # Summed over runs, then per scenario: where one scenario's wall time goes.
            "phase_s_per_scenario": {k: round(v / n, 2) for k, v in sorted(phases.items(), key=lambda kv: -kv[1])},
            "run_s_per_scenario": round(sum(r.seconds for r in records) / n, 2)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks conformance")
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--workers", default="1,2,6", help="comma-separated worker counts, the first is the peer")
    parser.add_argument("--cold", action="store_true", help="also run the largest worker count without the warm pool")
    parser.add_argument("--keep", type=Path, default=None, help="keep the campaigns' run directories here")
    parser.add_argument("--without", default="", help="comma-separated events not drawn (e.g. freeze: the "
                        "campaign drawn before freezes existed, for a comparison with earlier numbers)")
    args = parser.parse_args(argv)
    events = tuple(e for e in strategies.EVENTS if e not in args.without.split(","))
    plan = campaign.plan(args.seed, args.examples, ["range"], [CLIENTS], events)
    counts = [int(w) for w in args.workers.split(",") if w]
    rows = [measure(plan, w, keep=args.keep) for w in counts]
    if args.cold:
        rows.append(measure(plan, counts[-1], warm=False, keep=args.keep))
    result = {"what": "conformance campaign on the mock, range, mixed 3-client groups of 3-4 members",
              "runs": rows, "speedup_vs_first": [round(r["per_minute"] / rows[0]["per_minute"], 2) for r in rows]}
    out = Path("reports/bench")
    out.mkdir(parents=True, exist_ok=True)
    (out / "conformance.json").write_text(json.dumps(result, indent=2) + "\n")
    for r in rows:
        print(f"workers {r['workers']}{'' if r['warm'] else ' (cold starts)'}: {r['scenarios']} scenarios in "
              f"{r['wall_s']} s = {r['per_minute']}/min; rebalance median {r['rebalance_ms_median']} ms, "
              f"p90 {r['rebalance_ms_p90']} ms, {r['rebalances_per_scenario']} per scenario; {r['verdicts']}")
        print(f"  per scenario: run {r['run_s_per_scenario']} s; {r['phase_s_per_scenario']}")
    print(f"vs {rows[0]['workers']} worker(s): {result['speedup_vs_first']}")
    return 0
