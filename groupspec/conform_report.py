"""The conformance report for people: conformance.json rendered as a groupspec.render Document.

Sections: the versions, the matrix (clients x strategy x kind of scenario: pass / known finding /
divergence / unsupported / error), the reasons for unsupported runs (each said once, with the runs it
covers), every divergence with its differences and replay command, the known findings met (each
difference that matched a registered finding, with the evidence that matched), errors, and the
findings register.
"""

from __future__ import annotations

from typing import Any

from groupspec.render import Document, Section, Table


def document(data: dict[str, Any]) -> Document:
    counts = data["counts"]
    blocks: list[Any] = [
        f"Cluster: {data['cluster']}; seed {data['seed']}; {len(data['runs'])} run(s): "
        + ", ".join(f"{n} {v}" for v, n in counts.items()) + ".",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(data["versions"].items())) + ".",
        "What is compared and why: docs/conformance.md.",
    ]
    rows = [[key.split(" | ")[0], key.split(" | ")[1], key.split(" | ")[2], c["pass"], c.get("known-finding", 0),
             c["divergence"], c["unsupported"], c["error"]] for key, c in sorted(data["matrix"].items())]
    blocks.append(Section("Matrix", [Table(["clients", "strategy", "kind", "pass", "known finding", "divergence",
                                            "unsupported", "error"], rows)]))
    if data["unsupported"]:
        blocks.append(Section("Unsupported (each reason once)", [Table(
            ["why", "runs"], [[u["why"], ", ".join(str(i) for i in u["runs"])] for u in data["unsupported"]])]))
    div_blocks: list[Any] = []
    for r in data["divergences"]:
        diffs = r["comparison"].get("differences", [])
        div_blocks.append(Section(f"run {r['index']}: {r['client']} / {r['strategy']} / {r['kind']}", [
            f"Clients: {r['client_version']}. Scenario: {r['scenario']}. Traces: {r['dir']}.",
            f"Replay: `{r['replay']}`",
            Table(["comparison", "invariant", "difference"],
                  [[d["comparison"], d["invariant"] or "", d["message"]] for d in diffs])]))
    blocks.append(Section("Divergences", div_blocks or ["None."]))
    known_rows = [[r["index"], r["client"], d["known"]["finding"], f"{d['known']['client']} {d['known']['version']}",
                   f"{d['comparison']} / {d['kind']} / {d['detail']}", d["message"], r["replay"]]
                  for r in data.get("known", []) + data["divergences"]
                  for d in r["comparison"].get("differences", []) if d.get("known")]
    blocks.append(Section("Known findings met (not counted as new divergences)", [
        "A difference is a known finding only when it matches a registered open finding's signature in full: "
        "client, version range, comparison, kind and detail (docs/conformance.md).",
        Table(["run", "clients", "finding", "client version", "comparison / kind / detail", "what happened",
               "replay"], known_rows)] if known_rows else ["None."]))
    errors = [r for r in data["runs"] if r["verdict"] == "error"]
    if errors:
        blocks.append(Section("Errors (infrastructure; never a pass)", [Table(
            ["run", "clients", "error", "replay"], [[r["index"], r["client"], r["error"], r["replay"]] for r in errors])]))
    blocks.append(Section("Findings register", [Table(
        ["id", "what", "who", "version", "status"],
        [[f["id"], f["what"], f["who"], f["version"], f["status"]] for f in data["findings"]])]))
    return Document("groupspec conform", blocks)


def summary(data: dict[str, Any]) -> str:
    lines = [f"{len(data['runs'])} run(s): " + ", ".join(f"{n} {v}" for v, n in data["counts"].items())]
    for u in data["unsupported"]:
        lines.append(f"unsupported ({len(u['runs'])} run(s)): {u['why']}")
    for r in data.get("known", []):
        ids = sorted({d["known"]["finding"] for d in r["comparison"].get("differences", []) if d.get("known")})
        lines.append(f"known finding run {r['index']} {r['client']} {r['strategy']} {r['kind']}: {', '.join(ids)}")
    for r in data["divergences"]:
        new = [d for d in r["comparison"].get("differences", []) if not d.get("known")]
        first = (new or [{"message": "?"}])[0]["message"]
        lines.append(f"DIVERGENCE run {r['index']} {r['client']} {r['strategy']} {r['kind']}: {first}")
        lines.append(f"    replay: {r['replay']}")
    for r in data["runs"]:
        if r["verdict"] == "error":
            lines.append(f"ERROR run {r['index']} {r['client']}: {r['error']}")
    return "\n".join(lines) + "\n"
