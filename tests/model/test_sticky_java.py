"""The model's sticky assignors against Apache Kafka's own Java code (kafka-clients 4.1.1).

A small harness (below) calls ``StickyAssignor`` / ``CooperativeStickyAssignor.assign`` on problems
read from stdin, many per JVM. To compare results exactly, every order Java leaves to hashing is
pinned: members are handed over in a ``LinkedHashMap`` in sorted order, and named ``A`` .. ``X``,
whose ``String.hashCode`` buckets in the assignor's internal ``HashMap`` (capacity 16 or 32) come in
that same order, so Java iterates members in the order the model uses. The one order that cannot be
pinned from outside is the ``HashSet<TopicPartition>`` of ``PartitionMovements`` (which partition
moves back when several came the other way); the model takes the lowest, and those problems are
counted apart ("ambiguous") instead of compared.

Needs ``java``/``javac`` and the jars ``org.apache.kafka:kafka-clients:4.1.1`` and ``slf4j-api`` in
``~/.m2`` (``mvn dependency:get -Dartifact=org.apache.kafka:kafka-clients:4.1.1``), or
``GROUPSPEC_KAFKA_CLIENTS_JAR`` / ``GROUPSPEC_SLF4J_JAR``; skipped otherwise.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from model.assignors import cooperative_sticky, sticky, sticky_general
from model.assignors.sticky import StickyAssignorFailure, sticky_target
from model.types import TopicPartition
from tests.model.sticky_support import Problem, random_problem, sub, tp

M2 = Path.home() / ".m2" / "repository"

HARNESS = r"""
package org.apache.kafka.clients.consumer;

import java.io.*;
import java.util.*;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor;
import org.apache.kafka.common.TopicPartition;

