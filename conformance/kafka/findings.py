"""The model's findings about Kafka (docs/protocol-model.md), replayed on the real broker and Java client.

``python -m conformance.kafka.findings NAME --out DIR`` runs one replay on a broker of its own
(:class:`~conformance.kafka.run.BrokerRun`), keeps every trace and log in ``DIR`` as evidence, prints what
it saw and whether the model's claim is **confirmed** (exit 0) or **refuted** (exit 1, a divergence
between the model and Kafka); 2 when the broker could not run.

``static-rejoin-keeps-stale-assignment``
    The model: a static member restarting into a Stable group takes its old place without a rebalance
    (``GroupMetadataManager`` logs "Static member which joins during Stable stage and doesn't affect the
    selected protocol will not trigger a rebalance"); when that member is the leader, the coordinator tells
    it to skip the assignment (KIP-814, ``JoinGroupResponse.skipAssignment``) and
    ``ConsumerCoordinator.onLeaderElected`` then snapshots the *current* metadata
    (``assignmentSnapshot = metadataSnapshot``), so partitions added while it was away never make
    ``rejoinNeededOrPending`` true: they stay without an owner until some other rebalance.
    The replay: static members s1 (the leader, first to join) and s2, range, on a 4-partition topic,
    ``metadata.max.age.ms=1000``; s1 is closed (static: no LeaveGroup), the topic grows to 6 partitions,
    s1 starts again with the same instance id within its session; then the run waits ``--watch`` seconds
    (default 15: fifteen metadata refreshes). Confirmed when the broker log shows the static rejoin without
    rebalance, s1's log shows the skipped assignment, and at the end of the wait the members own
    partitions 0-3 only, with no new generation.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from conformance.kafka.jars import KafkaUnavailable
from conformance.kafka.run import BrokerRun


@dataclass
class Replay:
    name: str
    confirmed: bool
    evidence: list[str] = field(default_factory=list)


def static_rejoin_keeps_stale_assignment(out: Path, watch_s: float) -> Replay:
    evidence: list[str] = []
    opts = {"metadata.max.age.ms": "1000"}
    with BrokerRun(out, group="stale-static", session_timeout_ms=10000) as run:
        run.produce(8)
        run.join("s1", "java", assignor="range", **{"group.instance.id": "s1"}, **opts)
        run.wait_stable("s1", what="s1 alone (the leader)")
        run.join("s2", "java", assignor="range", **{"group.instance.id": "s2"}, **opts)
        run.wait_stable("s1", "s2", what="two static members")
        generations = len(run.log_lines(r"Stabilized group stale-static generation"))
        run.leave("s1")
        run.broker.add_partitions(run.topic, 6)
        run.note("partitions_added", total=6)
        run.join("s1", "java", assignor="range", **{"group.instance.id": "s1"}, **opts)
        run.wait_stable("s1.2", "s2", what="s1 back in its old place (4 partitions)")
        run.pause(watch_s, "time for both members to refresh their metadata many times")
        owned = {m: sorted(tp.partition for tp in run.owned(m)) for m in ("s1.2", "s2")}
        after = len(run.log_lines(r"Stabilized group stale-static generation"))
        no_rebalance = run.log_lines(r"will not trigger a rebalance")
        skipped = [ln for ln in (out / "s1.2.log").read_text().splitlines() if "Skipped assignment" in ln]
        run.leave("s1.2")
        run.leave("s2")
    union = sorted(p for ps in owned.values() for p in ps)
    evidence.append(f"owned after {watch_s:.0f}s: {json.dumps(owned)} (topic has 6 partitions)")
    evidence.append(f"generations before s1's restart: {generations}, after the wait: {after}")
    evidence += [f"server.log: {ln.strip()[:220]}" for ln in no_rebalance[:1]]
    evidence += [f"s1.2.log: {ln.strip()[:220]}" for ln in skipped[:1]]
    confirmed = bool(no_rebalance) and bool(skipped) and union == [0, 1, 2, 3] and after == generations
    return Replay("static-rejoin-keeps-stale-assignment", confirmed, evidence)


def static_zombie_rejoin(out: Path, watch_s: float) -> Replay:
    """Stall a static cooperative member just after a rebalance begins; resume it after the new generation
    formed without it but before its own poll timer runs out (see the module docstring)."""
    opts = {"max.poll.interval.ms": "8000"}  # the rebalance timeout too
    evidence: list[str] = []
    with BrokerRun(out, group="static-zombie", session_timeout_ms=30000, heartbeat_interval_ms=3000) as run:
        run.produce(8)
        run.join("s1", "java", assignor="cooperative-sticky", **{"group.instance.id": "s1"}, **opts)
        run.join("s2", "java", assignor="cooperative-sticky", **{"group.instance.id": "s2"}, **opts)
        run.wait_stable("s1", "s2", what="two static cooperative members")
        run.wait_consumed()
        before = len(run.log_lines(r"Stabilized group static-zombie generation"))
        run.join("s3", "java", assignor="cooperative-sticky", wait=False, **{"group.instance.id": "s3"}, **opts)
        run.wait_log(r"Preparing to rebalance group static-zombie .*Adding new member s3", "s3's join starting a rebalance")
        run.stall("s1")
        run.wait_log(r"Stabilized group static-zombie generation", "a generation formed without s1",
                     count=before + 1)
        run.produce(8)
        run.resume("s1")
        run.pause(watch_s, "time for s1 to rejoin and the group to settle")
        run.leave("s1")
        run.leave("s2")
        run.leave("s3")
        s1_events = run.members["s1"].events()
        others = run.members["s2"].events() + run.members["s3"].events()
    s1_log = (out / "s1.log").read_text()
    # the heartbeat thread's poll timer ran out first: s1 reset its generation (the model's path was missed)
    reset = "consumer poll timeout has expired" in s1_log
    revoked = [e for e in s1_events if e["name"] == "partitions_revoked" and e.get("partitions")]
    lost = [e for e in s1_events if e["name"] == "partitions_lost" and e.get("partitions")]
    from conformance.kafka.capture import zombie_acts

    acts = zombie_acts(s1_events, others)
    overlap = _overlaps(s1_events, others)
    evidence.append(f"s1 revoked {len(revoked)} time(s), lost {len(lost)} time(s); poll-timeout reset: {reset}")
    evidence += [f"overlap: {o}" for o in overlap[:5]]
    evidence += [f"zombie act: {a}" for a in acts[:5]]
    confirmed = bool(overlap) and bool(revoked) and not reset
    return Replay("static-zombie-rejoin", confirmed, evidence)


def _overlaps(member: list[dict[str, object]], others: list[dict[str, object]]) -> list[str]:
    """Partitions another member was given while ``member`` still held them (by the traces' timestamps)."""
    held: dict[tuple[str, int], int] = {}
    spans: list[tuple[tuple[str, int], int, int]] = []
    for ev in member:
        tps = {(p["topic"], p["partition"]) for p in ev.get("partitions", ())}  # type: ignore[union-attr]
        if ev["name"] == "partitions_assigned":
            for tp in tps:
                held.setdefault(tp, int(ev["timestamp"]))  # type: ignore[arg-type]
        elif ev["name"] in ("partitions_revoked", "partitions_lost") or ev["name"] == "shutdown_complete":
            for tp in (tps if ev["name"] != "shutdown_complete" else set(held)):
                if tp in held:
                    spans.append((tp, held.pop(tp), int(ev["timestamp"])))  # type: ignore[arg-type]
    found: list[str] = []
    for ev in others:
        if ev["name"] != "partitions_assigned":
            continue
        for p in ev.get("partitions", ()):  # type: ignore[union-attr]
            tp = (p["topic"], p["partition"])
            t = int(ev["timestamp"])  # type: ignore[arg-type]
            for span_tp, start, end in spans:
                if span_tp == tp and start < t < end:
                    found.append(f"{tp[0]}-{tp[1]} given to {ev.get('member')} at {t} while s1 held it "
                                 f"({start}..{end}, {end - t} ms)")
    return found


REPLAYS: dict[str, Callable[[Path, float], Replay]] = {
    "static-rejoin-keeps-stale-assignment": static_rejoin_keeps_stale_assignment,
    "static-zombie-rejoin": static_zombie_rejoin,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.kafka.findings",
                                     description="replay a finding of the model on the real broker")
    parser.add_argument("finding", choices=sorted(REPLAYS))
    parser.add_argument("--out", type=Path, required=True, help="where the run's traces and logs are kept")
    parser.add_argument("--watch", type=float, default=15.0, help="seconds to watch for the model's outcome")
    args = parser.parse_args(argv)
    try:
        replay = REPLAYS[args.finding](args.out, args.watch)
    except KafkaUnavailable as exc:
        print(f"groupspec: {exc}", file=sys.stderr)
        return 2
    print(f"{replay.name}: {'confirmed' if replay.confirmed else 'REFUTED'} on Apache Kafka (evidence in {args.out})")
    for line in replay.evidence:
        print(f"  {line}")
    return 0 if replay.confirmed else 1


if __name__ == "__main__":
    sys.exit(main())
