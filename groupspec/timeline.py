"""The ownership timeline: who owned which partition when, drawn as inline SVG.

One row per partition. Each owner has one colour, the same in every row, named in a legend. When
two members own a partition at once the row splits into sub-rows, one per owner, so the double
ownership is *seen* -- two bars one above the other -- and the span where they overlap is hatched red.
Rebalances (or generations) are grey bands across every row; zombie windows are hatched amber; a
member's stop-the-world pauses (it owned nothing while its group rebalanced) get a row of their
own under the partitions. The time axis has ticks at round steps, labelled with the time since the
run started and the wall-clock time.

Stable API (check, proof, verify, conformance and mine reports use it)::

    Timeline(title, lanes, bands=[Band(...)], marks=[Mark(...)], start=None)
    lanes: {"orders-0": [(start_ms, end_ms | None, owner), ...], ...}    # None: still owned at the end
    Band(start, end, label, kind="rebalance")                              # kind: rebalance | generation | storm
    Mark(start, end, label, kind="zombie", lane="orders-0" | None)         # kind: overlap | zombie | pause
    Mark(..., kind="pause", lane="member a")                               # a pause row per member

:func:`to_html` and :func:`to_markdown` render it; :func:`pauses` derives pause marks from lanes and
bands; :func:`from_events` builds a whole timeline from trace events (docs/trace-format.md). Nothing here reads input: every string is escaped on the way out.
"""

from __future__ import annotations

import hashlib
import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from groupspec import timefmt

Interval = tuple[int, int | None, str]  # (start, end or None = still owned at the end, owner label)

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7",
           "#17becf", "#bcbd22", "#8c564b", "#1f77b4", "#aec7e8", "#98df8a", "#c5b0d5", "#c49c94")
OVERLAP = "#d62728"
ZOMBIE = "#e6a100"
PAUSE = "#7f1d1d"
MAX_LANES = 300  # beyond this a page stops being readable; the rest are counted, not drawn


@dataclass
class Band:
    start: int
    end: int | None
    label: str
    kind: str = "rebalance"


@dataclass
class Mark:
    start: int
    end: int
    label: str
    kind: str = "zombie"  # overlap | zombie | pause
    lane: str | None = None


@dataclass
class Timeline:
    """Ownership over time: one lane per partition, each a list of owned intervals."""

    title: str
    lanes: dict[str, list[Interval]]
    bands: list[Band] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    start: int | None = None  # the run's start, for "time since the start" (default: the earliest time drawn)


# ------------------------------------------------------------------ derived facts


def owners(timeline: Timeline) -> list[str]:
    """The owners in order of first appearance (which fixes their colours)."""
    seen: dict[str, None] = {}
    for ivs in timeline.lanes.values():
        for _start, _end, owner in sorted(ivs, key=lambda iv: iv[0]):
            seen.setdefault(owner, None)
    return list(seen)


def colours(names: Sequence[str]) -> dict[str, str]:
    """Distinct colours for the first owners; a stable hash beyond the palette."""
    out = {}
    for i, name in enumerate(names):
        if i < len(PALETTE):
            out[name] = PALETTE[i]
        else:
            digest = hashlib.sha1(name.encode("utf-8", "replace")).digest()
            out[name] = f"hsl({digest[0] * 360 // 256},{45 + digest[1] % 30}%,{40 + digest[2] % 20}%)"
    return out


def bounds(timeline: Timeline) -> tuple[int, int]:
    points = [t for ivs in timeline.lanes.values() for s, e, _ in ivs for t in (s, e) if t is not None]
    points += [t for b in timeline.bands for t in (b.start, b.end) if t is not None]
    points += [t for m in timeline.marks for t in (m.start, m.end)]
    if not points:
        return 0, 1
    lo, hi = min(points), max(points)
    return lo, hi if hi > lo else lo + 1


def overlaps(ivs: Sequence[Interval], end_of_time: int) -> list[tuple[int, int, str, str]]:
    """Spans of one lane where two owners hold it at once: (start, end, owner a, owner b)."""
    out = []
    items = sorted(ivs, key=lambda iv: iv[0])
    for i, (_s1, e1, o1) in enumerate(items):
        end1 = end_of_time if e1 is None else e1
        for s2, e2, o2 in items[i + 1:]:
            if s2 >= end1:
                break
            end2 = end_of_time if e2 is None else e2
            if o1 != o2 and min(end1, end2) > s2:
                out.append((s2, min(end1, end2), o1, o2))
    return out


