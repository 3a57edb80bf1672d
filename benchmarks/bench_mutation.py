"""Mutation testing of the executable model, per layer: which of tests, monitor, checker and proofs kill each mutant.

The mutants come from Cosmic Ray (``cosmic-ray==8.7.0``, the ``mutation`` extra): its operators and its
occurrence numbering (``cosmic_ray.mutating.mutate_code``) make each mutant; this file only decides which
mutants to run and runs every *layer* on each, because Cosmic Ray's own session runs one test command and
stops at the first kill, while the question here is what each layer sees:

- ``tests``: the model's unit and property tests that cover the mutated area (:data:`TEST_SELECTION`;
  pytest ``-x``, Hypothesis profile ``ci``). Killed when pytest fails.
- ``monitor``: the runtime monitor (``model.invariants.protocol.Monitor``) on every example scenario
  (examples/scenario-*.json, what ``groupspec simulate`` runs) and on seeded random walks
  (tests/model/test_stateful_walks.walk). Killed when any run's violations differ from the unmutated model's.
- ``checker``: the trace checker (``traces.report.check_events``) on the simulator's trace of every example
  scenario. Killed when any run's findings differ from the unmutated model's.
- ``proofs``: the obligations that run the Python model (:data:`PROOF_OBLIGATIONS`), cheapest first, stopping
  at the first that is not ``proved``. The inductions over the Z3 encoding (protocol-*, delivery-*,
  static-rejoin-fast-path) do not read model/ code: a mutant cannot change them, so they are not run.

A layer that raises (the mutated model crashes) or runs past the per-mutant timeout also kills the mutant;
the outcome keeps the three apart (``violation`` / ``crash`` / ``timeout``), and the score is reported with
and without the crashes. Mutants named in model/proofs/mutation_equivalent.json (equivalent to the original,
with why) leave every denominator.

Each layer runs in its own ``python`` process (``nice -n 15``) inside a scratch copy of the tree with the one
mutated file written in; the worktree itself is never edited. A full run over model/ is far beyond this
machine (thousands of mutants x ~2 minutes of layers), so the run is a seeded random sample of the mutants
in ``--scope``; the population per module is counted and reported, so the sample's share is visible.

``python -m benchmarks mutation [-- --sample 40 --seed 1 --workers 2 --write-score]``; results go to
reports/bench/mutation.json, and ``--write-score`` also writes the committed score file that
``groupspec prove`` shows (model/proofs/mutation_score.json).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from model.proofs.mutation_score import EQUIVALENT_FILE, SCORE_FILE, first_kills

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("tests", "monitor", "checker", "proofs")

#: The default scope: the protocol's executable core (coordinator, member, the system that wires them) and
#: the assignors. model/proofs, model/invariants (the checks themselves) and the records/delivery modules
#: are out of it: say so in the report.
DEFAULT_SCOPE = ("model/classic/coordinator", "model/classic/member", "model/assignors", "model/system.py",
                 "model/system_evolve.py", "model/system_run.py")

#: Cosmic Ray operators used. Left out: the binary-operator swaps other than + and - (``a + b`` -> ``a ** b``
#: and the like: the model's arithmetic is additions and subtractions of times and counts, and those swaps
#: mostly make code that crashes at once), VariableInserter/VariableReplacer (random names, not a slip of an
#: edit), RemoveDecorator (removes ``@dataclass``: an import-time crash), ExceptionReplacer (the model raises
#: for bad input only, which no layer exercises as behaviour).
OPERATORS = (
    "core/ReplaceBinaryOperator_Add_Sub", "core/ReplaceBinaryOperator_Sub_Add",
    "core/ReplaceComparisonOperator_Eq_NotEq", "core/ReplaceComparisonOperator_NotEq_Eq",
    "core/ReplaceComparisonOperator_Lt_LtE", "core/ReplaceComparisonOperator_LtE_Lt",
    "core/ReplaceComparisonOperator_Gt_GtE", "core/ReplaceComparisonOperator_GtE_Gt",
    "core/ReplaceComparisonOperator_Lt_Gt", "core/ReplaceComparisonOperator_Gt_Lt",
    "core/ReplaceComparisonOperator_Is_IsNot", "core/ReplaceComparisonOperator_IsNot_Is",
    "core/ReplaceAndWithOr", "core/ReplaceOrWithAnd", "core/AddNot", "core/ReplaceUnaryOperator_Delete_Not",
    "core/ReplaceTrueWithFalse", "core/ReplaceFalseWithTrue", "core/NumberReplacer",
    "core/ReplaceBreakWithContinue", "core/ReplaceContinueWithBreak", "core/ZeroIterationForLoop",
)

#: Fast test selection: the test files that exercise each area (prefix of the mutated file). The golden runs
#: (133 digested runs of the whole system) cover every protocol module. tests/model/test_sticky_java.py is left
#: out: it starts a JVM, and two workers would run two at once on a machine where each engineer may run one.
_PROTOCOL_TESTS = ("tests/model/test_golden.py", "tests/model/test_system.py", "tests/model/test_stateful_walks.py",
                   "tests/model/test_system_stuck.py", "tests/model/test_fidelity.py",
                   "tests/model/test_mutation_kills.py")
TEST_SELECTION: dict[str, tuple[str, ...]] = {
    "model/classic/coordinator": ("tests/model/test_coordinator_*.py", *_PROTOCOL_TESTS),
    "model/classic/member": ("tests/model/test_member.py", "tests/model/test_stateful.py", *_PROTOCOL_TESTS),
    "model/system": ("tests/model/test_stateful.py", "tests/model/test_system_mutants.py", *_PROTOCOL_TESTS),
    "model/assignors/range.py": ("tests/model/test_range.py", "tests/model/test_differential_range_roundrobin.py",
                                 "tests/model/test_assignors_promises.py"),
    "model/assignors/roundrobin.py": ("tests/model/test_roundrobin.py",
                                      "tests/model/test_differential_range_roundrobin.py",
                                      "tests/model/test_assignors_promises.py"),
    "model/assignors/cooperative_sticky.py": ("tests/model/test_cooperative_sticky.py",
                                              "tests/model/test_assignors_promises.py", "tests/model/test_golden.py",
                                              "tests/model/test_sticky_java_recorded.py"),
    "model/assignors": ("tests/model/test_sticky.py", "tests/model/test_sticky_differential.py",
                        "tests/model/test_sticky_invariants.py", "tests/model/test_sticky_kafka.py",
                        "tests/model/test_sticky_properties.py", "tests/model/test_assignors_promises.py",
                        "tests/model/test_cooperative_sticky.py", "tests/model/test_sticky_java_recorded.py"),
}

#: The obligations that run the Python model, cheapest first (times on a quiet machine: docs/proofs.md).
#: The assignor cross-checks read only model/assignors and model/stickiness.
ASSIGNOR_OBLIGATIONS = ("coop-withhold", "sticky-claims-single-owner", "range-exact-cover", "range-balance",
                        "roundrobin-balance", "sticky-quota", "stickiness-optimum")
PROTOCOL_OBLIGATIONS = ("model-coordinator-contracts", "model-member-contracts", "model-explore-invariants",
                        "delivery-tie", "converges-after-change", "replay-converse", "model-explore-tie", "replay-tie",
                        "model-explore-delivery")
PROOF_OBLIGATIONS = ASSIGNOR_OBLIGATIONS + PROTOCOL_OBLIGATIONS
WALK_SEEDS = range(3)


@dataclass(frozen=True)
class Mutant:
    module: str  # path relative to the tree root
    operator: str
    occurrence: int
    line: int
    before: str  # the source line, as it was
    after: str  # the mutated line(s)

    @property
    def id(self) -> str:
        return f"{self.module}:{self.line}:{self.operator.split('/')[-1]}#{self.occurrence}"


# --------------------------------------------------------------------------------------------- enumeration


def _modules(scope: Sequence[str], root: Path) -> list[Path]:
    out: list[Path] = []
    for s in scope:
        p = root / s
        out += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return [p for p in out if p.name != "__init__.py" or p.stat().st_size > 200]


def enumerate_mutants(scope: Sequence[str], root: Path = ROOT) -> list[tuple[str, str, int, int]]:
    """Every (module, operator, occurrence, line) Cosmic Ray can make in ``scope`` with :data:`OPERATORS`."""
    import cosmic_ray.plugins
    from cosmic_ray.ast import ast_nodes, get_ast_from_path

    out = []
    for path in _modules(scope, root):
        tree = get_ast_from_path(path)
        nodes = list(ast_nodes(tree))
        for name in OPERATORS:
            operator = cosmic_ray.plugins.get_operator(name)()
            positions = [start for node in nodes for start, _ in operator.mutation_positions(node)]
            out += [(str(path.relative_to(root)), name, i, start[0]) for i, start in enumerate(positions)]
    return out


def make(module: str, operator_name: str, occurrence: int, root: Path = ROOT) -> tuple[Mutant, str] | None:
    """The mutant and the mutated source, or None when Cosmic Ray makes nothing there."""
    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code

    source = (root / module).read_text(encoding="utf-8")
    mutated = mutate_code(source, cosmic_ray.plugins.get_operator(operator_name)(), occurrence)
    if mutated is None or mutated == source:
        return None
    old, new = source.splitlines(), mutated.splitlines()
    changed = [op for op in difflib.SequenceMatcher(a=old, b=new).get_opcodes() if op[0] != "equal"]
    _, i1, i2, j1, j2 = changed[0]
    return Mutant(module, operator_name, occurrence, i1 + 1, "\n".join(old[i1:i2]).strip(),
                  "\n".join(new[j1:j2]).strip()), mutated


# --------------------------------------------------------------------------------------------- layers (child)


def _examples(root: Path) -> list[Path]:
    return sorted((root / "examples").glob("scenario-*.json"))


def _layer_monitor(root: Path) -> dict[str, Any]:

    from model.invariants.protocol import Monitor
    from model.scenario import parse
    from model.system_run import simulate
    from tests.model.test_stateful_walks import ASSIGNOR_LISTS, walk

    out: dict[str, Any] = {}
    for path in _examples(root):
        scenario = parse(json.loads(path.read_text(encoding="utf-8")))
        monitor = Monitor(scenario.config)
        result = simulate(scenario, observer=monitor.observe)
        assert result.final is not None
        monitor.finish(result.final)
        out[path.name] = sorted({f"{v.invariant}/{v.known_kafka_gap or ''}" for v in monitor.failed()})
    for assignors in ASSIGNOR_LISTS:
        for seed in WALK_SEEDS:
            monitor, _ = walk(seed, assignors)
            out[f"walk-{'+'.join(assignors)}-{seed}"] = sorted(
                {f"{v.invariant}/{v.known_kafka_gap or ''}" for v in monitor.failed()})
    return out


def _layer_checker(root: Path) -> dict[str, Any]:
    from model.scenario import parse
    from model.system_run import simulate
    from traces.report import check_events

    out: dict[str, Any] = {}
    for path in _examples(root):
        scenario = parse(json.loads(path.read_text(encoding="utf-8")))
        events = [dict(e) for e in simulate(scenario).events]
        report = check_events(events, label=path.name)
        out[path.name] = sorted({f"{f.get('invariant')}/{f.get('severity')}" for f in report.get("findings", [])})
    return out


def _layer_proofs(module: str) -> dict[str, Any]:
    from model.proofs import obligations
    from model.proofs.core import RunConfig

    ids = PROOF_OBLIGATIONS if module.startswith(("model/assignors", "model/stickiness")) else PROTOCOL_OBLIGATIONS
    out: dict[str, Any] = {}
    for oid in ids:
        got = obligations.get(oid).run(RunConfig())
        # "failed:raised": the obligation's verdict is that the model raised (model.proofs.contracts says so
        # instead of crashing); counted as its verdict, and told apart in the docs
        out[oid] = str(got.status) + (":raised" if got.facts.get("raised") and str(got.status) != "proved" else "")
        if out[oid] != "proved":
            break
    return out


def _child(layer: str, module: str, root: Path) -> int:
    if layer == "monitor":
        result = _layer_monitor(root)
    elif layer == "checker":
        result = _layer_checker(root)
    elif layer == "proofs":
        result = _layer_proofs(module)
    else:
        raise SystemExit(f"unknown layer {layer}")
    print(json.dumps(result, sort_keys=True))
    return 0


# --------------------------------------------------------------------------------------------- driver


def tests_for(module: str, root: Path) -> list[str]:
    for prefix, patterns in TEST_SELECTION.items():
        if module.startswith(prefix):
            files = sorted({str(p.relative_to(root)) for pat in patterns for p in root.glob(pat)})
            return files
    return ["tests/model"]


_COPY = ("model", "traces", "tests", "examples", "benchmarks", "groupspec", "conformance", "spark_analysis",
         "pyproject.toml")


def scratch_copy(into: Path) -> Path:
    for name in _COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, into / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis"))
        elif src.exists():
            shutil.copy2(src, into / name)
    return into


def _write(root: Path, module: str, text: str) -> None:
    path = root / module
    path.write_text(text, encoding="utf-8")
    # a mutant of the same length written within the same second would otherwise reuse the stale .pyc
    for pyc in (path.parent / "__pycache__").glob(path.stem + ".*.pyc"):
        pyc.unlink()


def run_layer(layer: str, module: str, root: Path, timeout: float) -> dict[str, Any]:
    """Run one layer in a child process; ``{"status": ok|fail|crash|timeout, "seconds", "result"}``."""
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONHASHSEED": "0", "HYPOTHESIS_PROFILE": "ci"}
    if layer == "tests":
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header",
               "-o", "addopts=", *tests_for(module, root)]
    else:
        cmd = [sys.executable, "-m", "benchmarks.bench_mutation", "--layer", layer, "--module", module]
    started = time.monotonic()
    try:
        proc = subprocess.run(["nice", "-n", "15", *cmd], cwd=root, env=env, capture_output=True, text=True,
                              timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "seconds": round(time.monotonic() - started, 1)}
    seconds = round(time.monotonic() - started, 1)
    if layer == "tests":
        status = {0: "ok", 1: "fail"}.get(proc.returncode, "crash")
        tail = proc.stdout.strip().splitlines()[-1:] if proc.stdout.strip() else []
        return {"status": status, "seconds": seconds, "result": tail[0] if tail else proc.stderr[-300:]}
    if proc.returncode != 0:
        return {"status": "crash", "seconds": seconds, "result": proc.stderr.strip().splitlines()[-1:]}
    return {"status": "ok", "seconds": seconds, "result": json.loads(proc.stdout)}


def verdict(layer: str, got: dict[str, Any], baseline: dict[str, Any]) -> str:
    """survived / violation (the layer's own verdict differs) / crash / timeout."""
    if got["status"] in ("crash", "timeout"):
        return got["status"]
    if layer == "tests":
        return "violation" if got["status"] == "fail" else "survived"
    if layer == "proofs":
        return "violation" if any(s != "proved" for s in got["result"].values()) else "survived"
    base = baseline["result"]
    return "violation" if any(got["result"].get(k) != v for k, v in base.items()) else "survived"


def load_equivalent() -> dict[str, dict[str, str]]:
    if not EQUIVALENT_FILE.exists():
        return {}
    return {e["id"]: e for e in json.loads(EQUIVALENT_FILE.read_text(encoding="utf-8"))["equivalent"]}


def _wilson(k: int, n: int) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    z, p = 1.96, k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return (round(max(0.0, centre - half), 3), round(min(1.0, centre + half), 3))


def summarise(rows: list[dict[str, Any]], equivalent: dict[str, dict[str, str]],
              layers: Sequence[str] = LAYERS) -> dict[str, Any]:
    counted = [r for r in rows if r["id"] not in equivalent]
    n = len(counted)
    out: dict[str, Any] = {"mutants": len(rows), "equivalent": len(rows) - n, "counted": n, "layers": {}}
    for layer in (*layers, "any"):
        outcomes = [r["any"] if layer == "any" else r["layers"][layer]["verdict"] for r in counted]
        killed = sum(o != "survived" for o in outcomes)
        by_verdict = sum(o == "violation" for o in outcomes)
        out["layers"][layer] = {"killed": killed, "score": round(killed / n, 3) if n else None,
                                "interval95": _wilson(killed, n),
                                "killed_by_verdict": by_verdict,
                                "crash": sum(o == "crash" for o in outcomes),
                                "timeout": sum(o == "timeout" for o in outcomes)}
    return out


#: model/ as the mutants see it: the score files themselves are not model code.
MODEL_CODE = ("model", ":(exclude)model/proofs/mutation_score.json", ":(exclude)model/proofs/mutation_score.py",
              ":(exclude)model/proofs/mutation_equivalent.json")

NOT_RUN = {
    "layers": "the inductions over the Z3 encoding (protocol-*, delivery-* but delivery-tie, static-rejoin-fast-path) "
              "do not read model/ code and cannot see a mutant; tests/model/test_sticky_java.py (a JVM per mutant)",
    "modules": "outside the scope: model/proofs, model/invariants (the checks themselves), model/records, "
               "model/consumption, model/network, model/messages, model/scenario, model/stickiness, model/types",
}


def survivors(rows: list[dict[str, Any]], layers: Sequence[str],
              equivalent: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    return [{k: r[k] for k in ("id", "before", "after")} | {
        "escaped": [x for x in layers if r["layers"][x]["verdict"] == "survived"],
        "equivalent": equivalent.get(r["id"], {}).get("why")} for r in rows
        if any(v["verdict"] == "survived" for v in r["layers"].values())]


def markdown(doc: dict[str, Any]) -> str:
    """The tables docs/proofs.md and docs/benchmarks.md quote: the score per layer, then every survivor."""
    s = doc["summary"]
    lines = [f"{doc['sample']} of {doc['population']} mutants (seed {doc['seed']}), model/ at {doc['commit']}, "
             f"{doc['date']}; {s['equivalent']} equivalent, {s['counted']} counted; "
             f"{doc['seconds_per_mutant']} s per mutant, {doc['seconds_total']} s in all; {doc['machine']}.", "",
             "| layer | killed | score (95% interval) | by its verdict | by a crash | by a timeout | s per mutant |",
             "|---|---|---|---|---|---|---|"]
    for layer, v in s["layers"].items():
        lo, hi = v["interval95"]
        per = doc.get("seconds_per_layer", {}).get(layer, "")
        lines.append(f"| {layer} | {v['killed']}/{s['counted']} | {100 * (v['score'] or 0):.0f}% "
                     f"({100 * lo:.0f}-{100 * hi:.0f}%) | {v['killed_by_verdict']} | {v['crash']} | {v['timeout']} "
                     f"| {per} |")
    lines += ["", "| surviving mutant | was | became | escaped | equivalent |", "|---|---|---|---|---|"]
    def cell(text: str) -> str:  # a | in code would end the Markdown cell
        return text.replace("|", "\\|")

    for r in doc["survivors"]:
        lines.append(f"| `{r['id']}` | `{cell(r['before'])}` | `{cell(r['after'])}` | {', '.join(r['escaped'])} | "
                     f"{cell(r['equivalent'] or '-')} |")
    return "\n".join(lines) + "\n"


def rescore(out: Path, write_score: bool) -> int:
    """Recount a finished (or stopped) run: equivalent mutants are judged after the run, by reading them."""
    try:
        doc = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"mutation: {out}: cannot read the run ({exc})", file=sys.stderr)
        return 2
    equivalent = load_equivalent()
    rows, layers = doc["mutants"], doc["layers_run"]
    doc["summary"] = summarise(rows, equivalent, layers)
    doc["survivors"] = survivors(rows, layers, equivalent)
    doc["first_kills"] = first_kills(doc)
    doc["commit"] = _git_commit(*MODEL_CODE)
    out.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(doc), encoding="utf-8")
    if write_score:
        SCORE_FILE.write_text(json.dumps({k: v for k, v in doc.items() if k != "mutants"}, indent=1) + "\n",
                              encoding="utf-8")
    print("mutation: " + ", ".join(f"{k} {v['killed']}/{doc['summary']['counted']}"
                                   for k, v in doc["summary"]["layers"].items()))
    return 0


