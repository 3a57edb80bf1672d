"""Build a corpus: simulated groups from the model, or captured traces, as Parquet (:mod:`spark_analysis.layout`).

Two sources:

- :func:`simulate_groups` runs the model's simulator (:func:`model.system_run.simulate`) over N
  random groups: random members (2-5, some static), one assignor list per group (each of Kafka's
  four assignors, and the eager default ``[cooperative-sticky, range]``), topics and partition
  counts, producers and delivery settings, and random faults (crashes, restarts, stalls, leaves,
  joins, subscription changes, partitions added, the coordinator moving or failing). A known
  fraction of the groups runs with one of the named mutants (:mod:`model.mutants`) switched on;
  the model's own invariant monitor watches every run, and ``truth.json`` says, per group, which
  mutant it ran with and what the monitor flagged. Groups are simulated in worker processes (one
  per core by default), each writing its own part files.
- :func:`from_traces` reads anything ``groupspec check`` reads (files and folders, every format,
  detected the same way) through the checker's own readers and merge, so lines that cannot be used
  are counted per file and reason exactly as the checker counts them (``input.json``).

Every group is deterministic for ``(seed, index)``: the same command writes the same corpus.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spark_analysis.layout import Columns, Moved, write_input, write_part
from traces.checker import refuse_bad_context
from traces.coordinator_checks import refuse_bad_coordinator
from traces.delivery import OFFSET_CONFIG
from traces.detect import plan as make_plan
from traces.merge import merged
from traces.readers import JSONL_FORMATS
from traces.readers.logtime import zone_text
from traces.runs import require_events, shared_member_text, shared_members, stray_files
from traces.runs import split as split_runs
from traces.schema import BAD_FIELD, BadField, InputStats, partitions_field
from traces.state import COOPERATIVE_ASSIGNORS, EAGER_ASSIGNORS, PROTOCOLS, MemberContext

GROUP_FAULTS = ("crash", "restart", "stall", "leave", "join", "subscribe", "add_partitions", "move_coordinator",
                "fail_coordinator")
ASSIGNOR_LISTS = (("range",), ("roundrobin",), ("sticky",), ("cooperative-sticky",), ("cooperative-sticky",),
                  ("cooperative-sticky", "range"))
ROWS_PER_PART = 2_000_000
GROUPS_PER_TASK = 50

Progress = Callable[[str], None]


def stderr_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------- simulated groups


def group_name(index: int) -> str:
    return f"g{index:07d}"


# What a group running a mutant is made of, so that the mutant's wrong step is reached: the assignor it
# lives in, and the situation that exercises it (a member joining while cooperative partitions move, a
# stall past max.poll.interval.ms, a static restart, ...). Everything else stays random.
MUTANT_SHAPES: dict[str, dict[str, Any]] = {
    "coop-no-withhold": {"assignors": ("cooperative-sticky",), "late_join": True},
    "double-claim-both-keep": {"assignors": ("sticky",), "fault": "stall"},
    "stale-owned-after-sync-rebalance": {"fault": "stall"},
    "commit-old-generation": {"fault": "stall", "auto_commit": True},
    "static-rejoin-rebalances": {"statics": True, "fault": "restart"},
    "position-ignores-committed": {"late_join": True, "reset": "latest"},
    "range-ceil-quota": {"assignors": ("range",), "late_join": True},
    "roundrobin-reset-per-topic": {"assignors": ("roundrobin",), "two_topics": True},
}


def random_scenario(rng: random.Random, group: str, faults: Sequence[str], mutant: str | None = None
                    ) -> dict[str, Any]:
    """One random group as a scenario document (docs/scenarios.md), shaped for ``mutant`` if given."""
    shape = MUTANT_SHAPES.get(mutant or "", {})
    topics = {"orders": rng.randint(1, 8)}
    if rng.random() < 0.4 or shape.get("two_topics"):
        topics["audit"] = rng.randint(1, 4)
    if shape.get("late_join"):
        topics["orders"] = max(topics["orders"], 4)
    initial = dict(topics)  # the counts at time 0; add_partitions raises `topics` as the steps go
    names = [f"m{i}" for i in range(rng.randint(2, 5))]
    assignors = list(shape.get("assignors") or rng.choice(ASSIGNOR_LISTS))
    statics = {n: f"{n}-static" for n in names if rng.random() < 0.3 or shape.get("statics")}
    until = rng.randint(30, 60) * 1000
    auto = rng.random() < 0.6 or bool(shape.get("auto_commit"))
    config: dict[str, Any] = {
        "group_id": group, "initial_rebalance_delay_ms": 0, "session_timeout_ms": rng.choice([6000, 10000]),
        "heartbeat_interval_ms": 1000, "max_poll_interval_ms": rng.choice([8000, 15000, 30000]),
        "auto_offset_reset": shape.get("reset") or rng.choice(["earliest", "latest"]), "enable_auto_commit": auto,
    }
    if not auto:
        config["commit"] = rng.choice(["sync", "async", "none"])
        config["commit_on_revoke"] = rng.random() < 0.5
    subscribed = sorted(topics)

    def join(at: int, name: str) -> dict[str, Any]:
        step = {"at": at, "do": "join", "member": name, "assignors": assignors, "topics": subscribed}
        if name in statics:
            step["instance_id"] = statics[name]
        return step

    steps: list[dict[str, Any]] = [{"at": 0, "do": "produce", "topic": t, "records": rng.randint(1, 5),
                                    "every_ms": rng.choice([200, 500, 1000])} for t in sorted(topics)]
    running: set[str] = set()
    for name in names:
        steps.append(join(rng.randint(0, 3000), name))
        running.add(name)
    if shape.get("late_join"):
        steps.append(join(8000, "late"))
    if shape.get("fault") == "stall":
        steps.append({"at": 9000, "do": "stall", "member": names[0], "for_ms": config["max_poll_interval_ms"] + 4000})
    elif shape.get("fault") == "restart":
        steps.append({"at": 9000, "do": "restart", "member": names[0]})
    steps.sort(key=lambda s: s["at"])
    at = 12000 if shape else 5000
    for _ in range(rng.randint(0, 4) if faults else 0):
        at += rng.randint(1000, 8000)
        if at > until - 10000:
            break
        kind = rng.choice(list(faults))
        name = rng.choice(names)
        if kind in ("crash", "stall", "leave") and name in running:
            step: dict[str, Any] = {"at": at, "do": kind, "member": name}
            if kind == "stall":
                step["for_ms"] = rng.choice([2000, 9000, 20000])
            else:
                running.discard(name)
            steps.append(step)
        elif kind == "join" and name not in running:
            steps.append(join(at, name))
            running.add(name)
        elif kind == "restart":
            steps.append({"at": at, "do": "restart", "member": name})
            running.add(name)
        elif kind == "subscribe" and name in running:
            steps.append({"at": at, "do": "subscribe", "member": name,
                          "topics": rng.choice([["orders"], sorted(topics), ["orders", "audit"]])})
        elif kind == "add_partitions":
            topic = rng.choice(sorted(topics))
            topics_now = topics[topic] + rng.randint(1, 3)
            topics[topic] = topics_now
            steps.append({"at": at, "do": "add_partitions", "topic": topic, "count": topics_now})
        elif kind == "move_coordinator":
            steps.append({"at": at, "do": "move_coordinator"})
        elif kind == "fail_coordinator":
            steps.append({"at": at, "do": "fail_coordinator", "for_ms": rng.choice([1000, 4000])})
    return {"topics": initial, "config": config, "steps": steps, "until": until}


@dataclass(frozen=True)
class CorpusSpec:
    groups: int
    seed: int = 0
    mutant_fraction: float = 0.0
    mutants: tuple[str, ...] = ()
    faults: tuple[str, ...] = GROUP_FAULTS


def simulate_group(spec: CorpusSpec, index: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The trace of group ``index`` and its truth entry (mutant, what the model's monitor flagged)."""
    # the simulator and its monitor (some 30 modules) load here, once per group and not per event: `corpus
    # --from` and `mine` (which reads layout.read_input) never need them
    from model.invariants.protocol import WARNINGS, Monitor
    from model.scenario import parse
    from model.system_run import simulate

    rng = random.Random(f"{spec.seed}/{index}")
    group = group_name(index)
    mutant = None
    if spec.mutants and rng.random() < spec.mutant_fraction:
        mutant = rng.choice(spec.mutants)
    doc = random_scenario(rng, group, spec.faults, mutant)
    mutants = frozenset({mutant} if mutant else ())
    scenario = parse(doc)
    monitor = Monitor(replace(scenario.config, mutants=mutants))
    run = simulate(scenario, seed=index, mutants=mutants, observer=monitor.observe)
    assert run.final is not None
    monitor.finish(run.final)
    flagged = sorted({v.invariant for v in monitor.violations if v.invariant not in WARNINGS})
    gaps = sorted({v.invariant for v in monitor.violations if v.known_kafka_gap})
    return run.events, {"mutant": mutant, "monitor": flagged, "known_kafka_gaps": gaps, "events": len(run.events)}


