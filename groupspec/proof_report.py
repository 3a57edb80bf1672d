"""The proof report for people: proof.json's data as a render.Document (Markdown and HTML).

It opens with a summary table (every obligation and every mutant, with its status), then the
assumptions (one line each, with the obligations that rest on them), the findings, each
obligation's queries, and each mutant's counterexample: the replayed trace as a table and as an
ownership timeline (one lane per partition, the owning member's intervals).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from groupspec import timefmt
from groupspec.render import Block, Document, Section, Table, Timeline, write_report
from groupspec.timeline import from_events


def _fmt_bounds(bounds: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in bounds.items()) or "-"


def _tp(p: Mapping[str, Any]) -> str:
    return f"{p.get('topic')}-{p.get('partition')}"


def ownership_timeline(events: Sequence[Mapping[str, Any]], title: str) -> Timeline:
    """A counterexample's ownership timeline (groupspec.timeline.from_events): double ownership, what a
    counterexample usually proves, shows as two owners in two sub-rows of one row, hatched red."""
    return from_events(events, title)


_EVENT_COLUMNS = ["#", "time", "event", "member", "generation", "partitions", "details"]
_DETAIL_KEYS = ("reason", "leader", "state", "previous_state", "member_id", "owned", "assignor", "protocol",
                "error", "assignment", "step")


def event_table(events: Sequence[Mapping[str, Any]], caption: str) -> Table:
    rows = []
    for i, e in enumerate(events):
        details = []
        for key in _DETAIL_KEYS:
            if key in e and e[key] not in (None, "", [], {}):
                value = e[key]
                if key == "owned":
                    value = " ".join(_tp(p) for p in value)
                elif key == "assignment" and isinstance(value, Mapping):
                    value = "; ".join(f"{m}: {' '.join(_tp(p) for p in ps)}" for m, ps in value.items())
                details.append(f"{key}={value}")
        rows.append([i, timefmt.iso_ms(e.get("timestamp")), e.get("name"), e.get("member", ""), e.get("generation", ""),
                     " ".join(_tp(p) for p in e.get("partitions", ())), "; ".join(details)])
    return Table(_EVENT_COLUMNS, rows, caption=caption)


def proved_forms(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """For each finding (a catalogue predicate that fails in the correct model), what is proved instead.

    ``{finding id: {"invariant", "obligations": [ids of the obligations that prove the weaker form]}}``:
    the obligations of that invariant the finding names (its statement or explanation says "the
    per-generation form proved by protocol-single-owner"), else every obligation of the invariant.
    """
    out: dict[str, dict[str, Any]] = {}
    for f in doc.get("findings") or []:
        inv = f.get("invariant")
        text = f"{f.get('statement', '')} {f.get('explanation', '')}"
        same = [e["id"] for e in doc["obligations"] if e["invariant"] == inv]
        named = [i for i in same if i in text]
        out[f["id"]] = {"invariant": inv, "obligations": named or same}
    return out


def headline(doc: Mapping[str, Any]) -> str:
    """The report's first line: what was proved, named by what is proved rather than by the catalogue's id
    when a finding says the catalogue's predicate itself does not hold."""
    s = doc["summary"]
    verdict = "HELD" if doc.get("held") else "NOT HELD"
    text = f"{verdict}: {s['proved']} of {s['obligations']} obligations proved, {s['refuted']} of {s['mutants']} " \
           f"mutants refuted"
    forms = proved_forms(doc)
    if forms:
        text += "; " + "; ".join(
            f"the catalogue's {v['invariant']} does not hold in the correct model (finding {fid}, a known Kafka "
            f"behaviour) -- what is proved is {', '.join(v['obligations'])}" for fid, v in forms.items())
    return text + "."


def _summary(doc: Mapping[str, Any]) -> list[Block]:
    s = doc["summary"]
    lines = [headline(doc),
             f"Solver {doc['solver']} (timeout {doc['timeout_ms']} ms per query, seed {doc['seed']}"
             f"{', --deep' if doc.get('deep') else ''}). Slowest unbounded obligation: "
             f"{s['unbounded_max_seconds']:.2f} s; total solver and replay time: {s['total_seconds']:.1f} s."]
    weakened = {ob: fid for fid, v in proved_forms(doc).items() for ob in v["obligations"]}
    ob_rows = []
    for e in doc["obligations"]:
        reached = e.get("deep", {}).get("reached")
        invariant = e["invariant"]
        if e["id"] in weakened:
            invariant = f"{invariant}, per-generation form {e['id']} (the catalogue's form: see {weakened[e['id']]})"
        ob_rows.append([e["id"], invariant, e["scope"], e.get("about", "not stated: not tied to the executable model"),
                        ", ".join(e["assumptions"]) or "-", _fmt_bounds(reached or e["bounds"]), e["status"],
                        f"{e['seconds']:.2f}", ", ".join(e["refutes"]) or ("-" if not e["mutants"] else "none")])
    mu_rows = [[m["name"], m["where"], m["status"], ", ".join(m["refuted_by"]) or "-", m.get("invariant") or "-",
                len(m["counterexample"])] for m in doc["mutants"]]
    return [*lines,
            Table(["obligation", "invariant", "scope", "about (encoding / executable model / both)", "assumptions",
                   "bounds", "status", "seconds", "refutes mutants"], ob_rows,
                  caption="Obligations"),
            Table(["mutant", "where", "status", "refuted by", "violates", "trace events"], mu_rows,
                  caption="Mutants (each must be refuted with a concrete counterexample)")]


def _mutation_score(doc: Mapping[str, Any]) -> Section:
    """The measured mutation score (model/proofs/mutation_score.json), beside the obligations: how many
    mutants of model/ each layer killed, and which obligations can see a mutant at all."""
    ms = doc.get("mutation_score")
    if not ms:
        return Section("Mutation score (measured)", [
            "No score file (model/proofs/mutation_score.json): run `python -m benchmarks mutation -- --write-score`."])
    counted = ms.get("counted") or 0
    rows = []
    for layer, v in ms["layers"].items():
        lo, hi = v.get("interval95", (0, 1))
        rows.append([layer if layer != "any" else "any layer", f"{v['killed']}/{counted}",
                     f"{100 * (v['score'] or 0):.0f}% (95%: {100 * lo:.0f}-{100 * hi:.0f}%)",
                     v.get("killed_by_verdict", 0), v.get("crash", 0), v.get("timeout", 0)])
    reads = set(ms.get("reads_model_code", ()))
    first = ms.get("first_kills", {})
    ob_rows = [[e["id"], "yes" if e["id"] in reads else "no: reads only the Z3 encoding",
                first.get(e["id"], 0) if e["id"] in reads else "-"] for e in doc["obligations"]]
    blocks: list[Block] = [
        f"Measured {ms.get('date')} on model/ at commit {ms.get('commit')}, not proved: a seeded random sample of "
        f"{ms.get('sample')} of the {ms.get('population')} Cosmic Ray mutants in {', '.join(ms.get('scope') or [])} "
        f"({ms.get('equivalent', 0)} equivalent, left out; "
        f"{'complete' if ms.get('complete', True) else 'stopped early: a shorter random sample'}), "
        f"{ms.get('seconds_per_mutant')} s per mutant, {ms.get('seconds_total')} s in all ({ms.get('machine')}). "
        f"Command: `{ms.get('command')}`.",
        Table(["layer", "killed", "score", "by its own verdict", "by a crash", "by a timeout"], rows,
              caption="Mutants of model/ killed, per layer"),
        Table(["obligation", "can see a mutant of model/", "mutants it was first to fail on"], ob_rows,
              caption="The obligations and the mutation score (proofs layer: cheapest obligation first, "
                      "stopping at the first failure)"),
    ]
    survivors = ms.get("survivors") or []
    if survivors:
        blocks.append(Table(["surviving mutant (not equivalent)", "was", "became", "escaped"],
                            [[s["id"], s["before"], s["after"], ", ".join(s["escaped"])] for s in survivors],
                            caption="Mutants some layer did not kill"))
    return Section("Mutation score (measured)", blocks)


def _assumptions(doc: Mapping[str, Any]) -> Section:
    rows = [[a["id"], a["statement"], ", ".join(a["used_by"]) or "-"] for a in doc["assumptions"]]
    return Section("Assumptions", [Table(["id", "assumption", "obligations that depend on it"], rows)])


def _findings(doc: Mapping[str, Any]) -> Section | None:
    findings = doc.get("findings") or []
    if not findings:
        return None
    blocks: list[Block] = []
    for f in findings:
        sub: list[Block] = [f["statement"]]
        if f.get("explanation"):
            sub.append(f["explanation"])
        if f.get("counterexample"):
            sub.append(event_table(f["counterexample"], "the executable model's trace"))
            sub.append(ownership_timeline(f["counterexample"], f"ownership in {f['id']}"))
        blocks.append(Section(f"{f['id']} ({f.get('invariant', '-')})", sub))
    return Section("Findings", blocks)


def _obligation_sections(doc: Mapping[str, Any]) -> Section:
    blocks: list[Block] = []
    for e in doc["obligations"]:
        sub: list[Block] = [e["statement"], f"About: {e.get('about', 'not stated')}.",
                            f"Status: {e['status']} in {e['seconds']:.2f} s. {e['summary']}",
                            f"Source: {e['source']}. Assumptions: {', '.join(e['assumptions']) or 'none'}. "
                            f"Bounds: {_fmt_bounds(e['bounds'])}."]
        facts = e.get("facts") or {}
        for key, value in facts.items():
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                sub.append(Table([key.replace("_", " ")], [[v] for v in value]))
            else:
                sub.append(f"{key.replace('_', ' ')}: {value}")
        deep = e.get("deep")
        if deep:
            sub.append(f"--deep reached {_fmt_bounds(deep['reached'])} in {deep['seconds']:.1f} s of a "
                       f"{deep['budget_seconds']:.0f} s budget (stopped: {deep['stopped']}).")
            sub.append(Table(["bounds", "status", "seconds"],
                             [[_fmt_bounds(a["bounds"]), a["status"], a["seconds"]] for a in deep["attempts"]]))
        sub.append(Table(["query", "needs", "answer", "note"],
                         [[q["name"], q["expect"], q["result"], q.get("note", "")] for q in e["queries"]]))
        if e.get("counterexample"):
            sub.append(event_table(e["counterexample"], "counterexample"))
        blocks.append(Section(f"{e['id']} -- {e['status']}", sub))
    return Section("Obligations", blocks)


def _mutant_sections(doc: Mapping[str, Any]) -> Section:
    blocks: list[Block] = []
    for m in doc["mutants"]:
        sub: list[Block] = [f"{m['statement']} ({m['reference']}; switched on in {m['where']})."]
        runs = [[r["obligation"], r["status"], r["proof_status"], f"{r['seconds']:.2f}", r["summary"]]
                for r in m["runs"]]
        if runs:
            sub.append(Table(["obligation", "mutant", "proof under the mutant", "seconds", "summary"], runs))
        else:
            sub.append(m.get("summary", "not run"))
        if m["counterexample"]:
            sub.append(f"Refuted ({m.get('invariant')}): {m.get('explanation', '')}")
            sub.append(event_table(m["counterexample"], f"counterexample: the executable model's trace under "
                                                        f"{m['name']}"))
            sub.append(ownership_timeline(m["counterexample"], f"ownership under {m['name']}"))
        blocks.append(Section(f"{m['name']} -- {m['status']}", sub))
    return Section("Mutants", blocks)


def build_document(doc: Mapping[str, Any]) -> Document:
    blocks: list[Block] = [*_summary(doc), _mutation_score(doc), _assumptions(doc)]
    findings = _findings(doc)
    if findings is not None:
        blocks.append(findings)
    blocks += [_obligation_sections(doc), _mutant_sections(doc)]
    return Document("groupspec proof report", blocks)


def write(out_dir: Path, doc: dict[str, Any]) -> list[Path]:
    return write_report(out_dir, "proof", doc, build_document(doc))


def status_counts(entries: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in entries:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    return counts
