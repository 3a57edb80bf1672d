"""Apache Kafka broker ``server.log``: the group coordinator's lines, as coordinator events.

Two coordinators wrote these lines. The old one is Scala (core/src/main/scala/kafka/coordinator/
group/GroupCoordinator.scala, Kafka before 4.0, logging as ``[GroupCoordinator <broker>]: ...``
from ``kafka.coordinator.group.GroupCoordinator``); the new one is Java
(group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupMetadataManager.java,
the only one from 4.0, logging as ``[GroupCoordinator id=<broker> topic=__consumer_offsets
partition=<n>] ...`` from ``org.apache.kafka.coordinator.group.GroupMetadataManager``). The
message texts below are those of Kafka 4.1.1 and of the Scala coordinator on trunk before its
removal; each pattern names the method that logs it. The line layout is log4j's
``[%d] %p %m (%c)%n`` (config/log4j2.yaml); the timestamp is read by :mod:`.logtime` and the
message is searched anywhere after it, so other layouts work too.

Classic groups (both coordinators):

====================================================  ==============================================
message                                               event
====================================================  ==============================================
Preparing to rebalance group G in state S with old     ``coordinator_rebalance`` (generation = old,
generation N ... (reason: R)  (prepareRebalance)       reason R, state PreparingRebalance); members
                                                       named in an "on pending sync request
                                                       expiration" reason are removed first
Stabilized group G generation N ... with M members     ``coordinator_state`` CompletingRebalance: the
(onCompleteJoin / completeClassicGroupJoin)            join phase is over
Group G with generation N is now empty                 ``coordinator_state`` Empty
Assignment received from leader L for group G for      ``coordinator_stable``: the leader's SyncGroup is
generation N. The group has M members, S of which     being stored (classicGroupSyncToLeader)
are static.
Member X in group G has failed, removing it from       ``coordinator_member_removed`` session-timeout
the group  (onExpireHeartbeat / onClassicGroup...)
Member ... has left group ... through explicit         ``coordinator_member_removed`` left (Scala prints
`LeaveGroup` ...; client reason: R                     the whole MemberMetadata; Java the member id)
Pending member ... has left group ... / has been       ``coordinator_member_removed`` left /
removed after session timeout expiration               pending-expired
Group G removed dynamic members who haven't joined:    ``coordinator_member_removed`` rebalance-timeout,
[...]  (onCompleteJoin)                                one per member
Static member with groupInstanceId=I and unknown       ``coordinator_member_removed`` fenced (the old
member id joins group G in S state. Replacing          member id), with the state, for static-rejoin
previously mapped member OLD ...
Static member which joins during Stable stage and      ``coordinator_state`` detail
doesn't affect ... will not trigger (a) rebalance      static-rejoin-without-rebalance (the line names
                                                       no group: the last replacement's group)
... member with unknown member id joins group G ...    ``coordinator_state`` detail member-joined
Created a new member id X ... / Pending dynamic
member with id X joins group G
====================================================  ==============================================

The coordinator moving (Java coordinator, 4.x; GroupMetadataManager ``onLoaded`` / ``onUnloaded``):
"Loaded classic group G with N members." / "Loaded consumer group G with N members." (``coordinator_state``
detail loaded) and "[GroupId=G] Unloading group metadata for generation N." / "[GroupId=G] Unloaded group
metadata for group epoch E." (detail unloaded). A broker restart, or the group's ``__consumer_offsets``
partition changing leader, prints them: the members must find the new coordinator, and ``converges``
counts from there.

Consumer groups (KIP-848, Java coordinator only): "Member M joins the consumer group"
(member-joined), "Static member with instance id I re-joins ... Created a new member NEW to replace
the existing member OLD" (OLD fenced), "Bumped group epoch to E" (``coordinator_rebalance``,
generation E-1), "Computed a new target assignment for epoch E with 'A' assignor"
(``coordinator_state`` target-assignment), "Member M new assignment state: epoch=E,
previousEpoch=P, state=S, assignedPartitions=[...]" -- DEBUG in 4.1 for consumer groups, with
"and revokedPartitions=[...]" -- (``coordinator_state`` member-assignment; partitions are
``<topic id>-<partition>`` as Utils.assignmentToString prints them), "Member M fenced from the group
because R" and "Member M left the consumer group" (``coordinator_member_removed``).

Offsets (Java coordinator, OffsetMetadataManager at DEBUG): "[GroupId G] Committing offsets O for partition
<topic id>-T-P from member M with leader epoch E." (``commitOffset``, logged once the request passed
``validateOffsetCommit``) is ``coordinator_offset_commit``: what the broker was asked to store, which a killed
member's trace may not show (its process died before it wrote the commit's line).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from traces.readers.logtime import java_tp_list, keyword_lines, looks_like_log
from traces.schema import UNPARSED_LOG_LINE, InputStats, Located, Source

FORMAT = "broker-log"

_G = r"(?P<group>\S+)"
_ID = r"(?P<member>\S+?)"
_OFFSETS = r"(?: \(__consumer_offsets-\d+\))?"

Handler = Callable[[re.Match[str], dict[str, Any]], list[dict[str, Any]]]


def _ev(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, **{k: v for k, v in fields.items() if v is not None}}


def _members_list(text: str) -> list[str]:
    """Scala ``Set(a, b)`` / Java ``[a, b]`` / ``{a, b}`` -> ``[a, b]``."""
    body = text.strip()
    for prefix in ("Set(", "HashSet("):
        if body.startswith(prefix) and body.endswith(")"):
            body = body[len(prefix):-1]
    if body[:1] in "[{" and body[-1:] in "]}":
        body = body[1:-1]
    return [item.strip() for item in body.split(",") if item.strip()]


def _rebalance(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    group, reason = m["group"], (m["reason"] or "").strip()
    out = []
    sync = re.match(r"Removing (.*) on pending sync request expiration", reason)
    if sync:
        out += [_ev("coordinator_member_removed", group=group, member_id=member, reason="sync-timeout")
                for member in _members_list(sync.group(1))]
    out.append(_ev("coordinator_rebalance", group=group, generation=int(m["gen"]), reason=reason or None,
                   state="PreparingRebalance", protocol="classic"))
    return out


def _stabilized(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    return [_ev("coordinator_state", group=m["group"], generation=int(m["gen"]), state="CompletingRebalance",
                member_count=int(m["count"]))]


def _empty(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    return [_ev("coordinator_state", group=m["group"], generation=int(m["gen"]), state="Empty")]


def _stable(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    return [_ev("coordinator_stable", group=m["group"], generation=int(m["gen"]), leader=m["leader"],
                member_count=int(m["count"]), static_count=int(m["static"]), state="Stable")]


def _failed(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    return [_ev("coordinator_member_removed", group=m["group"], member_id=m["member"], reason="session-timeout")]


def _left(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    member = m["member"]
    instance = m.groupdict().get("instance")
    scala = re.match(r"MemberMetadata\(memberId=([^,]+), groupInstanceId=(Some\(([^)]*)\)|None)", member)
    if scala:
        member, instance = scala.group(1), scala.group(3)
    return [_ev("coordinator_member_removed", group=m["group"], member_id=member, instance_id=instance,
                reason="left", client_reason=(m.groupdict().get("reason") or "").strip() or None)]


def _pending_expired(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    return [_ev("coordinator_member_removed", group=m["group"], member_id=m["member"], reason="pending-expired")]


def _not_rejoined(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    return [_ev("coordinator_member_removed", group=m["group"], member_id=member, reason="rebalance-timeout")
            for member in _members_list(m["members"])]


def _not_synced(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    return [_ev("coordinator_member_removed", group=m["group"], member_id=member, reason="sync-timeout")
            for member in _members_list(m["members"])]


def _static_replaced(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    state["last_static_group"] = m["group"]
    return [_ev("coordinator_member_removed", group=m["group"], member_id=m["old"], instance_id=m["instance"],
                reason="fenced", state=m["state"], replaced_by=m.groupdict().get("new"))]


def _static_no_rebalance(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    group = state.get("last_static_group")
    if group is None:
        return []
    return [_ev("coordinator_state", group=group, detail="static-rejoin-without-rebalance")]


def _joined(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    groups = m.groupdict()
    return [_ev("coordinator_state", group=m["group"], detail="member-joined", member_id=m["member"],
                instance_id=groups.get("instance"), protocol=groups.get("protocol"))]


def _nothing(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    """A line understood that changes nothing the checker follows (a pending member, KIP-394)."""
    return []


def _epoch(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    epoch = int(m["epoch"])
    return [_ev("coordinator_rebalance", group=m["group"], generation=epoch - 1, epoch=epoch,
                reason=f"group epoch bumped to {epoch}", protocol="consumer")]


def _target(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    return [_ev("coordinator_state", group=m["group"], detail="target-assignment", generation=int(m["epoch"]),
                assignor=m["assignor"], protocol="consumer")]


def _member_assignment(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    assigned = [{"topic": t, "partition": p} for t, p in java_tp_list(m["assigned"])]
    revoked = [{"topic": t, "partition": p} for t, p in java_tp_list(m["revoked"] or "")]
    return [_ev("coordinator_state", group=m["group"], detail="member-assignment", member_id=m["member"],
                generation=int(m["epoch"]), previous_epoch=int(m["previous"]), member_state=m["mstate"],
                partitions=assigned, pending_revocation=revoked, protocol="consumer")]


def _fenced(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    why = m["why"]
    reason = ("session-timeout" if "session expired" in why
              else "rebalance-timeout" if "failed to transition" in why or "rebalance timeout" in why
              else "sync-timeout" if "failed to sync" in why
              else "fenced")
    return [_ev("coordinator_member_removed", group=m["group"], member_id=m["member"], reason=reason,
                detail=why, protocol="consumer")]


def _consumer_left(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    return [_ev("coordinator_member_removed", group=m["group"], member_id=m["member"], reason="left",
                instance_id=m.groupdict().get("instance"), protocol="consumer")]


def _static_temporary_leave(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    return [_ev("coordinator_state", group=m["group"], detail="static-temporary-leave", member_id=m["member"],
                instance_id=m["instance"], protocol="consumer")]


def _kip848_static_replaced(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    return [_ev("coordinator_member_removed", group=m["group"], member_id=m["old"], instance_id=m["instance"],
                reason="fenced", replaced_by=m["new"], protocol="consumer")]


def _loaded(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    return [_ev("coordinator_state", group=m["group"], detail="loaded", member_count=int(m["count"]),
                protocol="consumer" if m["kind"] == "consumer" else "classic")]


def _unloaded(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    groups = m.groupdict()
    generation = groups.get("gen")
    return [_ev("coordinator_state", group=m["group"], detail="unloaded",
                generation=int(generation) if generation is not None else None,
                epoch=int(groups["epoch"]) if groups.get("epoch") is not None else None)]


def _offset_commit(m: re.Match[str], state: dict[str, Any]) -> list[dict[str, Any]]:
    return [_ev("coordinator_offset_commit", group=m["group"], member_id=m["member"] or None,
                offsets=[{"topic": m["topic"], "partition": int(m["partition"]), "offset": int(m["offset"])}])]


# (keyword that must be in the line, pattern, handler); the first match wins.
PATTERNS: list[tuple[str, re.Pattern[str], Handler]] = [
    # the coordinator moved (GroupMetadataManager.onLoaded / onUnloaded, Kafka 4.x): a broker took over, or gave
    # up, the __consumer_offsets partition of the group (CoordinatorRuntime "Scheduling loading of metadata from
    # __consumer_offsets-N" names the partition, not the group, and is not read)
    ("Loaded classic group", re.compile(rf"Loaded (?P<kind>classic) group {_G} with (?P<count>\d+) members"), _loaded),
    ("Loaded consumer group", re.compile(rf"Loaded (?P<kind>consumer) group {_G} with (?P<count>\d+) members"),
     _loaded),
    ("group metadata for", re.compile(
        r"\[GroupId=(?P<group>[^\]]+)\] Unloading group metadata for generation (?P<gen>-?\d+)"), _unloaded),
    ("group metadata for", re.compile(
        r"\[GroupId=(?P<group>[^\]]+)\] Unloaded group metadata for group epoch (?P<epoch>-?\d+)"), _unloaded),
    # OffsetMetadataManager.commitOffset (4.x, DEBUG): an OffsetCommit the coordinator validated and is writing,
    # "for partition <topic id>-<topic>-<partition>" (a Uuid prints as 22 URL-safe base64 characters, all 'A'
    # when the request named topics only); the member id is empty for a commit outside the group protocol
    ("Committing offsets", re.compile(
        r"\[GroupId (?P<group>\S+)\] Committing offsets (?P<offset>-?\d+) for partition "
        r"[A-Za-z0-9_-]{22}-(?P<topic>\S+)-(?P<partition>\d+) from member (?P<member>\S*) with leader epoch"),
     _offset_commit),
    # prepareRebalance (GroupCoordinator.scala; GroupMetadataManager.java)
    ("Preparing to rebalance", re.compile(
        rf"Preparing to rebalance group {_G} in state (?P<state>\w+) with old generation (?P<gen>-?\d+)"
        rf"{_OFFSETS}(?: \(reason: (?P<reason>.*)\))?\.?$"), _rebalance),
    # onCompleteJoin (Scala) / completeClassicGroupJoin (Java)
    ("Stabilized group", re.compile(
        rf"Stabilized group {_G} generation (?P<gen>-?\d+){_OFFSETS} with (?P<count>\d+) members"), _stabilized),
    ("is now empty", re.compile(rf"Group {_G} with generation (?P<gen>-?\d+) is now empty"), _empty),
    # doSyncGroup (Scala) / classicGroupSyncToLeader (Java)
    ("Assignment received from leader", re.compile(
        rf"Assignment received from leader (?P<leader>\S+) for group {_G} for generation (?P<gen>-?\d+)\. "
        r"The group has (?P<count>\d+) members, (?P<static>\d+) of which are static"), _stable),
    # onExpireHeartbeat (Scala) / onClassicGroupMemberSessionTimeout (Java)
    ("has failed, removing it", re.compile(
        rf"Member {_ID} in group {_G} has failed, removing it from the group"), _failed),
    ("has been removed after session timeout", re.compile(
        rf"Pending member {_ID} in group {_G} has been removed after session timeout expiration"),
     _pending_expired),
    # handleLeaveGroup (Scala)
    ("through explicit `LeaveGroup`", re.compile(
        rf"Pending member with memberId={_ID} has left group {_G} through explicit `LeaveGroup`"), _left),
    ("through explicit `LeaveGroup`", re.compile(
        rf"Member (?P<member>MemberMetadata\(.*\)) has left group {_G} through explicit `LeaveGroup`"
        r"(?: request)?; client reason: (?P<reason>.*)$"), _left),
    # classicGroupLeave / removeMemberFromClassicGroup (Java)
    ("through explicit `LeaveGroup`", re.compile(
        rf"\[Group (?P<group>\S+)\] (?:Pending )?[Mm]ember {_ID} has left group through explicit `LeaveGroup` "
        r"request; client reason: (?P<reason>.*)$"), _left),
    ("through explicit `LeaveGroup`", re.compile(
        rf"\[GroupId (?P<group>\S+)\] Dynamic member {_ID} has left group through explicit `LeaveGroup` "
        r"request; client reason: (?P<reason>.*)$"), _left),
    ("through explicit `LeaveGroup`", re.compile(
        rf"\[GroupId (?P<group>\S+)\] Static member {_ID} with instance id (?P<instance>\S+) has left group "
        r"through explicit `LeaveGroup` request; client reason: (?P<reason>.*)$"), _left),
    # onCompleteJoin / completeClassicGroupJoin
    ("removed dynamic members who haven't joined", re.compile(
        rf"Group {_G} removed dynamic members who haven't joined: (?P<members>.*?)\.?$"), _not_rejoined),
    ("haven't sent their sync request", re.compile(
        rf"Group {_G} removed members who haven't sent their sync requests?: (?P<members>.*?)\.?$"), _not_synced),
    # doStaticNewMemberJoinGroup (Scala) / classicGroupJoinNewStaticMember (Java)
    ("Replacing previously mapped member", re.compile(
        rf"Static member with groupInstanceId=(?P<instance>\S+) and unknown member id joins group {_G} in "
        r"(?P<state>\w+) state\. Replacing previously mapped member (?P<old>\S+) with this groupInstanceId"),
     _static_replaced),
    # updateStaticMemberAndRebalance (Scala) / updateStaticMemberThenRebalanceOrCompleteJoin (Java)
    ("will not trigger", re.compile(
        r"Static member which joins during Stable stage and doesn't affect (?:the )?select(?:ed ?)?[Pp]rotocol "
        r"will not trigger (?:a )?rebalance"), _static_no_rebalance),
    # doDynamicNewMemberJoinGroup / doStaticNewMemberJoinGroup / classicGroupJoinNew*Member
    ("Created a new member id", re.compile(
        rf"Static member with groupInstanceId=(?P<instance>\S+) and unknown member id joins group {_G} in "
        r"\w+ state\. Created a new member id (?P<member>\S+?) for this member"), _joined),
    ("Created a new member id", re.compile(
        rf"Dynamic [Mm]ember with unknown member id joins group {_G} in (?:state )?\w+(?: state)?\. Created a new "
        r"member id (?P<member>\S+?) (?:for this member and add|and added the member)"), _joined),
    ("Created a new member id", re.compile(
        rf"Dynamic [Mm]ember with unknown member id joins group {_G} in (?:state )?\w+(?: state)?\. Created a new "
        r"member id (?P<member>\S+?) and request(?:ing)? the member to rejoin"), _nothing),
    ("Pending dynamic member with id", re.compile(
        rf"Pending dynamic member with id {_ID} joins group {_G} in \w+ state\. Adding to the group now"),
     _joined),
    # KIP-848 consumer groups (GroupMetadataManager.java, 4.x)
    ("joins the consumer group", re.compile(
        rf"\[GroupId (?P<group>\S+)\] Static member {_ID} with instance id (?P<instance>\S+) joins the consumer "
        r"group using the (?P<protocol>\w+) protocol"), _joined),
    ("joins the consumer group", re.compile(
        rf"\[GroupId (?P<group>\S+)\] Member {_ID} joins the consumer group using the (?P<protocol>\w+) protocol"),
     _joined),
    ("re-joins the consumer group", re.compile(
        r"\[GroupId (?P<group>\S+)\] Static member with instance id (?P<instance>\S+) re-joins the consumer "
        r"group using the \w+ protocol\. Created a new member (?P<new>\S+) to replace the existing member "
        r"(?P<old>[^\s.]+)"), _kip848_static_replaced),
    ("Bumped group epoch", re.compile(
        r"\[GroupId (?P<group>\S+)\] Bumped group epoch to (?P<epoch>\d+)"), _epoch),
    ("Computed a new target assignment", re.compile(
        r"\[GroupId (?P<group>\S+)\] Computed a new target assignment for epoch (?P<epoch>\d+) with "
        r"'(?P<assignor>[^']*)' assignor"), _target),
    ("new assignment state", re.compile(
        rf"\[GroupId (?P<group>\S+)\] Member {_ID} new assignment state: epoch=(?P<epoch>-?\d+), "
        r"previousEpoch=(?P<previous>-?\d+), state=(?P<mstate>\w+), assignedPartitions=(?P<assigned>\[[^\]]*\])"
        r"(?: and revokedPartitions=(?P<revoked>\[[^\]]*\]))?"), _member_assignment),
    ("fenced from the group because", re.compile(
        rf"\[GroupId (?P<group>\S+)\] Member {_ID} fenced from the group because (?P<why>.*?)\.?$"), _fenced),
    ("temporarily left the consumer group", re.compile(
        rf"\[GroupId (?P<group>\S+)\] Static member {_ID} with instance id (?P<instance>\S+) temporarily left "
        r"the consumer group"), _static_temporary_leave),
    ("left the consumer group", re.compile(
        rf"\[GroupId (?P<group>\S+)\] Static member {_ID} with instance id (?P<instance>\S+) left the consumer "
        r"group"), _consumer_left),
    ("left the consumer group", re.compile(
        rf"\[GroupId (?P<group>\S+)\] Member {_ID} left the consumer group"), _consumer_left),
]
_KEYWORDS = tuple(dict.fromkeys(k for k, _p, _h in PATTERNS))
_LOGGER_SUFFIX = re.compile(r"\s\((?:[a-z_][\w$]*\.)+[A-Za-z_][\w$]*\)\s*$")


def message_of(line: str, start: int) -> str:
    """The message of a log line: after the timestamp and level, without the trailing ``(logger)``."""
    text = _LOGGER_SUFFIX.sub("", line[start:].rstrip("\r\n"))
    return text


def parse_message(text: str, state: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The events of one coordinator message; [] when it is not one; None when it should have parsed."""
    for keyword, pattern, handler in PATTERNS:
        if keyword in text:
            m = pattern.search(text)
            if m is not None:
                return handler(m, state)
    return None if any(k in text for k in _KEYWORDS) else []


