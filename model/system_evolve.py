"""Fast copies of the model's frozen dataclasses with some fields changed.

``dataclasses.replace`` re-runs the generated ``__init__`` with every field as a keyword argument,
which costs several microseconds per call; the simulator makes hundreds of thousands of such
copies. :func:`evolver` builds, once per class, a function that allocates the instance and sets
each slot directly: the same result (a new frozen value, the original untouched), without the
keyword-argument round trip. It is only for frozen ``slots`` dataclasses with no ``__post_init__``
(no validation is skipped). :func:`replace` is the drop-in for ``dataclasses.replace`` that the
coordinator modules use: one cached evolver per class.

Why the copy goes through a *twin* class: a frozen dataclass forbids ``obj.field = value``, so the
copy would have to call ``object.__setattr__`` once per field (35 calls for a ``Member``), and the
simulator's time goes mostly into such copies. The evolver instead fills an instance of a plain,
unfrozen class with the same ``__slots__`` -- ordinary attribute stores, which CPython runs several
times faster -- and then sets the instance's ``__class__`` to the frozen class (allowed because the
two have the same memory layout). The result is an ordinary instance of the frozen class, equal
field by field to what ``dataclasses.replace`` builds. A class whose layout does not allow this
(slots inherited from a base class, say) gets the ``object.__setattr__`` version.
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
    twin = _twin(cls, names)
    if twin is not None:
        # Copy every field by plain stores on the unfrozen twin, overwrite the changed ones, then
        # turn the instance into a ``cls`` (see the module docstring).
        body = "".join(f"    new.{n} = obj.{n}\n" for n in names)
        source = (f"def evolve(obj, changes):\n    new = _new(_twin)\n{body}"
                  "    for name, value in changes.items():\n        _setattr(new, name, value)\n"
                  "    new.__class__ = _cls\n    return new\n")
    else:
        body = "".join(f"    _set(new, {n!r}, changes[{n!r}] if {n!r} in changes else obj.{n})\n" for n in names)
        source = f"def evolve(obj, changes):\n    new = _new(_cls)\n{body}    return new\n"
    namespace: dict[str, Any] = {"_new": object.__new__, "_set": object.__setattr__, "_setattr": setattr,
                                 "_cls": cls, "_twin": twin}
    exec(compile(source, f"<evolve {cls.__name__}>", "exec"), namespace)  # noqa: S102 - generated from field names
    fn: Callable[[T, dict[str, Any]], T] = namespace["evolve"]
    return fn


def _twin(cls: type, names: list[str]) -> type | None:
    """An unfrozen class with ``cls``'s slots whose instances may become ``cls`` instances by
    ``__class__`` assignment, or None when ``cls`` does not allow that (no slots of its own for
    every field, a base class other than ``object``, or CPython refusing the layout)."""
    if cls.__bases__ != (object,) or set(getattr(cls, "__slots__", ())) != set(names) or "__dict__" in dir(cls):
        return None
    twin = type(f"_Unfrozen{cls.__name__}", (), {"__slots__": tuple(cls.__slots__)})  # type: ignore[attr-defined]
    probe: Any = object.__new__(twin)
    try:
        probe.__class__ = cls
    except TypeError:
        return None
    return twin


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
