"""The coordinator-side rules of the trace checker: ``converges``, ``static-rejoin``, and
``single-owner`` on what the coordinator itself stored.

Coordinator events come from a broker's ``server.log`` (:mod:`traces.readers.broker_log`), from
librdkafka's mock cluster, or from the model's simulator. They give the checker the coordinator's
view, which the clients' events lack: when a member was removed (so that an overlap with it was a
zombie's), how many rebalances a membership change took, whether a static member's return caused
one. :class:`CoordinatorChecks` is mixed into :class:`traces.checker.Checker`; it reads and writes
the checker's per-group state (:class:`traces.state.GroupState`).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from model import events as ev_names
from traces.readers.jsonl import commit_field_error
from traces.schema import TP, BadField, int_field, partitions_field, tp_label
from traces.state import (
    COOPERATIVE_ASSIGNORS,
    EAGER_ASSIGNORS,
    VIOLATION,
    CheckerParts,
    Finding,
    GroupState,
)

# Rebalance reasons (GroupCoordinator.scala / GroupMetadataManager.java prepareRebalance callers)
# that mean the membership changed, or something outside the group did; anything else (a leader
# or follower re-joining, a cooperative follow-up) counts towards the converges bound.
_MEMBERSHIP_REASON = re.compile(
    r"adding new member|removing member|on leavegroup|explicit `leavegroup`|left the group|"
    r"pending sync request expiration|heartbeat expiration|session timeout|freshly-loaded group|"
    r"new member|member (?:left|removed|expired|joined|fenced)|static member .* joined with change of protocol|"
    r"selectedprotocol will change|metadata has changed|subscription changed|subscription has changed|"
    r"partitions? (?:added|changed)|topic metadata|downgrade group|"
    r"member join|member leave|member timeout",  # librdkafka's mock cluster (rdkafka_mock_cgrp.c)
    re.IGNORECASE,
)
_PROTOCOL_CHANGE_REASON = re.compile(r"selectedprotocol will change|change of protocol", re.IGNORECASE)

# The words of converges' "unchecked" notes, here once: the checker (Checker.unchecked) and the Spark job
# (spark_analysis.converges.unchecked) both report through converges_notes.
CONVERGES_KIP848 = ("KIP-848 (consumer protocol) groups were not checked: the catalogue's bound is for the classic "
                    "protocol")
CONVERGES_UNJUDGED = ("{n} run(s) of rebalances longer than the bound were not judged: each generation whose "
                      "SyncGroup answer a member got late or never (a stalled member, a SyncGroup that lost the race "
                      "with a JoinGroup) allows one more, and a broker's server.log names neither a generation's "
                      "members nor their answers (add the members' Java client logs, whose 'Successfully synced "
                      "group' lines say who got one)")


# The coordinator events (the checker's handlers of each go through CoordinatorChecks._coord_group): with none of
# them in a trace, the invariants judged from the coordinator's view alone are not checked at all.
COORDINATOR_EVENTS = (ev_names.COORDINATOR_REBALANCE, ev_names.COORDINATOR_STABLE, ev_names.COORDINATOR_MEMBER_REMOVED,
                      ev_names.COORDINATOR_STATE, ev_names.COORDINATOR_OFFSET_COMMIT)


# ---------------------------------------------------------------- what a coordinator event's fields may be
#
# Every field a coordinator event's handler reads is checked before the handler changes anything (refuse_bad_coordinator):
# a line refused is a bad-field and nothing else (docs/check.md, "Input that cannot be used"), never a group counted as
# coordinator-seen, its generation or state moved, or a stored assignment counted as single-owner checked, by the part
# of it before the wrong field. One function per shape of fields; each event type names the shapes it carries.


def _text_fields(ev: dict[str, Any], *keys: str) -> None:
    """Optional names and words (group, state, reason, ...): absent, null or a string."""
    for key in keys:
        value = ev.get(key)
        if value is not None and not isinstance(value, str):
            raise BadField(f"{key} is not a string: {value!r:.40}")


def _group_context(ev: dict[str, Any]) -> None:
    """What every coordinator event may say of its group (read by CoordinatorChecks._coord_group)."""
    _text_fields(ev, "group", "state", "assignor")
    int_field(ev, "generation")


def _stable_membership(ev: dict[str, Any]) -> None:
    """A stable generation's members (names), or only their number, and the assignment the coordinator stored: per
    member id, a list of topic-partitions (what _coord_stable and _check_stored_assignment read)."""
    members = ev.get("members")
    if members is not None and (not isinstance(members, list) or not all(isinstance(m, str) for m in members)):
        raise BadField("members is not a list of member ids")
    int_field(ev, "member_count")
    assignment = ev.get("assignment")
    if assignment is None:
        return
    if not isinstance(assignment, dict):
        raise BadField(f"assignment is not an object of member ids: {assignment!r:.40}")
    for member_id in assignment:
        try:
            partitions_field(assignment, member_id)
        except BadField as exc:
            raise BadField(f"assignment of member {exc}") from None


def _removed_member(ev: dict[str, Any]) -> None:
    """The member the coordinator removed (its id: _coord_removed records the removal under it) and why."""
    member_id = ev.get("member_id")
    if not isinstance(member_id, str) or not member_id:
        raise BadField("coordinator_member_removed without a member_id")
    _text_fields(ev, "reason", "instance_id")


def _member_assignment(ev: dict[str, Any]) -> None:
    """A KIP-848 member's new assignment (``detail`` member-assignment, read by _kip848_assignment): its member id,
    the partitions it is given and the ones it has still to revoke."""
    if ev.get("detail") != "member-assignment":
        return
    if not isinstance(ev.get("member_id"), str):
        raise BadField("member assignment without member_id")
    partitions_field(ev)
    partitions_field(ev, "pending_revocation")


def _broker_offsets(ev: dict[str, Any]) -> None:
    """The offsets the coordinator took: an ``offsets_committed``'s list (the jsonl reader's check of those), which
    must be there (DeliveryChecks._coord_offset_commit reads each entry's topic, partition and offset)."""
    if not isinstance(ev.get("offsets"), list):
        raise BadField("offsets is not a list")
    error = commit_field_error(ev)
    if error is not None:
        raise BadField(error)


def _rebalance_words(ev: dict[str, Any]) -> None:
    """Why the group rebalanced and under which protocol (read by _coord_rebalance)."""
    _text_fields(ev, "reason", "protocol")


def _state_detail(ev: dict[str, Any]) -> None:
    """What changed, when not the state alone (read by _coord_state)."""
    _text_fields(ev, "detail")


_SHAPES = {
    ev_names.COORDINATOR_REBALANCE: (_group_context, _rebalance_words),
    ev_names.COORDINATOR_STABLE: (_group_context, _stable_membership),
    ev_names.COORDINATOR_MEMBER_REMOVED: (_group_context, _removed_member),
    ev_names.COORDINATOR_STATE: (_group_context, _state_detail, _member_assignment),
    ev_names.COORDINATOR_OFFSET_COMMIT: (_group_context, _broker_offsets),
}


def refuse_bad_coordinator(ev: dict[str, Any]) -> None:
    """:class:`BadField` for a coordinator event with a field of the wrong shape (any its handler reads), before the
    checker changes anything (``CoordinatorChecks._coord_group``, every handler's first step); ``groupspec corpus
    --from`` refuses the same lines by the same function (spark_analysis.corpus), so the job never reads a row of
    one."""
    for shape in _SHAPES[ev["name"]]:
        shape(ev)


COORDINATOR_ONLY = ("converges", "static-rejoin")
NO_COORDINATOR = "needs the coordinator's view: a broker server.log or coordinator_* events"


def coordinator_notes(seen: int) -> list[dict[str, Any]]:
    """The full ``unchecked`` notes of the invariants only the coordinator's view shows, when ``seen`` (how many
    coordinator events the trace holds, or how many groups have any) is 0. The checker (``Checker.unchecked``) and the
    Spark job (:func:`spark_analysis.membership.unchecked`) both report through it."""
    if seen:
        return []
    return [{"invariant": invariant, "reason": NO_COORDINATOR, "partial": False} for invariant in COORDINATOR_ONLY]


def converges_notes(kip848: bool, unjudged: int) -> list[dict[str, Any]]:
    """converges' partial notes: KIP-848 rebalances seen (not judged), streaks beyond the bound not judged."""
    out = []
    if kip848:
        out.append({"invariant": "converges", "reason": CONVERGES_KIP848, "partial": True})
    if unjudged:
        out.append({"invariant": "converges", "reason": CONVERGES_UNJUDGED.format(n=unjudged), "partial": True})
    return out


class CoordinatorChecks(CheckerParts):
    """The handlers of ``coordinator_*`` events (mixed into the checker)."""

    groups: dict[str, GroupState]
    removed: dict[str, tuple[int, str, str]]
    findings: dict[str, list[Finding]]
    finding_counts: Counter[str]
    converges_unjudged: int  # streaks beyond the bound the trace could not judge (see _confirm_tentative)

    def _coord_group(self, ev: dict[str, Any], ts: int, src: int, line: int) -> GroupState:
        """The event's group, once every field of the event is known good (each handler calls this first)."""
        refuse_bad_coordinator(ev)
        gs = self._group(ev.get("group") or self.config.default_group)
        gs.coordinator = True
        self.saw["coordinator"] += 1
        gen = int_field(ev, "generation")
        if gen is not None and gen >= 0 and (gs.max_gen is None or gen > gs.max_gen):
            gs.max_gen, gs.max_gen_ts, gs.max_gen_src = gen, ts, src
            gs.max_gen_where = self.where(src, line)
        state = ev.get("state")
        if isinstance(state, str):
            gs.coord_state = _normal_state(state)
        assignor = ev.get("assignor")
        if isinstance(assignor, str) and assignor:
            gs.assignor = assignor
        return gs

    def _coord_rebalance(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        gs = self._coord_group(ev, ts, src, line)
        reason = _text(ev, "reason")
        where = self.where(src, line)
        gs.analytics.coordinator_rebalance(ts, reason or None)
        if gs.static_watch is not None:
            instance, watch_ts, watch_where = gs.static_watch
            gs.static_watch = None
            protocol_change = _PROTOCOL_CHANGE_REASON.search(reason) is not None
            other_change = _MEMBERSHIP_REASON.search(reason) is not None and instance not in reason
            if protocol_change and gs.assignor is not None:
                # Justified only if the protocol really changes: the next stable generation tells.
                gs.protocol_watch = (instance, watch_ts, watch_where, gs.assignor, reason)
            elif not protocol_change and not other_change:
                self._finding("static-rejoin", VIOLATION, gs.name, [instance], [], watch_ts, ts,
                              [watch_where, where],
                              f"static member {instance} rejoined the Stable group and a rebalance followed"
                              f"{' (reason: ' + reason + ')' if reason else ''}; a static member restarting "
                              f"within the session timeout gets its assignment back with no rebalance "
                              f"(KIP-345, GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin)")
        if gs.awaiting_sync is not None:
            gen_waited, missing = gs.awaiting_sync
            gs.awaiting_sync = None
            if missing and gs.sees_syncs:
                # A member of that generation never got its SyncGroup answer before this rebalance (the
                # race with a follow-up JoinGroup, or a stalled member): it revokes one rebalance late.
                gs.sync_races.add(gen_waited)
        if gs.change_pending or _MEMBERSHIP_REASON.search(reason):
            gs.streak = 1
            gs.change_pending = False
            gs.flagged_streak = False
            gs.tentative.clear()
            gs.sync_races.clear()
        else:
            gs.streak += 1
        if ev.get("protocol") == "consumer":
            gs.kip848_rebalances += 1  # KIP-848 epochs: no rebalance bound in the catalogue
            return
        bound, protocol = self._bound(gs)
        self.opportunities["converges"] += 1
        if gs.streak > bound and not gs.flagged_streak:
            gs.flagged_streak = True
            races = f", counting {len(gs.sync_races)} SyncGroup(s) that lost a race" if gs.sync_races else ""
            finding = Finding("converges", VIOLATION, gs.name, [], [], ts, ts, [where],
                              f"group {gs.name} started rebalance {gs.streak} since its membership last changed; "
                              f"with the {protocol} protocol it must be stable within {bound}{races}"
                              f"{' (reason: ' + reason + ')' if reason else ''}", self.config.max_evidence)
            gs.tentative.append((finding, ts))

    def _bound(self, gs: GroupState) -> tuple[int, str]:
        protocol = None
        if gs.assignor in COOPERATIVE_ASSIGNORS:
            protocol = "cooperative"
        elif gs.assignor in EAGER_ASSIGNORS:
            protocol = "eager"
        else:
            protocols = {m.protocol for m in self.members.values() if m.group == gs.name and m.protocol}
            if protocols == {"eager"}:
                protocol = "eager"
            elif "cooperative" in protocols:
                protocol = "cooperative"
        # The catalogue's bound grows by one for each generation in which a SyncGroup was answered
        # REBALANCE_IN_PROGRESS: that member learns its assignment (and revokes) one rebalance late.
        races = len(gs.sync_races)
        if protocol == "eager":
            return 1 + races, "eager"
        if protocol == "cooperative":
            return 2 + races, "cooperative"
        return 2 + races, "unknown (the cooperative bound is used)"

    def _coord_stable(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        gs = self._coord_group(ev, ts, src, line)
        gen = int_field(ev, "generation")
        gs.analytics.coordinator_done(ts, "Stable", gen)
        gs.static_watch = None
        if gs.protocol_watch is not None:
            instance, watch_ts, watch_where, protocol, reason = gs.protocol_watch
            gs.protocol_watch = None
            after = _text(ev, "assignor")
            if after and after == protocol:
                self._finding("static-rejoin", VIOLATION, gs.name, [instance], [], watch_ts, ts,
                              [watch_where, self.where(src, line)],
                              f"static member {instance} rejoined the Stable group and a rebalance followed "
                              f"(reason: {reason}), but the selected protocol stayed {after}: a static member "
                              f"restarting within the session timeout gets its assignment back with no rebalance "
                              f"(KIP-345)")
        members = ev.get("members")
        count = int_field(ev, "member_count")
        member_set = frozenset(m for m in members if isinstance(m, str)) if isinstance(members, list) else None
        if member_set is not None:
            count = len(member_set)
        changed = (member_set is not None and gs.stable_members is not None and member_set != gs.stable_members) \
            or (count is not None and gs.stable_count is not None and count != gs.stable_count)
        if changed:
            gs.tentative.clear()
            gs.streak = min(gs.streak, 1)
            gs.flagged_streak = False
        else:
            self._confirm_tentative(gs)
        if member_set is not None:
            gs.stable_members = member_set
            if gen is not None:
                gs.awaiting_sync = (gen, set(member_set))
        elif count is not None and gen is not None and gs.sees_syncs:
            # server.log names the leader only ("The group has M members"): wait for M answers, whoever gives
            # them; a member whose log is not in the trace counts as answered late (one more rebalance allowed)
            gs.awaiting_sync = (gen, {f"#{i}" for i in range(count)})
        if count is not None:
            gs.stable_count = count
        assignment = ev.get("assignment")
        if isinstance(assignment, dict):
            self._check_stored_assignment(gs, assignment, gen, ts, self.where(src, line))

    def _confirm_tentative(self, gs: GroupState) -> None:
        if gs.tentative and gs.stable_members is None and not gs.sees_syncs:
            # The allowance (one more rebalance per generation whose SyncGroup answer a member got late or never:
            # a stalled member, a SyncGroup that lost the race with a JoinGroup) needs each generation's members
            # and their answers. A broker's server.log lists neither (only counts, and the leader's SyncGroup):
            # without the members' own logs (group_synced) a long streak is not a violation it can show.
            self.converges_unjudged += len(gs.tentative)
            gs.tentative.clear()
            return
        for finding, _ts in gs.tentative:
            self.finding_counts[finding.invariant] += 1
            kept = self.findings.setdefault(finding.invariant, [])
            if len(kept) < self.config.max_findings:
                kept.append(finding)
        gs.tentative.clear()

    def _check_stored_assignment(self, gs: GroupState, assignment: dict[str, Any], gen: int | None, ts: int,
                                 where: str) -> None:
        owner: dict[TP, str] = {}
        self.opportunities["single-owner"] += 1
        # Member ids in sorted order, not the event's: the order of a JSON object's keys says nothing (the broker's
        # server.log reader builds it from one line), yet it decides who is paired with whom when three or more member
        # ids share a partition (each with the last one seen: (a, b), then (b, c)). Sorted, the findings do not depend
        # on it, and they are the Spark job's, which reads the corpus's rows of an assignment in this order
        # (spark_analysis.layout._stored, spark_analysis.coordinator_assignments).
        for member_id, parts in sorted(assignment.items()):
            for tp in partitions_field({"p": parts}, "p"):
                other = owner.get(tp)
                if other is not None and other != member_id:
                    self._finding("single-owner", VIOLATION, gs.name, [other, member_id], [tp], ts, ts, [where],
                                  f"the coordinator stored generation {gen}'s assignment with {tp_label(tp)} "
                                  f"given to both {other} and {member_id}")
                owner[tp] = member_id

    def _coord_removed(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        gs = self._coord_group(ev, ts, src, line)
        member_id = ev["member_id"]
        reason = _text(ev, "reason") or "removed"
        where = self.where(src, line)
        self.removed[member_id] = (ts, reason, where)
        if reason != "left":
            gs.removals.append((ts, member_id, reason, where))
        gs.kip848.pop(member_id, None)
        instance = ev.get("instance_id")
        replaced = reason == "fenced" and isinstance(instance, str) and instance
        if replaced and (gs.coord_state == "Stable" or ev.get("state") == "Stable"):
            # A static member taking over its own entry (KIP-345) is not a membership change.
            self.opportunities["static-rejoin"] += 1
            gs.static_watch = (str(instance), ts, where)
        else:
            gs.change_pending = True
            gs.static_watch = None

    def _coord_state(self, ts: int, src: int, line: int, ev: dict[str, Any]) -> None:
        gs = self._coord_group(ev, ts, src, line)
        state = gs.coord_state
        detail = ev.get("detail")
        gen = int_field(ev, "generation")
        if detail == "member-joined":
            gs.change_pending = True
            gs.static_watch = None
        elif detail == "static-rejoin-without-rebalance":
            gs.static_watch = None
        elif detail == "member-assignment":
            self._kip848_assignment(gs, ev, ts, src, line)
        elif detail in ("loaded", "unloaded"):
            # The coordinator moved (model.coordinator_load): its members reconnect and may rejoin,
            # like after a membership change, so converges counts from here.
            gs.change_pending = True
        if state == "Empty" and detail is None:
            gs.analytics.coordinator_done(ts, "Empty", gen)
            gs.change_pending = True

    def _kip848_assignment(self, gs: GroupState, ev: dict[str, Any], ts: int, src: int, line: int) -> None:
        member_id = ev["member_id"]
        assigned = frozenset(partitions_field(ev))
        pending = frozenset(partitions_field(ev, "pending_revocation"))
        self.opportunities["single-owner"] += 1
        for other, (o_assigned, o_pending) in gs.kip848.items():
            if other == member_id:
                continue
            clash = assigned & (o_assigned | o_pending)
            if clash:
                self._finding("single-owner", VIOLATION, gs.name, [other, member_id], clash, ts, ts,
                              [self.where(src, line)],
                              f"the coordinator assigned {', '.join(map(tp_label, sorted(clash)))} to {member_id} "
                              f"while {other} still held them (KIP-848: a partition is assigned only once its "
                              f"previous owner has released it)")
        gs.kip848[member_id] = (assigned, pending)


def _text(ev: dict[str, Any], key: str) -> str:
    value = ev.get(key)
    return value if isinstance(value, str) else ""


def _normal_state(state: str) -> str:
    """Kafka prints ClassicGroupState names (PreparingRebalance); the model writes them too."""
    key = state.replace("_", "").replace("-", "").lower()
    return {"preparingrebalance": "PreparingRebalance", "completingrebalance": "CompletingRebalance",
            "stable": "Stable", "empty": "Empty", "dead": "Dead", "awaitingsync": "CompletingRebalance",
            "assigning": "Assigning", "reconciling": "Reconciling"}.get(key, state)