def read(source: Source, stats: InputStats) -> Iterator[Located]:
    src = source.index
    seq = 0
    produced = 0
    state: dict[str, Any] = {}
    for n, line, last_ts, start in keyword_lines(source, stats, _KEYWORDS):
        text = message_of(line, start)
        try:
            events = parse_message(text, state)
        except ValueError as exc:
            stats.skip(source, n, UNPARSED_LOG_LINE, f"{exc}")
            continue
        if events is None:
            stats.skip(source, n, UNPARSED_LOG_LINE, text[:120])
            continue
        for event in events:
            event["timestamp"] = last_ts
            seq += 1
            produced += 1
            yield last_ts, src, seq, n, event
    stats.events_per_source[src] += produced


def sniff(lines: list[str]) -> tuple[str, int, frozenset[str]] | None:
    """A log4j log with coordinator lines; a text that only quotes some (a README) is none."""
    if not looks_like_log(lines):
        return None
    score = 0
    for line in lines:
        if "GroupCoordinator" in line or "coordinator.group" in line or "KafkaServer" in line \
                or "kafka.server" in line or "KafkaRaftServer" in line or "BrokerServer" in line:
            score += 1
        if any(k in line for k in _KEYWORDS) and "Consumer clientId=" not in line:
            score += 5
    return (FORMAT, min(90, 10 + score), frozenset()) if score else None
