"""Small trace sets for the rules the real samples and the generated corpus rarely break.

Each set is a few members' groupspec JSON Lines files, the shapes of the checker's own tests
(tests/traces/test_invariants.py, test_delivery.py): one that breaks a rule, one beside it that
holds. They join the sample corpus (one Spark run for all), so the agreement test holds the Spark
job to the checker on them too.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.traces.support import committed, consumed, ev, tp, tps, write_jsonl

SAMPLES = Path(__file__).resolve().parents[1] / "traces" / "samples"

COOP = {"protocol": "cooperative"}


def _start(ts: int = 0, **fields: Any) -> dict[str, Any]:
    return ev("startup_complete", ts, **fields)


def _stop(ts: int) -> dict[str, Any]:
    return ev("shutdown_complete", ts)


def _static(reason_after: str | None, stable_after: str | None = None) -> list[dict[str, Any]]:
    events = [ev("coordinator_stable", 100, group="g", generation=4, members=["s1-a", "m2"], state="Stable",
                 assignor="range"),
              ev("coordinator_member_removed", 200, group="g", member_id="s1-a", instance_id="s1", reason="fenced",
                 replaced_by="s1-b")]
    if reason_after is not None:
        events.append(ev("coordinator_rebalance", 201, group="g", generation=4, reason=reason_after))
    if stable_after is not None:
        events.append(ev("coordinator_stable", 300, group="g", generation=5, members=["s1-b", "m2"], state="Stable",
                         assignor=stable_after))
    return events


REJOIN = "Leader m-1 re-joining group during Stable; client reason: need to revoke partitions and re-join"
JOINED = "Adding new member m-9 with group instance id None; client reason: need to re-join"


def _rebalance(ts: int, reason: str = REJOIN, **fields: Any) -> dict[str, Any]:
    return ev("coordinator_rebalance", ts, group="g", reason=reason, **fields)


def _stable(ts: int, gen: int, members: list[str] | None = None, **fields: Any) -> dict[str, Any]:
    more = {"members": members} if members is not None else {}
    return ev("coordinator_stable", ts, group="g", generation=gen, state="Stable", **more, **fields)


def _synced(ts: int, member_id: str, gen: int, **fields: Any) -> dict[str, Any]:
    return ev("group_synced", ts, group="g", member_id=member_id, generation=gen, **fields)


def _member(protocol: str, *events: dict[str, Any], start: int = 0) -> list[dict[str, Any]]:
    return [_start(start, group="g", protocol=protocol), *events]


# converges (CoordinatorChecks._coord_rebalance / _coord_stable): rebalances since the last membership change against
# the protocol's bound; each set names what it exercises
CONVERGES: dict[str, dict[str, list[dict[str, Any]]]] = {
    # a rebalance for no membership change beyond the eager bound, confirmed by an unchanged stable generation
    "converges-streak": {"c": [_stable(50, 1, ["a-1", "b-1"], assignor="range"), _rebalance(100, JOINED),
                               _rebalance(200), _stable(300, 3, ["a-1", "b-1"])]},
    # the streak reset by a removal, a member joining, the group going Empty, a coordinator load, and a membership
    # reason: with none of them recognised each second rebalance would break the eager bound
    "converges-resets": {"c": [
        _stable(50, 1, ["a-1", "b-1"], assignor="range"), _rebalance(100, JOINED), _stable(150, 2, ["a-1", "b-1"]),
        ev("coordinator_member_removed", 200, group="g", member_id="b-1", reason="session timeout"),
        _rebalance(250), _stable(300, 3, ["a-1"]),
        ev("coordinator_state", 350, group="g", state="Empty"), _rebalance(400), _stable(450, 4, ["a-1"]),
        ev("coordinator_state", 500, group="g", detail="member-joined"), _rebalance(550), _stable(600, 5, ["a-1"]),
        ev("coordinator_state", 650, group="g", detail="loaded"), _rebalance(700), _stable(750, 6, ["a-1"]),
        _rebalance(800, "removing member b-1 on LeaveGroup"), _stable(850, 7, ["a-1"])]},
    # a changed stable member set drops the streak's finding and starts over: only the second run is a violation
    "converges-changed": {"c": [
        _stable(50, 1, ["a-1"], assignor="range"), _rebalance(100, JOINED), _stable(150, 2, ["a-1"]),
        _rebalance(200), _stable(250, 3, ["a-1", "b-1"]), _rebalance(300), _stable(350, 4, ["a-1", "b-1"])]},
    # the same with counts only (a server.log): a changed count drops it; the unchanged count's streak is not judged
    # (no member list, no SyncGroup answers: converges_unjudged)
    "converges-unjudged": {"c": [
        _stable(50, 1, member_count=1, assignor="range"), _rebalance(100, JOINED), _stable(150, 2, member_count=1),
        _rebalance(200), _stable(250, 3, member_count=2), _rebalance(300), _stable(350, 4, member_count=2)]},
    # SyncGroup races: b never reports generation 1's answer (one more allowed), two REBALANCE_IN_PROGRESS answers of
    # generation 2 (one more, counted once): the fourth rebalance is beyond 1 + 2
    "converges-sync-race": {
        "c": [_stable(50, 1, ["a-1", "b-1"], assignor="range"), _rebalance(100, JOINED),
              _stable(150, 1, ["a-1", "b-1"]), _rebalance(200), _rebalance(300), _rebalance(400),
              _stable(500, 4, ["a-1", "b-1"])],
        "a": _member("eager", _synced(160, "a-1", 1), _synced(250, "a-1", 2, error="REBALANCE_IN_PROGRESS")),
        "b": _member("eager", _synced(260, "b-1", 2, error="REBALANCE_IN_PROGRESS")),
    },
    # no assignor at the coordinator: the members' protocols decide -- eager while only a is known (the second
    # rebalance breaks it), cooperative once b is (the third of the next run does)
    "converges-member-protocols": {
        "c": [_rebalance(100, JOINED), _stable(150, 1, ["a-1"]), _rebalance(200), _stable(250, 2, ["a-1"]),
              ev("coordinator_state", 300, group="g", detail="member-joined"), _rebalance(400),
              _stable(450, 3, ["a-1", "b-1"]), _rebalance(500), _stable(550, 4, ["a-1", "b-1"]), _rebalance(600),
              _stable(650, 5, ["a-1", "b-1"])],
        "a": _member("eager", *[_synced(ts + 10, "a-1", gen) for gen, ts in enumerate((150, 250, 450, 550, 650), 1)]),
        "b": _member("cooperative", *[_synced(ts + 20, "b-1", gen) for gen, ts in ((3, 450), (4, 550), (5, 650))],
                     start=350),
    },
    # KIP-848 epochs (protocol consumer) are counted, never judged: an unchecked note, no finding
    "converges-kip848": {"c": [_rebalance(100, JOINED, protocol="consumer"), _rebalance(200, protocol="consumer"),
                               _rebalance(300, protocol="consumer"), _stable(400, 3, ["a-1"], assignor="uniform")]},
    # the trace ends in a streak beyond the bound: confirmed at the end; and one a later race brings within it
    "converges-end": {"c": [_stable(50, 1, ["a-1"], assignor="range"), _rebalance(100, JOINED), _rebalance(200)]},
    # no assignor at the coordinator, and a member's protocol goes back (a rolling upgrade rolled back): the last
    # protocol field counts (Member.protocol). In g, a goes eager, cooperative, eager: the second rebalance breaks the
    # eager bound; in h, b goes cooperative, eager, cooperative: within the cooperative bound
    "converges-protocol-back": {
        "c": [_rebalance(100, JOINED), _stable(150, 1, ["a-1"]), _rebalance(200), _stable(250, 2, ["a-1"]),
              *[{**e, "group": "h"} for e in (_rebalance(100, JOINED), _stable(150, 1, ["b-1"]), _rebalance(200),
                                               _stable(250, 2, ["b-1"]))]],
        "a": _member("eager", ev("group_joined", 20, group="g", generation=0, protocol="cooperative"),
                     ev("group_joined", 40, group="g", generation=0, protocol="eager")),
        "b": [_start(group="h", protocol="cooperative"), ev("group_joined", 20, group="h", generation=0, protocol="eager"),
              ev("group_joined", 40, group="h", generation=0, protocol="cooperative")],
    },
    "converges-end-race": {
        "c": [_stable(50, 1, ["a-1"], assignor="range"), _rebalance(100, JOINED), _rebalance(200)],
        "a": _member("eager", _synced(250, "a-1", 2, error="REBALANCE_IN_PROGRESS")),
    },
}


def _rejected(error: str, *after: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """A cooperative member owning t-0..2 in generation 2 whose SyncGroup for generation 3 is answered ``error``,
    then ``after`` (the shapes of tests/traces/test_invariants.py)."""
    coop = {"protocol": "cooperative", "member_id": "a-1"}
    return {"a": [_start(**COOP), ev("group_joined", 10, generation=2, **coop),
                  ev("group_synced", 11, generation=2, **coop),
                  ev("partitions_assigned", 12, parts=[0, 1, 2], generation=2, **coop),
                  ev("group_joined", 100, generation=3, **coop), ev("group_synced", 110, generation=3, error=error, **coop),
                  *[{**e, **coop} for e in after], _stop(400)]}


# generation-monotonic after a rejected generation (Checker._rejected_let_go / _rejected_kept): revoking what it
# owned then, keeping it into a newer generation, and the two that hold (all lost first; a SyncGroup that only lost
# the race keeps the generation)
REJECTED: dict[str, dict[str, list[dict[str, Any]]]] = {
    "rejected-revoke": _rejected("ILLEGAL_GENERATION", ev("group_joined", 200, generation=5),
                                 ev("group_synced", 201, generation=5),
                                 ev("partitions_revoked", 202, parts=[2, 1], generation=5),
                                 ev("partitions_revoked", 210, parts=[0], generation=5)),
    "rejected-kept": _rejected("UNKNOWN_MEMBER_ID", ev("partitions_lost", 150, parts=[1], generation=-1),
                               ev("group_joined", 200, generation=5), ev("group_synced", 201, generation=5),
                               ev("partitions_assigned", 202, parts=[3], generation=5)),
    "rejected-lost": _rejected("ILLEGAL_GENERATION", ev("partitions_lost", 150, parts=[0, 1, 2], generation=-1),
                               ev("group_joined", 200, generation=5), ev("group_synced", 201, generation=5),
                               ev("partitions_assigned", 202, parts=[0, 1], generation=5),
                               ev("group_joined", 300, generation=6), ev("group_synced", 301, generation=6),
                               ev("partitions_revoked", 302, parts=[1], generation=6)),
    "rejected-race": _rejected("REBALANCE_IN_PROGRESS", ev("group_joined", 200, generation=4),
                               ev("group_synced", 201, generation=4),
                               ev("partitions_revoked", 202, parts=[2], generation=4)),
}

# A member that moves groups (Checker._member): its first events name no group (the default one), the first event
# naming one moves it there while it owns nothing, and what it said before the move still holds after it -- the
# subscription, the protocol (named, or by its first assignor), the member id, the offset configuration. Each set is
# read after the move.
MOVED: dict[str, dict[str, list[dict[str, Any]]]] = {
    # subscribes to t before the move, is assigned u-0 after it: subscribed-only
    "moved-subscribed": {"a": [_start(subscription=["t"]), ev("group_joined", 10, group="g"),
                               ev("partitions_assigned", 20, group="g", partitions=[{"topic": "u", "partition": 0}]),
                               _stop(30)]},
    # eager before the move, assigned twice after it without a revoke: eager-revoke-all
    "moved-eager": {"a": [_start(protocol="eager"), ev("partitions_assigned", 10, parts=[0], group="g", generation=1),
                          ev("partitions_assigned", 20, parts=[1], group="g", generation=2), _stop(30)]},
    # the same with the protocol known from the first assignor named (a cooperative one later does not change it)
    "moved-assignor": {"a": [_start(assignor="range"), ev("partitions_assigned", 10, parts=[0], group="g",
                                                           generation=1, assignor="cooperative-sticky"),
                             ev("partitions_assigned", 20, parts=[1], group="g", generation=2), _stop(30)]},
    # auto.offset.reset=earliest said before the move: the first poll after it, at 5 with nothing committed, is a gap
    "moved-reset": {"a": [_start(auto_offset_reset="earliest"), ev("partitions_assigned", 10, parts=[0], group="g"),
                          consumed(20, 0, 5, 9, group="g"), _stop(30)]},
    # a's member id named before the move; the coordinator removed it before b was assigned what a still held: the
    # overlap is a zombie's (zombie-overlap), not a single-owner violation
    "moved-member-id": {
        "a": [_start(member_id="a-1"), ev("partitions_assigned", 10, parts=[0], group="g"),
              ev("partitions_revoked", 50, parts=[0], group="g"), _stop(60)],
        "b": [_start(25, group="g"), ev("partitions_assigned", 30, parts=[0], group="g"), _stop(70)],
        "c": [ev("coordinator_member_removed", 20, group="g", member_id="a-1", reason="session timeout")],
    },
    # the generation said before the move (group_joined 1, naming no group) is the member's after it: two
    # assignments in g naming none, without a revoke between, are eager-revoke-all in generation 1
    "moved-generation": {"a": [_start(protocol="eager"), ev("group_joined", 5, generation=1),
                               ev("partitions_assigned", 10, parts=[0], group="g"),
                               ev("partitions_assigned", 20, parts=[1], group="g"), _stop(30)]},
    # generation 3 in a's file before the move, 2 in the same file after it: generation-monotonic (per file, and the
    # checker keeps the file's last generation when it moves the member)
    "moved-generation-down": {"a": [_start(), ev("group_joined", 5, generation=3),
                                    ev("group_joined", 10, group="g", generation=2), _stop(30)]},
    # a cooperative member revokes t-0 in generation 2 (newer than its assignment's, 1) before the move and is assigned
    # it in generation 2 in g: revoke-only-moved (the checker keeps the memory of that revoke when it moves a)
    "moved-revoked": {"a": [_start(**COOP), ev("partitions_assigned", 5, parts=[0], generation=1),
                            ev("partitions_revoked", 10, parts=[0], generation=2),
                            ev("partitions_assigned", 20, parts=[0], group="g", generation=2), _stop(30)]},
    # a's protocol (eager) counts in the default group only until a moves to g: the default group's members then have
    # no protocol, its bound is the cooperative one (2), and its second rebalance is within it (converges holds)
    "moved-converges": {
        "a": [_start(protocol="eager"), ev("group_joined", 10, group="g", generation=1), _stop(400)],
        "c": [ev("coordinator_stable", 50, group="default", generation=1, members=["x-1"], state="Stable"),
              ev("coordinator_rebalance", 100, group="default", reason=JOINED),
              ev("coordinator_rebalance", 200, group="default", reason=REJOIN),
              ev("coordinator_stable", 300, group="default", generation=3, members=["x-1"], state="Stable")]},
    # an eager member assigned in generation 3 before the move, assigned again in g with generation -1 (which sets no
    # Member.assigned_gen): its join of generation 3 in g is no newer than its last assignment's, so no eager-revoke-all
    # (the checker keeps assigned_gen when it moves a); its join of generation 4 is one
    "moved-assigned-gen": {"a": [_start(protocol="eager"), ev("partitions_assigned", 5, parts=[0], generation=3),
                                 ev("partitions_revoked", 8, parts=[0], generation=3),
                                 ev("partitions_assigned", 10, parts=[1], group="g", generation=-1),
                                 ev("group_joined", 20, group="g", generation=3),
                                 ev("group_joined", 30, group="g", generation=4), _stop(40)]},
    # the same kept memory read by revoke-only-moved: a cooperative member last assigned in generation 2 before the
    # move revokes t-1 in generation 3 after it (newer than its last assignment's: a revoke that completes a move) and
    # is assigned t-1 again in generation 3
    "moved-assigned-gen-revoke": {"a": [_start(**COOP), ev("partitions_assigned", 5, parts=[0], generation=2),
                                        ev("partitions_revoked", 8, parts=[0], generation=2),
                                        ev("partitions_assigned", 10, parts=[1], group="g", generation=-1),
                                        ev("partitions_revoked", 20, parts=[1], group="g", generation=3),
                                        ev("partitions_assigned", 30, parts=[1], group="g", generation=3), _stop(40)]},
    # an eager member flagged in generation 5 before the move (it joined it still owning t-0) is not flagged again in
    # generation 5 after it (Member.eager_flagged, kept when the checker moves a); in generation 6 it is
    "moved-eager-flagged": {"a": [_start(protocol="eager"), ev("partitions_assigned", 5, parts=[0], generation=4),
                                  ev("group_joined", 8, generation=5), ev("partitions_revoked", 9, parts=[0]),
                                  ev("partitions_assigned", 10, parts=[1], group="g", generation=-1),
                                  ev("group_joined", 20, group="g", generation=5),
                                  ev("group_joined", 30, group="g", generation=6), _stop(40)]},
}

# The MOVED sets whose judgement needs what the member did in the group it left, which the corpus writes in its move
# columns (no event fields): the checker run per group (benchmarks/bench_spark_checker.py) cannot see it
MOVED_ACROSS = ("moved-generation", "moved-generation-down", "moved-revoked", "moved-converges", "moved-assigned-gen",
                "moved-assigned-gen-revoke", "moved-eager-flagged")

# The checker's whole-trace unchecked notes (traces.trace_notes) no sample shows, and the cooperative overlap
# between two members of one generation (Checker._judge: revoke-before-assign beside single-owner)
NOTES: dict[str, dict[str, list[dict[str, Any]]]] = {
    # cooperative members without generations: revoke-before-assign only in part, revoke-only-moved not at all
    "notes-coop-no-generation": {
        "a": [_start(**COOP), ev("partitions_assigned", 10, parts=[0, 1]), ev("partitions_revoked", 20, parts=[1]),
              _stop(40)],
        "b": [_start(15, **COOP), ev("partitions_assigned", 30, parts=[1]), _stop(50)]},
    # an eager member beside one of unknown protocol: eager-revoke-all in part
    "notes-eager-unknown": {
        "a": [_start(assignor="range"), ev("partitions_assigned", 10, parts=[0], generation=1), _stop(40)],
        "b": [_start(), ev("partitions_assigned", 10, parts=[1], generation=1), _stop(40)]},
    # a first poll with offsets that no-gap cannot judge (no commit, no reset policy): no-gap not checked at all
    "notes-no-gap-unjudged": {
        "a": [_start(), ev("partitions_assigned", 10, parts=[0]), consumed(20, 0, 5, 9), _stop(40)]},
    # the coordinator's stored assignment and no callback: single-owner is checked (on the coordinator's view), the
    # consumption rules are not
    "notes-stored-assignment": {
        "c": [ev("coordinator_stable", 100, group="g", generation=1, members=["a-1"], state="Stable",
                 assignor="range", assignment={"a-1": [{"topic": "t", "partition": 0}]})]},
    # a stored assignment that gives nothing, to one member id ("a-1": []) and to none ({}): single-owner is checked on
    # the coordinator's view all the same (CoordinatorChecks._check_stored_assignment counts each); beside it a stable
    # generation with no stored assignment, which a stray member_id does not make one, in a group of its own
    "notes-stored-assignment-empty": {
        "c": [ev("coordinator_stable", 100, group="g", generation=1, members=["a-1"], state="Stable",
                 assignor="range", assignment={"a-1": []})]},
    "notes-stored-assignment-none": {
        "c": [ev("coordinator_stable", 100, group="g", generation=1, members=[], state="Stable", assignment={})]},
    "notes-stored-assignment-absent": {
        "c": [ev("coordinator_stable", 100, group="g", generation=1, member_count=1, state="Stable",
                 member_id="a-1")]},
    # a protocol, or while a member names none an assignor, said only on a poll or commit the checker's hot path would
    # take (a known member, nothing else changed): Member.protocol is the last protocol named, so a is cooperative when
    # it is assigned t-1 still owning t-0 (no eager-revoke-all), and b is eager from its poll's range assignor on (its
    # second assignment is eager-revoke-all); c's commit names eager, and it is counted an eager member
    "protocol-on-poll": {
        "a": [_start(protocol="eager"), ev("partitions_assigned", 10, parts=[0], generation=1),
              consumed(20, 0, 0, 4, protocol="cooperative"), ev("partitions_assigned", 30, parts=[1], generation=2),
              _stop(40)],
        "b": [_start(), ev("partitions_assigned", 10, parts=[2], generation=1), consumed(20, 2, 0, 4, assignor="range"),
              ev("partitions_assigned", 30, parts=[3], generation=2), _stop(40)],
        "c": [_start(), ev("partitions_assigned", 10, parts=[4], generation=1), consumed(20, 4, 0, 4),
              committed(25, 4, 5, protocol="eager"), _stop(40)]},
    # both members in generation 2 when b is assigned t-1, which a still owns and revokes only in generation 3: the
    # assignor gave an owned partition to another member of the same generation (ConsumerCoordinator
    # .validateCooperativeAssignment refuses that), revoke-before-assign beside single-owner
    "coop-same-generation": {
        "a": [_start(**COOP), ev("group_joined", 5, generation=1),
              ev("partitions_assigned", 10, parts=[0, 1], generation=1), ev("group_joined", 100, generation=2),
              ev("partitions_assigned", 102, parts=[], generation=2), ev("group_joined", 200, generation=3),
              ev("partitions_revoked", 201, parts=[1], generation=3), _stop(300)],
        "b": [_start(90, **COOP), ev("group_joined", 100, generation=2),
              ev("partitions_assigned", 103, parts=[1], generation=2), _stop(310)]},
}

# Lines whose offset settings the checker does not accept (traces.delivery.OFFSET_CONFIG), and polls, commits and
# records of the wrong shape: each is one bad-field line on both sides and nothing else (Checker._member, or the reader
# for a poll, commit or record, refuses it before it changes the member; corpus --from does not write it), so the
# finding each set makes shows the line was refused whole
MALFORMED: dict[str, dict[str, list[dict[str, Any]]]] = {
    # a's assignment of t-0 names a reset policy of no Kafka client ("smallest" is the old Scala consumer's): a never
    # owned t-0, so its poll is consume-owned-only, and b's assignment overlaps nothing (a row the job read would
    # have made a own t-0 until 40: single-owner)
    "malformed-setting-assign": {
        "a": [_start(), ev("partitions_assigned", 10, parts=[0], auto_offset_reset="smallest"), consumed(20, 0, 0, 4),
              _stop(40)],
        "b": [_start(), ev("partitions_assigned", 30, parts=[0]), _stop(50)]},
    # a restart naming enable_auto_commit as a string: refused whole, a still owns t-0 at position 5 when it polls
    # 7..9 (monotonic-consumption); read by half (the process ended, its partitions cleared) it would be
    # consume-owned-only
    "malformed-setting-startup": {
        "a": [_start(), ev("partitions_assigned", 10, parts=[0]), consumed(20, 0, 0, 4),
              _start(30, enable_auto_commit="true"), consumed(40, 0, 7, 9), _stop(50)]},
    # a poll the checker's hot path would have taken names a negative auto.commit.interval.ms: refused, so the next
    # poll skips 5..9 (monotonic-consumption); beside it a commit whose offsets are no list, which the reader refuses
    # before either side sees it
    "malformed-setting-poll": {
        "a": [_start(), ev("partitions_assigned", 10, parts=[0]), consumed(20, 0, 0, 4),
              consumed(21, 0, 5, 9, auto_commit_interval_ms=-1), consumed(22, 0, 10, 12),
              ev("offsets_committed", 23, offsets="t-0:13"), _stop(40)]},
    # polls of the wrong shape (traces.readers.jsonl.poll_field_error), each refused whole by the reader before either
    # side sees it: a's poll of t-0 5..9 beside a t-1 entry whose minOffset is a string (the checker moved t-0 to 10,
    # then refused the line; the corpus wrote it), so its poll of 10..12 skips 5..9; b's poll of t-2 at its position
    # whose maxOffset is below its minOffset (the checker's hot path took it: position 4), so its poll of 4..9 goes back
    # (monotonic-consumption for each, neither before)
    "malformed-poll": {
        "a": [_start(), ev("partitions_assigned", 10, parts=[0, 1]), consumed(20, 0, 0, 4), consumed(21, 1, 0, 4),
              ev("records_consumed", 30, partitions=[
                  {"topic": "t", "partition": 0, "minOffset": 5, "maxOffset": 9},
                  {"topic": "t", "partition": 1, "minOffset": "5", "maxOffset": 9}]),
              consumed(40, 0, 10, 12), _stop(50)],
        "b": [_start(), ev("partitions_assigned", 10, parts=[2]), consumed(20, 2, 0, 4),
              ev("records_consumed", 30, partitions=[{"topic": "t", "partition": 2, "minOffset": 5, "maxOffset": 3}]),
              consumed(40, 2, 4, 9), _stop(50)]},
    # a commit with an entry of topic 7 beside a's t-0 at 9 (past its position 5), refused whole by the reader
    # (traces.readers.jsonl.commit_field_error): t-0's committed offset stays 5, so b, assigned t-0 after a let it go,
    # starts at 9 past it (no-gap). Taken, it was committed-not-ahead for t-0 on both sides, commit-owned-only of
    # (7, 0) for the checker alone (the corpus wrote topic null), and no no-gap
    "malformed-commit": {
        "a": [_start(), ev("partitions_assigned", 10, parts=[0]), consumed(20, 0, 0, 4), committed(21, 0, 5),
              ev("offsets_committed", 30, success=True, offsets=[{"topic": "t", "partition": 0, "offset": 9},
                                                                 {"topic": 7, "partition": 0, "offset": 5}]),
              ev("partitions_revoked", 40, parts=[0]), _stop(45)],
        "b": [_start(41), ev("partitions_assigned", 50, parts=[0]), consumed(60, 0, 9, 12), _stop(70)]},
    # VerifiableConsumer --verbose records of the wrong shape (traces.readers.jsonl.record_field_error), each refused
    # by the reader before either side sees it: a's record of t-0 at 5.0 (taken as 5 by both before), so its record
    # of 6 skips 5 (monotonic-consumption; none before), one of topic 7 (the checker's consume-owned-only of (7, 0)
    # before, the corpus's row with topic null) and one of t-0 at "6" (the checker refused it, the corpus wrote it
    # and counted it an event)
    "malformed-record-data": {
        "a": [_start(), ev("partitions_assigned", 10, parts=[0]), consumed(20, 0, 0, 4),
              ev("record_data", 30, topic="t", partition=0, offset=5.0, key=None, value="v"),
              ev("record_data", 31, topic=7, partition=0, offset=5, key=None, value="v"),
              ev("record_data", 32, topic="t", partition=0, offset="6", key=None, value="v"),
              ev("record_data", 33, topic="t", partition=0, offset=6, key=None, value="v"),
              consumed(33, 0, 5, 6), _stop(50)]},
    # coordinator events with a field of the wrong shape (traces.coordinator_checks.refuse_bad_coordinator), each
    # refused whole by the checker and not written by the corpus: a removal without a member id between a rebalance
    # for a member joining and a re-join, so the eager bound is broken (converges; read as a removal, the re-join would
    # start a new streak)
    "malformed-coordinator-removal": {
        "c": [_stable(50, 1, ["a-1", "b-1"], assignor="range"), _rebalance(100, JOINED),
              ev("coordinator_member_removed", 150, group="g", generation=2, reason="session timeout"),
              _rebalance(200), _stable(300, 3, ["a-1", "b-1"])]},
    # a stored assignment giving t-0 to a-1 and b-1 with an entry of topic 7: refused, no single-owner (the checker
    # found it, then refused the line; the corpus wrote t-0 twice), and the generation after it, whose assignment is
    # good, is the one single-owner was checked on
    "malformed-coordinator-assignment": {
        "c": [_stable(50, 1, ["a-1", "b-1"], assignor="range",
                      assignment={"a-1": tps(0), "b-1": [tp("t", 0), {"topic": 7, "partition": 0}]}),
              _rebalance(100, JOINED), _stable(150, 2, ["a-1", "b-1"], assignment={"a-1": tps(0), "b-1": tps(1)})]},
    # a broker's offsets with an entry of no offset beside t-0 at 9 (the checker took t-0, then refused the line),
    # a coordinator event of group 7 (the corpus wrote it in the default group) and a rebalance whose reason is no
    # text, beside a member of g
    "malformed-coordinator-fields": {
        "a": [_start(group="g"), ev("partitions_assigned", 10, parts=[0], group="g"), consumed(20, 0, 0, 4, group="g"),
              _stop(40)],
        "c": [ev("coordinator_offset_commit", 25, group="g", offsets=[{"topic": "t", "partition": 0, "offset": 9},
                                                                     {"topic": "t", "partition": 1}]),
              ev("coordinator_rebalance", 26, group=7, generation=1, reason=JOINED),
              ev("coordinator_rebalance", 27, group="g", generation=1, reason=["member left"])]},
}

SETS: dict[str, dict[str, list[dict[str, Any]]]] = {
    "monotonic": {
        "skip": [_start(), ev("partitions_assigned", 10, parts=[0, 1]), consumed(20, 0, 0, 4), consumed(30, 0, 8, 9),
                 consumed(31, 0, 10, 12), consumed(32, 1, 0, 3), consumed(33, 1, 4, 9), _stop(40)],
        "back": [_start(), ev("partitions_assigned", 10, parts=[2]), consumed(20, 2, 0, 9), consumed(30, 2, 5, 12),
                 ev("partitions_revoked", 35, parts=[2]), ev("partitions_assigned", 36, parts=[2]),
                 consumed(37, 2, 13, 14), consumed(38, 2, 12, 14), _stop(40)],
        "coop": [_start(**COOP), ev("partitions_assigned", 10, parts=[3, 4], generation=1, **COOP),
                 consumed(20, 3, 0, 4, generation=1), ev("partitions_revoked", 30, parts=[4], generation=2, **COOP),
                 ev("partitions_assigned", 31, parts=[], generation=2, **COOP), consumed(40, 3, 2, 9, generation=2),
                 _stop(50)],
    },
    "not-ahead": {
        "a": [_start(), ev("partitions_assigned", 10, parts=[0]), consumed(20, 0, 0, 4), committed(21, 0, 9),
              committed(22, 0, 12), consumed(30, 0, 5, 9), committed(31, 0, 10), _stop(40)],
        "b": [_start(50), ev("partitions_assigned", 60, parts=[0]), committed(61, 0, 15), consumed(70, 0, 10, 11),
              committed(71, 0, 12), _stop(80)],
    },
    "no-gap": {
        "a": [_start(auto_offset_reset="earliest"), ev("partitions_assigned", 10, parts=[0, 1]),
              consumed(20, 0, 3, 5), consumed(21, 1, 0, 5), committed(22, 1, 6), ev("partitions_revoked", 30, parts=[1]),
              _stop(40)],
        "b": [_start(31), ev("partitions_assigned", 32, parts=[1]), consumed(33, 1, 9, 12), _stop(50)],
    },
    # a killed owner's last commit may have reached the broker unseen (DeliveryChecks._commit_maybe_unseen):
    # b starts partition 0 past the shown commit but within what a consumed (unchecked), and partition 1
    # beyond it (a violation)
    "no-gap-unseen": {
        "a": [_start(), ev("partitions_assigned", 10, parts=[0, 1]), consumed(20, 0, 0, 9), committed(21, 0, 5),
              consumed(22, 1, 0, 4), committed(23, 1, 5), _start(40)],
        "b": [_start(30), ev("partitions_assigned", 41, parts=[0, 1]), consumed(42, 0, 8, 9), consumed(43, 1, 8, 9),
              _stop(50)],
    },
    # ... and server.log's commits settle it: judged against the offset the broker took (partition 0 holds,
    # partition 1 started past it), or against a later commit the trace shows (partition 2)
    "no-gap-broker": {
        "a": [_start(group="g"), ev("partitions_assigned", 10, parts=[0, 1, 2]), consumed(20, 0, 0, 9),
              committed(21, 0, 5), consumed(22, 1, 0, 9), committed(23, 1, 5), consumed(24, 2, 0, 9),
              committed(25, 2, 5), _start(40)],
        "b": [_start(30, group="g"), ev("partitions_assigned", 41, parts=[0, 1, 2]), consumed(42, 0, 8, 9),
              consumed(43, 1, 9, 9), consumed(44, 2, 9, 9), _stop(50)],
        "broker": [ev("coordinator_offset_commit", 26, group="g", member_id="a-1",
                      offsets=[{"topic": "t", "partition": p, "offset": o} for p, o in ((0, 8), (1, 7), (2, 4))])],
    },
    # handoffs (the measure handoff-duplicates): records read again after a revoke without a commit, after a
    # failed commit, none after a commit of the position, and from a zombie that kept consuming
    "handoff": {
        "a": [_start(), ev("partitions_assigned", 10, parts=[0, 1, 2]), consumed(20, 0, 0, 9), committed(21, 0, 5),
              consumed(22, 1, 0, 9), committed(23, 1, 3, success=False, error="REBALANCE_IN_PROGRESS"),
              consumed(24, 2, 0, 9), committed(25, 2, 10), ev("partitions_revoked", 30, parts=[0, 1, 2]), _stop(70)],
        "b": [_start(26), ev("partitions_assigned", 31, parts=[0, 1, 2, 3]), consumed(32, 0, 5, 12),
              consumed(33, 1, 0, 12), consumed(34, 2, 10, 12), consumed(35, 3, 0, 7), _stop(60)],
        "c": [_start(), ev("partitions_assigned", 10, parts=[3]), consumed(20, 3, 0, 4), committed(21, 3, 0),
              consumed(40, 3, 5, 9), _stop(80)],
    },
    # commit-owned-only (Checker._commit_unowned): after the revoke, a late commit of t-0 at the position a consumed
    # to holds, one of t-1 past it and one of t-2, never owned, do not; a failed commit of t-3 is no commit; a poll of
    # t-0 after the revoke is consume-owned-only
    "commit-unowned": {
        "a": [_start(), ev("partitions_assigned", 10, parts=[0, 1]), consumed(20, 0, 0, 9), consumed(21, 1, 0, 4),
              ev("partitions_revoked", 30, parts=[0, 1]), committed(31, 0, 10), committed(32, 1, 7),
              committed(33, 2, 3), committed(34, 3, 1, success=False, error="REBALANCE_IN_PROGRESS"),
              consumed(35, 0, 10, 12), _stop(40)]},
    "subscribed": {
        "a": [_start(subscription=["t"]), ev("partitions_assigned", 10, parts=[0]),
              ev("partitions_assigned", 20, partitions=[{"topic": "payments", "partition": 3},
                                                        {"topic": "audit", "partition": 1},
                                                        {"topic": "t", "partition": 1}])],
        "b": [_start(subscription=["t", "payments"]), ev("partitions_assigned", 10, parts=[2]),
              ev("partitions_assigned", 20, partitions=[{"topic": "payments", "partition": 0}])],
    },
    "revoke-only-moved-same": {
        "a": [_start(**COOP), ev("partitions_assigned", 10, parts=[0, 1], generation=1),
              ev("group_joined", 100, generation=2), ev("partitions_revoked", 101, parts=[0, 1], generation=2),
              ev("partitions_assigned", 102, parts=[0, 1], generation=2)],
    },
    "revoke-only-moved-back": {
        "a": [_start(**COOP), ev("partitions_assigned", 10, parts=[0, 1], generation=1),
              ev("partitions_revoked", 90, parts=[0, 1], generation=1), ev("group_joined", 100, generation=2),
              ev("partitions_assigned", 102, parts=[0, 1], generation=2)],
    },
    "revoke-only-moved-held": {
        "a": [_start(**COOP), ev("partitions_assigned", 10, parts=[0, 1], generation=1),
              ev("group_joined", 100, generation=2), ev("partitions_revoked", 101, parts=[1], generation=2),
              ev("partitions_assigned", 102, parts=[], generation=2), ev("group_joined", 300, generation=4),
              ev("partitions_assigned", 302, parts=[1], generation=4)],
        "b": [_start(**COOP), ev("group_joined", 200, generation=3),
              ev("partitions_assigned", 201, parts=[1], generation=3),
              ev("partitions_revoked", 250, parts=[1], generation=3), _stop(260)],
    },
    "static-rejoin": {"c": _static("Updating metadata for static member s1-b with instance id s1")},
    "static-rejoin-quiet": {"c": _static(None)},
    "static-rejoin-protocol-kept": {"c": _static(
        "Group's selectedProtocol will change because static member s1-b with instance id s1 joined", "range")},
    "static-rejoin-protocol-changed": {"c": _static(
        "Group's selectedProtocol will change because static member s1-b with instance id s1 joined", "roundrobin")},
    "static-rejoin-other": {"c": _static("Adding new member m3 with group instance id None; client reason: x")},
    # a classic group migrating to KIP-848: a that named eager names the consumer protocol at its next join and is
    # then given t-1 while it keeps t-0, incrementally, as the consumer protocol assigns (KIP-848 has no
    # revoke-everything step); b, eager throughout, is given t-3 while it keeps t-2. Member.protocol is the last
    # protocol field, so eager-revoke-all judges b only, and the notes count a as neither eager nor cooperative
    "consumer-protocol-migration": {
        "a": [_start(protocol="eager"), ev("partitions_assigned", 10, parts=[0], generation=1),
              ev("group_joined", 20, generation=2, protocol="consumer"),
              ev("partitions_assigned", 30, parts=[1], generation=2), _stop(40)],
        "b": [_start(protocol="eager"), ev("partitions_assigned", 10, parts=[2], generation=1),
              ev("group_joined", 20, generation=2), ev("partitions_assigned", 30, parts=[3], generation=2), _stop(40)],
    },
    # a alone: no member ends the trace known to be eager, so eager-revoke-all is not checked (a note on both sides)
    "consumer-protocol-alone": {
        "a": [_start(protocol="eager"), ev("partitions_assigned", 10, parts=[0], generation=1),
              ev("group_joined", 20, generation=2, protocol="consumer"),
              ev("partitions_assigned", 30, parts=[1], generation=2), _stop(40)],
    },
    **CONVERGES,
    **REJECTED,
    **MOVED,
    **NOTES,
    **MALFORMED,
}

# Why an old owner was a zombie, for the reasons no sample shows (traces.zombies.REASONS; the samples show removals
# and partitions_lost): a owns t-0 and t-1 in generation 1 when b is assigned them in generation 2 -- a never
# reached it (t-0), then a's generation was reset (t-1); c is restarted still owning t-2, which d was assigned (its
# trace ended without shutdown_complete).
_G = {"group": "g", **COOP}
SETS["zombie-reasons"] = {
    "a": [_start(**_G), ev("partitions_assigned", 10_000, parts=[0, 1], generation=1, **_G),
          ev("partitions_revoked", 30_000, parts=[0], generation=1, **_G),
          ev("partitions_revoked", 50_000, parts=[1], generation=-1, **_G), _stop(60_000)],
    "b": [_start(**_G), ev("partitions_assigned", 20_000, parts=[0], generation=2, **_G),
          ev("partitions_assigned", 40_000, parts=[1], generation=2, **_G), _stop(70_000)],
    "c": [_start(**_G), ev("partitions_assigned", 10_000, parts=[2], **_G), _start(30_000, **_G), _stop(35_000)],
    "d": [_start(**_G), ev("partitions_assigned", 20_000, parts=[2], **_G), _stop(70_000)],
}

# More handoffs with duplicates than a small list holds (the checker's max_findings, the job's max_examples), closed in
# another order than they are listed in: b reads t-4 first and t-0 last (the list's order: group, time, topic,
# partition, new owner) and lets t-0 go first, t-4 last (the checker's closing order). a never committed.
SETS["handoffs-listed"] = {
    "a": [_start(), ev("partitions_assigned", 10, parts=[0, 1, 2, 3, 4]),
          *[consumed(20 + p, p, 0, 9) for p in range(5)], ev("partitions_revoked", 100, parts=[0, 1, 2, 3, 4]),
          _stop(101)],
    "b": [_start(150), ev("partitions_assigned", 200, parts=[0, 1, 2, 3, 4]),
          *[consumed(250 - 10 * p, p, 0, 9) for p in range(5)],
          *[ev("partitions_revoked", 300 + 10 * p, parts=[p]) for p in range(5)], _stop(400)],
}


# A stored assignment (coordinator_stable) giving partitions twice, as a client-side assignor may (the coordinator
# stores what the leader sent as is): t-0 to a-1 and b-1 (b-1 lists it twice: one owner, no pair), t-1 to all three,
# listed out of member-id order (both pair them in it: (a-1, b-1), then (b-1, c-1)); the next generation's, clean; and
# in a group of its own a stored assignment with no generation (the checker words it "None").
SETS["stored-twice"] = {
    "c": [ev("coordinator_stable", 100, group="g", generation=1, members=["c-1", "b-1", "a-1"], state="Stable",
             assignor="custom", assignment={"c-1": tps(1), "b-1": tps(0, 1, 0), "a-1": tps(2, 0, 1)}),
          ev("coordinator_stable", 200, group="g", generation=2, members=["a-1", "b-1", "c-1"], state="Stable",
             assignor="custom", assignment={"a-1": tps(0), "b-1": tps(1), "c-1": tps(2)}),
          ev("coordinator_stable", 300, group="h", state="Stable", assignment={"x-1": tps(5), "w-1": tps(5)})]}



def _kip848(ts: int, member_id: str, given: tuple[int, ...], revoking: tuple[int, ...] = ()) -> dict[str, Any]:
    return ev("coordinator_state", ts, group="g", detail="member-assignment", member_id=member_id, generation=ts // 100,
              partitions=tps(*given), pending_revocation=tps(*revoking), protocol="consumer")


# KIP-848 member assignments (a broker's server.log): b-1 is given t-1 while a-1 still has it to revoke (a clash), then
# again once a-1's next assignment released it (a handoff, none); c-1 is given t-0 after a-1's removal (none: a-1 holds
# nothing once removed), then t-0 to t-3 while b-1 holds t-1 and t-2 (one finding, both partitions).
SETS["kip848-held"] = {
    "c": [_kip848(100, "a-1", (0, 1)), _kip848(200, "a-1", (0,), (1,)), _kip848(210, "b-1", (1, 2)),
          _kip848(300, "a-1", (0,)), _kip848(310, "b-1", (1, 2)),
          ev("coordinator_member_removed", 400, group="g", member_id="a-1", reason="left"),
          _kip848(410, "c-1", (0,)), _kip848(420, "c-1", (0, 1, 2, 3))]}


# Overlaps an unnamed removal leaves undecided (Checker._unnamed_removal): a (no member id, no generation) owns t-0
# when b is assigned it and revokes it 10 s later; the coordinator (c) removed a member id between a's start and b's
# assignment. Both sides count a removed id as named only if some member's id was it when a let go: m, restarted, had
# named m-1 and since rejoined as m-2 (a member's id after a rejoin); a names a-1 only after it let go (the removed
# member may be a itself). Until h30-undecided the job counted every id a member ever named, and called both overlaps
# single-owner violations where the checker leaves them undecided.
_REMOVED = {"group": "g", "reason": "removing member on heartbeat expiration"}
SETS["undecided-rejoined-id"] = {
    "a": [_start(group="g"), ev("partitions_assigned", 10_000, parts=[0], group="g"),
          ev("partitions_revoked", 30_000, parts=[0], group="g"), _stop(40_000)],
    "b": [_start(group="g"), ev("partitions_assigned", 20_000, parts=[0], group="g"), _stop(50_000)],
    "m": [_start(group="g"), ev("group_joined", 1_000, group="g", member_id="m-1"), _start(5_000, group="g"),
          ev("group_joined", 6_000, group="g", member_id="m-2"), _stop(50_000)],
    "c": [ev("coordinator_member_removed", 15_000, member_id="m-1", **_REMOVED)],
}
# the control: m-1 still m's id when a lets go -- the removed member was m, so a revoked late: single-owner on both
SETS["undecided-named-id"] = {
    **SETS["undecided-rejoined-id"],
    "m": [_start(group="g"), ev("group_joined", 1_000, group="g", member_id="m-1"), _stop(50_000)],
}
SETS["undecided-named-later"] = {
    "a": [_start(group="g"), ev("partitions_assigned", 10_000, parts=[0], group="g"),
          ev("partitions_revoked", 30_000, parts=[0], group="g"),
          ev("group_joined", 35_000, group="g", member_id="a-1"), _stop(40_000)],
    "b": [_start(group="g"), ev("partitions_assigned", 20_000, parts=[0], group="g"), _stop(50_000)],
    "c": [ev("coordinator_member_removed", 15_000, member_id="a-1", **_REMOVED)],
}

# two overlaps one revoke closes, its partitions listed out of order (t-1, then t-0): the note's example is the first
# the checker judges, t-1 (_let_go releases in the event's order); the job gave t-0 until h30-undecided
SETS["undecided-revoke-order"] = {
    "a": [_start(group="g"), ev("partitions_assigned", 10_000, parts=[0, 1], group="g"),
          ev("partitions_revoked", 30_000, parts=[1, 0], group="g"), _stop(40_000)],
    "b": [_start(group="g"), ev("partitions_assigned", 20_000, parts=[0, 1], group="g"), _stop(50_000)],
    "c": [ev("coordinator_member_removed", 15_000, member_id="x-1", **_REMOVED)],
}

# Whose removals count: an old owner that never named its group is judged against every group's removals, one that
# did against its own group's (Checker._unnamed_removal: Member.group_explicit). a and b name the default group,
# "default", and x-1 is removed from group h: b's overlap with a is a single-owner violation. The corpus wrote only
# the resolved group until h31-known, and the job took a and b for members that name none (undecided, the note).
_IN_DEFAULT = {"group": "default"}
SETS["undecided-named-default"] = {
    "a": [_start(**_IN_DEFAULT), ev("partitions_assigned", 10_000, parts=[0], **_IN_DEFAULT),
          ev("partitions_revoked", 30_000, parts=[0], **_IN_DEFAULT), _stop(40_000)],
    "b": [_start(**_IN_DEFAULT), ev("partitions_assigned", 20_000, parts=[0], **_IN_DEFAULT), _stop(50_000)],
    "c": [ev("coordinator_member_removed", 15_000, member_id="x-1", **{**_REMOVED, "group": "h"})],
}
# the control: a and b name no group (the default one is theirs all the same), so h's removal counts: undecided on
# both sides
SETS["undecided-no-group"] = {
    "a": [_start(), ev("partitions_assigned", 10_000, parts=[0]), ev("partitions_revoked", 30_000, parts=[0]),
          _stop(40_000)],
    "b": [_start(), ev("partitions_assigned", 20_000, parts=[0]), _stop(50_000)],
    "c": SETS["undecided-named-default"]["c"],
}

# A member that moves groups (Checker._member: from the default group, named by none of its events so far, to g, while
# it owns nothing) keeps its member id until it names another or restarts, in whichever group: m names m-1, then moves
# to g rejoining as m-2 ("undecided-moved-rejoined") or restarting ("undecided-moved-restarted"); m-1's removal in g
# leaves a's overlap undecided, as m-1 was nobody's id when a let go. The job's known ids followed a member within a
# group until h31-known, and kept m-1 as m's in the default group to the end: a single-owner violation. The control
# ("undecided-moved-kept"): m moves on a SyncGroup answer that names no member id, so m-1 is still its id -- a
# violation on both sides.
def _moved_owner(*moving: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {
        "a": [_start(group="g"), ev("partitions_assigned", 10_000, parts=[0], group="g"),
              ev("partitions_revoked", 30_000, parts=[0], group="g"), _stop(40_000)],
        "b": [_start(group="g"), ev("partitions_assigned", 20_000, parts=[0], group="g"), _stop(50_000)],
        "m": [_start(), ev("group_joined", 1_000, member_id="m-1"), *moving, _stop(50_000)],
        "c": [ev("coordinator_member_removed", 15_000, member_id="m-1", **_REMOVED)],
    }


SETS["undecided-moved-rejoined"] = _moved_owner(ev("group_joined", 5_000, group="g", member_id="m-2"))
SETS["undecided-moved-restarted"] = _moved_owner(_start(5_000, group="g"))
SETS["undecided-moved-kept"] = _moved_owner(ev("group_synced", 5_000, group="g", generation=1),
                                            ev("group_joined", 35_000, group="g", member_id="m-3"))
# The undecided sets whose verdict reads another group's events: a removal in another group (counted for an old owner
# that named no group), an id named in the group its member left. The checker run per group
# (benchmarks/bench_spark_checker.py) cannot see them.
UNDECIDED_ACROSS = ("undecided-no-group", "undecided-moved-kept")

# Two captures checked as two runs (`check a/ b/`, traces.runs; `corpus --from a/ b/` names their groups "GROUP @ RUN"):
# the checker judges each run alone, so a member id one run names, or a removal one run holds, says nothing of the
# other's overlaps. In a, the coordinator removes m-1 from g between a's start and b's assignment: undecided (no
# member of a names m-1), though b's m names m-1 throughout; and x-1 from the default group, while in b d (which names
# no group, so every group's removals of its run count) overlaps e with no removal in its run: a violation. Until
# h31-runs the job read the corpus as one trace: m-1 named (a single-owner violation in a) and x-1 counted for d
# (undecided in b).
RUNS = {
    "a": {"a": SETS["undecided-rejoined-id"]["a"], "b": SETS["undecided-rejoined-id"]["b"],
          "c": [ev("coordinator_member_removed", 15_000, member_id="m-1", **_REMOVED),
                ev("coordinator_member_removed", 15_000, member_id="x-1", **{**_REMOVED, "group": "default"})]},
    "b": {"m": [_start(group="g"), ev("group_joined", 1_000, group="g", member_id="m-1"), _stop(50_000)],
          "d": [_start(), ev("partitions_assigned", 10_000, parts=[1]), ev("partitions_revoked", 30_000, parts=[1]),
                _stop(40_000)],
          "e": [_start(), ev("partitions_assigned", 20_000, parts=[1]), _stop(50_000)]},
}

# A group whose own name holds a "/" in a corpus of one run written as a user writes it (corpus --from, no set prefix):
# a and b name no group, so a removal from team/h counts for their overlap in the default group -- undecided on both
# sides. The job read "team/" for a trace set of its own before, did not count the removal, and reported a
# single-owner violation the checker does not.
SLASHED = {**SETS["undecided-no-group"],
           "c": [ev("coordinator_member_removed", 15_000, member_id="x-1", **{**_REMOVED, "group": "team/h"})]}


# Real captures with files left out, as a user may hold them: name -> (sample folder, the files kept).
# vc-stall-zombie without its client logs: VerifiableConsumer output cannot name the member the coordinator
# removed, so the checker leaves the overlaps undecided (_unnamed_removal) -- a job that judged them would report
# false single-owner violations on a correct real run.
PARTIAL_CAPTURES = {
    "real-vc-stall-zombie-output-only": (SAMPLES / "kafka-4.1.1-extra" / "vc-stall-zombie",
                                         ("c1.jsonl", "c2.jsonl", "server.log")),
}


# A consumer's callback trace beside its own Java client log, as Kafka's VerifiableConsumer and its log4j output
# pair up (c1.jsonl, c1.log: tests/traces/samples/kafka-4.1.1*): the log's ownership lines are context only to both
# sides ("superseded", Checker._callback_superseded), but what they say of the member counts. Times are ms after T0.
T0 = 1_795_630_989_000
_INVOKER = "org.apache.kafka.clients.consumer.internals.ConsumerRebalanceListenerInvoker"
_COORDINATOR = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"


def _java(ts: int, group: str, body: str, logger: str = _INVOKER) -> str:
    """One line of a Java consumer's log4j output (kafka-clients 4.1.1's LogContext prefix)."""
    at = datetime.fromtimestamp((T0 + ts) / 1000, UTC)
    return (f"[{at:%Y-%m-%d %H:%M:%S},{at.microsecond // 1000:03d}] INFO [Consumer clientId=consumer-{group}-1, "
            f"groupId={group}] {body} ({logger})")


def _joined(ts: int, group: str, gen: int, member_id: str) -> list[str]:
    """A classic-protocol member's JoinGroup and SyncGroup lines (AbstractCoordinator, range assignor)."""
    generation = f"Generation{{generationId={gen}, memberId='{member_id}', protocol='range'}}"
    return [_java(ts, group, f"Successfully joined group with generation {generation}", _COORDINATOR),
            _java(ts + 1, group, f"Successfully synced group in generation {generation}", _COORDINATOR)]


