"""What the trace checker remembers: per member, per group, per open overlap -- never per event.

Shared by :mod:`traces.checker` (the member-side rules) and :mod:`traces.coordinator_checks` (the
coordinator-side rules). Every collection here is keyed by member or partition: the state grows
with the size of the group, not with the length of the trace.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from traces.analytics import AnalyticsConfig, GroupAnalytics
from traces.schema import TP, tp_json

VIOLATION = "violation"
WARNING = "warning"
PROTOCOLS = frozenset({"eager", "cooperative", "consumer"})
COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky"})
EAGER_ASSIGNORS = frozenset({"range", "roundrobin", "sticky"})


class MemberContext(NamedTuple):
    """The context fields of one member event as ``traces.checker.refuse_bad_context`` accepted them, None where the
    event does not name one: what ``Checker._context`` reads, parsed once (trace-format.md, "Context fields")."""

    member_id: str | None
    auto_offset_reset: str | None
    enable_auto_commit: bool | None
    auto_commit_interval_ms: int | None
    subscription: list[str] | None
    generation: int | None  # int_field's reading: a float is truncated


@dataclass
class CheckConfig:
    skew_ms: int = 0  # clocks of different files may differ by this much
    default_group: str = "default"  # the group of events that name none
    default_protocol: str | None = None  # the protocol of members that do not say (eager / cooperative)
    # offsets no-gap and monotonic-consumption tolerate between the committed (or last consumed) offset and
    # the next consumed one: transaction markers take one offset each, compaction removes any number
    gap_slack: int = 0
    # auto.offset.reset of members whose trace does not say (earliest / latest / none; None: unknown)
    auto_offset_reset: str | None = None
    max_findings: int = 100  # findings kept per invariant (the rest are counted)
    max_evidence: int = 5  # file:line locations kept per finding
    analytics: AnalyticsConfig = field(default_factory=AnalyticsConfig)


class Finding:
    __slots__ = ("invariant", "severity", "group", "members", "partitions", "t0", "t1", "evidence",
                 "occurrences", "message", "max_evidence")

    def __init__(self, invariant: str, severity: str, group: str, members: Iterable[str],
                 partitions: Iterable[TP], t0: int, t1: int, evidence: list[str], message: str,
                 max_evidence: int) -> None:
        self.invariant = invariant
        self.severity = severity
        self.group = group
        self.members = sorted(set(members))
        self.partitions = sorted(set(partitions))
        self.t0 = min(t0, t1)
        self.t1 = max(t0, t1)
        self.evidence = evidence[:max_evidence]
        self.occurrences = 1
        self.message = message
        self.max_evidence = max_evidence

    def again(self, ts: int, where: str) -> None:
        self.occurrences += 1
        self.t1 = max(self.t1, ts)
        if len(self.evidence) < self.max_evidence and where not in self.evidence:
            self.evidence.append(where)

    def to_json(self) -> dict[str, Any]:
        return {
            "invariant": self.invariant,
            "severity": self.severity,
            "group": self.group,
            "members": self.members,
            "partitions": [tp_json(tp) for tp in self.partitions],
            "window": [self.t0, self.t1],
            "evidence": self.evidence,
            "occurrences": self.occurrences,
            "message": self.message,
        }


class Member:
    """What the checker knows of one consumer process (and its restarts)."""

    __slots__ = ("key", "group", "group_explicit", "member_id", "instance_id", "protocol", "generation",
                 "gen_by_src", "owned", "fresh", "contested", "position", "known", "shutdown", "ended",
                 "first_ts", "last_ts", "last_src", "incarnation", "subscription", "assigned_gen",
                 "prepare_revoked", "complete_revoked", "eager_flagged", "events", "jsonl", "gs",
                 "handoff_src", "dup_pending", "failed_commits", "auto_offset_reset", "auto_commit",
                 "auto_commit_interval_ms", "record_data", "rejected", "fast", "commits_shown", "jsonl_format")

    def __init__(self, key: str, group: GroupState, explicit: bool, jsonl: bool) -> None:
        self.key = key
        self.gs = group
        self.group = group.name
        self.group_explicit = explicit
        self.member_id: str | None = None
        self.instance_id: str | None = None
        self.protocol: str | None = None
        self.generation: int | None = None
        self.gen_by_src: dict[int, int] = {}
        self.owned: set[TP] = set()
        self.fresh: set[TP] = set()  # assigned, not consumed yet (no-gap looks at the first offset)
        self.contested: set[TP] = set()  # owned partitions someone else was assigned meanwhile
        # per partition, the offset after the last one consumed (what Kafka calls the position); kept after
        # the partition is let go (a late commit callback is judged by it), dropped when it is assigned again.
        # UNKNOWN_POSITION when the member consumed without saying which offsets. Read it with position_of,
        # write it with set_position.
        self.position: dict[TP, Slot] = {}
        # the hot path's index (Checker.run): the slots of the partitions the member owns, nobody else was
        # assigned meanwhile (not contested) and it has a position for -- exactly what a records_consumed or
        # offsets_committed entry needs to be judged with one dictionary look-up. The same Slot objects as in
        # position, so updating one updates both.
        self.fast: dict[TP, Slot] = {}
        # delivery (traces.delivery): where each newly assigned partition came from, the handoffs whose
        # duplicates are still being counted, the last failed commit per partition, the offset configuration
        self.handoff_src: dict[TP, Release | Member] = {}
        self.dup_pending: dict[TP, Handoff] = {}
        self.failed_commits: dict[TP, tuple[int, str]] = {}
        self.auto_offset_reset: str | None = None
        self.auto_commit: bool | None = None
        self.auto_commit_interval_ms: int | None = None
        # does its trace show every commit it made (Source.commits_shown)? a member known only from a client log: no
        self.commits_shown: bool | None = False
        self.jsonl_format: str | None = None  # the format of its callback trace, if it has one
        self.record_data = False  # it prints record_data (VerifiableConsumer --verbose): polls are reported twice
        self.known = jsonl  # do we know everything it owns? (a callback trace from its start: yes)
        self.shutdown = False
        self.ended = False
        self.first_ts: int | None = None
        self.last_ts = 0
        self.last_src = -1
        self.incarnation = 0
        self.subscription: frozenset[str] | None = None
        self.assigned_gen: int | None = None
        self.prepare_revoked: dict[TP, tuple[int, str]] = {}
        self.complete_revoked: dict[int, set[TP]] = {}
        self.eager_flagged: int | None = None
        # a SyncGroup answered ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID: (the rejected generation, what the member
        # owned then and has not reported lost yet, where it was told); see Checker._rejected_revoke
        self.rejected: tuple[int, set[TP], str] | None = None
        self.events = 0
        self.jsonl = jsonl

    def position_of(self, tp: TP) -> int | None:
        """The member's position in ``tp``, None if it has none."""
        slot = self.position.get(tp)
        return None if slot is None else slot.pos

    def set_position(self, tp: TP, pos: int) -> None:
        """Move the member's position in ``tp``, keeping :attr:`fast` the index it promises to be."""
        slot = self.position.get(tp)
        if slot is None:
            slot = self.position[tp] = Slot(pos)
        else:
            slot.pos = pos
        if tp in self.owned and tp not in self.contested:
            self.fast[tp] = slot

    def drop_position(self, tp: TP) -> None:
        self.position.pop(tp, None)
        self.fast.pop(tp, None)


