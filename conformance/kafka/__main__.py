"""``python -m conformance.kafka``: start one Apache Kafka broker by hand, print where it is, stop it on Ctrl-C.

Exit codes: 0 after a clean stop (Ctrl-C / SIGTERM), 2 when the broker cannot be fetched or started
(the message names the reason and where its log is kept). ``--fetch-only`` fetches the jars of a
version into the cache and prints what that cost (CI warms its cache with it).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from conformance.kafka.broker import KafkaBroker
from conformance.kafka.jars import DEFAULT_VERSION, KafkaUnavailable, fetch


def _topic(text: str) -> tuple[str, int]:
    name, sep, count = text.rpartition(":")
    if not sep or not name or not count.isdigit() or int(count) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME:PARTITIONS, e.g. orders:6")
    return name, int(count)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.kafka",
                                     description="one Apache Kafka broker (KRaft, 127.0.0.1) for groupspec runs")
    parser.add_argument("--kafka-version", default=DEFAULT_VERSION, help=f"a release on Maven Central ({DEFAULT_VERSION})")
    parser.add_argument("--workdir", type=Path, help="where data and logs go (default: a new temporary directory)")
    parser.add_argument("--port", type=int, default=0, help="client port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--topic", type=_topic, action="append", default=[], metavar="NAME:PARTITIONS",
                        help="create this topic once the broker is up (repeatable)")
    parser.add_argument("--fetch-only", action="store_true", help="fetch the jars into the cache and exit")
    args = parser.parse_args(argv)
    try:
        if args.fetch_only:
            result = fetch(args.kafka_version)
            print(f"Apache Kafka {args.kafka_version}: {result.jars} jars, {result.bytes / 1e6:.1f} MB in "
                  f"{result.directory} (fetched in {result.seconds:.1f}s)" if result.seconds else
                  f"Apache Kafka {args.kafka_version}: {result.jars} jars, {result.bytes / 1e6:.1f} MB in "
                  f"{result.directory} (cached)", flush=True)
            return 0
        stop = threading.Event()

        def _on_signal(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, _on_signal)
        signal.signal(signal.SIGINT, _on_signal)
        with KafkaBroker(args.kafka_version, args.workdir, port=args.port) as broker:
            for name, partitions in args.topic:
                broker.create_topic(name, partitions)
            print(f"Apache Kafka {args.kafka_version} is up in {broker.start_seconds[-1]:.1f}s\n"
                  f"bootstrap: {broker.bootstrap}\nserver.log: {broker.server_log}\n"
                  "Ctrl-C stops it.", flush=True)
            while not stop.wait(0.5):
                if not broker.alive:
                    print(f"groupspec: the broker exited on its own; see {broker.log_dir}", file=sys.stderr)
                    return 2
            print("stopping...", flush=True)
        print(f"stopped; logs kept in {broker.log_dir}", flush=True)
        return 0
    except KafkaUnavailable as exc:
        print(f"groupspec: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
