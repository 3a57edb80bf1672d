"""The check report as data: the JSON document ``groupspec check --json`` prints and ``--out`` writes.

Shape (docs/design.md, "Formats" 5)::

    {"tool": "groupspec check", "verdict": "violation" | "warning" | "held",
     "findings": [{"invariant", "severity", "group", "members", "partitions", "window": [t0, t1],
                   "evidence": ["file:line", ...], "occurrences", "message"}],
     "finding_counts": {invariant: n},          # all findings, also those past the cap
     "checked": [invariant ids], "unchecked": [{"invariant", "reason", "partial"}],
     "opportunities": {invariant: n},           # how often each was actually exercised
     "input": {"files": N, "events": N, "lines": N, "skipped": {reason: n}, "skipped_examples":
               [{"where", "reason", "detail"}], "ignored_lines": n, "superseded": n,
               "tolerated_overlaps": n, "sources": [...], "ignored_files": [...]},
     "groups": {name: {"members": [...], "rebalances": [...], "storms": [...], "timeline": {...}}},
     "delivery": {"handoffs", "handoffs_with_duplicates", "handoffs_unmeasured", "duplicates",
                  "duplicates_by_cause": {cause: n}, "causes": {cause: words},
                  "per_partition": [{"group", "topic", "partition", "handoffs", "duplicates"}],
                  "handoff_examples": [{"group", "topic", "partition", "from", "to", "at", "start",
                                        "previous_position", "committed", "duplicates", "cause", "detail",
                                        "evidence"}],
                  "handoff_examples_truncated"},   # the measure handoff-duplicates (traces.delivery)
     "config": {...}}

People's formatting (Markdown, HTML, the terminal summary) is ``groupspec check``'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from traces.checker import VIOLATION, WARNING, CheckConfig, Checker
from traces.detect import Plan
from traces.schema import InputStats, Source


def verdict(findings: list[dict[str, Any]]) -> str:
    severities = {f["severity"] for f in findings}
    if VIOLATION in severities:
        return "violation"
    if WARNING in severities:
        return "warning"
    return "held"


def build(plan: Plan, stats: InputStats, checker: Checker, config: CheckConfig) -> dict[str, Any]:
    findings = [f.to_json() for f in checker.all_findings()]
    groups: dict[str, Any] = {}
    for name, gs in sorted(checker.groups.items()):
        members = sorted((m for m in checker.members.values() if m.group == name), key=lambda m: m.key)
        if not members and not gs.coordinator:
            continue
        groups[name] = {
            "members": [{"member": m.key, "member_id": m.member_id, "instance_id": m.instance_id,
                         "protocol": m.protocol, "generation": m.generation, "events": m.events,
                         "restarts": max(0, m.incarnation - 1), "shutdown": m.shutdown,
                         "owned_at_end": sorted(f"{t}-{p}" for t, p in m.owned)} for m in members],
            "coordinator": gs.coordinator,
            **gs.analytics.to_json(),
        }
    return {
        "tool": "groupspec check",
        "verdict": verdict(findings),
        "findings": findings,
        "finding_counts": dict(sorted(checker.finding_counts.items())),
        "checked": checker.checked(),
        "unchecked": checker.unchecked(),
        "opportunities": dict(sorted(checker.opportunities.items())),
        "input": {
            "files": len(plan.sources),
            "events": checker.events,
            "lines": stats.lines,
            "skipped": dict(sorted(stats.skipped.items())),
            "skipped_examples": stats.examples,
            "ignored_lines": stats.ignored,
            "superseded": stats.superseded,
            "tolerated_overlaps": checker.tolerated,
            "unverified": checker.unverified,
            "first_timestamp": checker.first_ts,
            "last_timestamp": checker.last_ts,
            "sources": [{"path": s.label, "format": s.format, "member": s.member,
                         "events": stats.events_per_source.get(s.index, 0)} for s in plan.sources],
            "ignored_files": plan.ignored,
        },
        "groups": groups,
        "delivery": checker.delivery_json(),
        "config": {k: v for k, v in asdict(config).items()},
    }


def check_events(events: Iterable[dict[str, Any]], config: CheckConfig | None = None,
                 label: str = "events") -> dict[str, Any]:
    """Check events held in memory (the model's simulator output, say) as one groupspec JSON Lines file.

    Evidence locations are ``<label>:<n>`` with ``n`` the event's position (1-based), as if the
    events had been written one per line.
    """
    config = config or CheckConfig()
    source = Source(index=0, path=Path(label), label=label, format="groupspec", member=label)
    stats = InputStats()
    located = ((int(e["timestamp"]), 0, n, n, e) for n, e in enumerate(events, start=1))
    checker = Checker([source], config, stats)
    checker.run(located)
    checker.finish()
    stats.lines = stats.events_per_source[0] = checker.events
    return build(Plan([source], [], frozenset()), stats, checker, config)
