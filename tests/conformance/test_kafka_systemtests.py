"""Kafka's consumer system tests (consumer_test.py) as groupspec scenarios on the real broker.

The default run keeps to about two minutes of broker time: ``consumer-failure`` with the Java driver
(a clean stop of the owner of partition 0) and ``static-consumer-bounce`` with Kafka's VerifiableConsumer.
The whole matrix -- every scenario with every client that can do it, clean and hard -- is behind the
``kafka_matrix`` marker and runs only with ``GROUPSPEC_KAFKA_MATRIX=1`` (about 20 minutes; docs/kafka-broker.md).
Each run starts one broker of its own and stops it (BrokerRun), also when the test fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.kafka import env_problem
from conformance.kafka.systemtests import CLIENTS, SCENARIOS, Outcome, describe, run, unsupported

PROJECT_ROOT = Path(__file__).resolve().parents[2]
_PROBLEM = env_problem()
needs_kafka = pytest.mark.skipif(_PROBLEM is not None, reason=f"Apache Kafka cannot run here: {_PROBLEM}")


def _assert_held(out: Outcome, out_dir: Path) -> None:
    assert out.held, "\n".join(describe(out))
    kept = json.loads((out_dir / "systemtest.json").read_text())
    assert kept["held"] is True and kept["checker"]["verdict"] in ("held", "warning")
    assert (out_dir / "server.log").exists() and (out_dir / "scenario.json").exists()
    assert not (out_dir.parent / f".{out_dir.name}.broker").exists()  # the broker's data is gone


@needs_kafka
def test_consumer_failure_java_keeps_every_record_and_commit(tmp_path: Path) -> None:
    out_dir = tmp_path / "consumer-failure"
    out = run("consumer-failure", "java", out_dir)
    _assert_held(out, out_dir)
    what = {a.what for a in out.assertions}
    # Kafka's assertions were made, not only the checker's
    assert "no duplicate after clean bounces: position == total consumed (every partition)" in what
    assert "the last commit is the position (committed offsets advanced to the end)" in what
    assert out.checker["verdict"] == "held"


@needs_kafka
def test_static_bounce_verifiable_consumer_causes_no_rebalance(tmp_path: Path) -> None:
    out_dir = tmp_path / "static-consumer-bounce"
    out = run("static-consumer-bounce", "verifiable-consumer", out_dir)
    _assert_held(out, out_dir)
    no_rebalance = [a for a in out.assertions if a.what.startswith("no new generation")]
    assert no_rebalance and no_rebalance[0].held


def test_an_assignor_a_client_lacks_is_said_with_why_and_starts_no_broker(tmp_path: Path) -> None:
    assert unsupported("valid-assignment", "aiokafka", ["cooperative-sticky"]) == \
        "aiokafka has no cooperative protocol (no cooperative-sticky assignor)"
    assert unsupported("valid-assignment", "java", ["cooperative-sticky"]) is None
    proc = subprocess.run([sys.executable, "-m", "conformance.kafka.systemtests", "valid-assignment",
                           "--client", "confluent-kafka", "--assignor", "sticky", "--out", str(tmp_path / "x")],
                          capture_output=True, text=True, cwd=PROJECT_ROOT, check=False,
                          env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
    assert proc.returncode == 2
    assert "librdkafka has no eager sticky assignor" in proc.stderr
    assert not (tmp_path / "x").exists()


def test_list_names_every_scenario_with_the_kafka_test_it_ports() -> None:
    proc = subprocess.run([sys.executable, "-m", "conformance.kafka.systemtests", "--list"],
                          capture_output=True, text=True, cwd=PROJECT_ROOT, check=False,
                          env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
    assert proc.returncode == 0
    for name, scenario in SCENARIOS.items():
        assert f"{name}: {scenario.ports}" in proc.stdout


# What the clients do differently from Kafka's expectation, seen on 4.1.1 (docs/kafka-broker.md "Results"):
# strict, so a client that starts doing what Kafka's test expects shows up.
DIVERGES = {
    ("fencing-static-consumer", "kafka-python"): "kafka-python 3.0.12: a fenced member's heartbeat thread stops, "
                                                 "poll never raises: the fenced consumer runs on",
    ("fencing-static-consumer", "aiokafka"): "aiokafka 0.14.0: heartbeats carry no group.instance.id, so a fenced "
                                             "member rejoins with it and the two processes fence each other",
}


def _case(s: str, c: str, hard: bool) -> object:
    why = DIVERGES.get((s, c))
    marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
    return pytest.param(s, c, hard, marks=marks, id=f"{s}-{c}{'-hard' if hard else ''}")


MATRIX = [_case(s, c, hard) for s in SCENARIOS for c in CLIENTS
          for hard in ((False, True) if s in ("consumer-bounce", "consumer-failure") else (False,))]


@pytest.mark.kafka_matrix
@pytest.mark.skipif(os.environ.get("GROUPSPEC_KAFKA_MATRIX") != "1",
                    reason="the full matrix takes about 20 minutes: set GROUPSPEC_KAFKA_MATRIX=1")
@needs_kafka
@pytest.mark.parametrize(("scenario", "client", "hard"), MATRIX)
def test_matrix(scenario: str, client: str, hard: bool, tmp_path: Path) -> None:
    out_dir = tmp_path / f"{scenario}-{client}"
    _assert_held(run(scenario, client, out_dir, hard=hard), out_dir)
