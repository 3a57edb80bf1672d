"""Kafka's own consumer system tests as groupspec scenarios, on the real broker, with every client we drive.

Apache Kafka tests its consumer group with ducktape system tests, ``tests/kafkatest/tests/client/
consumer_test.py`` (``OffsetValidationTest``, ``AssignmentValidationTest``), driving Kafka's
VerifiableConsumer and reading its stdout (``tests/kafkatest/services/verifiable_consumer.py``). Each
scenario here runs the same steps on one KRaft broker (:class:`~conformance.kafka.run.BrokerRun`) with
one client -- ``java`` (our driver on kafka-clients), ``verifiable-consumer`` (Kafka's own),
``confluent-kafka`` (librdkafka), ``kafka-python``, ``aiokafka`` -- and asserts what Kafka's test asserts,
then runs groupspec's checker on everything the run wrote (``python -m groupspec check DIR --json``, in a
process of its own: conformance does not import the CLI layer).

``python -m conformance.kafka.systemtests NAME [--client C] --out DIR`` runs one (``--list`` names them);
exit 0 when every assertion held and the checker found no violation, 1 otherwise, 2 when the broker cannot
run or the client cannot do the scenario (the reason is printed). ``DIR`` keeps the run: server.log,
each member's trace and client log, scenario.json, and ``systemtest.json`` (every assertion with what was
seen, and the checker's verdict).

What differs from Kafka's runs, and why:

- one broker, not two: the "broker rolling bounce" is a restart of the only broker, which is also the
  group's coordinator (a harder case for the members: they lose the coordinator, not only a replica);
- the records are written in batches between steps (Kafka's VerifiableProducer, ``BrokerRun.produce``)
  rather than by a producer running throughout, so that "every record was consumed" has a fixed target;
- the topic has 4 partitions (Kafka's ``OffsetValidationTest`` uses one) so that every member owns some,
  and 6 for ``valid-assignment`` as in ``AssignmentValidationTest``;
- ``--bounces`` (default 1) instead of Kafka's 5: each bounce repeats the same steps.

Kafka's assertions, per partition (``VerifiableConsumer`` events folded as Kafka's service does):
*position* is the highest offset consumed + 1, *total consumed* the number of records consumed;
``position == total`` after clean bounces (no duplicate), ``position <= total`` after hard ones (no
record lost, duplicates allowed); with explicit commits ``last commit == position``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from conformance.drivers.process import PROJECT_ROOT, ConsumerProcess, wait_until
from conformance.kafka.jars import DEFAULT_VERSION, KafkaUnavailable
from conformance.kafka.run import BrokerRun
from model.types import TopicPartition

# --------------------------------------------------------------------------------------------------
# The clients, and what each can do
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Client:
    name: str
    offered: Callable[[], tuple[str, ...]]  # the classic assignors its driver offers (read from the driver)
    static_key: str  # the configuration key of group.instance.id in this client's own spelling
    why_not: dict[str, str] = field(default_factory=dict)  # assignor -> why this client lacks it

    @property
    def assignors(self) -> tuple[str, ...]:
        return self.offered()


def _java() -> tuple[str, ...]:
    return ("range", "roundrobin", "sticky", "cooperative-sticky")  # Java's four (conformance.java_assignors)


def _module_assignors(module: str) -> Callable[[], tuple[str, ...]]:
    def offered() -> tuple[str, ...]:  # imported only when asked: it imports the client library
        import importlib

        return tuple(importlib.import_module(module).ASSIGNORS)
    return offered


CLIENTS: dict[str, Client] = {c.name: c for c in (
    Client("java", _java, "group.instance.id"),
    Client("verifiable-consumer", _java, "group.instance.id"),
    Client("confluent-kafka", lambda: ("range", "roundrobin", "cooperative-sticky"), "group.instance.id",
           {"sticky": "librdkafka has no eager sticky assignor (only cooperative-sticky)"}),
    Client("kafka-python", _module_assignors("conformance.drivers.kafka_python"), "group_instance_id",
           {"cooperative-sticky": "kafka-python has no cooperative protocol before 3.0 (this driver offers none)"}),
    Client("aiokafka", _module_assignors("conformance.drivers.aiokafka"), "group_instance_id",
           {"cooperative-sticky": "aiokafka has no cooperative protocol (no cooperative-sticky assignor)"}),
)}


def static(client: str, instance: str) -> dict[str, str]:
    """The ``-X`` option that makes ``client`` a static member (KIP-345) with this instance id."""
    return {CLIENTS[client].static_key: instance}


# --------------------------------------------------------------------------------------------------
# Assertions, and what the traces say about records and commits
# --------------------------------------------------------------------------------------------------


@dataclass
class Assertion:
    what: str  # what Kafka's test (or the scenario) asserts
    held: bool
    seen: str  # what the run showed


@dataclass
class Outcome:
    scenario: str
    client: str
    kafka: str
    assertions: list[Assertion] = field(default_factory=list)
    checker: dict[str, Any] = field(default_factory=dict)
    allowed_warnings: tuple[str, ...] = ()
    not_run: list[str] = field(default_factory=list)  # parts the client cannot do, each with why

    def expect(self, what: str, held: bool, seen: str) -> None:
        self.assertions.append(Assertion(what, bool(held), seen))

    @property
    def checker_held(self) -> bool:
        verdict = self.checker.get("verdict")
        warned = set(self.checker.get("warnings", []))
        return verdict == "held" or (verdict == "warning" and warned <= set(self.allowed_warnings))

    @property
    def held(self) -> bool:
        return all(a.held for a in self.assertions) and self.checker_held


def _events(procs: Sequence[ConsumerProcess]) -> list[dict[str, Any]]:
    return [ev for p in procs for ev in p.events()]


def positions(run: BrokerRun, topic: str | None = None) -> dict[int, tuple[int, int]]:
    """Per partition (position, total consumed) over every incarnation of every member of the run."""
    topic = topic or run.topic
    pos: dict[int, int] = dict.fromkeys(range(run.partitions), 0)
    total: dict[int, int] = dict.fromkeys(range(run.partitions), 0)
    for ev in _events(list(run.members.values())):
        if ev.get("name") != "records_consumed":
            continue
        for part in ev.get("partitions", ()):
            if part.get("topic") == topic and "maxOffset" in part:
                p = int(part["partition"])
                pos[p] = max(pos[p], int(part["maxOffset"]) + 1)
                total[p] += int(part.get("count", int(part["maxOffset"]) - int(part["minOffset"]) + 1))
    return {p: (pos[p], total[p]) for p in pos}


def missing(run: BrokerRun) -> dict[int, list[int]]:
    """Offsets produced but consumed by nobody (from the members' consumed ranges), per partition."""
    seen: dict[int, set[int]] = {p: set() for p in run.produced}
    for ev in _events(list(run.members.values())):
        if ev.get("name") == "records_consumed":
            for part in ev.get("partitions", ()):
                if part.get("topic") == run.topic and "minOffset" in part:
                    seen[int(part["partition"])].update(range(int(part["minOffset"]), int(part["maxOffset"]) + 1))
    gaps = {p: sorted(set(range(end)) - seen[p]) for p, end in run.produced.items()}
    return {p: g for p, g in gaps.items() if g}


def last_commits(run: BrokerRun) -> dict[int, int]:
    """The highest offset each partition had committed successfully, by the members' traces."""
    out: dict[int, int] = {}
    for ev in _events(list(run.members.values())):
        if ev.get("name") == "offsets_committed" and ev.get("success", True):
            for o in ev.get("offsets", ()):
                if o.get("topic") == run.topic:
                    p = int(o["partition"])
                    out[p] = max(out.get(p, 0), int(o["offset"]))
    return out


def count(run: BrokerRun, member: str, name: str) -> int:
    return sum(1 for ev in run.members[member].events() if ev.get("name") == name)


PREPARING = r"Preparing to rebalance group"


def stabilized(run: BrokerRun, group: str | None = None) -> int:
    return len(run.log_lines(rf"Stabilized group {group or run.group} generation"))


def assert_delivery(out: Outcome, run: BrokerRun, *, clean: bool, explicit_commits: bool = True) -> None:
    """Kafka's closing assertions of OffsetValidationTest, on every partition."""
    ps = positions(run)
    if clean:
        out.expect("no duplicate after clean bounces: position == total consumed (every partition)",
                   all(pos == tot for pos, tot in ps.values()), f"(position, total) {ps}")
    else:
        out.expect("position <= total consumed (duplicates allowed after a hard failure)",
                   all(pos <= tot for pos, tot in ps.values()), f"(position, total) {ps}")
    gaps = missing(run)
    out.expect("no record lost: every produced offset was consumed by some member", not gaps,
               f"produced {run.produced}; never consumed: {gaps or 'none'}")
    if explicit_commits:
        commits = last_commits(run)
        out.expect("the last commit is the position (committed offsets advanced to the end)",
                   all(commits.get(p) == pos for p, (pos, _) in ps.items()),
                   f"last commits {commits}, positions { {p: pos for p, (pos, _) in ps.items()} }")


def stable(out: Outcome, run: BrokerRun, *members: str, what: str) -> None:
    """Kafka's await_all_members + valid assignment: the named members own every partition exactly once."""
    owned = run.wait_stable(*members, what=what)
    out.expect(f"every partition assigned to exactly one consumer ({what})", True,
               json.dumps({m: sorted(tp.partition for tp in tps) for m, tps in owned.items()}))


def consumed(out: Outcome, run: BrokerRun, what: str) -> None:
    """Kafka's await_consumed_messages: new records are consumed after the step."""
    run.produce(8)
    run.wait_consumed()
    out.expect(f"consumption continues ({what})", True, f"consumed to {run.consumed_ends()}")


# --------------------------------------------------------------------------------------------------
# The scenarios (each names the test of consumer_test.py it ports)
# --------------------------------------------------------------------------------------------------

Params = dict[str, Any]


def _start(out: Outcome, run: BrokerRun, names: Sequence[str], client: str, assignor: str = "range",
           **options: str) -> None:
    for name in names:
        run.join(name, client, assignor=assignor, **options)
    stable(out, run, *names, what=f"{len(names)} members joined")
    consumed(out, run, "after the group formed")


def _current(run: BrokerRun, name: str) -> str:
    """The key of ``name``'s latest incarnation (``m2``, ``m2.2``, ...)."""
    return [k for k in run.members if k == name or k.startswith(f"{name}.")][-1]


def consumer_bounce(out: Outcome, run: BrokerRun, client: str, params: Params) -> None:
    """test_consumer_bounce (rolling): each consumer in turn stopped (SIGTERM, or SIGKILL with --hard) and
    started again; the group must re-form and go on consuming after every restart."""
    names = ["m1", "m2", "m3"]
    hard = params["hard"]
    _start(out, run, names, client)
    for _ in range(params["bounces"]):
        for name in names:
            key = _current(run, name)
            if hard:
                run.kill(key)
            else:
                run.leave(key)
            run.join(name, client, assignor="range")
            live = [_current(run, n) for n in names]
            stable(out, run, *live, what=f"{key} {'killed' if hard else 'stopped'} and restarted")
            consumed(out, run, f"after {key} was bounced")
    for name in names:
        run.leave(_current(run, name))
    assert_delivery(out, run, clean=not hard)


def static_consumer_bounce(out: Outcome, run: BrokerRun, client: str, params: Params) -> None:
    """test_static_consumer_bounce (rolling, keep_alive=1): static members; every one but the first is
    closed and started again with its instance id within the session. No rebalance: the member kept alive
    revokes nothing (Kafka's assertion), and the coordinator forms no new generation."""
    names = ["s1", "s2", "s3"]
    for name in names:
        run.join(name, client, assignor="range", **static(client, name))
    stable(out, run, *names, what="3 static members joined")
    consumed(out, run, "after the group formed")
    revokes = count(run, "s1", "partitions_revoked")
    generations = stabilized(run)
    for _ in range(params["bounces"]):
        for name in names[1:]:
            key = _current(run, name)
            run.leave(key)  # a static member's close sends no LeaveGroup (KIP-345)
            run.join(name, client, assignor="range", **static(client, name))
            stable(out, run, *[_current(run, n) for n in names], what=f"static {key} back in its place")
            consumed(out, run, f"after {key} was bounced")
    out.expect("the member kept alive revoked nothing during the bounces (no rebalance)",
               count(run, "s1", "partitions_revoked") == revokes,
               f"s1 revocations before {revokes}, after {count(run, 's1', 'partitions_revoked')}")
    out.expect("no new generation while static members bounced", stabilized(run) == generations,
               f"'Stabilized group' lines before {generations}, after {stabilized(run)}")
    for name in names:
        run.leave(_current(run, name))
    assert_delivery(out, run, clean=True)


def fencing_static_consumer(out: Outcome, run: BrokerRun, client: str, params: Params) -> None:
    """test_fencing_static_consumer (fencing_stage=stable, one conflict consumer): a new process with s1's
    instance id joins a stable group; the original s1 is fenced and stops; only unique members remain."""
    names = ["s1", "s2"]
    for name in names:
        run.join(name, client, assignor="range", **static(client, name))
    stable(out, run, *names, what="2 static members joined")
    consumed(out, run, "after the group formed")
    run.join("dup", client, assignor="range", **static(client, "s1"))
    old = run.members["s1"]
    try:
        wait_until(lambda: not old.alive, run.wait_timeout_s, "the fenced s1 to stop")
        stopped = True
    except AssertionError:
        stopped = False
    out.expect("the original holder of the instance id is fenced and stops", stopped,
               f"s1 exit code {old.proc.returncode}" if stopped else
               f"s1 still running {run.wait_timeout_s:.0f}s after dup joined")
    if stopped:
        run.note("ended", member="s1", exit_code=old.proc.returncode)
    else:
        run.kill("s1")
    stable(out, run, "dup", "s2", what="dup in s1's place")
    consumed(out, run, "after the fencing")
    run.leave("dup")
    run.leave("s2")
    assert_delivery(out, run, clean=False)  # s1 was stopped by the broker mid-flight: duplicates allowed


def consumer_failure(out: Outcome, run: BrokerRun, client: str, params: Params) -> None:
    """test_consumer_failure: the owner of partition 0 is stopped (SIGTERM; SIGKILL with --hard); the others
    take its partitions and go on consuming."""
    names = ["m1", "m2", "m3"]
    _start(out, run, names, client)
    p0 = TopicPartition(run.topic, 0)
    owner = next(n for n in names if p0 in run.owned(n))
    out.expect("partition 0 has an owner", True, owner)
    if params["hard"]:
        run.kill(owner)
    else:
        run.leave(owner)
    rest = [n for n in names if n != owner]
    stable(out, run, *rest, what=f"{owner} gone")
    consumed(out, run, f"after {owner} failed")
    for name in rest:
        run.leave(name)
    assert_delivery(out, run, clean=not params["hard"])


def broker_bounce(out: Outcome, run: BrokerRun, client: str, params: Params) -> None:
    """test_broker_rolling_bounce with one broker: the broker (the group's coordinator) restarts cleanly;
    the members go on consuming, and the bounce causes no rebalance (Kafka counts partitions_assigned)."""
    names = ["m1", "m2", "m3"]
    _start(out, run, names, client)
    assigned = {n: count(run, n, "partitions_assigned") for n in names}
    before = len(run.log_lines(PREPARING))
    for _ in range(params["bounces"]):
        run.restart_broker()
        consumed(out, run, "after the broker restarted")
        stable(out, run, *names, what="after the broker restarted")
    after = {n: count(run, n, "partitions_assigned") for n in names}
    rebalances = run.log_lines(PREPARING)[before:]
    expired = run.log_lines(r"has failed, removing it from the group")
    out.expect("the broker bounce expired no member", not expired, f"{len(expired)} member(s) expired")
    # Kafka's test has two brokers, so the metadata a leader sees stays whole while one rolls. With one
    # broker, the restart itself changes what the leader's metadata shows (ConsumerCoordinator
    # .rejoinNeededOrPending compares its metadata snapshot; seen: 'cached metadata has changed from
    # {orders=[4 partitions]} to {orders=[]}' while the only broker came back): its rejoin is Kafka's design.
    other = [ln for ln in rebalances if "cached metadata has changed" not in ln]
    out.expect("the broker bounce caused no rebalance but a leader's rejoin on changed metadata", not other,
               f"partitions_assigned per member before {assigned}, after {after}; rebalances after the restart: "
               + ("; ".join(ln.split("(reason: ", 1)[-1][:160] for ln in rebalances) or "none"))
    for name in names:
        run.leave(name)
    assert_delivery(out, run, clean=True)


def valid_assignment(out: Outcome, run: BrokerRun, client: str, params: Params) -> None:
    """AssignmentValidationTest.test_valid_assignment, for every classic assignor the client has: three
    consumers started one by one (a group per assignor), each partition owned by exactly one after every
    rebalance."""
    assignors = params["assignors"] or CLIENTS[client].assignors
    out.not_run += [f"{a}: {why}" for a, why in CLIENTS[client].why_not.items()
                    if a not in assignors and a not in CLIENTS[client].assignors]
    for assignor in assignors:
        group = f"{run.group}-{assignor}"
        names = [f"{assignor}-{i}" for i in (1, 2, 3)]
        for i, name in enumerate(names, 1):
            run.join(name, client, assignor=assignor, group=group)
            stable(out, run, *names[:i], what=f"{assignor}: {i} member(s)")
        for name in names:
            run.leave(name)


@dataclass(frozen=True)
class Scenario:
    name: str
    ports: str  # the test of consumer_test.py
    run: Callable[[Outcome, BrokerRun, str, Params], None]
    partitions: int = 4
    session_timeout_ms: int = 3000
    static: bool = False
    allowed_warnings: tuple[str, ...] = ()


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("consumer-bounce", "OffsetValidationTest.test_consumer_bounce (rolling; --hard: hard bounce)",
             consumer_bounce, allowed_warnings=("zombie-overlap",)),
    Scenario("static-consumer-bounce", "OffsetValidationTest.test_static_consumer_bounce (rolling)",
             static_consumer_bounce, session_timeout_ms=10000, static=True),
    Scenario("fencing-static-consumer", "OffsetValidationTest.test_fencing_static_consumer (stable, 1 conflict)",
             fencing_static_consumer, session_timeout_ms=10000, static=True, allowed_warnings=("zombie-overlap",)),
    Scenario("consumer-failure", "OffsetValidationTest.test_consumer_failure (--hard: SIGKILL)",
             consumer_failure, allowed_warnings=("zombie-overlap",)),
    Scenario("broker-bounce", "OffsetValidationTest.test_broker_rolling_bounce (one broker: a restart)",
             broker_bounce, session_timeout_ms=30000),
    Scenario("valid-assignment", "AssignmentValidationTest.test_valid_assignment (every classic assignor)",
             valid_assignment, partitions=6),
)}