/** Reads problems (tab-separated lines), prints each assignment; in this package to reach the userData codec. */
public class GroupspecStickyHarness {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        PrintStream out = new PrintStream(new BufferedOutputStream(System.out), false, "UTF-8");
        String line, id = null, mode = null;
        Map<String, Integer> topics = new LinkedHashMap<>();
        Map<String, Subscription> subs = new LinkedHashMap<>();
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            if (f[0].equals("problem")) { id = f[1]; mode = f[2]; topics.clear(); subs = new LinkedHashMap<>(); }
            else if (f[0].equals("topic")) topics.put(f[1], Integer.parseInt(f[2]));
            else if (f[0].equals("member")) {
                int gen = Integer.parseInt(f[2]);
                List<String> ts = f[3].isEmpty() ? new ArrayList<>() : new ArrayList<>(Arrays.asList(f[3].split(",")));
                List<TopicPartition> owned = new ArrayList<>();
                if (!f[4].isEmpty()) for (String s : f[4].split(",")) {
                    int c = s.lastIndexOf(':');
                    owned.add(new TopicPartition(s.substring(0, c), Integer.parseInt(s.substring(c + 1))));
                }
                // StickyAssignor reads owned partitions and generation from its userData (eager);
                // CooperativeStickyAssignor from the subscription (v2). Both get both here.
                java.nio.ByteBuffer userData = null;
                if (mode.equals("sticky") && (!owned.isEmpty() || gen >= 0))
                    userData = StickyAssignor.serializeTopicPartitionAssignment(
                        new AbstractStickyAssignor.MemberData(owned, Optional.of(gen)));
                subs.put(f[1], new Subscription(ts, userData, owned, gen, Optional.empty()));
            } else if (f[0].equals("end")) {
                AbstractStickyAssignor a = mode.equals("sticky") ? new StickyAssignor() : new CooperativeStickyAssignor();
                // AbstractPartitionAssignor.assign(Cluster, ...): subscribed topics with metadata and partitions
                Set<String> subscribed = new HashSet<>();
                for (Subscription s : subs.values()) subscribed.addAll(s.topics());
                Map<String, Integer> ppt = new HashMap<>();
                for (String t : subscribed) { Integer n = topics.get(t); if (n != null && n > 0) ppt.put(t, n); }
                out.println("result\t" + id);
                try {
                    Map<String, List<TopicPartition>> r = a.assign(ppt, subs);
                    for (Map.Entry<String, List<TopicPartition>> e : r.entrySet()) {
                        StringBuilder b = new StringBuilder();
                        for (TopicPartition tp : e.getValue()) { if (b.length() > 0) b.append(','); b.append(tp.topic()).append(':').append(tp.partition()); }
                        out.println("assign\t" + e.getKey() + "\t" + b);
                    }
                    Map<TopicPartition, String> tr = a.partitionsTransferringOwnership();
                    if (tr != null) {
                        StringBuilder b = new StringBuilder();
                        for (Map.Entry<TopicPartition, String> e : tr.entrySet()) { if (b.length() > 0) b.append(','); b.append(e.getKey().topic()).append(':').append(e.getKey().partition()).append('>').append(e.getValue()); }
                        out.println("transferring\t" + b);
                    }
                } catch (Throwable t) {
                    out.println("error\t" + t.getClass().getSimpleName() + "\t" + String.valueOf(t.getMessage()).replace('\n', ' '));
                }
                out.println("done");
            } else throw new IllegalArgumentException("bad line: " + line);
        }
        out.flush();
    }
}
"""


def _jar(env: str, pattern: str) -> Path | None:
    if os.environ.get(env):
        path = Path(os.environ[env])
        return path if path.is_file() else None
    found = sorted(M2.glob(pattern))
    return found[-1] if found else None


@pytest.fixture(scope="module")
def java_classpath(tmp_path_factory) -> str:
    clients = _jar("GROUPSPEC_KAFKA_CLIENTS_JAR", "org/apache/kafka/kafka-clients/4.1.1/kafka-clients-4.1.1.jar")
    slf4j = _jar("GROUPSPEC_SLF4J_JAR", "org/slf4j/slf4j-api/*/slf4j-api-*[0-9].jar")
    if not (shutil.which("java") and shutil.which("javac")):
        pytest.skip("no java/javac on PATH")
    if clients is None or slf4j is None:
        pytest.skip("kafka-clients 4.1.1 / slf4j-api not in ~/.m2: "
                    "mvn dependency:get -Dartifact=org.apache.kafka:kafka-clients:4.1.1")
    work = tmp_path_factory.mktemp("sticky-java")
    src = work / "org" / "apache" / "kafka" / "clients" / "consumer" / "GroupspecStickyHarness.java"
    src.parent.mkdir(parents=True)
    src.write_text(HARNESS)
    classes = work / "classes"
    subprocess.run(["javac", "-nowarn", "-cp", str(clients), "-d", str(classes), str(src)],
                   check=True, capture_output=True, timeout=300)
    return os.pathsep.join([str(classes), str(clients), str(slf4j)])


def _encode(key: str, mode: str, problem: Problem) -> str:
    lines = [f"problem\t{key}\t{mode}"]
    lines += [f"topic\t{t}\t{n}" for t, n in problem.partitions_per_topic.items()]
    for s in sorted(problem.subscriptions, key=lambda s: s.member_id):
        owned = ",".join(f"{p.topic}:{p.partition}" for p in s.owned)
        lines.append(f"member\t{s.member_id}\t{s.generation}\t{','.join(s.topics)}\t{owned}")
    lines.append("end")
    return "\n".join(lines) + "\n"


def _tp(text: str) -> TopicPartition:
    topic, partition = text.rsplit(":", 1)
    return TopicPartition(topic, int(partition))


def run_java(classpath: str, mode: str, problems: dict[str, Problem]) -> dict[str, dict]:
    """Java's answers: {key: {"assign": {member: sorted tps}, "transferring": {tp: member} | None, "error": str | None}}."""
    text = "".join(_encode(k, mode, p) for k, p in problems.items())
    done = subprocess.run(["java", "-cp", classpath, "org.apache.kafka.clients.consumer.GroupspecStickyHarness"],
                          input=text, capture_output=True, text=True, timeout=600, check=True)
    answers: dict[str, dict] = {}
    current: dict = {}
    for line in done.stdout.splitlines():
        f = line.split("\t")
        if f[0] == "result":
            current = {"assign": {}, "transferring": None, "error": None}
            answers[f[1]] = current
        elif f[0] == "assign":
            current["assign"][f[1]] = sorted(_tp(x) for x in f[2].split(",") if x)
        elif f[0] == "transferring":
            current["transferring"] = {_tp(x.split(">")[0]): x.split(">")[1] for x in f[1].split(",") if x}
        elif f[0] == "error":
            current["error"] = f[1]
    assert set(answers) == set(problems), done.stderr[-2000:]
    return answers


