"""Capture real runs on Apache Kafka: the samples under tests/traces/samples/kafka-4.1.1, each with its verdict.

``python -m conformance.kafka.capture --out tests/traces/samples/kafka-4.1.1`` runs every case (``--only
NAME`` picks some; ``--list`` names them) on a broker of its own (:class:`~conformance.kafka.run.BrokerRun`)
and writes one directory per case:

- ``server.log``: the broker's log (the coordinator's; GroupMetadataManager and OffsetMetadataManager at
  DEBUG), exactly as the broker wrote it;
- ``<member>.jsonl`` and ``<member>.log``: what each member's driver wrote (groupspec trace events; for
  Kafka's VerifiableConsumer its stdout exactly as printed) and its client's own log; a member started
  again gets ``<member>.2.jsonl`` / ``.log``;
- ``producer-N.out``: Kafka's VerifiableProducer output for each batch of records (not a consumer);
- ``scenario.json``: the configuration and the timeline of steps (wall-clock ms);
- ``expected.json``: the verdict a correct checker gives on these files, per invariant with the reason
  (shape in docs/kafka-broker.md); ``README.md``: what the case shows.

The verdicts are not the checker's output: each case states what it makes happen, the run checks that it did
happen (the broker log lines and trace events that justify the verdict; a case whose run did not go as
designed fails instead of writing a sample), and where the outcome depends on timing (did a thawed zombie
consume before it learnt it was out?) the verdict is decided from the traces by the case's own rule.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.kafka.jars import DEFAULT_VERSION, KafkaUnavailable
from conformance.kafka.run import BrokerRun

HELD = "held"
VIOLATION = "violation"
UNCHECKED = "unchecked"

Expected = dict[str, dict[str, str]]


@dataclass
class Outcome:
    """What a case's scenario function returns: the per-invariant verdicts that depend on the run."""

    invariants: Expected = field(default_factory=dict)
    allowed_warnings: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Case:
    name: str
    summary: str
    scenario: Callable[[BrokerRun], Outcome]
    base: Callable[[], Expected]
    session_timeout_ms: int = 3000


def _why(verdict: str, why: str) -> dict[str, str]:
    return {"expected": verdict, "why": why}


# --------------------------------------------------------------------------------------------------
# What Kafka guarantees on every run here, and what the files can show
# --------------------------------------------------------------------------------------------------

KAFKA_CORRECT = ("Apache Kafka {v} ran this scenario with no fault but the ones the case injects; "
                 "its group coordinator and clients are the reference, so nothing it did breaks the invariant")


def safety_held(*, generations: bool, protocol: str, explicit_commits: bool, subscription: bool) -> Expected:
    """The invariants every correct run holds, with what a checker can see of them in these files."""
    v = DEFAULT_VERSION
    base = KAFKA_CORRECT.format(v=v)
    exp: Expected = {
        "single-owner": _why(HELD, f"{base}: each partition changed hands through a revocation, a clean leave, "
                                   "or the expiry of a killed member's session (a zombie owns nothing it acts on)"),
        "consume-owned-only": _why(HELD, f"{base}: a consumer fetches only from its current assignment"),
        "monotonic-consumption": _why(HELD, f"{base}: positions only move forward within an assignment"),
        # VerifiableConsumer's stdout has neither, but each one's client log (m<N>.log, beside m<N>.jsonl)
        # does: whether a checker pairs them is its call.
        "subscribed-only": _why(HELD if subscription else UNCHECKED + "-or-held",
                                "every member subscribed to the one topic it was assigned" if subscription else
                                "VerifiableConsumer output does not say what it subscribed to, but its client "
                                "log does: 'Subscribed to topic(s): orders'"),
        "generation-monotonic": _why(HELD if generations else UNCHECKED + "-or-held",
                                     "the Java client's generation only grows within a process" if generations else
                                     "VerifiableConsumer output carries no generation, but each consumer's own "
                                     "client log (m<N>.log, paired with m<N>.jsonl by name) does: 'Successfully "
                                     "joined group with generation ...'"),
    }
    if explicit_commits:
        exp["commit-owned-only"] = _why(HELD, f"{base}: commitSync of an owned partition right after consuming it")
        exp["committed-not-ahead"] = _why(HELD, "each commit is maxOffset + 1 of records just consumed")
        exp["no-gap"] = _why(HELD, "a new owner starts at the committed offset, which is the previous owner's "
                                   "position; no record is skipped")
    if protocol == "eager":
        exp["eager-revoke-all"] = _why(HELD, "the eager Java / librdkafka / kafka-python clients revoke "
                                             "everything before joining the next generation")
    if protocol == "cooperative":
        exp["revoke-before-assign"] = _why(HELD if generations else UNCHECKED,
                                           "CooperativeStickyAssignor assigns a moved partition only in the "
                                           "generation after its revocation" if generations else
                                           "needs generations, which the files do not carry")
        exp["revoke-only-moved"] = _why(HELD if generations else UNCHECKED,
                                        "a cooperative member revokes only what the leader moved away"
                                        if generations else "needs generations")
    return exp