class Slot:
    """One member's position in one partition, as a mutable cell.

    A cell rather than a plain ``int`` in :attr:`Member.position` so that :attr:`Member.fast` can
    share it: the hot path finds the slot once and moves ``pos`` without hashing the partition again.
    """

    __slots__ = ("pos",)

    def __init__(self, pos: int) -> None:
        self.pos = pos


UNKNOWN_POSITION = 1 << 62  # a position the trace did not give (records_consumed without maxOffset)


class Release:
    """A partition let go by ``member``: what the next owner's handoff is measured against."""

    __slots__ = ("member", "position", "kind", "ts", "where", "failed_commit", "auto_commit",
                 "auto_commit_interval_ms")

    def __init__(self, m: Member, tp: TP, kind: str, ts: int, where: str) -> None:
        self.member = m.key
        self.position = m.position_of(tp)
        self.kind = kind  # revoked / lost / shutdown / killed / eof
        self.ts = ts
        self.where = where
        self.failed_commit = m.failed_commits.get(tp)
        self.auto_commit = m.auto_commit
        self.auto_commit_interval_ms = m.auto_commit_interval_ms


class Handoff:
    """One partition handoff whose new owner started consuming: the records it consumed again."""

    __slots__ = ("group", "tp", "previous", "new", "ts", "start", "previous_position", "committed", "cause",
                 "detail", "evidence", "duplicates", "zombie_slot")

    def __init__(self, group: str, tp: TP, previous: str, new: str, ts: int, start: int,
                 previous_position: int, committed: int | None, cause: str, detail: str,
                 evidence: list[str]) -> None:
        self.group = group
        self.tp = tp
        self.previous = previous
        self.new = new
        self.ts = ts
        self.start = start  # the new owner's first offset
        self.previous_position = previous_position  # the previous owner's last consumed offset + 1
        self.committed = committed  # the committed offset when the new owner started
        self.cause = cause  # a key of traces.delivery.CAUSES
        self.detail = detail  # the cause in words, with what the trace showed
        self.evidence = evidence
        self.duplicates = 0
        # the previous owner's position while it still held the partition (a zombie): it may go on consuming
        self.zombie_slot: Slot | None = None


