"""Runs confluent-kafka's own kafkatest VerifiableConsumer, the real program, as a driver.

confluent-kafka-python ships ``confluent_kafka/kafkatest/verifiable_consumer.py`` in its wheel
(2.12.2 does): the librdkafka counterpart of Apache Kafka's VerifiableConsumer, used by Kafka's
system tests. It prints one JSON object per line on stdout -- ``partitions_assigned``,
``partitions_revoked``, ``records_consumed`` (``count`` and per partition ``minOffset`` /
``maxOffset``), ``offsets_committed``, ``shutdown_complete`` -- each stamped with ``_time``
(``str(datetime.datetime.now())``, local time, e.g. ``2025-01-31 12:00:00.123456``) instead of
Java's ``timestamp``, and no ``startup_complete``. That output is what this driver captures,
unchanged.

It cannot run as shipped on Python 3: ``VerifiableClient.set_config`` iterates the argument dict
with ``dict.iteritems()`` (Python 2 only) and fails with AttributeError before the consumer
starts, and the script imports its sibling as a top-level module (``from verifiable_client
import ...``), so it only works as a file with its own directory on ``sys.path``. This launcher
puts that directory on ``sys.path``, replaces ``set_config`` -- and nothing else -- with a
Python 3 equivalent written here (same rules: ``conf_`` keys become client configuration,
``topicconf_`` keys topic configuration, Java assignor class names are mapped to librdkafka
names, ``sticky`` to ``cooperative-sticky``), and runs the program's own file as ``__main__``
with stdout redirected to the events file.

Other quirks of the program, kept as they are: ``client.id`` is always ``python@<hostname>``;
``-X key=value`` options reach the client only when the key is spelled ``conf_<key>`` (the
program drops keys without that prefix); ``on_assign`` replaces its view of the assignment with
the partitions passed in, which for cooperative-sticky are only the newly added ones, so a
record from a partition it kept makes it exit with "Received message on unassigned partition".
"""

from __future__ import annotations

import os
import re
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import confluent_kafka

from conformance.drivers.common import parse_args

KAFKATEST_DIR = Path(confluent_kafka.__file__).resolve().parent / "kafkatest"
PROGRAM = KAFKATEST_DIR / "verifiable_consumer.py"


def _set_config_py3(conf: dict[str, Any], args: dict[str, Any]) -> None:
    """Python 3 version of ``VerifiableClient.set_config`` (which uses ``dict.iteritems``)."""
    for name, value in args.items():
        if value is None:
            continue
        if name.startswith("topicconf_"):
            conf[name[len("topicconf_"):]] = value
            continue
        if not name.startswith("conf_"):
            continue
        key = name[len("conf_"):]
        if key == "partition.assignment.strategy":
            value = re.sub(r"org.apache.kafka.clients.consumer.(\w+)Assignor", lambda m: m.group(1).lower(), value)
            if value == "sticky":
                value = "cooperative-sticky"
        conf[key] = value


def program_argv(argv: Sequence[str] | None) -> tuple[list[str], str]:
    """The real program's command line for our common driver arguments, and the events path."""
    args = parse_args("conformance.drivers.kafkatest", argv, ("range", "roundrobin", "cooperative-sticky"))
    prog = [str(PROGRAM), "--broker-list", args.bootstrap, "--group-id", args.group,
            "--session-timeout", str(args.session_timeout_ms), "--assignment-strategy", args.assignor,
            "-X", f"conf_heartbeat.interval.ms={args.heartbeat_interval_ms}", "-X", "conf_debug=cgrp"]
    for topic in args.topics:
        prog += ["--topic", topic]
    for key, value in args.client_option:
        prog += ["-X", f"conf_{key}={value}"]
    return prog, args.events


def main(argv: Sequence[str] | None = None) -> int:
    if not PROGRAM.is_file():
        sys.stderr.write(f"groupspec: {PROGRAM} is not in this confluent-kafka wheel\n")
        return 2
    prog, events = program_argv(argv)
    # The program writes its events to stdout: make fd 1 the events file (append, line-flushed).
    fd = os.open(events, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.close(fd)
    sys.stdout = os.fdopen(1, "w", buffering=1, encoding="utf-8", closefd=False)
    sys.path.insert(0, str(KAFKATEST_DIR))
    import verifiable_client  # the program's sibling module, found through sys.path above

    verifiable_client.VerifiableClient.set_config = staticmethod(_set_config_py3)
    sys.argv = prog
    try:
        runpy.run_path(str(PROGRAM), run_name="__main__")
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