def _simulate_task(spec: CorpusSpec, indices: list[int], out: Path, task: int) -> tuple[dict[str, Any], int, int]:
    cols = Columns()
    truth: dict[str, Any] = {}
    events = 0
    for index in indices:
        trace, entry = simulate_group(spec, index)
        group = group_name(index)
        label = f"{group}.jsonl"
        for n, event in enumerate(trace, start=1):
            member = None if event["name"].startswith("coordinator_") else (event.get("member") or label)
            # every simulated event names its group (the rows are written in it, and the checker reads the trace so),
            # so each member has named its group from its first event on (Checker._member: Member.group_explicit)
            cols.add_event(event, group=group, member=member, seq=n, source=label, line=n, jsonl=True,
                           fmt="groupspec", group_named=None if member is None else event.get("group") is not None)
        truth[group] = entry
        events += len(trace)
    write_part(cols.table(), out, task)
    return truth, events, len(indices)


def simulate_groups(spec: CorpusSpec, out: Path, workers: int | None = None,
                    progress: Progress | None = stderr_progress) -> dict[str, Any]:
    """Write ``spec.groups`` simulated groups to ``out`` (Parquet parts, truth.json, input.json)."""
    from model import mutants as registry

    registry.validate(frozenset(spec.mutants))
    out.mkdir(parents=True, exist_ok=True)
    workers = workers or os.cpu_count() or 1
    chunks = [list(range(i, min(i + GROUPS_PER_TASK, spec.groups))) for i in range(0, spec.groups, GROUPS_PER_TASK)]
    truth: dict[str, Any] = {}
    events = done = 0
    started = time.monotonic()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_simulate_task, spec, chunk, out, task) for task, chunk in enumerate(chunks)]
        for future in futures:
            part_truth, part_events, part_groups = future.result()
            truth.update(part_truth)
            events += part_events
            done += part_groups
            if progress:
                elapsed = time.monotonic() - started
                progress(f"corpus: {done}/{spec.groups} groups, {events:,} events, {elapsed:.0f} s "
                         f"({events / max(elapsed, 1e-9):,.0f} events/s, {workers} worker(s))")
    doc = {"generator": "groupspec corpus --groups", "groups": spec.groups, "seed": spec.seed,
           "mutant_fraction": spec.mutant_fraction, "mutants": list(spec.mutants), "faults": list(spec.faults),
           "truth": dict(sorted(truth.items()))}
    (out / "truth.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    write_input(out, {"events": events, "lines": events, "files": spec.groups, "skipped": {},
                       "skipped_per_file": {}, "skipped_examples": []})
    return doc