# --------------------------------------------------------------------------------------------------
# Running one, and the checker's verdict
# --------------------------------------------------------------------------------------------------


class Unsupported(Exception):
    """The client cannot do what the scenario needs (the message says why)."""


def unsupported(scenario: str, client: str, assignors: Sequence[str] = ()) -> str | None:
    """Why ``client`` cannot run ``scenario`` (None when it can)."""
    c = CLIENTS[client]
    for assignor in assignors:
        if assignor not in c.assignors:
            return c.why_not.get(assignor, f"{client} has no {assignor} assignor")
    return None


def run_checker(out_dir: Path) -> dict[str, Any]:
    """``groupspec check OUT_DIR --json`` in a process of its own: the verdict and what it found."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run([sys.executable, "-m", "groupspec", "check", str(out_dir), "--json"],
                          capture_output=True, text=True, cwd=str(PROJECT_ROOT), env=env, check=False)
    if proc.returncode == 2:
        return {"verdict": "error", "exit_code": 2, "error": proc.stderr.strip()[-500:]}
    report = json.loads(proc.stdout)
    findings = report.get("findings", [])
    return {"verdict": report["verdict"], "exit_code": proc.returncode,
            "violations": sorted({f["invariant"] for f in findings if f["severity"] == "violation"}),
            "warnings": sorted({f["invariant"] for f in findings if f["severity"] == "warning"}),
            "findings": [{k: f.get(k) for k in ("invariant", "severity", "message") if k in f} for f in findings][:20],
            "unchecked": sorted({u["invariant"] for u in report.get("unchecked", [])})}


def run(name: str, client: str, out_dir: Path, *, hard: bool = False, bounces: int = 1,
        assignors: Sequence[str] = (), version: str = DEFAULT_VERSION,
        progress: Callable[[str], None] = lambda s: None) -> Outcome:
    """Run scenario ``name`` with ``client`` on a broker of its own; the run is kept in ``out_dir``."""
    scenario = SCENARIOS[name]
    if client not in CLIENTS:
        raise Unsupported(f"unknown client {client!r}; known: {', '.join(CLIENTS)}")
    why = unsupported(name, client, assignors)
    if why:
        raise Unsupported(f"{name} with {client}: {why}")
    out = Outcome(name, client, version, allowed_warnings=scenario.allowed_warnings)
    params: Params = {"hard": hard, "bounces": bounces, "assignors": tuple(assignors)}
    started = time.monotonic()
    broker_dir = out_dir.parent / f".{out_dir.name}.broker"
    try:
        with BrokerRun(out_dir, group=name, partitions=scenario.partitions, version=version,
                       session_timeout_ms=scenario.session_timeout_ms, broker_dir=broker_dir) as brun:
            scenario.run(out, brun, client, params)
    except AssertionError as exc:  # a wait whose deadline passed: what Kafka's test would fail on
        out.expect("the scenario's steps completed", False, str(exc)[:600])
    # kept when the broker could not run (KafkaUnavailable above): its logs say why
    shutil.rmtree(broker_dir, ignore_errors=True)
    progress(f"{name} [{client}]: broker run done in {time.monotonic() - started:.0f}s; checking")
    out.checker = run_checker(out_dir)
    (out_dir / "systemtest.json").write_text(json.dumps(
        {**asdict(out), "params": params, "held": out.held, "ports": scenario.ports}, indent=1) + "\n")
    return out


def describe(out: Outcome) -> list[str]:
    lines = [f"{'held' if a.held else 'FAILED'}: {a.what} -- {a.seen}" for a in out.assertions]
    lines += [f"not run: {why}" for why in out.not_run]
    c = out.checker
    lines.append(f"{'held' if out.checker_held else 'FAILED'}: groupspec check: {c.get('verdict')}"
                 + (f"; violations {c['violations']}" if c.get("violations") else "")
                 + (f"; warnings {c['warnings']}" if c.get("warnings") else "")
                 + (f"; {c['error']}" if c.get("error") else ""))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.kafka.systemtests",
                                     description="one of Kafka's consumer system tests on the real broker")
    parser.add_argument("scenario", nargs="?", choices=sorted(SCENARIOS))
    parser.add_argument("--client", default="java", choices=list(CLIENTS))
    parser.add_argument("--out", type=Path, help="where the run's traces, logs and systemtest.json are kept")
    parser.add_argument("--hard", action="store_true", help="SIGKILL instead of a clean stop (bounce, failure)")
    parser.add_argument("--bounces", type=int, default=1, help="bounces of every member (Kafka's tests: 5)")
    parser.add_argument("--assignor", action="append", default=[], help="valid-assignment: only these assignors")
    parser.add_argument("--kafka-version", default=DEFAULT_VERSION)
    parser.add_argument("--list", action="store_true", help="name the scenarios and the test each ports")
    args = parser.parse_args(argv)
    if args.list or not args.scenario:
        for s in SCENARIOS.values():
            print(f"{s.name}: {s.ports}")
        return 0 if args.list else 2
    if args.out is None:
        parser.error("--out is required")
    try:
        out = run(args.scenario, args.client, args.out.resolve(), hard=args.hard, bounces=args.bounces,
                  assignors=args.assignor, version=args.kafka_version, progress=lambda s: print(s, flush=True))
    except (KafkaUnavailable, Unsupported) as exc:
        print(f"groupspec: {exc}", file=sys.stderr)
        return 2
    for line in describe(out):
        print(f"  {line}")
    print(f"{out.scenario} [{out.client}]: {'held' if out.held else 'FAILED'} (run kept in {args.out})")
    return 0 if out.held else 1


if __name__ == "__main__":
    sys.exit(main())
