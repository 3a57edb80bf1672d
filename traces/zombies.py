"""How the zombie findings are worded: why an old owner was a zombie, and the two findings that say so.

The checker (:meth:`traces.checker.Checker._zombie_reason` and ``_judge``) fills these templates with
strings; the Spark job (``spark_analysis.invariants.overlap_findings``) fills the same templates with
columns, through the same :func:`fill`, so the two word every zombie finding alike. A reason names
what the trace shows (docs/check.md, "single-owner"):

- ``lost``: the old owner reported ``partitions_lost`` (it knew it was no longer a member);
- ``removed``: the coordinator removed the old owner's member id (a session or rebalance timeout,
  fencing, a leave) before the new owner was assigned the partition;
- ``reset``: the old owner's generation had been reset (to -1);
- ``behind``: the old owner never reached the generation in which the new owner was assigned it;
- ``ended``: the old owner's trace ended (killed, restarted) without ``shutdown_complete``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from string import Formatter
from typing import TypeVar

T = TypeVar("T")

REASONS = {
    "lost": "{old} reported partitions_lost",
    "removed": "the coordinator had removed {old} (member id {member_id}, {reason}, {removed_where})",
    "reset": "{old}'s generation had been reset",
    "behind": "{old} never reached generation {new_gen}, in which {new} was assigned {tp} (it was at {old_gen})",
    "ended": "{old}'s trace ended without shutdown_complete",
}
# a zombie's overlap: a warning (Kafka allows it) ...
OVERLAP = "{new} was assigned {tp} while zombie {old} still held it ({zombie}); {old} {ended}"
# ... unless the zombie consumed or committed the partition after the new owner got it: single-owner
USED = "zombie {old} {what} {tp} after {new} was assigned it ({zombie}); Kafka lets a zombie hold a partition, not use it"

_PARTS = {template: [(literal, field) for literal, field, _, _ in Formatter().parse(template)]
          for template in (*REASONS.values(), OVERLAP, USED)}


def fill(template: str, fields: Mapping[str, T], text: Callable[[str], T], join: Callable[[list[T]], T]) -> T:
    """``template`` (one of this module's) with each ``{name}`` replaced by ``fields[name]``: its literal text made
    by ``text``, the pieces joined by ``join`` (``str`` and ``"".join`` for the checker, a column's)."""
    pieces: list[T] = []
    for literal, field in _PARTS[template]:
        if literal:
            pieces.append(text(literal))
        if field is not None:
            pieces.append(fields[field])
    return join(pieces)


def words(template: str, **fields: object) -> str:
    """``template`` filled with strings (the checker's)."""
    return fill(template, {k: str(v) for k, v in fields.items()}, str, "".join)
