"""``groupspec simulate SCENARIO.json``: run a scenario through the model and print its trace.

The scenario (docs/scenarios.md) is run by the model's transition system (``model.system``) under
the simulator's scheduling policy (``model.system_run``): scenario steps at their ``at`` times, the
system running deterministically in between, the seed choosing among simultaneous message
deliveries. The trace, JSON Lines in groupspec's event format, goes to stdout (or ``--out FILE``); a
short summary for people -- the generations, who owned what at the end, the invariants -- goes to
stderr. Every protocol invariant (``model.invariants.protocol``) is checked along the run. When the
scenario has records (producers or delivery settings), the summary also counts, per partition, the
records produced, consumed, consumed again and skipped (``model.records``).

Exit 0 when every invariant held, 1 when one did not (including the violations Kafka itself
commits, which the summary marks as known Kafka behaviour), 2 for a scenario that cannot be run.
``--mutant NAME`` (repeatable) switches on a mutant of ``model.mutants``; ``--report DIR`` also
writes simulate.json / .md / .html with an ownership timeline.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from groupspec import timefmt
from groupspec.errors import EXIT_OK, EXIT_VIOLATION, InputError
from groupspec.render import Document, Section, Table, write_report
from groupspec.timeline import from_events
from model import events as ev
from model import mutants as mutant_registry
from model import records as rec
from model import system as sy
from model.invariants.protocol import KNOWN_GAPS, WARNINGS, Monitor
from model.scenario import Scenario, ScenarioError, parse
from model.system_run import Run, simulate
from model.types import TopicPartition

NAME = "simulate"
HELP = "run a scenario (JSON) through the model; print its trace (JSONL) and check the protocol invariants"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", metavar="SCENARIO.json", help="the scenario file, or - for stdin")
    parser.add_argument("--mutant", action="append", default=[], metavar="NAME",
                        help="switch on a mutant (repeatable); see model/mutants.py")
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help="picks among simultaneous message deliveries (default 0)")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the trace here instead of stdout")
    parser.add_argument("--report", type=Path, metavar="DIR",
                        help="also write simulate.json, simulate.md and simulate.html into DIR")


def load_scenario(source: str) -> Scenario:
    """Read and check a scenario file; every problem is an :class:`InputError` naming the place."""
    name = "<stdin>" if source == "-" else source
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the scenario: {exc.strerror or exc}", source=name) from None
    except UnicodeDecodeError:
        raise InputError("the scenario is not UTF-8 text", source=name) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON (column {exc.colno}): {exc.msg}", source=name, line=exc.lineno) from None
    except RecursionError:  # json's decoder recurses once per level: the same answer as `assign`
        raise InputError("invalid JSON: nested too deeply", source=name) from None
    try:
        return parse(doc)
    except ScenarioError as exc:
        raise InputError(str(exc), source=name) from None


def _mutants(names: list[str]) -> frozenset[str]:
    chosen = frozenset(names)
    try:
        return mutant_registry.validate(chosen)
    except ValueError as exc:
        raise InputError(f"--mutant: {exc}") from None


def run(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario)
    mutants = _mutants(args.mutant)
    monitor = Monitor(replace(scenario.config, mutants=mutants))
    result = simulate(scenario, seed=args.seed, mutants=mutants, observer=monitor.observe)
    assert result.final is not None
    monitor.finish(result.final)
    if args.out is not None:
        try:
            with args.out.open("w", encoding="utf-8") as fh:
                _write_trace(result.events, fh)
        except OSError as exc:
            raise InputError(f"cannot write the trace: {exc.strerror or exc}", source=str(args.out)) from None
    else:
        _write_trace(result.events, sys.stdout)
        sys.stdout.flush()
    failed = [v for v in monitor.violations if v.invariant not in WARNINGS]
    print(summary(args.scenario, args.seed, mutants, result, monitor), file=sys.stderr, end="")
    if args.report is not None:
        data = report_data(args.scenario, args.seed, mutants, result, monitor)
        try:
            write_report(args.report, "simulate", data, report_document(data, result))
        except OSError as exc:
            raise InputError(f"cannot write the report: {exc.strerror or exc}", source=str(args.report)) from None
    return EXIT_VIOLATION if failed else EXIT_OK


def _write_trace(events: Iterable[dict[str, Any]], fh: TextIO) -> None:
    fh.writelines(json.dumps(e) + "\n" for e in events)


# -- the summary ------------------------------------------------------------------------------------


def ranges(tps: Iterable[TopicPartition]) -> str:
    """``orders-0..2, orders-5, audit-0``: partitions grouped by topic, consecutive runs collapsed."""
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(tps):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    parts: list[str] = []
    for topic, nums in by_topic.items():
        start = prev = nums[0]
        for n in [*nums[1:], None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            parts.append(f"{topic}-{start}" if start == prev else f"{topic}-{start}..{prev}")
            if n is not None:
                start = prev = n
    return ", ".join(parts) if parts else "nothing"


def _generations(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["name"] == ev.COORDINATOR_STABLE]


def final_owners(result: Run) -> dict[str, frozenset[TopicPartition]]:
    assert result.final is not None
    return {m.name: m.owned for m in sy.running(result.final)}


def summary(source: str, seed: int, mutants: frozenset[str], result: Run, monitor: Monitor) -> str:
    lines = [f"groupspec simulate {source}: seed {seed}, mutants {', '.join(sorted(mutants)) or 'none'}; "
             f"{result.transitions} transitions, {len(result.events)} events, "
             f"until {result.final.now if result.final else 0} ms"]
    gens = _generations(result.events)
    lines.append(f"generations ({len(gens)} stable):")
    for e in gens[-12:]:
        owners = "; ".join(f"{m}: {ranges(TopicPartition(p['topic'], p['partition']) for p in tps)}"
                           for m, tps in sorted(e.get("assignment", {}).items()))
        lines.append(f"  gen {e['generation']} at {e['timestamp']} ms, {e.get('assignor')}, leader "
                     f"{e.get('leader')}: {owners or 'no members'}")
    if len(gens) > 12:
        lines.append(f"  ... {len(gens) - 12} earlier generations not shown")
    owners_now = final_owners(result)
    lines.append("owned at the end: " + ("; ".join(f"{name}: {ranges(tps)}" for name, tps in owners_now.items())
                                         or "no member running"))
    for index, why in result.skipped:
        lines.append(f"skipped steps[{index}]: {why}")
    lines.extend(_records_lines(result))
    failed = [v for v in monitor.violations if v.invariant not in WARNINGS]
    warnings = [v for v in monitor.violations if v.invariant in WARNINGS]
    if not failed:
        lines.append(f"invariants: all held ({', '.join(i for i in monitor.checked if i not in WARNINGS)})")
    else:
        lines.append(f"invariants: {len(failed)} violation(s)")
        for v in failed[:20]:
            gap = f" [known Kafka behaviour: {v.known_kafka_gap}]" if v.known_kafka_gap else ""
            lines.append(f"  {v.invariant} at {v.time} ms: {v.message}{gap}")
        if len(failed) > 20:
            lines.append(f"  ... {len(failed) - 20} more")
        for gap in sorted({v.known_kafka_gap for v in failed if v.known_kafka_gap}):
            lines.append(f"  {gap}: {KNOWN_GAPS[gap]}")
    if warnings:
        lines.append(f"warnings: {len(warnings)} zombie-overlap (allowed by Kafka; the zombie's commits are fenced)")
    return "\n".join(lines) + "\n"


_RECORD_COLUMNS = ["partition", "produced", "consumed", "consumed again", "skipped before start", "lost", "unread"]


def record_counts(result: Run) -> dict[TopicPartition, rec.PartitionRecords] | None:
    """Per partition record counts, or None for a run without records."""
    if result.config.delivery is None or result.final is None:
        return None
    return rec.summarize(result.events, result.final.log)


def _record_numbers(pr: rec.PartitionRecords) -> list[int]:
    """One partition's counts, in the order of ``_RECORD_COLUMNS`` after "partition"."""
    return [pr.produced, pr.consumed, pr.duplicated, pr.before_start, pr.lost, pr.unread]


