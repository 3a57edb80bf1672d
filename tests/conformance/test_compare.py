"""The comparisons of conformance/compare.py on hand-made wire records: each difference it must find.

No client runs here: the wire messages are what conformance/group_wire.py writes, built by hand so that
each test shows one rule of docs/conformance.md failing (and holding).
"""

from __future__ import annotations

from typing import Any

from conformance import compare as cmp


def tps(*ps: int, topic: str = "orders") -> list[dict[str, Any]]:
    return [{"topic": topic, "partition": p} for p in ps]


def member(mid: str, owned: tuple[int, ...] = (), generation: int | None = None) -> dict[str, Any]:
    return {"member_id": mid, "instance_id": None, "topics": ["orders"], "owned": tps(*owned), "generation": generation}


def round_wire(strategy: str, members: list[dict[str, Any]], assignments: dict[str, tuple[int, ...]]) -> list[dict[str, Any]]:
    """The leader's JoinGroup (request, answer with members) and its SyncGroup with ``assignments``."""
    return [
        {"timestamp": 10, "conn": 1, "kind": "request", "api": "JoinGroup", "correlation_id": 1, "client_id": "a#1"},
        {"timestamp": 11, "conn": 1, "kind": "response", "api": "JoinGroup", "correlation_id": 1, "client_id": None,
         "error": "NONE", "generation": 4, "protocol": strategy, "leader": "m1", "member_id": "m1", "members": members},
        {"timestamp": 12, "conn": 1, "kind": "request", "api": "SyncGroup", "correlation_id": 2, "client_id": "a#1",
         "generation": 4, "member_id": "m1",
         "assignments": {m: {"partitions": tps(*ps), "user_data": ""} for m, ps in assignments.items()}},
    ]


def test_range_must_equal_kafkas_assignment() -> None:
    members = [member("m1"), member("m2")]
    ok = cmp.Comparison()
    cmp.assignor_rounds(round_wire("range", members, {"m1": (0, 1), "m2": (2,)}), [(0, {"orders": 3})], {}, ok)
    assert ok.rounds == 1 and not ok.differences
    bad = cmp.Comparison()
    cmp.assignor_rounds(round_wire("range", members, {"m1": (0,), "m2": (1, 2)}), [(0, {"orders": 3})], {}, bad)
    assert [d.comparison for d in bad.differences] == ["assignor"]
    assert bad.differences[0].evidence["model"] == {"m1": ["orders-0", "orders-1"], "m2": ["orders-2"]}


def test_sticky_must_keep_its_promises_not_kafkas_exact_answer() -> None:
    members = [member("m1", (0, 1, 2), 3), member("m2", (), None)]
    held = cmp.Comparison()
    cmp.assignor_rounds(round_wire("sticky", members, {"m1": (0, 1), "m2": (2,)}), [(0, {"orders": 3})], {}, held)
    assert not held.differences
    moved = cmp.Comparison()  # gives m1's partitions away although it could keep two: not sticky
    cmp.assignor_rounds(round_wire("sticky", members, {"m1": (2,), "m2": (0, 1)}), [(0, {"orders": 3})], {}, moved)
    assert [d.invariant for d in moved.differences] == ["sticky"]


def test_whole_run_compares_only_what_both_check() -> None:
    real = {"checked": ["single-owner", "complete"], "unchecked": [{"invariant": "complete", "reason": "x",
                                                                     "partial": False}],
            "findings": [{"invariant": "single-owner", "severity": "violation", "message": "two owners"}]}
    out = cmp.Comparison()
    cmp.whole_run(real, {"complete": "unowned"}, ("single-owner", "complete", "converges"), out)
    assert [(d.invariant, "real" in d.evidence) for d in out.differences] == [("single-owner", True)]
    assert any("converges" in u for u in out.unchecked)


def test_more_rebalances_than_the_bound_is_a_divergence() -> None:  # noqa: D103
    answers = [{"timestamp": t, "conn": 1, "kind": "response", "api": "JoinGroup", "error": "NONE", "generation": g}
               for t, g in ((110, 3), (120, 4))]
    timeline = [{"timestamp": 100, "step": "join", "member": "b"}, {"timestamp": 200, "step": "end"}]
    eager, coop = cmp.Comparison(), cmp.Comparison()
    cmp.rebalances_per_change(answers, timeline, False, eager)
    cmp.rebalances_per_change(answers, timeline, True, coop)
    assert [d.invariant for d in eager.differences] == ["converges"] and not coop.differences
