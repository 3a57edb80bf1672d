"""A conformance campaign: scenarios run by real clients and by the model, and compared.

:func:`run_scenario` is one run: the scenario goes through the model (``model.system_run.simulate``
with the invariant monitor, exactly as ``groupspec simulate`` runs it) and through real clients
(:mod:`conformance.real_run`); :mod:`conformance.compare` holds them side by side. Its verdict:

- ``unsupported``: a step this (client, coordinator) pair cannot do; nothing is run, the reasons are
  listed (:func:`conformance.real_run.unsupported`);
- ``error``: the infrastructure failed (a client that could not start, a cluster that did not come
  up); never a pass;
- ``divergence``: the comparison found a difference; both traces, the scenario, the clients and their
  versions and one replay command are in the run's directory;
- ``pass``.

:func:`campaign` draws scenarios (:func:`conformance.strategies.draw`, seeded) for every strategy and
client set asked for and runs them, ``workers`` groups side by side (each with its own mock cluster
and proxy). The strategy ``consumer-protocol`` runs the same scenarios under KIP-848's consumer
protocol (``protocol="consumer"``: :mod:`conformance.kip848` says what is judged there, and what needs
a KIP-848 model is unsupported, said once). The run directory of each is ``OUT/runs/NNN-strategy-clients``; ``scenario.json`` in it is
a file ``groupspec simulate`` accepts, and ``run.json`` the record below.
"""

from __future__ import annotations

import json
import shlex
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance import compare as cmp
from conformance import findings, strategies
from conformance.drivers.process import WarmPool
from conformance.real_run import CLIENT_ASSIGNORS, Cancelled, RealRun, member_clients, unsupported

VERDICTS = ("pass", "known-finding", "divergence", "unsupported", "error")


def client_versions(clients: Iterable[str] = ()) -> dict[str, str]:
    """Installed version of every client (and librdkafka), and of every release among ``clients``
    (``NAME==VERSION``, run in its own environment: what its driver reported, conformance/clients.py)."""
    from importlib.metadata import PackageNotFoundError, version

    from conformance.clients import base_name, is_release, made

    out: dict[str, str] = {}
    for dist in CLIENT_ASSIGNORS:
        if dist == "java":
            out[dist] = "kafka-clients 4.1.1"  # conformance/java/consumer/pom.xml
            continue
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    try:
        from conformance.mock_cluster import library_info

        out["librdkafka"] = library_info().version
    except Exception as exc:  # reported, not fatal: the mock's version is only informative here
        out["librdkafka"] = f"unknown ({exc})"
    for client in clients:
        if is_release(client):
            line = made(client).client  # "kafka-python 2.2.15", "confluent-kafka 2.10.0 (librdkafka 2.10.0)"
            out[client] = line.removeprefix(base_name(client)).strip() + " (own environment)"
    return out


@dataclass
class RunRecord:
    index: int
    scenario: str  # path of scenario.json
    strategy: str
    kind: str
    clients: list[str]
    members: dict[str, str]
    client_version: str
    verdict: str
    replay: str
    reasons: list[str] = field(default_factory=list)
    comparison: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    out_dir: str = ""
    phases: dict[str, float] = field(default_factory=dict)  # where the wall time went, seconds

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "client": ",".join(self.clients), "client_version": self.client_version,
                "strategy": self.strategy, "kind": self.kind, "scenario": self.scenario, "members": self.members,
                "verdict": self.verdict, "replay": self.replay, "reasons": self.reasons,
                "comparison": self.comparison, "error": self.error, "seconds": self.seconds, "dir": self.out_dir,
                "phases": self.phases}


