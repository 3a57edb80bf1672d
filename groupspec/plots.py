"""Plots for the reports, as inline SVG: the page stays one file that opens offline.

Three shapes cover what the reports draw, so they are written here (a hundred lines) rather than
pulled from a plotting library (matplotlib's SVG output embeds its fonts and paths and weighs
tens of kilobytes per plot, and would add a large dependency to every install):

- :class:`TimeBars` -- a value at points in time (rebalance durations: one bar per rebalance, at its start);
- :class:`Counts` -- how many things happened per interval (events, rebalances over time);
- :class:`HBars` -- one value per name (stop-the-world time per member).

Each is a render block (``to_html()`` / ``to_markdown()``): put it in a :class:`groupspec.render.Document`.
Times on the x axis read as in the timeline (time since the run started, and the wall clock).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from groupspec import timefmt
from groupspec.timeline import tick_labels, ticks

W, H, LEFT, RIGHT, TOP, BOTTOM = 1000, 220, 70, 20, 16, 40
COLOUR = "#4e79a7"
ACCENT = "#d62728"


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _nice_max(value: float, divisions: int = 4) -> float:
    """The top of the y axis: a round step (1, 2, 5 x 10^k; clock steps for times) times ``divisions``."""
    import math

    if value <= 0:
        return float(divisions)
    raw = value / divisions
    exp = 10 ** math.floor(math.log10(raw))
    step = next(m * exp for m in (1, 2, 2.5, 5, 10) if raw <= m * exp)
    return step * math.ceil(value / step - 1e-9)


def _frame(title: str, inner: list[str], height: int = H) -> str:
    return (f'<figure class="plot"><figcaption>{_esc(title)}</figcaption>'
            f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {height}" width="100%" '
            f'role="img" aria-label="{_esc(title)}">' + "".join(inner) + "</svg></figure>")


def _y_axis(vmax: float, fmt: Callable[[float], str], unit_label: str) -> list[str]:
    out = []
    for k in range(5):
        v = vmax * k / 4
        y = H - BOTTOM - (H - TOP - BOTTOM) * k / 4
        if k and abs(v - round(v)) > 1e-9 and v < 10:  # a count axis does not label fractions
            continue
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_esc(fmt(v))}</text>')
    out.append(f'<text class="tick" x="4" y="{TOP - 4}">{_esc(unit_label)}</text>')
    return out


def _time_axis(lo: int, hi: int, start: int) -> tuple[Callable[[float], float], list[str]]:
    span = max(1, hi - lo)

    def x(t: float) -> float:
        return LEFT + (t - lo) * (W - LEFT - RIGHT) / span

    out = [f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{H - BOTTOM}" y2="{H - BOTTOM}" stroke="#999"/>']
    for t in ticks(lo, hi, origin=start):
        tx = x(t)
        rel, clock = tick_labels(t, start)
        anchor = "start" if tx < LEFT + 20 else ("end" if tx > W - RIGHT - 20 else "middle")
        out.append(f'<text class="tick" x="{tx:.1f}" y="{H - BOTTOM + 14}" text-anchor="{anchor}">{_esc(rel)}</text>')
        if clock:
            out.append(f'<text class="tick clock" x="{tx:.1f}" y="{H - BOTTOM + 27}" '
                       f'text-anchor="{anchor}">{_esc(clock)}</text>')
    return x, out


@dataclass
class TimeBars:
    """A value at points in time: one bar per point, its height the value (a duration, by default)."""

    title: str
    points: list[tuple[int, float, str]]  # (time ms, value, tooltip)
    start: int | None = None
    fmt: Callable[[float], str] = field(default=timefmt.duration)
    unit_label: str = "duration"

    def to_html(self) -> str:
        if not self.points:
            return f'<p class="note">{_esc(self.title)}: nothing to plot.</p>'
        times = [t for t, _v, _n in self.points]
        lo, hi = min(times), max(times)
        start = self.start if self.start is not None else lo
        lo = min(lo, start)
        hi = hi if hi > lo else lo + 1
        pad = (hi - lo) * 0.02
        x, axis = _time_axis(int(lo - pad), int(hi + pad), start)
        vmax = _nice_max(max(v for _t, v, _n in self.points))
        inner = _y_axis(vmax, self.fmt, self.unit_label) + axis
        bar_w = max(3.0, min(14.0, (W - LEFT - RIGHT) / max(1, len(self.points)) * 0.6))
        for t, v, note in self.points:
            h = (H - TOP - BOTTOM) * v / vmax
            inner.append(f'<rect class="bar" x="{x(t) - bar_w / 2:.1f}" y="{H - BOTTOM - h:.1f}" width="{bar_w:.1f}" '
                         f'height="{max(h, 1.0):.1f}" fill="{COLOUR}"><title>{_esc(note)}: {_esc(self.fmt(v))} at '
                         f'{_esc(timefmt.at(t, start))}</title></rect>')
        return _frame(self.title, inner)

    def to_markdown(self) -> list[str]:
        start = self.start if self.start is not None else min((t for t, _v, _n in self.points), default=0)
        return [f"*{self.title}*: " + (", ".join(f"{timefmt.since(t, start)} {self.fmt(v)}"
                                                  for t, v, _n in self.points[:40]) or "nothing to plot")]


@dataclass
class Counts:
    """How many things happened per interval of time (the interval chosen so that about 60 bars show)."""

    title: str
    times: Sequence[int] | dict[int, int]  # timestamps, or {timestamp: count}
    start: int | None = None
    what: str = "events"
    marks: list[tuple[int, str]] = field(default_factory=list)  # (time, label): drawn as red ticks (rebalances)

    def _bins(self) -> tuple[int, int, int, list[int]]:
        items = self.times.items() if isinstance(self.times, dict) else ((t, 1) for t in self.times)
        pairs = list(items)
        lo = min(t for t, _ in pairs)
        hi = max(t for t, _ in pairs)
        if self.start is not None:
            lo = min(lo, self.start)
        step = next((s for s in (1, 10, 100, 1000, 2000, 5000, 10_000, 30_000, 60_000, 300_000, 600_000,
                                 1_800_000, 3_600_000, 21_600_000, 86_400_000) if (hi - lo) / s <= 80), 86_400_000)
        counts = [0] * ((hi - lo) // step + 1)
        for t, n in pairs:
            counts[(t - lo) // step] += n
        return lo, hi, step, counts

    def to_html(self) -> str:
        if not self.times:
            return f'<p class="note">{_esc(self.title)}: nothing to plot.</p>'
        lo, hi, step, counts = self._bins()
        start = self.start if self.start is not None else lo
        x, axis = _time_axis(lo, lo + step * len(counts), start)
        vmax = _nice_max(max(counts))
        inner = _y_axis(vmax, lambda v: f"{v:.0f}", f"{self.what} per {timefmt.duration(step)}") + axis
        for i, n in enumerate(counts):
            if not n:
                continue
            h = (H - TOP - BOTTOM) * n / vmax
            x0, x1 = x(lo + i * step), x(lo + (i + 1) * step)
            inner.append(f'<rect class="bar" x="{x0 + 0.5:.1f}" y="{H - BOTTOM - h:.1f}" width="{max(x1 - x0 - 1, 1):.1f}" '
                         f'height="{h:.1f}" fill="{COLOUR}"><title>{n} {_esc(self.what)} from '
                         f'{_esc(timefmt.at(lo + i * step, start))}</title></rect>')
        for t, label in self.marks:
            tx = x(t)
            inner.append(f'<line class="mark" x1="{tx:.1f}" x2="{tx:.1f}" y1="{TOP}" y2="{H - BOTTOM}" stroke="{ACCENT}" '
                         f'stroke-width="1.5"><title>{_esc(label)} at {_esc(timefmt.at(t, start))}</title></line>')
        return _frame(self.title, inner)

    def to_markdown(self) -> list[str]:
        if not self.times:
            return [f"*{self.title}*: nothing to plot"]
        lo, _hi, step, counts = self._bins()
        return [f"*{self.title}* ({self.what} per {timefmt.duration(step)}): " + " ".join(map(str, counts))]


@dataclass
class HBars:
    """One value per name, as horizontal bars, largest first."""

    title: str
    items: list[tuple[str, float, str]]  # (name, value, tooltip)
    fmt: Callable[[float], str] = field(default=timefmt.duration)
    limit: int = 30

    def to_html(self) -> str:
        if not self.items:
            return f'<p class="note">{_esc(self.title)}: nothing to plot.</p>'
        items = sorted(self.items, key=lambda it: -it[1])[: self.limit]
        row, label_w = 20, 200
        height = TOP + row * len(items) + 10
        vmax = _nice_max(max(v for _n, v, _t in items))
        inner = []
        for i, (name, v, note) in enumerate(items):
            y = TOP + i * row
            w = (W - label_w - 120) * v / vmax
            inner.append(f'<text class="lane-label" x="{label_w - 6}" y="{y + 14}" text-anchor="end">{_esc(name)}</text>')
            inner.append(f'<rect class="bar" x="{label_w}" y="{y + 3}" width="{max(w, 1.0):.1f}" height="{row - 6}" '
                         f'fill="{COLOUR}"><title>{_esc(note)}</title></rect>')
            inner.append(f'<text class="tick" x="{label_w + w + 6:.1f}" y="{y + 14}">{_esc(self.fmt(v))}</text>')
        return _frame(self.title, inner, height)

    def to_markdown(self) -> list[str]:
        items = sorted(self.items, key=lambda it: -it[1])[: self.limit]
        return [f"*{self.title}*: " + (", ".join(f"{n} {self.fmt(v)}" for n, v, _t in items) or "nothing")]
