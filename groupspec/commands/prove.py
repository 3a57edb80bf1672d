"""``groupspec prove``: run the proof obligations and their mutants, write proof.json / .md / .html.

Exit 0 iff every selected obligation is proved and every selected mutant refuted; 1 otherwise;
2 on bad usage (an unknown ``--only`` name, an unwritable ``--out``).

The obligations live in ``model.proofs`` (pure: they do not read the clock); this command times
them and, with ``--deep``, raises the bounds of the bounded ones until a time budget is spent,
recording how far each got.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from groupspec.errors import EXIT_OK, EXIT_VIOLATION, InputError, writable_dir

NAME = "prove"
HELP = "prove the model's invariants with Z3, refute its mutants, write the proof report"

DEFAULT_DEEP_BUDGET_S = 600.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="reports", metavar="DIR",
                        help="where proof.json, proof.md and proof.html go (default: reports/)")
    parser.add_argument("--deep", action="store_true",
                        help="raise the bounds of the bounded checks until the time budget is spent")
    parser.add_argument("--deep-budget", type=float, default=DEFAULT_DEEP_BUDGET_S, metavar="SECONDS",
                        help=f"total time for --deep (default {DEFAULT_DEEP_BUDGET_S:.0f} s)")
    parser.add_argument("--only", action="append", default=[], metavar="ID",
                        help="an obligation id, an invariant id or a mutant name (repeatable)")
    parser.add_argument("--timeout-ms", type=int, default=None, metavar="MS",
                        help="Z3 timeout per query (default 20000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated instances (default 0)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def _queries(outcome: Any) -> list[dict[str, Any]]:
    return [q.to_json() for q in outcome.queries]


def run_proofs(only: Sequence[str] = (), *, deep: bool = False, deep_budget_s: float = DEFAULT_DEEP_BUDGET_S,
               timeout_ms: int | None = None, seed: int = 0,
               progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the selected obligations and mutants; return the proof.json document."""
    from model.mutants import MUTANTS
    from model.proofs import mutation_score
    from model.proofs import obligations as reg
    from model.proofs.core import RunConfig
    from model.proofs.solver import DEFAULT_TIMEOUT_MS, Status, z3_version

    say = progress or (lambda _msg: None)
    try:
        selected, mutant_names = reg.select(only)
    except KeyError as exc:
        raise InputError(f"--only: {exc.args[0]}") from None
    timeout = timeout_ms or DEFAULT_TIMEOUT_MS
    base = RunConfig(timeout_ms=timeout, seed=seed)
    deep_obligations = [ob for ob in selected if ob.deepen is not None]
    per_deep = deep_budget_s / max(1, len(deep_obligations))

    obligations: list[dict[str, Any]] = []
    for ob in selected:
        say(f"proving {ob.id} ...")
        out, seconds = _timed(lambda ob=ob: ob.run(base))  # type: ignore[misc]
        entry: dict[str, Any] = {
            "id": ob.id, "invariant": ob.invariant, "scope": ob.scope, "statement": ob.statement,
            "source": ob.source, "bounds": dict(out.bounds or ob.bounds), "assumptions": list(ob.assumptions),
            "about": reg.about(ob.id),
            "status": out.status.value, "seconds": round(seconds, 3), "summary": out.summary,
            "queries": _queries(out), "facts": _jsonable(out.facts), "mutants": list(ob.mutants), "refutes": [],
        }
        if out.counterexample:
            entry["counterexample"] = list(out.counterexample)
        if deep and ob.deepen is not None and out.status is Status.PROVED:
            entry["deep"] = _deepen(ob, out.bounds or ob.bounds, per_deep, base, say)
        say(f"  {ob.id}: {entry['status']} in {seconds:.2f} s")
        obligations.append(entry)

    by_id = {e["id"]: e for e in obligations}
    mutants: list[dict[str, Any]] = []
    for name in mutant_names:
        m = MUTANTS[name]
        runs = [ob for ob in selected if name in ob.mutants]
        record: dict[str, Any] = {"name": name, "where": m.where, "statement": m.statement,
                                  "reference": m.reference, "status": "survived", "refuted_by": [],
                                  "runs": [], "counterexample": []}
        for ob in runs:
            say(f"mutant {name} against {ob.id} ...")
            cfg = RunConfig(mutants=frozenset({name}), timeout_ms=timeout, seed=seed)
            out, seconds = _timed(lambda ob=ob, cfg=cfg: ob.run(cfg))  # type: ignore[misc]
            refuted = out.refutes
            record["runs"].append({"obligation": ob.id, "status": "refuted" if refuted else "survived",
                                   "proof_status": out.status.value, "seconds": round(seconds, 3),
                                   "summary": out.summary, "queries": _queries(out)})
            if refuted:
                record["refuted_by"].append(ob.id)
                by_id[ob.id]["refutes"].append(name)
                if not record["counterexample"]:
                    record["status"] = "refuted"
                    record["invariant"] = out.violated
                    record["counterexample"] = list(out.counterexample)
                    record["explanation"] = out.summary
        if not runs:
            record["summary"] = "no selected obligation is run on this mutant"
        mutants.append(record)

    for entry in obligations:  # a proof none of whose mutants it refutes proves nothing
        own = [m for m in entry["mutants"] if m in mutant_names]
        if own and not entry["refutes"] and entry["status"] == Status.PROVED.value:
            entry["status"] = Status.FAILED.value
            entry["summary"] += f" -- but none of its mutants ({', '.join(own)}) fails it: vacuous"

    used: dict[str, list[str]] = {a: [] for a in reg.ASSUMPTIONS}
    for ob in selected:
        for a in ob.assumptions:
            used[a].append(ob.id)
    assumptions = [{"id": a.id, "statement": a.statement, "used_by": used[a.id]}
                   for a in reg.ASSUMPTIONS.values()]

    proved = sum(1 for e in obligations if e["status"] == Status.PROVED.value)
    refuted = sum(1 for m in mutants if m["status"] == "refuted")
    doc: dict[str, Any] = {
        "solver": z3_version(),
        "deep": deep,
        "seed": seed,
        "timeout_ms": timeout,
        "only": list(only),
        "obligations": obligations,
        "mutants": mutants,
        "assumptions": assumptions,
        "findings": _findings(selected),
        "summary": {"obligations": len(obligations), "proved": proved, "mutants": len(mutants),
                    "refuted": refuted,
                    "unbounded_max_seconds": max((e["seconds"] for e in obligations
                                                  if e["scope"] == "unbounded"), default=0.0),
                    "total_seconds": round(sum(e["seconds"] for e in obligations)
                                           + sum(r["seconds"] for m in mutants for r in m["runs"]), 3)},
    }
    doc["held"] = proved == len(obligations) and refuted == len(mutants)
    # measured, not proved: shown beside the obligations, never part of "held" (benchmarks/bench_mutation.py)
    doc["mutation_score"] = mutation_score.for_report()
    return doc


