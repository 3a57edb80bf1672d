"""Conformance campaigns on the mock: scenarios per minute, one group at a time vs two side by side.

``python -m benchmarks conformance [-- --examples N --seed S]``: draws ``N`` range scenarios (three or
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

from conformance import campaign

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


def measure(plan: campaign.Plan, workers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="groupspec-bench-") as tmp:
        t0 = time.monotonic()
        records = campaign.campaign(plan, Path(tmp), workers=workers)
        wall = time.monotonic() - t0
        rebalances = [ms for r in records if r.verdict != "unsupported" for ms in rebalance_ms(Path(r.out_dir))]
    return {"workers": workers, "scenarios": len(records), "wall_s": round(wall, 1),
            "per_minute": round(len(records) / wall * 60, 1),
            "verdicts": {v: sum(1 for r in records if r.verdict == v) for v in campaign.VERDICTS},
            "rebalance_ms_median": statistics.median(rebalances) if rebalances else None,
            "rebalance_ms_p90": sorted(rebalances)[int(len(rebalances) * 0.9)] if rebalances else None,
            "rebalances": len(rebalances)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks conformance")
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args(argv)
    plan = campaign.plan(args.seed, args.examples, ["range"], [CLIENTS])
    rows = [measure(plan, 1), measure(plan, 2)]
    result = {"what": "conformance campaign on the mock, range, mixed 3-client groups of 3-4 members",
              "runs": rows, "speedup_two_workers": round(rows[1]["per_minute"] / rows[0]["per_minute"], 2)}
    out = Path("reports/bench")
    out.mkdir(parents=True, exist_ok=True)
    (out / "conformance.json").write_text(json.dumps(result, indent=2) + "\n")
    for r in rows:
        print(f"workers {r['workers']}: {r['scenarios']} scenarios in {r['wall_s']} s = {r['per_minute']}/min; "
              f"rebalance median {r['rebalance_ms_median']} ms, p90 {r['rebalance_ms_p90']} ms; {r['verdicts']}")
    print(f"two workers vs one: x{result['speedup_two_workers']}")
    return 0
