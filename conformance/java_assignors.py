"""Apache Kafka's Java assignors as a peer: the real reference for differential tests and benchmarks.

The model's assignors (``model.assignors``) claim to compute what Kafka's client-side assignors
compute. This module asks the real ones: ``RangeAssignor``, ``RoundRobinAssignor``,
``StickyAssignor`` and ``CooperativeStickyAssignor`` of ``org.apache.kafka:kafka-clients:4.1.1``,
run in one long-lived JVM (the Maven project in ``conformance/java/assignors``, docs/java-peer.md)::

    with JavaAssignorPeer() as java:
        assignment, transferring, millis = java.assign("cooperative-sticky", {"t": 4}, subscriptions)

The JVM reads one assignment problem per line on stdin (the ``groupspec assign`` format) and answers
one JSON line; what exactly the Java assignor is given (subscriptions encoded and decoded with
``ConsumerProtocol`` as a real leader receives them, a ``HashMap`` of members, a one-broker
``Cluster`` without racks, a new assignor instance per call) is written up in ``AssignorPeer.java``.

Building. The jar is built on first use with ``mvn -q -B -o package`` (offline, from ~/.m2), and if
that fails, online; it is rebuilt only when ``pom.xml`` or a source file is newer than the jar. A
file lock keeps two processes from building at once. Missing ``java`` / ``mvn`` raise
:class:`JavaPeerUnavailable`; a failed build raises it with the tail of Maven's output.

Errors while running: a problem the Java assignor throws on raises :class:`JavaAssignorFailure`
(its exception class and message; the JVM carries on with the next problem); a JVM that dies or
answers garbage raises :class:`JavaPeerError` with the tail of its stderr. The JVM is always ended
when the ``with`` block ends (stdin closed, then SIGTERM, then SIGKILL), also on an exception.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from model.types import Subscription, TopicPartition

PROJECT_DIR = Path(__file__).resolve().parent / "java" / "assignors"
JAR_NAME = "groupspec-assignor-peer.jar"
STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
_TAIL = 4000  # characters of Maven / JVM output quoted in an error


class JavaPeerUnavailable(RuntimeError):
    """The peer cannot be built or started here: no ``java``/``mvn``, or the Maven build failed."""


class JavaPeerError(RuntimeError):
    """The JVM died, or answered something that is not the peer protocol."""


class JavaAssignorFailure(RuntimeError):
    """The Java assignor threw on this problem (the real leader's ``onLeaderElected`` would fail)."""

    def __init__(self, exception: str, message: str, at: Sequence[str]) -> None:
        where = f" (at {at[0]})" if at else ""
        super().__init__(f"{exception}: {message}{where}")
        self.exception = exception
        self.java_message = message
        self.at = tuple(at)


@dataclass(frozen=True, slots=True)
class JavaResult:
    """One answer of the Java assignor, in the model's types.

    ``millis`` is the assignor's own wall time inside the JVM (``assign(Cluster,
    GroupSubscription)`` only; the minimum over ``runs`` when the problem was run several times);
    ``cpu_millis`` the CPU time of the thread that ran it, ``process_cpu_millis`` the whole JVM's
    (garbage collection and JIT compilation included), both in that fastest run;
    ``prepare_millis`` the JVM's time to parse the problem and build the metadata and the
    subscriptions; ``gc_millis`` the time spent in collections asked for with ``gc``;
    ``wall_millis`` is the whole round trip seen from Python (JSON encoding, pipe, preparation,
    every run, decoding). ``builder`` is ``"constrained"`` or ``"general"`` for
    the sticky assignors (which ``AbstractStickyAssignor`` builder ran), else ``None``;
    ``transferring_source`` says where ``transferring`` came from (see ``AssignorPeer.java``), and
    ``notes`` lists any cross-check of it that failed (empty when all is well).
    """

    assignment: dict[str, tuple[TopicPartition, ...]]
    transferring: frozenset[TopicPartition]
    millis: float
    runs: tuple[float, ...]
    wall_millis: float
    builder: str | None
    transferring_source: str | None
    notes: tuple[str, ...]
    cpu_millis: float = 0.0
    process_cpu_millis: float = 0.0
    prepare_millis: float = 0.0
    gc_millis: float = 0.0


# --------------------------------------------------------------------------------------------------
# Building the jar
# --------------------------------------------------------------------------------------------------


def jar_path(project_dir: Path = PROJECT_DIR, jar_name: str = JAR_NAME) -> Path:
    return project_dir / "target" / jar_name


def _sources(project_dir: Path) -> Iterable[Path]:
    yield project_dir / "pom.xml"
    yield from (p for p in (project_dir / "src").rglob("*") if p.is_file())


def jar_is_fresh(project_dir: Path = PROJECT_DIR, jar_name: str = JAR_NAME) -> bool:
    """The jar and its libraries exist and the jar is newer than ``pom.xml`` and every source file."""
    jar = jar_path(project_dir, jar_name)
    lib = project_dir / "target" / "lib"
    if not jar.is_file() or not lib.is_dir() or not any(lib.glob("kafka-clients-*.jar")):
        return False
    built = jar.stat().st_mtime
    return all(src.stat().st_mtime < built for src in _sources(project_dir))


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _TAIL else "..." + text[-_TAIL:]


def build(project_dir: Path = PROJECT_DIR, *, mvn: str | None = None, jar_name: str = JAR_NAME,
          what: str = "the Java assignor peer") -> Path:
    """Build the peer jar unless it is fresh; return its path.

    Offline first (``mvn -q -B -o package``: everything from ~/.m2), then online when the offline
    build fails (a fresh machine whose ~/.m2 lacks kafka-clients or a plugin). ``jar_name`` and
    ``what`` let another Maven project of the same shape (conformance/java/consumer) use it.
    """
    jar = jar_path(project_dir, jar_name)
    if jar_is_fresh(project_dir, jar_name):
        return jar
    mvn = mvn or shutil.which("mvn")
    if mvn is None:
        raise JavaPeerUnavailable(
            f"cannot build {what} ({project_dir}): `mvn` is not on PATH; install Maven 3.8+ "
            "and a JDK 17+")
    (project_dir / "target").mkdir(exist_ok=True)
    with open(project_dir / "target" / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building: wait for it
        if jar_is_fresh(project_dir, jar_name):
            return jar
        attempts = []
        for args in ([mvn, "-q", "-B", "-o", "package"], [mvn, "-q", "-B", "package"]):
            proc = subprocess.run(args, cwd=project_dir, capture_output=True, text=True, check=False)
            attempts.append((args, proc))
            if proc.returncode == 0 and jar.is_file():
                # maven-jar-plugin leaves an up-to-date jar untouched: mark it as built now.
                os.utime(jar)
                if jar_is_fresh(project_dir, jar_name):
                    return jar
        args, proc = attempts[-1]
        output = _tail(proc.stdout + proc.stderr) or f"(no output; {jar} or target/lib is missing)"
        raise JavaPeerUnavailable(
            f"building {what} failed: `{' '.join(args)}` in {project_dir} exited "
            f"{proc.returncode}:\n{output}")


# --------------------------------------------------------------------------------------------------
# The problem and the answer, as JSON
# --------------------------------------------------------------------------------------------------


def problem_json(strategy: str, partitions_per_topic: Mapping[str, int],
                 subscriptions: Sequence[Subscription]) -> dict[str, Any]:
    """The ``groupspec assign`` problem document for these inputs (members in the given order)."""
    return {
        "strategy": strategy,
        "topics": dict(partitions_per_topic),
        "members": [
            {"member_id": s.member_id, "instance_id": s.instance_id, "topics": list(s.topics),
             "owned": [{"topic": tp.topic, "partition": tp.partition} for tp in s.owned],
             "generation": s.generation, "rack": s.rack}
            for s in subscriptions
        ],
    }


def _partitions(raw: list[dict[str, Any]]) -> tuple[TopicPartition, ...]:
    return tuple(sorted(TopicPartition(d["topic"], d["partition"]) for d in raw))


# --------------------------------------------------------------------------------------------------
# The peer process
# --------------------------------------------------------------------------------------------------


class JavaAssignorPeer:
    """One JVM running the Java assignors; use as a context manager.

    ``heap`` is the JVM's ``-Xmx`` (the million-partition benchmark problems want ``4g``);
    ``jvm_args`` are added before ``-jar``.
    """

    def __init__(self, *, heap: str = "1g", java: str | None = None, mvn: str | None = None,
                 jvm_args: Sequence[str] = (), project_dir: Path = PROJECT_DIR) -> None:
        self.heap = heap
        self.java = java
        self.mvn = mvn
        self.jvm_args = tuple(jvm_args)
        self.project_dir = project_dir
        self.kafka_clients_version: str | None = None
        self.java_version: str | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._stderr: IO[str] | None = None

    # -- lifecycle ----------------------------------------------------------------------------------

    def __enter__(self) -> JavaAssignorPeer:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def start(self) -> None:
        """Build the jar if needed, start the JVM and wait for its ``ready`` line."""
        if self._proc is not None:
            return
        java = self.java or shutil.which("java")
        if java is None:
            raise JavaPeerUnavailable("cannot start the Java assignor peer: `java` is not on PATH; install a JDK 17+")
        jar = build(self.project_dir, mvn=self.mvn)
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115 (closed in close())
        cmd = [java, f"-Xmx{self.heap}", "-XX:+UseParallelGC", *self.jvm_args, "-jar", str(jar)]
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                      text=True, encoding="ascii", bufsize=1 << 16)
        try:
            hello = self._read_line()
            if hello.get("ready") is not True:
                raise JavaPeerError(f"the Java assignor peer did not say ready: {hello!r}")
            self.kafka_clients_version = hello.get("kafka_clients")
            self.java_version = hello.get("java")
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """End the JVM: close its stdin (it exits at end of input), then SIGTERM, then SIGKILL."""
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    # -- talking ------------------------------------------------------------------------------------

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.flush()
        self._stderr.seek(0)
        return _tail(self._stderr.read())

    def _died(self, what: str) -> JavaPeerError:
        proc = self._proc
        code = proc.poll() if proc is not None else None
        if proc is not None and code is None:
            try:
                code = proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                code = None
        tail = self._stderr_tail()
        return JavaPeerError(f"the Java assignor peer {what} (exit code {code}); its stderr:\n{tail or '(empty)'}")

    def _read_line(self) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise self._died("ended without answering")
        try:
            reply = json.loads(line)
        except json.JSONDecodeError as exc:
            raise JavaPeerError(f"the Java assignor peer answered a line that is not JSON ({exc}): "
                                f"{line[:200]!r}") from None
        if not isinstance(reply, dict):
            raise JavaPeerError(f"the Java assignor peer answered {line[:200]!r}")
        return reply

    def request(self, problem: Mapping[str, Any]) -> dict[str, Any]:
        """Send one problem document, return the peer's raw answer (a dict with ``assignment`` or ``error``)."""
        if self._proc is None:
            self.start()
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(problem, separators=(",", ":")) + "\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died("stopped reading its input") from None
        return self._read_line()

    def run(self, strategy: str, partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription],
            *, repeat: int = 1, gc: bool = False) -> JavaResult:
        """The Java assignor's answer, with its timing and where ``transferring`` came from.

        ``repeat`` runs the assignor that many times (new instances, same input; the fastest run is
        reported); ``gc`` collects the JVM's garbage before each timed run (benchmarks).
        """
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
        start = time.perf_counter()
        problem = problem_json(strategy, partitions_per_topic, subscriptions)
        if repeat != 1:
            problem["repeat"] = repeat
        if gc:
            problem["gc"] = True
        reply = self.request(problem)
        error = reply.get("error")
        if error is not None:
            if error.get("kind") == "assignor":
                raise JavaAssignorFailure(error.get("exception", "?"), error.get("message", ""), error.get("at", ()))
            raise ValueError(f"the Java assignor peer refused the problem: {error.get('message')}")
        assignment = {member: _partitions(tps) for member, tps in reply["assignment"].items()}
        transferring = frozenset(_partitions(reply["transferring"]))
        wall = (time.perf_counter() - start) * 1000.0
        return JavaResult(assignment, transferring, float(reply["millis"]), tuple(reply["runs"]), wall,
                          reply.get("builder"), reply.get("transferring_source"), tuple(reply.get("notes", ())),
                          float(reply["cpu_millis"]), float(reply["process_cpu_millis"]),
                          float(reply["prepare_millis"]), float(reply["gc_millis"]))

    def assign(self, strategy: str, partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription]
               ) -> tuple[dict[str, tuple[TopicPartition, ...]], frozenset[TopicPartition], float]:
        """``(assignment, transferring, millis)``: partitions per member (sorted tuples), what
        cooperative-sticky withheld, and the assignor's in-JVM wall time in milliseconds."""
        result = self.run(strategy, partitions_per_topic, subscriptions)
        return result.assignment, result.transferring, result.millis


