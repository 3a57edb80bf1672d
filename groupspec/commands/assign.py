"""``groupspec assign PROBLEM.json|-``: run one assignor round and check what the assignor promises.

Reads an assignment problem (docs/assign.md), runs the named assignor of the model
(``model.assignors.assign``), evaluates every round invariant (``model.invariants.assignment``) and
the stickiness gap (``model.stickiness``), and prints one JSON document on stdout::

    {"assignment": {...}, "transferring": [...], "invariants": {"single-owner": true, ...},
     "stickiness_gap": 0, ...}

Exit 0 when every invariant the strategy promises on this input held, 1 when one failed or the
assignor fails on the input as Kafka's does (``assignor_failure``), 2 on bad input. ``--mutant NAME`` (repeatable) switches on an assignor mutant of ``model.mutants``;
``--out DIR`` also writes ``assign.json``, ``assign.md`` and ``assign.html`` there.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from groupspec.errors import EXIT_OK, EXIT_VIOLATION, InputError
from groupspec.problem import ParsedProblem, load
from groupspec.render import Document, Section, Table, write_report
from model import mutants as mutant_registry
from model.assignors import assign as run_assignor
from model.assignors.sticky import StickyAssignorFailure
from model.invariants.assignment import (
    ROUND_INVARIANTS,
    Claims,
    Verdict,
    check_round,
    promised,
    valid_claims,
)
from model.stickiness import Quota, Stickiness, stickiness
from model.types import GroupAssignment, tps_to_json

NAME = "assign"
HELP = "run an assignor on a problem (JSON) and check the invariants it promises"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("problem", metavar="PROBLEM.json", help="the problem file, or - for stdin")
    parser.add_argument("--mutant", action="append", default=[], metavar="NAME",
                        help="switch on an assignor mutant (repeatable); see model/mutants.py")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="also write assign.json, assign.md and assign.html into DIR")


def assignor_mutants(names: list[str]) -> frozenset[str]:
    """Validate ``--mutant`` names: known, and switches of an assignor module."""
    chosen = frozenset(names)
    try:
        mutant_registry.validate(chosen)
    except ValueError as exc:
        raise InputError(f"--mutant: {exc}") from None
    for name in sorted(chosen):
        where = mutant_registry.MUTANTS[name].where
        if not where.startswith("model.assignors."):
            raise InputError(f"--mutant: {name} is a mutant of {where}, not of an assignor")
    return chosen


def evaluate(parsed: ParsedProblem, mutants: frozenset[str] = frozenset()) -> tuple[int, dict[str, Any], Document]:
    """Run the round; return the exit code, the JSON document and the report for people."""
    problem = parsed.problem
    try:
        result = run_assignor(parsed.strategy, problem.partitions_per_topic, problem.subscriptions, mutants=mutants)
    except StickyAssignorFailure as exc:
        return EXIT_VIOLATION, _failure_json(parsed, mutants, str(exc)), Document(
            f"groupspec assign: {parsed.strategy}",
            [f"Strategy {parsed.strategy} on {parsed.source}: the assignor fails on this input, as Kafka's "
             f"does, so the rebalance cannot complete: {exc}"])
    verdicts = check_round(parsed.strategy, problem, result)
    promises = promised(parsed.strategy, problem, result)
    claims = valid_claims(problem.partitions_per_topic, problem.subscriptions)
    measure = stickiness(problem.partitions_per_topic, problem.subscriptions, result, claims=claims)
    failed = [inv for inv in ROUND_INVARIANTS if inv in promises and not verdicts[inv].held]

    data: dict[str, Any] = {
        "assignment": {sub.member_id: tps_to_json(result.assignment.get(sub.member_id, ()))
                       for sub in problem.subscriptions},
        "transferring": tps_to_json(result.transferring),
        "invariants": {inv: verdicts[inv].held for inv in ROUND_INVARIANTS},
        "stickiness_gap": measure.gap,
        "strategy": parsed.strategy,
        "mutants": sorted(mutants),
        "promised": [inv for inv in ROUND_INVARIANTS if inv in promises],
        "violated": failed,
        "details": {inv: {"promised": inv in promises, "findings": [f.to_json() for f in verdicts[inv].findings]}
                    for inv in ROUND_INVARIANTS if not verdicts[inv].held},
        "stickiness": _stickiness_json(measure),
        "ignored_claims": [c.to_json() for c in claims.ignored],
    }
    code = EXIT_VIOLATION if failed else EXIT_OK
    return code, data, _document(parsed, result, verdicts, promises, claims, measure, failed)


def _failure_json(parsed: ParsedProblem, mutants: frozenset[str], message: str) -> dict[str, Any]:
    """The document for an input on which the assignor throws (Kafka's Java assignor throws too)."""
    return {"assignment": None, "transferring": [], "invariants": {}, "stickiness_gap": None,
            "strategy": parsed.strategy, "mutants": sorted(mutants), "assignor_failure": message}


def run(args: argparse.Namespace) -> int:
    mutants = assignor_mutants(args.mutant)
    parsed = load(args.problem)
    code, data, doc = evaluate(parsed, mutants)
    sys.stdout.write(dumps(data) + "\n")
    if args.out is not None:
        try:
            write_report(args.out, "assign", data, doc)
        except OSError as exc:
            raise InputError(f"--out {args.out}: cannot write the report: {exc.strerror or exc}") from None
    return code


_PARTITION = re.compile(r'\{\s+"topic": ("(?:[^"\\]|\\.)*"),\s+"partition": (-?\d+)\s+\}')


def dumps(data: dict[str, Any]) -> str:
    """Indented JSON with each topic-partition on one line."""
    return _PARTITION.sub(r'{"topic": \1, "partition": \2}', json.dumps(data, indent=2))


def _stickiness_json(measure: Stickiness) -> dict[str, Any]:
    constraint = measure.constraint
    out: dict[str, Any] = {"kept": measure.kept, "optimum": measure.optimum, "gap": measure.gap}
    if isinstance(constraint, Quota):
        out["constraint"] = {"kind": "quota", "min_quota": constraint.min_quota, "max_quota": constraint.max_quota,
                             "members_at_max_quota": constraint.num_max}
    else:
        out["constraint"] = {"kind": "counts"}
    return out


def _tps(tps: Any) -> str:
    return ", ".join(str(tp) for tp in sorted(tps)) or "-"


def _document(parsed: ParsedProblem, result: GroupAssignment, verdicts: dict[str, Verdict],
              promises: frozenset[str], claims: Claims, measure: Stickiness, failed: list[str]) -> Document:
    problem = parsed.problem
    verdict = (f"Violated: {', '.join(failed)}." if failed
               else "Every invariant the assignor promises on this input held.")
    members = Table(
        ["member", "instance", "generation", "topics", "valid owned", "assigned", "revoked", "added"],
        [], caption="Members, in input order. Owned lists the valid claims only.")
    for sub in problem.subscriptions:
        assigned = frozenset(result.assignment.get(sub.member_id, ()))
        owned = claims.owned.get(sub.member_id, frozenset())
        members.rows.append([sub.member_id, sub.instance_id or "", sub.generation, ", ".join(sub.topics),
                             _tps(owned), _tps(assigned), _tps(owned - assigned), _tps(assigned - owned)])
    invariants = Table(["invariant", "promised", "held", "findings"], [])
    for inv in ROUND_INVARIANTS:
        v = verdicts[inv]
        invariants.rows.append([inv, "yes" if inv in promises else "no", "yes" if v.held else "NO",
                                "; ".join(f.message for f in v.findings[:5])
                                + (f" (+{len(v.findings) - 5} more)" if len(v.findings) > 5 else "")])
    blocks: list[Any] = [
        f"Strategy {parsed.strategy} on {parsed.source}: {len(problem.subscriptions)} member(s), "
        f"{sum(problem.partitions_per_topic.values())} partition(s) in {len(problem.partitions_per_topic)} "
        f"topic(s). {verdict}",
        Section("Invariants", [invariants]),
        Section("Assignment", [members, f"Transferring (withheld this round): {_tps(result.transferring)}."]),
        Section("Stickiness", [f"{measure.kept} partition(s) stayed with their valid owner; the optimum under "
                               f"the same balance constraint is {measure.optimum}; gap {measure.gap}."]),
    ]
    if claims.ignored:
        blocks.append(Section("Ignored claims", [Table(
            ["member", "partition", "generation", "reason"],
            [[c.member_id, str(c.partition), c.generation, c.reason.value] for c in claims.ignored])]))
    return Document(f"groupspec assign: {parsed.strategy}", blocks)
