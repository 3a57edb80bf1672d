"""The measured mutation score, read from the committed score file, for the proof report.

``python -m benchmarks mutation -- --write-score`` (benchmarks/bench_mutation.py) makes mutants of the
executable model with Cosmic Ray, runs four layers on each -- the model's tests, the runtime monitor, the
trace checker and the obligations that run the Python model -- and writes what each layer killed to
``mutation_score.json`` next to this module. Mutants found equivalent to the original (no behaviour can
tell them apart) are listed with why in ``mutation_equivalent.json`` and leave every denominator.

This module only reads those files: the proof report shows the score beside the obligations, marked
with the date and the commit of model/ it measured, because a score is a measurement of one version
of the code, not a property the proofs establish. Nothing here runs a mutant.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCORE_FILE = Path(__file__).with_name("mutation_score.json")
EQUIVALENT_FILE = Path(__file__).with_name("mutation_equivalent.json")

#: The obligations that read model/ code, and so can see a mutant; every other obligation is an induction
#: or a query over the Z3 encoding alone (model/proofs/protocol_model.py, delivery.py) and cannot.
READS_MODEL_CODE = frozenset({
    "model-explore-invariants", "model-explore-tie", "converges-after-change", "replay-tie", "replay-converse",
    "delivery-tie", "range-balance", "range-exact-cover", "roundrobin-balance", "sticky-claims-single-owner",
    "sticky-quota", "coop-withhold", "stickiness-optimum", "model-explore-delivery", "model-coordinator-contracts",
    "model-member-contracts",
})


def load(path: Path = SCORE_FILE) -> dict[str, Any] | None:
    """The score file's content, or None when there is none (a tree where it was never measured)."""
    try:
        doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return doc


def first_kills(doc: dict[str, Any]) -> dict[str, int]:
    """Per obligation: the mutants it was the first to fail on (the proofs layer runs them cheapest first and
    stops at the first that is not proved, so each killed mutant is credited to one obligation)."""
    out: dict[str, int] = {}
    for row in doc.get("mutants", ()):
        detail = row.get("layers", {}).get("proofs", {}).get("detail") or {}
        if isinstance(detail, dict):
            for oid, status in detail.items():
                if status != "proved":
                    out[oid] = out.get(oid, 0) + 1
    return out


def for_report(path: Path = SCORE_FILE) -> dict[str, Any] | None:
    """What the proof report shows: the per-layer scores, when and on what they were measured, the
    surviving mutants that are not equivalent, and which obligations can see a mutant at all."""
    doc = load(path)
    if doc is None:
        return None
    summary = doc.get("summary", {})
    return {
        "date": doc.get("date"), "commit": doc.get("commit"), "command": doc.get("command"),
        "tool": doc.get("tool"), "scope": doc.get("scope"), "population": doc.get("population"),
        "sample": doc.get("sample"), "complete": doc.get("complete", True), "seed": doc.get("seed"),
        "seconds_total": doc.get("seconds_total"), "seconds_per_mutant": doc.get("seconds_per_mutant"),
        "machine": doc.get("machine"), "counted": summary.get("counted"), "equivalent": summary.get("equivalent"),
        "layers": summary.get("layers", {}),
        "first_kills": doc.get("first_kills", {}),
        "survivors": [s for s in doc.get("survivors", ()) if not s.get("equivalent")],
        "reads_model_code": sorted(READS_MODEL_CODE),
        "not_run": doc.get("not_run", {}),
    }
