"""Times as people read them: wall-clock ISO 8601 and time since the run started, never bare epoch ms.

Trace timestamps are milliseconds since the epoch (docs/trace-format.md), except those of the model's
simulator and of hand-written samples, whose clock starts near zero. A timestamp before
:data:`EPOCH_FLOOR_MS` (1 January 1973) is such a model clock: it is shown as the time since zero,
not as a date in 1970 that nobody lived through.

Stable API for every report (check, proof, verify, conformance, mine): :func:`iso_ms`,
:func:`since`, :func:`at`, :func:`duration`.
"""

from __future__ import annotations

from datetime import UTC, datetime

EPOCH_FLOOR_MS = 94_694_400_000  # 1973-01-01T00:00:00Z: earlier "epoch" times are a model's clock


def is_wall_clock(ms: int | float | None) -> bool:
    return ms is not None and ms >= EPOCH_FLOOR_MS


def iso_ms(ms: int | float | None) -> str:
    """``2024-05-02T10:00:20.011Z`` (UTC, millisecond precision); a model clock as ``t=3.000 s``."""
    if ms is None:
        return "-"
    if not is_wall_clock(ms):
        return f"t={ms / 1000:.3f} s"
    stamp = datetime.fromtimestamp(int(ms) / 1000, tz=UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ms) % 1000:03d}Z"


def duration(ms: int | float | None) -> str:
    """A length of time in the unit that reads best: ``850 ms``, ``12.4 s``, ``3 min 05 s``, ``2 h 01 min``."""
    if ms is None:
        return "-"
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    if ms < 1000:
        return f"{sign}{ms:.0f} ms"
    if ms < 60_000:
        return f"{sign}{ms / 1000:.{1 if ms >= 10_000 else 2}f} s"
    s = int(ms // 1000)
    if s < 3600:
        return f"{sign}{s // 60} min {s % 60:02d} s"
    return f"{sign}{s // 3600} h {(s % 3600) // 60:02d} min"


def since(ms: int | float | None, start: int | float | None) -> str:
    """The time since the run started: ``+12.40 s``."""
    if ms is None or start is None:
        return "-"
    return "+" + duration(ms - start) if ms >= start else duration(ms - start)


def at(ms: int | float | None, start: int | float | None) -> str:
    """Both at once, for a table cell: ``10:00:20.011Z (+12.40 s)``; a model clock as ``t=3.000 s``."""
    if ms is None:
        return "-"
    if not is_wall_clock(ms):
        return iso_ms(ms)
    return f"{iso_ms(ms)} ({since(ms, start)})" if start is not None else iso_ms(ms)


def window(t0: int | float | None, t1: int | float | None, start: int | float | None) -> str:
    """A finding's window: ``<at t0>`` when it is an instant, ``<at t0> for <duration>`` otherwise."""
    if t0 is None:
        return "-"
    if t1 is None or t1 == t0:
        return at(t0, start)
    return f"{at(t0, start)} for {duration(t1 - t0)}"