def java_eager() -> Expected:
    return safety_held(generations=True, protocol="eager", explicit_commits=True, subscription=True)


def java_cooperative() -> Expected:
    return safety_held(generations=True, protocol="cooperative", explicit_commits=True, subscription=True)


# --------------------------------------------------------------------------------------------------
# The cases
# --------------------------------------------------------------------------------------------------

EXPIRED = r"Member {id} in group {group} has failed, removing it from the group"
LEFT = r"has left group through explicit `LeaveGroup` request"


def _member_id(run: BrokerRun, member: str) -> str:
    for ev in reversed(run.members[member].events()):
        if ev.get("member_id"):
            return str(ev["member_id"])
    raise AssertionError(f"{member} wrote no member_id")


def zombie_acts(zombie: list[dict[str, Any]], new_owner: list[dict[str, Any]]) -> list[str]:
    """What ``zombie`` did with partitions another member was given while the zombie still held them.

    The rule of ``single-owner`` (traces/checker.py): a zombie's overlap is allowed unless it consumed
    from, or successfully committed, a partition after the new owner got it. A partition counts when the
    new owner was given it *during* the zombie's current holding (after the zombie's assignment of it, at
    or before the act); a partition the zombie was given back later is its own again. Returns one line per
    such act (empty when there is none).
    """
    given: dict[tuple[str, int], list[int]] = {}
    for ev in new_owner:
        if ev.get("name") == "partitions_assigned":
            for p in ev.get("partitions", ()):
                given.setdefault((p["topic"], p["partition"]), []).append(ev["timestamp"])
    acts: list[str] = []
    held_since: dict[tuple[str, int], int] = {}
    for ev in zombie:
        name = ev.get("name")
        tps = {(p["topic"], p["partition"]) for p in ev.get("partitions", ev.get("offsets", ())) if "topic" in p}
        if name == "partitions_assigned":
            for tp in tps:
                held_since.setdefault(tp, ev["timestamp"])
        elif name in ("partitions_revoked", "partitions_lost"):
            for tp in tps:
                held_since.pop(tp, None)
        elif name == "shutdown_complete":
            held_since.clear()
        elif name in ("records_consumed", "offsets_committed"):
            if name == "offsets_committed" and not ev.get("success"):
                continue
            late = sorted(tp for tp in tps if tp in held_since
                          and any(held_since[tp] < t <= ev["timestamp"] for t in given.get(tp, ())))
            if late:
                acts.append(f"{name} at {ev['timestamp']} on {', '.join(f'{t}-{p}' for t, p in late)}")
    return acts


def _single_owner_by_zombie_rule(out: Outcome, zombie: str, acts: list[str], new_owner: str) -> None:
    if acts:
        out.invariants["single-owner"] = _why(
            VIOLATION, f"the zombie {zombie} acted on partitions {new_owner} had already been given: "
                       f"{'; '.join(acts)} -- Kafka allows it (fencing is at commit), the invariant does not")
    else:
        out.facts.append(f"{zombie} neither consumed nor committed a partition after {new_owner} was given it")
        out.invariants["single-owner"] = _why(
            HELD, f"{zombie} overlapped {new_owner} only as a zombie that did nothing with the partitions "
                  "(a zombie-overlap warning at most)")