def _records_lines(result: Run) -> list[str]:
    parts = record_counts(result)
    if parts is None:
        return []
    total = rec.totals(parts)
    lines = [f"records: {total.produced} produced, {total.consumed} consumed, {total.duplicated} consumed again, "
             f"{total.skipped} skipped ({total.before_start} before the group's first position, {total.lost} lost), "
             f"{total.unread} not read yet"]
    for tp, pr in list(parts.items())[:24]:
        if pr.produced or pr.consumed:
            lines.append(f"  {tp}: {pr.produced} produced, {pr.consumed} consumed, {pr.duplicated} again, "
                         f"{pr.before_start} before start, {pr.lost} lost, {pr.unread} unread")
    if len(parts) > 24:
        lines.append(f"  ... {len(parts) - 24} more partitions in the --report")
    return lines


# -- the report -------------------------------------------------------------------------------------


def report_data(source: str, seed: int, mutants: frozenset[str], result: Run, monitor: Monitor) -> dict[str, Any]:
    failed = [v for v in monitor.violations if v.invariant not in WARNINGS]
    return {
        "scenario": source, "seed": seed, "mutants": sorted(mutants), "transitions": result.transitions,
        "events": len(result.events), "until": result.final.now if result.final else 0,
        "held": not failed,
        "invariants": {i: not any(v.invariant == i for v in monitor.violations) for i in monitor.checked},
        "violations": [v.to_json() for v in monitor.violations],
        "generations": [{"generation": e["generation"], "time": e["timestamp"], "leader": e.get("leader"),
                         "assignor": e.get("assignor"), "assignment": e.get("assignment", {})}
                        for e in _generations(result.events)],
        "skipped_steps": [{"step": i, "why": why} for i, why in result.skipped],
        "max_rebalances_after_disturbance": monitor.max_rebalances_after_faults,
        "records": None if (parts := record_counts(result)) is None else {
            str(tp): dict(zip(_RECORD_COLUMNS[1:], _record_numbers(pr), strict=True))
            for tp, pr in parts.items()},
    }


