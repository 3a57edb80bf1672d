"""Rebalance analytics: every rebalance with its reason, who stopped consuming and for how long, what
moved, and rebalance storms.

A *rebalance* is taken from the coordinator when its lines are in the trace set: it starts when
the group enters PreparingRebalance (``coordinator_rebalance``, whose ``reason`` is the one the
coordinator logged: GroupMetadataManager.prepareRebalance / GroupCoordinator.prepareRebalance) and
ends when it is Stable again (``coordinator_stable``) or Empty. Without coordinator lines it is
taken from the clients: ownership changes (revoked, lost, assigned) and JoinGroup answers that
follow each other with less than ``gap_ms`` between them form one rebalance, and its reasons are the
ones clients logged ("Request joining group due to: ..." in the Java client); a newer generation
starts a new one.

Per rebalance:

- ``paused_ms``: per member, how long it owned nothing between giving up everything it owned and
  getting partitions again -- the stop-the-world pause of eager rebalancing. A cooperative member
  that keeps some of its partitions is not paused; a member joining for the first time is waiting,
  not paused, and is not counted.
- ``moved``: partitions assigned to a member other than their previous owner.
- ``max_unowned_ms``: the longest time a moved partition had no owner (released by one member,
  not yet assigned to the next).

A *storm* is ``threshold`` or more rebalances starting within ``window_ms`` of each other; storms
that overlap are reported as one, with their rate.

Memory: per member and partition, plus the rebalances themselves (the first ``max_rebalances``
are kept in detail, the rest only counted).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from traces.schema import TP, tp_label


@dataclass
class AnalyticsConfig:
    gap_ms: int = 2000  # client-side rebalances: ownership changes closer than this belong together
    window_ms: int = 60_000  # storm window
    threshold: int = 5  # rebalances within the window that make a storm
    max_rebalances: int = 10_000  # rebalances kept in detail per group
    timeline_cap: int = 5000  # ownership intervals kept per group for the timeline


@dataclass
class Rebalance:
    start: int
    source: str  # "coordinator" or "clients"
    end: int | None = None
    generation: int | None = None
    end_state: str | None = None
    reasons: list[str] = field(default_factory=list)
    moved: int = 0
    paused_ms: dict[str, int] = field(default_factory=dict)
    max_unowned_ms: int = 0
    last_activity: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "end": self.end,
            "duration_ms": None if self.end is None else self.end - self.start,
            "generation": self.generation,
            "end_state": self.end_state,
            "source": self.source,
            "reasons": self.reasons,
            "moved": self.moved,
            "paused_ms": dict(sorted(self.paused_ms.items())),
            "max_unowned_ms": self.max_unowned_ms,
        }


class GroupAnalytics:
    """The rebalances of one group, fed by the checker as it walks the merged events."""

    def __init__(self, name: str, config: AnalyticsConfig) -> None:
        self.name = name
        self.config = config
        self.coordinator_mode = False
        self.rebalances: list[Rebalance] = []
        self.count = 0
        self.current: Rebalance | None = None
        self.last: Rebalance | None = None
        self._starts: deque[int] = deque()
        self.storms: list[dict[str, Any]] = []
        self._stopped_since: dict[str, int] = {}
        self._released_at: dict[TP, int] = {}
        self._pending_reason: dict[str, str] = {}
        # timeline: lane -> [[start, end, owner]]; open intervals by (tp, owner)
        self.lanes: dict[str, list[list[Any]]] = {}
        self._open: dict[tuple[TP, str], list[Any]] = {}
        self.intervals = 0
        self.timeline_truncated = False
        self.end_ts: int | None = None

    # ---------------------------------------------------------------- rebalances

    def _start(self, ts: int, source: str) -> Rebalance:
        rb = Rebalance(start=ts, source=source, last_activity=ts)
        self.count += 1
        if len(self.rebalances) < self.config.max_rebalances:
            self.rebalances.append(rb)
        self.current = rb
        self._storm_tick(ts)
        return rb

    def _storm_tick(self, ts: int) -> None:
        starts = self._starts
        starts.append(ts)
        while starts and starts[0] < ts - self.config.window_ms:
            starts.popleft()
        if len(starts) >= self.config.threshold:
            storm = self.storms[-1] if self.storms else None
            if storm is not None and storm["end"] >= starts[0]:
                storm["end"] = ts
                storm["rebalances"] += 1
            else:
                self.storms.append({"start": starts[0], "end": ts, "rebalances": len(starts)})

    def _close(self, ts: int, state: str | None = None, generation: int | None = None) -> None:
        rb = self.current
        if rb is None:
            return
        rb.end = max(ts, rb.start)
        rb.end_state = state
        if generation is not None:
            rb.generation = generation
        self.last = rb
        self.current = None

    def _activity(self, ts: int, generation: int | None = None) -> Rebalance | None:
        """The rebalance client activity at ``ts`` belongs to (opening one in client mode).

        Client mode: activity more than ``gap_ms`` after the last one, or of a generation newer than
        the open rebalance's, starts a new rebalance.
        """
        rb = self.current
        if self.coordinator_mode:
            if rb is not None:
                return rb
            last = self.last
            if last is not None and last.end is not None and ts - last.end <= self.config.gap_ms:
                return last
            return None
        if rb is not None and (ts - rb.last_activity > self.config.gap_ms
                               or (generation is not None and rb.generation is not None
                                   and generation > rb.generation)):
            self._close(rb.last_activity)
            rb = None
        if rb is None:
            rb = self._start(ts, "clients")
        if generation is not None and rb.generation is None:
            rb.generation = generation
        rb.last_activity = max(rb.last_activity, ts)
        return rb

    def coordinator_rebalance(self, ts: int, reason: str | None) -> None:
        if not self.coordinator_mode:
            # Client-side rebalances seen so far stay; from now on the coordinator defines them.
            if self.current is not None:
                self._close(self.current.last_activity)
            self.coordinator_mode = True
        rb = self.current or self._start(ts, "coordinator")
        if reason and len(rb.reasons) < 10:
            rb.reasons.append(reason)

    def coordinator_done(self, ts: int, state: str, generation: int | None) -> None:
        if self.current is not None and self.coordinator_mode:
            self._close(ts, state, generation)

    def client_rejoin(self, ts: int, member: str, reason: str | None, generation: int | None) -> None:
        rb = self._activity(ts, generation)
        if rb is None:
            if reason:
                self._pending_reason[member] = reason
            return
        if reason and len(rb.reasons) < 10 and reason not in rb.reasons and not self.coordinator_mode:
            rb.reasons.append(f"{member}: {reason}")
        if generation is not None and (rb.generation is None or generation > rb.generation):
            rb.generation = generation

    # ---------------------------------------------------------------- ownership

    def released(self, ts: int, member: str, tp: TP, now_empty: bool, still_owned: bool) -> None:
        """``member`` stopped owning ``tp``; ``now_empty``: it owns nothing now."""
        rb = self._activity(ts)
        if now_empty:
            self._stopped_since.setdefault(member, ts)
        if not still_owned:
            self._released_at[tp] = ts
        self._close_interval(tp, member, ts)
        if rb is not None:
            rb.last_activity = max(rb.last_activity, ts)

    def assigned(self, ts: int, member: str, tp: TP, previous_owner: str | None,
                 generation: int | None = None) -> None:
        rb = self._activity(ts, generation)
        since = self._stopped_since.pop(member, None)
        released = self._released_at.pop(tp, None)
        if rb is not None:
            if since is not None:
                rb.paused_ms[member] = rb.paused_ms.get(member, 0) + max(0, ts - since)
            if previous_owner is not None and previous_owner != member:
                rb.moved += 1
                if released is not None:
                    rb.max_unowned_ms = max(rb.max_unowned_ms, ts - released)
        self._open_interval(tp, member, ts)

    def member_gone(self, member: str) -> None:
        """A member that ended (shutdown or killed) is not paused any more."""
        self._stopped_since.pop(member, None)

    # ---------------------------------------------------------------- timeline

    def _open_interval(self, tp: TP, member: str, ts: int) -> None:
        if (tp, member) in self._open:
            return
        if self.intervals >= self.config.timeline_cap:
            self.timeline_truncated = True
            return
        interval: list[Any] = [ts, None, member]
        self.lanes.setdefault(tp_label(tp), []).append(interval)
        self._open[(tp, member)] = interval
        self.intervals += 1

    def _close_interval(self, tp: TP, member: str, ts: int) -> None:
        interval = self._open.pop((tp, member), None)
        if interval is not None:
            interval[1] = max(ts, interval[0])

    # ---------------------------------------------------------------- result

    def state_size(self) -> int:
        return (len(self.rebalances) + len(self.storms) + len(self._starts) + len(self._stopped_since)
                + len(self._released_at) + len(self._pending_reason) + self.intervals + len(self._open))

    def finish(self, end_ts: int | None) -> None:
        self.end_ts = end_ts
        if self.current is not None and not self.coordinator_mode:
            self._close(self.current.last_activity)

    def to_json(self) -> dict[str, Any]:
        storms = [dict(s, per_minute=round(s["rebalances"] * 60_000
                                           / max(s["end"] - s["start"], self.config.window_ms), 2))
                  for s in self.storms]
        paused = [ms for rb in self.rebalances for ms in rb.paused_ms.values()]
        return {
            "rebalances": [rb.to_json() for rb in self.rebalances],
            "rebalance_count": self.count,
            "rebalances_truncated": self.count > len(self.rebalances),
            "source": "coordinator" if self.coordinator_mode else "clients",
            "storms": storms,
            "storm_rule": {"window_ms": self.config.window_ms, "threshold": self.config.threshold},
            "max_paused_ms": max(paused) if paused else 0,
            "moved_total": sum(rb.moved for rb in self.rebalances),
            "timeline": {lane: [list(iv) for iv in ivs] for lane, ivs in sorted(self.lanes.items())},
            "timeline_truncated": self.timeline_truncated,
        }
