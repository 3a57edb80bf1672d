"""``groupspec check FILE|DIR...``: were the rebalances in these captured traces correct?

Reads every file (VerifiableConsumer / kafkatest / groupspec JSON Lines, broker ``server.log``,
Java, librdkafka and kafka-python consumer logs; the format of each is detected), merges the files
of each run (each directory argument is one; :mod:`traces.runs`) in time order, checks every catalogue invariant the events allow and measures the rebalances. Exit
0 when nothing was violated, 1 when something was, 2 when the input cannot be used (or, with
``--strict``, any line could not be read).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from groupspec import timefmt
from groupspec.errors import EXIT_OK, EXIT_VIOLATION, InputError, writable_dir
from traces.analytics import AnalyticsConfig
from traces.checker import CheckConfig, Checker
from traces.detect import plan as make_plan
from traces.merge import merged
from traces.readers import FORMATS
from traces.readers.logtime import parse_zone
from traces.report import build
from traces.runs import combine, require_events, shared_member_text, shared_members, stray_files
from traces.runs import split as split_runs
from traces.schema import InputStats, Located, TraceInputError

NAME = "check"
HELP = "check captured traces (VerifiableConsumer JSON, broker and client logs) against the invariants"


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return value


def positive(text: str) -> int:
    """An argparse type: a whole number of at least 1 (`check`'s and `corpus`'s counts)."""
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be at least 1: 0")
    return value


def log_zone(text: str) -> int | None:
    """An argparse type: ``--log-timezone`` (`check`'s and `corpus --from`'s)."""
    try:
        return parse_zone(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="FILE|DIR", help="trace files, or directories of them")
    parser.add_argument("--merge-runs", action="store_true",
                        help="check all the inputs as one run (default: each directory argument is a run of its own, "
                             "with its own groups, and the files named together one more)")
    parser.add_argument("--format", choices=list(FORMATS), default=None,
                        help="read every named file with this reader instead of detecting the format")
    parser.add_argument("--strict", action="store_true",
                        help="any line that cannot be read (bad JSON, truncated, unknown event) is an error: exit 2")
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="write report.json, report.md and report.html (with ownership timelines) into DIR")
    parser.add_argument("--skew-ms", type=_non_negative, default=0, metavar="MS",
                        help="clock skew tolerated between files, in ms (default 0)")
    parser.add_argument("--log-timezone", type=log_zone, default=None, metavar="ZONE",
                        help="the zone of log times written without one: local (default), UTC or +HH:MM")
    parser.add_argument("--group", default="default",
                        help="the group of events that name none (VerifiableConsumer output; default 'default')")
    parser.add_argument("--protocol", choices=["eager", "cooperative"], default=None,
                        help="the rebalance protocol of members whose events do not say")
    parser.add_argument("--gap-slack", type=_non_negative, default=0, metavar="N",
                        help="offsets no-gap and monotonic-consumption tolerate (compaction, transaction markers; "
                             "a large value accepts any forward jump)")
    parser.add_argument("--auto-offset-reset", choices=("earliest", "latest", "none"), default=None,
                        help="the consumers' auto.offset.reset when the trace does not say (judges no-gap on a "
                             "partition with no committed offset)")
    parser.add_argument("--storm-window-ms", type=positive, default=60_000, metavar="MS",
                        help="rebalance storm: window in ms (default 60000)")
    parser.add_argument("--storm-threshold", type=positive, default=5, metavar="N",
                        help="rebalance storm: rebalances within the window (default 5)")
    parser.add_argument("--max-findings", type=positive, default=100, metavar="N",
                        help="findings kept per invariant; the rest are counted (default 100)")


def config_from(args: argparse.Namespace) -> CheckConfig:
    return CheckConfig(
        skew_ms=args.skew_ms,
        default_group=args.group,
        default_protocol=args.protocol,
        gap_slack=args.gap_slack,
        auto_offset_reset=args.auto_offset_reset,
        max_findings=args.max_findings,
        analytics=AnalyticsConfig(window_ms=args.storm_window_ms, threshold=args.storm_threshold),
    )


def check(paths: list[str], config: CheckConfig, fmt: str | None = None, strict: bool = False,
          naive_offset_ms: int | None = None, merge_runs: bool = False, with_activity: bool = False
          ) -> dict[str, Any]:
    """Run the whole check and return the report data (TraceInputError on unusable input).

    Each directory argument is a run of its own, checked apart (:mod:`traces.runs`); a run from
    which no event could be read is bad input, not a pass. ``with_activity`` counts the events per
    second for the report's activity plot (``input.activity``); it costs about 15% of the check's
    time (docs/benchmarks.md), so only a report for people asks for it.
    """
    runs = split_runs(paths, merge_runs)
    reports = []
    kept = []
    stray: list[dict[str, str]] = []
    for one in runs:
        plan = make_plan(list(one.paths), fmt, naive_offset_ms, strays_ignored=one.loose and len(runs) > 1)
        stats = InputStats(strict=strict)
        checker = Checker(plan.sources, config, stats, plan.callback_members)
        per_second: Counter[int] = Counter()
        events = merged(plan.sources, stats)
        checker.run(_counted(events, per_second) if with_activity else events)
        checker.finish()
        report = build(plan, stats, checker, config)
        if with_activity:
            report["input"]["activity"] = activity(per_second)
        if not report["input"]["events"] and one.loose and len(runs) > 1:
            # files a shell glob put beside the directories (`real/*` names README.md too): like a
            # directory's README, listed as ignored -- but a directory that gives nothing is an error
            stray += stray_files(report["input"])
            continue
        require_events(report["input"], one)
        reports.append(report)
        kept.append(one)
    combined = combine(reports, kept)
    combined["input"]["ignored_files"] = stray + combined["input"]["ignored_files"]
    combined["input"]["shared_members"] = shared_members(combined["input"]["sources"], kept[0].label if kept else "")
    return combined


def _counted(located: Iterable[Located], per_second: Counter[int]) -> Iterator[Located]:
    """The events as they go by, counted per second of their time (the report's activity plot)."""
    for item in located:
        per_second[item[0] // 1000] += 1
        yield item


def activity(per_second: Counter[int], bins: int = 120) -> dict[str, Any]:
    """Events per interval: ``{"start": ms, "bin_ms": ms, "counts": [...]}``, at most ``bins`` intervals."""
    if not per_second:
        return {"start": None, "bin_ms": 1000, "counts": []}
    lo, hi = min(per_second), max(per_second)
    width = max(1, -(-(hi - lo + 1) // bins))  # seconds per interval, rounded up
    counts = [0] * ((hi - lo) // width + 1)
    for second, n in per_second.items():
        counts[(second - lo) // width] += n
    return {"start": lo * 1000, "bin_ms": width * 1000, "counts": counts}


def run(args: argparse.Namespace) -> int:
    config = config_from(args)
    if args.out is not None:
        writable_dir(args.out)
    try:
        report = check(list(args.paths), config, args.format, args.strict, args.log_timezone, args.merge_runs,
                       with_activity=args.out is not None)
    except TraceInputError as exc:
        raise InputError(str(exc)) from None
    if args.out is not None:
        try:
            written = write(report, args.out)
        except OSError as exc:
            raise InputError(f"cannot write the report: {exc.strerror or exc}", source=str(args.out)) from None
        if not args.json:
            print(f"report: {', '.join(str(p) for p in written)}", file=sys.stderr)
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        sys.stdout.write(summary(report))
    return EXIT_VIOLATION if report["verdict"] == "violation" else EXIT_OK


# ------------------------------------------------------------------ for people


def _tps(partitions: list[dict[str, Any]]) -> str:
    return ", ".join(f"{p['topic']}-{p['partition']}" for p in partitions)


def summary(report: dict[str, Any]) -> str:
    """A short terminal summary: what was read, what failed and where, what could not be checked."""
    inp = report["input"]
    lines = []
    skipped = sum(inp["skipped"].values())
    skipped_text = ""
    if skipped:
        skipped_text = f"; {skipped} line(s) skipped: " + ", ".join(f"{k} {v}" for k, v in inp["skipped"].items())
        first = inp["skipped_examples"][:3]
        skipped_text += " (first at " + ", ".join(e["where"] for e in first) + ")"
    lines.append(f"read {inp['files']} file(s), {inp['events']} event(s){skipped_text}")
    runs = inp.get("runs", [])
    if len(runs) > 1:
        lines.append(f"{len(runs)} runs, checked apart (--merge-runs checks them as one): "
                     + "; ".join(f"{r['run']} ({len(r['files'])} file(s), {r['events']} event(s), {r['verdict']})"
                                 for r in runs))
    for o in inp.get("run_overlaps", []):
        lines.append(f"warning: group {o['group']} is reported by runs {o['runs'][0]} and {o['runs'][1]} in "
                     f"overlapping time ({timefmt.iso_ms(o['from'])} to {timefmt.iso_ms(o['to'])}): if they are one incident, "
                     f"check them with --merge-runs")
    for m in inp.get("shared_members", []):
        lines.append(f"warning: {shared_member_text(m)}")
    if inp["ignored_files"]:
        lines.append("ignored: " + ", ".join(f"{i['path']} ({i['why']})" for i in inp["ignored_files"][:10]))
    counts = report["finding_counts"]
    start = inp.get("first_timestamp")
    for finding in report["findings"][:20]:
        label = "VIOLATION" if finding["severity"] == "violation" else "warning"
        members = ", ".join(finding["members"])
        parts = _tps(finding["partitions"])
        window = finding["window"]
        lines.append(f"{label} {finding['invariant']} [group {finding['group']}] "
                     f"{members}{' ' + parts if parts else ''} at {timefmt.window(window[0], window[1], start)}")
        lines.append(f"    {finding['message']}")
        lines.append(f"    evidence: {', '.join(finding['evidence'])}"
                     + (f" ({finding['occurrences']} times)" if finding["occurrences"] > 1 else ""))
    shown = min(len(report["findings"]), 20)
    total = sum(counts.values())
    if total > shown:
        lines.append(f"... {total - shown} more finding(s): " + ", ".join(f"{k} {v}" for k, v in counts.items())
                     + " (see --json / --out)")
    unchecked = [u for u in report["unchecked"] if not u["partial"]
                 and u["invariant"] not in ("complete", "balanced", "sticky", "stickiness-gap")]
    if unchecked:
        lines.append("not checked: " + "; ".join(f"{u['invariant']} ({u['reason']})" for u in unchecked))
    for name, group in report["groups"].items():
        storms = group["storms"]
        lines.append(f"group {name}: {len(group['members'])} member(s), {group['rebalance_count']} rebalance(s), "
                     f"{group['moved_total']} partition move(s), longest pause {group['max_paused_ms']} ms"
                     + (f", {len(storms)} rebalance storm(s)" if storms else ""))
    delivery = report.get("delivery")
    if delivery and delivery["handoffs"]:
        causes = ", ".join(f"{k} {v}" for k, v in delivery["duplicates_by_cause"].items())
        lines.append(f"delivery: {delivery['handoffs']} handoff(s), {delivery['duplicates']} record(s) consumed again "
                     f"in {delivery['handoffs_with_duplicates']} of them (handoff-duplicates, allowed by "
                     f"at-least-once)" + (f": {causes}" if causes else ""))
    violations = sum(1 for f in report["findings"] if f["severity"] == "violation")
    warnings = len(report["findings"]) - violations
    lines.append(f"verdict: {report['verdict']} ({violations} violation(s), {warnings} warning(s))")
    return "\n".join(lines) + "\n"


def document(report: dict[str, Any]) -> Any:
    """The report for people, as a groupspec.render Document (groupspec.check_report)."""
    from groupspec.check_report import document as build_document

    return build_document(report)


def write(report: dict[str, Any], out_dir: Path) -> list[Path]:
    from groupspec.check_report import write as write_check_report

    return write_check_report(report, out_dir)
