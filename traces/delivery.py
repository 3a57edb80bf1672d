"""The offset and delivery rules of the trace checker: what a rebalance did to the records.

Offsets in a trace
------------------
A consumer reads a partition from its *position*: the offset of the next record it will fetch.
Kafka's VerifiableConsumer prints one ``records_consumed`` per poll with, per partition, ``count``,
``minOffset`` and ``maxOffset`` (tools/.../VerifiableConsumer.java, ``RecordSetSummary``), so after
a poll the position is ``maxOffset + 1``. A commit (``offsets_committed``) stores, per partition,
"the offset of the next message your application will consume" (KafkaConsumer#commitSync javadoc):
normally the position. When a member is assigned a partition it fetches the group's committed
offset (OffsetFetch, ConsumerCoordinator.refreshCommittedOffsetsIfNeeded) and starts there; with
no committed offset, ``auto.offset.reset`` decides (earliest: the log start, latest: the log end,
none: the consumer fails with NoOffsetForPartitionException; SubscriptionState / OffsetResetStrategy).

The rules
---------
- ``no-gap``: a member's first offset after it is assigned a partition is not beyond the group's
  committed offset (plus ``gap_slack``). With no committed offset, a start at offset 0 skips nothing;
  a later start depends on the reset policy: under ``earliest`` the log is assumed to start at offset 0 (a trace does not carry the log start
  offset, so this is an assumption, reported); under ``latest`` / ``none`` / an unknown policy the
  start is not judged, and ``unchecked`` says how often and what was assumed.
- ``monotonic-consumption``: within one ownership each poll of a partition starts exactly at the
  position the previous one left (``minOffset == previous maxOffset + 1``): never back, never a
  skip. Transaction markers and compaction leave holes in the offsets of a partition; ``gap_slack``
  tolerates that many (a large value accepts any forward jump). Going back (a ``seek`` by the
  application, a reset after OffsetOutOfRange) is always reported.
- ``committed-not-ahead``: a member never commits, for a partition it owns, an offset beyond its
  position (the last offset it consumed + 1). If it consumed nothing of the partition since it was
  assigned it, the commit must not pass the group's committed offset (where its position began); if
  no committed offset is known, the reset policy placed the position and the commit is not judged
  (counted in ``unchecked``).
- ``commit-owned-only`` lives in :mod:`traces.checker` (commits of partitions not owned; commits
  that succeeded with a generation the group had left).

The measure ``handoff-duplicates``
----------------------------------
Kafka delivers at least once: when a partition changes owner, the new owner starts at the committed
offset, and whatever the previous owner consumed after its last commit is consumed again. Per
handoff (a partition let go by one member, or by one incarnation of a member, and consumed by the
next owner) the checker counts the offsets the new owner consumed in ``[its first offset, the
previous owner's position)``. The count is final when the new owner lets the partition go (or the
trace ends). Where the trace tells, each handoff names its cause (:data:`CAUSES`). A member
re-assigned a partition it just revoked (eager rebalancing does that to everybody) counts as a
handoff to itself: its own uncommitted records are read again.

Memory: per member and partition (position, the handoff being counted, the last failed commit) and
per group and partition (the last release); the per-handoff list in the report is capped at
``max_findings``: the first handoffs with duplicates by group, time, topic, partition and new owner (a heap of at
most that many; the Spark job lists the same ones, spark_analysis.handoff._summary), in that order.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable
from typing import Any

from traces.schema import TP, BadField, tp_json, tp_label
from traces.state import (
    UNKNOWN_POSITION,
    VIOLATION,
    CheckerParts,
    GroupState,
    Handoff,
    Member,
    MemberContext,
    Release,
)

RESET_POLICIES = frozenset({"earliest", "latest", "none"})


class _Listed:
    """A handoff with duplicates in the report's list, ordered backwards by its place in it: the heap's smallest is
    the list's last, the one a handoff earlier in the list replaces once the list is full."""

    __slots__ = ("key", "handoff")

    def __init__(self, h: Handoff, closed: int) -> None:
        # the Spark job's order (spark_analysis.handoff._summary); ``closed`` (how many came before it) keeps
        # equal keys apart, the first closed first, and no two entries equal
        self.key = (h.group, h.ts, h.tp[0], h.tp[1], h.new, closed)
        self.handoff = h

    def __lt__(self, other: _Listed) -> bool:
        return self.key > other.key


