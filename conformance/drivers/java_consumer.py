"""Consumer driver for Apache Kafka's Java client (kafka-clients 4.1.1): our ConsumerDriver.java, run as is.

Run as ``python -m conformance.drivers.java_consumer --bootstrap ... --group g --topic orders
--member j1 --assignor range|roundrobin|sticky|cooperative-sticky --events j1.jsonl 2> j1.log`` -- the
command line of every driver (conformance/drivers/common.py). This module builds the Maven project
``conformance/java/consumer`` if its jar is missing or older than its sources, then *replaces itself*
with the JVM (``os.execv``): the process the harness started, and signals, is the Java consumer, so
SIGTERM is its clean close (a shutdown hook wakes the poll loop and closes the consumer, which leaves
the group) and SIGKILL its crash. What the driver writes is described in ``ConsumerDriver.java``.

``-X`` options are Kafka consumer configuration names, e.g. ``-X group.instance.id=j1`` (static
membership), ``-X enable.auto.commit=true``, ``-X group.protocol=consumer`` (KIP-848; ``--assignor``
is then the broker's ``uniform`` or ``range``), ``-X max.poll.interval.ms=5000``.

Stalling the application thread only: :func:`stall` creates ``<events>.stall``; while it exists the
driver's loop does not call ``poll`` (Kafka's heartbeat thread carries on until
``max.poll.interval.ms`` expires); :func:`resume` removes it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from conformance.java_assignors import JavaPeerUnavailable, build

PROJECT_DIR = Path(__file__).resolve().parents[1] / "java" / "consumer"
JAR_NAME = "groupspec-consumer-driver.jar"
LOG4J2_CONFIG = PROJECT_DIR / "src" / "main" / "resources" / "log4j2.xml"
# Several consumers share two cores with a broker: a small heap, C1 only, the serial collector.
JVM_OPTIONS = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true")


def stall_path(events: Path | str) -> Path:
    return Path(f"{events}.stall")


def stall(events: Path | str) -> None:
    """Stop the driver's application thread from polling (its heartbeat thread goes on)."""
    stall_path(events).touch()


def resume(events: Path | str) -> None:
    stall_path(events).unlink(missing_ok=True)


def jar() -> Path:
    """The driver's jar, built with Maven when needed (raises JavaPeerUnavailable when it cannot be)."""
    return build(PROJECT_DIR, jar_name=JAR_NAME, what="the Java consumer driver")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    java = shutil.which("java")
    if java is None:
        sys.stderr.write("groupspec: the Java consumer driver needs `java` (a JDK 17+) on PATH\n")
        return 2
    try:
        path = jar()
    except JavaPeerUnavailable as exc:
        sys.stderr.write(f"groupspec: {exc}\n")
        return 2
    sys.stderr.flush()
    os.execv(java, [java, *JVM_OPTIONS, "-jar", str(path), *argv])


if __name__ == "__main__":
    sys.exit(main())
