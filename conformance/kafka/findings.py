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
    partitions 0-3 only, with no new generation. A control follows: the topic grows to 8 and the leader,
    whose snapshot now says 6, rejoins; every partition gets an owner through that rebalance.
    Confirmed on 4.1.1 (docs/kafka-broker.md has the run's evidence).

``static-zombie-rejoin``
    The model: a static cooperative member whose application stalls just after a rebalance begins is kept
    by the coordinator (``completeClassicGroupJoin`` removes only *dynamic* members that did not rejoin) but
    left out of the new generation; if it polls again after that generation formed and before its own poll
    timer expires (then the heartbeat thread would reset its generation), it rejoins with its old
    generation and *revokes* partitions another member was given meanwhile (those its last JoinGroup did not
    claim). The replay follows examples/scenario-static-zombie.json: static s1 and dynamic d2
    (cooperative-sticky, ``max.poll.interval.ms=8000``, heartbeats every 6 s so s1 learns of a rebalance
    late); d2 leaves (s1 rejoins claiming half and is given everything); d3 joins; 2.5 s after server.log
    shows that rebalance starting, s1's application thread stalls (the heartbeat thread goes on); when the
    next generation has formed, it resumes. Confirmed when another
    member was given a partition while s1 still held it, s1 later revoked (not lost) it, and s1's poll
    timer never fired. The timing window is narrow (the stall must begin before s1's next poll notices the
    rebalance): a run that misses it says so in its evidence.

``load-forgets-generation``
    The model: a generation formed but not yet stored (the leader's SyncGroup not yet handled) is forgotten
    when the coordinator moves: the new one loads the last stored group record
    (``completeClassicGroupJoin`` writes none unless the group is empty), the generation goes back and the
    next rebalance reuses the number. The replay: m1 (the leader, ``HoldingRangeAssignor`` via
    ``-X groupspec.hold.file``) and m2 stable; the hold file is created and m3 joins; once m1 is inside its
    assignor (the generation formed), the broker is SIGKILLed and restarted, then m1 is released.
    Confirmed when the generation formed during the hold is stabilized again after the reload.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from conformance.drivers.process import wait_until
from conformance.kafka.jars import KafkaUnavailable
from conformance.kafka.run import BrokerRun
from model.types import TopicPartition


@dataclass
class Replay:
    name: str
    confirmed: bool
    evidence: list[str] = field(default_factory=list)
    missed: bool = False  # the run did not reach the situation the finding is about (a timing window)


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
        run.add_partitions(6)
        run.join("s1", "java", assignor="range", **{"group.instance.id": "s1"}, **opts)
        wait_until(lambda: run.owned("s1.2") | run.owned("s2") == {TopicPartition(run.topic, p) for p in range(4)},
                   run.wait_timeout_s, "s1 back in its old place (partitions 0-3)")
        run.pause(watch_s, "time for both members to refresh their metadata many times")
        owned = {m: sorted(tp.partition for tp in run.owned(m)) for m in ("s1.2", "s2")}
        after = len(run.log_lines(r"Stabilized group stale-static generation"))
        no_rebalance = run.log_lines(r"will not trigger a rebalance")
        skipped = [ln for ln in (out / "s1.2.log").read_text().splitlines() if "Skipped assignment" in ln]
        # Control: growing the topic again now is a metadata change the leader does see (its snapshot is
        # of 6 partitions): it rejoins, and partitions 4 and 5 get an owner only through that rebalance.
        run.add_partitions(8)
        control = run.wait_stable("s1.2", "s2", what="the control: all 8 partitions owned after a rebalance")
        run.leave("s1.2")
        run.leave("s2")
    union = sorted(p for ps in owned.values() for p in ps)
    evidence.append("control, the topic grown to 8 afterwards: the leader rejoined and "
                    f"{json.dumps({m: sorted(tp.partition for tp in tps) for m, tps in control.items()})}")
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
    with BrokerRun(out, group="static-zombie", session_timeout_ms=30000, heartbeat_interval_ms=6000) as run:
        run.produce(8)
        run.join("s1", "java", assignor="cooperative-sticky", **{"group.instance.id": "s1"}, **opts)
        run.join("d2", "java", assignor="cooperative-sticky", **opts)
        run.wait_stable("s1", "d2", what="s1 (static) and d2 sharing")
        # d2 leaves: s1 rejoins claiming its half and is then given everything -- the coordinator's copy
        # of s1's subscription (from that JoinGroup) now claims less than s1 owns
        run.leave("d2")
        run.wait_stable("s1", what="s1 alone, owning everything")
        run.wait_consumed()
        before = len(run.log_lines(r"Stabilized group static-zombie generation"))
        run.join("d3", "java", assignor="cooperative-sticky", wait=False, **opts)
        run.wait_log(r"Preparing to rebalance group static-zombie .*Adding new member d3", "d3's join starting a rebalance")
        # s1 must go on polling for a while inside the rebalance without noticing it (its heartbeats are 6 s
        # apart): its poll timer then runs out that much after the coordinator's rebalance timeout.
        run.pause(2.5, "s1 keeps polling, unaware of the rebalance")
        run.stall("s1")
        run.wait_log(r"Stabilized group static-zombie generation", "a generation formed without s1",
                     count=before + 1)
        run.resume("s1")  # at once: s1 must poll before its next heartbeat (6 s apart) says it is stale
        run.produce(8)
        run.pause(watch_s, "time for s1 to rejoin and the group to settle")
        run.leave("s1")
        run.leave("d3")
        s1_events = run.members["s1"].events()
        others = run.members["d2"].events() + run.members["d3"].events()
    s1_log = (out / "s1.log").read_text()
    # the heartbeat thread's poll timer ran out first: s1 reset its generation (the model's path was missed)
    reset = "consumer poll timeout has expired" in s1_log
    from conformance.kafka.capture import zombie_acts

    acts = zombie_acts(s1_events, others)
    overlap = _overlaps(s1_events, others)
    ends = {end for _, end in overlap}
    told = [ln for ln in s1_log.splitlines() if "ILLEGAL_GENERATION from HEARTBEAT" in ln]
    evidence.append(f"poll-timeout reset: {reset}; a heartbeat told s1 it was stale first: {bool(told)}")
    evidence += [f"overlap: {o}" for o, _ in overlap[:5]]
    evidence += [f"zombie act: {a}" for a in acts[:5]]
    evidence += [f"s1.log: {ln.strip()[:200]}" for ln in told[:1]]
    confirmed = bool(overlap) and ends == {"partitions_revoked"} and not reset
    # A heartbeat (or the poll timer) reaching s1 before its poll is the path the model says ends in
    # partitions_lost: the run did not reach the situation the finding is about.
    missed = not confirmed and (reset or bool(told) or not overlap)
    return Replay("static-zombie-rejoin", confirmed, evidence, missed=missed)


def _overlaps(member: list[dict[str, object]], others: list[dict[str, object]]) -> list[tuple[str, str]]:
    """Partitions another member was given while ``member`` still held them (by the traces' timestamps),
    each with the name of the event that ended ``member``'s holding."""
    held: dict[tuple[str, int], int] = {}
    spans: list[tuple[tuple[str, int], int, int, str]] = []
    for ev in member:
        tps = {(p["topic"], p["partition"]) for p in ev.get("partitions", ())}  # type: ignore[union-attr]
        if ev["name"] == "partitions_assigned":
            for tp in tps:
                held.setdefault(tp, int(ev["timestamp"]))  # type: ignore[arg-type]
        elif ev["name"] in ("partitions_revoked", "partitions_lost") or ev["name"] == "shutdown_complete":
            for tp in (tps if ev["name"] != "shutdown_complete" else set(held)):
                if tp in held:
                    spans.append((tp, held.pop(tp), int(ev["timestamp"]), str(ev["name"])))  # type: ignore[arg-type]
    found: list[tuple[str, str]] = []
    for ev in others:
        if ev["name"] != "partitions_assigned":
            continue
        for p in ev.get("partitions", ()):  # type: ignore[union-attr]
            tp = (p["topic"], p["partition"])
            t = int(ev["timestamp"])  # type: ignore[arg-type]
            for span_tp, start, end, how in spans:
                if span_tp == tp and start < t < end:
                    found.append((f"{tp[0]}-{tp[1]} given to {ev.get('member')} at {t} while s1 held it "
                                  f"({start}..{end}, {end - t} ms, then {how})", how))
    return found


def load_forgets_generation(out: Path, watch_s: float) -> Replay:
    """Crash the coordinator while a formed generation waits for its leader's SyncGroup (module docstring)."""
    evidence: list[str] = []
    group = "load-forgets"
    with BrokerRun(out, group=group, session_timeout_ms=30000) as run:
        hold = run.out_dir / "leader.hold"
        run.produce(8)
        run.join("m1", "java", assignor="range", **{"groupspec.hold.file": str(hold)})
        run.join("m2", "java", assignor="range")
        run.wait_stable("m1", "m2", what="m1 (the leader) and m2")
        stored = run.log_lines(rf"Stabilized group {group} generation")
        hold.touch()
        run.note("leader_held", file=hold.name)
        run.join("m3", "java", assignor="range", wait=False)
        wait_until(lambda: Path(f"{hold}.inside").exists(), run.wait_timeout_s,
                   "the leader to be held inside its assignor (a generation formed, its SyncGroup not sent)")
        formed = run.log_lines(rf"Stabilized group {group} generation")[-1]
        run.note("leader_inside_assign", line=formed[:200])
        run.restart_broker(hard=True)  # the new generation lived only in the coordinator's memory
        run.wait_log(rf"Loaded classic group {group}", "the group loaded from __consumer_offsets")
        hold.unlink()
        run.note("leader_released")
        run.wait_stable("m1", "m2", "m3", what="three members after the reload")
        run.pause(watch_s / 3, "the group settles")
        lines = run.log_lines(rf"Stabilized group {group} generation|Loaded classic group {group}|"
                              rf"{group}.*(ILLEGAL_GENERATION|UNKNOWN_MEMBER_ID)")
        run.leave("m1")
        run.leave("m2")
        run.leave("m3")
    gens = [int(ln.split(" generation ")[1].split()[0]) for ln in lines if "Stabilized group" in ln]
    formed_gen = int(formed.split(" generation ")[1].split()[0])
    after = gens[len(stored) + 1:]
    evidence.append(f"generations stabilized, in order: {gens} (stored before the hold: {len(stored)}; formed while "
                    f"the leader was held: {formed_gen}; after the reload: {after})")
    evidence += [f"server.log: {ln.strip()[:200]}" for ln in lines if "Loaded classic group" in ln][:1]
    clients = [ln for m in ("m1", "m2", "m3") for ln in (out / f"{m}.log").read_text().splitlines()
               if "ILLEGAL_GENERATION" in ln or "UNKNOWN_MEMBER_ID" in ln]
    evidence += [f"client log: {ln.strip()[:200]}" for ln in clients[:2]]
    confirmed = formed_gen in after  # the number was handed out again after the reload
    return Replay("load-forgets-generation", confirmed, evidence)


REPLAYS: dict[str, Callable[[Path, float], Replay]] = {
    "load-forgets-generation": load_forgets_generation,
    "static-rejoin-keeps-stale-assignment": static_rejoin_keeps_stale_assignment,
    "static-zombie-rejoin": static_zombie_rejoin,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.kafka.findings",
                                     description="replay a finding of the model on the real broker")
    parser.add_argument("finding", choices=sorted(REPLAYS))
    parser.add_argument("--out", type=Path, required=True, help="where the run's traces and logs are kept")
    parser.add_argument("--watch", type=float, default=15.0, help="seconds to watch for the model's outcome")
    parser.add_argument("--attempts", type=int, default=3, help="runs allowed to miss a timing window")
    args = parser.parse_args(argv)
    for attempt in range(1, args.attempts + 1):
        out = args.out if attempt == 1 else args.out.with_name(f"{args.out.name}.{attempt}")
        try:
            replay = REPLAYS[args.finding](out, args.watch)
        except KafkaUnavailable as exc:
            print(f"groupspec: {exc}", file=sys.stderr)
            return 2
        verdict = "confirmed" if replay.confirmed else "window missed" if replay.missed else "REFUTED"
        print(f"{replay.name}: {verdict} on Apache Kafka (attempt {attempt}, evidence in {out})", flush=True)
        for line in replay.evidence:
            print(f"  {line}", flush=True)
        if not replay.missed:
            return 0 if replay.confirmed else 1
    print(f"groupspec: {args.finding}: every attempt missed the timing window; nothing is established", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
