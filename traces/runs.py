"""Which files form one run, and one report for several runs checked apart.

A *run* is one capture: the files of one incident, checked together. Group names are only unique
within a run -- every test rig calls its group ``orders-group`` or ``test-group`` -- so two captures
checked as one would make one group of all their members, and every member of one capture would
look like an intruder in the other's partitions. So each directory named on the command line is a
run of its own, and the files named on the command line (not inside a named directory) form one
more run together; ``--merge-runs`` makes everything one run, for the rare incident whose files
lie in several directories.

Each run is checked by a checker of its own; :func:`combine` makes their reports one. With more
than one run, every group is named ``GROUP @ RUN`` (findings, groups, delivery) so nothing of one
run can be read as another's. When two runs report on a group of the same name in overlapping
time, they may be one incident split across directories (or two clusters with the same group
name): :func:`combine` says so in ``input.run_overlaps``, and ``--merge-runs`` is the way to
check them as one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traces.schema import TraceInputError


@dataclass(frozen=True)
class Run:
    label: str  # how the report names the run: the directory, the file, or "files named on the command line"
    paths: tuple[str, ...]
    loose: bool = False  # the files named on the command line beside directories


def split(paths: list[str] | tuple[str, ...], merge: bool = False) -> list[Run]:
    """Each directory argument a run; the file arguments together one run (in argument order)."""
    if merge or len(paths) <= 1:
        return [Run(paths[0] if len(paths) == 1 else "all inputs", tuple(paths))]
    runs: list[Run] = []
    files = [p for p in paths if not Path(p).is_dir()]
    files_at = None
    for given in paths:
        if Path(given).is_dir():
            runs.append(Run(given.rstrip("/") or given, (given,)))
        elif files_at is None:
            files_at = len(runs)
    if files and files_at is not None:
        label = files[0] if len(files) == 1 else "files named on the command line"
        runs.insert(files_at, Run(label, tuple(files), loose=len(runs) > 0))
    return runs


def require_events(inp: dict[str, Any], run: Run, done: str = "checked") -> None:
    """A run from which no event was read has nothing checked: that is bad input, never a pass.

    ``inp``: the run's input counts (a report's ``input``, or the ``input.json`` of ``groupspec corpus
    --from``: both refuse such a run alike); ``done``: what did not happen to it, for the message."""
    if inp["events"]:
        return
    why = []
    skipped = inp["skipped"]
    if skipped:
        first = ", ".join(e["where"] for e in inp["skipped_examples"][:3])
        why.append(f"{sum(skipped.values())} line(s) skipped ("
                   + ", ".join(f"{k} {v}" for k, v in skipped.items()) + f"; first at {first})")
    if inp.get("ignored_lines"):
        why.append(f"{inp['ignored_lines']} log line(s) with nothing about the group protocol")
    if inp["ignored_files"]:
        why.append(f"{len(inp['ignored_files'])} file(s) ignored")
    raise TraceInputError("no event read" + (": " + "; ".join(why) if why else " (the files are empty)")
                          + f" -- nothing was {done}", source=run.label)


def stray_files(inp: dict[str, Any]) -> list[dict[str, str]]:
    """The files of a run of loose files (named beside directories: ``real/*`` names README.md too) from which no
    event was read, as ignored files: not a run, but not dropped silently either. ``inp`` as
    :func:`require_events`'."""
    return [{"path": s["path"], "why": "no event read"} for s in inp["sources"]] + inp["ignored_files"]


def _rename(name: str, run: Run) -> str:
    return f"{name} @ {run.label}"


def _namespaced(report: dict[str, Any], run: Run) -> dict[str, Any]:
    """``report`` with every group named ``GROUP @ RUN``."""
    out = dict(report)
    out["findings"] = [dict(f, group=_rename(f["group"], run), run=run.label) for f in report["findings"]]
    out["groups"] = {_rename(g, run): dict(v, run=run.label, group=g) for g, v in report["groups"].items()}
    delivery = report.get("delivery")
    if delivery is not None:
        out["delivery"] = dict(
            delivery,
            per_partition=[dict(r, group=_rename(r["group"], run)) for r in delivery["per_partition"]],
            handoff_examples=[dict(h, group=_rename(h["group"], run)) for h in delivery["handoff_examples"]])
    return out


def _run_entry(report: dict[str, Any], run: Run) -> dict[str, Any]:
    inp = report["input"]
    return {"run": run.label, "paths": list(run.paths), "files": [s["path"] for s in inp["sources"]],
            "events": inp["events"], "verdict": report["verdict"], "groups": sorted(report["groups"]),
            "first_timestamp": inp["first_timestamp"], "last_timestamp": inp["last_timestamp"]}


def shared_members(sources: list[dict[str, Any]], only_run: str = "") -> list[dict[str, Any]]:
    """Members of one run read from files of one format in more than one directory.

    A run takes a member name for one consumer, so ``a/m1.jsonl`` and ``b/m1.jsonl`` make one member that
    seems to jump between groups and to hold what two processes held: a parent directory of several
    captures, named as one run, gives violations no capture has. A member's callback trace and its client
    log (two formats) may well lie in two directories, and so may the server.logs of several brokers:
    neither is listed. One entry per run (a source's ``run``, else ``only_run``) and set of directories,
    naming its members.
    """
    dirs: dict[tuple[str, str, str], set[str]] = {}
    for s in sources:
        if s["format"] == "broker-log" or not s.get("member") or not s.get("events"):
            continue  # (a file that gave no event added nothing to the member)
        dirs.setdefault((s.get("run", only_run), s["member"], s["format"]), set()).add(str(Path(s["path"]).parent))
    shared: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    for (run, member, _), found in dirs.items():
        if len(found) > 1:
            shared.setdefault((run, tuple(sorted(found))), set()).add(member)
    return [{"run": run, "directories": list(found), "members": sorted(members)}
            for (run, found), members in sorted(shared.items())]


def shared_member_text(shared: dict[str, Any]) -> str:
    """What one entry of :func:`shared_members` means, for people."""
    members = shared["members"]
    return (f"member{'s' if len(members) > 1 else ''} {', '.join(members)} "
            f"{'are' if len(members) > 1 else 'is'} read from files of one format in "
            f"{len(shared['directories'])} directories ({', '.join(shared['directories'])}), and one run takes a "
            "name for one consumer: if they are separate captures, check each directory as a run of its own (name "
            "each on the command line, without --merge-runs)")


def overlaps(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pairs of runs that report on a group of the same name in overlapping time."""
    out = []
    for i, a in enumerate(entries):
        for b in entries[i + 1:]:
            if None in (a["first_timestamp"], b["first_timestamp"]):
                continue
            start = max(a["first_timestamp"], b["first_timestamp"])
            end = min(a["last_timestamp"], b["last_timestamp"])
            for group in sorted(set(a["groups"]) & set(b["groups"])):
                if start <= end:
                    out.append({"group": group, "runs": [a["run"], b["run"]], "from": start, "to": end})
    return out


def _sum(values: list[Any]) -> Any:
    return sum(v for v in values if v is not None)


def combine(reports: list[dict[str, Any]], runs: list[Run]) -> dict[str, Any]:
    """One report for runs checked apart (the report of the only run, with ``input.runs``, if one)."""
    from traces.report import verdict

    entries = [_run_entry(r, run) for r, run in zip(reports, runs, strict=True)]
    if len(reports) == 1:
        only = dict(reports[0])
        only["input"] = dict(only["input"], runs=entries, run_overlaps=[])
        return only
    parts = [_namespaced(r, run) for r, run in zip(reports, runs, strict=True)]
    findings = [f for p in parts for f in p["findings"]]
    counts: Counter[str] = Counter()
    opportunities: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    for p in parts:
        counts.update(p["finding_counts"])
        opportunities.update(p["opportunities"])
        skipped.update(p["input"]["skipped"])
    checked: list[str] = []
    for p in parts:
        checked += [inv for inv in p["checked"] if inv not in checked]
    unchecked = _unchecked(parts, runs)
    inputs = [p["input"] for p in parts]
    firsts = [i["first_timestamp"] for i in inputs if i["first_timestamp"] is not None]
    lasts = [i["last_timestamp"] for i in inputs if i["last_timestamp"] is not None]
    groups: dict[str, Any] = {}
    for p in parts:
        groups.update(p["groups"])
    return {
        "tool": parts[0]["tool"],
        "verdict": verdict(findings),
        "findings": findings,
        "finding_counts": dict(sorted(counts.items())),
        "checked": checked,
        "unchecked": unchecked,
        "opportunities": dict(sorted(opportunities.items())),
        "input": {
            "files": _sum([i["files"] for i in inputs]),
            "events": _sum([i["events"] for i in inputs]),
            "lines": _sum([i["lines"] for i in inputs]),
            "skipped": dict(sorted(skipped.items())),
            "skipped_examples": [e for i in inputs for e in i["skipped_examples"]][:20],
            "ignored_lines": _sum([i["ignored_lines"] for i in inputs]),
            "superseded": _sum([i["superseded"] for i in inputs]),
            "tolerated_overlaps": _sum([i["tolerated_overlaps"] for i in inputs]),
            "unverified": _sum([i.get("unverified") for i in inputs]),
            "first_timestamp": min(firsts) if firsts else None,
            "last_timestamp": max(lasts) if lasts else None,
            "sources": [dict(s, run=run.label) for i, run in zip(inputs, runs, strict=True) for s in i["sources"]],
            "ignored_files": [f for i in inputs for f in i["ignored_files"]],
            "runs": entries,
            "run_overlaps": overlaps(entries),
            "activity": _activity([i.get("activity") for i in inputs]),
        },
        "groups": groups,
        "delivery": _delivery([p.get("delivery") for p in parts]),
        "config": parts[0]["config"],
    }


def _activity(parts: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The runs' events-per-interval counts on one time axis (the coarsest interval of them)."""
    present = [a for a in parts if a and a.get("counts")]
    if not present:
        return None
    bin_ms = max(a["bin_ms"] for a in present)
    start = min(a["start"] for a in present)
    counts: Counter[int] = Counter()
    for a in present:
        for i, n in enumerate(a["counts"]):
            counts[(a["start"] + i * a["bin_ms"] - start) // bin_ms] += n
    size = max(counts) + 1
    if size > 400:  # runs far apart in time: coarser intervals keep the list short
        factor = -(-size // 400)
        bin_ms *= factor
        merged: Counter[int] = Counter()
        for k, n in counts.items():
            merged[k // factor] += n
        counts, size = merged, max(merged) + 1
    return {"start": start, "bin_ms": bin_ms, "counts": [counts.get(i, 0) for i in range(size)]}


def _unchecked(parts: list[dict[str, Any]], runs: list[Run]) -> list[dict[str, Any]]:
    """An invariant unchecked in every run stays unchecked; one unchecked in some runs is partly checked."""
    by_inv: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for p, run in zip(parts, runs, strict=True):
        for u in p["unchecked"]:
            by_inv.setdefault(u["invariant"], []).append((run.label, u))
    out = []
    for inv, notes in by_inv.items():
        everywhere = len(notes) == len(parts) and not any(u["partial"] for _, u in notes)
        reasons = sorted({u["reason"] for _, u in notes})
        if everywhere and len(reasons) == 1:
            out.append({"invariant": inv, "reason": reasons[0], "partial": False})
        else:
            out.append({"invariant": inv, "partial": not everywhere,
                        "reason": "; ".join(f"in {label}: {u['reason']}" for label, u in notes)})
    return out


def _delivery(parts: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    present = [d for d in parts if d is not None]
    if not present:
        return None
    by_cause: Counter[str] = Counter()
    causes: dict[str, str] = {}
    for d in present:
        by_cause.update(d["duplicates_by_cause"])
        causes.update(d["causes"])
    return {
        "handoffs": _sum([d["handoffs"] for d in present]),
        "handoffs_with_duplicates": _sum([d["handoffs_with_duplicates"] for d in present]),
        "handoffs_unmeasured": _sum([d["handoffs_unmeasured"] for d in present]),
        "duplicates": _sum([d["duplicates"] for d in present]),
        "duplicates_by_cause": dict(sorted(by_cause.items())),
        "causes": dict(sorted(causes.items())),
        "per_partition": [r for d in present for r in d["per_partition"]],
        "handoff_examples": [h for d in present for h in d["handoff_examples"]],
        "handoff_examples_truncated": any(d["handoff_examples_truncated"] for d in present),
    }


__all__ = ["Run", "TraceInputError", "combine", "overlaps", "require_events", "split", "stray_files"]
