"""The golden comparison: which model traces a change to the model changed, run by run.

``python -m tests.model.golden record FILE [--traces DIR]`` runs the golden set and writes one digest
per run (a SHA-256 of the trace, its length, the monitor's verdicts, the final state) to FILE;
``python -m tests.model.golden compare OLD NEW`` lists the runs whose digest differs (exit 1 when
any did, 0 when every run is byte-identical). ``--traces DIR`` also keeps each run's trace (JSON
Lines) and verdicts there, so that two directories can be diffed to say *why* a trace changed.

The golden set (docs/benchmarks.md, "the golden check"):

* every scenario in examples/ x seeds 0-4, through the simulator with the invariant monitor (what
  ``groupspec simulate`` runs);
* three examples x every mutant of ``model.mutants`` x seeds 0-1;
* fifteen seeded random walks of tests/model/test_stateful_walks.py (every assignor list x seeds
  0-2), with the monitor's verdicts and the final state.

Refactors must leave every digest unchanged; a behaviour change must list the runs it changed and
why (docs/protocol-model.md keeps that list for issue 12).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
from collections.abc import Iterator
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import Any

from model import mutants as mutant_registry
from model.invariants.protocol import Monitor
from model.scenario import parse
from model.system_run import simulate
from tests.model.test_stateful_walks import ASSIGNOR_LISTS, walk_to_end

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("scenario-*.json"))
MUTANT_EXAMPLES = ("scenario-cooperative-scale-out.json", "scenario-static-zombie.json",
                   "scenario-delivery-autocommit-crash.json")


def canonical(value: Any) -> Any:
    """A JSON-able form of a model value that does not depend on hash order (sets sorted)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # Fields at their default are left out, so that a field added to the model changes the
        # digest of a state only where it takes another value.
        return {f.name: canonical(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.default is dataclasses.MISSING or getattr(value, f.name) != f.default}
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, dict):
        return sorted(([canonical(k), canonical(v)] for k, v in value.items()), key=json.dumps)
    if isinstance(value, (set, frozenset)):
        return sorted((canonical(v) for v in value), key=json.dumps)
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value


def _digest(trace: str, verdicts: list[dict[str, Any]], final: Any) -> dict[str, Any]:
    return {"trace": hashlib.sha256(trace.encode()).hexdigest()[:16], "events": trace.count("\n"),
            "verdicts": [f"{v['invariant']}@{v['time']}" for v in verdicts],
            "final": hashlib.sha256(json.dumps(canonical(final)).encode()).hexdigest()[:16]}


def runs() -> Iterator[tuple[str, str, list[dict[str, Any]], Any]]:
    """(run id, trace, verdicts, final state) for every run of the golden set."""
    def scenario_run(path: Path, seed: int, mutants: frozenset[str]) -> tuple[str, list[dict[str, Any]], Any]:
        scenario = parse(json.loads(path.read_text(encoding="utf-8")))
        monitor = Monitor(replace(scenario.config, mutants=mutants))
        result = simulate(scenario, seed=seed, mutants=mutants, observer=monitor.observe)
        assert result.final is not None
        monitor.finish(result.final)
        trace = "".join(json.dumps(e) + "\n" for e in result.events)
        return trace, [v.to_json() for v in monitor.violations], result.final

    for path in EXAMPLES:
        for seed in range(5):
            yield (f"example/{path.stem}/seed{seed}", *scenario_run(path, seed, frozenset()))
    for name in MUTANT_EXAMPLES:
        for mutant in sorted(mutant_registry.MUTANTS):
            for seed in range(2):
                yield (f"mutant/{Path(name).stem}/{mutant}/seed{seed}",
                       *scenario_run(ROOT / "examples" / name, seed, frozenset({mutant})))
    for assignors in ASSIGNOR_LISTS:
        for seed in range(3):
            monitor, _, final = walk_to_end(seed, assignors)
            verdicts = [v.to_json() for v in monitor.violations]
            yield f"walk/{'+'.join(assignors)}/seed{seed}", json.dumps(verdicts) + "\n", verdicts, final


def record(out: Path, traces: Path | None) -> int:
    digests: dict[str, Any] = {}
    for n, (run_id, trace, verdicts, final) in enumerate(runs(), 1):
        digests[run_id] = _digest(trace, verdicts, final)
        if traces is not None:
            target = traces / (run_id.replace("/", "__") + ".jsonl")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(trace + "".join(json.dumps(v) + "\n" for v in verdicts), encoding="utf-8")
        if n % 20 == 0:
            print(f"golden: {n} runs", file=sys.stderr, flush=True)
    out.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"golden: {len(digests)} runs -> {out}", file=sys.stderr)
    return 0


def compare(old: Path, new: Path) -> int:
    a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (old, new))
    changed = [k for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]
    for k in changed:
        before, after = a.get(k), b.get(k)
        what = ("added" if before is None else "removed" if after is None else
                ", ".join(f for f in ("trace", "events", "verdicts", "final") if before[f] != after[f]))
        print(f"{k}: {what}")
        if before and after and before["verdicts"] != after["verdicts"]:
            print(f"    verdicts {before['verdicts']} -> {after['verdicts']}")
    print(f"{len(changed)} of {len(a.keys() | b.keys())} runs changed", file=sys.stderr)
    return 1 if changed else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.model.golden", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out", type=Path)
    rec.add_argument("--traces", type=Path)
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("old", type=Path)
    cmp_.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    if args.command == "record":
        return record(args.out, args.traces)
    return compare(args.old, args.new)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
