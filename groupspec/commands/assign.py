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
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from groupspec.errors import EXIT_OK, EXIT_VIOLATION, InputError
from groupspec.problem import ParsedProblem, load
from groupspec.render import Document, Section, Table, write_report
from model import mutants as mutant_registry
from model.assignors import assign as run_assignor
from model.assignors.sticky import StickyAssignorFailure, kafka_bug_exposure
from model.invariants.assignment import (
    ROUND_INVARIANTS,
    Claims,
    RoundFacts,
    Verdict,
    check_round,
    promised,
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
    parser.add_argument("--quiet", action="store_true", help="no summary for people on stderr (the JSON only)")


def _tp_text(tp: dict[str, Any]) -> str:
    return f"{tp['topic']}-{tp['partition']}"


def _tp_list(tps: list[str], limit: int = 8) -> str:
    if not tps:
        return "nothing"
    shown = ", ".join(tps[:limit])
    return shown + (f" and {len(tps) - limit} more" if len(tps) > limit else "")


def summary(parsed: ParsedProblem, data: dict[str, Any], limit: int = 20) -> str:
    """A few lines for people, written beside the JSON (on stderr): who gets what, what moves, what held."""
    lines = []
    if data.get("assignment") is None:
        return f"{parsed.strategy}: the assignor fails on this input, as Kafka's does: {data.get('assignor_failure')}\n"
    owner_before = {}
    for sub in parsed.problem.subscriptions:
        for tp in sub.owned:
            owner_before.setdefault(f"{tp.topic}-{tp.partition}", sub.member_id)
    assignment = data["assignment"]
    total = sum(len(v) for v in assignment.values())
    lines.append(f"{parsed.strategy}{' with mutant ' + ', '.join(data['mutants']) if data['mutants'] else ''}: "
                 f"{len(assignment)} member(s), {total} partition(s) assigned")
    for i, (member, tps) in enumerate(assignment.items()):
        if i == limit:
            lines.append(f"  ... and {len(assignment) - limit} more member(s)")
            break
        names = [_tp_text(tp) for tp in tps]
        kept = sum(1 for n in names if owner_before.get(n) == member)
        lines.append(f"  {member}: {_tp_list(names)}" + (f" ({kept} kept)" if owner_before and names else ""))
    moved = []
    for member, tps in assignment.items():
        for tp in tps:
            name = _tp_text(tp)
            before = owner_before.get(name)
            if before is not None and before != member:
                moved.append(f"{name} {before} -> {member}")
    transferring = [_tp_text(tp) for tp in data.get("transferring", [])]
    if moved:
        lines.append(f"moves: {_tp_list(moved)}")
    if transferring:
        lines.append(f"withheld while they change owner (revoked now, assigned in the next rebalance): "
                     f"{_tp_list(transferring)}")
    if not moved and not transferring and owner_before:
        lines.append("moves: none")
    held = [inv for inv in data["promised"] if inv not in data["violated"]]
    line = f"held: {', '.join(held) or 'nothing promised'}"
    if data["violated"]:
        line = f"VIOLATED: {', '.join(data['violated'])}; " + line
    lines.append(line)
    unmet = [inv for inv, ok in data["invariants"].items() if not ok and inv not in data["promised"]]
    if unmet:
        lines.append(f"not promised by {parsed.strategy} here, and not met: {', '.join(unmet)}")
    st = data.get("stickiness") or {}
    if "kept" in st:
        lines.append(f"stickiness: kept {st['kept']} of an optimum {st['optimum']} (gap {st['gap']})")
    return "\n".join(lines) + "\n"


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


def evaluate(parsed: ParsedProblem, mutants: frozenset[str] = frozenset()
             ) -> tuple[int, dict[str, Any], Callable[[], Document]]:
    """Run the round; return the exit code, the JSON document and how to build the report for people."""
    problem = parsed.problem
    try:
        result = run_assignor(parsed.strategy, problem.partitions_per_topic, problem.subscriptions, mutants=mutants)
    except StickyAssignorFailure as exc:
        message = str(exc)
        return EXIT_VIOLATION, _failure_json(parsed, mutants, message), lambda: Document(
            f"groupspec assign: {parsed.strategy}",
            [f"Strategy {parsed.strategy} on {parsed.source}: the assignor fails on this input, as Kafka's "
             f"does, so the rebalance cannot complete: {message}"])
    facts = RoundFacts(problem, result)
    verdicts = check_round(parsed.strategy, problem, result, facts)
    promises = promised(parsed.strategy, problem, result)
    claims = facts.claims
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
    if parsed.strategy in ("sticky", "cooperative-sticky"):
        # Inputs on which Kafka's own sticky assignors break a promise (docs/assignors-sticky.md):
        # a failure here is Kafka's behaviour, reproduced on purpose, not a model bug.
        exposed = {bug: sorted(ids) for bug, ids in
                   kafka_bug_exposure(problem.partitions_per_topic, problem.subscriptions).items() if ids}
        if exposed:
            data["known_kafka_bugs"] = exposed
    code = EXIT_VIOLATION if failed else EXIT_OK
    return code, data, lambda: _document(parsed, result, verdicts, promises, claims, measure, failed)


def _failure_json(parsed: ParsedProblem, mutants: frozenset[str], message: str) -> dict[str, Any]:
    """The document for an input on which the assignor throws (Kafka's Java assignor throws too)."""
    return {"assignment": None, "transferring": [], "invariants": {}, "stickiness_gap": None,
            "strategy": parsed.strategy, "mutants": sorted(mutants), "assignor_failure": message}


def run(args: argparse.Namespace) -> int:
    mutants = assignor_mutants(args.mutant)
    parsed = load(args.problem)
    code, data, document = evaluate(parsed, mutants)
    sys.stdout.write(dumps(data) + "\n")
    if not args.quiet:
        sys.stderr.write(summary(parsed, data))
    if args.out is not None:
        try:
            write_report(args.out, "assign", data, document())
        except OSError as exc:
            raise InputError(f"--out {args.out}: cannot write the report: {exc.strerror or exc}") from None
    return code


def dumps(data: Any) -> str:
    """Indented JSON (2 spaces) with each topic-partition on one line.

    Written out directly: ``json.dumps(indent=...)`` runs the pure-Python encoder, too slow for the
    million partitions of Kafka's scale problems. Scalars and keys still go through ``json.dumps``.
    """
    out: list[str] = []
    _write(data, 0, out, {})
    return "".join(out)


def _write(value: Any, indent: int, out: list[str], topics: dict[str, str]) -> None:
    if isinstance(value, dict):
        if len(value) == 2 and "topic" in value and type(value.get("partition")) is int:
            topic = value["topic"]
            encoded = topics.get(topic)
            if encoded is None:
                encoded = topics[topic] = json.dumps(topic)
            out.append(f'{{"topic": {encoded}, "partition": {value["partition"]}}}')
            return
        items: list[tuple[str, Any]] = [(json.dumps(str(k)) + ": ", v) for k, v in value.items()]
        opening, closing = "{", "}"
    elif isinstance(value, list):
        items = [("", v) for v in value]
        opening, closing = "[", "]"
    else:
        out.append(json.dumps(value))
        return
    if not items:
        out.append(opening + closing)
        return
    pad = "\n" + " " * (indent + 2)
    out.append(opening)
    for i, (key, item) in enumerate(items):
        out.append(("," if i else "") + pad + key)
        _write(item, indent + 2, out, topics)
    out.append("\n" + " " * indent + closing)


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
