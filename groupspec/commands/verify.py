"""``groupspec verify``: the main job, everything groupspec claims, checked in one run.

1. **proofs** -- every Z3 obligation and its mutants (``groupspec prove``), report in DIR/proof.*;
2. **assignors** -- every ``examples/assign-*.json`` through its assignor and the round invariants;
3. **model scenarios** -- every ``examples/scenario-*.json`` through the simulator with the protocol
   monitor on, and its trace through the trace checker: the two must agree (a checker that flags a
   correct model run, or misses what the model's own monitor saw, is a bug in one of them);
4. **mutants** -- every mutant of ``model.mutants``, run the same way: which layers catch it;
5. **conformance** -- a short conformance campaign (``groupspec conform``): real clients (librdkafka,
   kafka-python, aiokafka) in one group run generated scenarios against librdkafka's embedded mock
   cluster, and each run is compared with the model's run of the same scenario.

Writes DIR/verify.json, verify.md and verify.html (and the proof report beside them). Exit 0 when
every obligation is proved and every mutant refuted, every example keeps its promises, model and
checker agree on every scenario and the real clients' traces show no violation; 1 otherwise.
Violations that Kafka itself commits (``known_kafka_gap`` in the model's monitor) are findings,
listed, not failures of groupspec.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from groupspec.errors import EXIT_OK, EXIT_VIOLATION, InputError, writable_dir
from groupspec.render import Document, Link, Section, Table, write_report

NAME = "verify"
HELP = "the main job: proofs, the examples through model and checker, real clients on the embedded coordinator"

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEEDS = (0, 1, 2)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("reports"), metavar="DIR",
                        help="where the reports go (default reports/)")
    parser.add_argument("--examples", type=Path, default=EXAMPLES, metavar="DIR",
                        help="the assign-*.json and scenario-*.json files to run (default: the shipped examples)")
    parser.add_argument("--skip-clients", action="store_true",
                        help="leave out the real clients against the embedded coordinator")
    parser.add_argument("--skip-proofs", action="store_true", help="leave out the Z3 proofs")


def _say(msg: str) -> None:
    print(f"verify: {msg}", file=sys.stderr, flush=True)


def _proof_progress() -> Callable[[str], None]:
    """The proofs take about a minute: one line per obligation and mutant, numbered, so the wait is visible."""
    from model.proofs import obligations as reg

    selected, mutant_names = reg.select(())
    total = len(selected) + sum(1 for name in mutant_names for ob in selected if name in ob.mutants)
    done = [0]
    started = time.monotonic()

    def progress(msg: str) -> None:
        if msg.startswith(("proving ", "mutant ")):
            done[0] += 1
            _say(f"proofs [{done[0]}/{total}, {time.monotonic() - started:.0f} s] {msg}")

    return progress


# ------------------------------------------------------------------------------------ the parts


def _gap_named(text: str) -> str | None:
    """The known-gap id a proof finding's statement names ("marks it as Kafka's gap 'static-zombie-rejoin'")."""
    from model.invariants.protocol import KNOWN_GAPS

    return next((gap for gap in KNOWN_GAPS if f"'{gap}'" in text), None)