class _AmbiguityWatch:
    """Marks a run in which the model had to choose among several partitions to move back."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen = False
        original = sticky_general.PartitionMovements.actual_partition_to_move
        watch = self

        def wrapped(movements, p, t, old, new):
            pairs = movements.by_topic.get(t)
            if pairs is not None:
                src = movements.by_partition[p][0] if p in movements.by_partition else old
                if len(pairs.get((new, src), ())) > 1:
                    watch.seen = True
            return original(movements, p, t, old, new)

        monkeypatch.setattr(sticky_general.PartitionMovements, "actual_partition_to_move", wrapped)


def compare(classpath: str, mode: str, problems: dict[str, Problem], watch: _AmbiguityWatch) -> Counter:
    answers = run_java(classpath, mode, problems)
    assign = sticky.assign if mode == "sticky" else cooperative_sticky.assign
    outcome: Counter = Counter()
    for key, problem in problems.items():
        java = answers[key]
        watch.seen = False
        try:
            model = assign(problem.partitions_per_topic, problem.subscriptions)
            target = sticky_target(problem.partitions_per_topic, problem.subscriptions)
        except StickyAssignorFailure:
            assert java["error"] == "NullPointerException", (key, problem, java)
            outcome["both fail"] += 1
            continue
        assert java["error"] is None, (key, problem, java)
        same = {m: list(t) for m, t in model.assignment.items()} == java["assign"]
        if same and java["transferring"] is not None and target.transferring is not None:
            u = target.universe
            same = {u.tp(p): u.members[m].member_id for p, m in target.transferring.items()} == java["transferring"]
        if same:
            outcome["same"] += 1
        else:
            assert watch.seen, f"{mode} differs from Java on {problem}:\njava  {java}\nmodel {model}"
            outcome["ambiguous"] += 1
    return outcome


SHAPES = {
    "small, with junk": dict(),
    "wider": dict(max_topics=8, max_partitions=30, max_members=12),
    "many members, few topics": dict(max_topics=3, max_partitions=50, max_members=24),
    "clean history": dict(max_topics=10, max_partitions=20, max_members=24, junk=False),
}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sticky", "cooperative-sticky"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_model_equals_java_on_random_problems(java_classpath, monkeypatch, mode, shape):
    rng = random.Random(f"{mode}/{shape}")
    problems = {str(i): random_problem(rng, **SHAPES[shape]) for i in range(400)}
    watch = _AmbiguityWatch(monkeypatch)
    outcome = compare(java_classpath, "sticky" if mode == "sticky" else "coop", problems, watch)
    # every problem is the same, fails in both, or is ambiguous (compare() asserts it); few are ambiguous
    assert outcome["same"] + outcome["both fail"] + outcome["ambiguous"] == len(problems)
    assert outcome["ambiguous"] <= 0.01 * len(problems), outcome


def test_java_confirms_the_kafka_bugs_and_the_deviation(java_classpath):
    """The behaviours docs/assignors-sticky.md reports, as kafka-clients 4.1.1 shows them."""
    problems = {
        # a leading empty subscription passes as equal: A gets a partition of a topic it does not subscribe to
        "leading-empty": Problem({"t0": 3}, (sub("A", []), sub("B", ["t0"]), sub("C", ["t0"]))),
        # the previous-owner rule ignores the subscription: B gets t0-0 back
        "previous-owner": Problem({"t0": 4, "t1": 2}, (
            sub("A", ["t1"], [], 2), sub("B", ["t1"], [tp("t0", 0)], 1),
            sub("C", ["t0"], [tp("t0", i) for i in range(4)], 2), sub("D", ["t0"], [], 2))),
        # the previous owner was set aside as fixed: NullPointerException
        "fixed-previous-owner": Problem({"t0": 2, "t1": 1}, (
            sub("B", ["t1"], [tp("t0", 0)], 1), sub("C", ["t0"], [tp("t0", 0), tp("t0", 1)], 2),
            sub("D", ["t0"], [], 2))),
        # claims of partitions that do not exist: Java keeps them (the model drops them)
        "out-of-range": Problem({"t0": 2}, (sub("A", ["t0"], [tp("t0", 5)], 1), sub("B", ["t0"], [], 1))),
        "negative": Problem({"t0": 2}, (sub("A", ["t0"], [tp("t0", -1)], 1), sub("B", ["t0"], [], 1))),
    }
    java = run_java(java_classpath, "sticky", problems)
    assert java["leading-empty"]["assign"] == {"A": [tp("t0", 0)], "B": [tp("t0", 1)], "C": [tp("t0", 2)]}
    assert tp("t0", 0) in java["previous-owner"]["assign"]["B"]
    assert java["fixed-previous-owner"]["error"] == "NullPointerException"
    assert java["out-of-range"]["assign"] == {"A": [tp("t0", 5)], "B": [tp("t0", 0), tp("t0", 1)]}
    assert java["negative"]["assign"] == {"A": [tp("t0", -1)], "B": [tp("t0", 0), tp("t0", 1)]}
    # and the model: the same for the bugs, a real partition instead of a missing one for the deviation
    assert {m: list(t) for m, t in sticky.assign(problems["leading-empty"].partitions_per_topic,
                                                 problems["leading-empty"].subscriptions).assignment.items()} \
        == java["leading-empty"]["assign"]
    out = sticky.assign(problems["out-of-range"].partitions_per_topic, problems["out-of-range"].subscriptions)
    assert dict(out.assignment) == {"A": (tp("t0", 0),), "B": (tp("t0", 1),)}


def test_java_cooperative_lets_a_stale_claimer_keep_what_it_claims(java_classpath):
    """computePartitionsTransferringOwnership uses the claims as sent: B's stale t0-0 is not withheld."""
    problem = Problem({"t0": 4}, (sub("A", ["t0"], [tp("t0", i) for i in range(4)], 2),
                                  sub("B", ["t0", "tx"], [tp("t0", 0)], 1)))
    java = run_java(java_classpath, "coop", {"stale": problem})["stale"]
    assert java["assign"] == {"A": [tp("t0", 2), tp("t0", 3)], "B": [tp("t0", 0)]}
    model = cooperative_sticky.assign(problem.partitions_per_topic, problem.subscriptions)
    assert {m: list(t) for m, t in model.assignment.items()} == java["assign"]


