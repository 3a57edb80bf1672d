"""The client-side assignors of Apache Kafka, as executable specifications.

Every assignor is a pure function with one signature::

    assign(partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription], *,
           mutants: frozenset[str] = frozenset()) -> GroupAssignment

``partitions_per_topic`` maps each topic in the cluster metadata to its partition count
(partitions 0..count-1); topics a member subscribes to but that are missing here have no
metadata and are skipped, as Kafka skips them. ``mutants`` switches on the assignor mutants of
``model.mutants``.

The registry below is the one place that names them (``ConsumerPartitionAssignor.name()``) with
the rebalance protocols each supports (``supportedProtocols()``). Which catalogue invariants each
one promises is ``model.invariants.assignment.promised``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from model.types import GroupAssignment, RebalanceProtocol, Subscription

AssignFn = Callable[..., GroupAssignment]

EAGER = RebalanceProtocol.EAGER
COOPERATIVE = RebalanceProtocol.COOPERATIVE


@dataclass(frozen=True, slots=True)
class AssignorSpec:
    name: str
    module: str  # where its ``assign`` function lives
    protocols: tuple[RebalanceProtocol, ...]  # supportedProtocols(), in Kafka's order

    @property
    def assign(self) -> AssignFn:
        fn: AssignFn = importlib.import_module(self.module).assign
        return fn


ASSIGNORS: dict[str, AssignorSpec] = {
    spec.name: spec
    for spec in (
        # RangeAssignor / RoundRobinAssignor: supportedProtocols() is the interface default, EAGER.
        AssignorSpec("range", "model.assignors.range", (EAGER,)),
        AssignorSpec("roundrobin", "model.assignors.roundrobin", (EAGER,)),
        AssignorSpec("sticky", "model.assignors.sticky", (EAGER,)),
        # CooperativeStickyAssignor.supportedProtocols() = [COOPERATIVE, EAGER].
        AssignorSpec("cooperative-sticky", "model.assignors.cooperative_sticky", (COOPERATIVE, EAGER)),
    )
}


def get(name: str) -> AssignorSpec:
    """The assignor called ``name``, or ``KeyError`` listing the known names."""
    try:
        return ASSIGNORS[name]
    except KeyError:
        raise KeyError(f"unknown assignor {name!r}; known: {', '.join(ASSIGNORS)}") from None


def assign(name: str, partitions_per_topic: Mapping[str, int], subscriptions: Sequence[Subscription], *,
           mutants: frozenset[str] = frozenset()) -> GroupAssignment:
    """Run the assignor called ``name``."""
    return get(name).assign(partitions_per_topic, subscriptions, mutants=mutants)
