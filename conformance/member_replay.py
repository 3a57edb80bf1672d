"""Per member, the model's member replayed on the answers the real coordinator gave the real one.

For every real consumer incarnation (``b#1``) the executable member of the model
(``model.classic.member``, the one the proofs bind) is started with the member's assignors and
subscription and handed, in order, every answer the real coordinator sent that member on the wire
(group-wire.jsonl: JoinGroup, SyncGroup, Heartbeat, OffsetCommit, LeaveGroup), through
:func:`model.classic.member.receive`; its application thread (:func:`model.classic.member.poll`) runs
when the real member's did something the model decides on: after a SyncGroup answer and before every
JoinGroup the real member sent. What the model member does next is compared with what the real one did:

- **callbacks** (``callbacks``): between one JoinGroup answer of the member and the next, the non-empty
  ``partitions_assigned`` / ``partitions_revoked`` / ``partitions_lost`` of the real trace must be the
  ones the model member emits there: eager revokes everything it owns before it rejoins
  (``_on_join_prepare``), cooperative revokes exactly owned minus assigned after its SyncGroup answer
  (``_on_join_complete``), and after UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION / FENCED_INSTANCE_ID or a
  poll-timeout leave everything owned is *lost*, not revoked. Order within the span is not compared
  (librdkafka delivers a cooperative assign and revoke in either order);
- **rejoins** (``unexpected-rejoin``, ``missing-rejoin``): the real member sends JoinGroup when the
  model member would (a rebalance answer, an error, a cooperative revocation, its subscription
  changed), and only then; a rejoin with a cause the wire cannot show (new topics, a coordinator that
  moved or failed, the member's own stall or freeze) is unchecked with that cause;
- **member id and generation after an error** (``rejoin-identity``): the member id of every JoinGroup
  is the model member's (UNKNOWN_MEMBER_ID resets it, ILLEGAL_GENERATION keeps it: KAFKA-13419), and
  so is the generation in its subscription where the protocol version carries one (v2+; -1 after a
  reset);
- **close** (``callbacks`` at the close): a member asked to leave revokes what it owns, or loses it when
  its generation was reset or a rebalance is under way (``close``);
- **commits** (``commits``): what the scenario's commit policy makes the model member commit on a
  revocation and on close (:func:`commits`).

Where a real trace cannot show a thing the comparison is *unchecked* with the reason, never a
divergence: aiokafka has no ``on_partitions_lost`` (a lost assignment is reported as revoked); lost
versus revoked at a close during a rebalance (Java declares lost, the protocol does not decide); spans
where the coordinator moved or failed (the client's own timers decide there; the replay goes on from
what the real member holds); an answer the proxy did not see (a dropped connection), an error name the
model does not know, or the member's death of its own error end the replay of that member.
docs/conformance.md says all of it for users.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.drivers.process import owned_after
from model.classic import member as mm
from model.classic.member.state import PendingCommit
from model.messages import (
    Errors,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    Response,
    SyncGroupResponse,
)
from model.types import TopicPartition

# Callback events compared (the driver's names are the model's: model.events).
CALLBACKS = ("partitions_assigned", "partitions_revoked", "partitions_lost")

# Clients whose trace cannot tell a lost assignment from a revoked one, and why.
NO_LOST_CALLBACK = {"aiokafka": "aiokafka has no on_partitions_lost: a lost assignment is reported as revoked"}

# Steps whose effect on a member's rejoin the group wire cannot show: the leader (and librdkafka's
# every member) rejoins on a metadata change; a coordinator change makes clients reconnect and may
# make them rejoin (librdkafka does). A stall of the member itself is such a cause too (_at_join).
SILENT_CAUSES = ("add_partitions", "move_coordinator", "fail_coordinator")


def _steps_between(timeline: Sequence[Mapping[str, Any]], name: str, lo: int, hi: int, *,
                   anyone: Sequence[str], own: Sequence[str]) -> list[str]:
    """The steps in [lo, hi] (by timestamp) that are in ``anyone``, or in ``own`` and of member ``name``
    itself; a freeze counts only past the session (one within it changes nothing the wire cannot show)."""
    base = name.split("#", 1)[0]
    return sorted({str(s["step"]) for s in timeline if lo <= int(s["timestamp"]) <= hi and (
        s["step"] in anyone or (s.get("member") == base and s["step"] in own
                                and (s["step"] != "freeze" or bool(s.get("past_session")))))})


def _silences(timeline: Sequence[Mapping[str, Any]], name: str, lo: int, hi: int) -> list[str]:
    """The steps in [lo, hi] after which the client's own timers, not an answer on the wire, decide what it
    loses and which identity it rejoins with: a coordinator that moved or failed, or a freeze of the member
    itself past its session (at the thaw its session timer may have run out before any answer reaches it:
    AbstractCoordinator's heartbeat thread marks the coordinator unknown and the member's state is reset)."""
    return _steps_between(timeline, name, lo, hi, anyone=("move_coordinator", "fail_coordinator"), own=("freeze",))

# The runner starts a step only when no JoinGroup / SyncGroup was seen for 0.9 s (real_run.py): a
# rejoin the model asks for and the real member has not sent a second after it was due, before the
# member was stopped, was not going to come.
MISSING_REJOIN_GRACE_MS = 1000


@dataclass
class Found:
    """One difference of a member from the model's member: ``kind`` and ``detail`` are what a
    registered finding's signature matches on (conformance/findings.py)."""

    kind: str
    detail: str
    message: str
    at: int
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass
class Replay:
    """What the replay of one member found: differences, unchecked (with why), compared points."""

    member: str
    found: list[Found] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    compared: int = 0
    unexpected_rejoins: list[int] = field(default_factory=list)  # when (wire time) each one was sent