def test_kafka_test_names_iterate_in_reverse_in_javas_hash_map(java_classpath):
    """Why test_sticky_kafka's maxQuota case differs from Kafka's expectation: consumer1..3 iterate 3, 2, 1."""
    topics = ["topic1", "topic2"]
    problem = Problem({"topic1": 2, "topic2": 2}, (
        sub("consumer1", topics, [tp("topic1", 0), tp("topic2", 0)], 1),
        sub("consumer2", topics, [tp("topic1", 1), tp("topic2", 1)], 1),
        sub("consumer3", topics, [], 1)))
    java = run_java(java_classpath, "sticky", {"kafka": problem})["kafka"]
    assert java["assign"] == {"consumer1": [tp("topic1", 0)], "consumer2": [tp("topic1", 1), tp("topic2", 1)],
                              "consumer3": [tp("topic2", 0)]}


def test_java_keeps_the_first_of_equal_older_claimers_as_previous_owner(java_classpath):
    """updatePrevAssignment replaces a previous owner only for a higher generation: A, the first of the two equal
    claimers, gets t0-0 back (test_sticky.py's test of the same problem fails on issue 17's survivor
    sticky_general.py:150, which made B the previous owner)."""
    from tests.model.test_sticky import EQUAL_OLDER_CLAIMERS as problem

    java = run_java(java_classpath, "sticky", {"p": problem})["p"]
    assert java["assign"] == {"A": [tp("t0", 0)], "B": [tp("t0", 1)], "C": [tp("t1", 0)]}
    coop = run_java(java_classpath, "coop", {"p": problem})["p"]
    assert coop["assign"] == {"A": [tp("t0", 0)], "B": [], "C": [tp("t1", 0)]}
    for assign, answer in ((sticky.assign, java), (cooperative_sticky.assign, coop)):
        model = assign(problem.partitions_per_topic, problem.subscriptions)
        assert {m: list(t) for m, t in model.assignment.items()} == answer["assign"]
