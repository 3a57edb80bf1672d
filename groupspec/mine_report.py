"""``groupspec mine``'s report for people: mine.md and mine.html (tables, and SVG bar charts).

The data is :func:`spark_analysis.mine.run`'s document (mine.json). The tables go through
:mod:`groupspec.render`; the plots -- stop-the-world durations, rebalances over time, findings per
invariant -- are inline SVG bar charts drawn here (no script, no external file: the page works
offline), put where the document holds a ``[[plot:NAME]]`` placeholder. Every string from the
input is escaped.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from groupspec.check_report import delivery_blocks
from groupspec.render import Block, Document, Section, Table, to_html, to_markdown


def bar_chart(title: str, bars: list[tuple[str, float]], unit: str = "") -> str:
    """A horizontal bar chart as inline SVG (labels escaped)."""
    if not bars:
        return f"<p><em>{html.escape(title)}: nothing to plot</em></p>"
    bars = bars[:40]
    top = max(v for _, v in bars) or 1
    label_w, bar_w, h = 200, 520, 18
    parts = [f'<figure><figcaption>{html.escape(title)}</figcaption>'
             f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 120}" height="{h * len(bars) + 8}" '
             f'role="img" aria-label="{html.escape(title)}">']
    for i, (label, value) in enumerate(bars):
        y = 4 + i * h
        w = max(1, int(bar_w * value / top))
        parts.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end" font-size="12">{html.escape(label)}</text>'
                     f'<rect x="{label_w}" y="{y + 2}" width="{w}" height="{h - 4}" fill="#4e79a7"/>'
                     f'<text x="{label_w + w + 4}" y="{y + 13}" font-size="12">{value:g}{html.escape(unit)}</text>')
    parts.append("</svg></figure>")
    return "".join(parts)


def _plots(data: dict[str, Any]) -> dict[str, str]:
    an = data["analytics"]
    minutes: dict[int, int] = {}
    for r in an["rebalances_per_minute"]:
        minutes[r["minute"]] = minutes.get(r["minute"], 0) + r["rebalances"]
    return {
        "pauses": bar_chart("stop-the-world durations (members x rebalances, per second of pause)",
                            [(f"{r['bucket_ms'] // 1000}-{r['bucket_ms'] // 1000 + 1} s", r["count"])
                             for r in an["pause_histogram"]]),
        "rebalances": bar_chart("rebalances over time (all groups, per minute since the epoch of the trace)",
                                [(f"minute {m // 60000}", n) for m, n in sorted(minutes.items())]),
        "invariants": bar_chart("findings per invariant", sorted(data["finding_counts"].items())),
    }


def _tps(parts: list[dict[str, Any]]) -> str:
    return ", ".join(f"{p['topic']}-{p['partition']}" for p in parts)


def document(data: dict[str, Any], max_rows: int = 200) -> Document:
    inp = data["input"]
    an = data["analytics"]
    findings = data["violations"] + data["warnings"]
    doc = Document("groupspec mine", [
        f"verdict: {data['verdict']} ({len(data['violations'])} violation(s), {len(data['warnings'])} warning(s)); "
        f"{inp['events']:,} events in {inp['groups']:,} group(s); Spark {data['spark']['version']} on "
        f"{data['spark']['master']}, {data['spark']['seconds']} s",
    ])
    doc.blocks.append(Section("Findings", [
        "[[plot:invariants]]",
        Table(["invariant", "severity", "group", "members", "partitions", "window (ms)", "occurrences", "evidence",
               "message"],
              [[f["invariant"], f["severity"], f["group"], ", ".join(f["members"]), _tps(f["partitions"]),
                f"{f['window'][0]}..{f['window'][1]}", f["occurrences"], ", ".join(f["evidence"]), f["message"]]
               for f in findings[:max_rows]],
              caption=f"first {min(max_rows, len(findings))} of {len(findings)}; all in violations.parquet"),
        Table(["invariant", "why not judged"], [[n["invariant"], n["reason"]] for n in data["not_covered"]]
              + [[n["invariant"], n["reason"]] for n in data.get("unchecked", [])],
              caption="not covered by the Spark job, or not judged in part (as groupspec check says)"),
    ]))
    doc.blocks.append(Section("Input", _input_blocks(data, max_rows)))
    doc.blocks.append(Section("Rebalances", [
        f"{an['rebalances']:,} rebalance(s), {an['partitions_moved']:,} partition move(s), "
        f"{len(an['storms'])} storm window(s); {_pauses(an['pause_summary'])}",
        "[[plot:rebalances]]", "[[plot:pauses]]",
        Table(["group", "member", "generation", "pause (ms)", "from", "to"],
              [[p["group"], p["member"], p["generation"], p["pause_ms"], p["start"], p["end"]]
               for p in an["longest_pauses"]], caption="longest stop-the-world pauses"),
        Table(["group", "window start", "rebalances"], [[s["group"], s["window_start"], s["rebalances"]]
                                                        for s in an["storms"][:max_rows]], caption="storms"),
        Table(["group", "violations"], [[g["group"], g["violations"]] for g in an["top_groups"]],
              caption="groups with the most violations"),
    ]))
    if data.get("delivery"):  # the measure handoff-duplicates, rendered as groupspec check renders it
        doc.blocks.append(Section("Delivery: records consumed again at a handoff", delivery_blocks(data["delivery"])))
    if "truth" in data:
        t = data["truth"]
        doc.blocks.append(Section("Against truth.json", [Table(["measure", "value"], [[k, v] for k, v in t.items()])]))
    return doc


def _input_blocks(data: dict[str, Any], max_rows: int) -> list[Block]:
    """What was read, and where each line that could not be used is (file, line, why: the corpus's counts,
    as groupspec check gives them), then the malformed sequences; a table only where it has rows."""
    inp = data["input"]
    blocks: list[Block] = [
        Table(["what", "count"], [["events", inp["events"]], ["rows", inp["rows"]], ["groups", inp["groups"]]]
              + [[f"malformed line: {k}", v] for k, v in sorted(inp["malformed"].items())]
              + [[f"malformed sequence: {k}", v] for k, v in sorted(inp["malformed_sequences"].items())])]
    per_file = inp.get("malformed_per_file") or {}
    if per_file:
        blocks.append(Table(["file", "reason", "lines"], [[path, reason, n] for path, counts in sorted(per_file.items())
                                                           for reason, n in sorted(counts.items())],
                            caption="lines that could not be used, per file"))
    examples = inp.get("malformed_examples") or []
    if examples:
        blocks.append(Table(["where", "reason", "detail"], [[e["where"], e["reason"], e.get("detail", "")]
                                                             for e in examples[:max_rows]],
                            caption="the first of them"))
    if data["wellformed"]:
        blocks.append(Table(["group", "kind", "count", "first"], [[w["group"], w["kind"], w["count"], w["first"]]
                                                                  for w in data["wellformed"][:max_rows]],
                            caption="malformed sequences (docs/mining.md: what each means and how it is judged)"))
    return blocks


def _pauses(summary: dict[str, int | None]) -> str:
    """mine.json's pause_summary in words: "254 pause(s): median 0 ms, shortest 0 ms, longest 20,146 ms"."""
    count = summary.get("count") or 0
    if not count:
        return "no stop-the-world pause"
    def ms(key: str) -> str:
        value = summary.get(key)
        return "?" if value is None else f"{value:,} ms"
    return f"{count:,} pause(s): median {ms('50%')}, shortest {ms('min')}, longest {ms('max')}"


def write(out_dir: Path, data: dict[str, Any]) -> list[Path]:
    """mine.json, mine.md, mine.html in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = document(data)
    plots = _plots(data)
    page = to_html(doc)
    text = to_markdown(doc)
    for name, svg in plots.items():
        page = page.replace(f"<p>[[plot:{name}]]</p>", svg)
        text = text.replace(f"[[plot:{name}]]", f"*(plot: {name}, in mine.html)*")
    paths = [out_dir / "mine.json", out_dir / "mine.md", out_dir / "mine.html"]
    paths[0].write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    paths[1].write_text(text, encoding="utf-8")
    paths[2].write_text(page, encoding="utf-8")
    return paths
