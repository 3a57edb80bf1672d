"""The real Apache Kafka broker as a harness component: what it costs to fetch, start, restart and stop.

Side by side with the coordinator the project used before, librdkafka's mock cluster
(``conformance.mock_cluster.MockCluster``), started and stopped in the same run: the ratio is how much
slower a run on the real broker begins. Rows:

- ``jar fetch (cached)``: :func:`conformance.kafka.jars.fetch` when the cache is complete (a fresh fetch from
  Maven Central is a one-off, measured by hand in docs/benchmarks.md);
- ``cold start``: storage format (a JVM of its own) plus the broker JVM until its ``Kafka Server started``;
- ``restart``: controlled shutdown and start on the same storage; ``hard restart``: SIGKILL and start;
- ``stop``: controlled shutdown (SIGTERM) until the JVM has exited.

Wall seconds, best of ``--repeat`` (default 2). Output: a table and reports/bench/kafka_broker.{json,md,html}.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from conformance.kafka import DEFAULT_VERSION, KafkaBroker, fetch


def _best(samples: list[float]) -> float:
    return min(samples)


def measure_kafka(version: str, repeat: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"jar fetch (cached)": [], "cold start": [], "restart": [], "hard restart": [],
                                   "stop": []}
    fetch(version)
    for _ in range(repeat):
        t = time.monotonic()
        fetch(version)
        out["jar fetch (cached)"].append(time.monotonic() - t)
        with tempfile.TemporaryDirectory(prefix="bench-kafka-") as tmp:
            broker = KafkaBroker(version, Path(tmp))
            try:
                t = time.monotonic()
                broker.start()
                out["cold start"].append(time.monotonic() - t)
                t = time.monotonic()
                broker.restart()
                out["restart"].append(time.monotonic() - t)
                t = time.monotonic()
                broker.restart(hard=True)
                out["hard restart"].append(time.monotonic() - t)
                t = time.monotonic()
                broker.stop()
                out["stop"].append(time.monotonic() - t)
            finally:
                broker.close()
    return out


def measure_mock(repeat: int) -> dict[str, list[float]]:
    from conformance.mock_cluster import MockCluster

    start: list[float] = []
    stop: list[float] = []
    for _ in range(repeat):
        t = time.monotonic()
        cluster = MockCluster(brokers=1, topics={"orders": 4})
        cluster.__enter__()
        start.append(time.monotonic() - t)
        t = time.monotonic()
        cluster.__exit__(None, None, None)
        stop.append(time.monotonic() - t)
    return {"cold start": start, "stop": stop}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks kafka_broker", description=__doc__.split("\n")[0])
    parser.add_argument("--kafka-version", default=DEFAULT_VERSION)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("reports/bench"))
    args = parser.parse_args(argv)

    from groupspec.render import Document, Table, to_markdown, write_report

    kafka = measure_kafka(args.kafka_version, args.repeat)
    mock = measure_mock(args.repeat)
    rows: list[dict[str, Any]] = []
    for what, samples in kafka.items():
        peer = mock.get(what)
        best = _best(samples)
        peer_best = _best(peer) if peer else None
        rows.append({"what": what, "kafka_s": best, "mock_s": peer_best,
                     "ratio": best / peer_best if peer_best else None, "samples": samples})
    jars = fetch(args.kafka_version)
    table = Table(["step", f"Kafka {args.kafka_version} s", "mock cluster s", "Kafka/mock"],
                  [[r["what"], f"{r['kafka_s']:.2f}", "" if r["mock_s"] is None else f"{r['mock_s']:.3f}",
                    "" if r["ratio"] is None else f"{r['ratio']:.0f}x"] for r in rows],
                  caption=f"Best of {args.repeat}, wall seconds. Jars: {jars.jars} files, {jars.bytes / 1e6:.1f} MB "
                          f"in {jars.directory}.")
    command = "python -m benchmarks kafka_broker" + (" -- " + " ".join(argv) if argv else "")
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    doc = Document("The real Kafka broker vs the mock cluster: start, restart, stop",
                   [f"Command: `{command}`; load average at the end {load}.", table])
    print(to_markdown(doc))
    data = {"benchmark": "kafka_broker", "command": command, "rows": rows, "jars": jars.jars,
            "jar_bytes": jars.bytes, "load_average": load}
    for path in write_report(args.out, "kafka_broker", data, doc):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