# ---------------------------------------------------------------------------------- captured traces


@dataclass
class _Context:
    """What a member said of itself so far, as the checker keeps it on ``Member`` (``Checker._context``): the
    fields a member keeps when it moves groups, and that the job reads per member (group and member)."""

    subscription: list[str] | None = None  # the last one named; kept across restarts
    protocol: str | None = None  # the last one named (``traces.state.PROTOCOLS``); kept across restarts
    assignor: str | None = None  # the first assignor of a known kind: the protocol while none is named
    member_id: str | None = None  # the last one named since the last startup_complete
    # the offset configuration (DeliveryChecks._offset_config): the last value of each field named
    offset_config: dict[str, Any] = field(default_factory=dict)
    # Checker._generation: the last generation named (Member.generation, -1 too) and each file's last one of at
    # least 0 (Member.gen_by_src, which generation-monotonic compares); both since the last startup_complete
    generation: int | None = None
    file_generations: dict[str, int] = field(default_factory=dict)
    # revoke-only-moved's memory of partitions revoked in a generation newer than the last assignment's
    # (Member.assigned_gen, Member.complete_revoked: Checker._assigned, _let_go), since the last startup_complete
    assigned_gen: int | None = None
    complete_revoked: dict[int, set[tuple[str, int]]] = field(default_factory=dict)

    def update(self, event: dict[str, Any], ctx: MemberContext, source: str) -> None:
        """Take in one member event; ``ctx``: its context fields as ``refuse_bad_context`` parsed and accepted them
        (as ``Checker._context`` reads them: never parsed a second time)."""
        if event["name"] == "startup_complete":
            self.member_id = None  # Checker._startup: a new process has no member id yet
            self.generation = None  # ... nor a generation, in any file, nor revoke-only-moved's memory
            self.file_generations.clear()
            self.assigned_gen = None
            self.complete_revoked.clear()
        gen = ctx.generation
        if gen is not None:
            self.generation = gen
            if gen >= 0:
                self.file_generations[source] = gen
        if ctx.subscription is not None:
            self.subscription = ctx.subscription
        if event.get("protocol") in PROTOCOLS:
            self.protocol = event["protocol"]
        assignor = event.get("assignor")
        if self.assignor is None and assignor in COOPERATIVE_ASSIGNORS | EAGER_ASSIGNORS:
            self.assignor = assignor
        if ctx.member_id:  # an empty one names none (Checker._context)
            self.member_id = ctx.member_id
        # the offset configuration, each field's last value: refuse_bad_context accepted any it names (OFFSET_CONFIG)
        for key, value in (("auto_offset_reset", ctx.auto_offset_reset), ("enable_auto_commit", ctx.enable_auto_commit),
                           ("auto_commit_interval_ms", ctx.auto_commit_interval_ms)):
            if value is not None:
                self.offset_config[key] = value

    def carried(self, event: dict[str, Any]) -> dict[str, Any]:
        """``event`` with the context it does not name itself filled in (see :class:`_MemberGroups`)."""
        name = event["name"]
        more: dict[str, Any] = {}
        if self.subscription is not None and not isinstance(event.get("subscription"), list):
            more["subscription"] = self.subscription
        if self.protocol is not None and event.get("protocol") not in PROTOCOLS:
            more["protocol"] = self.protocol
        elif self.protocol is None and self.assignor is not None:
            more["assignor"] = self.assignor  # the protocol it decided before the move (no other reader of a member's)
        # a startup forgets the member id; a SyncGroup answer's member id is the one the coordinator's wait is
        # settled by (converges), never a carried one
        if self.member_id is not None and name not in ("startup_complete", "group_synced") \
                and not (isinstance(event.get("member_id"), str) and event["member_id"]):
            more["member_id"] = self.member_id
        more.update({k: v for k, v in self.offset_config.items() if not OFFSET_CONFIG[k][0](event.get(k))})
        return {**event, **more} if more else event

    def carried_generations(self, event: dict[str, Any]) -> tuple[int | None, list[tuple[str, int]] | None]:
        """The move columns ``moved_generation`` (where ``event`` names no generation) and ``moved_generations``
        for ``event``: nothing on a ``startup_complete``, which forgets them (``Checker._startup``)."""
        if event["name"] == "startup_complete":
            return None, None
        generation = self.generation if event.get("generation") is None else None
        return generation, sorted(self.file_generations.items()) or None

    def carried_revokes(self, event: dict[str, Any]) -> list[tuple[int, str, int]] | None:
        """The move column ``moved_revoked``: revoke-only-moved's memory, (generation, topic, partition)."""
        if event["name"] == "startup_complete":
            return None
        return sorted((g, t, p) for g, tps in self.complete_revoked.items() for t, p in tps) or None

    def carried_assigned_gen(self, event: dict[str, Any]) -> int | None:
        """The move column ``moved_assigned_gen``: the generation of the member's last assignment
        (``Member.assigned_gen``), which eager-revoke-all compares a join with (``Checker._joined``)."""
        return None if event["name"] == "startup_complete" else self.assigned_gen

    def remember(self, name: str, tps: set[tuple[Any, Any]], owned: set[tuple[Any, Any]]) -> None:
        """revoke-only-moved's memory after an ownership event the checker reads (not superseded), ``owned``: what
        the member owned before it. Kept where the protocol said so far is cooperative or not known (the
        checker's default protocol may make it so); the job reads it only for a cooperative member."""
        gen = self.generation if self.generation is not None and self.generation >= 0 else None
        if name == "partitions_assigned" and gen is not None:
            self.assigned_gen = gen
            for old in [g for g in self.complete_revoked if g < gen]:
                del self.complete_revoked[old]
        elif name == "partitions_revoked" and gen is not None and self.assigned_gen is not None \
                and gen > self.assigned_gen and self._maybe_cooperative():
            self.complete_revoked.setdefault(gen, set()).update(
                tp for tp in tps & owned if isinstance(tp[0], str) and isinstance(tp[1], int))

    def _maybe_cooperative(self) -> bool:
        if self.protocol is not None:
            return self.protocol == "cooperative"
        return self.assignor is None or self.assignor in COOPERATIVE_ASSIGNORS