def model_run(doc: Mapping[str, Any], out_dir: Path) -> tuple[dict[str, str], tuple[str, ...], list[str]]:
    """The model's run of the scenario (seed 0, as ``groupspec simulate`` runs it): failed invariants
    (id -> first message), the ids checked, and the skipped steps; its trace is written to
    ``model-trace.jsonl``."""
    from dataclasses import replace

    from model.invariants.protocol import WARNINGS, Monitor
    from model.scenario import parse
    from model.system_run import simulate

    scenario = parse(doc)
    monitor = Monitor(replace(scenario.config, mutants=frozenset()))
    result = simulate(scenario, seed=0, observer=monitor.observe)
    assert result.final is not None
    monitor.finish(result.final)
    with (out_dir / "model-trace.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(e) + "\n" for e in result.events)
    failed: dict[str, str] = {}
    for v in monitor.violations:
        if v.invariant not in WARNINGS:
            failed.setdefault(v.invariant, v.message)
    return failed, tuple(monitor.checked), [f"steps[{i}]: {why}" for i, why in result.skipped]


def replay_command(scenario_path: Path, clients: Sequence[str], cluster: str, protocol: str = "classic") -> str:
    return (f"groupspec conform --scenario {shlex.quote(str(scenario_path))} --clients {','.join(clients)}"
            + (f" --cluster {cluster}" if cluster != "mock" else "")
            + (f" --strategies {strategies.CONSUMER_PROTOCOL}" if protocol == "consumer" else ""))


def run_scenario(doc: Mapping[str, Any], clients: Sequence[str], out_dir: Path, *, index: int = 0,
                 cluster: str = "mock", versions: Mapping[str, str] | None = None, pool: WarmPool | None = None,
                 cancel: threading.Event | None = None, protocol: str = "classic") -> RunRecord:
    """Run one scenario with real clients and the model, compare, and write the run's directory.

    ``pool``: driver processes started ahead of time; ``cancel``: set when the campaign is interrupted
    (the real run then raises :class:`conformance.real_run.Cancelled` after killing its processes);
    ``protocol="consumer"``: KIP-848's consumer protocol, judged by the checker alone (:func:`consumer_run`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    scenario_path = out_dir / "scenario.json"
    scenario_path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    members = member_clients(doc, clients)
    used = sorted(set(members.values()))
    versions = versions or client_versions(clients)
    strategy = ",".join(sorted({a for s in doc["steps"] if s["do"] == "join" for a in s.get("assignors", ["range"])}))
    if protocol == "consumer":
        strategy = strategies.CONSUMER_PROTOCOL
    record = RunRecord(index, str(scenario_path), strategy, strategies.kind(dict(doc)), list(clients), members,
                       ", ".join(f"{c} {versions.get(c, '?')}" for c in used), "pass",
                       replay_command(scenario_path, clients, cluster, protocol), out_dir=str(out_dir))
    reasons = unsupported(doc, members, cluster, protocol)
    if reasons:
        record.verdict, record.reasons = "unsupported", reasons
        return _written(record, out_dir)
    if protocol == "consumer":
        return consumer_run(record, doc, members, out_dir, cluster=cluster, versions=versions, pool=pool,
                            cancel=cancel)
    # The model's run goes on in a thread while the real clients run (they mostly wait on timers).
    model_out: list[Any] = []

    def run_model() -> None:
        t0 = time.monotonic()
        try:
            model_out.append(model_run(doc, out_dir))
        except Exception as exc:
            model_out.append(exc)
        record.phases["model"] = round(time.monotonic() - t0, 3)

    model_thread = threading.Thread(target=run_model, name=f"groupspec-model-{index}", daemon=True)
    model_thread.start()
    try:
        with RealRun(doc, members, out_dir, cluster=cluster, pool=pool, cancel=cancel) as run:
            result = run.run()
    except Exception as exc:
        record.verdict, record.error = "error", f"{type(exc).__name__}: {exc}"
        return _written(record, out_dir)
    finally:
        model_thread.join()
    if isinstance(model_out[0], Exception):
        exc = model_out[0]
        record.verdict, record.error = "error", f"the model could not run the scenario: {type(exc).__name__}: {exc}"
        return _written(record, out_dir)
    model_failed, model_checked, skipped = model_out[0]
    record.seconds = result.seconds
    record.phases.update(result.phases)
    t0 = time.monotonic()
    if result.error is not None:
        record.verdict, record.error = "error", result.error
        return _written(record, out_dir)
    comparison = cmp.Comparison()
    if skipped:
        comparison.notes += [f"model skipped {s}" for s in skipped]
    traces = cmp.read_traces(result.traces)
    cmp.assignor_rounds(result.wire, result.topics, members, comparison)
    unexpected = cmp.member_replays(result.wire, traces, doc, result.timeline, members, comparison)
    logs = {p.stem: p.with_suffix(".log").read_text(encoding="utf-8", errors="replace")
            for p in result.traces if p.with_suffix(".log").exists()}
    cmp.members_that_died(traces, logs, comparison, members)
    try:
        real_report = cmp.check_real_traces(result.traces)
    except Exception as exc:
        comparison.unchecked.append(f"whole-run: the trace checker could not read the real traces: {exc}")
    else:
        cmp.whole_run(real_report, model_failed, model_checked, comparison)
    cooperative = "cooperative-sticky" in strategy
    cmp.rebalances_per_change(result.wire, result.timeline, cooperative, comparison, unexpected, members,
                              cmp.deaths(traces, logs))
    record.verdict = findings.classify(comparison.differences, versions)  # known findings: conformance/findings.py
    record.comparison = comparison.to_json()
    record.phases["compare"] = round(time.monotonic() - t0, 3)
    return _written(record, out_dir)


def consumer_run(record: RunRecord, doc: Mapping[str, Any], members: Mapping[str, str], out_dir: Path, *,
                 cluster: str, versions: Mapping[str, str], pool: WarmPool | None,
                 cancel: threading.Event | None) -> RunRecord:
    """A run under KIP-848's consumer protocol: the real clients only (the model has no consumer
    protocol), judged by the trace checker's invariants on the real traces and the coordinator's log
    (:func:`conformance.kip848.judge`); a violation is a divergence, what needs a KIP-848 model is
    unsupported (:data:`conformance.kip848.UNSUPPORTED`, said once in the report)."""
    from conformance import kip848

    try:
        with RealRun(doc, members, out_dir, cluster=cluster, pool=pool, cancel=cancel, protocol="consumer") as run:
            result = run.run()
    except Exception as exc:
        record.verdict, record.error = "error", f"{type(exc).__name__}: {exc}"
        return _written(record, out_dir)
    record.seconds = result.seconds
    record.phases.update(result.phases)
    if result.error is not None:
        record.verdict, record.error = "error", result.error
        return _written(record, out_dir)
    t0 = time.monotonic()
    logs = [result.coordinator_log] if result.coordinator_log is not None and result.coordinator_log.exists() else []
    try:
        comparison = kip848.judge(cmp.check_real_traces([*result.traces, *logs]))
    except Exception as exc:
        record.verdict, record.error = "error", f"the trace checker could not read the real traces: {exc}"
        return _written(record, out_dir)
    for d in comparison.differences:
        d.clients = sorted(set(members.values()))
    record.verdict = findings.classify(comparison.differences, versions)
    record.comparison = comparison.to_json() | {"unsupported": [u["comparison"] for u in kip848.UNSUPPORTED]}
    record.phases["compare"] = round(time.monotonic() - t0, 3)
    return _written(record, out_dir)


def _written(record: RunRecord, out_dir: Path) -> RunRecord:
    (out_dir / "run.json").write_text(json.dumps(record.to_json(), indent=1) + "\n", encoding="utf-8")
    return record


@dataclass
class Plan:
    """What a campaign runs: (index, scenario document, clients) triples; ``protocols``: the runs
    (by index) under another group protocol than the classic one (``"consumer"``: KIP-848)."""

    runs: list[tuple[int, dict[str, Any], list[str]]]
    protocols: dict[int, str] = field(default_factory=dict)


def plan(seed: int, examples: int, strategies_: Sequence[str], client_sets: Sequence[Sequence[str]],
         events: tuple[str, ...] = strategies.EVENTS) -> Plan:
    """``examples`` scenarios per (strategy, client set), drawn with ``seed`` from ``events``; the
    strategy ``consumer-protocol`` draws them as :func:`conformance.strategies.draw` does for it and runs
    them under KIP-848's consumer protocol."""
    runs: list[tuple[int, dict[str, Any], list[str]]] = []
    protocols: dict[int, str] = {}
    for strategy in strategies_:
        docs = strategies.draw(seed, examples, strategy, events)
        for clients in client_sets:
            for doc in docs:
                if strategy == strategies.CONSUMER_PROTOCOL:
                    protocols[len(runs)] = "consumer"
                runs.append((len(runs), doc, list(clients)))
    return Plan(runs, protocols)


