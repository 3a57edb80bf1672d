"""The Java consumer driver and Kafka's VerifiableConsumer on the real broker: what a scenario relies on.

One broker for the module; every consumer is a process the test's Fleet stops whatever happens.
Each test uses a group of its own. Skipped only where Kafka cannot run (no java 17+, or no mvn and no
cached jars).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.drivers.java_consumer import JAR_NAME as JAVA_DRIVER_JAR
from conformance.drivers.java_consumer import PROJECT_DIR as JAVA_DRIVER_DIR
from conformance.drivers.java_consumer import resume, stall
from conformance.drivers.process import ConsumerProcess, DriverConfig, Fleet, owned_after, wait_until
from conformance.java_assignors import jar_is_fresh
from conformance.kafka import KafkaBroker, env_problem
from model.types import TopicPartition

PROJECT_ROOT = Path(__file__).resolve().parents[2]
_PROBLEM = env_problem() or (
    None if shutil.which("mvn") or jar_is_fresh(JAVA_DRIVER_DIR, JAVA_DRIVER_JAR)
    else "`mvn` is not on PATH and the Java consumer driver is not built")
pytestmark = pytest.mark.skipif(_PROBLEM is not None, reason=f"Apache Kafka cannot run here: {_PROBLEM}")
TOPIC = "orders"
ALL = {TopicPartition(TOPIC, p) for p in range(4)}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    with KafkaBroker(workdir=tmp_path_factory.mktemp("kafka")) as b:
        b.create_topic(TOPIC, 4)
        b.produce(TOPIC, 8)
        yield b


def _config(broker: KafkaBroker, tmp: Path, member: str, group: str, client: str = "java",
            assignor: str = "range", **options: str) -> DriverConfig:
    return DriverConfig(client=client, member=member, group=group, topics=(TOPIC,), bootstrap=broker.bootstrap,
                        events_path=tmp / f"{member}.jsonl", log_path=tmp / f"{member}.log", assignor=assignor,
                        session_timeout_ms=3000, heartbeat_interval_ms=300, options=dict(options))


def _until_owns_all(proc: ConsumerProcess, what: str) -> None:
    wait_until(lambda: owned_after(proc.events()) == ALL or not proc.alive, 60, what,
               describe=lambda: f"owned {sorted(owned_after(proc.events()))}, alive {proc.alive}")
    assert proc.alive, proc.config.log_path.read_text()[-2000:]


def _until_consumed(proc: ConsumerProcess, records: int) -> None:
    wait_until(lambda: sum(e.get("count", 0) for e in proc.events() if e["name"] == "records_consumed") >= records,
               60, f"{proc.member} to consume {records} records")


def test_java_driver_joins_consumes_commits_and_leaves_with_its_identity(broker: KafkaBroker, tmp_path: Path) -> None:
    with Fleet() as fleet:
        j1 = fleet.start(_config(broker, tmp_path, "j1", "g-identity"))
        _until_owns_all(j1, "j1 to own every partition")
        _until_consumed(j1, 8)
        assert j1.stop() == 0
    events = j1.events()
    assert events[0]["name"] == "startup_complete" and events[0]["subscription"] == [TOPIC]
    assert events[-1]["name"] == "shutdown_complete" and events[-1]["failed"] is False
    assigned = next(e for e in events if e["name"] == "partitions_assigned")
    assert assigned["client"] == "kafka-clients 4.1.1" and assigned["protocol"] == "eager"
    assert assigned["assignor"] == "range" and assigned["generation"] == 1
    member_id = assigned["member_id"]
    assert member_id.startswith("j1-")
    commits = [e for e in events if e["name"] == "offsets_committed"]
    assert commits and all(c["success"] for c in commits)
    committed = {(o["partition"], o["offset"]) for c in commits for o in c["offsets"]}
    assert {p for p, _ in committed} == {0, 1, 2, 3} and all(off == 2 for _, off in committed)
    log = broker.server_log.read_text()
    assert f"Member {member_id} has left group through explicit `LeaveGroup` request" in log
    assert f"-{TOPIC}-0 from member {member_id}" in log  # OffsetMetadataManager at DEBUG shows the commit


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_every_classic_java_assignor_splits_a_group_of_two(broker: KafkaBroker, tmp_path: Path, assignor: str) -> None:
    group = f"g-{assignor}"
    with Fleet() as fleet:
        a = fleet.start(_config(broker, tmp_path, "a", group, assignor=assignor))
        b = fleet.start(_config(broker, tmp_path, "b", group, assignor=assignor))
        wait_until(lambda: owned_after(a.events()) | owned_after(b.events()) == ALL
                   and len(owned_after(a.events())) == 2 and len(owned_after(b.events())) == 2, 60,
                   f"{assignor}: a and b to own two partitions each")
    joined = a.config.log_path.read_text()
    assert f"protocol='{assignor}'" in joined
    protocol = "cooperative" if assignor == "cooperative-sticky" else "eager"
    assert {e.get("protocol") for e in a.events() if e["name"] == "partitions_assigned"} == {protocol}


def test_static_member_carries_its_instance_id_and_closes_without_leaving(broker: KafkaBroker, tmp_path: Path) -> None:
    with Fleet() as fleet:
        s1 = fleet.start(_config(broker, tmp_path, "s1", "g-static", **{"group.instance.id": "s1"}))
        _until_owns_all(s1, "s1 to own every partition")
        assert s1.stop() == 0
    assigned = next(e for e in s1.events() if e["name"] == "partitions_assigned")
    assert assigned["instance_id"] == "s1"
    log = broker.server_log.read_text()
    assert f"Member {assigned['member_id']} has left group" not in log  # KIP-345: close keeps its place
    assert "static" in log and "g-static" in log


def test_consumer_protocol_member_reports_its_epoch(broker: KafkaBroker, tmp_path: Path) -> None:
    with Fleet() as fleet:
        c1 = fleet.start(_config(broker, tmp_path, "c1", "g-kip848", assignor="uniform",
                                 **{"group.protocol": "consumer"}))
        _until_owns_all(c1, "c1 to own every partition")
        assert c1.stop() == 0
    assigned = [e for e in c1.events() if e["name"] == "partitions_assigned" and e["partitions"]]
    assert assigned[0]["protocol"] == "consumer" and assigned[0]["assignor"] == "uniform"
    assert assigned[0]["generation"] >= 1
    log = broker.server_log.read_text()
    assert f"[GroupId g-kip848] Member {assigned[0]['member_id']} joins the consumer group" in log


def test_stalled_application_thread_is_left_by_the_heartbeat_thread(broker: KafkaBroker, tmp_path: Path) -> None:
    with Fleet() as fleet:
        m = fleet.start(_config(broker, tmp_path, "m", "g-stall", **{"max.poll.interval.ms": "2000"}))
        _until_owns_all(m, "m to own every partition")
        stall(m.config.events_path)
        member_id = next(e["member_id"] for e in m.events() if e["name"] == "partitions_assigned")
        wait_until(lambda: "consumer poll timeout has expired" in broker.server_log.read_text()
                   and member_id in broker.server_log.read_text(), 60, "the heartbeat thread to leave the group")
        assert m.alive
        resume(m.config.events_path)
        wait_until(lambda: any(e["name"] == "partitions_lost" for e in m.events())
                   and owned_after(m.events()) == ALL, 60, "m to lose its partitions and rejoin")
        assert m.stop() == 0


def test_held_leader_waits_between_join_and_sync_until_released(broker: KafkaBroker, tmp_path: Path) -> None:
    hold = tmp_path / "leader.hold"
    with Fleet() as fleet:
        leader = fleet.start(_config(broker, tmp_path, "leader", "g-hold", **{"groupspec.hold.file": str(hold)}))
        _until_owns_all(leader, "the leader to own every partition")
        hold.touch()
        other = fleet.start(_config(broker, tmp_path, "other", "g-hold"))
        wait_until(lambda: Path(f"{hold}.inside").exists(), 60, "the leader to be held inside its assignor")
        assert not owned_after(other.events())  # no SyncGroup answer while the leader is held
        hold.unlink()
        wait_until(lambda: len(owned_after(leader.events())) == 2 and len(owned_after(other.events())) == 2, 60,
                   "both to own two partitions once the leader is released")
        assert not Path(f"{hold}.inside").exists()


def test_verifiable_consumer_output_is_kept_as_kafka_prints_it(broker: KafkaBroker, tmp_path: Path) -> None:
    with Fleet() as fleet:
        v = fleet.start(_config(broker, tmp_path, "v", "g-vc", client="verifiable-consumer"))
        _until_owns_all(v, "v to own every partition")
        _until_consumed(v, 8)
        # Kafka's program closes in its shutdown hook and lets the JVM exit as SIGTERM leaves it: 143
        assert v.stop() == 143
    lines = [json.loads(line) for line in v.config.events_path.read_text().splitlines()]
    assert lines[0]["name"] == "startup_complete" and lines[-1]["name"] == "shutdown_complete"
    assert all(set(ev) >= {"name", "timestamp"} for ev in lines)
    assert not any("member" in ev or "member_id" in ev for ev in lines)  # nothing of ours added
    assert "Successfully joined group" in v.config.log_path.read_text()


def test_bad_driver_arguments_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "conformance.drivers.java_consumer", "--bootstrap", "x"],
                          capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=120, check=False,
                          env={"PATH": os.environ["PATH"], "PYTHONPATH": str(PROJECT_ROOT)})
    assert proc.returncode == 2 and "required" in proc.stderr
