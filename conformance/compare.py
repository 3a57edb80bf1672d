"""A real run held to the model: the three comparisons of docs/conformance.md.

Input: what the proxy decoded (group-wire.jsonl: every JoinGroup / SyncGroup / Heartbeat / LeaveGroup /
OffsetCommit request and response), each member's trace (the driver's events), the scenario, and the
model's run of the same scenario. Output: a list of :class:`Difference` (empty: the run conforms) and
the notes on what could not be compared (``unchecked``, with why, never a guess).

1. **Per generation, the assignor** (:func:`assignor_rounds`). The leader's JoinGroup response carries
   every member's subscription (topics, owned partitions, generation, user data); its SyncGroup carries
   the assignment its client computed. That input goes to the model's assignor (``model.assignors``):
   range and roundrobin must give exactly the same assignment; sticky and cooperative-sticky must keep
   every promise of ``model.invariants.assignment.promised`` (validity, balance, stickiness, revoke
   before assign), and whether they equal the model's answer is reported as a note (their answer may
   depend on the iteration order of Java's HashMaps, docs/assignors-sticky.md).
2. **Per member, the model's member replayed** (:func:`member_replays`, conformance/member_replay.py):
   ``model.classic.member`` is handed the answers the real coordinator gave each real member, and what
   it does next (callbacks, lost vs revoked, rejoins, member id and generation, the close, commits per
   policy) is compared with what the real member did; a member dying of its own client's error
   (:func:`members_that_died`) is a difference too.
3. **The whole run** (:func:`whole_run`): the trace checker's verdicts on the real traces and the
   model monitor's on the model's run must agree on every invariant both check; the rebalances after
   each membership change must stay within the model's bound (``model.invariants.protocol.rebalance_bound``:
   eager 1, cooperative 2, one more per SyncGroup that lost the race to a follow-up JoinGroup).

What is deliberately *not* compared, and why, is in docs/conformance.md (timing, which member leads,
member ids and their order, generation numbers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.drivers.process import read_events
from model.assignors import ASSIGNORS
from model.invariants.assignment import AssignmentProblem, violated
from model.types import GroupAssignment, Subscription, TopicPartition

EXACT_ASSIGNORS = ("range", "roundrobin")


# Every kind of difference the comparisons produce (Difference.kind), by comparison: what a registered
# finding's signature may name (tests/conformance/test_findings.py holds the register to it).
KINDS = {
    "assignor": ("assignment-differs", "promise-broken"),
    "reaction": ("callbacks", "unexpected-rejoin", "missing-rejoin", "rejoin-identity", "revoke-before-rejoin",
                 "commits", "client-died"),
    "whole-run": ("rebalances-over-bound",),
}


@dataclass
class Difference:
    """One divergence between the real run and the model: which comparison, what, and the evidence."""

    comparison: str  # assignor / reaction / whole-run
    invariant: str | None
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    # What a registered finding's signature matches on (conformance/findings.py): a stable kind, its
    # detail, and the clients the difference is about (the member's; the leader's and the writers' of
    # unreadable user data for an assignor round; the rejoining members' for rebalances over the bound).
    kind: str = ""
    detail: str = ""
    clients: list[str] = field(default_factory=list)
    known: dict[str, Any] | None = None  # set when it matches a registered open finding

    def to_json(self) -> dict[str, Any]:
        return {"comparison": self.comparison, "invariant": self.invariant, "message": self.message,
                "evidence": self.evidence, "kind": self.kind, "detail": self.detail, "clients": self.clients,
                "known": self.known}


@dataclass
class Comparison:
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    rounds: int = 0  # assignor rounds compared
    reactions: int = 0  # member reactions compared

    def to_json(self) -> dict[str, Any]:
        return {"differences": [d.to_json() for d in self.differences], "notes": self.notes,
                "unchecked": self.unchecked, "rounds": self.rounds, "reactions": self.reactions}


def _tp(d: Mapping[str, Any]) -> TopicPartition:
    return TopicPartition(str(d["topic"]), int(d["partition"]))


def _tps(items: Iterable[Mapping[str, Any]] | None) -> frozenset[TopicPartition]:
    return frozenset(_tp(d) for d in items or ())


def _names(tps: Iterable[TopicPartition]) -> list[str]:
    return sorted(f"{tp.topic}-{tp.partition}" for tp in tps)


def conn_members(wire: Sequence[Mapping[str, Any]]) -> dict[int, str]:
    """Connection -> the client id its requests carry (the drivers set client.id to the member's
    incarnation name, ``a#1``)."""
    out: dict[int, str] = {}
    for m in wire:
        if m["kind"] == "request" and m.get("client_id"):
            out.setdefault(int(m["conn"]), str(m["client_id"]))
    return out


def _requests_and_responses(wire: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], Mapping[str, Any] | None]]:
    """Each request with its response (same connection and correlation id), in request order."""
    responses = {(m["conn"], m["correlation_id"]): m for m in wire if m["kind"] == "response"}
    return [(m, responses.get((m["conn"], m["correlation_id"]))) for m in wire if m["kind"] == "request"]