# The offset configuration any member event may name: each field's test of the values the checker accepts
# (traces.checker.refuse_bad_context, before DeliveryChecks._offset_config keeps them), and the words of its BadField
# for another. spark_analysis.corpus carries a
# member's last accepted value of each across a move of groups by the same tests, so the two cannot drift.
OFFSET_CONFIG: dict[str, tuple[Callable[[Any], bool], str]] = {
    # a str first: a list or object in the trace cannot be looked up in a set (it was a TypeError, which the
    # checker reported as the field's error and the corpus writer did not catch)
    "auto_offset_reset": (lambda v: isinstance(v, str) and v in RESET_POLICIES, "earliest, latest or none"),
    "enable_auto_commit": (lambda v: isinstance(v, bool), "true or false"),
    "auto_commit_interval_ms": (lambda v: type(v) is int and v >= 0, "a non-negative integer"),
}


def _accepted(key: str, value: Any) -> Any:
    """``value`` of the :data:`OFFSET_CONFIG` field ``key``, or BadField naming the field and what it should be."""
    valid, wanted = OFFSET_CONFIG[key]
    if not valid(value):
        raise BadField(f"{key} is not {wanted}: {value!r:.40}")
    return value

# Why records were consumed twice at a handoff, worst first.
CAUSES = {
    "crash": "the previous owner's process died (killed or crashed: no shutdown_complete, or one with reason "
             "crash): the position it had not committed was lost",
    "zombie": "the previous owner still held the partition or reported it lost (its session expired, or it "
              "stalled past max.poll.interval.ms) and had not committed its position",
    "commit-failed": "the previous owner's last commit of the partition failed",
    "auto-commit": "the previous owner used enable.auto.commit: records consumed since its last auto-commit "
                   "(auto.commit.interval.ms) had not been committed",
    "no-commit-on-revoke": "the previous owner did not commit its position before the partition was revoked "
                           "(no commitSync in onPartitionsRevoked)",
    "no-commit-on-close": "the previous owner did not commit its position before it shut down",
    "rewind": "the new owner started before the committed offset (a seek, or a reset to earliest)",
    "unknown": "the trace does not say why the position was not committed",
}


# The partial "unchecked" notes of the offset rules: one template per reason, formatted here for the checker and
# for the Spark job (spark_analysis.delivery.unchecked), so that both say the same words by construction.
PARTIAL_REASONS = {
    # no-gap: first consumptions with no committed offset under a policy that does not say where it starts
    "unjudged-policy": ("no-gap", "first consumptions of a partition with no committed offset were not judged "
                                  "({policies}): assumed the auto.offset.reset policy put the position there (latest: "
                                  "the log end; none: an explicit seek; unknown: either)"),
    "hidden-auto-commit": ("no-gap", "{n} first consumption(s) started past the last commit the trace shows, within "
                                     "what earlier owners had consumed, after an owner whose commits the trace does "
                                     "not show (VerifiableConsumer prints no auto-commit: run with --enable-autocommit, "
                                     "or its commits are only in a client log): an automatic commit may have put the "
                                     "committed offset there"),
    "hidden-unseen": ("no-gap", "{n} first consumption(s) started past the last commit the trace shows, within what "
                                "the previous owner had consumed, after that owner was killed (its trace ended without "
                                "shutdown_complete) or while it still held the partition: its last commit may have "
                                "reached the broker without its trace line; add the broker's server.log "
                                "(OffsetMetadataManager at DEBUG) to judge them"),
    "hidden-positions": ("no-gap", "{n} first consumption(s) started past the last commit the trace shows after an "
                                   "owner known only from its client log (which shows neither its commits nor what it "
                                   "consumed) were not judged"),
    "assumed-zero": ("no-gap", "{n} first consumption(s) under auto.offset.reset=earliest with no committed offset "
                               "were judged assuming the log starts at offset 0"),
    "not-ahead-unjudged": ("committed-not-ahead", "{n} commit(s) of partitions the member had not consumed from, "
                                                  "with no committed offset known, were not judged (the reset policy "
                                                  "placed the position)"),
}


