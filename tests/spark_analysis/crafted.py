"""Small trace sets for the rules the real samples and the generated corpus rarely break.

Each set is a few members' groupspec JSON Lines files, the shapes of the checker's own tests
(tests/traces/test_invariants.py, test_delivery.py): one that breaks a rule, one beside it that
holds. They join the sample corpus (one Spark run for all), so the agreement test holds the Spark
job to the checker on them too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.traces.support import committed, consumed, ev, write_jsonl

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
}


def write(root: Path) -> dict[str, Path]:
    """Write every set under ``root``: name -> its folder."""
    out = {}
    for name, files in SETS.items():
        for member, events in files.items():
            write_jsonl(root / name / f"{member}.jsonl", events)
        out[f"crafted-{name}"] = root / name
    return out