def _leave_kill(run: BrokerRun, client: str, assignor: str, **options: str) -> Outcome:
    """Three members; m1 leaves cleanly, m2 is killed, m3 takes everything and leaves."""
    run.produce(8)
    run.join("m1", client, assignor=assignor, **options)
    run.wait_stable("m1", what="m1 alone")
    run.join("m2", client, assignor=assignor, **options)
    run.join("m3", client, assignor=assignor, **options)
    run.wait_stable("m1", "m2", "m3", what="three members")
    run.wait_consumed()
    run.leave("m1")
    run.wait_log(LEFT, "m1's LeaveGroup")
    run.wait_stable("m2", "m3", what="after m1 left")
    run.produce(8)
    run.wait_consumed()
    run.kill("m2")
    run.wait_log("has failed, removing it from the group", "m2's session expiring")
    run.wait_stable("m3", what="m3 alone after m2's session expired")
    run.produce(4)
    run.wait_consumed()
    run.leave("m3")
    run.wait_log("is now empty", "the group empty")
    return Outcome(allowed_warnings=["zombie-overlap"],
                   facts=["m1 left with LeaveGroup", "m2 was SIGKILLed and removed on session expiry",
                          "m3 left last; the group is empty"])


def case_java_eager(run: BrokerRun) -> Outcome:
    return _leave_kill(run, "java", "range")


def case_java_cooperative(run: BrokerRun) -> Outcome:
    return _leave_kill(run, "java", "cooperative-sticky")


def case_java_autocommit(run: BrokerRun) -> Outcome:
    out = _leave_kill(run, "java", "range", **{"enable.auto.commit": "true", "auto.commit.interval.ms": "500"})
    # with auto-commit the trace has no offsets_committed: the commits are in server.log only
    commits = run.log_lines(r"Committing offsets .* from member")
    if not commits:
        raise AssertionError("server.log shows no auto-commit")
    out.facts.append(f"server.log shows {len(commits)} offset commits (OffsetMetadataManager DEBUG); "
                     "the members' traces show none")
    out.invariants.update({
        "no-gap": _why(UNCHECKED + "-or-held",
                       "auto-commits are invisible in the traces (no offsets_committed), so where a new owner started "
                       "cannot be compared with a commit from the traces alone; nothing was skipped: each new "
                       "owner resumed from the last auto-commit, at or before the old owner's position"),
        "committed-not-ahead": _why(UNCHECKED + "-or-held", "no commit is in the traces; the auto-commits in "
                                    "server.log are of positions already consumed"),
        "commit-owned-only": _why(UNCHECKED + "-or-held", "no commit is in the traces"),
    })
    return out


def case_vc_eager(run: BrokerRun) -> Outcome:
    return _leave_kill(run, "verifiable-consumer", "range")


def case_vc_autocommit(run: BrokerRun) -> Outcome:
    out = _leave_kill(run, "verifiable-consumer", "range", **{"enable.auto.commit": "true"})
    out.invariants.update({
        "no-gap": _why(UNCHECKED + "-or-held",
                       "VerifiableConsumer with --enable-autocommit prints no offsets_committed: no commit to compare "
                       "a new owner's first offset with; no record was skipped (each owner resumed from the last "
                       "auto-commit)"),
        "committed-not-ahead": _why(UNCHECKED + "-or-held", "no commit is in the output"),
        "commit-owned-only": _why(UNCHECKED + "-or-held", "no commit is in the output"),
    })
    return out


def case_mixed(run: BrokerRun) -> Outcome:
    """A Java, a librdkafka and a kafka-python member in one eager range group."""
    run.produce(8)
    run.join("java-1", "java", assignor="range")
    run.join("librdkafka-1", "confluent-kafka", assignor="range")
    run.join("kafka-python-1", "kafka-python", assignor="range", api_version="auto")
    run.wait_stable("java-1", "librdkafka-1", "kafka-python-1", what="three clients")
    run.wait_consumed()
    run.leave("librdkafka-1")
    run.wait_log(LEFT, "librdkafka-1's LeaveGroup")
    run.wait_stable("java-1", "kafka-python-1", what="after librdkafka-1 left")
    run.produce(8)
    run.wait_consumed()
    run.kill("java-1")
    run.wait_log("has failed, removing it from the group", "java-1's session expiring")
    run.wait_stable("kafka-python-1", what="kafka-python-1 alone")
    run.produce(4)
    run.wait_consumed()
    run.leave("kafka-python-1")
    run.wait_log("is now empty", "the group empty")
    return Outcome(allowed_warnings=["zombie-overlap"],
                   facts=["librdkafka-1 left with LeaveGroup", "java-1 was SIGKILLed and expired",
                          "kafka-python-1 left last"])