def offset_notes(unjudged: Counter[str], hidden: Counter[str], assumed_zero: int,
                 not_ahead_unjudged: int) -> list[dict[str, Any]]:
    """The partial notes of the offset rules from their counts (:data:`PARTIAL_REASONS`), in the checker's order.

    ``unjudged``: reset policy -> first consumptions not judged; ``hidden``: ``auto-commit`` / ``unseen`` /
    ``positions`` -> first consumptions past the shown commit not judged.
    """
    counts = [("hidden-" + why, hidden.get(why, 0)) for why in ("auto-commit", "unseen", "positions")]
    counts += [("assumed-zero", assumed_zero), ("not-ahead-unjudged", not_ahead_unjudged)]
    out = []
    if unjudged:
        policies = ", ".join(f"{n} under {p}" for p, n in sorted(unjudged.items()))
        invariant, template = PARTIAL_REASONS["unjudged-policy"]
        out.append({"invariant": invariant, "reason": template.format(policies=policies), "partial": True})
    for what, n in counts:
        if n:
            invariant, template = PARTIAL_REASONS[what]
            out.append({"invariant": invariant, "reason": template.format(n=n), "partial": True})
    return out


def offsets_seen_notes(first_polls: int, no_gap_judged: int) -> list[dict[str, Any]]:
    """The full notes of no-gap and monotonic-consumption (the checker's and the Spark job's): ``first_polls``
    counts the first polls with offsets of a newly owned partition, ``no_gap_judged`` those judged (a committed
    offset known, offset 0, or reset=earliest)."""
    if not first_polls:
        return [{"invariant": "no-gap", "partial": False,
                 "reason": "needs records_consumed with minOffset and successful offsets_committed"},
                {"invariant": "monotonic-consumption", "partial": False,
                 "reason": "needs records_consumed with minOffset / maxOffset"}]
    if not no_gap_judged:
        return [{"invariant": "no-gap", "partial": False,
                 "reason": "no member started a partition with a committed offset (or reset=earliest) known"}]
    return []


def commits_seen_notes(commits: int) -> list[dict[str, Any]]:
    """The full notes of commit-owned-only and committed-not-ahead: ``commits`` successful offsets_committed
    events (the checker's and the Spark job's)."""
    if commits:
        return []
    return [{"invariant": invariant, "partial": False, "reason": "no offsets_committed events"}
            for invariant in ("commit-owned-only", "committed-not-ahead")]


def handoff_notes(handoffs: int, unmeasured: int) -> list[dict[str, Any]]:
    """The ``unchecked`` notes of the measure handoff-duplicates (the checker's and the Spark job's)."""
    if not handoffs:
        return [{"invariant": "handoff-duplicates", "partial": False,
                 "reason": "no partition passed from one owner to a next one that consumed it, with the previous "
                           "owner's offsets known"}]
    if unmeasured:
        return [{"invariant": "handoff-duplicates", "partial": True,
                 "reason": f"{unmeasured} handoff(s) where the previous owner's offsets were not known were not "
                           f"measured"}]
    return []