class CampaignInterrupted(Exception):
    """Ctrl-C during a campaign: the runs in progress were stopped and their processes killed;
    ``records`` are the runs that finished, ``total`` how many the plan had."""

    def __init__(self, records: list[RunRecord], total: int) -> None:
        super().__init__(f"interrupted after {len(records)} of {total} runs")
        self.records = records
        self.total = total


def campaign(p: Plan, out: Path, *, workers: int | None = None, cluster: str = "mock",
             progress: Callable[[int, int, RunRecord], None] | None = None, warm: bool = True) -> list[RunRecord]:
    """Run every scenario of the plan, ``workers`` at a time; ``progress(done, total, record)``.

    Runs on the mock mostly wait on its timers (docs/benchmarks.md: about a CPU second per
    scenario of ten wall seconds), so more workers than cores pay: the default is 6 there, 1 with
    ``cluster="kafka"`` (a broker per run). ``warm``: Python drivers come from a :class:`WarmPool` (imported ahead of time). On Ctrl-C
    (KeyboardInterrupt in the calling thread) every run in progress is cancelled, its processes
    killed at once, and :class:`CampaignInterrupted` carries the runs that finished."""
    if workers is None:  # the mock: runs wait on its timers; kafka: one broker (a JVM) at a time
        workers = 6 if cluster == "mock" else 1
    versions = client_versions(c for _, _, clients in p.runs for c in clients)
    records: list[RunRecord] = []
    lock = threading.Lock()
    cancel = threading.Event()
    # Import the model once here: the first runs would otherwise import it side by side, each
    # holding the import lock and the GIL (seconds per run on a loaded machine).
    import model.invariants.protocol
    import model.scenario
    import model.system_run  # noqa: F401

    def one(item: tuple[int, dict[str, Any], list[str]], pool: WarmPool | None) -> RunRecord | None:
        index, doc, clients = item
        if cancel.is_set():
            return None
        protocol = p.protocols.get(index, "classic")
        strategy = "-".join(sorted({a for s in doc["steps"] if s["do"] == "join" for a in s.get("assignors", [])}))
        if protocol == "consumer":
            strategy = strategies.CONSUMER_PROTOCOL
        name = f"{index:03d}-{strategy}-{'+'.join(clients)}"
        try:
            record = run_scenario(doc, clients, out / "runs" / name, index=index, cluster=cluster, versions=versions,
                                  pool=pool, cancel=cancel, protocol=protocol)
        except Cancelled:
            return None
        with lock:
            records.append(record)
            if progress is not None:
                progress(len(records), len(p.runs), record)
        return record

    spares = min(max(workers, 1), 6)
    with WarmPool(spares=spares if warm else 0) as pool, ThreadPoolExecutor(max_workers=max(workers, 1)) as executor:
        if warm:
            pool.prime([c for _, _, clients in p.runs for c in clients])
        futures: list[Future[RunRecord | None]] = [executor.submit(one, item, pool if warm else None)
                                                   for item in p.runs]
        try:
            pending = set(futures)
            while pending:
                _, pending = wait(pending, return_when=FIRST_COMPLETED)
        except KeyboardInterrupt:
            cancel.set()
            for f in futures:
                f.cancel()
            executor.shutdown(wait=True)
            with lock:
                done = sorted(records, key=lambda r: r.index)
            raise CampaignInterrupted(done, len(p.runs)) from None
        for f in futures:
            f.result()  # an unexpected error in a worker is not swallowed
    return sorted(records, key=lambda r: r.index)


