"""Unbounded proofs of the delivery invariants: what consumers read and commit, for one partition.

The protocol proofs (``model.proofs.protocol``) say who owns a partition; these say what happens
to its records. The subject is ``model.consumption`` (positions, polls, the async worker, what is
committed) as ``model.classic.member`` drives it, and the coordinator's committed offsets
(``Group.offsets``: ``handle_offset_commit`` stores, ``handle_offset_fetch`` answers).

**The symbolic model.** One partition, seen by any number of consumers (an uninterpreted sort
``DMember``; every consumer's fields are arrays over it) and a log of any length:

* ``log_end`` -- the log end offset; the log starts at 0 and is never truncated;
* ``committed`` -- the group's committed offset (-1: none, ``NO_OFFSET``);
* ``in_flight`` -- the largest offset carried by an OffsetCommit not handled yet (-1: none).
  Every property below is closed downwards in the offset, so the largest one speaks for all;
* per consumer: ``own`` (assigned), ``has_pos`` / ``pos`` (``SubscriptionState`` position),
  ``processed`` (what the application has finished: the position with ``sync`` processing, behind
  it with ``async``), ``asked`` (an OffsetFetch for the partition is unanswered on the consumer's
  side), ``answered`` / ``answer`` (the coordinator's answer, on its way back);
* two ghosts, which the executable model does not hold and the proof uses to state at-least-once
  delivery: ``done`` (the set of offsets some consumer has processed) and ``base`` (where the
  group's reading legitimately starts: 0, or the log end at the last time a consumer was told that
  nothing was committed and ``auto.offset.reset`` = latest sent it to the end).

The settings are symbolic too: ``enable.auto.commit``, async processing, ``auto.offset.reset``
(earliest / latest / none) and ``max.poll.records`` >= 1 (:class:`Settings`).

**Steps** (:data:`ACTIONS`), each the record-side effect of something in ``model.classic.member`` /
``model.consumption`` / the coordinator: records produced; the partition assigned; revoked or
lost (the position goes with it: ``consumption.retain``); the consumer process stopping (crash,
close, fatal error, restart); an OffsetFetch sent for an owned partition without a position; the
coordinator answering it with the committed offset; the answer abandoned (an error answer, or the
consumer died on another partition of the same answer); the answer received
(``consumption.on_offsets_fetched``: the committed offset, else ``auto.offset.reset``); a poll of 1
to ``max.poll.records`` records; the async worker finishing records; a commit sent (the position
with auto-commit, what was processed otherwise); the coordinator storing one in-flight commit, or
dropping one (rejected, or lost with a crashed connection or a moved coordinator).

Who may commit is left open on purpose: the coordinator may store *any* in-flight commit, in any
order, whatever its generation. Generation fencing is ``protocol-commit-fencing``'s subject; the
delivery proofs hold without it (a late commit of an old owner can move the committed offset back,
which makes duplicates, never a gap).

**The inductive invariant** (:data:`INVARIANTS`): offsets in range; a position only for an owned
partition, with ``processed <= pos <= log_end``; every offset from ``base`` up to a consumer's
processed offset, to an OffsetFetch answer in flight, to the largest in-flight commit and to the
group's committed offset has been processed by someone (``covered``). It needs
``not (enable.auto.commit and async processing)``: auto-commit commits positions, which async
processing leaves ahead of what was processed -- the loss Kafka's documentation warns about, shown
as a witness in ``delivery-committed-not-ahead``.

**The tie** (obligation ``delivery-tie``): seeded runs of ``model.system_run.simulate`` over
scenarios with records; every concrete transition's record-layer change, per partition, must be a
sequence of at most a few of the symbolic steps (checked by Z3 on the abstraction of both states,
without the ghosts); by direct evaluation, every ``records_consumed`` entry must continue exactly
where the consumer's processed offset stood, and every OffsetCommit sent must be of a partition the
sender owns with a position, carrying that position (auto-commit) or its processed offset.

Mutant ``position-ignores-committed`` (``consumption.on_offsets_fetched``) changes the answer-received
step: the induction fails exactly there, and a concrete run of the executable model with the mutant
loses records (``model.records.summarize``: ``lost`` > 0).

Sources: Apache Kafka 4.1 clients ``SubscriptionState`` (positions, ``allConsumed``,
``resetInitializingPositions``), ``ConsumerCoordinator`` (``refreshCommittedOffsetsIfNeeded``,
``maybeAutoCommitOffsetsAsync``, ``onJoinPrepare``), ``Fetcher`` / ``FetchCollector``
(``max.poll.records``); group coordinator ``OffsetMetadataManager`` (commit, fetch);
``KafkaConsumer`` javadoc ("Manual Offset Control").
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import z3

from model import events as ev
from model import system as sy
from model.consumption import POSITION_IGNORES_COMMITTED, log_end
from model.messages import Errors, OffsetCommitRequest, OffsetFetchResponse
from model.proofs.core import Obligation, Outcome, RunConfig, obligation, outcome
from model.proofs.solver import Prover, Query, consecution
from model.records import summarize, totals
from model.scenario import Scenario, parse
from model.system_run import simulate
from model.types import TopicPartition

DMember = z3.DeclareSort("DMember")
EARLIEST, LATEST, NONE = 0, 1, 2
RESET_CODES = {"earliest": EARLIEST, "latest": LATEST, "none": NONE}

_COUNTER = itertools.count()


# -- the symbolic state ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """The consumers' delivery settings (one value for the whole group and the whole run)."""

    auto_commit: Any  # enable.auto.commit
    async_processing: Any  # the application hands records to a worker
    reset: Any  # auto.offset.reset: EARLIEST / LATEST / NONE
    max_poll: Any  # max.poll.records

    @staticmethod
    def fresh(tag: str = "") -> Settings:
        return Settings(z3.Bool(f"auto_commit{tag}"), z3.Bool(f"async{tag}"), z3.Int(f"reset{tag}"),
                        z3.Int(f"max_poll{tag}"))

    def wellformed(self) -> Any:
        return z3.And(self.reset >= EARLIEST, self.reset <= NONE, self.max_poll >= 1)

    def safe(self) -> Any:
        """The settings the at-least-once proof covers: not auto-commit over async processing."""
        return z3.Not(z3.And(self.auto_commit, self.async_processing))


OBSERVABLE = ("log_end", "committed", "in_flight", "own", "has_pos", "pos", "processed", "asked", "answered",
              "answer")
GHOSTS = ("base", "done")
FIELDS = OBSERVABLE + GHOSTS