# -- 1. the assignor ------------------------------------------------------------------------------


def _counts_at(topics: Sequence[tuple[int, Mapping[str, int]]], t: int) -> list[dict[str, int]]:
    """Partition counts the leader may have seen at ``t``: the latest before ``t`` and, when a
    topic changed shortly before, the one before that (its metadata may lag: docs/conformance.md)."""
    before = [dict(c) for at, c in topics if at <= t] or [dict(topics[0][1])]
    return before[-2:][::-1]


def assignor_rounds(wire: Sequence[Mapping[str, Any]], topics: Sequence[tuple[int, Mapping[str, int]]],
                    clients: Mapping[str, str], result: Comparison) -> None:
    pairs = _requests_and_responses(wire)
    member_client: dict[str, str] = {}  # member id -> client, from the JoinGroup answers each member got
    for req, resp in pairs:
        if req["api"] == "JoinGroup" and resp is not None and resp.get("member_id") and req.get("client_id"):
            member_client[str(resp["member_id"])] = clients.get(str(req["client_id"]).split("#", 1)[0], "?")
    join_answers: dict[tuple[int, int], Mapping[str, Any]] = {}  # (conn, generation) -> leader's answer
    for req, resp in pairs:
        if req["api"] == "JoinGroup" and resp is not None and resp.get("members"):
            join_answers[(int(req["conn"]), int(resp["generation"]))] = resp
    for req, _ in pairs:
        if req["api"] != "SyncGroup" or not req.get("assignments"):
            continue
        conn, generation = int(req["conn"]), int(req["generation"])
        answer = join_answers.get((conn, generation))
        leader = str(req.get("client_id"))
        client = clients.get(leader.split("#", 1)[0], "?")
        if answer is None:
            result.unchecked.append(f"generation {generation}: the leader's JoinGroup answer was not seen")
            continue
        strategy = str(answer.get("protocol"))
        if strategy not in ASSIGNORS:
            result.unchecked.append(f"generation {generation}: assignor {strategy!r} is not in the model")
            continue
        if any(a.get("partitions") is None for a in req["assignments"].values()):
            result.unchecked.append(f"generation {generation}: an assignment could not be decoded")
            continue
        subs = tuple(Subscription(member_id=str(m["member_id"]), topics=tuple(m["topics"]),
                                  owned=tuple(sorted(_tps(m.get("owned")))),
                                  generation=m["generation"] if m.get("generation") is not None else -1,
                                  instance_id=m.get("instance_id"))
                     for m in answer["members"])
        real = {mid: tuple(sorted(_tps(a["partitions"]))) for mid, a in req["assignments"].items()}
        for s in subs:
            real.setdefault(s.member_id, ())
        result.rounds += 1
        evidence = {"generation": generation, "leader": leader, "client": client, "strategy": strategy,
                    "subscriptions": [{"member_id": s.member_id, "topics": list(s.topics), "owned": _names(s.owned),
                                       "generation": s.generation, "owned_from": m.get("owned_from"),
                                       "unreadable": m.get("sticky_user_data_error")}
                                      for s, m in zip(subs, answer["members"], strict=True)],
                    "real": {m: _names(p) for m, p in sorted(real.items())}}
        candidates = _counts_at(topics, int(answer["timestamp"]))
        outcomes = []
        for counts in candidates:
            problem = AssignmentProblem.of(counts, subs)
            model = ASSIGNORS[strategy].assign(counts, subs)
            model_sets = {m: tuple(sorted(p)) for m, p in model.assignment.items()}
            owned_by = {tp: s.member_id for s in subs for tp in s.owned}
            transferring = frozenset(tp for tp, owner in owned_by.items()
                                     if tp not in set(real.get(owner, ())) and not any(
                                         tp in set(p) for p in real.values()))
            verdict = violated(strategy, problem, GroupAssignment(real, transferring))
            same = all(set(model_sets.get(m, ())) == set(real.get(m, ())) for m in set(model_sets) | set(real))
            outcomes.append((counts, model_sets, verdict, same))
        if strategy in EXACT_ASSIGNORS:
            if not any(same for _, _, _, same in outcomes):
                counts, model_sets, _, _ = outcomes[0]
                result.differences.append(Difference(
                    "assignor", None, f"generation {generation}: {client}'s {strategy} assignor (leader {leader}) "
                    "gave another assignment than Kafka's for the same input",
                    {**evidence, "partitions": counts, "model": {m: _names(p) for m, p in sorted(model_sets.items())}},
                    kind="assignment-differs", detail=strategy, clients=[client]))
        else:
            held = [o for o in outcomes if not o[2]]
            if not held:
                counts, model_sets, verdict, _ = outcomes[0]
                # Whose user data the leader could not read (sticky's previous assignment): a difference
                # caused by it is also about the client that wrote it.
                # Sticky's user data comes in two formats (Java's, kafka-python 3.0's versioned one,
                # group_wire); a client reads only its own, so a writer of the other format is not read.
                own = next((m.get("owned_from") for m in answer["members"]
                            if str(m["member_id"]) == str(req.get("member_id"))), None)
                writers = sorted({member_client.get(str(m["member_id"]), "?") for m in answer["members"]
                                  if m.get("sticky_user_data_error") or (
                                      own and m.get("owned_from") and m.get("owned_from") != own)})
                result.differences.append(Difference(
                    "assignor", verdict[0], f"generation {generation}: {client}'s {strategy} assignor (leader "
                    f"{leader}) broke {', '.join(verdict)}",
                    {**evidence, "partitions": counts, "model": {m: _names(p) for m, p in sorted(model_sets.items())}},
                    kind="promise-broken",
                    detail=f"{strategy} {','.join(verdict)}" + (" with unreadable user data" if writers else ""),
                    clients=sorted({client, *writers})))
            elif not any(o[3] for o in held):
                result.notes.append(f"generation {generation}: {client}'s {strategy} kept every promise but chose "
                                    "another assignment than the model (allowed: docs/conformance.md)")