class Overlap:
    """A partition assigned to ``new`` while ``old`` still owned it, until ``old`` lets go."""

    __slots__ = ("tp", "old", "new", "start", "new_src", "new_where", "new_gen", "old_member_id",
                 "activity", "cooperative", "old_gen")

    def __init__(self, tp: TP, old: Member, new: Member, start: int, new_src: int, new_where: str,
                 new_gen: int | None, cooperative: bool) -> None:
        self.tp = tp
        self.old = old
        self.new = new
        self.start = start
        self.new_src = new_src
        self.new_where = new_where
        self.new_gen = new_gen
        self.old_member_id = old.member_id
        self.activity: tuple[str, str, int] | None = None  # (consumed|committed, where, ts) after start
        self.cooperative = cooperative
        self.old_gen = old.generation  # the owner's generation when ``new`` was assigned the partition


class RevokeRecord:
    __slots__ = ("member", "generation", "ts", "where")

    def __init__(self, member: Member, generation: int | None, ts: int, where: str) -> None:
        self.member = member
        self.generation = generation
        self.ts = ts
        self.where = where


class GroupState:
    """Per group: who owns what, committed offsets, and the coordinator's view."""

    def __init__(self, name: str, analytics: AnalyticsConfig) -> None:
        self.name = name
        self.holders: dict[TP, list[Member]] = {}
        self.last_owner: dict[TP, str] = {}
        self.owner_epoch: dict[TP, int] = {}
        self.last_revoke: dict[TP, RevokeRecord] = {}
        self.committed: dict[TP, int] = {}
        self.released: dict[TP, Release] = {}  # the last owner's release of each partition (delivery)
        # members whose commits the trace may not show that owned the partition (their commits move the
        # committed offset unseen), and the highest position a member reached in it before being re-assigned
        self.hidden_committers: dict[TP, set[str]] = {}
        # the coordinator's own record of commits (server.log, OffsetMetadataManager at DEBUG): the last offset it
        # took for each partition, with where it says so
        self.broker_committed: dict[TP, tuple[int, str]] = {}
        self.high: dict[TP, int] = {}
        self.max_gen: int | None = None
        self.max_gen_ts = 0
        self.max_gen_src = -1
        self.max_gen_where = ""
        # coordinator view
        self.coordinator = False
        self.coord_state: str | None = None
        self.assignor: str | None = None
        self.stable_members: frozenset[str] | None = None
        self.stable_count: int | None = None
        self.streak = 0  # rebalances since the last membership change
        # generations since then in which a SyncGroup lost the race to a new rebalance (converges: +1 each)
        self.sync_races: set[int] = set()
        # the last stable generation's members that have not reported its SyncGroup answer yet
        self.awaiting_sync: tuple[int, set[str]] | None = None
        self.sees_syncs = False  # the trace reports SyncGroup answers (group_synced) for this group
        self.change_pending = True
        self.tentative: list[tuple[Finding, int]] = []
        self.flagged_streak = False
        self.static_watch: tuple[str, int, str] | None = None  # (instance id, ts, where)
        self.protocol_watch: tuple[str, int, str, str, str] | None = None  # ... + protocol before, reason
        self.kip848: dict[str, tuple[frozenset[TP], frozenset[TP]]] = {}
        # the coordinator's last removals of a member that did not leave (ts, member id, reason, where): one of
        # them may be an old owner whose trace names no member id (VerifiableConsumer output)
        self.removals: deque[tuple[int, str, str, str]] = deque(maxlen=256)
        self.kip848_rebalances = 0
        self.analytics = GroupAnalytics(name, analytics)


class CheckerParts:
    """What a part of the checker mixed into :class:`traces.checker.Checker`
    (:class:`traces.coordinator_checks.CoordinatorChecks`, :class:`traces.delivery.DeliveryChecks`)
    uses of the whole: its state and the three services the checker implements."""

    config: CheckConfig
    members: dict[str, Member]
    opportunities: Counter[str]
    saw: Counter[str]

    def where(self, src: int, line: int) -> str:
        raise NotImplementedError

    def _group(self, name: str) -> GroupState:
        raise NotImplementedError

    def _finding(self, invariant: str, severity: str, group: str, members: Iterable[str],
                 partitions: Iterable[TP], t0: int, t1: int, evidence: list[str], message: str,
                 aggregate: tuple[str, str, TP] | None = None) -> Finding | None:
        raise NotImplementedError