@dataclass(frozen=True)
class DState:
    """One valuation of the symbolic state (Z3 terms)."""

    log_end: Any
    committed: Any
    in_flight: Any
    own: Any
    has_pos: Any
    pos: Any
    processed: Any
    asked: Any
    answered: Any
    answer: Any
    base: Any
    done: Any

    @staticmethod
    def fresh(tag: str) -> DState:
        def boolean(n: str) -> Any:
            return z3.Array(f"{n}{tag}", DMember, z3.BoolSort())

        def integer(n: str) -> Any:
            return z3.Array(f"{n}{tag}", DMember, z3.IntSort())

        return DState(z3.Int(f"log_end{tag}"), z3.Int(f"committed{tag}"), z3.Int(f"in_flight{tag}"),
                      boolean("own"), boolean("has_pos"), integer("pos"), integer("processed"), boolean("asked"),
                      boolean("answered"), integer("answer"), z3.Int(f"base{tag}"),
                      z3.Array(f"done{tag}", z3.IntSort(), z3.BoolSort()))

    def get(self, name: str) -> Any:
        return getattr(self, name)


def covered(s: DState, upto: Any) -> Any:
    """Every offset from the group's base up to ``upto`` (exclusive) has been processed by someone."""
    o = z3.Int("o")
    return z3.ForAll([o], z3.Implies(z3.And(s.base <= o, o < upto), s.done[o]))


def _with_range(done: Any, first: Any, end: Any) -> Any:
    o = z3.Int(f"r{next(_COUNTER)}")
    return z3.Lambda([o], z3.Or(done[o], z3.And(first <= o, o < end)))


def initial(s: DState) -> Any:
    """Before anything: an empty log, nothing committed or in flight, no consumer with anything."""
    j = z3.Const("j", DMember)
    return z3.And(s.log_end == 0, s.committed == -1, s.in_flight == -1, s.base == 0,
                  z3.ForAll([j], z3.And(z3.Not(s.own[j]), z3.Not(s.has_pos[j]), z3.Not(s.asked[j]),
                                        z3.Not(s.answered[j]))))


# -- the steps ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Effect:
    """A step's guard, the fields it changes (the rest stay), and what it shows the properties:
    the records the consumer processes (``consumed``: flag, first, end) and the offset it commits."""

    guard: Any
    changes: Mapping[str, Any]
    consumed: tuple[Any, Any, Any] | None = None
    commit: Any = None


EffectFn = Callable[[DState, Settings, Any, Any, Any, frozenset[str]], Effect]


@dataclass(frozen=True)
class Action:
    name: str
    kind: str  # member / coordinator / environment
    doc: str
    effect: EffectFn

    def relation(self, s: DState, t: DState, cfg: Settings, k: Any, x: Any, y: Any, mutants: frozenset[str],
                 ghosts: bool = True) -> Any:
        """``s -> t`` by this step of consumer ``k`` with choices ``x``, ``y``; ``ghosts=False``
        leaves ``base`` and ``done`` out (the tie: the executable model has no ghosts)."""
        e = self.effect(s, cfg, k, x, y, mutants)
        names = FIELDS if ghosts else OBSERVABLE
        return z3.And(e.guard, *[t.get(n) == e.changes.get(n, s.get(n)) for n in names])


def _produce(s: DState, cfg: Settings, k: Any, x: Any, y: Any, mutants: frozenset[str]) -> Effect:
    return Effect(x >= 1, {"log_end": s.log_end + x})


def _assigned(s: DState, cfg: Settings, k: Any, x: Any, y: Any, mutants: frozenset[str]) -> Effect:
    return Effect(z3.Not(s.own[k]), {"own": z3.Store(s.own, k, True)})


def _revoked(s: DState, cfg: Settings, k: Any, x: Any, y: Any, mutants: frozenset[str]) -> Effect:
    return Effect(s.own[k], {"own": z3.Store(s.own, k, False), "has_pos": z3.Store(s.has_pos, k, False)})


def _stopped(s: DState, cfg: Settings, k: Any, x: Any, y: Any, mutants: frozenset[str]) -> Effect:
    return Effect(z3.BoolVal(True), {"own": z3.Store(s.own, k, False), "has_pos": z3.Store(s.has_pos, k, False),
                                     "asked": z3.Store(s.asked, k, False),
                                     "answered": z3.Store(s.answered, k, False)})


def _fetch_sent(s: DState, cfg: Settings, k: Any, x: Any, y: Any, mutants: frozenset[str]) -> Effect:
    return Effect(z3.And(s.own[k], z3.Not(s.has_pos[k]), z3.Not(s.asked[k])), {"asked": z3.Store(s.asked, k, True)})


def _fetch_answered(s: DState, cfg: Settings, k: Any, x: Any, y: Any, mutants: frozenset[str]) -> Effect:
    return Effect(z3.And(s.asked[k], z3.Not(s.answered[k])),
                  {"answered": z3.Store(s.answered, k, True), "answer": z3.Store(s.answer, k, s.committed)})


def _fetch_abandoned(s: DState, cfg: Settings, k: Any, x: Any, y: Any, mutants: frozenset[str]) -> Effect:
    return Effect(s.asked[k], {"asked": z3.Store(s.asked, k, False), "answered": z3.Store(s.answered, k, False)})


def _fetch_received(s: DState, cfg: Settings, k: Any, x: Any, y: Any, mutants: frozenset[str]) -> Effect:
    answer = s.answer[k]
    place = z3.And(s.own[k], z3.Not(s.has_pos[k]))
    from_committed = answer >= 0 if POSITION_IGNORES_COMMITTED not in mutants else z3.BoolVal(False)
    start = z3.If(from_committed, answer, z3.If(cfg.reset == EARLIEST, 0, s.log_end))
    fails = z3.And(place, z3.Not(from_committed), cfg.reset == NONE)  # NoOffsetForPartitionException
    placed = z3.And(place, z3.Not(fails))
    return Effect(z3.And(s.asked[k], s.answered[k]), {
        "asked": z3.Store(s.asked, k, False), "answered": z3.Store(s.answered, k, False),
        "own": z3.Store(s.own, k, z3.And(s.own[k], z3.Not(fails))),
        "has_pos": z3.Store(s.has_pos, k, z3.Or(s.has_pos[k], placed)),
        "pos": z3.Store(s.pos, k, z3.If(placed, start, s.pos[k])),
        "processed": z3.Store(s.processed, k, z3.If(placed, start, s.processed[k])),
        # the ghost: nothing committed and latest -> the group legitimately starts over at the log end
        "base": z3.If(z3.And(placed, answer < 0, cfg.reset == LATEST), s.log_end, s.base)})


def _poll(s: DState, cfg: Settings, k: Any, x: Any, y: Any, mutants: frozenset[str]) -> Effect:
    pos = s.pos[k]
    sync = z3.Not(cfg.async_processing)
    return Effect(z3.And(s.has_pos[k], x >= 1, x <= cfg.max_poll, pos + x <= s.log_end), {
        "pos": z3.Store(s.pos, k, pos + x),
        "processed": z3.Store(s.processed, k, z3.If(sync, pos + x, s.processed[k])),
        "done": z3.If(sync, _with_range(s.done, pos, pos + x), s.done)}, consumed=(sync, pos, pos + x))