def _git_commit(*paths: str) -> str:
    """The commit measured: the last one that changed ``paths`` (model/: what the mutants were made from)."""
    try:
        return subprocess.run(["git", "log", "-1", "--format=%h", "--", *paths], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks mutation")
    parser.add_argument("--layer", choices=LAYERS[1:], help=argparse.SUPPRESS)  # the child's entry
    parser.add_argument("--module", help=argparse.SUPPRESS)
    parser.add_argument("--scope", nargs="*", default=list(DEFAULT_SCOPE))
    parser.add_argument("--sample", type=int, default=40, help="how many mutants to run (seeded random sample)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2, choices=(1, 2))
    parser.add_argument("--layers", default=",".join(LAYERS))
    parser.add_argument("--timeout-factor", type=float, default=3.0,
                        help="a layer's timeout per mutant: this times its unmutated time (at least 60 s)")
    parser.add_argument("--only", nargs="*", default=[], help="run these mutant ids (module:line:Op#occurrence)")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench" / "mutation.json")
    parser.add_argument("--write-score", action="store_true", help=f"also write {SCORE_FILE.relative_to(ROOT)}")
    parser.add_argument("--rescore", action="store_true",
                        help="recount --out's mutants with the current list of equivalent mutants, run nothing")
    args = parser.parse_args(argv)
    if args.layer:
        return _child(args.layer, args.module or "", Path.cwd())
    if args.rescore:
        return rescore(args.out, args.write_score)
    try:
        import cosmic_ray  # noqa: F401
    except ImportError:
        print("mutation: cosmic-ray is not installed (pip install -e '.[mutation]')", file=sys.stderr)
        return 2
    layers = [x for x in args.layers.split(",") if x]
    started = time.monotonic()
    population = enumerate_mutants(args.scope)
    per_module: dict[str, int] = {}
    for module, *_ in population:
        per_module[module] = per_module.get(module, 0) + 1
    if args.only:
        chosen = [p for p in population if f"{p[0]}:{p[3]}:{p[1].split('/')[-1]}#{p[2]}" in args.only]
    else:
        chosen = random.Random(args.seed).sample(population, min(args.sample, len(population)))
    print(f"mutation: {len(population)} mutants in scope ({len(per_module)} modules); running {len(chosen)} "
          f"on layers {', '.join(layers)} with {args.workers} worker(s); load {os.getloadavg()[0]:.1f}", flush=True)

    workdir = Path(tempfile.mkdtemp(prefix="groupspec-mutation-"))
    try:
        roots = [scratch_copy(workdir / f"w{i}") for i in range(args.workers)]
        baseline: dict[str, dict[str, Any]] = {}
        # The unmutated model, once per layer (and per test selection), gives the reference and the timeout.
        base_modules = {"model/assignors/range.py", "model/system.py"}
        for layer in layers:
            for module in sorted(base_modules):
                key = f"{layer}:{module}" if layer in ("tests", "proofs") else layer
                if key in baseline:
                    continue
                if layer == "tests":
                    continue  # the tests' reference is "green"; their timeout comes from the first runs
                got = run_layer(layer, module, roots[0], timeout=1800)
                if got["status"] != "ok" or verdict(layer, got, got) != "survived":
                    print(f"mutation: the unmutated model does not pass the {layer} layer: {got}", file=sys.stderr)
                    return 2
                baseline[key] = got
                print(f"  baseline {key}: {got['seconds']} s", flush=True)
        test_base: dict[str, float] = {}
        lock = threading.Lock()
        free = list(roots)
        rows: list[dict[str, Any]] = []
        equivalent = load_equivalent()

        def timeout_for(layer: str, module: str) -> float:
            if layer == "tests":
                key = ",".join(tests_for(module, ROOT))
                with lock:
                    known = test_base.get(key)
                if known is None:
                    got = run_layer("tests", module, ROOT, timeout=1800)
                    if got["status"] != "ok":
                        raise RuntimeError(f"the unmutated model fails its tests for {module}: {got}")
                    with lock:
                        test_base[key] = known = got["seconds"]
                return max(60.0, args.timeout_factor * known)
            key = f"{layer}:{'model/assignors/range.py' if module.startswith('model/assignors') else 'model/system.py'}"
            return max(60.0, args.timeout_factor * baseline[key if layer == "proofs" else layer]["seconds"])

        def emit(done: list[dict[str, Any]], complete: bool) -> dict[str, Any]:
            """Write what is known so far (a partial run is a shorter random sample, still usable)."""
            summary = summarise(done, equivalent, layers)
            result = {
                "benchmark": "mutation", "complete": complete,
                "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "commit": _git_commit(*MODEL_CODE), "head": _git_commit(),
                "tool": "cosmic-ray 8.7.0 (operators and occurrences; layers run by benchmarks/bench_mutation.py)",
                "command": "python -m benchmarks mutation -- " + " ".join(argv),
                "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} "
                           f"(1-min average) when written",
                "scope": args.scope, "population": len(population), "population_per_module": per_module,
                "operators": list(OPERATORS), "sample": len(done), "planned": len(chosen), "seed": args.seed,
                "workers": args.workers, "layers_run": layers,
                "seconds_total": round(time.monotonic() - started, 1),
                "seconds_per_mutant": round(sum(r["seconds"] for r in done) / max(1, len(done)), 1),
                "seconds_per_layer": {x: round(sum(r["layers"][x]["seconds"] for r in done) / max(1, len(done)), 1)
                                      for x in layers},
                "summary": summary, "first_kills": first_kills({"mutants": done}), "not_run": NOT_RUN,
                "survivors": survivors(done, layers, equivalent),
                "mutants": done,
            }
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
            if args.write_score:
                SCORE_FILE.write_text(json.dumps({k: v for k, v in result.items() if k != "mutants"}, indent=1)
                                      + "\n", encoding="utf-8")
            return summary

        def one(spec: tuple[str, str, int, int]) -> dict[str, Any] | None:
            made = make(spec[0], spec[1], spec[2])
            if made is None:
                return None
            mutant, text = made
            limits = {layer: timeout_for(layer, mutant.module) for layer in layers}
            with lock:
                root = free.pop()
            original = (root / mutant.module).read_text(encoding="utf-8")
            t0 = time.monotonic()
            try:
                _write(root, mutant.module, text)
                results = {}
                for layer in layers:
                    got = run_layer(layer, mutant.module, root, limits[layer])
                    base = baseline.get(layer, got)
                    results[layer] = {"verdict": verdict(layer, got, base), "seconds": got["seconds"],
                                      "detail": got.get("result") if got["status"] != "ok" or layer == "proofs"
                                      else None}
            finally:
                _write(root, mutant.module, original)
                with lock:
                    free.append(root)
            row = {"id": mutant.id, "module": mutant.module, "line": mutant.line, "operator": mutant.operator,
                   "occurrence": mutant.occurrence, "before": mutant.before, "after": mutant.after,
                   "layers": results, "seconds": round(time.monotonic() - t0, 1)}
            killed = [v["verdict"] for v in results.values() if v["verdict"] != "survived"]
            row["any"] = "survived" if not killed else ("violation" if "violation" in killed else killed[0])
            tag = " EQUIVALENT" if mutant.id in equivalent else ""
            with lock:
                rows.append(row)
                emit(rows, complete=False)
                print(f"  [{len(rows)}/{len(chosen)}] {mutant.id}: "
                      + " ".join(f"{k}={v['verdict']}" for k, v in results.items())
                      + f" ({row['seconds']} s, load {os.getloadavg()[0]:.1f}){tag}", flush=True)
            return row

        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            list(pool.map(one, chosen))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    summary = emit(rows, complete=True)
    total = round(time.monotonic() - started, 1)
    print(f"mutation: {len(rows)} mutants in {total} s; score per layer: "
          + ", ".join(f"{k} {v['killed']}/{summary['counted']}" for k, v in summary["layers"].items()), flush=True)
    print(f"mutation: wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