# -- 2. the member's reaction ---------------------------------------------------------------------


def _stops(timeline: Sequence[Mapping[str, Any]]) -> dict[str, list[tuple[int, str]]]:
    """When and how the runner stopped each member (base name): leave / end close it, crash and restart
    kill it (SIGKILL); key ``""`` is the end of the run."""
    out: dict[str, list[tuple[int, str]]] = {"": [(max((int(e["timestamp"]) for e in timeline), default=0), "end")]}
    for e in timeline:
        if e["step"] in ("leave", "crash", "restart") and e.get("member"):
            out.setdefault(str(e["member"]), []).append((int(e["timestamp"]), str(e["step"])))
    return out


def commit_policy(doc: Mapping[str, Any]) -> str:
    """``auto``, ``sync`` or ``none``: the scenario's (docs/scenarios.md; auto-commit is Kafka's default)."""
    config = doc.get("config") or {}
    if config.get("enable_auto_commit", True):
        return "auto"
    return str(config.get("commit", "none"))


def member_replays(wire: Sequence[Mapping[str, Any]], traces: Mapping[str, list[dict[str, Any]]],
                   doc: Mapping[str, Any], timeline: Sequence[Mapping[str, Any]], clients: Mapping[str, str],
                   result: Comparison) -> dict[str, list[int]]:
    """Comparison 2: every real member against the model's member replayed on the same answers
    (conformance/member_replay.py). Returns, per incarnation, when it rejoined without a cause the
    model knows (what :func:`rebalances_per_change` attributes extra rebalances to)."""
    from conformance.member_replay import commits, replay_member

    pairs = _requests_and_responses(wire)
    order = {id(m): i for i, m in enumerate(wire)}
    joins: dict[str, Mapping[str, Any]] = {}
    for step in doc.get("steps", ()):
        if step.get("do") == "join":
            joins.setdefault(str(step["member"]), step)
    metadata = tuple(sorted((str(t), int(n)) for t, n in (doc.get("topics") or {}).items()))
    stops = _stops(timeline)
    policy = commit_policy(doc)
    unexpected: dict[str, list[int]] = {}
    for name, events in sorted(traces.items()):
        base = name.split("#", 1)[0]
        client = clients.get(base, "?")
        step = joins.get(base)
        if step is None:
            result.unchecked.append(f"{name}: no join step names it; not replayed")
            continue
        born = min((int(e["timestamp"]) for e in events), default=0)
        own = sorted((t, k) for t, k in stops.get(base, []) if t >= born)
        stop = own[0] if own else stops[""][0]
        mine = [(req, resp) for req, resp in pairs if req.get("client_id") == name]
        try:
            replay = replay_member(name, client, tuple(step.get("assignors", ["range"])),
                                   tuple(step.get("topics", ())), metadata, mine, events, timeline, stop, order)
        except (ValueError, KeyError, AssertionError) as exc:  # the model refuses the member's setup
            result.unchecked.append(f"{name}: the model's member cannot replay it: {type(exc).__name__}: {exc}")
            continue
        found, unchecked = commits(name, policy, mine, events, stop)
        result.reactions += replay.compared
        result.unchecked += replay.unchecked + unchecked
        unexpected[name] = list(replay.unexpected_rejoins)
        for f in replay.found + found:
            result.differences.append(Difference("reaction", f.kind, f.message, {**f.evidence, "client": client},
                                                 kind=f.kind, detail=f.detail, clients=[client]))
    return unexpected