def _tps(items: Sequence[Mapping[str, Any]] | None) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(str(d["topic"]), int(d["partition"])) for d in items or ())


def _names(tps: frozenset[TopicPartition]) -> list[str]:
    return sorted(f"{tp.topic}-{tp.partition}" for tp in tps)


def _error(name: Any) -> Errors | None:
    try:
        return Errors[str(name)]
    except KeyError:
        return None


def _response(api: str, resp: Mapping[str, Any], error: Errors) -> Response | None:
    """The wire answer as the model's message. The JoinGroup answer is given without the leader's
    member list: the leader's assignment is compared on its own (compare.assignor_rounds), and the
    replay needs only what the answer tells every member (generation, member id, protocol)."""
    if api == "JoinGroup":
        return JoinGroupResponse(error, int(resp.get("generation") or -1), resp.get("protocol"), "",
                                 str(resp.get("member_id") or ""))
    if api == "SyncGroup":
        assignment = (resp.get("assignment") or {}).get("partitions")
        return SyncGroupResponse(error, tuple(sorted(_tps(assignment))), resp.get("protocol"))
    if api == "Heartbeat":
        return HeartbeatResponse(error)
    if api == "OffsetCommit":
        return OffsetCommitResponse(error)
    if api == "LeaveGroup":
        return LeaveGroupResponse(error)
    return None


def _calls(events: Sequence[Mapping[str, Any]]) -> list[tuple[str, frozenset[TopicPartition]]]:
    """The non-empty callbacks of a span (an empty revoke is how eager clients say "nothing"); the
    model's member writes its events in the drivers' format (model.events)."""
    out = []
    for e in events:
        parts = _tps(e.get("partitions"))
        if e.get("name") in CALLBACKS and parts:
            out.append((str(e["name"]), parts))
    return out


def _show(calls: Sequence[tuple[str, frozenset[TopicPartition]]]) -> str:
    return "; ".join(f"{n.removeprefix('partitions_')} {_names(p)}" for n, p in calls) or "nothing"


