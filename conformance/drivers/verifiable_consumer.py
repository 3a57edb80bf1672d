"""Runs Apache Kafka's own VerifiableConsumer (kafka-tools) as a driver; its stdout is kept exactly as printed.

``org.apache.kafka.tools.VerifiableConsumer`` is the consumer of Kafka's system tests
(tests/kafkatest/services/verifiable_consumer.py): it prints one JSON object per line --
``startup_complete``, ``partitions_assigned`` / ``partitions_revoked``, ``records_consumed``,
``offsets_committed``, ``shutdown_complete`` -- stamped with ``timestamp``, and no member id or
generation. This launcher maps the common driver command line (conformance/drivers/common.py) onto
its arguments and *replaces itself* with the JVM (``os.execv``), its stdout opened on the events file:

- ``--bootstrap`` ``--group`` ``--topic`` (one: the program takes a single topic) pass through as
  ``--bootstrap-server`` ``--group-id`` ``--topic``; ``--assignor`` becomes ``--assignment-strategy``
  with the Java class name (classic) or ``--group-remote-assignor`` (``-X group.protocol=consumer``);
  ``--session-timeout-ms`` becomes ``--session-timeout`` (classic only: the consumer protocol refuses it);
- ``-X group.instance.id=``, ``-X enable.auto.commit=true``, ``-X group.protocol=`` map to the program's
  own flags; every other ``-X`` (and ``--heartbeat-interval-ms``, classic) goes into a
  ``--consumer.config`` file written beside the events file;
- ``--reset-policy earliest``, as the project's other drivers read from the start.

The client's log goes to stderr (the Java driver's log4j2.xml). The jars are those of the cached
broker release (``conformance.kafka``; ``GROUPSPEC_KAFKA_VERSION`` picks another than 4.1.1).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from conformance.drivers.common import parse_args
from conformance.drivers.java_consumer import JVM_OPTIONS, LOG4J2_CONFIG
from conformance.java_assignors import STRATEGIES
from conformance.kafka.broker import java_problem
from conformance.kafka.jars import DEFAULT_VERSION, KafkaUnavailable, classpath, fetch

MAIN_CLASS = "org.apache.kafka.tools.VerifiableConsumer"
ASSIGNOR_CLASSES = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "sticky": "org.apache.kafka.clients.consumer.StickyAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}


def program_argv(argv: Sequence[str] | None) -> tuple[list[str], str]:
    """VerifiableConsumer's arguments for the common driver command line, and the events path."""
    args = parse_args("conformance.drivers.verifiable_consumer", argv, (*STRATEGIES, "uniform"))
    if len(args.topics) != 1:
        raise SystemExit("groupspec: VerifiableConsumer consumes exactly one --topic")
    options = dict(args.client_option)
    consumer_protocol = options.pop("group.protocol", "classic").lower() == "consumer"
    prog = ["--bootstrap-server", args.bootstrap, "--group-id", args.group, "--topic", args.topics[0],
            "--reset-policy", "earliest"]
    if consumer_protocol:
        prog += ["--group-protocol", "consumer", "--group-remote-assignor", args.assignor]
    else:
        prog += ["--group-protocol", "classic", "--assignment-strategy", ASSIGNOR_CLASSES[args.assignor],
                 "--session-timeout", str(args.session_timeout_ms)]
        options.setdefault("heartbeat.interval.ms", str(args.heartbeat_interval_ms))
    instance = options.pop("group.instance.id", None)
    if instance:
        prog += ["--group-instance-id", instance]
    if options.pop("enable.auto.commit", "false").lower() == "true":
        prog.append("--enable-autocommit")
    if options:
        config = Path(f"{args.events}.properties")
        config.write_text("".join(f"{k}={v}\n" for k, v in options.items()))
        prog += ["--consumer.config", str(config)]
    return prog, args.events


def main(argv: Sequence[str] | None = None) -> int:
    prog, events = program_argv(argv)
    problem = java_problem()
    if problem is not None:
        sys.stderr.write(f"groupspec: {problem}\n")
        return 2
    try:
        jars = fetch(os.environ.get("GROUPSPEC_KAFKA_VERSION", DEFAULT_VERSION)).directory
    except KafkaUnavailable as exc:
        sys.stderr.write(f"groupspec: {exc}\n")
        return 2
    fd = os.open(events, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.close(fd)
    java = shutil.which("java") or "java"
    sys.stderr.flush()
    os.execv(java, [java, *JVM_OPTIONS, f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}", "-cp", classpath(jars),
                    MAIN_CLASS, *prog])


if __name__ == "__main__":
    sys.exit(main())
