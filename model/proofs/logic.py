"""One encoding, two readings: unbounded (uninterpreted sorts) and bounded (finite sorts).

The symbolic models in this package quantify only over *members* and *partitions*, never over
integers ("quantifiers kept out of arithmetic"): integers appear only as values of state
functions, such as a member's generation. A :class:`Universe` decides what those quantifiers
mean:

* ``Universe.unbounded()`` -- members and partitions are Z3 uninterpreted sorts and ``forall`` is
  ``z3.ForAll``. A proof here holds for every number of members and partitions.
* ``Universe.finite(members=4, partitions=4)`` -- the sorts are enumerations with exactly that
  many elements and ``forall`` expands to a conjunction. This is what bounded model checking and
  the concretisation of counterexamples use: every element has a name we can hand to the
  executable model.

Writing a state predicate once, as a Python function over a Universe, keeps the unbounded
induction and the bounded search about the same definitions.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

Expr = Any  # a z3 expression (z3 is untyped)
_SORTS = itertools.count()


@dataclass
class Universe:
    member: Any  # z3 sort
    partition: Any  # z3 sort
    members: tuple[Any, ...] | None  # the finite elements, or None when unbounded
    partitions: tuple[Any, ...] | None
    _fresh: itertools.count[int] = field(default_factory=itertools.count)

    @staticmethod
    def unbounded(tag: str = "") -> Universe:
        return Universe(z3.DeclareSort(f"Member{tag}"), z3.DeclareSort(f"Partition{tag}"), None, None)

    @staticmethod
    def finite(members: int, partitions: int, tag: str = "") -> Universe:
        # enumeration sort names must be fresh in Z3's (process-wide) context
        n = next(_SORTS)
        msort, mconsts = z3.EnumSort(f"M{members}x{partitions}{tag}_{n}", [f"m{i}_{n}" for i in range(members)])
        psort, pconsts = z3.EnumSort(f"P{members}x{partitions}{tag}_{n}", [f"p{i}_{n}" for i in range(partitions)])
        return Universe(msort, psort, tuple(mconsts), tuple(pconsts))

    @property
    def is_finite(self) -> bool:
        return self.members is not None

    def _elements(self, sort: Any) -> Sequence[Any]:
        if sort == self.member and self.members is not None:
            return self.members
        if sort == self.partition and self.partitions is not None:
            return self.partitions
        raise ValueError("no finite elements for this sort")

    def _bound(self, sorts: Sequence[Any]) -> list[Any]:
        return [z3.Const(f"q{next(self._fresh)}", s) for s in sorts]

    def forall(self, sorts: Sequence[Any], body: Callable[..., Expr]) -> Expr:
        """``forall x1:s1 ... xn:sn. body(x1, ..., xn)``."""
        if self.is_finite:
            return z3.And([body(*xs) for xs in itertools.product(*(self._elements(s) for s in sorts))])
        xs = self._bound(sorts)
        return z3.ForAll(xs, body(*xs))

    def exists(self, sorts: Sequence[Any], body: Callable[..., Expr]) -> Expr:
        if self.is_finite:
            return z3.Or([body(*xs) for xs in itertools.product(*(self._elements(s) for s in sorts))])
        xs = self._bound(sorts)
        return z3.Exists(xs, body(*xs))

    def const(self, name: str, sort: Any) -> Expr:
        return z3.Const(name, sort)

    def function(self, name: str, *sorts: Any) -> Any:
        return z3.Function(name, *sorts)

    def name_of(self, model: Any, element: Any) -> str:
        """A stable name for a member / partition element in a model of a finite universe."""
        return str(model.eval(element, model_completion=True))