def members_that_died(traces: Mapping[str, list[dict[str, Any]]], logs: Mapping[str, str],
                      result: Comparison, clients: Mapping[str, str] | None = None) -> None:
    """A member whose driver caught a fatal error from its client (``shutdown_complete`` with ``failed``)
    died on its own: the model's member never does that for what a scenario does (its only fatal errors
    are the coordinator's FENCED_INSTANCE_ID and INCONSISTENT_GROUP_PROTOCOL, which the model's run shows)."""
    clients = clients or {}
    for name, events in sorted(traces.items()):
        if any(e.get("name") == "shutdown_complete" and e.get("failed") for e in events):
            fatal = next((line for line in logs.get(name, "").splitlines() if "fatal" in line), "")
            error = _fatal(fatal)
            result.differences.append(Difference(
                "reaction", None, f"{name} died of an error from its client: {fatal.strip() or 'see its log'}",
                {"member": name, "log": fatal.strip()}, kind="client-died", detail=error,
                clients=[clients.get(name.split("#", 1)[0], "?")]))


def _fatal(log: str) -> str:
    """The error a driver wrote when its client killed it (``groupspec driver: fatal: <error>``)."""
    line = next((line for line in log.splitlines() if "fatal" in line), "")
    return line.split("fatal:", 1)[1].strip() if "fatal:" in line else ""


def deaths(traces: Mapping[str, list[dict[str, Any]]], logs: Mapping[str, str]) -> dict[str, tuple[int, str]]:
    """When, and of what error, each member that died of its client's error (``shutdown_complete``
    with ``failed``) died."""
    out: dict[str, tuple[int, str]] = {}
    for name, events in traces.items():
        t = next((int(e["timestamp"]) for e in events if e.get("name") == "shutdown_complete" and e.get("failed")),
                 None)
        if t is not None:
            out[name] = (t, _fatal(logs.get(name, "")))
    return out


# -- 3. the whole run -----------------------------------------------------------------------------


def check_real_traces(paths: Sequence[Path]) -> dict[str, Any]:
    """The trace checker's report on the real traces (traces.checker, default configuration)."""
    from traces.checker import CheckConfig, Checker
    from traces.detect import plan as make_plan
    from traces.merge import merged
    from traces.report import build
    from traces.schema import InputStats

    config = CheckConfig()
    plan = make_plan([str(p) for p in paths])
    stats = InputStats(strict=False)
    checker = Checker(plan.sources, config, stats, plan.callback_members)
    checker.run(merged(plan.sources, stats))
    checker.finish()
    return build(plan, stats, checker, config)