def _processed(s: DState, cfg: Settings, k: Any, x: Any, y: Any, mutants: frozenset[str]) -> Effect:
    proc = s.processed[k]
    return Effect(z3.And(cfg.async_processing, s.has_pos[k], proc < x, x <= s.pos[k]), {
        "processed": z3.Store(s.processed, k, x), "done": _with_range(s.done, proc, x)},
        consumed=(z3.BoolVal(True), proc, x))


def _commit_sent(s: DState, cfg: Settings, k: Any, x: Any, y: Any, mutants: frozenset[str]) -> Effect:
    what = z3.If(cfg.auto_commit, s.pos[k], s.processed[k])
    return Effect(z3.And(s.has_pos[k], x == what), {"in_flight": z3.If(x > s.in_flight, x, s.in_flight)}, commit=x)


def _commit_stored(s: DState, cfg: Settings, k: Any, x: Any, y: Any, mutants: frozenset[str]) -> Effect:
    return Effect(z3.And(x >= 0, x <= s.in_flight, y >= -1, y <= s.in_flight), {"committed": x, "in_flight": y})


def _commit_dropped(s: DState, cfg: Settings, k: Any, x: Any, y: Any, mutants: frozenset[str]) -> Effect:
    return Effect(z3.And(y >= -1, y <= s.in_flight), {"in_flight": y})


ACTIONS: tuple[Action, ...] = (
    Action("produce", "environment", "producers append records: the log end grows (RecordsProduced)", _produce),
    Action("assigned", "member", "the partition is assigned to the consumer, with no position yet (INITIALIZING; "
           "ConsumerCoordinator.onJoinComplete)", _assigned),
    Action("revoked", "member", "revoked or lost: the position goes with it (SubscriptionState.assignFromSubscribed; "
           "consumption.retain)", _revoked),
    Action("stopped", "environment", "the consumer process ends: crash, close(), a fatal error or a restart "
           "(its unanswered OffsetFetch and answers are gone)", _stopped),
    Action("fetch-sent", "member", "an owned partition without a position is asked for (OffsetFetch; "
           "refreshCommittedOffsetsIfNeeded)", _fetch_sent),
    Action("fetch-answered", "coordinator", "the coordinator answers with the group's committed offset, -1 when "
           "there is none (handle_offset_fetch)", _fetch_answered),
    Action("fetch-abandoned", "member", "the answer is an error (asked again later) or the consumer failed on "
           "another partition of the same answer", _fetch_abandoned),
    Action("fetch-received", "member", "the answer arrives: a still owned partition without a position starts at "
           "the committed offset, else where auto.offset.reset says; none fails (on_offsets_fetched)", _fetch_received),
    Action("poll", "member", "a poll returns 1..max.poll.records records from the position; sync processing "
           "processes them at once (poll_records)", _poll),
    Action("processed", "member", "the async worker finishes records from the processed offset up to the position "
           "(process_due)", _processed),
    Action("commit-sent", "member", "an OffsetCommit of the position (auto-commit: allConsumed) or of what was "
           "processed (commitSync / commitAsync, also in onPartitionsRevoked)", _commit_sent),
    Action("commit-stored", "coordinator", "the coordinator stores one in-flight commit, whoever sent it "
           "(handle_offset_commit)", _commit_stored),
    Action("commit-dropped", "coordinator", "an in-flight commit is rejected, or lost with a crashed connection or "
           "a moved coordinator", _commit_dropped),
)
BY_NAME = {a.name: a for a in ACTIONS}


# -- the inductive invariant ------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    name: str
    text: str
    build: Callable[[DState, Settings], Any]


def _each(build: Callable[[Any], Any]) -> Any:
    j = z3.Const("j", DMember)
    return z3.ForAll([j], build(j))


INVARIANTS: dict[str, Part] = {p.name: p for p in (
    Part("offsets-in-log", "0 <= base <= log end; committed and the largest in-flight commit are -1 or in [0, log end]",
         lambda s, c: z3.And(s.base >= 0, s.base <= s.log_end, s.committed >= -1, s.committed <= s.log_end,
                             s.in_flight >= -1, s.in_flight <= s.log_end)),
    Part("positions-owned", "a consumer has a position only for a partition it owns",
         lambda s, c: _each(lambda j: z3.Implies(s.has_pos[j], s.own[j]))),
    Part("positions-in-log", "0 <= processed <= position <= log end; with sync processing processed = position",
         lambda s, c: _each(lambda j: z3.Implies(s.has_pos[j], z3.And(
             s.processed[j] >= 0, s.processed[j] <= s.pos[j], s.pos[j] <= s.log_end,
             z3.Implies(z3.Not(c.async_processing), s.processed[j] == s.pos[j]))))),
    Part("answers-in-log", "an OffsetFetch answer in flight was asked for and is -1 or in [0, log end]",
         lambda s, c: _each(lambda j: z3.Implies(s.answered[j], z3.And(
             s.asked[j], s.answer[j] >= -1, s.answer[j] <= s.log_end)))),
    Part("processed-covered", "every offset from base up to a consumer's processed offset was processed by someone",
         lambda s, c: _each(lambda j: z3.Implies(s.has_pos[j], covered(s, s.processed[j])))),
    Part("answers-covered", "every offset from base up to an OffsetFetch answer in flight was processed",
         lambda s, c: _each(lambda j: z3.Implies(s.answered[j], covered(s, s.answer[j])))),
    Part("in-flight-covered", "every offset from base up to any in-flight commit was processed",
         lambda s, c: covered(s, s.in_flight)),
    Part("committed-covered", "no-gap: every offset from base up to the group's committed offset was processed "
         "(at least once) by some consumer", lambda s, c: covered(s, s.committed)),
)}


def invariant(s: DState, cfg: Settings) -> Any:
    return z3.And([p.build(s, cfg) for p in INVARIANTS.values()])


@dataclass
class Frame:
    s: DState
    t: DState
    cfg: Settings
    k: Any
    x: Any
    y: Any
    premises: list[Any] = field(default_factory=list)


def _frame(safe: bool = True) -> Frame:
    s, t, cfg = DState.fresh("_0"), DState.fresh("_1"), Settings.fresh()
    k, x, y = z3.Const("k", DMember), z3.Int("x"), z3.Int("y")
    premises = [cfg.wellformed(), invariant(s, cfg)]
    if safe:
        premises.append(cfg.safe())
    return Frame(s, t, cfg, k, x, y, premises)


def _induction(prover: Prover, mutants: frozenset[str], f: Frame | None = None,
               step_property: tuple[str, Callable[[Frame, Action], Any]] | None = None) -> list[str]:
    """Initiation and consecution of the whole invariant; returns the steps that break it (or the
    step property)."""
    f = f or _frame()
    prover.valid("initiation: the initial state satisfies the invariant", invariant(f.s, f.cfg),
                 [f.cfg.wellformed(), initial(f.s)])
    solver = prover.incremental(f.premises)

    def relation(a: Action) -> Any:
        return a.relation(f.s, f.t, f.cfg, f.k, f.x, f.y, mutants)

    across = None if step_property is None else (step_property[0], partial(step_property[1], f))
    return consecution(prover, solver, ACTIONS, relation, invariant(f.t, f.cfg), "preserves the invariant", across)