def sub_rows(ivs: Sequence[Interval], end_of_time: int) -> list[int]:
    """A sub-row for each interval (in the given order) so that no two overlapping intervals share one."""
    order = sorted(range(len(ivs)), key=lambda i: ivs[i][0])
    row_end: list[int] = []
    out = [0] * len(ivs)
    for i in order:
        start, end, _ = ivs[i]
        stop = end_of_time if end is None else end
        for r, last in enumerate(row_end):
            if last <= start:
                row_end[r] = stop
                out[i] = r
                break
        else:
            out[i] = len(row_end)
            row_end.append(stop)
    return out


def pauses(lanes: dict[str, list[Interval]], bands: Sequence[Band]) -> list[Mark]:
    """Stop-the-world pauses: for each member, the gaps between the times it owned something that fall
    within a rebalance band (eager members own nothing from their revocation to their next assignment)."""
    by_member: dict[str, list[tuple[int, int | None]]] = {}
    for ivs in lanes.values():
        for start, end, owner in ivs:
            by_member.setdefault(owner, []).append((start, end))
    out = []
    for member, spans in sorted(by_member.items()):
        merged: list[list[int | None]] = []
        for start, end in sorted(spans, key=lambda s: s[0]):
            if merged and (merged[-1][1] is None or start <= merged[-1][1]):  # type: ignore[operator]
                last_end = merged[-1][1]
                merged[-1][1] = None if end is None or last_end is None else max(last_end, end)
            else:
                merged.append([start, end])
        for (_s, gap_start), (gap_end, _e) in zip(merged, merged[1:], strict=False):
            if gap_start is None or gap_end is None or gap_end <= gap_start:
                continue
            if any(b.start <= gap_end and (b.end is None or b.end >= gap_start) for b in bands):
                out.append(Mark(gap_start, gap_end, f"{member} owned nothing for "
                                f"{timefmt.duration(gap_end - gap_start)}", "pause", member))
    return out


# ------------------------------------------------------------------ from trace events


def _tp_text(p: Mapping[str, Any]) -> str:
    return f"{p.get('topic')}-{p.get('partition')}"


def _bands(events: Sequence[Mapping[str, Any]]) -> list[Band]:
    """Rebalances as bands: from the coordinator's coordinator_rebalance to its next coordinator_stable."""
    bands: list[Band] = []
    open_at: int | None = None
    for e in events:
        name, t = e.get("name"), int(e.get("timestamp", 0))
        if name == "coordinator_rebalance" and open_at is None:
            open_at = t
        elif name == "coordinator_stable" and open_at is not None:
            bands.append(Band(open_at, t, f"rebalance to generation {e.get('generation')}"))
            open_at = None
    if open_at is not None:
        bands.append(Band(open_at, None, "rebalance (not finished)"))
    return bands


def from_events(events: Sequence[Mapping[str, Any]], title: str, origin: int = 0) -> Timeline:
    """Who owned which partition when, from partitions_assigned / _revoked / _lost / shutdown events.

    Double ownership -- what a counterexample usually proves -- shows as two owners in two sub-rows
    of one partition's row, the overlap hatched red (groupspec.timeline)."""
    open_: dict[tuple[str, str], int] = {}
    lanes: dict[str, list[tuple[int, int | None, str]]] = {}
    for e in events:
        name, member, t = e.get("name"), str(e.get("member", "?")), int(e.get("timestamp", 0))
        parts = [_tp_text(p) for p in e.get("partitions", ())]
        if name == "partitions_assigned":
            for tp in parts:
                lanes.setdefault(tp, [])
                open_.setdefault((tp, member), t)
        elif name == "group_joined" and e.get("owned"):
            # what a member says it owns when it joins (its JoinGroup's owned partitions, KIP-429): an
            # assignor counterexample starts from these claims, so they are ownership too
            for tp in (_tp_text(p) for p in e["owned"]):
                lanes.setdefault(tp, [])
                open_.setdefault((tp, member), t)
        elif name in ("partitions_revoked", "partitions_lost"):
            for tp in parts:
                start = open_.pop((tp, member), None)
                if start is not None:
                    lanes.setdefault(tp, []).append((start, t, member))
        elif name == "shutdown_complete":
            for (tp, who), start in list(open_.items()):
                if who == member:
                    lanes.setdefault(tp, []).append((start, t, who))
                    del open_[(tp, who)]
    for (tp, who), start in open_.items():
        lanes.setdefault(tp, []).append((start, None, who))

    def order(iv: tuple[int, int | None, str]) -> tuple[int, int, str]:
        return (iv[0], iv[1] if iv[1] is not None else 2**62, iv[2])

    lanes_sorted = {tp: sorted(ivs, key=order) for tp, ivs in sorted(lanes.items())}
    bands = _bands(events)
    return Timeline(title, lanes_sorted, bands, pauses(lanes_sorted, bands), start=origin)



