"""Fast copies of the model's frozen dataclasses with some fields changed.

``dataclasses.replace`` re-runs the generated ``__init__`` with every field as a keyword argument,
which costs several microseconds per call; the simulator makes hundreds of thousands of such
copies. :func:`evolver` builds, once per class, a function that allocates the instance and sets
each slot directly: the same result (a new frozen value, the original untouched), without the
keyword-argument round trip. It is only for frozen ``slots`` dataclasses with no ``__post_init__``
(no validation is skipped). :func:`replace` is the drop-in for ``dataclasses.replace`` that the
coordinator modules use: one cached evolver per class.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def evolver(cls: type[T]) -> Callable[[T, dict[str, Any]], T]:
    """``evolve(obj, changes)`` for ``cls``: a copy of ``obj`` with the fields in ``changes``."""
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} is not a plain dataclass")
    names = [f.name for f in dataclasses.fields(cls)]
    body = "\n".join(f"    _set(new, {n!r}, changes[{n!r}] if {n!r} in changes else obj.{n})" for n in names)
    source = f"def evolve(obj, changes):\n    new = _new(_cls)\n{body}\n    return new\n"
    namespace: dict[str, Any] = {"_new": object.__new__, "_set": object.__setattr__, "_cls": cls}
    exec(compile(source, f"<evolve {cls.__name__}>", "exec"), namespace)  # noqa: S102 - generated from field names
    fn: Callable[[T, dict[str, Any]], T] = namespace["evolve"]
    return fn


_EVOLVERS: dict[type, Callable[[Any, dict[str, Any]], Any]] = {}
_FIELDS: dict[type, frozenset[str]] = {}


def replace(obj: T, /, **changes: Any) -> T:
    """``dataclasses.replace`` for the model's frozen slots dataclasses, through a cached :func:`evolver`.

    Like ``dataclasses.replace`` it rejects a name that is not a field; a class with a
    ``__post_init__`` (whose checks must run) goes through ``dataclasses.replace`` itself.
    """
    cls = type(obj)
    evolve = _EVOLVERS.get(cls)
    if evolve is None:
        if hasattr(cls, "__post_init__"):
            return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
        evolve = _EVOLVERS[cls] = evolver(cls)
        _FIELDS[cls] = frozenset(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    if not changes.keys() <= _FIELDS[cls]:
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(changes.keys() - _FIELDS[cls])}")
    result: T = evolve(obj, changes)
    return result