def _invariant_facts(steps: bool = False) -> dict[str, Any]:
    facts: dict[str, Any] = {"invariants": [f"{p.name}: {p.text}" for p in INVARIANTS.values()]}
    if steps:
        facts["steps"] = [f"{a.name} ({a.kind}): {a.doc}" for a in ACTIONS]
    facts["sizes"] = ("every log length, every max.poll.records >= 1, every number of consumers, every reset "
                      "policy; enable.auto.commit and async processing not both on")
    return facts


def _witness_sat(prover: Prover, name: str, solver: Any) -> None:
    """A sat query recorded as a witness (expected sat), on an incremental solver."""
    answer = solver.check()
    result = "sat" if answer == z3.sat else "unsat" if answer == z3.unsat else "unknown"
    note = "" if result != "unknown" else str(solver.reason_unknown())
    prover.queries.append(Query(name, "sat", result, note))


def _finish(prover: Prover, cfg: RunConfig, broken: list[str], summary: str, facts: dict[str, Any]) -> Outcome:
    if broken:
        facts = {**facts, "broken_by": sorted(set(broken))}
    if cfg.mutants and broken:
        found = refute_position_ignores_committed(cfg) if POSITION_IGNORES_COMMITTED in cfg.mutants else None
        if found is not None and found.counterexample:
            prover.record(found.check, True, found.summary)
            return outcome(prover, f"refuted at {', '.join(sorted(set(broken)))}: {found.summary}",
                           counterexample=found.counterexample, violated="no-gap", facts={**facts, **found.facts})
        return outcome(prover, f"the induction fails under the mutant (at {', '.join(sorted(set(broken)))}) but no "
                               f"concrete counterexample was found", facts=facts)
    return outcome(prover, summary, facts=facts)


# -- obligations ----------------------------------------------------------------------------------

_ASSUMPTIONS = ("delivery-one-log", "delivery-settings", "delivery-ownership-free")
_SOURCE = ("SubscriptionState (positions, allConsumed, resetInitializingPositions); ConsumerCoordinator."
           "refreshCommittedOffsetsIfNeeded / maybeAutoCommitOffsetsAsync; OffsetMetadataManager commitOffset / "
           "fetchOffsets; model.consumption")


def _placement(f: Frame, a: Action) -> Any:
    """no-gap as a step: a position placed by an OffsetFetch answer is the committed offset in the
    answer when there is one, else 0 (earliest) or the log end (latest); none places nothing."""
    if a.name != "fetch-received":
        return z3.BoolVal(True)
    s, t, k = f.s, f.t, f.k
    placed = z3.And(z3.Not(s.has_pos[k]), t.has_pos[k])
    expected = z3.If(s.answer[k] >= 0, s.answer[k], z3.If(f.cfg.reset == EARLIEST, 0, s.log_end))
    return z3.And(z3.Implies(placed, t.pos[k] == expected),
                  z3.Implies(z3.And(s.answer[k] < 0, f.cfg.reset == NONE), z3.Not(placed)))