class DeliveryChecks(CheckerParts):
    """no-gap, monotonic-consumption, committed-not-ahead and handoff-duplicates (mixed into the checker)."""

    def _init_delivery(self) -> None:
        self.handoffs = 0  # handoffs measured
        self.handoffs_unmeasured = 0  # the previous owner's position was not known
        self.dup_handoffs = 0  # handoffs with at least one duplicate
        self.dup_total = 0
        self.dup_by_cause: Counter[str] = Counter()
        self.dup_by_partition: dict[tuple[str, TP], list[int]] = {}  # (group, tp) -> [handoffs, duplicates]
        self.handoff_examples: list[_Listed] = []  # a heap: the max_findings first (_Listed), its last on top
        self.no_gap_unjudged: Counter[str] = Counter()  # reset policy -> first consumptions not judged
        self.no_gap_assumed_zero = 0  # first consumptions judged against an assumed log start of 0
        self.not_ahead_unjudged = 0
        # first consumptions past the shown committed offset after an owner whose commits were not shown, not judged:
        # "auto-commit" (within what the owners consumed), "positions" (an owner known only from its client log)
        self.no_gap_hidden: Counter[str] = Counter()
        # ... and "unseen": after an owner killed (or still holding it) whose last commit may not be shown

    # ---------------------------------------------------------------- configuration from the trace

    def _offset_config(self, m: Member, ctx: MemberContext) -> None:
        """``auto_offset_reset``, ``enable_auto_commit``, ``auto_commit_interval_ms`` (any event may say), as
        ``refuse_bad_context`` accepted them (:data:`OFFSET_CONFIG`) before the checker changed anything."""
        if ctx.auto_offset_reset is not None:
            m.auto_offset_reset = ctx.auto_offset_reset
        auto = ctx.enable_auto_commit
        if auto is not None:
            m.auto_commit = auto
            if auto and m.commits_shown is True and m.jsonl_format == "groupspec":
                # Which automatic commits a groupspec trace shows depends on its writer (the Java driver shows
                # none, the model the ones it sends): the committed offset it shows is a lower bound only.
                m.commits_shown = None
        if ctx.auto_commit_interval_ms is not None:
            m.auto_commit_interval_ms = ctx.auto_commit_interval_ms

    # ---------------------------------------------------------------- consumption

    def _consumption(self, m: Member, tp: TP, p: dict[str, Any], low: Any, ts: int, src: int, line: int) -> None:
        """A poll of an owned partition that did not start at the member's position (the hot path's exit)."""
        high = p.get("maxOffset")
        if type(low) is not int or type(high) is not int:
            if low is not None or high is not None:
                raise BadField(f"minOffset / maxOffset of {tp_label(tp)} are not integers")
            m.fresh.discard(tp)
            m.set_position(tp, UNKNOWN_POSITION)
            return
        if high < low:
            raise BadField(f"maxOffset {high} of {tp_label(tp)} is below minOffset {low}")
        if tp in m.fresh:
            self._first_consumption(m, tp, low, ts, src, line)
        else:
            pos = m.position_of(tp)
            if pos is not None and pos != UNKNOWN_POSITION:
                if m.record_data and high < pos:
                    # VerifiableConsumer --verbose prints each record (record_data), then the poll's
                    # summary (records_consumed): the summary repeats what was already counted.
                    return
                self._monotonic(m, tp, pos, low, high, ts, src, line)
        m.set_position(tp, high + 1)

    def _monotonic(self, m: Member, tp: TP, pos: int, low: int, high: int, ts: int, src: int, line: int) -> None:
        if low < pos:
            self._finding("monotonic-consumption", VIOLATION, m.group, [m.key], [tp], ts, ts,
                          [self.where(src, line)],
                          f"{m.key} consumed {tp_label(tp)} offsets {low}..{high} after it had already consumed up "
                          f"to {pos - 1} in the same ownership: its position went back",
                          aggregate=("monotonic-consumption", m.key, tp))
        elif low > pos + self.config.gap_slack:
            self._finding("monotonic-consumption", VIOLATION, m.group, [m.key], [tp], ts, ts,
                          [self.where(src, line)],
                          f"{m.key} consumed {tp_label(tp)} from offset {low} right after offset {pos - 1}: "
                          f"offsets {pos}..{low - 1} were skipped (set gap_slack for transactional or "
                          f"compacted topics)",
                          aggregate=("monotonic-consumption", m.key, tp))

    def _first_consumption(self, m: Member, tp: TP, low: int, ts: int, src: int, line: int) -> None:
        """The first poll of a newly assigned partition: no-gap, and the start of a handoff's count."""
        m.fresh.discard(tp)
        self.saw["offsets"] += 1
        gs = m.gs
        committed = gs.committed.get(tp)
        where = self.where(src, line)
        hidden = gs.hidden_committers.get(tp, set()) | {
            h.key for h in gs.holders.get(tp, ()) if h is not m and h.commits_shown is not True}
        unseen = self._commit_maybe_unseen(m, gs, tp)
        past = low > 0 and (committed is None or low > committed + self.config.gap_slack)
        evidence, whose = [where], "the"
        broker = gs.broker_committed.get(tp) if past and (hidden or unseen) else None
        if broker is not None:
            # server.log shows what the coordinator took: the trace's unseen commits are seen there (a log that
            # shows none of this partition's commits does not cover them: the bound below decides instead)
            if committed is None or broker[0] >= committed:
                committed, whose = broker[0], "the broker's"
                evidence.append(broker[1])
            past = False
        if past and (hidden or unseen):
            self._no_gap_hidden(m, gs, tp, hidden | unseen, low, committed, ts, where,
                                "auto-commit" if hidden else "unseen")
        elif committed is not None:
            self.opportunities["no-gap"] += 1
            if low > committed + self.config.gap_slack:
                self._finding("no-gap", VIOLATION, m.group, [m.key], [tp], ts, ts, evidence,
                              f"{m.key} started {tp_label(tp)} at offset {low} but {whose} committed offset was "
                              f"{committed}: offsets {committed}..{low - 1} were never consumed")
        elif low == 0:
            self.opportunities["no-gap"] += 1  # from the first offset there is: nothing can have been skipped
        else:
            policy = m.auto_offset_reset or self.config.auto_offset_reset
            if policy == "earliest":
                self.opportunities["no-gap"] += 1
                self.no_gap_assumed_zero += 1
                if low > self.config.gap_slack:
                    self._finding("no-gap", VIOLATION, m.group, [m.key], [tp], ts, ts, [where],
                                  f"{m.key} started {tp_label(tp)} at offset {low} with no committed offset and "
                                  f"auto.offset.reset=earliest: offsets 0..{low - 1} were never consumed "
                                  f"(assuming the log starts at 0; retention may have deleted them)")
            else:
                self.no_gap_unjudged[policy or "unknown"] += 1
        src_rec = m.handoff_src.pop(tp, None)
        if src_rec is not None:
            self._start_handoff(m, gs, tp, src_rec, low, committed, ts, where)

    def _commit_maybe_unseen(self, m: Member, gs: GroupState, tp: TP) -> set[str]:
        """Earlier owners whose last commit of ``tp`` may have reached the broker without its trace line.

        A driver writes ``offsets_committed`` after the commit returns: a process killed in between (its
        trace ended without shutdown_complete: release ``killed`` / ``eof``) took the line with it though
        the coordinator stored the offset (Kafka's consumer-bounce --hard does exactly that), and a member
        still holding the partition (a zombie, a late revoker) may have a commit in flight whose line comes
        after the new owner's first poll. Such a commit is at most that owner's position (committed-not-
        ahead), so :meth:`_no_gap_hidden` bounds it. server.log's commits (``coordinator_offset_commit``, read in
        time order with the traces) settle it: the last offset the coordinator took before the new owner's first
        poll is what its OffsetFetch returned, unless the trace shows a later commit.
        """
        out = {h.key for h in gs.holders.get(tp, ()) if h is not m}
        release = gs.released.get(tp)
        if release is not None and release.kind in ("killed", "eof"):
            out.add(release.member)
        return out

    def _coord_offset_commit(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        """``coordinator_offset_commit`` (server.log): the offset the coordinator took, per partition."""
        # _coord_group refuses the event first unless ``offsets`` is a list of entries with a string topic and
        # integer partition and offset (refuse_bad_coordinator: _broker_offsets)
        gs = self._coord_group(ev, ts, src, line)  # type: ignore[attr-defined]  # CoordinatorChecks, mixed in
        where = self.where(src, line)
        for item in ev["offsets"]:
            if item["offset"] >= 0:
                gs.broker_committed[(item["topic"], item["partition"])] = (item["offset"], where)

    def _no_gap_hidden(self, m: Member, gs: GroupState, tp: TP, hidden: set[str], low: int, committed: int | None,
                       ts: int, where: str, why: str = "auto-commit") -> None:
        """no-gap for a start past the committed offset the trace shows, when an owner's commits were not shown.

        A member whose commits the trace does not show (VerifiableConsumer with --enable-autocommit prints
        none; a client log prints none) may have committed further than any commit the trace shows: the
        new owner may rightly start there. Such a commit is the committer's position (the Java client
        auto-commits ``subscriptions.allConsumed()``, ConsumerCoordinator.maybeAutoCommitOffsetsAsync), so
        it is at most the highest position any owner reached. A start beyond that skipped records whatever
        was committed, when a commit exists (or the reset policy is earliest, the log assumed to start at 0);
        a start at or below it cannot be judged. A hidden committer whose positions the trace does not show
        either (a client log) leaves nothing to bound it.
        """
        members = [self.members[k] for k in sorted(hidden) if k in self.members]
        blind = [h.key for h in members if not h.jsonl]
        if blind:
            self.no_gap_hidden["positions"] += 1
            return
        high = gs.high.get(tp, 0)
        for h in members:
            pos = h.position_of(tp)
            if pos is not None and pos != UNKNOWN_POSITION:
                high = max(high, pos)
        bound = max(high, committed if committed is not None else 0)
        if low <= bound + self.config.gap_slack:
            self.no_gap_hidden[why] += 1
            return
        policy = m.auto_offset_reset or self.config.auto_offset_reset
        if committed is None and policy != "earliest":
            self.no_gap_unjudged[policy or "unknown"] += 1
            return
        self.opportunities["no-gap"] += 1
        self._finding("no-gap", VIOLATION, m.group, [m.key], [tp], ts, ts, [where],
                      f"{m.key} started {tp_label(tp)} at offset {low}, beyond offset {bound - 1}, the last any member "
                      f"of the group had consumed: offsets {bound}..{low - 1} were never consumed (no commit, shown "
                      f"or automatic, can be past what its committer consumed)"
                      + ("" if committed is not None else "; with no commit at all, auto.offset.reset=earliest "
                                                           "starts at the log start, assumed 0"))

    # ---------------------------------------------------------------- handoffs

    def _keep_high(self, m: Member) -> None:
        """Remember ``m``'s positions as the highest reached (see GroupState.high) before they are forgotten."""
        high = m.gs.high
        for tp, slot in m.position.items():
            if slot.pos != UNKNOWN_POSITION and slot.pos > high.get(tp, -1):
                high[tp] = slot.pos

    def _handoff_assigned(self, m: Member, gs: GroupState, tp: TP, holders: list[Member] | None) -> None:
        """``m`` is assigned ``tp``: remember where it came from; its old position no longer counts."""
        old = m.position_of(tp)
        if old is not None and old != UNKNOWN_POSITION and old > gs.high.get(tp, -1):
            gs.high[tp] = old
        m.drop_position(tp)
        m.failed_commits.pop(tp, None)
        source: Release | Member | None = None
        if holders:
            source = next((h for h in holders if h is not m), None)
        if source is None:
            source = gs.released.get(tp)
        if source is not None:
            m.handoff_src[tp] = source

    def _handoff_released(self, m: Member, gs: GroupState, tp: TP, kind: str, ts: int, where: str) -> None:
        """``m`` lets ``tp`` go: close the count of the handoff that gave it ``tp``; record this release."""
        m.handoff_src.pop(tp, None)
        if m.commits_shown is not True:
            gs.hidden_committers.setdefault(tp, set()).add(m.key)
        pending = m.dup_pending.pop(tp, None) if m.dup_pending else None
        if pending is not None:
            self._close_handoff(m, tp, pending)
        gs.released[tp] = Release(m, tp, kind, ts, where)

    def _start_handoff(self, m: Member, gs: GroupState, tp: TP, source: Release | Member, low: int,
                       committed: int | None, ts: int, where: str) -> None:
        zombie_slot = None
        if isinstance(source, Member):
            previous, kind, release_where = source.key, "held", f"{source.key} (still owning it)"
            prev_pos = source.position_of(tp)
            zombie_slot = source.position.get(tp)
            failed, auto, interval = source.failed_commits.get(tp), source.auto_commit, source.auto_commit_interval_ms
        else:
            previous, kind, release_where = source.member, source.kind, source.where
            prev_pos = source.position
            failed, auto, interval = source.failed_commit, source.auto_commit, source.auto_commit_interval_ms
        if prev_pos is None or prev_pos == UNKNOWN_POSITION:
            self.handoffs_unmeasured += 1
            return
        cause = detail = ""
        if prev_pos > low:
            if kind in ("killed", "eof", "crashed"):
                cause = "crash"
            elif kind in ("held", "lost"):
                cause = "zombie"
            elif committed is not None and committed >= prev_pos:
                cause = "rewind"
            elif failed is not None and (committed is None or failed[0] > committed):
                cause = "commit-failed"
            elif auto:
                cause = "auto-commit"
            elif kind == "revoked":
                cause = "no-commit-on-revoke"
            elif kind == "shutdown":
                cause = "no-commit-on-close"
            else:
                cause = "unknown"
            detail = CAUSES[cause]
            if cause == "commit-failed" and failed is not None:
                detail += f" (offset {failed[0]}: {failed[1] or 'no error given'})"
            if cause == "auto-commit" and interval is not None:
                detail += f" (auto.commit.interval.ms={interval})"
        handoff = Handoff(m.group, tp, previous, m.key, ts, low, prev_pos, committed, cause, detail,
                          [release_where, where])
        handoff.zombie_slot = zombie_slot
        if prev_pos > low or zombie_slot is not None:  # a zombie may consume more of it: count at the close
            m.dup_pending[tp] = handoff
        else:
            self._record_handoff(handoff)

    def _close_handoff(self, m: Member, tp: TP, h: Handoff) -> None:
        if h.zombie_slot is not None and h.zombie_slot.pos != UNKNOWN_POSITION \
                and h.zombie_slot.pos > h.previous_position:
            # The previous owner, a zombie, went on consuming after the new owner started (a stalled Java consumer
            # returns what it had fetched before it learns it was removed): those records are read twice too.
            h.previous_position = h.zombie_slot.pos
            if not h.cause:
                h.cause, h.detail = "zombie", CAUSES["zombie"]
        pos = m.position_of(tp)
        if pos is not None and pos != UNKNOWN_POSITION:
            h.duplicates = max(0, min(pos, h.previous_position) - h.start)
        self._record_handoff(h)

    def _record_handoff(self, h: Handoff) -> None:
        self.handoffs += 1
        self.opportunities["handoff-duplicates"] += 1
        totals = self.dup_by_partition.setdefault((h.group, h.tp), [0, 0])
        totals[0] += 1
        if h.duplicates:
            totals[1] += h.duplicates
            self.dup_handoffs += 1
            self.dup_total += h.duplicates
            self.dup_by_cause[h.cause] += h.duplicates
            listed = _Listed(h, self.dup_handoffs)
            if len(self.handoff_examples) < self.config.max_findings:
                heapq.heappush(self.handoff_examples, listed)
            elif self.handoff_examples and listed.key < self.handoff_examples[0].key:
                heapq.heapreplace(self.handoff_examples, listed)

    def _finish_delivery(self) -> None:
        for m in self.members.values():
            for tp, h in sorted(m.dup_pending.items()):
                self._close_handoff(m, tp, h)
            m.dup_pending.clear()

    # ---------------------------------------------------------------- commits

    def _commit_position(self, m: Member, tp: TP, offset: Any, pos: int | None, ts: int, src: int,
                         line: int) -> None:
        """committed-not-ahead for a commit of an owned partition that is not exactly the position."""
        if type(offset) is not int or offset < 0:
            return
        if pos is not None:
            if pos == UNKNOWN_POSITION or offset <= pos:
                return
            self._finding("committed-not-ahead", VIOLATION, m.group, [m.key], [tp], ts, ts, [self.where(src, line)],
                          f"{m.key} committed offset {offset} of {tp_label(tp)} but had consumed only up to offset "
                          f"{pos - 1}: offsets {pos}..{offset - 1} would be skipped by the next owner",
                          aggregate=("committed-not-ahead", m.key, tp))
            return
        committed = m.gs.committed.get(tp)
        if committed is None:
            self.not_ahead_unjudged += 1
            return
        if offset > committed:
            self._finding("committed-not-ahead", VIOLATION, m.group, [m.key], [tp], ts, ts, [self.where(src, line)],
                          f"{m.key} committed offset {offset} of {tp_label(tp)} without consuming any of it since "
                          f"it was assigned; its position started at the committed offset {committed}",
                          aggregate=("committed-not-ahead", m.key, tp))

    def _commit_failed(self, m: Member, ev: dict[str, Any]) -> None:
        error = ev.get("error")
        text = error if isinstance(error, str) else ""
        for item in ev.get("offsets") or ():
            offset = item.get("offset")
            if type(offset) is int:
                tp = (item["topic"], item["partition"])
                failed = (offset, text or str(item.get("error") or ""))
                m.failed_commits[tp] = failed
                release = m.gs.released.get(tp)
                if tp not in m.owned and release is not None and release.member == m.key:
                    release.failed_commit = failed  # the commit in onPartitionsRevoked, reported after it

    # ---------------------------------------------------------------- results

    def delivery_json(self) -> dict[str, Any]:
        """The ``delivery`` section of the report: handoffs and the records they made consumed twice."""
        per_partition = [{"group": g, **tp_json(tp), "handoffs": n, "duplicates": d}
                         for (g, tp), (n, d) in sorted(self.dup_by_partition.items())]
        return {
            "handoffs": self.handoffs,
            "handoffs_with_duplicates": self.dup_handoffs,
            "handoffs_unmeasured": self.handoffs_unmeasured,
            "duplicates": self.dup_total,
            "duplicates_by_cause": dict(sorted(self.dup_by_cause.items())),
            "causes": {k: CAUSES[k] for k in sorted(self.dup_by_cause)},
            "per_partition": per_partition,
            "handoff_examples": [
                {"group": h.group, **tp_json(h.tp), "from": h.previous, "to": h.new, "at": h.ts,
                 "start": h.start, "previous_position": h.previous_position, "committed": h.committed,
                 "duplicates": h.duplicates, "cause": h.cause, "detail": h.detail, "evidence": h.evidence}
                for h in (e.handoff for e in sorted(self.handoff_examples, key=lambda e: e.key))],
            "handoff_examples_truncated": self.dup_handoffs > len(self.handoff_examples),
        }

    def delivery_unchecked(self) -> list[dict[str, Any]]:
        out = offsets_seen_notes(self.saw["offsets"], self.opportunities["no-gap"])
        if self.saw["offsets"]:
            out += offset_notes(self.no_gap_unjudged, self.no_gap_hidden, self.no_gap_assumed_zero, 0)
        out += commits_seen_notes(self.saw["commits"])
        if self.saw["commits"]:
            out += offset_notes(Counter(), Counter(), 0, self.not_ahead_unjudged)
        return out + handoff_notes(self.handoffs, self.handoffs_unmeasured)