def case_static_restart(run: BrokerRun) -> Outcome:
    """Static members; s1 is closed and started again with the same instance id within its session."""
    run.produce(8)
    run.join("s1", "java", assignor="range", **{"group.instance.id": "s1"})
    run.join("s2", "java", assignor="range", **{"group.instance.id": "s2"})
    run.wait_stable("s1", "s2", what="two static members")
    run.wait_consumed()
    generation_before = run.log_lines(r"Stabilized group static-restart generation")
    run.leave("s1")  # a static member's close sends no LeaveGroup (KIP-345): its session keeps its place
    run.join("s1", "java", assignor="range", **{"group.instance.id": "s1"})
    run.wait_stable("s1.2", "s2", what="s1 back with its old assignment")
    run.produce(8)
    run.wait_consumed()
    generation_after = run.log_lines(r"Stabilized group static-restart generation")
    if len(generation_after) != len(generation_before):
        raise AssertionError("the static rejoin caused a rebalance; the case expects none")
    if not run.log_lines(r"Static member with groupInstanceId=s1 .* Replacing previously mapped member") or \
            not run.log_lines(r"will not trigger a rebalance"):
        raise AssertionError("server.log does not show s1's static rejoin without a rebalance")
    run.leave("s1.2")
    run.leave("s2")
    out = Outcome(facts=[f"s1 closed (no LeaveGroup: static) and came back as s1.2 within its "
                         f"{run.session_timeout_ms // 1000} s session",
                         "server.log: 'Replacing previously mapped member ... with this groupInstanceId' and 'Static "
                         "member which joins during Stable stage and doesn't affect the selected protocol will not "
                         "trigger a rebalance'; no new generation",
                         "s1.2 and s2 closed at the end without LeaveGroup (static): the group is not empty when the "
                         "broker stops"])
    out.invariants["static-rejoin"] = _why(HELD, "the coordinator replaced s1's member id and gave s1.2 s1's "
                                                 "assignment without a rebalance (no new 'Stabilized' line)")
    out.invariants["converges"] = _why(HELD, "two generations in all; nothing else happened")
    return out


def case_static_fenced(run: BrokerRun) -> Outcome:
    """A second process starts with s1's instance id while s1 runs: the old one is fenced."""
    run.produce(8)
    run.join("s1", "java", assignor="range", **{"group.instance.id": "s1"})
    run.join("s2", "java", assignor="range", **{"group.instance.id": "s2"})
    run.wait_stable("s1", "s2", what="two static members")
    run.wait_consumed()
    run.join("dup", "java", assignor="range", **{"group.instance.id": "s1"})
    old = run.members["s1"]
    from conformance.drivers.process import wait_until

    wait_until(lambda: not old.alive, run.wait_timeout_s, "the fenced s1 to exit")
    run.note("ended", member="s1", exit_code=old.proc.returncode)
    run.wait_stable("dup", "s2", what="dup in s1's place")
    run.produce(8)
    run.wait_consumed()
    fenced = any("FencedInstanceId" in line or "FENCED_INSTANCE_ID" in line
                 for line in (run.out_dir / "s1.log").read_text().splitlines())
    if not fenced:
        raise AssertionError("s1's log does not show it was fenced")
    s1_events = run.members["s1"].events()
    shutdown = [e for e in s1_events if e.get("name") == "shutdown_complete"]
    run.leave("dup")
    run.leave("s2")
    out = Outcome(allowed_warnings=["zombie-overlap"],
                  facts=["dup joined with instance id s1; the coordinator gave it s1's place",
                         "s1 got FENCED_INSTANCE_ID (its log) and exited"
                         + (" writing shutdown_complete failed=true" if shutdown else "")],
                  invariants={"static-rejoin": _why(HELD, "the replacement of s1 by dup is a static rejoin; "
                                                          "Kafka handled it as KIP-345 says")})
    _single_owner_by_zombie_rule(out, "s1", zombie_acts(s1_events, run.members["dup"].events()), "dup")
    return out