class _MemberReplay:
    def __init__(self, name: str, client: str, assignors: tuple[str, ...], topics: tuple[str, ...],
                 metadata: mm.Metadata, born: int) -> None:
        self.name, self.client = name, client
        config = mm.member_config(name, assignors, auto_commit=False)  # commits: compared on their own
        self.m, _ = mm.start(config, "replay", topics, born)
        self.metadata = metadata
        self.pending: list[dict[str, Any]] = []  # the model's events since the last JoinGroup
        self.out = Replay(name)
        self.rejoin_due: int | None = None  # when the model sent a JoinGroup the real one has not yet
        self.stopped = False  # the replay lost the real member's thread (said in unchecked)
        self.left = False  # it sent LeaveGroup (a poll-timeout leave) since its last JoinGroup

    def poll(self, now: int) -> list[Any]:
        m, requests, events = mm.poll(self.m, now, self.metadata)
        self.m = m
        self.pending += list(events)
        if any(isinstance(q, JoinGroupRequest) for q in requests) and self.rejoin_due is None:
            self.rejoin_due = now
        return list(requests)

    def receive(self, api: str, resp: Mapping[str, Any], now: int) -> None:
        error = _error(resp.get("error"))
        if error is None:
            self.stop(f"{self.name}: answer {resp.get('error')!r} at {now} is not an error the model knows; "
                      "not replayed further")
            return
        response = _response(api, resp, error)
        if response is None:
            return
        if api == "SyncGroup" and error is Errors.NONE and (resp.get("assignment") or {}).get("partitions") is None:
            self.stop(f"{self.name}: the SyncGroup answer at {now} could not be decoded; not replayed further")
            return
        m, _, events = mm.receive(self.m, response, now, self.metadata)
        self.m = m
        self.pending += list(events)
        if api == "SyncGroup" and error is Errors.NONE:
            self.poll(now)  # the application thread's onJoinComplete

    def sent(self, api: str, req: Mapping[str, Any], now: int) -> None:
        """The real member sent a request the model's state must account for."""
        if api == "Heartbeat":
            self.m = mm._with(self.m, heartbeats_in_flight=self.m.heartbeats_in_flight + (self.m.generation,))
        elif api == "OffsetCommit":
            self.m = mm._with(self.m, commits_in_flight=self.m.commits_in_flight
                              + (PendingCommit(self.m.generation, ()),))

    def stop(self, why: str) -> None:
        if not self.stopped:
            self.out.unchecked.append(why)
        self.stopped = True


def _at_join(r: _MemberReplay, req: Mapping[str, Any], t: int, last_sync: int, timeline: Sequence[Mapping[str, Any]],
             base: str, real_owned: frozenset[TopicPartition]) -> None:
    """The real member sent JoinGroup at ``t``: would the model's member (its application thread polled
    now)? With which member id and generation? Has it revoked, as the model's has, before sending?"""
    name = r.name
    r.poll(t)
    if r.m.join is not mm.JoinFuture.JOIN and r.m.rejoin_not_before is not None:
        r.poll(max(t, r.m.rejoin_not_before))  # the rejoin after a mismatched assignment (REJOIN_ROUND_TRIP_MS)
    if r.m.join is not mm.JoinFuture.JOIN:
        r.poll(t)  # a retriable failure rejoins at the next poll
    if r.m.join is not mm.JoinFuture.JOIN:
        # a wider set than _silences: a metadata change or the member's own stall also makes it rejoin
        causes = _steps_between(timeline, name, last_sync, t, anyone=SILENT_CAUSES, own=("stall", "freeze"))
        if causes:
            r.out.unchecked.append(f"{name}: a JoinGroup at {t} after {', '.join(causes)}, whose effect on a "
                                   "rejoin the wire cannot show; the replay takes it as given")
        else:
            # subscribe() with the topics it already has changes nothing in Java (SubscriptionState.
            # changeSubscription returns false; the model's subscribe leaves joined_subscription equal).
            same = any(s["step"] == "subscribe" and s.get("member") == base and last_sync <= int(s["timestamp"]) <= t
                       and tuple(sorted(s.get("topics", ()))) == r.m.subscription for s in timeline)
            r.out.found.append(Found(
                "unexpected-rejoin",
                "after subscribe() with an unchanged subscription" if same
                else "after a successful SyncGroup" if r.m.state is mm.MemberState.STABLE else "while joining",
                f"{name} sent JoinGroup at {t} although nothing the coordinator answered asks for one: the model's "
                f"member ({r.m.state.value}, generation {r.m.generation.generation_id}) does not rejoin",
                t, {"member": name, "join": t}))
            r.out.unexpected_rejoins.append(t)
        # Take the real member's rejoin as given, so that what follows is replayed from its state.
        r.m = mm._with(r.m, join=mm.JoinFuture.NONE, join_result=None, rejoin_not_before=None)
        r.m = mm._request_rejoin(r.m, "the real member rejoined")
        r.poll(t)
    r.rejoin_due = None
    silent = _silences(timeline, name, last_sync, t)
    if r.m.join is not mm.JoinFuture.JOIN:
        r.stop(f"{name}: the model's member cannot send the JoinGroup the real one sent at {t}; not replayed further")
        return
    r.out.compared += 1
    if not r.m.owned and real_owned and r.m.config.protocol.value == "eager":
        r.out.found.append(Found(
            "revoke-before-rejoin", "eager",
            f"{name} (eager) sent JoinGroup at {t} still owning {_names(real_owned)}: the model's member has "
            "revoked (or lost) everything before it rejoins", t, {"member": name, "owned": _names(real_owned)}))
    sent_id = str(req.get("member_id") or "")
    model_id = r.m.join_sent_generation.member_id
    gens = {p.get("generation") for p in req.get("protocols") or ()}
    model_gen = r.m.join_sent_generation.generation_id
    if (sent_id != model_id or (gens and None not in gens and gens != {model_gen})) and silent:
        r.out.unchecked.append(f"{name}: rejoined at {t} after {', '.join(silent)} with member id {sent_id!r}: a "
                               "client resets its membership on its own session timer there, which the wire cannot "
                               "show")
        # Go on from the real member's membership: what it holds, and the identity it rejoined with.
        claimed = mm.Generation(int(next(iter(gens))) if gens and None not in gens else -1, sent_id, None)
        r.m = mm._with(r.m, owned=real_owned, generation=claimed, join_sent_generation=claimed)
    elif sent_id != model_id:
        # "member id reset": the client dropped an id the model's member keeps (Java keeps it on
        # ILLEGAL_GENERATION, AbstractCoordinator.SyncGroupResponseHandler / HeartbeatResponseHandler)
        r.out.found.append(Found(
            "rejoin-identity", "member id reset" if sent_id == "" and model_id else "member id",
            f"{name} rejoined at {t} with member id {sent_id!r}; the model's member uses {model_id!r}",
            t, {"member": name, "real": sent_id, "model": model_id}))
    elif gens and None not in gens and gens != {model_gen}:  # v0/v1 subscriptions carry no generation
        r.out.found.append(Found(
            "rejoin-identity", "generation after its poll-timeout leave" if r.left else "generation",
            f"{name} rejoined at {t} claiming generation {sorted(gens)}; the model's member claims {model_gen}"
            + (" (it left the group on its poll timeout, which resets the generation)" if r.left else ""),
            t, {"member": name, "real": sorted(gens), "model": model_gen}))
    r.left = False