def proofs(out: Path, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    from groupspec.commands.prove import run_proofs
    from groupspec.proof_report import headline as headline_of_proofs
    from groupspec.proof_report import write

    doc = run_proofs(progress=progress)
    write(out, doc)
    s = doc["summary"]
    return {"ok": bool(doc["held"]), "obligations": s["obligations"], "proved": s["proved"],
            "mutants": s["mutants"], "refuted": s["refuted"], "solver": doc["solver"],
            "seconds": s["total_seconds"],
            "headline": headline_of_proofs(doc),
            "findings": [{"id": f["id"], "invariant": f.get("invariant"), "statement": f["statement"],
                          "known_behaviour": _gap_named(f["statement"])} for f in doc.get("findings") or []],
            "failed": [e["id"] for e in doc["obligations"] if e["status"] != "proved"],
            "survived": [m["name"] for m in doc["mutants"] if m["status"] != "refuted"]}


def assignors(examples: Path) -> list[dict[str, Any]]:
    from groupspec.commands.assign import evaluate
    from groupspec.problem import load

    rows = []
    for path in sorted(examples.glob("assign-*.json")):
        parsed = load(str(path))
        code, data, _doc = evaluate(parsed)
        rows.append({"example": path.name, "strategy": parsed.strategy, "ok": code == EXIT_OK,
                     "violated": data.get("violated", []), "transferring": len(data.get("transferring", [])),
                     "stickiness_gap": data.get("stickiness_gap")})
    return rows


def _simulate(scenario_path: Path, seed: int, mutants: frozenset[str]) -> dict[str, Any]:
    """One model run: the monitor's verdict, and the checker's on the same trace."""
    from groupspec.commands.simulate import load_scenario
    from model.invariants.protocol import WARNINGS, Monitor
    from model.system_run import simulate
    from traces.report import check_events

    scenario = load_scenario(str(scenario_path))
    monitor = Monitor(replace(scenario.config, mutants=mutants))
    result = simulate(scenario, seed=seed, mutants=mutants, observer=monitor.observe)
    assert result.final is not None
    monitor.finish(result.final)
    violations = [v for v in monitor.violations if v.invariant not in WARNINGS]
    known = sorted({v.invariant for v in violations if v.known_kafka_gap is not None})
    behaviours: dict[str, set[str]] = {}
    for v in violations:
        if v.known_kafka_gap is not None:
            behaviours.setdefault(v.known_kafka_gap, set()).add(v.invariant)
    model_found = sorted({v.invariant for v in violations})
    report = check_events(result.events, label=scenario_path.name)
    checker_found = sorted({f["invariant"] for f in report["findings"] if f["severity"] == "violation"})
    # what the trace cannot show (e.g. heartbeats, for live-member-kept) the checker reports unchecked
    unchecked = sorted({u["invariant"] for u in report["unchecked"] if not u["partial"]})
    return {"scenario": scenario_path.name, "seed": seed, "events": len(result.events),
            "model": model_found, "known_kafka_gaps": known, "checker": checker_found,
            "checker_unchecked": sorted(set(model_found) & set(unchecked)),
            "known_behaviours": {k: sorted(v) for k, v in sorted(behaviours.items())}}


def scenarios(examples: Path) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(examples.glob("scenario-*.json")):
        for seed in SEEDS:
            row = dict(_simulate(path, seed, frozenset()))
            # Agreement: the checker flags exactly the invariants the model's monitor flags, but for those
            # the checker reports it cannot check on this trace (it never guesses a violation).
            row["ok"] = set(row["model"]) - set(row["checker_unchecked"]) == set(row["checker"]) \
                and set(row["model"]) <= set(row["known_kafka_gaps"])
            rows.append(row)
    return rows


def mutants(examples: Path, proof_summary: dict[str, Any] | None,
            baseline: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Which layer catches each mutant: the model's monitor and the checker over the example scenarios
    (any seed), the round invariants over the assign examples (assignor mutants), the proofs."""
    from groupspec.commands.assign import evaluate
    from groupspec.problem import load
    from model.mutants import MUTANTS

    scenario_paths = sorted(examples.glob("scenario-*.json"))
    base_of = {(r["scenario"], r["seed"]): r for r in baseline}
    assign_paths = sorted(examples.glob("assign-*.json"))
    rows = []
    for name, mutant in MUTANTS.items():
        monitor_by: set[str] = set()
        checker_by: set[str] = set()
        for path in scenario_paths:
            for seed in SEEDS:
                base = base_of[(path.name, seed)]
                run = _simulate(path, seed, frozenset({name}))
                monitor_by |= set(run["model"]) - set(base["model"])
                checker_by |= set(run["checker"]) - set(base["checker"])
        assign_by: set[str] = set()
        if mutant.where.startswith("model.assignors."):
            for path in assign_paths:
                code, data, _doc = evaluate(load(str(path)), frozenset({name}))
                if code != EXIT_OK:
                    assign_by |= set(data.get("violated", [])) or {"assignor-failure"}
        proved_by = None
        if proof_summary is not None:
            proved_by = name not in proof_summary.get("survived", [])
        rows.append({"mutant": name, "where": mutant.where, "model_monitor": sorted(monitor_by),
                     "checker": sorted(checker_by), "assign_examples": sorted(assign_by), "proofs": proved_by})
    return rows


VERIFY_CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka")


def conformance(out: Path) -> list[dict[str, Any]]:
    """A short conformance campaign (docs/conformance.md): a mixed group of librdkafka, kafka-python
    and aiokafka consumers, range, two drawn scenarios, each compared with the model."""
    try:
        from conformance import campaign
    except (ImportError, OSError) as exc:  # no librdkafka on this machine: say so, do not hide it
        return [{"capture": "all", "ok": False, "error": f"the embedded coordinator cannot start: {exc}"}]
    _say("conformance: a short campaign (real clients against the embedded coordinator) ...")
    from conformance import findings
    from groupspec.conform_report import document as conform_document
    from groupspec.render import write_report as write_conform

    # The three clients in one group. A registered open client bug they meet (kafka-python 3.0.12's
    # kafka-python-poll-raises-on-broker-down and kafka-python-join-task-replaced, aiokafka's
    # aiokafka-no-revoke-on-close) is a "known finding", matched on its signature (conformance/findings.py),
    # listed in the report and not a failure of the main job; any other difference is.
    plan = campaign.plan(0, 2, ["range"], [list(VERIFY_CLIENTS)])
    records = campaign.campaign(plan, out / "conformance")
    data = campaign.document(records, findings.load(), seed=0, cluster="mock", versions=campaign.client_versions())
    write_conform(out, "conformance", data, conform_document(data))  # conformance.html, linked from verify.html
    rows = []
    for r in records:
        diffs = r.comparison.get("differences", [])
        rows.append({"capture": f"run {r.index} ({r.kind}): {r.replay}", "seconds": r.seconds, "error": r.error,
                     "events": r.comparison.get("rounds", "-"),
                     "ok": r.verdict in ("pass", "known-finding", "unsupported"),
                     "violations": sorted({d["invariant"] or d["comparison"] for d in diffs if not d.get("known")}),
                     "warnings": sorted({f"known finding {d['known']['finding']}" for d in diffs if d.get("known")})})
    return rows


# ------------------------------------------------------------------------------------ the report


def versions(with_clients: bool = True) -> dict[str, str]:
    """Every component this run measured, with its version: the tool, Python, Z3, the real clients and
    the coordinator they ran against (librdkafka's mock cluster: the librdkafka version)."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    from groupspec import __version__

    out = {"groupspec": __version__, "python": platform.python_version()}
    for dist in ("z3-solver",) + (("confluent-kafka", "kafka-python", "aiokafka") if with_clients else ()):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    if with_clients:
        try:
            from conformance.mock_cluster import library_info

            out["coordinator"] = f"librdkafka {library_info().version} mock cluster (embedded)"
        except (ImportError, OSError) as exc:
            out["coordinator"] = f"unavailable: {exc}"
    return out


def _names(items: list[str] | None) -> str:
    return ", ".join(items) if items else "-"


def known_behaviours(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The known Kafka behaviours this run met: ``{behaviour: {"invariants", "where": [scenario, ...], "what"}}``.

    They are violations of a catalogue invariant that Kafka itself commits (``KNOWN_GAPS`` of the model's
    monitor; a proof finding); a verdict that held does not hide them, it lists them.
    """
    from model.invariants.protocol import KNOWN_GAPS

    out: dict[str, dict[str, Any]] = {}
    for row in data.get("scenarios") or []:
        for behaviour, invariants in row.get("known_behaviours", {}).items():
            entry = out.setdefault(behaviour, {"invariants": set(), "where": [], "what": KNOWN_GAPS.get(behaviour, "")})
            entry["invariants"] |= set(invariants)
            if row["scenario"] not in entry["where"]:
                entry["where"].append(row["scenario"])
    for finding in (data.get("proofs") or {}).get("findings", []):
        entry = out.setdefault(finding["known_behaviour"] or finding["id"],
                               {"invariants": set(), "where": [], "what": finding["statement"]})
        entry["invariants"].add(finding["invariant"])
        entry["where"].append(f"proof finding {finding['id']}")
    return {k: dict(v, invariants=sorted(v["invariants"])) for k, v in sorted(out.items())}


def headline(data: dict[str, Any]) -> str:
    """"held", "held, with N known Kafka behaviours (listed)", or what failed."""
    if not data["ok"]:
        failed = [p["part"] for p in data["parts"] if not p["ok"]]
        return f"NOT HELD: {', '.join(failed)} failed"
    known = data.get("known_behaviours") or {}
    if not known:
        return "held"
    return (f"held, with {len(known)} known Kafka behaviour(s) (listed below): "
            + "; ".join(f"{k} ({', '.join(v['invariants'])})" for k, v in known.items()))


def document(data: dict[str, Any]) -> Document:
    blocks: list[Any] = [
        f"Verdict: {headline(data)} ({data['seconds']:.0f} s). Each part below says what it checked and how to "
        f"rerun it."]
    if data.get("started") is not None:
        from groupspec import timefmt

        blocks.append(f"Run started {timefmt.iso_ms(data['started'])} and took {timefmt.duration(data['seconds'] * 1000)}.")
    links = {"proofs": [Link("proof.html", "proof.html", "the proof report")],
             "conformance": [Link(f"{r['capture']}", r["report"], "the check report of this capture")
                             for r in data.get("conformance") or [] if r.get("report")]}
    if data.get("conformance_report"):
        links["conformance"].insert(0, Link("conformance.html", data["conformance_report"], "the conformance report"))
    summary = Table(["part", "status", "seconds", "reports", "rerun"],
                    [[p["part"], "ok" if p["ok"] else "failed", p["seconds"], links.get(p["part"], []), p["rerun"]]
                     for p in data["parts"]], caption="summary")
    blocks.append(summary)
    if data.get("versions"):
        blocks.append(Table(["component", "version"], [[k, v] for k, v in data["versions"].items()],
                            caption="What ran (every client and coordinator of this run, and the tools)"))
    known = data.get("known_behaviours") or {}
    if known:
        blocks.append(Section("Known Kafka behaviours met", [
            "Each is a catalogue invariant that Apache Kafka itself does not keep in this situation; groupspec "
            "reports it (the model's monitor and the checker flag it) rather than hiding it, and it does not fail "
            "the run.",
            Table(["behaviour", "invariants it breaks", "where", "what Kafka does"],
                  [[k, ", ".join(v["invariants"]), ", ".join(v["where"]), v["what"]] for k, v in known.items()])]))
    if data.get("proofs"):
        p = data["proofs"]
        blocks.append(Section("Proofs", [
            p.get("headline") or f"{p['proved']}/{p['obligations']} obligations proved, {p['refuted']}/{p['mutants']} "
            f"mutants refuted.",
            f"Solver {p['solver']}, {p['seconds']:.1f} s. The full report, with bounds, assumptions and "
            "counterexamples (their ownership timelines show any double ownership):",
            Link("proof.html", "proof.html", "the proof report beside this file"),
            *([f"Not proved: {_names(p['failed'])}; survived: {_names(p['survived'])}."]
              if not p["ok"] else [])]))
    blocks.append(Section("Assignors on the examples", [Table(
        ["example", "strategy", "status", "violated", "transferring", "stickiness gap"],
        [[r["example"], r["strategy"], "ok" if r["ok"] else "failed", _names(r["violated"]), r["transferring"],
          r["stickiness_gap"]] for r in data["assignors"]])]))
    blocks.append(Section("Model scenarios: the model's monitor and the trace checker", [
        "Each scenario runs through the simulator with the protocol monitor on; its trace then goes through "
        "`groupspec check`. The two must flag the same invariants. Violations Kafka itself commits are listed "
        "as known Kafka gaps (docs/protocol-model.md).",
        Table(["scenario", "seed", "events", "model", "checker", "known Kafka gaps", "status"],
              [[r["scenario"], r["seed"], r["events"], _names(r["model"]), _names(r["checker"]),
                _names(r["known_kafka_gaps"]), "agree" if r["ok"] else "diverges"] for r in data["scenarios"]])]))
    if data.get("mutants"):
        blocks.append(Section("Mutants: which layer catches each", [
            "model monitor / checker: invariants that fail on some example scenario and seed with the mutant on "
            "and hold without it; assign examples: round invariants that fail; proofs: refuted by an obligation.",
            Table(["mutant", "where", "model monitor", "checker", "assign examples", "proofs"],
                  [[r["mutant"], r["where"], _names(r["model_monitor"]), _names(r["checker"]),
                    _names(r["assign_examples"]),
                    "-" if r["proofs"] is None else ("refuted" if r["proofs"] else "survived")]
                   for r in data["mutants"]])]))
    if data.get("conformance") is not None:
        blocks.append(Section("Real clients against the embedded coordinator", [
            "A short `groupspec conform` campaign: a group of librdkafka, kafka-python and aiokafka "
            "consumers runs generated scenarios against librdkafka's mock cluster, each compared with the "
            "model (docs/conformance.md). Runs are in conformance/runs/ beside this file. A difference that "
            "matches a registered open finding's signature (docs/findings.md) is listed as a warning "
            "(known finding) and does not fail the run; any other is a divergence.",
            Table(["run and its replay", "assignor rounds", "divergences", "warnings", "seconds", "status", "check report"],
                  [[r["capture"], r.get("events", "-"), _names(r.get("violations")), _names(r.get("warnings")),
                    r.get("seconds", "-"), "ok" if r["ok"] else (r.get("error") or "failed"),
                    Link("report.html", r["report"]) if r.get("report") else "-"]
                   for r in data["conformance"]])]))
    return Document("groupspec verify", blocks)


def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    examples: Path = args.examples
    if not examples.is_dir():
        raise InputError(f"--examples {examples}: not a directory")
    writable_dir(out)
    start = time.monotonic()
    started_at = int(time.time() * 1000)
    data: dict[str, Any] = {"parts": []}

    def part(name: str, rerun: str, fn: Callable[[], Any], ok: Callable[[Any], bool]) -> Any:
        _say(f"{name} ...")
        t0 = time.monotonic()
        value = fn()
        good = ok(value)
        data["parts"].append({"part": name, "ok": good, "rerun": rerun, "seconds": round(time.monotonic() - t0, 1)})
        _say(f"{name}: {'ok' if good else 'FAILED'} in {time.monotonic() - t0:.1f} s")
        return value

    data["proofs"] = None if args.skip_proofs else part(
        "proofs", f"groupspec prove --out {out}", lambda: proofs(out, _proof_progress()), lambda p: p["ok"])
    data["assignors"] = part("assignors", "groupspec assign examples/<file>", lambda: assignors(examples),
                             lambda rows: all(r["ok"] for r in rows))
    data["scenarios"] = part("model scenarios", "groupspec simulate examples/<file> --seed N --out t.jsonl && groupspec check t.jsonl",
                             lambda: scenarios(examples), lambda rows: all(r["ok"] for r in rows))
    data["mutants"] = part("mutants", "groupspec simulate examples/<file> --mutant NAME",
                           lambda: mutants(examples, data["proofs"], data["scenarios"]),
                           lambda rows: all(r["model_monitor"] or r["checker"] or r["assign_examples"] or r["proofs"]
                                            for r in rows))
    data["conformance"] = None if args.skip_clients else part(
        "conformance", f"groupspec conform --strategies range --examples 2 --clients {','.join(VERIFY_CLIENTS)} --out {out}/conformance",
        lambda: conformance(out), lambda rows: all(r["ok"] for r in rows))
    data["ok"] = all(p["ok"] for p in data["parts"])
    data["known_behaviours"] = known_behaviours(data)
    data["versions"] = versions(with_clients=not args.skip_clients)
    data["started"] = started_at
    data["seconds"] = round(time.monotonic() - start, 1)
    if (out / "conformance.html").is_file():  # the conformance campaign's own report, when it wrote one
        data["conformance_report"] = "conformance.html"
    try:
        paths = write_report(out, "verify", data, document(data))
    except OSError as exc:
        raise InputError(f"--out {out}: cannot write the report ({exc.strerror or exc})") from None
    for p in data["parts"]:
        print(f"{p['part']:<16} {'ok' if p['ok'] else 'FAILED':<7} {p['seconds']:>6.1f} s   rerun: {p['rerun']}")
    print(f"verdict: {headline(data)}; report: {paths[1]}, {paths[2]}")
    return EXIT_OK if data["ok"] else EXIT_VIOLATION
