"""The streaming checker: every catalogue invariant a captured trace allows, over the merged events.

The history
-----------
The input is the events of :mod:`model.events`, from every file of a trace set, in time order
(:mod:`traces.merge`). *Member events* belong to one consumer process (``member``; where a file
does not say, the file is the member): its rebalance callbacks (``partitions_assigned``,
``partitions_revoked``, ``partitions_lost``), what it consumed (``records_consumed``: per partition
``minOffset`` / ``maxOffset``; ``record_data``), what it committed (``offsets_committed``:
``offsets``, ``success``), its lifecycle (``startup_complete``, ``shutdown_complete``) and the
JoinGroup / SyncGroup answers it got (``group_joined``, ``group_synced``), each optionally with the
context fields ``group``, ``member_id``, ``instance_id``, ``generation``, ``protocol`` and
``subscription`` (topic names). *Coordinator events* (``coordinator_*``) are the broker's view,
read from a ``server.log`` or written by the model: rebalances with their reasons, stable
generations (with the stored assignment when the model wrote them), members removed and why.

Ownership
---------
A member owns a partition from the ``partitions_assigned`` that names it until the
``partitions_revoked`` / ``partitions_lost`` that names it, its ``shutdown_complete``, or the end of
its trace. ``partitions_assigned`` adds (cooperative callbacks name only what is added; an eager
member has revoked everything before, so adding is right for both protocols).

The rules
---------
- ``single-owner``: a partition assigned to a member while another still owns it opens an
  *overlap*. It is judged when the old owner lets go. The old owner was a **zombie** -- a member
  the coordinator no longer counted -- if it reported ``partitions_lost``; or the coordinator had
  removed its member id before; or, generations known, it never reached the generation in which
  the new owner was assigned the partition (one that had reached it is no zombie, whatever else);
  or else its trace ended without ``shutdown_complete`` (killed) or it restarted. A zombie's overlap
  is what Kafka allows (``zombie-overlap``, a warning), *unless* the zombie consumed from the
  partition or committed it after the new owner got it, which is a ``single-owner`` violation. Any
  other overlap is a violation, except between files whose clocks may differ by up to ``skew_ms``:
  an overlap no longer than that is tolerated (and counted). The coordinator's own stored
  assignment (``coordinator_stable``) and KIP-848 member assignments are checked for a partition
  given twice (:mod:`traces.coordinator_checks`).
- ``consume-owned-only``: records consumed only from partitions owned at that moment.
- ``commit-owned-only``: offsets committed only for partitions owned at that moment. A commit of a
  partition the member let go of is accepted when it commits no further than what the member
  consumed while it owned it (a commit callback that ran after the revocation). A commit that
  succeeded with a generation older than one the group had already reached is a violation too:
  Kafka answers ILLEGAL_GENERATION (ClassicGroup.validateOffsetCommit).
- ``no-gap``, ``monotonic-consumption``, ``committed-not-ahead`` and the measure
  ``handoff-duplicates``: see :mod:`traces.delivery` (positions, committed offsets, the reset
  policy, and what each handoff made consumed twice).
- ``generation-monotonic``: per member and file, the generation never goes down; -1 ("none", after
  a reset) is always allowed; a new process (``startup_complete``) starts over.
- ``eager-revoke-all``: an eager member owns nothing when it joins a new generation or is assigned.
- ``revoke-before-assign`` (cooperative, needs generations): a partition is never revoked from one
  member and assigned to another in the same generation, in either order.
- ``revoke-only-moved`` (cooperative, needs generations): a member never revokes a partition and
  gets it back in the same generation; nor revokes one before rejoining (with its old generation,
  which only an unsubscribed topic justifies) and gets it back next with nobody having owned it
  in between.
- ``subscribed-only``: assigned partitions are of subscribed topics, where the member said what
  it subscribes to.
- ``converges`` and ``static-rejoin`` (:mod:`traces.coordinator_checks`): after the last
  membership change a group needs at most one rebalance (eager) or two (cooperative) to be stable
  again; a static member replaced while the group is Stable causes no rebalance unless the
  group's protocol changes.

Memory is per member and per partition (owners, offsets, open overlaps), never per event; findings
are capped per invariant (the first ``max_findings``, the rest counted), and a run of the same
violation by the same member on the same partition is one finding with a count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from model import events as ev_names
from model.invariants.catalogue import CATALOGUE
from traces.coordinator_checks import CoordinatorChecks, _text, converges_notes, coordinator_notes
from traces.delivery import DeliveryChecks, _accepted
from traces.readers import JSONL_FORMATS
from traces.readers.jsonl import parser_keys
from traces.schema import (
    BAD_FIELD,
    TP,
    BadField,
    InputStats,
    Located,
    Source,
    int_field,
    partitions_field,
    tp_label,
)
from traces.state import (
    COOPERATIVE_ASSIGNORS,
    EAGER_ASSIGNORS,
    PROTOCOLS,
    VIOLATION,
    WARNING,
    CheckConfig,
    Finding,
    GroupState,
    Member,
    MemberContext,
    Overlap,
    RevokeRecord,
)
from traces.trace_notes import consumption_notes, ownership_notes, protocol_notes, subscription_notes
from traces.zombies import OVERLAP, REASONS, USED, words

# The keys the hot path (Checker.run) looks up, as the parser's own str objects: see parser_keys.
(K_NAME, K_MEMBER, K_GENERATION, K_GROUP, K_MEMBER_ID, K_PARTITIONS, K_TOPIC, K_PARTITION, K_MIN_OFFSET,
 K_MAX_OFFSET, K_SUCCESS, K_OFFSETS, K_OFFSET, K_ERROR) = parser_keys(
    "name", "member", "generation", "group", "member_id", "partitions", "topic", "partition", "minOffset",
    "maxOffset", "success", "offsets", "offset", "error")
# ... and the context fields the general path reads (and refuses when malformed: refuse_bad_context). The hot path
# keeps an event whose offset settings equal what the member already has, exactly as the general path would read
# them (the same string, the same bool object, an int that is an int): the project's own drivers write the offset
# settings on every poll, and sending each such poll down the general path made the whole check 2.8 times slower
# (a 1M-event trace, docs/benchmarks.md); any other value, and any subscription, takes the general path. The same for
# the member's protocol (Member.protocol: the last protocol field that names one, KIP-429's rebalance.protocol as
# the trace format carries it; while it names none, the first assignor's kind): a poll or commit naming the protocol
# the member has stays on the hot path -- gen_trace and the conformance Java driver name it on every event, so that
# stays a compare of an unchanged value -- one naming another, or an assignor while the member's protocol is unknown,
# takes the general path, which reads it (Checker._context) as the Spark job reads every row's (ownership._protocol)
CONTEXT_KEYS = parser_keys("auto_offset_reset", "enable_auto_commit", "auto_commit_interval_ms", "subscription",
                           "protocol", "assignor")

__all__ = ["VIOLATION", "WARNING", "CheckConfig", "Checker", "Finding"]


# The assignment-shape invariants: properties of one assignment, judged by `groupspec assign`, never from a trace (the
# Spark job lists them with this reason).
FROM_ASSIGNMENTS = dict.fromkeys(
    ("complete", "balanced", "sticky", "stickiness-gap"),
    "needs the topic metadata and every member's subscription for one assignment, which a trace does not carry; run "
    "`groupspec assign` on the assignment instead")


def refuse_bad_context(ev: dict[str, Any]) -> MemberContext:
    """The context fields of a member event (trace-format.md: ``group``, ``member_id``, the offset configuration,
    ``subscription``, ``generation``), parsed; :class:`BadField` for one of the wrong shape, checked before the checker
    changes anything of the member: a line refused is a ``bad-field`` and nothing else (docs/check.md, "Input that
    cannot be used"), not a member moved, restarted or renamed by half of it. ``Checker._context`` reads what this
    returns, never the event's fields a second time; ``groupspec corpus --from`` refuses the same lines by the same
    function (spark_analysis.corpus)."""
    group = ev.get("group")
    if group is not None and not isinstance(group, str):
        raise BadField(f"group is not a string: {group!r:.40}")
    member_id = ev.get("member_id")
    if member_id is not None and not isinstance(member_id, str):
        raise BadField(f"member_id is not a string: {member_id!r:.40}")
    # the table is consulted only for a field the event names: most events name none
    reset = ev.get("auto_offset_reset")
    if reset is not None:
        _accepted("auto_offset_reset", reset)
    auto = ev.get("enable_auto_commit")
    if auto is not None:
        _accepted("enable_auto_commit", auto)
    interval = ev.get("auto_commit_interval_ms")
    if interval is not None:
        _accepted("auto_commit_interval_ms", interval)
    sub = ev.get("subscription")
    if sub is not None and (not isinstance(sub, list) or not all(isinstance(t, str) for t in sub)):
        raise BadField("subscription is not a list of topic names")
    return MemberContext(member_id, reset, auto, interval, sub, int_field(ev, "generation"))


def undecided_note(n: int, example: str | None) -> str:
    """The partial ``single-owner`` note for the overlaps :meth:`Checker._unnamed_removal` leaves undecided (the
    Spark job words it here too: ``spark_analysis.invariants.undecided_notes``)."""
    return (f"{n} overlap(s) were not judged: the old owner let go after the new one was assigned, and the "
            f"coordinator had removed a member (session or rebalance timeout) that the trace cannot name, since the old "
            f"owner's events carry no member id (VerifiableConsumer output): a zombie, which Kafka allows, or a late "
            f"revoker, which is a violation. Give each consumer's client log beside its output (the same file name, "
            f"e.g. c1.jsonl and c1.log) for its member id; first: {example}")


# The catalogue's stuck-group invariants (issue 17), which no trace can judge: each needs to know that every
# member was alive -- its heartbeats reaching the coordinator, its polls -- which no trace format carries (a
# member's events show that it consumed, not that it heartbeated; a broker's server.log names a removal and its
# reason, not the heartbeats before it). A long rebalance or a removal for a timeout is correct when a member was
# stalled or cut off, so none is judged rather than one guessed. (The Spark job lists them with these reasons.)
NOT_IN_TRACES = {
    "rebalance-within-timeout": "needs every member's liveness while the group rebalanced (heartbeats and polls, "
                                "which no trace carries) and the group's rebalance timeout; a rebalance that "
                                "outlasts it is correct when a member was stalled",
    "live-member-kept": "needs the member's heartbeats as the coordinator got them, which no trace carries: a "
                        "removal for a session, rebalance or sync timeout (server.log) is correct when the member "
                        "had stopped heartbeating or polling",
    "settled-group-reads": "needs each partition's log end offset over time (what was produced) and every member's "
                           "liveness, which a consumer trace does not carry",
}


class Checker(CoordinatorChecks, DeliveryChecks):
    """Feed it located events in time order (:meth:`run`), then :meth:`finish`."""

    def __init__(self, sources: list[Source], config: CheckConfig, stats: InputStats,
                 callback_members: frozenset[str] = frozenset()) -> None:
        self.sources = sources
        self.labels = [s.label for s in sources]
        self.jsonl = [s.format in JSONL_FORMATS for s in sources]
        self.config = config
        self.stats = stats
        self.callback_members = callback_members
        self.members: dict[str, Member] = {}
        self.groups: dict[str, GroupState] = {}
        self.pending: dict[tuple[str, TP], list[Overlap]] = {}
        self.removed: dict[str, tuple[int, str, str]] = {}  # member id -> (ts, reason, where)
        self.findings: dict[str, list[Finding]] = {}
        self.finding_counts: Counter[str] = Counter()
        self.open_findings: dict[tuple[str, str, TP], Finding] = {}
        self.opportunities: Counter[str] = Counter()
        self.tolerated = 0  # overlaps within the clock-skew tolerance
        self.converges_unjudged = 0
        self.undecided_overlaps = 0  # overlaps whose old owner may be a removed member the trace cannot name
        self.undecided_example: str | None = None
        self.unverified = 0  # consumption by members whose assignment was not known
        self.events = 0
        self.first_ts: int | None = None
        self.last_ts: int | None = None
        self.saw: Counter[str] = Counter()
        self._init_delivery()
        self._dispatch: dict[str, Callable[[int, int, int, dict[str, Any]], None]] = {
            ev_names.STARTUP_COMPLETE: self._startup,
            ev_names.SHUTDOWN_COMPLETE: self._shutdown,
            ev_names.PARTITIONS_ASSIGNED: self._assigned,
            ev_names.PARTITIONS_REVOKED: self._revoked,
            ev_names.PARTITIONS_LOST: self._lost,
            ev_names.RECORDS_CONSUMED: self._consumed,
            ev_names.RECORD_DATA: self._record_data,
            ev_names.OFFSETS_COMMITTED: self._committed,
            ev_names.GROUP_JOINED: self._joined,
            ev_names.GROUP_SYNCED: self._synced,
            ev_names.COORDINATOR_REBALANCE: self._coord_rebalance,
            ev_names.COORDINATOR_STABLE: self._coord_stable,
            ev_names.COORDINATOR_MEMBER_REMOVED: self._coord_removed,
            ev_names.COORDINATOR_STATE: self._coord_state,
            ev_names.COORDINATOR_OFFSET_COMMIT: self._coord_offset_commit,
        }

    # ================================================================ driving

    def run(self, located: Iterable[Located]) -> None:
        """Check every event of ``located`` (time-ordered ``(ts, source, seq, line, event)``).

        ``records_consumed`` and ``offsets_committed`` are most of any trace; their common case
        (a known member of a callback trace, same file, generation, group and member id as its
        last event, its offset settings and protocol unchanged where the event names them) is inlined
        here and does only dictionary look-ups: one per partition entry in the member's
        :attr:`~traces.state.Member.fast` index, with keys that are the parser's own ``str`` objects
        (:func:`~traces.readers.jsonl.parser_keys`). Anything unusual goes to the same handlers as
        every other event, so both paths judge an event the same way.
        """
        dispatch = self._dispatch
        # the keys as locals: in the loop a local is the cheapest name there is
        k_name, k_member, k_generation, k_group, k_member_id = K_NAME, K_MEMBER, K_GENERATION, K_GROUP, K_MEMBER_ID
        k_partitions, k_topic, k_partition, k_min_offset, k_max_offset = (
            K_PARTITIONS, K_TOPIC, K_PARTITION, K_MIN_OFFSET, K_MAX_OFFSET)
        k_success, k_offsets, k_offset, k_error = K_SUCCESS, K_OFFSETS, K_OFFSET, K_ERROR
        k_reset, k_auto, k_interval, k_subscription, k_protocol, k_assignor = CONTEXT_KEYS
        consumed_name = ev_names.RECORDS_CONSUMED
        committed_name = ev_names.OFFSETS_COMMITTED
        members_get = self.members.get
        default_member = [s.member for s in self.sources]
        sources = self.sources
        n = 0
        refused = 0
        checked = 0
        commit_checked = 0
        commits = 0
        # input.first_timestamp / last_timestamp: the times of the first and last events used. A line refused below is
        # no event (docs/check.md, "Input that cannot be used"): there ``last`` goes back to ``before``, and ``first``
        # to None while no event was used yet. The correction is made on the refused path, the rare one; the common
        # one pays two local stores a line.
        first = self.first_ts
        last = self.last_ts
        for ts, src, _seq, line, ev in located:
            n += 1
            before = last
            last = ts
            if first is None:
                first = ts
            name = ev[k_name]
            try:
                if name == consumed_name:
                    poll = True
                elif name == committed_name:
                    poll = False
                else:
                    dispatch[name](ts, src, line, ev)
                    continue
                m = members_get(ev.get(k_member) or default_member[src])
                # `ev.get(key, known) != known`: a field that is absent or unchanged passes; one method call
                # measured cheaper than `key in ev and ev[key] != known` when the field is there (member_id
                # usually is not: there `in` is cheaper)
                if m is None or src != m.last_src or not m.jsonl \
                        or ev.get(k_generation, m.generation) != m.generation \
                        or ev.get(k_group, m.group) != m.group \
                        or (k_member_id in ev and ev[k_member_id] != m.member_id) \
                        or (k_reset in ev and ev[k_reset] != m.auto_offset_reset) \
                        or (k_auto in ev and (ev[k_auto] is not m.auto_commit
                                              or (ev[k_auto] is True and m.commits_shown is True))) \
                        or (k_interval in ev and (type(ev[k_interval]) is not int
                                                  or ev[k_interval] != m.auto_commit_interval_ms)) \
                        or ev.get(k_protocol, m.protocol) != m.protocol \
                        or (m.protocol is None and k_assignor in ev) \
                        or k_subscription in ev:
                    dispatch[name](ts, src, line, ev)
                    continue
                m.last_ts = ts
                m.events += 1
                # Member.fast holds a Slot for each partition m owns uncontested with a known position:
                # one look-up answers "owned?", "contested?" and "where was it?" together. An entry
                # that misses it takes the general path (_consume_owned / _commit_owned / unowned).
                fast = m.fast
                if poll:
                    for p in ev[k_partitions]:
                        tp = (p[k_topic], p[k_partition])
                        checked += 1
                        slot = fast.get(tp)
                        if slot is not None:
                            low = p.get(k_min_offset)
                            if low == slot.pos:  # the common case: the poll starts where the last one ended
                                slot.pos = p[k_max_offset] + 1
                            else:
                                self._consumption(m, tp, p, low, ts, src, line)  # a gap, or no offsets
                        elif tp in m.owned:
                            self._consume_owned(m, tp, p, ts, src, line)  # first poll, or contested
                        else:
                            self._unowned(m, tp, ts, src, line, "consumed")
                    continue
                if ev.get(k_success) is False:
                    dispatch[name](ts, src, line, ev)  # remembered: a failed commit explains duplicates
                    continue
                commits += 1
                gs = m.gs
                gen = m.generation
                if gen is not None and gs.max_gen is not None and gs.max_gen > gen >= 0:
                    self._stale_commit(m, gs, gen, ev, ts, src, line)
                committed = gs.committed
                for o in ev[k_offsets]:
                    tp = (o[k_topic], o[k_partition])
                    offset = o.get(k_offset)
                    if k_error in o and o[k_error]:
                        continue
                    slot = fast.get(tp)
                    if slot is not None:
                        commit_checked += 1
                        if offset != slot.pos:  # committed-not-ahead: the common commit is the position itself
                            self._commit_position(m, tp, offset, slot.pos, ts, src, line)
                    elif tp in m.owned:
                        commit_checked += 1
                        self._commit_owned(m, tp, offset, ts, src, line)
                    else:
                        self._commit_unowned(m, tp, offset, ts, src, line)
                    if type(offset) is int and offset >= 0:
                        committed[tp] = offset
            except (BadField, KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
                # a refused line is counted as skipped and is no event (docs/check.md, "Input that cannot be used"),
                # as a line the reader refused is not: input.events and each source's events count what was used
                refused += 1
                self.stats.events_per_source[src] -= 1
                self.stats.skip(sources[src], line, BAD_FIELD, f"{name}: {exc}")
                last = before
                if before is None:  # no event used yet: the window starts at the next one used
                    first = None
        self.events += n - refused
        self.last_ts = last
        self.first_ts = first
        self.opportunities["consume-owned-only"] += checked
        self.opportunities["monotonic-consumption"] += checked
        self.opportunities["commit-owned-only"] += commit_checked
        self.opportunities["committed-not-ahead"] += commit_checked
        self.saw["commits"] += commits

    # ================================================================ helpers

    def where(self, src: int, line: int) -> str:
        return f"{self.labels[src]}:{line}"

    def _group(self, name: str) -> GroupState:
        gs = self.groups.get(name)
        if gs is None:
            gs = self.groups[name] = GroupState(name, self.config.analytics)
        return gs

    def _member(self, src: int, ev: dict[str, Any]) -> tuple[Member, MemberContext]:
        """The event's member (created, or moved to the group the event names, as the trace allows) and the event's
        context, parsed: both only for an event whose context is well formed (:func:`refuse_bad_context`)."""
        key = ev.get("member") or self.sources[src].member
        if not isinstance(key, str):
            raise BadField(f"member is not a string: {key!r:.40}")
        ctx = refuse_bad_context(ev)
        m = self.members.get(key)
        group = ev.get("group")
        if group is None:
            group = self.sources[src].group  # a callback trace's group, from its paired client log
        if m is None:
            m = Member(key, self._group(group or self.config.default_group), group is not None, False)
            m.protocol = self.config.default_protocol
            self.members[key] = m
        elif group is not None and group != m.group and not m.group_explicit and not m.owned:
            m.gs = self._group(group)
            m.group = group
            m.group_explicit = True
        if not m.jsonl and self.jsonl[src]:
            m.jsonl = m.known = True  # a callback trace from the process's start
            m.commits_shown = self.sources[src].commits_shown
            m.jsonl_format = self.sources[src].format
            if m.commits_shown is False and m.auto_commit is None:
                m.auto_commit = True  # VerifiableConsumer polls with no commit printed between: --enable-autocommit
        return m, ctx

    def _context(self, m: Member, ctx: MemberContext, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        """Update what is known of ``m`` from an event's context fields (``ctx``, as :meth:`_member` parsed them); check
        the generation."""
        m.events += 1
        if m.first_ts is None:
            m.first_ts = ts
        m.last_ts = ts
        m.last_src = src
        if ctx.member_id:
            m.member_id = ctx.member_id
        instance_id = ev.get("instance_id")
        if isinstance(instance_id, str) and instance_id:
            m.instance_id = instance_id
        protocol = ev.get("protocol")
        if protocol in PROTOCOLS:
            m.protocol = protocol
        elif m.protocol is None:
            assignor = ev.get("assignor")
            if assignor in COOPERATIVE_ASSIGNORS:
                m.protocol = "cooperative"
            elif assignor in EAGER_ASSIGNORS:
                m.protocol = "eager"
        self._offset_config(m, ctx)
        if ctx.subscription is not None:
            m.subscription = frozenset(ctx.subscription)
            self.saw["subscription"] += 1
        if ctx.generation is not None:
            self._generation(m, ctx.generation, ts, src, line)

    def _generation(self, m: Member, gen: int, ts: int, src: int, line: int) -> None:
        self.saw["generation"] += 1
        if gen >= 0:
            last = m.gen_by_src.get(src)
            self.opportunities["generation-monotonic"] += 1
            if last is not None and gen < last:
                self._finding("generation-monotonic", VIOLATION, m.group, [m.key], [], ts, ts,
                              [self.where(src, line)],
                              f"{m.key}'s generation went down from {last} to {gen} "
                              f"(it may only drop to -1, after losing its partitions)",
                              aggregate=("generation-monotonic", m.key, ("", -1)))
            m.gen_by_src[src] = gen
            gs = self._group(m.group)
            if gs.max_gen is None or gen > gs.max_gen:
                gs.max_gen, gs.max_gen_ts, gs.max_gen_src = gen, ts, src
                gs.max_gen_where = self.where(src, line)
        m.generation = gen

    def _finding(self, invariant: str, severity: str, group: str, members: Iterable[str],
                 partitions: Iterable[TP], t0: int, t1: int, evidence: list[str], message: str,
                 aggregate: tuple[str, str, TP] | None = None) -> Finding | None:
        if aggregate is not None:
            existing = self.open_findings.get(aggregate)
            if existing is not None:
                existing.again(t1, evidence[0] if evidence else "")
                return existing
        self.finding_counts[invariant] += 1
        finding = Finding(invariant, severity, group, members, partitions, t0, t1, evidence, message,
                          self.config.max_evidence)
        kept = self.findings.setdefault(invariant, [])
        if len(kept) < self.config.max_findings:
            kept.append(finding)
        if aggregate is not None:
            self.open_findings[aggregate] = finding
        return finding

    def _close_aggregate(self, invariant: str, member: str, tp: TP) -> None:
        if self.open_findings:
            self.open_findings.pop((invariant, member, tp), None)

    def _callback_superseded(self, m: Member, src: int) -> bool:
        """Client-log ownership lines of a member whose callbacks are traced elsewhere are context only."""
        if not self.jsonl[src] and m.key in self.callback_members:
            self.stats.superseded += 1
            return True
        return False

    # ================================================================ lifecycle

    def _startup(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        m, ctx = self._member(src, ev)
        if m.events and not m.shutdown and not m.ended:
            self._end_incarnation(m, "killed", m.last_ts, src, line)
        m.owned.clear()
        m.fresh.clear()
        m.contested.clear()
        self._keep_high(m)  # the old process's positions bound what it may have auto-committed
        m.position.clear()
        m.fast.clear()
        m.handoff_src.clear()
        m.dup_pending.clear()
        m.failed_commits.clear()
        m.prepare_revoked.clear()
        m.complete_revoked.clear()
        m.gen_by_src.clear()
        m.generation = None
        m.assigned_gen = None
        m.rejected = None
        m.member_id = None
        m.shutdown = False
        m.ended = False
        m.known = True
        m.incarnation += 1
        self._context(m, ctx, ts, src, line, ev)

    def _shutdown(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        m, ctx = self._member(src, ev)
        self._context(m, ctx, ts, src, line, ev)
        # groupspec's model says when a process crashed (reason "crash"): its position was lost, as a
        # killed process's is, though the trace ends cleanly
        self._end_incarnation(m, "crashed" if ev.get("reason") == "crash" else "shutdown", ts, src, line)
        m.shutdown = True
        m.known = True

    def _end_incarnation(self, m: Member, kind: str, ts: int, src: int, line: int) -> None:
        gs = self._group(m.group)
        for tp in sorted(m.owned):
            self._release(m, gs, tp, ts, src, line, kind, m.generation)
        m.owned.clear()
        m.fast.clear()
        m.fresh.clear()
        m.rejected = None
        m.ended = True
        gs.analytics.member_gone(m.key)

    # ================================================================ ownership

    def _ownership(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> tuple[Member, list[TP], GroupState] | None:
        """An ownership callback's member, partitions and group, what it says of the member read first
        (:meth:`_context`); None for a client-log line a callback trace supersedes, which is context only."""
        m, ctx = self._member(src, ev)
        tps = partitions_field(ev)
        self._context(m, ctx, ts, src, line, ev)
        if self._callback_superseded(m, src):
            return None
        self.saw["ownership"] += 1
        return m, tps, self._group(m.group)

    def _assigned(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        taken = self._ownership(ts, src, line, ev)
        if taken is None:
            return
        m, tps, gs = taken
        gen = m.generation
        if gen is not None and gen < 0:
            gen = None
        where = self.where(src, line)
        coop = m.protocol == "cooperative"
        if m.protocol == "eager" and not m.known:
            m.known = True  # an eager assignment is the whole assignment
        if m.rejected is not None and gen is not None:
            self._rejected_kept(m, gen, ts, where)
        new = [tp for tp in dict.fromkeys(tps) if tp not in m.owned]
        if m.protocol == "eager" and new:
            self.opportunities["eager-revoke-all"] += 1
            if m.owned and m.eager_flagged != gen:
                m.eager_flagged = gen
                self._finding("eager-revoke-all", VIOLATION, m.group, [m.key], m.owned, ts, ts, [where],
                              f"eager member {m.key} was assigned "
                              f"{'generation ' + str(gen) + ' ' if gen is not None else ''}partitions "
                              f"while it still owned {', '.join(map(tp_label, sorted(m.owned)))}; "
                              f"eager members revoke everything before they rejoin "
                              f"(ConsumerCoordinator.onJoinPrepare)")
        if m.subscription is not None and new:
            self.opportunities["subscribed-only"] += 1
            foreign = [tp for tp in new if tp[0] not in m.subscription]
            if foreign:
                self._finding("subscribed-only", VIOLATION, m.group, [m.key], foreign, ts, ts, [where],
                              f"{m.key} was assigned {', '.join(map(tp_label, foreign))} but subscribes only to "
                              f"{', '.join(sorted(m.subscription))}")
        if coop:
            self._cooperative_assign_checks(m, gs, new, gen, ts, where)
        for tp in new:
            gs.owner_epoch[tp] = gs.owner_epoch.get(tp, 0) + 1
            holders = gs.holders.get(tp)
            self._handoff_assigned(m, gs, tp, holders)
            if holders:
                self.opportunities["single-owner"] += 1
                for h in holders:
                    if h is m:
                        continue
                    ov = Overlap(tp, h, m, ts, src, where, gen, coop)
                    self.pending.setdefault((h.key, tp), []).append(ov)
                    h.contested.add(tp)
                    h.fast.pop(tp, None)  # contested: every entry of it takes the general path
                holders.append(m)
            else:
                self.opportunities["single-owner"] += 1
                gs.holders[tp] = [m]
            previous = gs.last_owner.get(tp)
            gs.last_owner[tp] = m.key
            m.owned.add(tp)
            m.fresh.add(tp)
            for invariant in ("consume-owned-only", "commit-owned-only", "monotonic-consumption",
                              "committed-not-ahead"):
                self._close_aggregate(invariant, m.key, tp)
            gs.analytics.assigned(ts, m.key, tp, previous, gen)
        if gen is not None:
            m.assigned_gen = gen
            for old in [g for g in m.complete_revoked if g < gen]:
                del m.complete_revoked[old]
        m.prepare_revoked.clear()

    def _cooperative_assign_checks(self, m: Member, gs: GroupState, new: list[TP], gen: int | None,
                                   ts: int, where: str) -> None:
        """revoke-only-moved and revoke-before-assign for one cooperative assignment (before it is applied)."""
        if gen is None or not new:
            return
        self.opportunities["revoke-only-moved"] += len(new)
        self.opportunities["revoke-before-assign"] += len(new)
        came_back = [tp for tp in new if (p := m.prepare_revoked.get(tp)) is not None
                     and p[0] == gs.owner_epoch.get(tp, 0)]
        if came_back:
            self._finding("revoke-only-moved", VIOLATION, m.group, [m.key], came_back, ts, ts,
                          [m.prepare_revoked[came_back[0]][1], where],
                          f"cooperative member {m.key} revoked {', '.join(map(tp_label, came_back))} before "
                          f"rejoining and got {'it' if len(came_back) == 1 else 'them'} back in generation {gen} "
                          f"with nobody else owning them in between: it revoked partitions that did not move")
        same = [tp for tp in new if tp in m.complete_revoked.get(gen, ())]
        if same:
            self._finding("revoke-only-moved", VIOLATION, m.group, [m.key], same, ts, ts, [where],
                          f"cooperative member {m.key} revoked {', '.join(map(tp_label, same))} and was assigned "
                          f"{'it' if len(same) == 1 else 'them'} again in the same generation {gen}")
        for tp in new:
            last = gs.last_revoke.get(tp)
            if last is not None and last.member is not m and last.generation == gen:
                self._finding("revoke-before-assign", VIOLATION, m.group, [last.member.key, m.key], [tp],
                              last.ts, ts, [last.where, where],
                              f"{tp_label(tp)} was revoked from {last.member.key} and assigned to {m.key} in the "
                              f"same generation {gen}; cooperative rebalancing withholds a moving partition "
                              f"until the generation after its revocation (KIP-429)")

    def _revoked(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        self._let_go(ts, src, line, ev, "revoked")

    def _lost(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        self._let_go(ts, src, line, ev, "lost")

    def _let_go(self, ts: int, src: int, line: int, ev: dict[str, Any], kind: str) -> None:
        taken = self._ownership(ts, src, line, ev)
        if taken is None:
            return
        m, tps, gs = taken
        gen = m.generation
        where = self.where(src, line)
        if kind == "revoked" and m.protocol == "cooperative" and gen is not None and gen >= 0 \
                and m.assigned_gen is not None:
            for tp in tps:
                if tp not in m.owned:
                    continue
                if gen == m.assigned_gen:
                    m.prepare_revoked[tp] = (gs.owner_epoch.get(tp, 0), where)
                elif gen > m.assigned_gen:
                    m.complete_revoked.setdefault(gen, set()).add(tp)
        if m.rejected is not None:
            self._rejected_let_go(m, tps, kind, ts, where)
        for tp in tps:
            if tp in m.owned:
                self._release(m, gs, tp, ts, src, line, kind, gen)
        if kind == "lost":
            m.known = True

    def _rejected_let_go(self, m: Member, tps: list[TP], kind: str, ts: int, where: str) -> None:
        """``generation-monotonic`` after a SyncGroup rejected the member's generation g
        (``group_synced`` with ``error`` ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID): what it owned
        then is reported *lost*, not revoked (``resetGenerationOnResponseError``, then
        ``ConsumerCoordinator.onJoinPrepare`` -> ``onPartitionsLost``; KAFKA-13419)."""
        assert m.rejected is not None
        rejected_gen, held, told = m.rejected
        named = [tp for tp in tps if tp in held and tp in m.owned]
        if not named:
            return
        self.opportunities["generation-monotonic"] += 1
        if kind == "revoked":
            self._finding("generation-monotonic", VIOLATION, m.group, [m.key], named, ts, ts, [told, where],
                          f"{m.key} revoked {', '.join(map(tp_label, named))} after the coordinator rejected its "
                          f"generation {rejected_gen} ({told}); a member whose generation was rejected reports "
                          f"what it owned lost (onPartitionsLost), it cannot revoke it under that generation")
            m.rejected = None
            return
        held.difference_update(named)
        if not held:
            m.rejected = None

    def _rejected_kept(self, m: Member, gen: int, ts: int, where: str) -> None:
        """``generation-monotonic``: assigned a newer generation while still owning partitions held in a
        rejected generation that were never reported lost (see :meth:`_rejected_let_go`)."""
        assert m.rejected is not None
        rejected_gen, held, told = m.rejected
        if gen <= rejected_gen:
            return
        m.rejected = None
        kept = sorted(held & m.owned)
        self.opportunities["generation-monotonic"] += 1
        if kept:
            self._finding("generation-monotonic", VIOLATION, m.group, [m.key], kept, ts, ts, [told, where],
                          f"{m.key} was assigned generation {gen} still owning {', '.join(map(tp_label, kept))} "
                          f"from generation {rejected_gen}, which the coordinator had rejected ({told}); it "
                          f"should have reported them lost before rejoining")

    def _release(self, m: Member, gs: GroupState, tp: TP, ts: int, src: int, line: int, kind: str,
                 gen: int | None) -> None:
        m.owned.discard(tp)
        m.fast.pop(tp, None)
        m.fresh.discard(tp)
        m.contested.discard(tp)
        holders = gs.holders.get(tp)
        if holders is not None:
            if m in holders:
                holders.remove(m)
            if not holders:
                del gs.holders[tp]
        where = self.where(src, line)
        self._handoff_released(m, gs, tp, kind, ts, where)
        if kind in ("revoked", "lost"):
            gs.last_revoke[tp] = RevokeRecord(m, gen if gen is not None and gen >= 0 else None, ts, where)
        for ov in self.pending.pop((m.key, tp), ()):
            self._judge(ov, ts, src, where, kind, gen)
        gs.analytics.released(ts, m.key, tp, not m.owned, bool(gs.holders.get(tp)))

    def _zombie_reason(self, ov: Overlap, kind: str, t_end: int) -> str | None:
        """Why the old owner of an overlap was a zombie, or None if it was a member in good standing (worded by
        :mod:`traces.zombies`, as the Spark job words it)."""
        old = ov.old
        if kind == "lost":
            return words(REASONS["lost"], old=old.key)
        mid = ov.old_member_id
        if mid is not None and mid in self.removed:
            removed_ts, reason, removed_where = self.removed[mid]
            if removed_ts <= ov.start + self.config.skew_ms:
                return words(REASONS["removed"], old=old.key, member_id=mid, reason=reason,
                             removed_where=removed_where)
        if ov.new_gen is not None and old.generation is not None:
            if old.generation < 0:
                return words(REASONS["reset"], old=old.key)
            if old.generation < ov.new_gen:
                return words(REASONS["behind"], old=old.key, new_gen=ov.new_gen, new=ov.new.key, tp=tp_label(ov.tp),
                             old_gen=old.generation)
            return None  # it was a member of that generation: no excuse
        if kind in ("killed", "eof"):
            return words(REASONS["ended"], old=old.key)
        return None

    def _unnamed_removal(self, ov: Overlap) -> tuple[int, str, str, str] | None:
        """A removal by the coordinator that may have been ``ov.old``, which the trace cannot name.

        Only for an old owner whose trace carries neither member id nor generation (VerifiableConsumer
        output): the coordinator removed a member (session or rebalance timeout, fencing: not a leave)
        after the old owner's process started and before the new owner got the partition, and that
        member id is no traced member's. Then the old owner may have been that member -- a zombie,
        which Kafka allows -- or another member that revoked late: undecidable from this trace.
        """
        old = ov.old
        if ov.old_member_id is not None or (ov.new_gen is not None and old.generation is not None):
            return None
        known = {m.member_id for m in self.members.values() if m.member_id}
        groups = [old.gs] if old.group_explicit else list(self.groups.values())
        since = old.first_ts if old.first_ts is not None else 0
        for gs in groups:
            for removal in reversed(gs.removals):
                if since <= removal[0] <= ov.start + self.config.skew_ms and removal[1] not in known:
                    return removal
        return None

    def _judge(self, ov: Overlap, t_end: int, src: int, where: str, kind: str, gen: int | None) -> None:
        old, new, tp = ov.old, ov.new, ov.tp
        gs = self._group(new.group)
        window_end = max(ov.start, t_end)
        zombie = self._zombie_reason(ov, kind, t_end)
        self.opportunities["zombie-overlap"] += 1
        ended = {"revoked": "revoked it", "lost": "lost it", "shutdown": "shut down", "crashed": "crashed",
                 "killed": "was restarted", "eof": "still owned it when its trace ended"}[kind]
        evidence = [ov.new_where, where]
        same_generation = ov.cooperative and kind == "revoked" and gen is not None and gen == ov.new_gen
        if same_generation:
            self._finding("revoke-before-assign", VIOLATION, gs.name, [old.key, new.key], [tp], ov.start,
                          window_end, evidence,
                          f"{tp_label(tp)} was assigned to {new.key} in generation {gen} before {old.key} "
                          f"revoked it in the same generation (KIP-429)")
        if zombie is not None:
            if ov.activity is not None:
                what, act_where, act_ts = ov.activity
                self._finding("single-owner", VIOLATION, gs.name, [old.key, new.key], [tp], ov.start,
                              max(window_end, act_ts), [ov.new_where, act_where, where],
                              words(USED, old=old.key, what=what, tp=tp_label(tp), new=new.key, zombie=zombie))
            else:
                self._finding("zombie-overlap", WARNING, gs.name, [old.key, new.key], [tp], ov.start,
                              window_end, evidence,
                              words(OVERLAP, new=new.key, tp=tp_label(tp), old=old.key, zombie=zombie, ended=ended))
            return
        if src != ov.new_src and t_end - ov.start <= self.config.skew_ms:
            self.tolerated += 1
            return
        if ov.cooperative and not same_generation and ov.new_gen is not None and ov.old_gen == ov.new_gen:
            # Both were members of the generation that gave the partition to the new owner while the
            # old one still held it: the broken rule is the cooperative one (KIP-429: the assignor
            # withholds a partition until its owner revoked it; AbstractStickyAssignor keeps it with
            # its owner in that generation). Named too, beside single-owner, so the user sees which
            # rule failed. An owner not in that generation (a zombie, a static member left out) did
            # not report the partition to the assignor: that overlap is single-owner's alone.
            self._finding("revoke-before-assign", VIOLATION, gs.name, [old.key, new.key], [tp], ov.start,
                          window_end, evidence,
                          f"{tp_label(tp)} was assigned to {new.key} before {old.key} {ended}; a cooperative group "
                          f"assigns a moving partition only after its owner revoked it (KIP-429)")
        elif ov.activity is None:
            # Not decided by the generations above: an overlap with a member the coordinator removed
            # and nothing in the trace names is either a zombie (allowed) or a late revoker.
            removal = self._unnamed_removal(ov)
            if removal is not None:
                self.undecided_overlaps += 1
                if self.undecided_example is None:
                    self.undecided_example = (f"{old.key} / {new.key} {tp_label(tp)} at {ov.start} ms: the coordinator "
                                              f"removed member {removal[1]} ({removal[2]}, {removal[3]})")
                return
        self._finding("single-owner", VIOLATION, gs.name, [old.key, new.key], [tp], ov.start, window_end,
                      evidence,
                      f"{tp_label(tp)} was owned by both {old.key} and {new.key} for {window_end - ov.start} ms: "
                      f"{new.key} was assigned it before {old.key} {ended}")

    # ================================================================ consumption

    def _consumed(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        m, ctx = self._member(src, ev)
        parts = ev["partitions"]
        if not isinstance(parts, list):
            raise BadField("partitions is not a list")
        self._context(m, ctx, ts, src, line, ev)
        owned = m.owned
        for p in parts:
            tp = (p["topic"], p["partition"])
            if tp in owned:
                self.opportunities["consume-owned-only"] += 1
                self.opportunities["monotonic-consumption"] += 1
                self._consume_owned(m, tp, p, ts, src, line)
            else:
                self._unowned(m, tp, ts, src, line, "consumed")

    def _consume_owned(self, m: Member, tp: TP, p: dict[str, Any], ts: int, src: int, line: int) -> None:
        """One ``records_consumed`` entry of a partition ``m`` owns: move its position, or judge the poll."""
        low = p.get("minOffset")
        if low is None or low != m.position_of(tp):
            self._consumption(m, tp, p, low, ts, src, line)  # first poll, gap, or no offsets
        else:
            m.set_position(tp, p["maxOffset"] + 1)
        if m.contested and tp in m.contested:
            self._zombie_activity(m, tp, ts, src, line, "consumed")

    def _record_data(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        offset = int_field(ev, "offset")
        part = {"topic": ev["topic"], "partition": ev["partition"], "minOffset": offset, "maxOffset": offset}
        self._member(src, ev)[0].record_data = True
        self._consumed(ts, src, line, {**ev, "partitions": [part]})

    def _zombie_activity(self, m: Member, tp: TP, ts: int, src: int, line: int, what: str) -> None:
        for ov in self.pending.get((m.key, tp), ()):
            tolerance = self.config.skew_ms if src != ov.new_src else 0
            if ov.activity is None and ts > ov.start + tolerance:
                ov.activity = (what, self.where(src, line), ts)

    def _unowned(self, m: Member, tp: TP, ts: int, src: int, line: int, what: str) -> None:
        if not m.known:
            self.unverified += 1
            return
        invariant = "commit-owned-only" if what == "committed" else "consume-owned-only"
        self.opportunities[invariant] += 1
        after = " after its shutdown_complete" if m.shutdown else ""
        self._finding(invariant, VIOLATION, m.group, [m.key], [tp], ts, ts, [self.where(src, line)],
                      f"{m.key} {what} {tp_label(tp)}{after} without owning it",
                      aggregate=(invariant, m.key, tp))

    def _committed(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        m, ctx = self._member(src, ev)
        self._context(m, ctx, ts, src, line, ev)
        offsets = ev.get("offsets", ())
        if not isinstance(offsets, list):
            raise BadField("offsets is not a list")
        if ev.get("success", True) is False:
            self._commit_failed(m, ev)
            return
        self.saw["commits"] += 1
        gs = m.gs
        gen = m.generation
        if gen is not None and gs.max_gen is not None and gs.max_gen > gen >= 0:
            self._stale_commit(m, gs, gen, ev, ts, src, line)
        for item in offsets:
            tp = (item["topic"], item["partition"])
            offset = item.get("offset")
            if item.get("error"):
                continue
            if tp in m.owned:
                self.opportunities["commit-owned-only"] += 1
                self.opportunities["committed-not-ahead"] += 1
                self._commit_owned(m, tp, offset, ts, src, line)
            else:
                self._commit_unowned(m, tp, offset, ts, src, line)
            if isinstance(offset, int) and not isinstance(offset, bool) and offset >= 0:
                gs.committed[tp] = offset

    def _commit_owned(self, m: Member, tp: TP, offset: Any, ts: int, src: int, line: int) -> None:
        """One ``offsets_committed`` entry of a partition ``m`` owns (committed-not-ahead; a zombie's commit)."""
        pos = m.position_of(tp)
        if offset != pos:  # committed-not-ahead: the common commit is the position itself
            self._commit_position(m, tp, offset, pos, ts, src, line)
        if m.contested and tp in m.contested:
            self._zombie_activity(m, tp, ts, src, line, "committed")

    def _commit_unowned(self, m: Member, tp: TP, offset: Any, ts: int, src: int, line: int) -> None:
        if not m.known:
            self.unverified += 1
            return
        pos = m.position_of(tp)
        if pos is not None and type(offset) is int and offset <= pos:
            return  # a late commit callback for what it consumed while it owned the partition
        self._unowned(m, tp, ts, src, line, "committed")

    def _stale_commit(self, m: Member, gs: GroupState, gen: int, ev: dict[str, Any], ts: int, src: int,
                      line: int) -> None:
        """A successful commit with a generation older than one the group had reached before it."""
        assert gs.max_gen is not None
        tolerance = self.config.skew_ms if src != gs.max_gen_src else 0
        if ts <= gs.max_gen_ts + tolerance:
            return
        offsets = ev.get("offsets") or []
        self.opportunities["commit-owned-only"] += 1
        self._finding("commit-owned-only", VIOLATION, m.group, [m.key],
                      [(o["topic"], o["partition"]) for o in offsets], ts, ts,
                      [self.where(src, line), gs.max_gen_where],
                      f"{m.key}'s commit with generation {gen} succeeded after the group had reached "
                      f"generation {gs.max_gen}; the coordinator answers ILLEGAL_GENERATION "
                      f"(ClassicGroup.validateOffsetCommit)",
                      aggregate=("stale-commit", m.key, ("", gen)))

    # ================================================================ JoinGroup / SyncGroup answers

    def _joined(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        m, ctx = self._member(src, ev)
        self._context(m, ctx, ts, src, line, ev)
        gen = ctx.generation
        gs = self._group(m.group)
        gs.analytics.client_rejoin(ts, m.key, _text(ev, "reason") or None, gen)
        if m.protocol == "eager" and gen is not None and gen >= 0 and m.owned \
                and (m.assigned_gen is None or gen > m.assigned_gen) and m.eager_flagged != gen:
            if not self.jsonl[src] and m.key in self.callback_members:
                return
            m.eager_flagged = gen
            self.opportunities["eager-revoke-all"] += 1
            self._finding("eager-revoke-all", VIOLATION, m.group, [m.key], m.owned, ts, ts,
                          [self.where(src, line)],
                          f"eager member {m.key} joined generation {gen} while it still owned "
                          f"{', '.join(map(tp_label, sorted(m.owned)))}; eager members revoke everything "
                          f"before they rejoin (ConsumerCoordinator.onJoinPrepare)")

    def _synced(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        m, ctx = self._member(src, ev)
        self._context(m, ctx, ts, src, line, ev)
        gs = self._group(m.group)
        gs.sees_syncs = True
        gen = ctx.generation
        member_id = ctx.member_id
        if gs.awaiting_sync is not None and gen == gs.awaiting_sync[0] and "error" not in ev:
            waiting = gs.awaiting_sync[1]
            if member_id in waiting:
                waiting.discard(member_id)
            elif waiting and all(k.startswith("#") for k in waiting):
                waiting.pop()  # a server.log generation: only the number of answers is known
        error = ev.get("error")
        if error == "REBALANCE_IN_PROGRESS":
            # The group moved on before this member's SyncGroup arrived (AbstractCoordinator's
            # SyncGroupResponseHandler rejoins without resetting the generation): it revokes late.
            gs.sync_races.add(gen if gen is not None else -1 - len(gs.sync_races))
        elif error in ("ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID") and gen is not None and gen >= 0 and m.owned:
            m.rejected = (gen, set(m.owned), f"{error} at {self.where(src, line)}")

    # ================================================================ coordinator events

    # ================================================================ the end

    def finish(self) -> None:
        """Judge what is still open at the end of the trace set."""
        for m in self.members.values():
            if m.owned and not m.ended:
                gs = self._group(m.group)
                for tp in sorted(m.owned):
                    for ov in self.pending.pop((m.key, tp), ()):
                        self._judge(ov, max(m.last_ts, ov.start), m.last_src, f"{self._label(m)}:end",
                                    "eof", m.generation)
                gs.analytics.member_gone(m.key)
        self._finish_delivery()
        for gs in self.groups.values():
            if gs.streak > self._bound(gs)[0]:
                self._confirm_tentative(gs)
            gs.analytics.finish(self.last_ts)

    def state_size(self) -> int:
        """How many entries the checker holds: what must grow with members and partitions, not events."""
        size = len(self.members) + len(self.removed) + len(self.open_findings)
        size += sum(len(kept) for kept in self.findings.values())
        size += sum(len(ovs) for ovs in self.pending.values())
        size += len(self.dup_by_partition) + len(self.handoff_examples)
        for m in self.members.values():
            size += len(m.owned) + len(m.fresh) + len(m.contested) + len(m.position) + len(m.fast) + len(m.gen_by_src)
            size += len(m.handoff_src) + len(m.dup_pending) + len(m.failed_commits)
            size += len(m.prepare_revoked) + sum(len(v) for v in m.complete_revoked.values())
        for gs in self.groups.values():
            size += sum(len(h) for h in gs.holders.values()) + len(gs.last_owner) + len(gs.owner_epoch)
            size += len(gs.last_revoke) + len(gs.committed) + len(gs.released) + len(gs.kip848) + len(gs.tentative)
            size += gs.analytics.state_size()
        return size

    def _label(self, m: Member) -> str:
        return self.labels[m.last_src] if 0 <= m.last_src < len(self.labels) else m.key

    # ================================================================ results

    def all_findings(self) -> list[Finding]:
        out = [f for kept in self.findings.values() for f in kept]
        out.sort(key=lambda f: (f.severity != VIOLATION, f.t0, f.invariant, f.members))
        return out

    def unchecked(self) -> list[dict[str, Any]]:
        """Which catalogue invariants could not be checked (or only in part), and why."""
        out: list[dict[str, Any]] = []
        members = list(self.members.values())
        protocols = Counter(m.protocol for m in members)

        def note(invariant: str, reason: str, partial: bool = False) -> None:
            out.append({"invariant": invariant, "reason": reason, "partial": partial})

        out.extend(ownership_notes(self.saw["ownership"] + self.opportunities["single-owner"]))
        if self.undecided_overlaps:
            note("single-owner", undecided_note(self.undecided_overlaps, self.undecided_example), partial=True)
        out.extend(subscription_notes(self.saw["subscription"]))
        for invariant, reason in FROM_ASSIGNMENTS.items():
            note(invariant, reason)
        out.extend(protocol_notes(self.saw["generation"], protocols.get("cooperative", 0), protocols.get("eager", 0),
                                  protocols.get(None, 0)))
        out.extend(coordinator_notes(self.saw["coordinator"]))
        out.extend(converges_notes(self.saw["coordinator"] > 0 and any(gs.kip848_rebalances for gs in self.groups.values()),
                                   self.converges_unjudged))
        # Stuck or thrashing groups (issue 17): not judged from a trace (NOT_IN_TRACES says why)
        for invariant, reason in NOT_IN_TRACES.items():
            note(invariant, reason)
        out.extend(consumption_notes(self.saw["ownership"], self.saw["commits"], self.unverified))
        out.extend(self.delivery_unchecked())
        return out

    def checked(self) -> list[str]:
        skipped = {u["invariant"] for u in self.unchecked() if not u["partial"]}
        return [inv for inv in CATALOGUE if inv not in skipped]