def replay_member(name: str, client: str, assignors: tuple[str, ...], topics: tuple[str, ...],
                  metadata: mm.Metadata, wire: Sequence[tuple[Mapping[str, Any], Mapping[str, Any] | None]],
                  events: Sequence[Mapping[str, Any]], timeline: Sequence[Mapping[str, Any]],
                  stop: tuple[int, str] | None, order: Mapping[int, int] | None = None) -> Replay:
    """Replay one real member (``wire``: its requests with their answers, in order; ``events``: its
    trace; ``timeline``: the run's steps; ``stop``: when and how the runner stopped it, ``leave`` /
    ``end`` (a close) or ``crash`` / ``restart`` (SIGKILL); ``order``: each wire message's position in
    group-wire.jsonl, by ``id()``, for messages of the same millisecond)."""
    born = min((int(e["timestamp"]) for e in events), default=0)
    r = _MemberReplay(name, client, assignors, topics, metadata, born)
    base = name.split("#", 1)[0]
    stop_at = stop[0] if stop is not None else None
    subscribes = [s for s in timeline if s["step"] == "subscribe" and s.get("member") == base
                  and int(s["timestamp"]) >= born]
    callbacks = [e for e in events if e.get("name") in CALLBACKS]
    span_start = born
    last_sync = born

    def real_span(lo: int, hi: int) -> list[Mapping[str, Any]]:
        return [e for e in callbacks if lo <= int(e["timestamp"]) <= hi]

    def compare_span(lo: int, hi: int, where: str, close: Sequence[Mapping[str, Any]] | None = None,
                     rebalancing: bool = False) -> None:
        """Compare the callbacks of [lo, hi]; ``close``: the model's close events (the span ends in one)."""
        closing = close is not None
        close = close or ()
        model = _calls(list(r.pending) + list(close))
        real = _calls(real_span(lo, hi))
        pending, r.pending = r.pending, []
        if sorted(model, key=repr) == sorted(real, key=repr):
            r.out.compared += 1
            return
        silent = _silences(timeline, name, lo, hi)
        if silent:
            r.out.unchecked.append(f"{name} {where}: callbacks in a span with {', '.join(silent)}: the client's own "
                                   "timers (its session without an answer, reconnects) decide there what is lost, "
                                   "which the wire cannot show")
            # Go on from what the real member holds, so that what follows is compared from there.
            r.m = mm._with(r.m, owned=owned_after([e for e in events if int(e["timestamp"]) <= hi]))
            return
        r.out.compared += 1

        def as_revoked(calls: Sequence[tuple[str, frozenset[TopicPartition]]]) -> list[Any]:
            return sorted((("partitions_revoked" if n == "partitions_lost" else n), p) for n, p in calls)

        lost_for_revoked = as_revoked(model) == as_revoked(real)
        if lost_for_revoked and client in NO_LOST_CALLBACK:
            r.out.unchecked.append(f"{name} {where}: the model loses what the real member reports revoked "
                                   f"({NO_LOST_CALLBACK[client]})")
            return
        if lost_for_revoked and closing and rebalancing:
            r.out.unchecked.append(f"{name} {where}: closed while not stable (a rebalance or its error under way), "
                                   "where Java's onLeavePrepare declares its partitions lost and other clients "
                                   "revoke them; the protocol does not decide it")
            return
        before_close = sorted(_calls(pending), key=repr)
        rejoined = any(lo <= t <= hi for t in r.out.unexpected_rejoins)
        not_applied = rejoined and not any(n == "partitions_assigned" for n, _ in real) and any(
            n == "partitions_assigned" for n, _ in model)
        extra = Counter(real) - Counter(model)  # what the real member did beyond the model's member
        again = closing and bool(extra) and not Counter(model) - Counter(real) and all(
            c[0] == "partitions_revoked" and real.count(c) > 1 for c in extra)  # the same revoke, once more
        if not_applied:
            detail = "assignment not applied before an unexpected rejoin"
        elif closing and _calls(close) and sorted(real, key=repr) == before_close:
            detail = "no callback at its close"
        elif again:
            detail = "revoked again at its close"
        elif lost_for_revoked:
            detail = "revoked where the model loses" if any(n == "partitions_lost" for n, _ in model) \
                else "lost where the model revokes"
        else:
            detail = "other callbacks"
        r.out.found.append(Found("callbacks", detail,
                                 f"{name} {where}: the real member did {_show(real)}; the model's member, given the "
                                 f"same answers, does {_show(model)}",
                                 hi, {"member": name, "span": [lo, hi], "real": _show(real), "model": _show(model)}))

    closes = stop is not None and stop[1] in ("leave", "end")
    close_at: int | None = None
    late_sync: int | None = None  # a SyncGroup answer that came after the member was asked to close
    # Requests and answers in the order they passed the proxy: an answer to an early request may
    # come after later requests (a JoinGroup answered after the member's LeaveGroup).
    # Within one millisecond the proxy's log cannot say what the client read first: an answer to a
    # request of an earlier millisecond goes first (the client reacts to it: a heartbeat's error, then
    # its JoinGroup); the rest in the proxy's order (``order``: each message's position, by id).
    stream: list[tuple[int, int, Mapping[str, Any], Mapping[str, Any] | None]] = []
    for req, resp in wire:
        stream.append((int(req["timestamp"]), 0, req, resp))
        if resp is not None:
            stream.append((int(resp["timestamp"]), 1, req, resp))
    position = order or {}

    def rank(x: tuple[int, int, Mapping[str, Any], Mapping[str, Any] | None]) -> tuple[int, int, int]:
        t, is_answer, req, resp = x
        if not is_answer:
            return t, 1, position.get(id(req), 0)
        return t, 0 if int(req["timestamp"]) < t else 1, position.get(id(resp), 0)

    stream.sort(key=rank)
    died = next((int(e["timestamp"]) for e in events if e.get("name") == "shutdown_complete" and e.get("failed")),
                None)
    for t, is_answer, req, resp in stream:
        if r.stopped:
            break
        api = str(req["api"])
        if died is not None and t >= died:
            r.stop(f"{name}: died of its client's error at {died} (its own difference); not replayed further")
            break
        if stop_at is not None and t >= stop_at:
            if not closes:
                break  # killed (crash, restart): nothing of it after the stop
            if api == "LeaveGroup" and not is_answer:
                close_at = t  # close(): onLeavePrepare's callbacks, then the LeaveGroup (maybeLeaveGroup)
                break
            # Until it leaves, a closing member still answers rebalances others' closes start.
        if is_answer:
            assert resp is not None
            if api == "JoinGroup" and (stop_at is None or t < stop_at):
                # A span ends at a JoinGroup answer (not once the member is closing: its close's callbacks
                # may come before the answer to a JoinGroup it sent earlier): the callbacks that prepare the join come before the
                # request, those of the previous SyncGroup answer before it too -- except librdkafka's
                # cooperative assign of the added partitions, which waits until the revoke was handled
                # and may follow the JoinGroup request, never the answer, which ends the rebalance.
                compare_span(span_start, t - 1, f"before the JoinGroup answer at {t}")
                span_start = t
            r.receive(api, resp, t)
            if api == "SyncGroup" and resp.get("error") == "NONE":
                last_sync = t
                if closes and stop_at is not None and t >= stop_at:
                    late_sync = t
            continue
        for s in [s for s in subscribes if int(s["timestamp"]) <= t]:
            r.m = mm.subscribe(r.m, tuple(s["topics"]))
            subscribes.remove(s)
        if r.m.coordinator_node is None:  # it found its coordinator again (FindCoordinator is not on this wire)
            r.m = mm._with(r.m, coordinator_node=0, finding_coordinator=False)
        if api == "JoinGroup":
            _at_join(r, req, t, last_sync, timeline, base, owned_after(
                [e for e in events if int(e["timestamp"]) <= t]))
            if r.stopped:
                break
        elif api == "LeaveGroup":
            # Before the stop it is no close: the heartbeat thread leaving on a poll timeout.
            r.m, _, _ = mm.maybe_leave_group(r.m, "consumer poll timeout has expired.", t)
            r.left = True
        r.sent(api, req, t)
        if resp is None and api in ("JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit"):
            r.stop(f"{name}: its {api} at {t} got no answer the proxy saw (a dropped connection); "
                   "not replayed further")
    if r.stopped:
        return r.out
    last_event = max((int(e["timestamp"]) for e in events), default=span_start)
    due = r.rejoin_due
    if due is not None and (stop_at is None or stop_at - due > MISSING_REJOIN_GRACE_MS) and not any(
            s["step"] in SILENT_CAUSES and int(s["timestamp"]) >= due for s in timeline):
        r.out.found.append(Found(
            "missing-rejoin", r.m.rejoin_reason or "rejoin requested",
            f"{name} did not rejoin after {due}; the model's member does ({r.m.rejoin_reason})",
            due, {"member": name, "due": due}))
    if not closes:
        compare_span(span_start, stop_at if stop_at is not None else last_event, "until it was killed")
        return r.out
    # The close: what it owns is revoked, or lost when its generation was reset or a rebalance is under
    # way (close); without a LeaveGroup (it was not in the group), until its last event.
    at = close_at if close_at is not None else last_event
    if late_sync is not None and not any(e.get("name") == "partitions_assigned" and int(e["timestamp"]) >= late_sync
                                         for e in events):
        # kafka-clients 4.1.1 runs onJoinComplete only from poll() (AbstractCoordinator.joinGroupIfNeeded);
        # close() runs onLeavePrepare and leaves (AbstractCoordinator.close): an assignment answered while
        # the member is closing is not applied. Whether it arrives before the application's last poll is
        # timing (at the end of a run the runner closes members one after another, and one's leave starts
        # the next one's rebalance), not something the protocol decides.
        r.out.unchecked.append(f"{name}: its SyncGroup answer at {late_sync} came after it was asked to close (at "
                               f"{stop_at}) and it did not apply that assignment: a client need not once close() "
                               "has begun (Java's close runs no onJoinComplete); its close is not compared")
        return r.out
    rebalancing = r.m.state is not mm.MemberState.STABLE
    r.m, _, close_events = mm.close(r.m, at)
    compare_span(span_start, at, f"until its close at {at}", close_events, rebalancing)
    return r.out