@obligation(
    id="delivery-no-gap", invariant="no-gap", scope="unbounded",
    statement="at least once: every record of a partition from where the group's reading legitimately starts "
              "(offset 0, or the log end when a consumer was told nothing was committed under "
              "auto.offset.reset=latest) up to the group's committed offset has been processed by some consumer, "
              "for any log length, max.poll.records and number of consumers, with any commit policy except "
              "auto-commit over async processing; a new owner starts at the committed offset in its OffsetFetch "
              "answer, else at the log start (earliest) or end (latest), and fails under none",
    source=_SOURCE,
    assumptions=_ASSUMPTIONS,
    mutants=(POSITION_IGNORES_COMMITTED,),
)
def delivery_no_gap(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    broken = _induction(prover, cfg.mutants, step_property=("a new position is the committed offset, or the reset "
                                                            "policy's", _placement))
    return _finish(prover, cfg, broken, "no record below the committed offset is skipped (at-least-once), for "
                                        "every log length, poll size and number of consumers",
                   _invariant_facts(steps=True))


def _not_ahead(f: Frame, a: Action) -> Any:
    e = a.effect(f.s, f.cfg, f.k, f.x, f.y, frozenset())
    if e.commit is None:
        return z3.BoolVal(True)
    return z3.And(e.commit >= 0, e.commit <= f.s.processed[f.k], e.commit <= f.s.pos[f.k])


@obligation(
    id="delivery-committed-not-ahead", invariant="committed-not-ahead", scope="unbounded",
    statement="a consumer commits no further than it has processed (and so no further than its position), "
              "and the group's committed offset is never past what consumers processed; the exception, "
              "auto-commit over async processing, is shown reachable (Kafka's documented loss)",
    source=_SOURCE + "; KafkaConsumer javadoc, Manual Offset Control",
    assumptions=_ASSUMPTIONS,
)
def delivery_committed_not_ahead(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    f = _frame()
    broken = _induction(prover, cfg.mutants, f=f, step_property=("the commit is at most processed <= position",
                                                                 _not_ahead))
    # tight: with auto-commit over async processing the same step commits past what was processed
    g = _frame(safe=False)
    e = BY_NAME["commit-sent"].effect(g.s, g.cfg, g.k, g.x, g.y, frozenset())
    prover.witness("tight: with enable.auto.commit and async processing a consumer can commit past what it "
                   "processed (the assumption is needed)",
                   [*g.premises, g.cfg.auto_commit, g.cfg.async_processing,
                    BY_NAME["commit-sent"].relation(g.s, g.t, g.cfg, g.k, g.x, g.y, cfg.mutants),
                    e.commit > g.s.processed[g.k]])
    # Shown on one concrete pre-state (one record in the log, the consumer's position past it, nothing
    # processed or committed yet): left free, the state makes Z3 search a model for the invariant's
    # quantifiers, which its model-based instantiation may give up on ("incomplete quantifiers")
    # depending only on the order terms were created in -- it did in a full run (issue 17).
    s = g.s
    prover.witness("tight: ... so an in-flight commit passes a record nobody processed (storing it leaves a gap)",
                   [*g.premises, g.cfg.auto_commit, g.cfg.async_processing,
                    s.log_end == 1, s.committed == -1, s.in_flight == -1, s.base == 0,
                    s.done == z3.K(z3.IntSort(), False), s.own == z3.K(DMember, True),
                    s.has_pos == z3.K(DMember, True), s.pos == z3.K(DMember, z3.IntVal(1)),
                    s.processed == z3.K(DMember, z3.IntVal(0)), s.asked == z3.K(DMember, False),
                    s.answered == z3.K(DMember, False), s.answer == z3.K(DMember, z3.IntVal(-1)),
                    BY_NAME["commit-sent"].relation(g.s, g.t, g.cfg, g.k, g.x, g.y, cfg.mutants),
                    z3.Not(covered(g.t, g.t.in_flight))])
    return _finish(prover, cfg, broken, "commits never pass what was processed", _invariant_facts())


def _owned_only(f: Frame, a: Action) -> Any:
    e = a.effect(f.s, f.cfg, f.k, f.x, f.y, frozenset())
    if e.commit is None:
        return z3.BoolVal(True)
    return z3.And(f.s.own[f.k], f.s.has_pos[f.k])


@obligation(
    id="delivery-commit-owned-only", invariant="commit-owned-only", scope="unbounded",
    statement="a consumer commits a position only for a partition it owns and has a position for (revocation "
              "and loss drop the position first; commitSync in onPartitionsRevoked runs before); that a commit "
              "from an old generation is rejected is protocol-commit-fencing",
    source="ConsumerCoordinator.onJoinPrepare / invokePartitionsRevoked; SubscriptionState.allConsumed; "
           "model.classic.member._revoke / _send_commit",
    assumptions=_ASSUMPTIONS,
)
def delivery_commit_owned_only(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    broken = _induction(prover, cfg.mutants, step_property=("a commit is of an owned partition", _owned_only))
    return _finish(prover, cfg, broken, "commits only of owned partitions with a position", _invariant_facts())


def _monotonic(f: Frame, a: Action) -> Any:
    s, t, k = f.s, f.t, f.k
    e = a.effect(s, f.cfg, k, f.x, f.y, frozenset())
    j = z3.Const("jm", DMember)
    claims = []
    if e.consumed is not None:
        flag, first, end = e.consumed
        claims.append(z3.Implies(flag, z3.And(s.own[k], s.has_pos[k], first == s.processed[k], end > first,
                                              t.processed[k] == end, end <= t.pos[k])))
    moved = z3.And(s.has_pos[j], t.has_pos[j], t.processed[j] != s.processed[j])
    if e.consumed is not None:
        flag = e.consumed[0]
        claims.append(z3.ForAll([j], z3.Implies(moved, z3.And(flag, j == k))))
    else:
        claims.append(z3.ForAll([j], z3.Not(moved)))
    claims.append(z3.ForAll([j], z3.Implies(z3.And(s.has_pos[j], t.has_pos[j]),
                                            z3.And(t.pos[j] >= s.pos[j], t.processed[j] >= s.processed[j]))))
    if a.name != "fetch-received":
        claims.append(z3.ForAll([j], z3.Implies(t.has_pos[j], s.has_pos[j])))
    return z3.And(claims)


@obligation(
    id="delivery-monotonic-consumption", invariant="monotonic-consumption", scope="unbounded",
    statement="within one ownership a consumer's position and processed offset only go up, and every batch it "
              "processes starts exactly at its processed offset (no gap, no re-read) of a partition it owns; a "
              "new ownership (a position where there was none) starts only at an OffsetFetch answer",
    source="Fetcher / FetchCollector (the next fetch starts at the position); SubscriptionState.position; "
           "model.consumption.poll_records / process_due",
    assumptions=_ASSUMPTIONS,
)
def delivery_monotonic_consumption(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    broken = _induction(prover, cfg.mutants, step_property=("consumption continues where it stood", _monotonic))
    return _finish(prover, cfg, broken, "consumption within an ownership is contiguous and increasing",
                   _invariant_facts())


@obligation(
    id="delivery-steps-reachable", invariant="no-gap", scope="unbounded",
    statement="non-vacuity of the delivery proofs: every step is taken from some state satisfying the inductive "
              "invariant, under each reset policy the answer-received step places a position (or fails, under "
              "none), and the invariant allows two consumers with positions and a committed offset",
    source="the symbolic model's guards (model.proofs.delivery)",
    assumptions=_ASSUMPTIONS,
)
def delivery_steps_reachable(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    f = _frame()
    solver = prover.incremental(f.premises)
    everything = f.s.done == z3.K(z3.IntSort(), True)  # a hint for the model search: all offsets processed
    for a in ACTIONS:
        solver.push()
        solver.add(a.relation(f.s, f.t, f.cfg, f.k, f.x, f.y, cfg.mutants), everything)
        _witness_sat(prover, f"{a.name} is enabled in some state satisfying the invariant", solver)
        solver.pop()
    rel = BY_NAME["fetch-received"].relation(f.s, f.t, f.cfg, f.k, f.x, f.y, cfg.mutants)
    cases = (("from the committed offset", [f.s.answer[f.k] > 0, f.t.has_pos[f.k]]),
             ("earliest, nothing committed", [f.s.answer[f.k] == -1, f.cfg.reset == EARLIEST, f.t.has_pos[f.k],
                                              f.s.log_end > 0]),
             ("latest, nothing committed", [f.s.answer[f.k] == -1, f.cfg.reset == LATEST, f.t.has_pos[f.k],
                                            f.s.log_end > 0]),
             ("none, nothing committed: the consumer fails", [f.s.answer[f.k] == -1, f.cfg.reset == NONE,
                                                              f.s.own[f.k], z3.Not(f.t.own[f.k])]))
    for label, extra in cases:
        solver.push()
        solver.add(rel, *extra)
        _witness_sat(prover, f"fetch-received places a position {label}", solver)
        solver.pop()
    j = z3.Const("j2", DMember)
    solver.push()
    solver.add(j != f.k, f.s.has_pos[f.k], f.s.has_pos[j], f.s.committed > 0, f.s.pos[f.k] > f.s.committed,
               f.s.pos[j] > 0)
    _witness_sat(prover, "the invariant allows two consumers with positions past a committed offset", solver)
    solver.pop()
    return outcome(prover, f"all {len(ACTIONS)} delivery steps are enabled under the invariant",
                   facts={"steps": [f"{a.name} ({a.kind}): {a.doc}" for a in ACTIONS]})


# -- the tie with the executable model ----------------------------------------------------------------

Local = tuple[bool, bool, int, int, bool, bool, int]  # own, has_pos, pos, processed, asked, answered, answer


@dataclass(frozen=True)
class Abstract:
    """The abstraction of one partition of a concrete state (no ghosts)."""

    log_end: int
    committed: int
    in_flight: int
    members: Mapping[str, Local]  # running incarnations, by connection id


def abstract(state: sy.SystemState, tp: TopicPartition) -> Abstract:
    committed = dict(state.group.offsets).get(tp, -1)
    in_flight = -1
    for _, queue in state.network.requests:
        for request in queue:
            if isinstance(request, OffsetCommitRequest):
                for p, offset in request.offsets:
                    if p == tp:
                        in_flight = max(in_flight, offset)
    answers: dict[str, int] = {}
    for conn, queue in state.network.responses:
        for response in queue:
            if isinstance(response, OffsetFetchResponse) and response.error is Errors.NONE:
                for p, offset in response.offsets:
                    if p == tp:
                        answers[conn] = offset
    members: dict[str, Local] = {}
    for m in sy.running(state):
        c = m.consumption
        if c is None:
            continue
        positions, processed = dict(c.positions), dict(c.processed)
        asked = tp in (c.fetch_in_flight or ())
        has_pos = tp in positions
        pos = positions.get(tp, 0)
        proc = processed.get(tp, pos) if m.config.delivery is not None and m.config.delivery.processing == "async" \
            else pos
        answered = asked and m.conn in answers
        members[m.conn] = (tp in m.owned, has_pos, pos, proc, asked, answered, answers.get(m.conn, 0))
    return Abstract(log_end(state.log, tp), committed, in_flight, members)


_STOPPED: Local = (False, False, 0, 0, False, False, 0)


def _pin(s: DState, a: Abstract, consts: Mapping[str, Any]) -> list[Any]:
    out = [s.log_end == a.log_end, s.committed == a.committed, s.in_flight == a.in_flight]
    for conn, k in consts.items():
        own, has_pos, pos, proc, asked, answered, answer = a.members.get(conn, _STOPPED)
        out += [s.own[k] == own, s.has_pos[k] == has_pos, s.asked[k] == asked, s.answered[k] == answered]
        if has_pos:
            out += [s.pos[k] == pos, s.processed[k] == proc]
        if answered:
            out.append(s.answer[k] == answer)
    return out


def _settings_of(config: sy.SystemConfig, cfg: Settings) -> list[Any]:
    d = config.delivery
    assert d is not None
    return [cfg.auto_commit == config.auto_commit, cfg.async_processing == (d.processing == "async"),
            cfg.reset == RESET_CODES[d.auto_offset_reset], cfg.max_poll == d.max_poll_records]


_GLOBAL = ("produce", "commit-stored", "commit-dropped")  # steps of no particular consumer


def _stutter(s: DState, t: DState) -> Any:
    return z3.And([t.get(n) == s.get(n) for n in OBSERVABLE])


class Chains:
    """Z3 solvers holding "at most ``depth`` symbolic steps (or stutters) between two states" for
    one delivery configuration and a number of consumers, built once; each check pins both ends."""

    def __init__(self, config: sy.SystemConfig, timeout_ms: int) -> None:
        self.config = config
        self.timeout_ms = timeout_ms
        self._built: dict[tuple[int, int], tuple[Any, list[DState], list[Any]]] = {}
        self._answers: dict[tuple[Any, ...], str] = {}  # an exploration meets the same pair many times

    def _chain(self, members: int, depth: int) -> tuple[Any, list[DState], list[Any]]:
        key = (members, depth)
        if key not in self._built:
            consts = [z3.Const(f"m_{i}", DMember) for i in range(members)]
            cfg = Settings.fresh("_tie")
            states = [DState.fresh(f"_tie{i}") for i in range(depth + 1)]
            solver = z3.Solver()
            solver.set("timeout", self.timeout_ms)
            solver.add(cfg.wellformed(), *_settings_of(self.config, cfg))
            if members > 1:
                solver.add(z3.Distinct(*consts))
            for i in range(depth):
                s, t = states[i], states[i + 1]
                k, x, y = z3.Const(f"k{i}", DMember), z3.Int(f"x{i}"), z3.Int(f"y{i}")
                options = [_stutter(s, t)]
                for a in ACTIONS:
                    rel = a.relation(s, t, cfg, k, x, y, self.config.mutants, ghosts=False)
                    options.append(rel if a.name in _GLOBAL else z3.And(rel, z3.Or([k == c for c in consts])))
                solver.add(z3.Or(options))
            self._built[key] = (solver, states, consts)
        return self._built[key]

    def explained(self, before: Abstract, after: Abstract, depth: int) -> str:
        """'sat' when ``after`` is reached from ``before`` by at most ``depth`` symbolic steps."""
        key = (_key(before), _key(after), depth)
        if key in self._answers:
            return self._answers[key]
        conns = sorted(set(before.members) | set(after.members))
        solver, states, consts = self._chain(len(conns), depth)
        named = dict(zip(conns, consts, strict=True))
        solver.push()
        try:
            solver.add(*_pin(states[0], before, named), *_pin(states[-1], after, named))
            answer = str(solver.check())
            self._answers[key] = answer
            return answer
        finally:
            solver.pop()


def _key(a: Abstract) -> tuple[Any, ...]:
    return (a.log_end, a.committed, a.in_flight, tuple(sorted(a.members.items())))


def _consumed_ranges(events: Iterable[Mapping[str, Any]]) -> dict[tuple[str, TopicPartition], list[tuple[int, int]]]:
    out: dict[tuple[str, TopicPartition], list[tuple[int, int]]] = {}
    for e in events:
        if e.get("name") != ev.RECORDS_CONSUMED:
            continue
        for p in e.get("partitions", ()):
            key = (str(e.get("member")), TopicPartition(p["topic"], p["partition"]))
            out.setdefault(key, []).append((p["minOffset"], p["maxOffset"] + 1))
    return out


@dataclass
class TieResult:
    transitions: int = 0
    changed: int = 0  # (transition, partition) pairs whose abstraction changed
    explained: int = 0
    consumed_checked: int = 0
    divergences: list[str] = field(default_factory=list)
    unknown: int = 0
    placed_from_committed: int = 0  # positions taken from a committed offset
    placed_by_reset: int = 0  # positions from auto.offset.reset
    commits_stored: int = 0  # changes of the committed offset
    commits_checked: int = 0  # offsets in OffsetCommits sent, checked against the sender's position
    deepest: int = 0  # the most symbolic steps one concrete transition needed


def _member_name(conn: str) -> str:
    return conn.split("#", 1)[0]


def _show(local: Local | None) -> str:
    if local is None:
        return "not running"
    own, has_pos, pos, proc, asked, answered, answer = local
    parts = ["owns" if own else "does not own"]
    if has_pos:
        parts.append(f"position {pos}" + (f" (processed {proc})" if proc != pos else ""))
    if asked:
        parts.append(f"OffsetFetch answered {answer}" if answered else "OffsetFetch asked")
    return ", ".join(parts)


def _show_all(a: Abstract) -> str:
    members = "; ".join(f"{conn}: {_show(local)}" for conn, local in sorted(a.members.items()))
    return f"[log end {a.log_end}, committed {a.committed}, largest commit in flight {a.in_flight}; {members}]"


def _commits_sent(before: sy.SystemState, after: sy.SystemState) -> dict[TopicPartition, list[tuple[str, int]]]:
    """The OffsetCommits a transition sent, per partition: (connection, offset)."""
    old = dict(before.network.requests)
    out: dict[TopicPartition, list[tuple[str, int]]] = {}
    for conn, queue in after.network.requests:
        prev = old.get(conn, ())
        if queue[:len(prev)] == prev:
            new = queue[len(prev):]
        elif prev and queue[:len(prev) - 1] == prev[1:]:
            new = queue[len(prev) - 1:]  # the head was delivered meanwhile
        else:
            new = ()
        for request in new:
            if isinstance(request, OffsetCommitRequest):
                for tp, offset in request.offsets:
                    out.setdefault(tp, []).append((conn, offset))
    return out


def check_transition(before: sy.SystemState, action: sy.Action, after: sy.SystemState,
                     events: tuple[dict[str, Any], ...], partitions: Sequence[TopicPartition], chains: Chains,
                     auto_commit: bool, result: TieResult, label: str, depth: int = 5) -> None:
    """Check one transition of the executable model against the symbolic delivery steps (see the module
    doc); divergences go to ``result``, each prefixed with ``label``."""
    result.transitions += 1
    ranges = _consumed_ranges(events)
    sent = _commits_sent(before, after)
    for tp in partitions:
        a, b = abstract(before, tp), abstract(after, tp)
        if a == b and not any(key[1] == tp for key in ranges) and tp not in sent:
            continue
        result.changed += 1
        result.commits_stored += a.committed != b.committed
        for conn, local in b.members.items():
            old = a.members.get(conn)
            if local[1] and old is not None and not old[1]:
                if old[6] >= 0 and old[5]:
                    result.placed_from_committed += 1
                else:
                    result.placed_by_reset += 1
        # monotonic-consumption, by direct evaluation: the batches continue the processed offset
        for (name, where), got in ranges.items():
            if where != tp:
                continue
            result.consumed_checked += 1
            owner = next((c for c in a.members if _member_name(c) == name), "")
            old, new = a.members.get(owner), b.members.get(owner)
            expect = old[3] if old is not None else -1
            ok = old is not None and new is not None and old[1] and new[1]
            for first, end in got:
                ok = ok and first == expect and end > first
                expect = end
            if not ok or new is None or new[3] != expect:
                result.divergences.append(f"{label}: {sy.describe(before, action)}: {name} consumed {tp} "
                                          f"{got} from {_show(old)} to {_show(new)}")
        # committed-not-ahead and commit-owned-only, by direct evaluation: a commit sent is of an owned
        # partition with a position, and carries the position (auto-commit) or the processed offset
        for conn, offset in sent.get(tp, ()):
            result.commits_checked += 1
            old, new = a.members.get(conn), b.members.get(conn)
            field_ = 2 if auto_commit else 3
            allowed = {loc[field_] for loc in (old, new) if loc is not None and loc[1]}
            if old is None or not old[0] or not old[1] or offset not in allowed:
                result.divergences.append(f"{label}: {sy.describe(before, action)}: {conn} commits {tp} at "
                                          f"{offset} from {_show(old)} to {_show(new)}")
        verdict = "unsat"
        for d in sorted({min(1, depth), min(2, depth), depth}):
            verdict = chains.explained(a, b, d)
            if verdict != "unsat":
                break
        if verdict == "sat":
            result.explained += 1
            result.deepest = max(result.deepest, d)
        elif verdict == "unknown":
            result.unknown += 1
        else:
            result.divergences.append(f"{label}: {sy.describe(before, action)}: {tp}: no sequence of at "
                                      f"most {depth} symbolic steps leads from {_show_all(a)} to {_show_all(b)}")


def check_run(scenario: Scenario, seed: int, result: TieResult, timeout_ms: int, depth: int = 5,
              mutants: frozenset[str] = frozenset()) -> None:
    """Run ``scenario`` and check every transition against the symbolic steps (see the module doc)."""
    partitions = [TopicPartition(t, p) for t, n in scenario.topics for p in range(n)]
    chains = Chains(scenario.config, timeout_ms)

    def observe(before: sy.SystemState, action: sy.Action, after: sy.SystemState,
                events: tuple[dict[str, Any], ...]) -> None:
        check_transition(before, action, after, events, partitions, chains, scenario.config.auto_commit, result,
                         f"seed {seed}", depth)

    simulate(scenario, seed=seed, mutants=mutants, observer=observe)


POLICIES = ("sync-revoke", "auto", "async-commit", "auto-async", "sync", "none-commit")


def random_scenario(rng: random.Random, policy: str, reset: str | None = None) -> Scenario:
    """A small scenario with records: producers, joins, crashes, restarts, leaves, stalls, a
    coordinator move; the commit ``policy`` (one of :data:`POLICIES`), a random reset policy,
    ``max.poll.records`` and processing (``reset`` fixes ``auto.offset.reset``)."""
    config: dict[str, Any] = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 2000,
                              "initial_rebalance_delay_ms": 0,
                              "auto_offset_reset": reset or rng.choice(("earliest", "latest", "earliest", "latest",
                                                                        "none")),
                              "max_poll_records": rng.randint(1, 6)}
    if policy.startswith("auto"):
        config.update(enable_auto_commit=True, auto_commit_interval_ms=rng.choice((500, 1500, 4000)))
    else:
        config.update(enable_auto_commit=False, commit={"sync": "sync", "sync-revoke": "sync",
                                                        "async-commit": "async", "none-commit": "none"}[policy],
                      commit_on_revoke=policy == "sync-revoke")
    if policy in ("auto-async", "async-commit") or rng.random() < 0.2:
        config.update(processing="async", processing_ms=rng.choice((100, 700, 2500)))
    until = 12000
    steps: list[dict[str, Any]] = [{"at": 0, "do": "produce", "topic": "t", "records": rng.randint(1, 4),
                                    "every_ms": rng.choice((400, 900)), "until": until - 2000}]
    names = ["a", "b", "c"][:rng.randint(2, 3)]
    events: list[dict[str, Any]] = []
    for i, n in enumerate(names):
        events.append({"at": 0 if i == 0 else rng.randint(0, 5000), "do": "join", "member": n, "topics": ["t"],
                       "assignors": [rng.choice(("range", "roundrobin", "cooperative-sticky"))]})
    victim = rng.choice(names)
    start = max(e["at"] for e in events if e["member"] == victim)
    fault = rng.choice(("crash", "leave", "restart", "stall"))
    at = start + rng.randint(1500, 6000)
    if fault == "crash":
        events.append({"at": at, "do": "crash", "member": victim})
        if rng.random() < 0.5:
            events.append({"at": at + rng.randint(500, 3000), "do": "restart", "member": victim})
    elif fault == "stall":
        events.append({"at": at, "do": "stall", "member": victim, "for_ms": rng.choice((2000, 8000))})
    else:
        events.append({"at": at, "do": fault, "member": victim})
    if rng.random() < 0.3:
        events.append({"at": rng.randint(3000, 12000), "do": "move_coordinator"})
    steps += sorted(events, key=lambda e: e["at"])
    # the same assignor for every member (one protocol per group)
    assignor = steps[1]["assignors"]
    for s in steps:
        if s["do"] == "join":
            s["assignors"] = assignor
    return parse({"topics": {"t": rng.randint(1, 3)}, "config": config, "steps": steps, "until": until})


def _deepen(bounds: Mapping[str, int]) -> Mapping[str, int]:
    return {**bounds, "runs": bounds.get("runs", 12) * 2}


@obligation(
    id="delivery-tie", invariant="no-gap", scope="bounded",
    statement="the delivery proofs are about the executable model: in seeded runs of model.system with records "
              "(producers, joins, crashes, restarts, leaves, stalls, coordinator moves; auto-commit, commitSync, "
              "commitAsync, commit in onPartitionsRevoked, async processing; every reset policy), every "
              "transition's change of a partition's record state is a sequence of the symbolic delivery steps "
              "(Z3 on both abstractions); and, by direct evaluation, every records_consumed entry continues exactly "
              "from the consumer's processed offset and every OffsetCommit sent is of an owned partition with a "
              "position, carrying the position (auto-commit) or the processed offset",
    source="model.system_run.simulate; model.consumption; model.proofs.delivery.abstract",
    assumptions=("delivery-one-log", "fifo-per-connection"),
    bounds={"runs": 12, "depth": 5},
    deepen=_deepen,
)
def delivery_tie(cfg: RunConfig) -> Outcome:
    bounds = {**delivery_tie.bounds, **(cfg.bounds or {})}
    prover = Prover(cfg.timeout_ms)
    rng = random.Random(cfg.seed)
    result = TieResult()
    for run in range(bounds["runs"]):
        scenario = random_scenario(rng, POLICIES[run % len(POLICIES)])
        check_run(scenario, run, result, min(cfg.timeout_ms, 5000), bounds["depth"], cfg.mutants)
    ok = not result.divergences and result.unknown == 0
    note = "; ".join(result.divergences[:3])
    prover.record(f"every record-layer change of {bounds['runs']} seeded runs is a sequence of at most "
                  f"{bounds['depth']} symbolic steps ({result.changed} changes of {result.transitions} transitions), "
                  f"every records_consumed entry continues the processed offset ({result.consumed_checked} "
                  f"checked) and every OffsetCommit sent is of an owned partition at the sender's position or "
                  f"processed offset ({result.commits_checked} checked)", ok, note)
    prover.record("the runs exercise the record layer (consumption, stored commits, positions from a committed "
                  "offset and from auto.offset.reset)",
                  min(result.consumed_checked, result.commits_stored, result.commits_checked,
                      result.placed_from_committed, result.placed_by_reset) > 0)
    return outcome(prover, "the executable model's record steps are steps of the symbolic model" if ok else
                   f"{len(result.divergences)} divergences, {result.unknown} unknown: {note}",
                   bounds=bounds, facts={"transitions": result.transitions, "changes": result.changed,
                                         "consumed_entries": result.consumed_checked,
                                         "placed_from_committed": result.placed_from_committed,
                                         "placed_by_reset": result.placed_by_reset,
                                         "commits_stored": result.commits_stored,
                                         "commits_sent_checked": result.commits_checked,
                                         "most_steps_per_transition": result.deepest,
                                         "divergences": result.divergences[:10]})


# -- the mutant's concrete counterexample -------------------------------------------------------------


@dataclass
class Found:
    summary: str
    check: str = ""
    counterexample: tuple[dict[str, Any], ...] = ()
    facts: dict[str, Any] = field(default_factory=dict)


def mutant_scenario(reset: str = "latest") -> Scenario:
    """A consumer commits what it processes (commitSync after each poll), crashes, and the partition
    goes to the other consumer after the session timeout, while producers keep appending."""
    return parse({
        "topics": {"t": 1},
        "config": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 2000, "initial_rebalance_delay_ms": 0,
                   "enable_auto_commit": False, "commit": "sync", "auto_offset_reset": reset,
                   "max_poll_records": 5},
        "steps": [{"at": 0, "do": "join", "member": "a", "topics": ["t"], "assignors": ["range"]},
                  {"at": 500, "do": "produce", "topic": "t", "records": 2, "every_ms": 500, "until": 14000},
                  {"at": 3000, "do": "crash", "member": "a"},
                  {"at": 3000, "do": "join", "member": "b", "topics": ["t"], "assignors": ["range"]}],
        "until": 16000})


_SHOWN = {ev.PARTITIONS_ASSIGNED, ev.PARTITIONS_REVOKED, ev.PARTITIONS_LOST, ev.GROUP_JOINED, ev.RECORDS_CONSUMED,
          ev.OFFSETS_COMMITTED, ev.SHUTDOWN_COMPLETE, ev.COORDINATOR_REBALANCE, ev.STARTUP_COMPLETE}


def refute_position_ignores_committed(cfg: RunConfig) -> Found:
    """Run :func:`mutant_scenario` with and without the mutant: with it, records are lost; and the
    mutant run, checked against the (correct) symbolic steps, leaves them at an OffsetFetch answer."""
    scenario = mutant_scenario()
    runs = {}
    for mutated in (False, True):
        run = simulate(scenario, seed=cfg.seed, mutants=cfg.mutants if mutated else frozenset())
        assert run.final is not None
        runs[mutated] = (run, totals(summarize(run.events, run.final.log)))
    clean, broken = runs[False][1], runs[True][1]
    if broken.lost == 0 or clean.lost != 0:
        return Found(f"the mutant run lost {broken.lost} records (the correct run {clean.lost})")
    tie = TieResult()
    check_run(scenario, cfg.seed, tie, min(cfg.timeout_ms, 5000), mutants=cfg.mutants)
    where = tie.divergences[0] if tie.divergences else "no divergence found"
    events = tuple(e for e in runs[True][0].events if e.get("name") in _SHOWN)
    return Found(f"with the mutant the new owner starts at the log end instead of the committed offset: "
                 f"{broken.lost} records skipped (lost), against {clean.lost} without it (model.records.summarize); "
                 f"the mutant run leaves the symbolic steps at: {where}",
                 check="the executable model with the mutant loses records that the correct model delivers",
                 counterexample=events,
                 facts={"scenario": "a commits after each poll, crashes at 3000 ms; b gets the partition after the "
                                    "session timeout; producers append every 500 ms; auto.offset.reset=latest",
                        "records": {"with_mutant": {"consumed": broken.consumed, "lost": broken.lost,
                                                    "duplicated": broken.duplicated},
                                    "without": {"consumed": clean.consumed, "lost": clean.lost,
                                                "duplicated": clean.duplicated}},
                        "first_divergence": where})


OBLIGATIONS: tuple[Obligation, ...] = (delivery_no_gap, delivery_committed_not_ahead, delivery_commit_owned_only,
                                       delivery_monotonic_consumption, delivery_steps_reachable, delivery_tie)