def _vc(ts: int, name: str, *parts: str) -> dict[str, Any]:
    """A VerifiableConsumer event (no member, group or generation: the log names them)."""
    event: dict[str, Any] = {"timestamp": T0 + ts, "name": name}
    if parts:
        event["partitions"] = [{"topic": t, "partition": int(p)} for t, p in (x.rsplit("-", 1) for x in parts)]
    return event


# name -> member -> (its VerifiableConsumer events, its client log's lines)
PAIRED: dict[str, dict[str, tuple[list[dict[str, Any]], list[str]]]] = {
    # A KIP-848 consumer (group.protocol=consumer, AsyncKafkaConsumer) logs no JoinGroup or SyncGroup line: the
    # subscription its "Subscribed to topic(s)" line names reaches only the ownership lines after it, which the
    # callback trace supersedes. c1 is assigned u-0, a topic it does not subscribe to: subscribed-only.
    "superseded-subscription": {
        "c1": ([_vc(0, "startup_complete"), _vc(2_000, "partitions_assigned", "t-0", "u-0"),
                _vc(9_000, "shutdown_complete")],
               [_java(100, "g", "Subscribed to topic(s): t", "org.apache.kafka.clients.consumer.internals."
                      "AsyncKafkaConsumer"),
                _java(500, "g", "Member c1-id with epoch 1 transitioned from JOINING to RECONCILING.",
                      "org.apache.kafka.clients.consumer.internals.ConsumerMembershipManager"),
                _java(1_999, "g", "Adding newly assigned partitions: [t-0, u-0]")]),
        "c2": ([_vc(0, "startup_complete"), _vc(2_000, "partitions_assigned", "t-1"),
                _vc(9_000, "shutdown_complete")],
               [_java(100, "g", "Subscribed to topic(s): t", "org.apache.kafka.clients.consumer.internals."
                      "AsyncKafkaConsumer"),
                _java(1_999, "g", "Adding newly assigned partitions: [t-1]")]),
    },
    # The process of a (generation 1, t-0) hangs in a rebalance: its log says it revokes t-0 (onJoinPrepare logs
    # before the listener runs), its VerifiableConsumer never prints the revoke, and it is restarted. b, in
    # generation 2, was given t-0 before: a zombie overlap (a never reached generation 2) that ended when a was
    # restarted -- at a's last event (Member.last_ts), the log's revoke line, 6 s, not its last callback at 2 s.
    "superseded-restart": {
        "a": ([_vc(0, "startup_complete"), _vc(2_000, "partitions_assigned", "t-0"), _vc(9_000, "startup_complete"),
               _vc(9_500, "shutdown_complete")],
              [*_joined(1_900, "g", 1, "a-1"), _java(1_999, "g", "Adding newly assigned partitions: [t-0]"),
               _java(6_000, "g", "Revoke previously assigned partitions [t-0]")]),
        "b": ([_vc(0, "startup_complete"), _vc(5_000, "partitions_assigned", "t-0"), _vc(9_500, "shutdown_complete")],
              [*_joined(4_900, "g", 2, "b-1"), _java(4_999, "g", "Adding newly assigned partitions: [t-0]")]),
    },
}


def write(root: Path) -> dict[str, Path]:
    """Write every set under ``root``: name -> its folder."""
    out = {}
    for name, files in SETS.items():
        for member, events in files.items():
            write_jsonl(root / name / f"{member}.jsonl", events)
        out[f"crafted-{name}"] = root / name
    for name, pairs in PAIRED.items():
        for member, (events, lines) in pairs.items():
            write_jsonl(root / name / f"{member}.jsonl", events)
            (root / name / f"{member}.log").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        out[f"crafted-{name}"] = root / name
    for name, (folder, kept) in PARTIAL_CAPTURES.items():
        (root / name).mkdir(parents=True)
        for file in kept:
            shutil.copyfile(folder / file, root / name / file)
        out[name] = root / name
    return out