def whole_run(real_report: Mapping[str, Any], model_violations: Mapping[str, str], model_checked: Iterable[str],
              result: Comparison) -> None:
    """Verdicts per invariant: real (checker) vs model (monitor), on the invariants both check."""
    real_failed: dict[str, str] = {}
    for f in real_report.get("findings", ()):
        if f.get("severity") == "violation":
            real_failed.setdefault(str(f["invariant"]), str(f.get("message", "")))
    real_unchecked = {u["invariant"] for u in real_report.get("unchecked", ()) if not u.get("partial")}
    both = (set(real_report.get("checked", ())) & set(model_checked)) - real_unchecked
    for inv in sorted(both):
        r, m = inv in real_failed, inv in model_violations
        if r and not m:
            result.differences.append(Difference(
                "whole-run", inv, f"the real run violates {inv}; the model's run of the same scenario does not: "
                f"{real_failed[inv]}", {"real": real_failed[inv]}))
        elif m and not r:
            result.differences.append(Difference(
                "whole-run", inv, f"the model's run violates {inv}; the real run does not: {model_violations[inv]}",
                {"model": model_violations[inv]}))
    for inv in sorted(set(model_checked) - both):
        result.unchecked.append(f"whole-run {inv}: not checked on the real traces")


def rebalances_per_change(wire: Sequence[Mapping[str, Any]], timeline: Sequence[Mapping[str, Any]],
                          cooperative: bool, result: Comparison, unexpected: Mapping[str, list[int]] | None = None,
                          clients: Mapping[str, str] | None = None,
                          died: Mapping[str, tuple[int, str]] | None = None) -> None:
    """Generations begun between one step and the next, against the model's bound. ``unexpected``
    (from :func:`member_replays`): when each member rejoined with no cause the model knows; a window
    over the bound that holds such rejoins names their clients (``detail`` "after an unexpected
    rejoin"), which is what a registered finding about that client may match; else one that holds the
    death of a member of its client's own error (``died``: :func:`deaths`) names that client (its leaving
    is a membership change the scenario does not make)."""
    answers = [m for m in wire if m["kind"] == "response" and m["api"] == "JoinGroup" and m.get("error") == "NONE"]
    raced = [m for m in wire if m["kind"] == "response" and m["api"] == "SyncGroup"
             and m.get("error") == "REBALANCE_IN_PROGRESS"]
    marks = [e for e in timeline if e["step"] in ("join", "leave", "crash", "restart", "subscribe", "stall", "freeze",
                                                  "add_partitions", "move_coordinator", "fail_coordinator", "end")]
    for step, nxt in zip(marks, marks[1:], strict=False):
        lo, hi = int(step["timestamp"]), int(nxt["timestamp"])
        generations = {int(m["generation"]) for m in answers if lo <= m["timestamp"] < hi}
        extra = len({m["conn"] for m in raced if lo <= m["timestamp"] < hi})
        # Membership changes the step makes in the model: a restart is a removal (session expiry) and a
        # join; a stall past max.poll.interval.ms a leave and, when it polls again, a join; a freeze past the
        # session an expiry and, at the thaw, a join.
        changes = 2 if step["step"] == "restart" or (step["step"] == "stall" and step.get("past_max_poll")) \
            or (step["step"] == "freeze" and step.get("past_session")) else 1
        bound = (2 if cooperative else 1) * changes + min(extra, 1)
        if step["step"] in ("crash", "restart", "freeze") and not generations:
            continue
        if len(generations) > bound:
            rejoined = sorted(name for name, times in (unexpected or {}).items() if any(lo <= t < hi for t in times))
            dead = sorted(name for name, (t, _) in (died or {}).items() if lo <= t < hi)
            errors = sorted({(died or {})[n][1] for n in dead})
            result.differences.append(Difference(
                "whole-run", "converges", f"after {step['step']} {step.get('member') or ''}: {len(generations)} "
                f"rebalances (generations {sorted(generations)}), the model's bound is {bound}"
                + (f"; unexpected rejoins by {', '.join(rejoined)}" if rejoined else "")
                + (f"; {', '.join(dead)} died of its client's error" if dead and not rejoined else ""),
                {"step": dict(step), "generations": sorted(generations), "unexpected_rejoins": rejoined, "died": dead},
                kind="rebalances-over-bound",
                detail="after an unexpected rejoin" if rejoined else
                f"after a member died of its client's error: {', '.join(errors)}" if dead else "",
                clients=sorted({(clients or {}).get(n.split("#", 1)[0], "?") for n in (rejoined or dead)})))


def read_traces(paths: Sequence[Path]) -> dict[str, list[dict[str, Any]]]:
    return {p.stem: read_events(p) for p in paths}


__all__ = ["KINDS", "Comparison", "Difference", "assignor_rounds", "check_real_traces", "commit_policy", "conn_members", "deaths",
           "member_replays", "members_that_died",
           "read_traces", "rebalances_per_change", "whole_run"]
