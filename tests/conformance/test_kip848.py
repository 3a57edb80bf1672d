"""KIP-848's consumer protocol: ``python -m conformance.kip848`` and the ``consumer-protocol`` column of
``groupspec conform`` (conformance/kip848.py, conformance/campaign.py).

Real groups of confluent-kafka consumers with ``group.protocol=consumer`` on the mock cluster: the fixed
scenario (a clean leave, a kill fenced at session expiry), and a generated-format scenario run by
``groupspec conform``'s runner and replayed by its command. The trace checker judges the real traces; the
comparisons that need a KIP-848 model are said to be unsupported, never passed. The same runs on the Apache
Kafka broker (the Java consumer and librdkafka) are behind ``GROUPSPEC_KAFKA_MATRIX=1`` with the other long
broker runs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import campaign, kip848, real_run, strategies
from conformance.drivers.common import parse_args
from conformance.drivers.confluent_kafka import client_config
from conformance.drivers.process import owned_after, read_events
from conformance.kafka import env_problem
from conformance.real_run import unsupported
from model.types import TopicPartition
from tests.conformance.scenarios import join, produce, scenario, step

ROOT = Path(__file__).resolve().parents[2]
# joins, records, a kill (fenced at session expiry), a stall past max.poll.interval.ms (the member leaves
# and rejoins), a clean leave; commitSync after each poll, so the delivery rules are judged too
SCENARIO = scenario(join(0, "a"), join(30000, "b"), produce(45000), join(60000, "c"), step(90000, "crash", "b"),
                    step(120000, "stall", "c", for_ms=16000), produce(150000), step(180000, "leave", "a"),
                    until=210000)


def test_the_driver_leaves_the_brokers_settings_to_the_broker_under_the_consumer_protocol() -> None:
    base = ["--bootstrap", "127.0.0.1:1", "--group", "g", "--topic", "t", "--member", "a", "--events", "a.jsonl"]
    classic = client_config(parse_args("t", base))
    consumer = client_config(parse_args("t", [*base, "-X", "group.protocol=consumer"]))
    assert {"partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms"} <= set(classic)
    assert not {"partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms"} & set(consumer)
    assert consumer["group.protocol"] == "consumer"


def _assert_judged(doc: dict, out: Path) -> None:
    invariants = doc["checker"]["invariants"]
    assert set(invariants) == set(kip848.CHECKED)
    for name in ("single-owner", "commit-owned-only", "no-gap", "monotonic-consumption", "committed-not-ahead"):
        assert invariants[name]["verdict"] == "held", (name, invariants[name])
    # what the checker cannot judge is unchecked with its reason, not held
    assert invariants["revoke-before-assign"]["verdict"] == "unchecked"
    assert invariants["revoke-before-assign"]["why"]
    assert set(doc["checker"]["warnings"]) <= {"zombie-overlap"}  # b, killed, held its partitions until fenced
    assert [u["comparison"] for u in doc["unsupported"]] == [
        "per generation, the assignor", "per member, the reaction", "the whole run through simulate"]
    assert all(u["why"].startswith("unsupported: no KIP-848 model") for u in doc["unsupported"])
    assert "pass" not in json.dumps(doc["checker"])
    # the members really ran the consumer protocol: KIP-848 member ids (a Uuid, 22 base64 characters) in their
    # traces, ConsumerGroupHeartbeat in librdkafka's log, and no JoinGroup at all
    first = [json.loads(line) for line in (out / "a.jsonl").read_text().splitlines()]
    assert {e["protocol"] for e in first} == {"consumer"}
    ids = {e["member_id"] for e in first if e.get("member_id")}
    assert ids and all(re.fullmatch(r"[A-Za-z0-9+/_-]{22}", i) for i in ids), ids
    log = (out / "a.log").read_text(errors="replace")
    assert "ConsumerGroupHeartbeat" in log and "JoinGroup" not in log
    assert json.loads((out / "kip848.json").read_text()) == doc


def test_a_consumer_protocol_group_on_the_mock_is_judged_by_the_checker(tmp_path: Path) -> None:
    doc = kip848.run("mock", tmp_path)
    assert doc["cluster"] == "mock" and "librdkafka" in doc["client"]
    _assert_judged(doc, tmp_path)


@pytest.mark.kafka_matrix
@pytest.mark.skipif(os.environ.get("GROUPSPEC_KAFKA_MATRIX") != "1",
                    reason="a broker run of about 40 s: set GROUPSPEC_KAFKA_MATRIX=1")
@pytest.mark.skipif(env_problem() is not None, reason=f"Apache Kafka cannot run here: {env_problem()}")
def test_a_consumer_protocol_group_on_the_kafka_broker_is_judged_by_the_checker(tmp_path: Path) -> None:
    doc = kip848.run("kafka", tmp_path)
    _assert_judged(doc, tmp_path)
    # server.log names the fenced member, so the killed b's overlap is a zombie's (a warning, not a violation)
    assert (tmp_path / "server.log").exists()


# -- the consumer-protocol column of groupspec conform ------------------------------------------------


def test_consumer_protocol_runs_the_range_scenarios_under_kip848() -> None:
    p = campaign.plan(3, 2, ["range", strategies.CONSUMER_PROTOCOL], [["confluent-kafka"]])
    assert [doc for _, doc, _ in p.runs[:2]] == [doc for _, doc, _ in p.runs[2:]]  # the same scenarios
    assert p.protocols == {2: "consumer", 3: "consumer"}


def test_what_the_consumer_protocol_cannot_run_is_unsupported_with_why() -> None:
    members = {"a": "confluent-kafka", "b": "kafka-python", "c": "confluent-kafka"}
    why = unsupported(SCENARIO, members, "mock", "consumer")
    assert why == ["kafka-python has no KIP-848 consumer protocol (group.protocol=consumer): it speaks only the "
                   "classic JoinGroup / SyncGroup protocol"]
    assert unsupported(SCENARIO, dict.fromkeys("abc", "confluent-kafka"), "mock", "consumer") == []
    coop = {**SCENARIO, "steps": [{**s, "assignors": ["cooperative-sticky"]} if s["do"] == "join" else s
                                  for s in SCENARIO["steps"]]}
    assert all("the mock coordinator serves range" in w
               for w in unsupported(coop, dict.fromkeys("abc", "confluent-kafka"), "mock", "consumer"))
    uniform = {**SCENARIO, "steps": [{**s, "assignors": ["uniform"]} if s["do"] == "join" else s
                                     for s in SCENARIO["steps"]]}
    assert unsupported(uniform, dict.fromkeys("abc", "confluent-kafka"), "kafka", "consumer") == []


def _assert_consumer_run(r: campaign.RunRecord, run_dir: Path) -> None:
    assert r.error is None and r.verdict == "pass", (r.error, r.comparison.get("differences"))
    assert r.strategy == "consumer-protocol" and r.kind == "crash"
    notes = r.comparison["notes"]
    for name in ("single-owner", "commit-owned-only", "no-gap", "monotonic-consumption", "committed-not-ahead"):
        assert any(n.startswith(f"checker: {name} held") for n in notes), (name, notes, r.comparison["unchecked"])
    assert r.comparison["unsupported"] == [u["comparison"] for u in kip848.UNSUPPORTED]
    assert r.comparison["rounds"] == 0 and r.comparison["reactions"] == 0  # nothing compared with a model
    assert not (run_dir / "model-trace.jsonl").exists()
    # the members spoke the consumer protocol: ConsumerGroupHeartbeat on the wire, no JoinGroup
    wire = [json.loads(line) for line in (run_dir / "group-wire.jsonl").read_text().splitlines()]
    assert {m["api"] for m in wire} >= {"ConsumerGroupHeartbeat"} and not any(m["api"] == "JoinGroup" for m in wire)
    assert {e["protocol"] for e in (json.loads(x) for x in (run_dir / "a#1.jsonl").read_text().splitlines())} \
        == {"consumer"}


@pytest.mark.clients
def test_a_consumer_protocol_run_of_conform_on_the_mock_is_judged_by_the_checker_and_replays(tmp_path: Path) -> None:
    r = campaign.run_scenario(SCENARIO, ["confluent-kafka"], tmp_path / "run", protocol="consumer")
    _assert_consumer_run(r, tmp_path / "run")
    # c stalled past max.poll.interval.ms: it left the group (its partitions lost or revoked) and rejoined
    c = [json.loads(x) for x in (tmp_path / "run" / "c#1.jsonl").read_text().splitlines()]
    assert sum(1 for e in c if e["name"] == "partitions_assigned" and e["partitions"]) >= 2
    # the report says what is not compared once, naming the run, and never as a pass
    doc = campaign.document([r], [], seed=None, cluster="mock", versions={})
    said = [u for u in doc["unsupported"] if u["why"].startswith("consumer-protocol (KIP-848)")]
    assert len(said) == 3 and all(u["runs"] == [0] and "no KIP-848 model" in u["why"] for u in said)
    assert doc["matrix"] == {"confluent-kafka | consumer-protocol | crash": {
        "pass": 1, "known-finding": 0, "divergence": 0, "unsupported": 0, "error": 0}}
    # the replay command reproduces the verdict
    assert r.replay.endswith("--clients confluent-kafka --strategies consumer-protocol")
    args = r.replay.split()[2:] + ["--out", str(tmp_path / "replay"), "--json"]
    done = subprocess.run([sys.executable, "-m", "groupspec", "conform", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=240, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)["runs"]
    assert [(x["strategy"], x["verdict"]) for x in runs] == [("consumer-protocol", "pass")]


@pytest.mark.clients
def test_the_consumer_protocol_settle_waits_for_a_killed_members_fence_whatever_the_session(tmp_path: Path) -> None:
    """A killed member's partitions move only once the coordinator fences it at session expiry, and the
    consumer-protocol settle waits for that. Its deadline starts after the expiry, as the classic settle's
    starts after its wait: a run's session (here 10 s, scaled) may be longer than the deadline (here 5 s). It
    used to count from the kill, so a scenario with a session past about 96 s went on to its next step
    before the fence, with a ``settle_timeout`` note."""
    doc = scenario(join(0, "a"), join(30000, "b"), step(60000, "crash", "b"), until=90000)
    doc["config"]["session_timeout_ms"] = 40000
    clients = dict.fromkeys("ab", "confluent-kafka")
    with real_run.RealRun(doc, clients, tmp_path, settle_deadline_s=5.0, protocol="consumer") as run:
        result = run.run()
    assert run.session_ms == 10000 and result.error is None, result.error
    assert [e["step"] for e in result.timeline] == ["join", "join", "crash", "end"], result.timeline
    # when the crash's settle ended, the survivor owned every partition
    end = result.timeline[-1]["timestamp"]
    a = [e for e in read_events(tmp_path / "a#1.jsonl") if e["timestamp"] <= end]
    assert owned_after(a) == {TopicPartition("orders", p) for p in range(6)}


@pytest.mark.kafka_matrix
@pytest.mark.skipif(os.environ.get("GROUPSPEC_KAFKA_MATRIX") != "1",
                    reason="a broker run of about a minute: set GROUPSPEC_KAFKA_MATRIX=1")
@pytest.mark.skipif(env_problem() is not None, reason=f"Apache Kafka cannot run here: {env_problem()}")
def test_the_java_consumer_and_librdkafka_under_the_consumer_protocol_on_kafka(tmp_path: Path) -> None:
    r = campaign.run_scenario(SCENARIO, ["java", "confluent-kafka"], tmp_path / "run", cluster="kafka",
                              protocol="consumer")
    _assert_consumer_run(r, tmp_path / "run")
    assert r.members == {"a": "java", "b": "confluent-kafka", "c": "java"}
    assert r.replay.endswith("--clients java,confluent-kafka --cluster kafka --strategies consumer-protocol")
    log = (tmp_path / "run" / "kafka" / "logs" / "server.log").read_text(errors="replace")
    assert "joins the consumer group" in log  # the broker's KIP-848 group coordinator served them
