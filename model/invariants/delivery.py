"""The offset and delivery invariants, checked along a run of the model (``model.consumption``).

The trace checker (``traces.delivery``) judges the same rules from a captured trace; here the model
judges its own run, from its events and the coordinator's committed offsets, so that a mutant or a
client habit that breaks them is caught in the model too:

- ``monotonic-consumption``: within one ownership of a partition, each ``records_consumed`` entry
  starts exactly where the previous one ended.
- ``no-gap``: the first records a member consumes from a partition after it is assigned start at
  or before the group's committed offset; with nothing committed, at the log start under
  ``earliest`` (``latest`` starts at the log end by design and is not judged).
- ``committed-not-ahead``: a commit the coordinator accepted does not pass what the member
  consumed of the partition in this ownership (or, if it consumed nothing yet, where its position
  began: the committed offset when it was assigned). A late answer for a partition the member has
  given up may not pass what it consumed while it owned it (``commit-owned-only`` otherwise, as the
  checker says).

Violations a documented client habit produces are marked with a known gap (:data:`KNOWN_GAPS`):
``enable.auto.commit`` with asynchronous processing commits what ``poll()`` returned, not what was
processed (KafkaConsumer javadoc, "Manual Offset Control").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from model import events as ev
from model.types import TopicPartition

MONOTONIC_CONSUMPTION = "monotonic-consumption"
NO_GAP = "no-gap"
COMMITTED_NOT_AHEAD = "committed-not-ahead"
COMMIT_OWNED_ONLY = "commit-owned-only"
CHECKED = (MONOTONIC_CONSUMPTION, NO_GAP, COMMITTED_NOT_AHEAD)

ASYNC_AUTO_COMMIT = "auto-commit-async-processing"
KNOWN_GAPS = {
    ASYNC_AUTO_COMMIT: "enable.auto.commit commits the position poll() reached, not what the application "
                       "processed; with processing handed to another thread, a commit can pass unprocessed "
                       "records, which are lost if the consumer dies or gives the partition up first (KafkaConsumer "
                       "javadoc, 'Manual Offset Control': commit only after processing)",
}


@dataclass(frozen=True, slots=True)
class Finding:
    invariant: str
    time: int
    member: str
    tp: TopicPartition
    message: str
    known_gap: str | None


@dataclass
class _Ownership:
    base: int | None  # the group's committed offset when the partition was assigned
    end: int | None = None  # one past the last offset consumed in this ownership


@dataclass
class DeliveryMonitor:
    """Feed it every transition's events with the coordinator's committed offsets after it."""

    reset_policy: str
    async_auto_commit: bool  # the members' habit that Kafka documents as lossy
    findings: list[Finding] = field(default_factory=list)
    _owning: dict[tuple[str, TopicPartition], _Ownership] = field(default_factory=dict)
    _released: dict[tuple[str, TopicPartition], int | None] = field(default_factory=dict)  # last end when let go

    def observe(self, events: tuple[dict[str, Any], ...], committed: dict[TopicPartition, int]) -> None:
        for e in events:
            member = e.get("member")
            if member is None:
                continue
            name = e["name"]
            if name == ev.PARTITIONS_ASSIGNED:
                for tp in ev.partitions_of(e):
                    self._owning[(member, tp)] = _Ownership(committed.get(tp))
            elif name in (ev.PARTITIONS_REVOKED, ev.PARTITIONS_LOST):
                for tp in ev.partitions_of(e):
                    self._release(member, tp)
            elif name == ev.SHUTDOWN_COMPLETE or name == ev.STARTUP_COMPLETE:
                for key in [k for k in self._owning if k[0] == member]:
                    self._release(*key)
                if name == ev.STARTUP_COMPLETE:
                    for key in [k for k in self._released if k[0] == member]:
                        del self._released[key]
            elif name == ev.RECORDS_CONSUMED:
                self._consumed(e, member, committed)
            elif name == ev.OFFSETS_COMMITTED and e.get("success"):
                self._committed(e, member)

    def _release(self, member: str, tp: TopicPartition) -> None:
        own = self._owning.pop((member, tp), None)
        if own is not None:
            self._released[(member, tp)] = own.end

    def _find(self, invariant: str, e: dict[str, Any], member: str, tp: TopicPartition, message: str) -> None:
        gap = ASYNC_AUTO_COMMIT if self.async_auto_commit and invariant != MONOTONIC_CONSUMPTION else None
        self.findings.append(Finding(invariant, e["timestamp"], member, tp, message, gap))

    def _consumed(self, e: dict[str, Any], member: str, committed: dict[TopicPartition, int]) -> None:
        for p in e.get("partitions", ()):
            tp = TopicPartition(p["topic"], p["partition"])
            own = self._owning.get((member, tp))
            if own is None:
                continue  # consume-owned-only is the protocol monitor's (single-owner) business
            first, last = p["minOffset"], p["maxOffset"]
            if own.end is not None and first != own.end:
                self._find(MONOTONIC_CONSUMPTION, e, member, tp,
                           f"{member} read {tp} from offset {first} after ending at {own.end - 1}")
            elif own.end is None:
                at = committed.get(tp) if own.base is None else own.base
                if at is not None and first > at:
                    self._find(NO_GAP, e, member, tp, f"{member} started {tp} at offset {first}, past the group's "
                                                      f"committed offset {at}: offsets {at}..{first - 1} skipped")
                elif at is None and self.reset_policy == "earliest" and first > 0:
                    self._find(NO_GAP, e, member, tp, f"{member} started {tp} at offset {first} with nothing "
                                                      "committed and auto.offset.reset earliest (log start 0)")
            own.end = last + 1

    def _committed(self, e: dict[str, Any], member: str) -> None:
        for o in e.get("offsets", ()):
            if o.get("error"):
                continue
            tp, offset = TopicPartition(o["topic"], o["partition"]), o["offset"]
            own = self._owning.get((member, tp))
            if own is not None:
                limit = own.end if own.end is not None else own.base
                if limit is not None and offset > limit:
                    self._find(COMMITTED_NOT_AHEAD, e, member, tp,
                               f"{member} committed offset {offset} of {tp}, past what it had consumed ({limit})")
            else:
                end = self._released.get((member, tp))
                if end is not None and offset > end:
                    self._find(COMMIT_OWNED_ONLY, e, member, tp,
                               f"{member} committed offset {offset} of {tp} after giving it up, past what it had "
                               f"consumed while it owned it ({end})")