def _deepen(ob: Any, bounds: Mapping[str, int], budget: float, base: Any,
            say: Callable[[str], None]) -> dict[str, Any]:
    """Raise an obligation's bounds while it keeps being proved and the next attempt fits the budget.

    The model code has no clock, so an attempt cannot be interrupted; instead the next attempt's
    time is estimated from how the last ones grew, and the driver stops when it would not fit.
    """
    from dataclasses import replace

    from model.proofs.solver import Status

    assert ob.deepen is not None
    reached = dict(bounds)
    attempts: list[dict[str, Any]] = []
    spent = 0.0
    current = ob.deepen(bounds)
    stopped = "budget"
    last: float | None = None
    growth = 3.0
    while spent < budget:
        if last is not None and spent + last * growth > budget:
            stopped = f"the next attempt ({dict(current)}) would take about {last * growth:.0f} s, beyond the budget"
            break
        remaining_ms = int(max(1.0, budget - spent) * 1000)
        cfg = replace(base, bounds=dict(current), timeout_ms=min(base.timeout_ms * 10, remaining_ms))
        say(f"  deep {ob.id} at {dict(current)} ...")
        out, seconds = _timed(lambda cfg=cfg: ob.run(cfg))
        spent += seconds
        attempts.append({"bounds": dict(current), "status": out.status.value, "seconds": round(seconds, 3)})
        if out.status is not Status.PROVED:
            stopped = f"{out.status.value} at {dict(current)}"
            break
        reached = dict(current)
        if last is not None and last > 0.05:
            growth = max(2.0, seconds / last)
        last = seconds
        current = ob.deepen(current)
    return {"reached": reached, "attempts": attempts, "budget_seconds": round(budget, 1),
            "seconds": round(spent, 3), "stopped": stopped}


def _findings(selected: Sequence[Any]) -> list[dict[str, Any]]:
    """Facts the proofs established that the reader must know (e.g. a catalogue predicate the
    correct model does not satisfy), collected from the protocol module if it ran."""
    try:
        from model.proofs import findings
    except ImportError:
        return []
    return findings.collect([ob.id for ob in selected])


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def run(args: argparse.Namespace) -> int:
    from groupspec.proof_report import write

    out_dir = Path(args.out)
    quiet = bool(args.quiet)

    def progress(msg: str) -> None:
        if not quiet:
            print(msg, file=sys.stderr, flush=True)

    if args.timeout_ms is not None and args.timeout_ms <= 0:
        raise InputError("--timeout-ms: must be a positive number of milliseconds")
    if args.deep_budget <= 0:
        raise InputError("--deep-budget: must be a positive number of seconds")
    writable_dir(out_dir)  # before a minute of proving, not after
    doc = run_proofs(args.only, deep=args.deep, deep_budget_s=args.deep_budget, timeout_ms=args.timeout_ms,
                     seed=args.seed, progress=progress)
    try:
        paths = write(out_dir, doc)
    except OSError as exc:
        raise InputError(f"--out {out_dir}: cannot write the report ({exc.strerror or exc})") from None
    s = doc["summary"]
    print(f"proofs: {s['proved']}/{s['obligations']} obligations proved, {s['refuted']}/{s['mutants']} mutants "
          f"refuted ({doc['solver']}); report: {', '.join(str(p) for p in paths)}")
    return EXIT_OK if doc["held"] else EXIT_VIOLATION