def java_available() -> str | None:
    """``None`` when ``java`` and ``mvn`` (or a fresh jar) are here; else why the peer cannot run."""
    if shutil.which("java") is None:
        return "`java` is not on PATH"
    if not jar_is_fresh() and shutil.which("mvn") is None:
        return "`mvn` is not on PATH and the peer jar is not built"
    return None





# --------------------------------------------------------------------------------------------------
# When does Java's answer depend on hash order?
# --------------------------------------------------------------------------------------------------

EMPTY_SUBSCRIPTION = "empty-subscription"
CLAIM_TIE_ORDER = "claim-tie-order"
MAX_QUOTA_CHOICE = "max-quota-choice"
PREVIOUS_OWNER_TIE = "previous-owner-tie"


def hash_order_dependence(strategy: str, partitions_per_topic: Mapping[str, int],
                          subscriptions: Sequence[Subscription]) -> tuple[str, ...]:
    """Why Java's answer to this problem may depend on ``HashMap`` iteration order; empty if it cannot.

    Range and roundrobin sort everything they iterate: never. For the sticky assignors
    (``AbstractStickyAssignor``, kafka-clients 4.1.1) these are the places where iteration order of
    the leader's ``HashMap<String, Subscription>`` (member-id hash order) or of the builders' own
    hash maps decides the result, and the conditions under which it does:

    ``empty-subscription``
        ``allSubscriptionsEqual`` seeds its reference set with the first member whose topic list is
        not empty; members with an empty list met *before* it are never compared. When every
        non-empty list is the same and some member's list is empty, the choice of builder depends
        on where the empty ones fall in the order.
    ``claim-tie-order`` (constrained builder)
        a claimed partition lands in ``partitionsWithMultiplePreviousOwners`` iff a claim arrives
        with the generation of the current owner, whose generation is the running maximum. So the
        outcome is order-free when the claims' highest generation is repeated (always void) or no
        generation repeats (the highest claimer keeps it); it depends on the order when only a
        lower generation repeats. The general builder ignores that set, and its owner is order-free.
    ``max-quota-choice`` (constrained builder)
        ``assignOwnedPartitions`` walks members in hash order and lets the first
        ``P % N`` of those owning at least ``maxQuota`` keep ``maxQuota``; the choice depends on the
        order when more members than that own ``maxQuota``.
    ``previous-owner-tie`` (general builder)
        ``prepopulateCurrentAssignments`` keeps, per partition, the first claimer in hash order with
        the highest generation below ``maxGeneration`` (``updatePrevAssignment`` replaces only on a
        strictly higher one); two members tying there make the previous owner order-dependent.

    One more dependence is not decidable from the input alone: when the general builder moves a
    partition back between two members, ``PartitionMovements.getTheActualPartitionToBeMoved``
    takes the first element of a ``HashSet<TopicPartition>`` (hash order of the partitions). The
    differential tests detect that one by running Java on renamed topics (docs/java-peer.md).
    Claims of partition numbers that do not exist are out of scope here (groupspec drops them,
    Java keeps them; docs/java-peer.md).
    """
    if strategy not in ("sticky", "cooperative-sticky") or not subscriptions:
        return ()
    reasons: list[str] = []
    topic_sets = [frozenset(s.topics) for s in subscriptions]
    non_empty = {t for t in topic_sets if t}
    if len(non_empty) == 1 and any(not t for t in topic_sets):
        reasons.append(EMPTY_SUBSCRIPTION)
    equal = len(set(topic_sets)) <= 1 or (len(non_empty) == 1 and EMPTY_SUBSCRIPTION in reasons)
    # partitionsPerTopic of AbstractPartitionAssignor.assign: subscribed topics with >= 1 partition
    subscribed = {t for s in subscriptions for t in s.topics}
    all_topics = {t for t, n in partitions_per_topic.items() if n > 0 and t in subscribed}
    generation = {s.member_id: max(s.generation, -1) for s in subscriptions}

    claims: dict[TopicPartition, list[tuple[str, int]]] = {}
    for s in subscriptions:
        for tp in s.owned:
            if tp.topic in all_topics:
                claims.setdefault(tp, []).append((s.member_id, generation[s.member_id]))

    if equal:
        kept: dict[str, int] = {s.member_id: 0 for s in subscriptions}
        tie_order = False
        for claimers in claims.values():
            gens = [g for _, g in claimers]
            top = max(gens)
            if gens.count(top) > 1:
                continue  # void whatever the order
            if len(set(gens)) < len(gens):
                tie_order = True
                continue
            kept[next(m for m, g in claimers if g == top)] += 1
        if tie_order:
            reasons.append(CLAIM_TIE_ORDER)
        total = sum(partitions_per_topic[t] for t in all_topics)
        n = len(subscriptions)
        extra = total % n
        max_quota = -(-total // n)
        if extra and sum(1 for k in kept.values() if k >= max_quota) > extra:
            reasons.append(MAX_QUOTA_CHOICE)
    if not equal or EMPTY_SUBSCRIPTION in reasons:
        max_generation = max(generation.values())
        best: dict[TopicPartition, tuple[int, set[str]]] = {}
        for s in subscriptions:
            g = generation[s.member_id]
            if g >= max_generation:
                continue
            for tp in s.owned:
                if tp.topic not in all_topics:
                    continue
                have = best.get(tp)
                if have is None or g > have[0]:
                    best[tp] = (g, {s.member_id})
                elif g == have[0]:
                    have[1].add(s.member_id)
        if any(len(members) > 1 for _, members in best.values()):
            reasons.append(PREVIOUS_OWNER_TIE)
    return tuple(reasons)


__all__ = [
    "CLAIM_TIE_ORDER", "EMPTY_SUBSCRIPTION", "JAR_NAME", "MAX_QUOTA_CHOICE", "PREVIOUS_OWNER_TIE", "PROJECT_DIR",
    "STRATEGIES", "JavaAssignorFailure", "JavaAssignorPeer", "JavaPeerError", "JavaPeerUnavailable", "JavaResult",
    "build", "hash_order_dependence", "jar_is_fresh", "jar_path", "java_available", "problem_json",
]