@dataclass
class _MemberGroups:
    """The group each member's events count in, decided as the checker's ``Checker._member`` decides it.

    A member starts in the group its first event names (else the default group); an event naming
    another group moves it only while it has named none explicitly and owns nothing. So the
    member's partitions are tracked here too (assigned adds, revoked / lost removes, startup and
    shutdown clear; client-log ownership lines of a member with a callback trace change nothing).

    The checker keeps the member's state when it moves; the job keeps it per group and member. So
    the member's first row in the new group carries what the member said before the move and that
    row does not say (:class:`_Context`: subscription, protocol or first assignor, member id, offset
    configuration), and the move columns (:mod:`spark_analysis.layout`: its generation, its files'
    generations, revoke-only-moved's second memory, its last assignment's generation), and
    so does its next row the job reads if that one is a client-log ownership line the job drops
    (``callback``); the row that moved it names the group it left (``moved_from``). What else the
    member did before the move stays in the old group (docs/mining.md, "What still differs").
    """

    default: str
    of: dict[str, tuple[str, bool]] = field(default_factory=dict)  # member -> (group, named explicitly)
    owned: dict[str, set[tuple[Any, Any]]] = field(default_factory=dict)
    context: dict[str, _Context] = field(default_factory=dict)
    carrying: set[str] = field(default_factory=set)  # members moved whose context no row the job reads carries yet
    # what client-log ownership lines the job drops said (superseded: a callback trace is the member's record of
    # what it owns) that the job reads only where a row says it (its subscription, auto-commit settings), kept
    # until the member's next row the job reads, which is written with it: the checker's _context reads those
    # lines' fields into Member before _callback_superseded drops them. A KIP-848 consumer's log says its
    # subscription on no line but those (no JoinGroup / SyncGroup line: traces.readers.java_consumer_log).
    unsaid: dict[str, dict[str, Any]] = field(default_factory=dict)

    def place(self, member: str, event: dict[str, Any], ctx: MemberContext, superseded: bool,
              file_group: str | None = None, source: str = "") -> tuple[str, bool, dict[str, Any], Moved | None]:
        """The event's group, whether its member has named its group by then (``group_named``: the checker's
        ``Member.group_explicit``), the event as the corpus writes it (with the context a move carries), and its move
        columns (:mod:`spark_analysis.layout`; None when all are null); ``ctx``: its context fields as
        ``refuse_bad_context`` returned them; ``file_group``: the group of its file's events that name none (a
        callback trace paired with its client log, ``Source.group``), as the checker's ``_member`` takes it;
        ``source``: its file's label (the checker's per-file generations)."""
        named = event.get("group")
        named = named if isinstance(named, str) else file_group
        current = self.of.get(member)
        owned = self.owned.setdefault(member, set())
        context = self.context.setdefault(member, _Context())
        moved_from = None
        if current is None:
            current = self.of[member] = (named or self.default, named is not None)
        elif named is not None and named != current[0] and not current[1] and not owned:
            moved_from = current[0]
            current = self.of[member] = (named, True)
            self.carrying.add(member)
        name = event["name"]
        ownership = name in ("partitions_assigned", "partitions_revoked", "partitions_lost")
        moved: Moved | None = None
        if member in self.carrying:
            written = context.carried(event)
            moved = (moved_from, *context.carried_generations(event), context.carried_revokes(event),
                     context.carried_assigned_gen(event))
            if not (superseded and ownership):  # the job reads this row (ownership.member_rows)
                self.carrying.discard(member)
        else:
            written = event
        if superseded and ownership:
            said = {"subscription": ctx.subscription, "enable_auto_commit": ctx.enable_auto_commit,
                    "auto_commit_interval_ms": ctx.auto_commit_interval_ms}
            self.unsaid.setdefault(member, {}).update({k: v for k, v in said.items() if v is not None})
        elif member in self.unsaid:
            # the row's own fields come after what the dropped lines said, as the checker reads them
            more = {k: v for k, v in self.unsaid.pop(member).items() if written.get(k) is None}
            written = {**written, **more} if more else written
        context.update(event, ctx, source)
        if name in ("startup_complete", "shutdown_complete"):
            owned.clear()
        elif ownership and not superseded:
            tps = {(p.get("topic"), p.get("partition")) for p in event.get("partitions") or () if isinstance(p, dict)}
            context.remember(name, tps, owned)
            if name == "partitions_assigned":
                owned |= tps
            else:
                owned -= tps
        return current[0], current[1], written, moved


