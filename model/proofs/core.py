"""What a proof obligation is: a claim, its scope and bounds, its assumptions, and how it is run.

An :class:`Obligation` is a small function decorated with everything a reader of the proof report
needs to judge it::

    @obligation(id="range-balance", invariant="balanced", scope="unbounded",
                statement="...", assumptions=("no-racks",), source="RangeAssignor.assignRanges")
    def range_balance(cfg: RunConfig) -> Outcome: ...

Running it returns an :class:`Outcome`: ``proved`` only when every solver query gave the answer
it needed (``unsat`` for proof steps, ``sat`` for the witnesses that show a step is not vacuous),
``unknown`` when Z3 gave up on any query, ``failed`` otherwise. Under a mutant
(``RunConfig.mutants``) the same function is expected to fail, and to say why with a concrete
counterexample: a list of trace events (``model.events``) produced by replaying the solver's
counterexample through the executable model.

Timing is not measured here (``model`` has no clock): the command that runs obligations times them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from model.proofs.solver import DEFAULT_TIMEOUT_MS, Prover, Query, Status

Scope = Literal["unbounded", "bounded"]


@dataclass(frozen=True, slots=True)
class Assumption:
    """A fact about the world the proofs take as given, one line each in the report."""

    id: str
    statement: str


@dataclass(frozen=True, slots=True)
class RunConfig:
    """How to run an obligation: which mutants are switched on, and how far to go."""

    mutants: frozenset[str] = frozenset()
    bounds: Mapping[str, int] | None = None  # None: the obligation's default bounds
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    seed: int = 0


@dataclass(frozen=True)
class Outcome:
    """The result of one obligation run.

    ``counterexample`` is a concrete trace (trace-event dicts) when the claim was violated; it is
    the executable model's own output for the replayed counterexample, so it is what the model
    really does. ``violated`` names the catalogue invariant that the replayed trace breaks.
    ``facts`` holds what the report shows besides the queries (strengthening invariants, the
    sizes checked, the number of concrete instances cross-checked).
    """

    status: Status
    queries: tuple[Query, ...]
    summary: str
    counterexample: tuple[dict[str, Any], ...] = ()
    violated: str | None = None
    bounds: Mapping[str, int] = field(default_factory=dict)
    facts: Mapping[str, Any] = field(default_factory=dict)

    @property
    def refutes(self) -> bool:
        """A mutant run refutes the mutant: a property query failed and a concrete trace shows it."""
        return self.status is Status.FAILED and bool(self.counterexample) and self.violated is not None


RunFn = Callable[[RunConfig], Outcome]
DeepenFn = Callable[[Mapping[str, int]], Mapping[str, int]]


@dataclass(frozen=True)
class Obligation:
    id: str
    invariant: str  # a catalogue id (model.invariants.catalogue)
    scope: Scope
    statement: str  # the claim, in Kafka's words
    assumptions: tuple[str, ...]  # Assumption ids
    source: str  # where the behaviour comes from (KIP, Kafka class.method)
    run: RunFn
    bounds: Mapping[str, int] = field(default_factory=dict)  # default bounds (bounded) / sizes (unbounded)
    mutants: tuple[str, ...] = ()  # the mutants this obligation is run on, and must be able to refute
    deepen: DeepenFn | None = None  # bounded: the next, larger bounds for the --deep driver


def obligation(*, id: str, invariant: str, scope: Scope, statement: str, source: str,
               assumptions: tuple[str, ...] = (), bounds: Mapping[str, int] | None = None,
               mutants: tuple[str, ...] = (), deepen: DeepenFn | None = None) -> Callable[[RunFn], Obligation]:
    """Declare an obligation next to the function that discharges it."""

    def wrap(fn: RunFn) -> Obligation:
        return Obligation(id=id, invariant=invariant, scope=scope, statement=statement,
                          assumptions=assumptions, source=source, run=fn, bounds=dict(bounds or {}),
                          mutants=mutants, deepen=deepen)

    return wrap


def outcome(prover: Prover, summary: str, **extra: Any) -> Outcome:
    """Package a prover's queries as an Outcome (status from the queries)."""
    return Outcome(status=prover.status, queries=tuple(prover.queries), summary=summary, **extra)
