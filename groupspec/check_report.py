"""The check report for people: ``groupspec check --out``'s report.md / report.html from the report data.

It reads top-down the way an incident is read: the verdict and what was read (which runs, which
time span); the findings, each with when it happened (wall clock and time since the run started)
and links to the input lines it rests on; what could not be checked; then per group the
rebalances (a table and plots of their durations and of who stopped how long), activity over time,
and the ownership timeline (one row per partition, owners coloured, rebalances as bands, double
ownership split into sub-rows and hatched red, zombie windows hatched amber, stop-the-world
pauses in rows of their own). At the end, the evidence: every cited input line, quoted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from groupspec import timefmt
from groupspec.plots import Counts, HBars, TimeBars
from groupspec.render import (
    Band,
    Block,
    Document,
    Evidence,
    Mark,
    Section,
    Table,
    Timeline,
    evidence_links,
    evidence_section,
    write_report,
)
from groupspec.timeline import pauses
from traces.runs import shared_member_text


def _tps(partitions: list[dict[str, Any]]) -> str:
    return ", ".join(f"{p['topic']}-{p['partition']}" for p in partitions)


def _run_starts(report: dict[str, Any]) -> dict[str, int | None]:
    return {r["run"]: r["first_timestamp"] for r in report["input"].get("runs", [])}


def _start_of(report: dict[str, Any], run: str | None) -> int | None:
    starts = _run_starts(report)
    if run is not None and run in starts:
        return starts[run]
    return report["input"].get("first_timestamp")


def headline(report: dict[str, Any]) -> str:
    inp = report["input"]
    violations = sum(1 for f in report["findings"] if f["severity"] == "violation")
    warnings = len(report["findings"]) - violations
    total = sum(report["finding_counts"].values())
    first, last = inp.get("first_timestamp"), inp.get("last_timestamp")
    span = ""
    if first is not None and last is not None:
        span = f", from {timefmt.iso_ms(first)} for {timefmt.duration(last - first)}"
    verdict = {"held": "HELD", "warning": "HELD, with warnings", "violation": "VIOLATION"}[report["verdict"]]
    return (f"{verdict}: {violations} violation(s), {warnings} warning(s) ({total} finding(s) in all). "
            f"Read {inp['files']} file(s), {inp['events']} event(s){span}.")


def document(report: dict[str, Any]) -> Document:
    inp = report["input"]
    evidence = Evidence()
    blocks: list[Block] = [
        headline(report),
        f"{sum(inp['skipped'].values())} line(s) skipped, {inp['tolerated_overlaps']} overlap(s) within the "
        f"clock-skew tolerance of {report['config']['skew_ms']} ms. Times are UTC; '+' is the time since the "
        f"run started.",
    ]
    runs = inp.get("runs", [])
    if len(runs) > 1:
        blocks.append(Section("Runs", _runs_blocks(report)))
    blocks += [f"Warning: {shared_member_text(m)}." for m in inp.get("shared_members", [])]
    blocks.append(Section("Findings", _finding_blocks(report, evidence)))
    blocks.append(Section("What was checked", [
        Table(["invariant", "times exercised"],
              [[inv, report["opportunities"].get(inv, 0)] for inv in report["checked"]]),
        Table(["invariant", "why not (fully) checked"],
              [[u["invariant"] + (" (partly)" if u["partial"] else ""), u["reason"]] for u in report["unchecked"]]),
    ]))
    delivery = report.get("delivery")
    if delivery is not None:
        blocks.append(Section("Delivery: records consumed again at a handoff", delivery_blocks(delivery, evidence)))
    activity = inp.get("activity")
    if activity and activity.get("counts"):
        rebalance_marks = [(rb["start"], f"rebalance of {name}") for name, g in report["groups"].items()
                           for rb in g["rebalances"]]
        times = {activity["start"] + i * activity["bin_ms"]: n for i, n in enumerate(activity["counts"]) if n}
        blocks.append(Section("Activity over time", [
            Counts("Events read over time; red lines are rebalance starts", times, start=inp.get("first_timestamp"),
                   what="events", marks=rebalance_marks),
        ]))
    for name, group in report["groups"].items():
        blocks.append(Section(f"Group {name}", _group_blocks(report, name, group)))
    blocks.append(Section("Input", _input_blocks(report, evidence)))
    quoted = evidence_section(evidence)
    if quoted is not None:
        blocks.append(quoted)
    return Document("groupspec check", blocks)


def _runs_blocks(report: dict[str, Any]) -> list[Block]:
    inp = report["input"]
    blocks: list[Block] = [
        "Each directory named on the command line is a run of its own, checked apart: group names are only "
        "unique within a run. `--merge-runs` checks them as one.",
        Table(["run", "files", "events", "verdict", "from", "for", "groups"],
              [[r["run"], len(r["files"]), r["events"], r["verdict"], timefmt.iso_ms(r["first_timestamp"]),
                timefmt.duration(None if r["first_timestamp"] is None else r["last_timestamp"] - r["first_timestamp"]),
                ", ".join(r["groups"])] for r in inp["runs"]]),
    ]
    for o in inp.get("run_overlaps", []):
        blocks.append(f"Warning: group {o['group']} is reported by runs {o['runs'][0]} and {o['runs'][1]} in "
                      f"overlapping time ({timefmt.iso_ms(o['from'])} to {timefmt.iso_ms(o['to'])}). If they are "
                      f"one incident, check them together with --merge-runs.")
    return blocks


def _finding_blocks(report: dict[str, Any], evidence: Evidence) -> list[Block]:
    if not report["findings"]:
        return ["No violation and no warning."]
    rows = []
    for f in report["findings"]:
        start = _start_of(report, f.get("run"))
        rows.append([f["severity"], f["invariant"], f["group"], ", ".join(f["members"]), _tps(f["partitions"]),
                     timefmt.window(f["window"][0], f["window"][1], start), evidence_links(f["evidence"], evidence),
                     f["occurrences"], f["message"]])
    return [
        Table(["severity", "invariant", "group", "members", "partitions", "when", "evidence", "times",
               "what happened"], rows),
        Table(["invariant", "findings"], [[k, v] for k, v in report["finding_counts"].items()],
              caption="All findings per invariant (the list above keeps the first ones)"),
    ]


def _group_blocks(report: dict[str, Any], name: str, group: dict[str, Any]) -> list[Block]:
    start = _start_of(report, group.get("run"))
    rebalances = group["rebalances"]
    blocks: list[Block] = [
        Table(["member", "member id", "protocol", "generation", "events", "restarts", "owned at the end"],
              [[m["member"], m["member_id"], m["protocol"], m["generation"], m["events"], m["restarts"],
                ", ".join(m["owned_at_end"])] for m in group["members"]], caption="Members"),
        Table(["start", "duration", "generation", "from", "reasons", "moved", "paused", "max unowned"],
              [[timefmt.at(r["start"], start), timefmt.duration(r["duration_ms"]), r["generation"], r["source"],
                "; ".join(r["reasons"]), r["moved"],
                ", ".join(f"{m} {timefmt.duration(ms)}" for m, ms in r["paused_ms"].items()),
                timefmt.duration(r["max_unowned_ms"])] for r in rebalances],
              caption=f"Rebalances ({group['rebalance_count']}"
                      f"{', only the first shown' if group['rebalances_truncated'] else ''})"),
    ]
    timed = [r for r in rebalances if r["duration_ms"] is not None]
    if timed:
        blocks.append(TimeBars(f"How long each rebalance of {name} took", [
            (r["start"], r["duration_ms"], f"generation {r['generation']}, {r['moved']} moved")
            for r in timed], start=start))
    stopped: dict[str, int] = {}
    for r in rebalances:
        for member, ms in r["paused_ms"].items():
            stopped[member] = stopped.get(member, 0) + ms
    if stopped:
        blocks.append(HBars(f"Stop-the-world time per member of {name} (owned nothing during a rebalance), in all",
                            [(m, ms, f"{m} owned nothing for {timefmt.duration(ms)} in all") for m, ms in
                             stopped.items()]))
    if group["storms"]:
        blocks.append(Table(["from", "to", "rebalances", "per minute"],
                            [[timefmt.at(s["start"], start), timefmt.at(s["end"], start), s["rebalances"],
                              s["per_minute"]] for s in group["storms"]], caption="Rebalance storms"))
    lanes = {lane: [(iv[0], iv[1], iv[2]) for iv in ivs] for lane, ivs in group["timeline"].items()}
    if lanes:
        blocks.append(ownership_timeline(report, name, group, lanes, start))
    return blocks


def ownership_timeline(report: dict[str, Any], name: str, group: dict[str, Any],
                       lanes: dict[str, list[tuple[int, int | None, str]]], start: int | None) -> Timeline:
    bands = [Band(r["start"], r["end"], f"rebalance, generation {r['generation']} ({'; '.join(r['reasons'])})"
                  if r["reasons"] else f"rebalance, generation {r['generation']}")
             for r in group["rebalances"]]
    bands += [Band(s["start"], s["end"], f"rebalance storm: {s['rebalances']} rebalances", "storm")
              for s in group["storms"]]
    marks = []
    for f in report["findings"]:
        if f["group"] != name or f["invariant"] != "zombie-overlap":
            continue
        for p in f["partitions"]:
            marks.append(Mark(f["window"][0], f["window"][1], f"zombie window: {f['message']}", "zombie",
                              f"{p['topic']}-{p['partition']}"))
    marks += pauses(lanes, bands)
    return Timeline(f"Who owned which partition when, group {name}"
                    + (" (truncated)" if group["timeline_truncated"] else ""), lanes, bands, marks, start)


def _input_blocks(report: dict[str, Any], evidence: Evidence) -> list[Block]:
    inp = report["input"]
    multi = len(inp.get("runs", [])) > 1
    blocks: list[Block] = [
        Table((["run"] if multi else []) + ["file", "format", "member", "events"],
              [([s.get("run", "")] if multi else []) + [s["path"], s["format"], s["member"], s["events"]]
               for s in inp["sources"]]),
    ]
    if inp["skipped"]:
        blocks.append(Table(["reason", "lines"], [[k, v] for k, v in inp["skipped"].items()],
                            caption="Lines that could not be used"))
        blocks.append(Table(["where", "reason", "detail"],
                            [[evidence_links([e["where"]], evidence), e["reason"], e.get("detail", "")]
                             for e in inp["skipped_examples"]], caption="The first of them"))
    if inp["ignored_files"]:
        blocks.append(Table(["file", "why ignored"], [[i["path"], i["why"]] for i in inp["ignored_files"]]))
    return blocks


def delivery_blocks(delivery: dict[str, Any], evidence: Evidence | None = None) -> list[Block]:
    """The measure handoff-duplicates: totals, where the duplicates came from, per partition, per handoff."""
    evidence = evidence or Evidence()
    blocks: list[Block] = [
        f"{delivery['handoffs']} handoff(s) measured (a partition let go by one owner and consumed by the next); "
        f"{delivery['duplicates']} record(s) were consumed again, in {delivery['handoffs_with_duplicates']} of them. "
        f"Kafka's at-least-once delivery allows this: the new owner starts at the committed offset, so what the "
        f"previous owner consumed after its last commit is read twice."
        + (f" {delivery['handoffs_unmeasured']} handoff(s) could not be measured (the previous owner's offsets "
           f"were not in the trace)." if delivery["handoffs_unmeasured"] else ""),
    ]
    if delivery["duplicates_by_cause"]:
        blocks.append(Table(["cause", "records consumed again", "what the trace showed"],
                            [[k, v, delivery["causes"].get(k, "")] for k, v in delivery["duplicates_by_cause"].items()],
                            caption="Where the duplicates came from"))
    if delivery["per_partition"]:
        blocks.append(Table(["group", "partition", "handoffs", "records consumed again"],
                            [[r["group"], f"{r['topic']}-{r['partition']}", r["handoffs"], r["duplicates"]]
                             for r in delivery["per_partition"]], caption="Per partition"))
    if delivery["handoff_examples"]:
        blocks.append(Table(
            ["partition", "from", "to", "at", "new owner's first offset", "previous owner's position",
             "committed", "records consumed again", "cause", "evidence"],
            [[f"{h['topic']}-{h['partition']}", h["from"], h["to"], timefmt.iso_ms(h["at"]), h["start"],
              h["previous_position"], h["committed"], h["duplicates"], h["detail"],
              evidence_links(h["evidence"], evidence)]
             for h in delivery["handoff_examples"]],
            caption="Handoffs with duplicates" + (" (the first ones)" if delivery["handoff_examples_truncated"]
                                                  else "")))
    return blocks


def write(report: dict[str, Any], out_dir: Path) -> list[Path]:
    return write_report(out_dir, "report", report, document(report))