def read_with(fmt: str | None, default_group: str, naive_offset_ms: int | None) -> dict[str, str | None]:
    """input.json's ``read_with``: the options of ``corpus --from`` that decide the rows besides the paths, each as
    the option takes it (``format`` null: detected per file), so that the command that writes the corpus again
    (``layout._rewrite_hint``) reads the traces as they were read. Every value is recorded, the defaults too: that
    command is run by a later groupspec, whose defaults may be others."""
    return {"group": default_group, "format": fmt, "log_timezone": zone_text(naive_offset_ms)}


def from_runs(paths: Sequence[str], out: Path, *, fmt: str | None = None, default_group: str = "default",
              naive_offset_ms: int | None = None, progress: Progress | None = stderr_progress,
              merge: bool = False) -> dict[str, Any]:
    """What ``groupspec corpus --from`` writes: the runs ``groupspec check`` would check apart, in one corpus.

    Each directory named is a run of its own, and the files named together one more (:mod:`traces.runs`), as
    the checker splits them: with more than one run, every group is named ``GROUP @ RUN`` (the name the checker's
    combined report gives it), so two captures that both call their group ``orders-group`` stay two groups
    whose members never meet. One run is written as :func:`from_traces` writes it. ``input.json`` sums the runs
    and lists them (``runs``); ``merge`` makes every path one run (``--merge-runs``). As the checker, it refuses
    a run from which no event was read (:func:`traces.runs.require_events`), and lists files named beside
    directories that give none as ignored. Raises :class:`traces.schema.TraceInputError` for input that cannot
    be used; what was written by then is left for the caller to remove.
    """
    runs = split_runs(list(paths), merge)
    if len(runs) == 1:
        doc = from_traces(paths, out, fmt=fmt, default_group=default_group, naive_offset_ms=naive_offset_ms,
                          progress=progress, run_label=runs[0].label)
        require_events(doc, runs[0], "written")
        return doc
    docs = []
    stray: list[dict[str, str]] = []
    part = 0
    for run in runs:
        if progress:
            progress(f"corpus: run {run.label}")
        doc = from_traces(run.paths, out, fmt=fmt, default_group=default_group, naive_offset_ms=naive_offset_ms,
                          progress=progress, group_suffix=f" @ {run.label}", first_part=part,
                          strays_ignored=run.loose, run_label=run.label)
        part += doc["parts"]
        if not doc["events"] and run.loose:
            # as groupspec check: files a shell glob put beside the directories are ignored, not a run
            stray += stray_files(doc)
            continue
        require_events(doc, run, "written")
        docs.append((run, doc))
    skipped: Counter[str] = Counter()
    for _, doc in docs:
        skipped.update(doc["skipped"])
    sources = [dict(s, run=run.label) for run, doc in docs for s in doc["sources"]]
    combined = {
        "events": sum(doc["events"] for _, doc in docs), "lines": sum(doc["lines"] for _, doc in docs),
        "files": sum(doc["files"] for _, doc in docs), "skipped": dict(sorted(skipped.items())),
        "skipped_per_file": {k: v for _, doc in docs for k, v in doc["skipped_per_file"].items()},
        "skipped_examples": [e for _, doc in docs for e in doc["skipped_examples"]][:50],
        "ignored_files": stray + [f for _, doc in docs for f in doc["ignored_files"]],
        "ignored_lines": sum(doc["ignored_lines"] for _, doc in docs),
        "callback_members": sorted({m for _, doc in docs for m in doc["callback_members"]}), "parts": part,
        "sources": sources, "shared_members": shared_members(sources),
        "runs": [r for _, doc in docs for r in doc["runs"]],
        "read_with": read_with(fmt, default_group, naive_offset_ms)}
    write_input(out, combined)
    return combined


