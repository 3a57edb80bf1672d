"""Strict use of Z3: every query has a timeout, every answer is checked against what it must be.

A proof obligation is a handful of solver *queries*. Each query says what it shows and which
answer it needs:

* ``unsat`` -- a proof step: "premises and the negated claim have no model", so the claim holds;
* ``sat`` -- a witness: "the premises have a model", which shows a proof step is not vacuous
  (an induction step whose guard contradicts the invariant proves nothing).

Z3 may also answer ``unknown`` (timeout, incompleteness of quantifier instantiation). That is
never read as success: the obligation is then ``unknown``, and the proof report counts it as a
failure (docs/design.md, "Real components": every query has a timeout and unknown is a failure).

:class:`Prover` collects the queries of one obligation and turns them into one status. It is pure
in the sense the model needs: no I/O and no clock; Z3's own timeout is a solver parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, TypeVar

import z3

DEFAULT_TIMEOUT_MS = 20_000


class Status(StrEnum):
    PROVED = "proved"
    FAILED = "failed"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Query:
    """One solver call: what it shows, the answer it needs, the answer it got."""

    name: str
    expect: str  # "unsat" (a proof step) or "sat" (a non-vacuity witness)
    result: str  # "unsat" | "sat" | "unknown"
    note: str = ""  # Z3's reason for unknown, or a short description of a model

    @property
    def ok(self) -> bool:
        return self.result == self.expect

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "expect": self.expect, "result": self.result}
        if self.note:
            out["note"] = self.note
        return out


def z3_version() -> str:
    return f"z3 {z3.get_version_string()}"


def _solver(timeout_ms: int, logic: str | None = None) -> Any:
    solver = z3.SolverFor(logic) if logic else z3.Solver()
    solver.set("timeout", int(timeout_ms))
    return solver


class Prover:
    """Runs the queries of one obligation and remembers each answer.

    ``valid(name, claim, premises)`` proves ``premises => claim`` (asks for a model of
    ``premises and not claim``; none must exist). ``witness(name, constraints)`` asks for a model
    (one must exist). Both return the Z3 model when there is one, so that a failed proof step
    yields its counterexample and a witness can be shown.
    """

    def __init__(self, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        self.timeout_ms = timeout_ms
        self.queries: list[Query] = []

    def _run(self, name: str, expect: str, constraints: Sequence[Any], logic: str | None) -> Any:
        solver = _solver(self.timeout_ms, logic)
        for c in constraints:
            solver.add(c)
        answer = solver.check()
        if answer == z3.sat:
            self.queries.append(Query(name, expect, "sat"))
            return solver.model()
        if answer == z3.unsat:
            self.queries.append(Query(name, expect, "unsat"))
            return None
        self.queries.append(Query(name, expect, "unknown", note=str(solver.reason_unknown())))
        return None

    def valid(self, name: str, claim: Any, premises: Iterable[Any] = (), *, logic: str | None = None) -> Any:
        """Prove ``And(premises) => claim``. Returns a counterexample model, or None when proved."""
        return self._run(name, "unsat", [*premises, z3.Not(claim)], logic)

    def witness(self, name: str, constraints: Iterable[Any], *, logic: str | None = None) -> Any:
        """Show ``And(constraints)`` is satisfiable. Returns the model, or None when it is not."""
        return self._run(name, "sat", list(constraints), logic)

    def expect_unsat(self, name: str, constraints: Iterable[Any], *, logic: str | None = None) -> Any:
        """Show ``And(constraints)`` has no model (e.g. "no path of length k violates P")."""
        return self._run(name, "unsat", list(constraints), logic)

    def incremental(self, base: Iterable[Any]) -> Any:
        """A solver holding ``base`` (e.g. the inductive hypothesis), for :meth:`valid_in` queries."""
        solver = _solver(self.timeout_ms)
        for c in base:
            solver.add(c)
        return solver

    def valid_in(self, solver: Any, name: str, claim: Any, premises: Iterable[Any] = ()) -> Any:
        """Like :meth:`valid`, on top of an incremental solver's assertions (pushed and popped)."""
        solver.push()
        try:
            for c in premises:
                solver.add(c)
            solver.add(z3.Not(claim))
            answer = solver.check()
            if answer == z3.sat:
                self.queries.append(Query(name, "unsat", "sat"))
                return solver.model()
            if answer == z3.unsat:
                self.queries.append(Query(name, "unsat", "unsat"))
                return None
            self.queries.append(Query(name, "unsat", "unknown", note=str(solver.reason_unknown())))
            return None
        finally:
            solver.pop()

    def record(self, name: str, ok: bool, note: str = "") -> None:
        """A check done without the solver (e.g. a concrete replay), recorded like a query."""
        self.queries.append(Query(name, "pass", "pass" if ok else "fail", note))

    @property
    def status(self) -> Status:
        if any(q.result == "unknown" for q in self.queries):
            return Status.UNKNOWN
        if all(q.ok for q in self.queries):
            return Status.PROVED
        return Status.FAILED

    @property
    def last(self) -> Query:
        return self.queries[-1]


class Step(Protocol):
    """A micro-step of a symbolic model: named in every query about it."""

    @property
    def name(self) -> str: ...


S = TypeVar("S", bound=Step)


def consecution(prover: Prover, solver: Any, steps: Iterable[S], relation: Callable[[S], Any], post: Any,
                preserves: str, step_property: tuple[str, Callable[[S], Any]] | None = None) -> list[str]:
    """The consecution half of an induction: on ``solver``, which holds the inductive hypothesis,
    each step's ``relation`` must lead to ``post`` (the invariant in the post-state), and to the
    step property when one is given. Returns the names of the steps that break either, each once.
    Each query is named ``consecution: <step> <preserves>`` / ``step property (<label>) across
    <step>``, the names the proof report shows."""
    broken: list[str] = []
    for step in steps:
        solver.push()
        solver.add(relation(step))
        prover.valid_in(solver, f"consecution: {step.name} {preserves}", post)
        if prover.last.result != "unsat":
            broken.append(step.name)
        if step_property is not None:
            label, prop = step_property
            prover.valid_in(solver, f"step property ({label}) across {step.name}", prop(step))
            if prover.last.result != "unsat" and step.name not in broken:
                broken.append(step.name)
        solver.pop()
    return broken


def model_int(model: Any, term: Any) -> int:
    """The value of an integer term in a Z3 model (0 for a term the model leaves free)."""
    value = model.eval(term, model_completion=True)
    return int(value.as_long())


def model_bool(model: Any, term: Any) -> bool:
    return bool(z3.is_true(model.eval(term, model_completion=True)))
