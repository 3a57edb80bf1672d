"""Capture traces of real clients against the embedded coordinator: the samples under tests/traces/samples/real.

``python -m conformance.capture --out tests/traces/samples/real`` regenerates them; ``--only NAME``
(repeatable) picks some. Each capture is one directory named after the client and assignor, and
runs the same scenario (:func:`standard_scenario`): records are produced, three consumers join one
after another, the first leaves cleanly, the second is killed with SIGKILL (a zombie until the
mock expires its session), the third leaves; after every change the run waits until the group is
stable and every record produced so far is committed, so that each generation shows
``records_consumed`` and ``offsets_committed``. Names are fixed (member names, file names, topic
``orders`` with 6 partitions, group ``orders-group``); timestamps, member ids and how the work is
split naturally vary from run to run.

Files in a capture directory:

- ``<member>.jsonl``: the trace the member's driver wrote (groupspec JSON Lines; for
  ``kafkatest-*`` the VerifiableConsumer's own stdout, with ``_time``);
- ``<member>.log``: the client library's own log (librdkafka ``debug=cgrp`` / kafka-python
  logging / the kafkatest program's stderr);
- ``mock-coordinator.log``: the mock cluster's ``debug=mock`` log (group states, leader
  election with generation, session timeouts): the coordinator's side of the same run;
- ``proxy.log``: what the SyncGroup proxy held and released (clients that need it);
- ``scenario.json``: the configuration and the timeline of steps (wall-clock ms).

:func:`capture` is the library entry point; it writes README.md in the output directory.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from conformance.drivers.scenario import GroupRun, RunConfig
from conformance.mock_cluster import library_info

RECORDS_PER_BATCH = 3  # per partition


@dataclass(frozen=True)
class Capture:
    """One sample directory: which client and assignor, member names, what it shows."""

    name: str
    client: str
    assignor: str
    members: tuple[str, str, str]
    summary: str
    proxy: bool = False
    options: dict[str, str] = field(default_factory=dict)

    def run_config(self) -> RunConfig:
        return RunConfig(client=self.client, assignor=self.assignor, proxy=self.proxy, options=dict(self.options))


CAPTURES: tuple[Capture, ...] = (
    Capture("confluent-kafka-range", "confluent-kafka", "range", ("c1", "c2", "c3"),
            "librdkafka through confluent-kafka, eager protocol, range assignor; librdkafka debug=cgrp logs."),
    Capture("confluent-kafka-cooperative-sticky", "confluent-kafka", "cooperative-sticky", ("c1", "c2", "c3"),
            "librdkafka through confluent-kafka, cooperative protocol (KIP-429): incremental assign / revoke, "
            "two rebalances per membership change; librdkafka debug=cgrp logs."),
    Capture("kafka-python-range", "kafka-python", "range", ("k1", "k2", "k3"),
            "kafka-python, eager protocol, range assignor, api_version=(2, 3, 0), through the SyncGroup proxy; "
            "kafka-python's logging (kafka.coordinator at DEBUG).", proxy=True),
    Capture("kafkatest-range", "kafkatest", "range", ("v1", "v2", "v3"),
            "confluent-kafka's kafkatest VerifiableConsumer (the real program from the wheel), eager, range: "
            "VerifiableConsumer JSON with `_time`, no `startup_complete`; its stderr with librdkafka debug=cgrp."),
    Capture("aiokafka-range", "aiokafka", "range", ("a1", "a2", "a3"),
            "aiokafka, eager protocol, range assignor, through the SyncGroup proxy; aiokafka's logging.",
            proxy=True),
)


def standard_scenario(run: GroupRun, members: tuple[str, str, str], batch: int = RECORDS_PER_BATCH) -> None:
    """Three joins one after another, a clean leave, a SIGKILL, a last clean leave; records throughout."""
    first, second, third = members
    run.produce(batch)
    run.join(first)
    run.wait_stable(f"{first} alone owns every partition")
    run.wait_drained()
    for newcomer in (second, third):
        run.join(newcomer)
        run.wait_stable(f"a stable assignment including {newcomer}")
        run.produce(batch)
        run.wait_drained()
    run.leave(first)
    run.wait_stable(f"a stable assignment after {first} left")
    run.produce(batch)
    run.wait_drained()
    run.crash(second)
    run.wait_stable(f"{third} alone after {second}'s session expired")
    run.produce(batch)
    run.wait_drained()
    run.leave(third)


@dataclass
class CaptureResult:
    name: str
    ok: bool
    seconds: float
    files: list[str]
    error: str | None = None


def run_capture(spec: Capture, out_dir: Path,
                scenario: Callable[[GroupRun, tuple[str, str, str]], None] = standard_scenario) -> CaptureResult:
    """Run one capture into ``out_dir / spec.name`` (emptied first)."""
    target = out_dir / spec.name
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    start = time.monotonic()
    error: str | None = None
    with GroupRun(spec.run_config(), target) as run:
        try:
            scenario(run, spec.members)
        except Exception as exc:  # recorded in scenario.json and the result; the fleet is still stopped
            error = f"{type(exc).__name__}: {exc}"
        run.write_scenario({"capture": spec.name, "versions": versions(), "error": error})
    files = sorted(p.name for p in target.iterdir())
    return CaptureResult(spec.name, error is None, round(time.monotonic() - start, 1), files, error)


def versions() -> dict[str, str]:
    """Versions of everything a capture depends on."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str] = {"python": platform.python_version(), "librdkafka": library_info().version}
    for dist in ("confluent-kafka", "kafka-python", "aiokafka"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    return out


def capture(out_dir: Path, only: Sequence[str] | None = None) -> list[CaptureResult]:
    """Regenerate the captures (all, or those named in ``only``) and README.md in ``out_dir``."""
    known = {c.name: c for c in CAPTURES}
    unknown = sorted(set(only or ()) - set(known))
    if unknown:
        raise ValueError(f"unknown capture(s) {unknown}; known: {sorted(known)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    results = [run_capture(c, out_dir) for c in CAPTURES if not only or c.name in only]
    write_readme(out_dir, results)
    return results


def write_readme(out_dir: Path, results: list[CaptureResult]) -> Path:
    """README.md describing every capture directory present in ``out_dir``."""
    v = versions()
    d = RunConfig(client="")  # the defaults every capture uses
    by_name = {r.name: r for r in results}
    lines = [
        "# Traces captured from real clients",
        "",
        "Captured by `conformance/capture.py` against the embedded coordinator (librdkafka's mock cluster,",
        "`conformance/mock_cluster.py`; see docs/embedded-coordinator.md). Regenerate all of them with",
        "",
        "    python -m conformance.capture --out tests/traces/samples/real",
        "",
        "or one with `--only NAME`. Names and the scenario are fixed; timestamps, member ids and which member",
        "gets which partitions vary from run to run. `groupspec check DIR` reads a directory as one trace set.",
        "",
        f"Versions at the last capture: Python {v['python']}, librdkafka {v['librdkafka']}, "
        f"confluent-kafka {v['confluent-kafka']}, kafka-python {v['kafka-python']}, aiokafka {v['aiokafka']}.",
        "",
        "## Scenario (every directory)",
        "",
        f"Topic `{d.topic}` ({d.partitions} partitions), group `{d.group}`, session.timeout.ms {d.session_timeout_ms}, "
        f"heartbeat {d.heartbeat_interval_ms} ms, the",
        f"mock's group.initial.rebalance.delay.ms {d.initial_rebalance_delay_ms}. Steps, each followed by a wait "
        "until the live members own",
        f"every partition exactly once (balanced) and every produced record is committed; {RECORDS_PER_BATCH} records",
        "per partition are produced before the first join and after each later change:",
        "",
        "1. member 1 joins; 2. member 2 joins; 3. member 3 joins;",
        "4. member 1 leaves cleanly (SIGTERM: close, LeaveGroup, `shutdown_complete`);",
        "5. member 2 is killed with SIGKILL: its trace just ends; the mock keeps it in the group until its",
        "   session times out, then member 3 gets everything (member 2 is a zombie in between);",
        "6. member 3 leaves cleanly.",
        "",
        "`scenario.json` has the timeline of these steps (wall-clock ms), the waits' results and the versions.",
        "",
        "## Files",
        "",
        "| file | what |",
        "|---|---|",
        "| `<member>.jsonl` | the member's trace: groupspec JSON Lines (model/events.py names, `timestamp` in ms, context "
        "fields `member`, `group`, `protocol`, `assignor`, `client`, and `member_id` / `generation` where the client "
        "exposes them; `startup_complete` also has `subscription` (topic names) and `pid`); in `kafkatest-*` the "
        "VerifiableConsumer's own output |",
        "| `<member>.log` | the client library's own log of that member |",
        "| `mock-coordinator.log` | the mock cluster's `debug=mock` log, librdkafka's log format: group state changes "
        "(`changing state Up -> Joining: member join`), leader election with the generation, session timeouts |",
        "| `proxy.log` | only where the SyncGroup proxy was used: each leader SyncGroup held and why it was released |",
        "| `scenario.json` | configuration, timeline of steps, versions, proxy counters |",
        "",
        "## Directories",
        "",
    ]
    for spec in CAPTURES:
        if not (out_dir / spec.name).is_dir():
            continue
        result = by_name.get(spec.name)
        status = "" if result is None or result.ok else f" **Last capture failed: {result.error}**"
        lines += [
            f"### `{spec.name}/`",
            "",
            f"{spec.summary}{status}",
            f"Members `{'`, `'.join(spec.members)}`; client `{spec.client}`; assignor `{spec.assignor}`"
            f"{'; through conformance/proxy.py' if spec.proxy else ''}.",
            f"Regenerate: `python -m conformance.capture --out tests/traces/samples/real --only {spec.name}`",
            "",
        ]
        lines += _client_notes(spec.client)
    lines += [
        "## Known properties of these traces (not bugs of the capture)",
        "",
        "- Member ids are the mock's (`0x7f...`: the address of its member struct), not `client.id-UUID` as Kafka",
        "  makes them; the mock's first generation is 2 (it starts counting at 1 and increments before the first",
        "  JoinGroup response).",
        "- The killed member is in the group until the mock's session check (every second) finds it expired; in that",
        "  window its last `partitions_assigned` still stands in its trace (no `partitions_lost`, no",
        "  `shutdown_complete`).",
        "- The mock answers a follower's SyncGroup that arrives after the leader's with INVALID_REQUEST; librdkafka",
        "  then rejoins (`SyncGroup error: Broker: Invalid request` in its log), which shows as an extra rebalance",
        "  (kafka-python and aiokafka would die of it, hence the proxy). `groupspec check` may report `converges`",
        "  for such a group: that is the mock's doing, not the client's. docs/embedded-coordinator.md lists the gaps.",
        "- kafka-python and aiokafka report an empty `partitions_revoked` before their first join, and none when they",
        "  close (their traces go from `partitions_assigned` to `shutdown_complete`); librdkafka revokes on close.",
        "- `records_consumed` can repeat offsets across owners when a commit failed or was not yet made when the",
        "  partition moved (at-least-once delivery); the capture waits for every record to be committed before the",
        "  next change, so this should be rare here.",
        "",
    ]
    path = out_dir / "README.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _client_notes(client: str) -> list[str]:
    notes: dict[str, list[str]] = {
        "confluent-kafka": [
            "`member_id` from `Consumer.memberid()`; `generation` from librdkafka's serialised group metadata",
            "(`Consumer.consumer_group_metadata()`). With cooperative-sticky, `partitions_assigned` /",
            "`partitions_revoked` list only the partitions added / removed (librdkafka's incremental callbacks), and",
            "an empty `partitions_assigned` is written when a rebalance adds nothing. `<member>.log` is librdkafka's",
            "stderr log with `debug=cgrp`.",
            "",
        ],
        "kafka-python": [
            "`member_id` / `generation` from kafka-python's coordinator (`_generation`). kafka-python has no",
            "`on_partitions_lost`. `<member>.log` format: `%(asctime)s %(levelname)s %(name)s %(message)s`.",
            "",
        ],
        "aiokafka": [
            "`member_id` / `generation` from aiokafka's coordinator (`member_id`, `generation` attributes).",
            "`<member>.log` format: `%(asctime)s %(levelname)s %(name)s %(message)s`.",
            "",
        ],
        "kafkatest": [
            "The real `confluent_kafka/kafkatest/verifiable_consumer.py` from the wheel, run by",
            "`conformance/drivers/kafkatest.py` with one Python-3 fix (`dict.iteritems`); its JSON lines have",
            "`_time` (local time, `YYYY-MM-DD HH:MM:SS.ffffff`) and no `timestamp`, no member field (the file is the",
            "member), no generation or member id. `<member>.log` mixes the program's `% HH:MM:SS DEBUG:` lines with",
            "librdkafka's `debug=cgrp` log.",
            "",
        ],
    }
    return notes.get(client, [])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.capture",
                                     description="capture traces of real Kafka clients against the embedded coordinator")
    parser.add_argument("--out", required=True, type=Path, help="output directory (e.g. tests/traces/samples/real)")
    parser.add_argument("--only", action="append", default=None, metavar="NAME",
                        help=f"capture only these (repeatable): {', '.join(c.name for c in CAPTURES)}")
    args = parser.parse_args(argv)
    try:
        results = capture(args.out, args.only)
    except ValueError as exc:
        print(f"conformance.capture: {exc}", file=sys.stderr)
        return 2
    for r in results:
        status = "ok" if r.ok else f"FAILED: {r.error}"
        print(f"{r.name:40s} {r.seconds:6.1f}s  {len(r.files)} files  {status}")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