def from_traces(paths: Sequence[str], out: Path, *, fmt: str | None = None, default_group: str = "default",
                naive_offset_ms: int | None = None, progress: Progress | None = stderr_progress,
                group_prefix: str = "", group_suffix: str = "", first_part: int = 0,
                strays_ignored: bool = False, run_label: str = "") -> dict[str, Any]:
    """Read trace files / folders the way ``groupspec check`` reads one run and write them as a corpus.

    ``group_prefix`` / ``group_suffix`` and ``first_part`` let several trace sets share one corpus directory
    (each set's groups named apart, its part files numbered from ``first_part``); the input.json written is
    this set's. ``strays_ignored`` as :func:`traces.detect.plan` (files named beside directories); ``run_label``:
    how input.json's ``runs`` and ``shared_members`` name the run.

    Raises :class:`traces.schema.TraceInputError` for input that cannot be used at all.
    """
    plan = make_plan(list(paths), fmt, naive_offset_ms, strays_ignored=strays_ignored)
    stats = InputStats(max_examples=50)
    per_file: dict[str, Counter[str]] = {}
    labels = [s.label for s in plan.sources]
    skip = stats.skip

    def counting_skip(source: Any, line: int, reason: str, detail: str = "") -> None:
        per_file.setdefault(source.label, Counter())[reason] += 1
        skip(source, line, reason, detail)

    stats.skip = counting_skip  # type: ignore[method-assign]
    out.mkdir(parents=True, exist_ok=True)
    cols = Columns()
    groups = _MemberGroups(default_group)
    jsonl_formats = frozenset(JSONL_FORMATS)
    part = first_part
    events = 0
    per_source: Counter[int] = Counter()
    started = time.monotonic()
    for seq, (_ts, src, _s, line, event) in enumerate(merged(plan.sources, stats), start=1):
        source = plan.sources[src]
        name = event["name"]
        member = ctx = None
        try:
            if not name.startswith("coordinator_"):
                member = event.get("member") or source.member
                if not isinstance(member, str):
                    raise BadField(f"member is not a string: {member!r:.40}")
                # the checker refuses these before it changes anything of the member (Checker._member): a
                # malformed setting is a bad-field line on both sides, never a row the job reads; what it parsed
                # (the generation among it) is what _MemberGroups reads
                ctx = refuse_bad_context(event)
            else:
                # the checker refuses a coordinator event with any field its handler reads of the wrong shape before
                # it changes anything (CoordinatorChecks._coord_group): never a row the job reads
                refuse_bad_coordinator(event)
            if name in ("partitions_assigned", "partitions_revoked", "partitions_lost"):
                partitions_field(event)
        except BadField as exc:
            stats.skip(source, line, BAD_FIELD, f"{name}: {exc}")
            continue
        jsonl = source.format in jsonl_formats
        callback = member in plan.callback_members
        moved = None
        named = None  # a coordinator event's: no member's
        if member is None or ctx is None:
            group = event.get("group") if isinstance(event.get("group"), str) else default_group
        else:
            group, named, event, moved = groups.place(member, event, ctx, superseded=callback and not jsonl,
                                                      file_group=source.group, source=labels[src])
            if moved is not None and moved[0] is not None:
                moved = (group_prefix + moved[0] + group_suffix, *moved[1:])
        cols.add_event(event, group=group_prefix + group + group_suffix, member=member, seq=seq, source=labels[src], line=line,
                       jsonl=jsonl, callback=callback, fmt=source.format, commits_shown=source.commits_shown,
                       moved=moved, group_named=named)
        events += 1
        per_source[src] += 1
        if len(cols) >= ROWS_PER_PART:
            write_part(cols.table(), out, part)
            part += 1
            cols = Columns()
            if progress:
                progress(f"corpus: {events:,} events, {time.monotonic() - started:.0f} s")
    if len(cols) or part == first_part:
        write_part(cols.table(), out, part)
        part += 1
    doc = {"events": events, "lines": stats.lines, "ignored_lines": stats.ignored, "files": len(plan.sources),
           "skipped": dict(stats.skipped),
           "skipped_per_file": {k: dict(v) for k, v in sorted(per_file.items())},
           "skipped_examples": stats.examples, "ignored_files": plan.ignored,
           "callback_members": sorted(plan.callback_members), "parts": part - first_part,
           "sources": [{"path": s.label, "format": s.format, "member": s.member, "events": per_source[s.index]}
                       for s in plan.sources],
           "runs": [{"run": run_label, "paths": list(paths), "events": events}],
           "read_with": read_with(fmt, default_group, naive_offset_ms)}
    if group_prefix:
        # the job reads a trace set from a group's name only where its corpus says the groups carry one (a real
        # group's name may hold a "/": ownership.TraceSets)
        doc["group_prefix"] = group_prefix
    # as groupspec check warns: one member name from several captures is one consumer to the job too
    doc["shared_members"] = shared_members(doc["sources"], run_label)
    write_input(out, doc)
    if progress:
        progress(f"corpus: {events:,} events from {len(plan.sources)} file(s), "
                 f"{stats.skipped_total} line(s) skipped, {time.monotonic() - started:.1f} s")
        for shared in doc["shared_members"]:
            progress(f"corpus: warning: {shared_member_text(shared)}")
    return doc