def case_static_expired(run: BrokerRun) -> Outcome:
    """A static member frozen (SIGSTOP) longer than its session is removed; thawed, it is a zombie."""
    run.produce(8)
    run.join("s1", "java", assignor="range", **{"group.instance.id": "s1"})
    run.join("s2", "java", assignor="range", **{"group.instance.id": "s2"})
    run.wait_stable("s1", "s2", what="two static members")
    run.wait_consumed()
    s1_id = _member_id(run, "s1")
    run.freeze("s1")
    run.wait_log(EXPIRED.format(id=s1_id, group=run.group), "s1's session expiring while frozen")
    run.wait_stable("s2", what="s2 alone")
    run.produce(8)
    run.wait_consumed()
    thawed_at = int(time.time() * 1000)
    run.thaw("s1")
    run.wait_stable("s1", "s2", what="s1 back after the thaw")
    run.produce(4)
    run.wait_consumed()
    run.leave("s1")
    run.leave("s2")
    out = Outcome(allowed_warnings=["zombie-overlap"],
                  facts=[f"s1 ({s1_id}) was SIGSTOPped and removed on session expiry while frozen",
                         f"s2 owned everything; s1 was thawed at {thawed_at} and rejoined (same instance id)"])
    _single_owner_by_zombie_rule(out, "s1", zombie_acts(run.members["s1"].events(), run.members["s2"].events()),
                                 "s2")
    return out


def case_stall(run: BrokerRun) -> Outcome:
    """The Java application thread stalls past max.poll.interval.ms while the heartbeat thread goes on."""
    opts = {"max.poll.interval.ms": "4000"}
    run.produce(8)
    run.join("m1", "java", assignor="cooperative-sticky", **opts)
    run.join("m2", "java", assignor="cooperative-sticky", **opts)
    run.wait_stable("m1", "m2", what="two members")
    run.wait_consumed()
    run.stall("m1")
    run.wait_log(LEFT + r".*consumer poll timeout has expired", "m1 leaving on its poll timeout")
    run.wait_stable("m2", what="m2 alone while m1 is stalled")
    run.produce(8)
    run.wait_consumed()
    run.resume("m1")
    run.wait_stable("m1", "m2", what="m1 back after the stall")
    run.produce(4)
    run.wait_consumed()
    run.leave("m1")
    run.leave("m2")
    lost = [e for e in run.members["m1"].events() if e.get("name") == "partitions_lost"]
    out = Outcome(allowed_warnings=["zombie-overlap"],
                  facts=["m1's heartbeat thread sent LeaveGroup with reason 'consumer poll timeout has expired' "
                         "while its application thread was stalled",
                         f"m1 reported partitions_lost {len(lost)} time(s) when it polled again"])
    _single_owner_by_zombie_rule(out, "m1", zombie_acts(run.members["m1"].events(), run.members["m2"].events()),
                                 "m2")
    return out


def case_consumer_protocol(run: BrokerRun) -> Outcome:
    """KIP-848: three Java members with group.protocol=consumer; one leaves, one is killed."""
    opts = {"group.protocol": "consumer"}
    run.produce(8)
    run.join("c1", "java", assignor="uniform", **opts)
    run.wait_stable("c1", what="c1 alone")
    run.join("c2", "java", assignor="uniform", **opts)
    run.join("c3", "java", assignor="uniform", **opts)
    run.wait_stable("c1", "c2", "c3", what="three members")
    run.wait_consumed()
    run.leave("c1")
    run.wait_log(r"\[GroupId consumer-protocol\] Member .* left the consumer group", "c1 leaving")
    run.wait_stable("c2", "c3", what="after c1 left")
    run.produce(8)
    run.wait_consumed()
    run.kill("c2")
    run.wait_log(r"expired|fenced", "c2's session expiring")
    run.wait_stable("c3", what="c3 alone")
    run.produce(4)
    run.wait_consumed()
    run.leave("c3")
    out = Outcome(allowed_warnings=["zombie-overlap"],
                  facts=["c1 left (heartbeat with epoch -1)", "c2 was SIGKILLed; the broker's 6 s session expired it",
                         "c3 left last"])
    out.invariants["revoke-before-assign"] = _why(HELD, "KIP-848: the coordinator gives a partition to a new owner "
                                                        "only after the old one acknowledged its revocation")
    out.invariants["converges"] = _why(UNCHECKED + "-or-held", "the catalogue's rebalance bound is for the classic "
                                       "protocol; KIP-848 has no generation-wide rebalance")
    return out