def document(records: Sequence[RunRecord], findings: Sequence[Mapping[str, Any]], *, seed: int | None,
             cluster: str, versions: Mapping[str, str]) -> dict[str, Any]:
    """conformance.json: runs, the matrix, unsupported reasons said once, divergences, findings."""
    matrix: dict[str, dict[str, int]] = {}
    for r in records:
        key = f"{','.join(r.clients)} | {r.strategy} | {r.kind}"
        cell = matrix.setdefault(key, dict.fromkeys(VERDICTS, 0))
        cell[r.verdict] += 1
    reasons: dict[str, list[int]] = {}
    for r in records:
        for why in r.reasons:
            generic = why.split(": ", 1)[1] if why.startswith("steps[") else why
            reasons.setdefault(generic, []).append(r.index)
    # Said once in every report: what the consumer protocol's runs (KIP-848) are not compared on, and why.
    from conformance.kip848 import UNSUPPORTED

    judged = [r.index for r in records if r.strategy == strategies.CONSUMER_PROTOCOL and r.verdict != "unsupported"]
    for u in UNSUPPORTED:
        reasons.setdefault(f"{strategies.CONSUMER_PROTOCOL} (KIP-848), {u['comparison']}: {u['why']}"
                           + ("" if judged else f" (no run of this campaign: --strategies {strategies.CONSUMER_PROTOCOL} "
                                                "runs the consumer protocol)"), judged)
    counts = {v: sum(1 for r in records if r.verdict == v) for v in VERDICTS}
    return {"tool": "groupspec conform", "cluster": cluster, "seed": seed, "versions": dict(versions),
            "counts": counts, "runs": [r.to_json() for r in records], "matrix": matrix,
            "unsupported": [{"why": why, "runs": idx} for why, idx in sorted(reasons.items())],
            "divergences": [r.to_json() for r in records if r.verdict == "divergence"],
            "known": [r.to_json() for r in records if r.verdict == "known-finding"],
            "findings": list(findings)}


__all__ = ["CampaignInterrupted", "Plan", "RunRecord", "VERDICTS", "campaign", "client_versions", "document", "model_run", "plan",
           "replay_command", "run_scenario"]