# ------------------------------------------------------------------ axis


def _nice_step(span: float, target: int = 8) -> float:
    raw = span / target
    exp = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 5, 10):
        if raw <= m * exp:
            return float(m * exp)
    return float(10 * exp)


_CLOCK_STEPS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000,
                120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000, 43_200_000,
                86_400_000)


def ticks(lo: int, hi: int, target: int = 8, origin: int | None = None) -> list[int]:
    """Tick positions in [lo, hi] at round steps from ``origin`` (default ``lo``), steps a clock reads
    well: 1/2/5 ms ... 30 s, 1 min ... 1 day."""
    span = max(1, hi - lo)
    raw = span / target
    step = next((s for s in _CLOCK_STEPS if s >= raw), int(_nice_step(span, target)))
    origin = lo if origin is None else origin
    first = origin + math.ceil((lo - origin) / step) * step
    return [first + k * step for k in range(int((hi - first) // step) + 1)]


def _compact(ms: int) -> str:
    """A tick's offset: ``+2 s``, ``+1 min 30 s``, ``+250 ms`` (no trailing zeros on round steps)."""
    sign = "+" if ms >= 0 else "-"
    ms = abs(ms)
    if ms % 60_000 == 0 and ms >= 60_000:
        return f"{sign}{ms // 60_000} min"
    if ms % 1000 == 0:
        return f"{sign}{ms // 1000} s"
    if ms >= 1000:
        return f"{sign}{ms / 1000:g} s"
    return f"{sign}{ms} ms"


def tick_labels(t: int, start: int) -> tuple[str, str]:
    """(time since the start, wall clock or empty)."""
    rel = "0" if t == start else _compact(t - start)
    if timefmt.is_wall_clock(t):
        iso = timefmt.iso_ms(t)
        clock = iso[11:19] if t % 1000 == 0 else iso[11:23]
        return rel, clock
    return rel, ""


# ------------------------------------------------------------------ rendering

LABEL_W, PLOT_W, ROW_H, GAP = 170, 1000, 14, 6


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _span_text(lane: str, start: int, end: int | None, owner: str, t0: int) -> str:
    until = "the end of the trace" if end is None else timefmt.at(end, t0)
    length = "" if end is None else f" ({timefmt.duration(end - start)})"
    return f"{lane}: {owner} from {timefmt.at(start, t0)} to {until}{length}"


def to_html(timeline: Timeline) -> str:
    """The timeline as a figure: the SVG (scaled to the page width) and an HTML legend that wraps."""
    lo, hi = bounds(timeline)
    t0 = timeline.start if timeline.start is not None else lo
    lo = min(lo, t0)
    span = hi - lo

    def x(t: float) -> float:
        return LABEL_W + (t - lo) * PLOT_W / span

    names = owners(timeline)
    colour = colours(names)
    lane_items = list(timeline.lanes.items())
    hidden = max(0, len(lane_items) - MAX_LANES)
    lane_items = lane_items[:MAX_LANES]
    pause_marks = [m for m in timeline.marks if m.kind == "pause"]
    pause_rows = list(dict.fromkeys(m.lane or "" for m in pause_marks))

    top = 34  # room for the axis labels
    y = top
    body: list[str] = []
    double_owned = 0
    for lane, ivs in lane_items:
        rows = sub_rows(ivs, hi)
        n_rows = max(rows, default=0) + 1
        height = n_rows * ROW_H
        body.append(f'<g class="lane" data-lane="{_esc(lane)}">')
        body.append(f'<text class="lane-label" x="{LABEL_W - 6}" y="{y + height / 2 + 4:.1f}" '
                    f'text-anchor="end">{_esc(lane)}</text>')
        body.append(f'<line x1="{LABEL_W}" x2="{LABEL_W + PLOT_W}" y1="{y + height + GAP / 2:.1f}" '
                    f'y2="{y + height + GAP / 2:.1f}" stroke="#eee"/>')
        for (start, end, owner), row in zip(ivs, rows, strict=True):
            x0, x1 = x(start), x(hi if end is None else end)
            width = max(x1 - x0, 2.0)
            ry = y + row * ROW_H + 1
            still = ' stroke-dasharray="3 2" stroke="#333"' if end is None else ""
            body.append(f'<rect class="owned" x="{x0:.1f}" y="{ry:.1f}" width="{width:.1f}" height="{ROW_H - 2}" '
                        f'fill="{colour[owner]}"{still}>'
                        f'<title>{_esc(_span_text(lane, start, end, owner, t0))}</title></rect>')
            if width > 7 * len(owner) + 6:
                body.append(f'<text class="owner" x="{x0 + 3:.1f}" y="{ry + ROW_H - 5:.1f}">{_esc(owner)}</text>')
        zombie_spans = [(m.start, m.end) for m in timeline.marks if m.lane == lane and m.kind == "zombie"]
        for s, e, a, b in overlaps(ivs, hi):
            if any(zs <= s <= ze for zs, ze in zombie_spans):
                continue  # a zombie's overlap (allowed by Kafka, fenced): drawn as the zombie window below
            double_owned += 1
            x0, x1 = x(s), x(e)
            body.append(f'<rect class="overlap" x="{x0:.1f}" y="{y - 1:.1f}" width="{max(x1 - x0, 3.0):.1f}" '
                        f'height="{height + 2}" fill="url(#hatch-overlap)" stroke="{OVERLAP}" stroke-width="1.5">'
                        f'<title>{_esc(f"{lane} owned by both {a} and {b} from {timefmt.at(s, t0)} for {timefmt.duration(e - s)}")}'
                        f'</title></rect>')
        for m in timeline.marks:
            if m.lane == lane and m.kind in ("zombie", "overlap"):
                fill = "url(#hatch-zombie)" if m.kind == "zombie" else "url(#hatch-overlap)"
                stroke = ZOMBIE if m.kind == "zombie" else OVERLAP
                x0, x1 = x(m.start), x(m.end)
                body.append(f'<rect class="{m.kind}" x="{x0:.1f}" y="{y - 1:.1f}" width="{max(x1 - x0, 3.0):.1f}" '
                            f'height="{height + 2}" fill="{fill}" stroke="{stroke}" stroke-dasharray="4 2">'
                            f'<title>{_esc(m.label)}</title></rect>')
        body.append("</g>")
        y += height + GAP
    if pause_rows:
        y += 6
        body.append(f'<text class="section" x="{LABEL_W - 6}" y="{y + 8}" text-anchor="end">stop-the-world</text>')
        y += 14
        for member in pause_rows:
            body.append(f'<text class="lane-label" x="{LABEL_W - 6}" y="{y + ROW_H - 3}" text-anchor="end">'
                        f'{_esc(member)}</text>')
            for m in pause_marks:
                if (m.lane or "") == member:
                    x0, x1 = x(m.start), x(m.end)
                    body.append(f'<rect class="pause" x="{x0:.1f}" y="{y + 1}" width="{max(x1 - x0, 2.0):.1f}" '
                                f'height="{ROW_H - 2}" fill="{PAUSE}"><title>{_esc(m.label)} from '
                                f'{_esc(timefmt.at(m.start, t0))}</title></rect>')
            y += ROW_H + 2
    bottom = y + 4

    bands = []
    for b in sorted(timeline.bands, key=lambda b: b.kind == "storm"):
        x0, x1 = x(b.start), x(hi if b.end is None else b.end)
        # a storm is a strip over the axis, so the rebalances inside it stay visible as bands
        y0, h, fill = (top - 6, 5, OVERLAP) if b.kind == "storm" else (top - 4, bottom - top + 4, "#e4e4e4")
        bands.append(f'<rect class="band {_esc(b.kind)}" x="{x0:.1f}" y="{y0}" width="{max(x1 - x0, 2.0):.1f}" '
                     f'height="{h}" fill="{fill}"><title>{_esc(b.label)} from '
                     f'{_esc(timefmt.at(b.start, t0))}'
                     f'{"" if b.end is None else " for " + timefmt.duration(b.end - b.start)}</title></rect>')
    axis = [f'<line x1="{LABEL_W}" x2="{LABEL_W + PLOT_W}" y1="{top - 6}" y2="{top - 6}" stroke="#999"/>']
    for t in ticks(lo, hi, origin=t0):
        tx = x(t)
        rel, clock = tick_labels(t, t0)
        axis.append(f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{top - 6}" y2="{bottom}" stroke="#ddd" '
                    f'stroke-dasharray="2 3"/>')
        anchor = "start" if tx < LABEL_W + 20 else ("end" if tx > LABEL_W + PLOT_W - 20 else "middle")
        axis.append(f'<text class="tick" x="{tx:.1f}" y="11" text-anchor="{anchor}">{_esc(rel)}</text>')
        if clock:
            axis.append(f'<text class="tick clock" x="{tx:.1f}" y="23" text-anchor="{anchor}">{_esc(clock)}</text>')
    total_h = bottom + 6
    width = LABEL_W + PLOT_W + 12
    defs = (f'<defs><pattern id="hatch-overlap" width="6" height="6" patternUnits="userSpaceOnUse" '
            f'patternTransform="rotate(45)"><rect width="6" height="6" fill="{OVERLAP}" fill-opacity="0.18"/>'
            f'<line x1="0" y1="0" x2="0" y2="6" stroke="{OVERLAP}" stroke-width="2.5"/></pattern>'
            f'<pattern id="hatch-zombie" width="6" height="6" patternUnits="userSpaceOnUse" '
            f'patternTransform="rotate(-45)"><rect width="6" height="6" fill="{ZOMBIE}" fill-opacity="0.15"/>'
            f'<line x1="0" y1="0" x2="0" y2="6" stroke="{ZOMBIE}" stroke-width="2"/></pattern></defs>')
    svg = (f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {total_h}" '
           f'width="100%" role="img" aria-label="{_esc(timeline.title)}">{defs}'
           + "".join(bands) + "".join(axis) + "".join(body) + "</svg>")
    legend = ['<div class="legend">']
    for name in names:
        legend.append(f'<span class="key"><i style="background:{colour[name]}"></i>{_esc(name)}</span>')
    if any(b.kind != "storm" for b in timeline.bands):
        legend.append('<span class="key"><i style="background:#e4e4e4"></i>rebalance</span>')
    if any(b.kind == "storm" for b in timeline.bands):
        legend.append(f'<span class="key"><i style="background:{OVERLAP};height:.3rem"></i>rebalance storm</span>')
    if double_owned or any(m.kind == "overlap" for m in timeline.marks):
        legend.append('<span class="key"><i class="hatch-overlap"></i>owned by two members at once</span>')
    if any(m.kind == "zombie" for m in timeline.marks):
        legend.append('<span class="key"><i class="hatch-zombie"></i>zombie window</span>')
    if pause_marks:
        legend.append(f'<span class="key"><i style="background:{PAUSE}"></i>stop-the-world (owned nothing)</span>')
    legend.append('<span class="key"><i class="open"></i>still owned at the end</span>')
    legend.append("</div>")
    note = f'<p class="note">{hidden} more partition(s) not drawn.</p>' if hidden else ""
    summary = (f" {double_owned} span(s) of double ownership." if double_owned else "")
    caption = (f'<figcaption>{_esc(timeline.title)}. Time axis: since {_esc(timefmt.iso_ms(t0))}.'
               f'{_esc(summary)}</figcaption>')
    return f'<figure class="timeline-figure">{caption}{svg}{"".join(legend)}{note}</figure>'


def to_markdown(timeline: Timeline) -> list[str]:
    lo, _hi = bounds(timeline)
    t0 = timeline.start if timeline.start is not None else lo
    out = [f"*{_md(timeline.title)}* (times since {timefmt.iso_ms(t0)})", "",
           "| partition | owned (owner from, to) |", "|---|---|"]
    for lane, ivs in timeline.lanes.items():
        cells = "; ".join(f"{owner} {timefmt.since(s, t0)} to "
                          f"{'the end' if e is None else timefmt.since(e, t0)}" for s, e, owner in ivs)
        out.append(f"| {_md(lane)} | {_md(cells) or '(never owned)'} |")
    hi = bounds(timeline)[1]
    doubled = [(lane, o) for lane, ivs in timeline.lanes.items() for o in overlaps(ivs, hi)]
    if doubled:
        out += ["", "Owned by two members at once: " + "; ".join(
            f"{lane} by {a} and {b} from {timefmt.since(s, t0)} for {timefmt.duration(e - s)}"
            for lane, (s, e, a, b) in doubled[:20])]
    return out


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
