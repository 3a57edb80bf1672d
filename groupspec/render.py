"""Report rendering: one small document model, rendered to Markdown and to a self-contained HTML page.

Every report groupspec writes (proofs, trace checks, conformance) is a JSON document for machines
plus a :class:`Document` for people. A document is a title and a list of blocks; a block is a
paragraph (``str``), a :class:`Table`, a :class:`Timeline` (who owned which partition when) or a
nested :class:`Section`. Every string that came from input is escaped on the way out: HTML through
``html.escape``, Markdown table cells by escaping ``|`` and flattening newlines, so that a member id
like ``<script>`` or ``a|b`` cannot break the page.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Interval = tuple[int, int | None, str]  # (start, end or None = still owned at the end, owner label)


@dataclass
class Table:
    columns: list[str]
    rows: list[list[Any]]
    caption: str | None = None


@dataclass
class Timeline:
    """Ownership over time: one lane per partition (or member), each a list of owned intervals."""

    title: str
    lanes: dict[str, list[Interval]]


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)


Block = str | Table | Timeline | Section


@dataclass
class Document:
    title: str
    blocks: list[Block] = field(default_factory=list)


# ---------------------------------------------------------------- Markdown


def _md_cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _md_table(table: Table) -> list[str]:
    out = []
    if table.caption:
        out += [f"*{_md_cell(table.caption)}*", ""]
    out.append("| " + " | ".join(_md_cell(c) for c in table.columns) + " |")
    out.append("|" + "|".join("---" for _ in table.columns) + "|")
    for row in table.rows:
        out.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
    return out


def _timeline_bounds(timeline: Timeline) -> tuple[int, int]:
    points = [t for ivs in timeline.lanes.values() for s, e, _ in ivs for t in (s, e) if t is not None]
    if not points:
        return 0, 1
    lo, hi = min(points), max(points)
    return lo, hi if hi > lo else lo + 1


def _fmt_interval(iv: Interval) -> str:
    start, end, owner = iv
    return f"{owner} [{start}, {'end' if end is None else end})"


def _md_timeline(timeline: Timeline) -> list[str]:
    rows = [[lane, "; ".join(_fmt_interval(iv) for iv in ivs) or "(never owned)"]
            for lane, ivs in timeline.lanes.items()]
    return _md_table(Table(["lane", "owned (owner [from, to) ms)"], rows, caption=timeline.title))


def _md_blocks(blocks: Sequence[Block], depth: int) -> list[str]:
    out: list[str] = []
    for block in blocks:
        if isinstance(block, str):
            out += [block, ""]
        elif isinstance(block, Table):
            out += _md_table(block) + [""]
        elif isinstance(block, Timeline):
            out += _md_timeline(block) + [""]
        else:
            out += ["#" * min(depth, 6) + " " + block.title, ""]
            out += _md_blocks(block.blocks, depth + 1)
    return out


def to_markdown(doc: Document) -> str:
    return "\n".join([f"# {doc.title}", ""] + _md_blocks(doc.blocks, 2)).rstrip() + "\n"


# ---------------------------------------------------------------- HTML

_PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
            "#9c755f", "#bab0ac")

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:72rem;color:#222;padding:0 1rem}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f4} caption{text-align:left;font-style:italic;padding:.25rem 0}
td.ok{color:#1a7f37;font-weight:600} td.bad{color:#c62828;font-weight:600}
.timeline text{font-size:11px;font-family:monospace} h1{font-size:1.6rem}
"""

_GOOD = {"proved", "refuted", "held", "true", "ok", "pass", "passed", "agree", "agrees"}
_BAD = {"failed", "survived", "violated", "false", "unknown", "violation", "fail", "diverges", "error"}


def _owner_colour(owner: str) -> str:
    digest = hashlib.sha1(owner.encode("utf-8", "replace")).digest()
    return _PALETTE[digest[0] % len(_PALETTE)]


def _html_cell(value: Any, tag: str = "td") -> str:
    text = "" if value is None else str(value)
    cls = ""
    if tag == "td" and text.lower() in _GOOD:
        cls = ' class="ok"'
    elif tag == "td" and text.lower() in _BAD:
        cls = ' class="bad"'
    return f"<{tag}{cls}>{html.escape(text)}</{tag}>"


def _html_table(table: Table) -> str:
    parts = ["<table>"]
    if table.caption:
        parts.append(f"<caption>{html.escape(table.caption)}</caption>")
    parts.append("<tr>" + "".join(_html_cell(c, "th") for c in table.columns) + "</tr>")
    for row in table.rows:
        parts.append("<tr>" + "".join(_html_cell(c) for c in row) + "</tr>")
    parts.append("</table>")
    return "".join(parts)


def _html_timeline(timeline: Timeline) -> str:
    lo, hi = _timeline_bounds(timeline)
    label_w, bar_w, lane_h = 160, 760, 20
    height = lane_h * (len(timeline.lanes) + 1) + 10

    def x(t: int) -> float:
        return label_w + (t - lo) * bar_w / (hi - lo)

    parts = [f'<figure><figcaption>{html.escape(timeline.title)}</figcaption>',
             f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 10}" '
             f'height="{height}" role="img">']
    for i, (lane, ivs) in enumerate(timeline.lanes.items()):
        y = i * lane_h + 4
        parts.append(f'<text x="0" y="{y + 13}">{html.escape(lane)}</text>')
        for start, end, owner in ivs:
            x0, x1 = x(start), x(hi if end is None else end)
            width = max(x1 - x0, 1.5)
            parts.append(
                f'<rect x="{x0:.1f}" y="{y}" width="{width:.1f}" height="{lane_h - 4}" '
                f'fill="{_owner_colour(owner)}" opacity="0.85"><title>'
                f'{html.escape(_fmt_interval((start, end, owner)))}</title></rect>')
            if width > 8 * len(owner):
                parts.append(f'<text x="{x0 + 3:.1f}" y="{y + 12}" fill="#fff">{html.escape(owner)}</text>')
    axis_y = len(timeline.lanes) * lane_h + 16
    parts.append(f'<text x="{label_w}" y="{axis_y}">{lo} ms</text>')
    parts.append(f'<text x="{label_w + bar_w - 60}" y="{axis_y}">{hi} ms</text>')
    parts.append("</svg></figure>")
    return "".join(parts)


def _html_blocks(blocks: Sequence[Block], depth: int) -> list[str]:
    out: list[str] = []
    for block in blocks:
        if isinstance(block, str):
            out.append(f"<p>{html.escape(block)}</p>")
        elif isinstance(block, Table):
            out.append(_html_table(block))
        elif isinstance(block, Timeline):
            out.append(_html_timeline(block))
        else:
            level = min(depth, 6)
            out.append(f"<section><h{level}>{html.escape(block.title)}</h{level}>")
            out += _html_blocks(block.blocks, depth + 1)
            out.append("</section>")
    return out


def to_html(doc: Document) -> str:
    body = "\n".join(_html_blocks(doc.blocks, 2))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(doc.title)}</title><style>{_CSS}</style></head>"
            f"<body><h1>{html.escape(doc.title)}</h1>\n{body}\n</body></html>\n")


def write_report(out_dir: Path, stem: str, data: dict[str, Any], doc: Document) -> list[Path]:
    """Write ``stem.json``, ``stem.md`` and ``stem.html`` into ``out_dir`` (created if missing)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{stem}.json", out_dir / f"{stem}.md", out_dir / f"{stem}.html"]
    paths[0].write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
    paths[1].write_text(to_markdown(doc), encoding="utf-8")
    paths[2].write_text(to_html(doc), encoding="utf-8")
    return paths