def report_document(data: dict[str, Any], result: Run) -> Document:
    known = sorted({v["known_kafka_gap"] for v in data["violations"] if v.get("known_kafka_gap")})
    verdict = "Held: every invariant held" if data["held"] else "NOT HELD: some invariants did not hold" + (
        f" (known Kafka behaviours among them: {', '.join(known)})" if known else "")
    blocks: list[Any] = [
        f"{verdict}. Scenario {data['scenario']}, seed {data['seed']}, mutants {', '.join(data['mutants']) or 'none'}: "
        f"{data['transitions']} transitions, {data['events']} events.",
        Table(["invariant", "held"], [[i, "yes" if ok else "no"] for i, ok in data["invariants"].items()],
              caption="Protocol invariants (zombie-overlap is a warning)"),
    ]
    if data["violations"]:
        blocks.append(Section("Violations", [Table(
            ["invariant", "time", "members", "what", "known Kafka behaviour"],
            [[v["invariant"], timefmt.iso_ms(v["time"]), ", ".join(v["members"]), v["message"], v.get("known_kafka_gap", "")]
             for v in data["violations"][:200]])]))
    blocks.append(Section("Generations", [Table(
        ["generation", "time", "assignor", "leader", "assignment"],
        [[g["generation"], timefmt.iso_ms(g["time"]), g["assignor"], g["leader"],
          "; ".join(f"{m}: {ranges(TopicPartition(p['topic'], p['partition']) for p in tps)}"
                    for m, tps in sorted(g["assignment"].items()))] for g in data["generations"]])]))
    if data["records"] is not None:
        blocks.append(Section("Records", [Table(
            _RECORD_COLUMNS, [[tp, *counts.values()] for tp, counts in data["records"].items()],
            caption="Consumed again: at-least-once duplicates at handoffs. Skipped before start: below the first "
                    "offset the group read (auto.offset.reset). Lost: holes after it.")]))
    blocks.append(from_events(result.events, "Who owned which partition when"))
    return Document("groupspec simulate", blocks)
