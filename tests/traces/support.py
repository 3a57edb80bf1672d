"""Helpers for the trace-checker tests: write small traces, run the check in-process, pick findings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from groupspec.commands.check import check
from traces.analytics import AnalyticsConfig
from traces.checker import CheckConfig

SAMPLES = Path(__file__).parent / "samples"
REAL = SAMPLES / "real"


def tp(topic: str, partition: int) -> dict[str, Any]:
    return {"topic": topic, "partition": partition}


def tps(*partitions: int, topic: str = "t") -> list[dict[str, Any]]:
    return [tp(topic, p) for p in partitions]


def ev(name: str, ts: int, **fields: Any) -> dict[str, Any]:
    """One trace event; ``parts=(0, 1)`` is shorthand for partitions of topic ``t``."""
    event: dict[str, Any] = {"timestamp": ts, "name": name}
    parts = fields.pop("parts", None)
    if parts is not None:
        event["partitions"] = tps(*parts)
    event.update(fields)
    return event


def consumed(ts: int, partition: int, low: int, high: int, topic: str = "t", **fields: Any) -> dict[str, Any]:
    return ev("records_consumed", ts, count=high - low + 1,
              partitions=[{"topic": topic, "partition": partition, "count": high - low + 1, "minOffset": low,
                           "maxOffset": high}], **fields)


def committed(ts: int, partition: int, offset: int, topic: str = "t", success: bool = True,
              **fields: Any) -> dict[str, Any]:
    return ev("offsets_committed", ts, offsets=[{"topic": topic, "partition": partition, "offset": offset}],
              success=success, **fields)


def write_jsonl(path: Path, events: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def run(paths: list[Path] | Path, *, strict: bool = False, fmt: str | None = None, merge_runs: bool = False,
        **config: Any) -> dict[str, Any]:
    """The report of ``groupspec check`` over ``paths``, with CheckConfig fields as keywords."""
    analytics = {k: config.pop(k) for k in ("gap_ms", "window_ms", "threshold", "timeline_cap") if k in config}
    cfg = CheckConfig(analytics=AnalyticsConfig(**analytics), **config)
    items = paths if isinstance(paths, list) else [paths]
    return check([str(p) for p in items], cfg, fmt, strict, naive_offset_ms=0, merge_runs=merge_runs)


def run_events(tmp_path: Path, files: dict[str, list[dict[str, Any]]], **config: Any) -> dict[str, Any]:
    """Write each member's events to ``<name>.jsonl`` and check them together."""
    paths = [write_jsonl(tmp_path / f"{name}.jsonl", events) for name, events in files.items()]
    return run(paths, **config)


def findings(report: dict[str, Any], invariant: str | None = None, severity: str | None = None) -> list[dict[str, Any]]:
    return [f for f in report["findings"]
            if (invariant is None or f["invariant"] == invariant) and (severity is None or f["severity"] == severity)]


def partitions_of(finding: dict[str, Any]) -> list[tuple[str, int]]:
    return [(p["topic"], p["partition"]) for p in finding["partitions"]]


def unchecked(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {u["invariant"]: u for u in report["unchecked"]}
