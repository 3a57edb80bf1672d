"""The model's simulator writes groupspec JSON Lines; the checker must find nothing in a correct run
and must catch the mutants whose effect a trace shows."""

from __future__ import annotations

from typing import Any

import pytest

from traces.report import check_events

scenario_mod = pytest.importorskip("model.scenario")
system_run = pytest.importorskip("model.system_run")


def _scenario(assignor: str, extra: list[dict[str, Any]], static: bool = False) -> Any:
    def join(at: int, name: str) -> dict[str, Any]:
        step = {"at": at, "do": "join", "member": name, "assignors": [assignor], "topics": ["orders"]}
        if static:
            step["instance_id"] = f"{name}-instance"
        return step

    doc = {"topics": {"orders": 6}, "config": {"initial_rebalance_delay_ms": 0, "session_timeout_ms": 10000},
           "steps": [join(0, "a"), join(100, "b"), join(200, "c"), *extra], "until": 60000}
    return scenario_mod.parse(doc)


SCENARIOS = {
    "cooperative-leave-join": ("cooperative-sticky", [{"at": 9000, "do": "leave", "member": "b"},
                                                      {"at": 15000, "do": "join", "member": "d",
                                                       "assignors": ["cooperative-sticky"], "topics": ["orders"]}]),
    "sticky-crash-restart": ("sticky", [{"at": 9000, "do": "crash", "member": "b"},
                                        {"at": 9500, "do": "restart", "member": "b"}]),
    "range-leave": ("range", [{"at": 9000, "do": "leave", "member": "a"}]),
    "roundrobin-stall": ("roundrobin", [{"at": 9000, "do": "stall", "member": "b", "for_ms": 12000}]),
}


def _violations(report: dict[str, Any]) -> list[str]:
    return sorted({f["invariant"] for f in report["findings"] if f["severity"] == "violation"})


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_correct_run_has_no_violation(name: str, seed: int) -> None:
    assignor, extra = SCENARIOS[name]
    run = system_run.simulate(_scenario(assignor, extra), seed=seed)
    report = check_events(run.events, label=f"{name}-{seed}")
    assert _violations(report) == [], [f["message"] for f in report["findings"]]
    assert report["opportunities"]["single-owner"] > 0


def test_coop_no_withhold_is_caught() -> None:
    assignor, extra = SCENARIOS["cooperative-leave-join"]
    run = system_run.simulate(_scenario(assignor, extra), seed=0, mutants=frozenset({"coop-no-withhold"}))
    assert "revoke-before-assign" in _violations(check_events(run.events))


def test_static_rejoin_rebalances_is_caught() -> None:
    extra = [{"at": 20000, "do": "crash", "member": "b"}, {"at": 21000, "do": "restart", "member": "b"}]
    scenario = _scenario("range", extra, static=True)
    clean = check_events(system_run.simulate(scenario, seed=0).events)
    assert _violations(clean) == []
    assert clean["opportunities"]["static-rejoin"] == 1
    run = system_run.simulate(scenario, seed=0, mutants=frozenset({"static-rejoin-rebalances"}))
    assert "static-rejoin" in _violations(check_events(run.events))
