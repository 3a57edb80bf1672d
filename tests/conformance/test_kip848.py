"""librdkafka's KIP-848 consumer protocol on the embedded coordinator (conformance/kip848.py).

A real group of three confluent-kafka consumers with ``group.protocol=consumer`` on the mock cluster: a
clean leave, a kill fenced at session expiry. The trace checker judges the real traces; the comparisons
that need a KIP-848 model are said to be unsupported, never passed. The same run on the Apache Kafka broker
is behind ``GROUPSPEC_KAFKA_MATRIX=1`` with the other long broker runs.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from conformance import kip848
from conformance.drivers.common import parse_args
from conformance.drivers.confluent_kafka import client_config
from conformance.kafka import env_problem


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
