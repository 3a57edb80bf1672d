"""Rebalance analytics: rebalances with their reasons, pauses, moves, storms."""

from __future__ import annotations

from pathlib import Path

from tests.traces.support import ev, run_events


def _eager_round(ts: int, gen: int, a_parts: list[int], b_parts: list[int]) -> tuple[list[dict[str, object]], ...]:
    a = [ev("partitions_revoked", ts, parts=[0, 1, 2, 3]), ev("group_joined", ts + 300, generation=gen),
         ev("partitions_assigned", ts + 310, parts=a_parts, generation=gen)]
    b = [ev("group_joined", ts + 300, generation=gen), ev("partitions_assigned", ts + 320, parts=b_parts, generation=gen)]
    return a, b


def test_coordinator_rebalances_with_reasons_pauses_and_moves(tmp_path: Path) -> None:
    coordinator = [ev("coordinator_rebalance", 5, group="g", generation=0, reason="Adding new member a-1"),
                   ev("coordinator_stable", 8, group="g", generation=1, members=["a-1"]),
                   ev("coordinator_rebalance", 1000, group="g", generation=1, reason="Adding new member b-1"),
                   ev("coordinator_stable", 1350, group="g", generation=2, members=["a-1", "b-1"])]
    a = [ev("startup_complete", 0, group="g", protocol="eager"),
         ev("partitions_assigned", 10, parts=[0, 1, 2, 3], generation=1),
         ev("partitions_revoked", 1000, parts=[0, 1, 2, 3]), ev("group_joined", 1300, generation=2),
         ev("partitions_assigned", 1360, parts=[0, 1], generation=2)]
    b = [ev("startup_complete", 900, group="g", protocol="eager"), ev("group_joined", 1300, generation=2),
         ev("partitions_assigned", 1370, parts=[2, 3], generation=2)]
    report = run_events(tmp_path, {"coordinator": coordinator, "a": a, "b": b})
    group = report["groups"]["g"]
    assert group["source"] == "coordinator" and group["rebalance_count"] == 2
    first, rb = group["rebalances"]
    assert first["moved"] == 0 and first["paused_ms"] == {}  # the first owner moved nothing
    assert rb["reasons"] == ["Adding new member b-1"] and rb["generation"] == 2 and rb["duration_ms"] == 350
    assert rb["paused_ms"] == {"a": 360}  # b joined fresh: waiting, not paused
    assert rb["moved"] == 2 and rb["max_unowned_ms"] == 370
    assert group["timeline"]["t-2"] == [[10, 1000, "a"], [1370, None, "b"]]


def test_client_side_rebalances_without_the_coordinator(tmp_path: Path) -> None:
    a = [ev("startup_complete", 0), ev("partitions_assigned", 10, parts=[0, 1], generation=1),
         ev("partitions_revoked", 10_000, parts=[0, 1]), ev("group_joined", 10_400, generation=2,
                                                            reason="group is already rebalancing"),
         ev("partitions_assigned", 10_500, parts=[0], generation=2)]
    b = [ev("startup_complete", 9_000), ev("partitions_assigned", 10_510, parts=[1], generation=2)]
    group = run_events(tmp_path, {"a": a, "b": b})["groups"]["default"]
    assert group["source"] == "clients" and group["rebalance_count"] == 2
    second = group["rebalances"][1]
    assert second["generation"] == 2 and second["reasons"] == ["a: group is already rebalancing"]
    assert second["paused_ms"] == {"a": 500} and second["moved"] == 1


def test_storms(tmp_path: Path) -> None:
    coordinator = []
    for i in range(8):
        ts = 1000 + i * 5_000
        coordinator += [ev("coordinator_rebalance", ts, group="g", generation=i, reason=f"Adding new member m{i}"),
                        ev("coordinator_stable", ts + 100, group="g", generation=i + 1)]
    coordinator += [ev("coordinator_rebalance", 500_000, group="g", generation=8, reason="Adding new member late"),
                    ev("coordinator_stable", 500_100, group="g", generation=9)]
    group = run_events(tmp_path, {"coordinator": coordinator}, window_ms=30_000, threshold=5)["groups"]["g"]
    assert group["rebalance_count"] == 9
    [storm] = group["storms"]
    assert (storm["start"], storm["end"], storm["rebalances"]) == (1000, 36_000, 8)
    assert storm["per_minute"] == 13.71