def case_broker_restart(run: BrokerRun) -> Outcome:
    """Two Java members ride through a clean broker restart (the coordinator unloads and loads the group)."""
    run.produce(8)
    run.join("m1", "java", assignor="range")
    run.join("m2", "java", assignor="range")
    run.wait_stable("m1", "m2", what="two members")
    run.wait_consumed()
    run.restart_broker()
    run.wait_log(r"Loaded classic group broker-restart", "the group loaded again")
    run.produce(8)
    run.wait_consumed()
    run.wait_stable("m1", "m2", what="both members after the restart")
    run.leave("m1")
    run.leave("m2")
    return Outcome(facts=["the broker stopped (controlled shutdown) and started again on the same ports",
                          "server.log shows the group loaded again ('Loaded classic group')",
                          "both members reconnected and went on consuming"])


CASES: tuple[Case, ...] = (
    Case("java-eager", "Java consumers, eager (range): a clean leave, a SIGKILL, a last leave.",
         case_java_eager, java_eager),
    Case("java-cooperative", "Java consumers, cooperative-sticky: a clean leave, a SIGKILL, a last leave.",
         case_java_cooperative, java_cooperative),
    Case("java-autocommit", "Java consumers with enable.auto.commit=true (500 ms): leave, SIGKILL, leave.",
         case_java_autocommit, java_eager),
    Case("vc-eager", "Kafka's VerifiableConsumer (range, explicit commits): leave, SIGKILL, leave.",
         case_vc_eager, lambda: safety_held(generations=False, protocol="eager", explicit_commits=True,
                                            subscription=False)),
    Case("vc-autocommit", "Kafka's VerifiableConsumer with --enable-autocommit: leave, SIGKILL, leave.",
         case_vc_autocommit, lambda: safety_held(generations=False, protocol="eager", explicit_commits=True,
                                                 subscription=False)),
    Case("mixed", "One group of a Java, a librdkafka (confluent-kafka) and a kafka-python consumer (range).",
         case_mixed, java_eager),
    Case("static-restart", "Static members (group.instance.id); one restarted within its session.",
         case_static_restart, java_eager, session_timeout_ms=6000),
    Case("static-fenced", "A duplicate group.instance.id fences the running static member.",
         case_static_fenced, java_eager),
    Case("static-expired", "A static member frozen by SIGSTOP past its session, then thawed (a zombie).",
         case_static_expired, java_eager),
    Case("stall", "The Java application thread stalls past max.poll.interval.ms; the heartbeat thread goes on.",
         case_stall, java_cooperative),
    Case("consumer-protocol", "KIP-848 group.protocol=consumer: a leave, a SIGKILL, a last leave.",
         case_consumer_protocol,
         lambda: safety_held(generations=True, protocol="consumer", explicit_commits=True, subscription=True)),
    Case("broker-restart", "Two Java members (range) while the broker restarts.", case_broker_restart, java_eager),
)


# --------------------------------------------------------------------------------------------------
# Writing a case
# --------------------------------------------------------------------------------------------------


def expected_doc(case: Case, outcome: Outcome) -> dict[str, Any]:
    invariants = case.base()
    invariants.update(outcome.invariants)
    verdicts = {v["expected"] for v in invariants.values()}
    verdict = VIOLATION if VIOLATION in verdicts else HELD
    return {
        "case": case.name,
        "kafka": DEFAULT_VERSION,
        "summary": case.summary,
        "verdict": verdict,
        "allowed_warnings": sorted(outcome.allowed_warnings),
        "invariants": dict(sorted(invariants.items())),
        "facts": outcome.facts,
    }