def commits(name: str, policy: str, wire: Sequence[tuple[Mapping[str, Any], Mapping[str, Any] | None]],
            events: Sequence[Mapping[str, Any]], stop: tuple[int, str] | None) -> tuple[list[Found], list[str]]:
    """What is committed on revoke and on close, per the scenario's commit policy.

    - ``none`` (``enable.auto.commit=false``, the application never commits): the model's member
      sends no OffsetCommit at all (``_commit_owned`` returns at once without auto-commit); one on
      the wire from this member is a divergence.
    - ``auto`` (``enable.auto.commit=true``): before an eager member revokes, ``onJoinPrepare`` commits
      every position it holds (``maybeAutoCommitOffsetsAsync``), and ``close()`` commits them
      synchronously (``close_commit``). So for each eager revocation and each close of partitions
      whose consumed position (last ``records_consumed`` maxOffset + 1) is beyond what this member
      last sent for them, an OffsetCommit of that position must be on the wire between the last
      consumption and the revocation (the close: until the member's last event). Partitions with
      nothing new consumed are not compared: clients differ in whether they send an unchanged offset.
    - ``sync`` (the application commits after every poll): unchecked here; those commits are the
      application's, judged by the checker's commit invariants.
    """
    found: list[Found] = []
    unchecked: list[str] = []
    sent = [(int(req["timestamp"]), {(str(o["topic"]), int(o["partition"])): int(o["offset"])
                                     for o in req.get("offsets") or ()})
            for req, _ in wire if req["api"] == "OffsetCommit"]
    if policy == "none":
        if sent:
            found.append(Found("commits", "committed under the none policy",
                               f"{name} sent OffsetCommit at {sent[0][0]} although auto-commit is off and the "
                               "application never commits", sent[0][0], {"member": name}))
        return found, unchecked
    if policy != "auto":
        unchecked.append(f"{name}: commits on revoke and close under the {policy!r} policy are the application's")
        return found, unchecked
    consumed: dict[tuple[str, int], tuple[int, int]] = {}  # partition -> (next offset, when)

    joins = sorted(int(req["timestamp"]) for req, _ in wire if req["api"] == "JoinGroup")
    last_sent = max((int(req["timestamp"]) for req, _ in wire), default=0)

    def due(at: int, parts: frozenset[TopicPartition], what: str) -> None:
        # The commit must be sent before the partitions are given up: an eager member gives them up
        # with its next JoinGroup (Java commits before the callback, librdkafka and kafka-python just
        # after it), a closing one with its last request.
        until = next((j for j in joins if j >= at), last_sent) if what != "on close" else max(last_sent, at)
        for tp in sorted(parts):
            key = (tp.topic, tp.partition)
            if key not in consumed:
                continue
            offset, when = consumed[key]
            earlier = [o.get(key) for ts, o in sent if ts < when and key in o]
            if earlier and earlier[-1] is not None and earlier[-1] >= offset:
                continue  # already committed before: nothing new to commit
            if not any(when <= ts <= until and o.get(key) == offset for ts, o in sent):
                found.append(Found("commits", f"no commit {what}",
                                   f"{name} consumed {tp.topic}-{tp.partition} up to offset {offset - 1} and did not "
                                   f"commit {offset} {what} at {at} (enable.auto.commit: the model's member commits "
                                   "its positions there)", at, {"member": name, "partition": f"{tp.topic}-{tp.partition}",
                                                                "offset": offset}))
            del consumed[key]

    protocol = next((e.get("protocol") for e in events if e.get("protocol")), None)
    last = max((int(e["timestamp"]) for e in events), default=0)
    for e in events:
        t = int(e["timestamp"])
        if stop is not None and t >= stop[0] and e.get("name") != "records_consumed":
            if stop[1] in ("leave", "end"):
                due(last, frozenset(TopicPartition(k[0], k[1]) for k in consumed), "on close")
            break
        if e.get("name") == "records_consumed":
            for p in e.get("partitions") or ():
                consumed[(str(p["topic"]), int(p["partition"]))] = (int(p["maxOffset"]) + 1, t)
        elif e.get("name") == "partitions_revoked" and protocol == "eager":
            due(t, _tps(e.get("partitions")), "before revoking it")
        elif e.get("name") in ("partitions_lost", "partitions_revoked"):
            for tp in _tps(e.get("partitions")):  # lost, or a cooperative revoke: the model commits nothing
                consumed.pop((tp.topic, tp.partition), None)
    return found, unchecked


__all__ = ["CALLBACKS", "Found", "NO_LOST_CALLBACK", "Replay", "commits", "replay_member"]
