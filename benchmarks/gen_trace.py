"""Write a large, realistic groupspec JSON Lines trace, streaming: ``python -m benchmarks.gen_trace``.

One consumer group of ``--members`` consumers on one topic of ``--partitions`` partitions, run the
way the conformance drivers record real consumers (every event carries ``member``, ``group``,
``generation`` and ``protocol``): members start, join and get an assignment (range over the live
members, eager: everybody revokes everything, then the new generation is assigned), and between
rebalances they poll -- one ``records_consumed`` per poll with the offsets continuing where the
partition's last owner stopped, followed by the ``offsets_committed`` of what it consumed, the
way VerifiableConsumer commits synchronously after each poll. Every ``--rebalance-every`` events a
member leaves (shutdown) or a new one joins. The trace is correct: ``groupspec check`` must find
nothing in it. ``--split`` writes one file per member (and exercises the merge) instead of one.

Deterministic for a seed; memory stays flat whatever ``--events`` is.

    python -m benchmarks.gen_trace --events 10000000 --out /tmp/trace.jsonl
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import IO, Any

try:
    import orjson

    def _dumps(obj: dict[str, Any]) -> bytes:
        return orjson.dumps(obj) + b"\n"
except ImportError:  # pragma: no cover
    import json

    def _dumps(obj: dict[str, Any]) -> bytes:
        return (json.dumps(obj, separators=(",", ":")) + "\n").encode()

TOPIC = "orders"
GROUP = "bench"


def range_assignment(members: list[str], partitions: int) -> dict[str, list[int]]:
    """RangeAssignor over one topic: sorted members, P/C each, the first P%C one more."""
    ordered = sorted(members)
    per, extra = divmod(partitions, len(ordered))
    out: dict[str, list[int]] = {}
    start = 0
    for i, m in enumerate(ordered):
        count = per + (1 if i < extra else 0)
        out[m] = list(range(start, start + count))
        start += count
    return out


class Writer:
    """One output file, or one per member (``--split``)."""

    def __init__(self, out: Path, split: bool) -> None:
        self.out = out
        self.split = split
        self.files: dict[str, IO[bytes]] = {}
        if not split:
            out.parent.mkdir(parents=True, exist_ok=True)
            self.single: IO[bytes] = out.open("wb", buffering=1 << 20)
        else:
            out.mkdir(parents=True, exist_ok=True)

    def write(self, member: str, event: dict[str, Any]) -> None:
        if not self.split:
            self.single.write(_dumps(event))
            return
        fh = self.files.get(member)
        if fh is None:
            fh = self.files[member] = (self.out / f"{member}.jsonl").open("ab", buffering=1 << 16)
        fh.write(_dumps(event))

    def close(self) -> None:
        if not self.split:
            self.single.close()
        for fh in self.files.values():
            fh.close()


def generate(out: Path, events: int, members: int = 20, partitions: int = 60, rebalance_every: int = 200_000,
             seed: int = 1, split: bool = False, offset_settings: bool = False) -> int:
    """Write about ``events`` events; returns how many were written. ``offset_settings``: every event also names
    the member's ``auto_offset_reset`` and ``enable_auto_commit``, as the conformance Java driver writes them (the
    checker's hot path must keep such polls: docs/benchmarks.md, "polls that carry their offset settings")."""
    settings: dict[str, Any] = {"auto_offset_reset": "earliest", "enable_auto_commit": False} if offset_settings else {}
    rng = random.Random(seed)
    writer = Writer(out, split)
    now = 1_700_000_000_000
    generation = 0
    next_id = 0
    offsets = [0] * partitions
    live: list[str] = []
    owned: dict[str, list[int]] = {}
    written = 0

    def emit(member: str, name: str, **fields: Any) -> None:
        nonlocal written
        event = {"timestamp": now, "name": name, "member": member, "group": GROUP, "generation": generation,
                 "protocol": "eager", **settings, **fields}
        writer.write(member, event)
        written += 1

    def rebalance() -> None:
        nonlocal generation, now
        for m in live:
            if owned.get(m):
                emit(m, "partitions_revoked", partitions=[{"topic": TOPIC, "partition": p} for p in owned[m]])
                owned[m] = []
        now += rng.randint(50, 300)
        generation += 1
        plan = range_assignment(live, partitions)
        for m in live:
            emit(m, "group_joined", member_id=f"{m}-id", leader=sorted(live)[0])
        now += rng.randint(1, 20)
        for m in live:
            owned[m] = plan[m]
            emit(m, "partitions_assigned", partitions=[{"topic": TOPIC, "partition": p} for p in plan[m]])

    def join() -> None:
        nonlocal next_id
        name = f"c{next_id:03d}"
        next_id += 1
        live.append(name)
        owned[name] = []
        emit(name, "startup_complete")

    for _ in range(members):
        join()
    rebalance()
    since = 0
    while written < events:
        if since >= rebalance_every:
            since = 0
            if len(live) > 1 and rng.random() < 0.5:
                leaving = live[rng.randrange(len(live))]
                if owned.get(leaving):
                    emit(leaving, "partitions_revoked",
                         partitions=[{"topic": TOPIC, "partition": p} for p in owned[leaving]])
                    owned[leaving] = []
                emit(leaving, "shutdown_complete")
                live.remove(leaving)
            else:
                join()
            now += rng.randint(100, 3000)
            rebalance()
        m = live[rng.randrange(len(live))]
        mine = owned.get(m)
        now += rng.randint(0, 3)
        if not mine:
            continue
        picked = rng.sample(mine, min(len(mine), rng.randint(1, 2)))
        parts: list[dict[str, Any]] = []
        for p in picked:
            count = rng.randint(1, 50)
            parts.append({"topic": TOPIC, "partition": p, "count": count, "minOffset": offsets[p],
                          "maxOffset": offsets[p] + count - 1})
            offsets[p] += count
        emit(m, "records_consumed", count=sum(x["count"] for x in parts), partitions=parts)
        emit(m, "offsets_committed", success=True,
             offsets=[{"topic": TOPIC, "partition": x["partition"], "offset": x["maxOffset"] + 1} for x in parts])
        since += 2
    for m in list(live):
        if owned.get(m):
            emit(m, "partitions_revoked", partitions=[{"topic": TOPIC, "partition": p} for p in owned[m]])
        emit(m, "shutdown_complete")
    writer.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gen_trace", description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--members", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=60)
    parser.add_argument("--rebalance-every", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--split", action="store_true", help="one file per member, in the directory --out")
    parser.add_argument("--offset-settings", action="store_true",
                        help="every event names auto_offset_reset and enable_auto_commit, as the Java driver writes")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    n = generate(args.out, args.events, args.members, args.partitions, args.rebalance_every, args.seed, args.split,
                 args.offset_settings)
    print(f"wrote {n} events to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