def readme(case: Case, doc: dict[str, Any], out: Path) -> str:
    files = sorted(p.name for p in out.iterdir() if p.is_file() and p.name != "README.md")
    lines = [f"# {case.name}", "", case.summary, "",
             f"Captured on Apache Kafka {DEFAULT_VERSION} (one KRaft node, conformance/kafka) by "
             f"`python -m conformance.kafka.capture --only {case.name}`; the timeline is in scenario.json.", "",
             "## What happened", ""]
    lines += [f"- {fact}" for fact in doc["facts"]]
    lines += ["", f"## Verdict a correct checker gives: {doc['verdict']}", ""]
    if doc["allowed_warnings"]:
        lines += [f"Warnings it may give: {', '.join(doc['allowed_warnings'])}.", ""]
    lines += [f"- `{inv}`: {v['expected']} -- {v['why']}" for inv, v in doc["invariants"].items()]
    lines += ["", "## Files", ""] + [f"- `{name}`" for name in files]
    return "\n".join(lines) + "\n"


def capture(case: Case, out_root: Path, progress: Callable[[str], None] = lambda s: None) -> Path:
    out = out_root / case.name
    shutil.rmtree(out, ignore_errors=True)
    started = time.monotonic()
    with BrokerRun(out, group=case.name, session_timeout_ms=case.session_timeout_ms,
                   broker_dir=out_root / f".{case.name}.broker") as run:
        outcome = case.scenario(run)
    shutil.rmtree(out_root / f".{case.name}.broker", ignore_errors=True)
    doc = expected_doc(case, outcome)
    (out / "expected.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "README.md").write_text(readme(case, doc, out))
    progress(f"{case.name}: {doc['verdict']} in {time.monotonic() - started:.0f}s")
    return out


def write_index(out_root: Path) -> None:
    """README.md of the samples directory: every case with its verdict."""
    lines = [f"# Real captures on Apache Kafka {DEFAULT_VERSION}", "",
             f"Written by `python -m conformance.kafka.capture --out {out_root}` (one KRaft broker per case,",
             "conformance/kafka). Each directory has the broker's server.log, every member's trace and client log,",
             "the producer's output, scenario.json, a README and expected.json: the verdict a correct checker gives,",
             "per invariant with the reason (shape: docs/kafka-broker.md). These replace nothing: the hand-written",
             "broker and Java-log samples beside them are kept until the checker's tests move to these.", "",
             "| case | verdict | what it shows |", "|---|---|---|"]
    for d in sorted(p for p in out_root.iterdir() if p.is_dir() and (p / "expected.json").exists()):
        doc = json.loads((d / "expected.json").read_text())
        broken = [k for k, v in doc["invariants"].items() if v["expected"] == VIOLATION]
        verdict = doc["verdict"] + (f" ({', '.join(broken)})" if broken else "")
        lines.append(f"| [{d.name}]({d.name}/README.md) | {verdict} | {doc['summary']} |")
    (out_root / "README.md").write_text("\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.kafka.capture", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("tests/traces/samples") / f"kafka-{DEFAULT_VERSION}")
    parser.add_argument("--only", action="append", default=[], metavar="CASE")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    names = {c.name for c in CASES}
    if args.list:
        for c in CASES:
            print(f"{c.name}: {c.summary}")
        return 0
    unknown = [n for n in args.only if n not in names]
    if unknown:
        print(f"groupspec: unknown case {', '.join(unknown)}; known: {', '.join(sorted(names))}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for case in CASES:
        if args.only and case.name not in args.only:
            continue
        print(f"{case.name}: running ({platform.node()})", flush=True)
        try:
            capture(case, args.out, lambda s: print(s, flush=True))
        except KafkaUnavailable as exc:
            print(f"groupspec: {exc}", file=sys.stderr)
            return 2
        except Exception as exc:  # one case's failure must not hide the others
            failed += 1
            print(f"{case.name}: FAILED: {exc}", file=sys.stderr, flush=True)
    write_index(args.out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
