"""The scenario documents the real-client tests run: one base and the steps each test adds.

A scenario is the format ``groupspec simulate`` and ``conformance.campaign.run_scenario`` read
(model/scenario.py). These tests share one shape: a topic ``orders``, timings short enough for a run of a
few minutes (a 6 s session, 1 s heartbeats, a 12 s poll interval, no initial rebalance delay), manual
commits with commitSync after each poll (so the delivery rules are judged too), and members joining with
range. Only the steps and the run's length differ, so each test says just those.
"""

from __future__ import annotations

from typing import Any

CONFIG: dict[str, Any] = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000, "max_poll_interval_ms": 12000,
                          "initial_rebalance_delay_ms": 0, "enable_auto_commit": False, "commit": "sync"}


def step(at: int, do: str, member: str, **more: Any) -> dict[str, Any]:
    """A step on one member (``crash``, ``leave``, ``stall``, ``freeze``: ``for_ms`` in ``more``)."""
    return {"at": at, "do": do, "member": member, **more}


def join(at: int, member: str) -> dict[str, Any]:
    """``member`` joins at ``at`` ms, subscribed to ``orders`` with the range assignor."""
    return step(at, "join", member, assignors=["range"], topics=["orders"])


def produce(at: int, records: int = 3) -> dict[str, Any]:
    return {"at": at, "do": "produce", "topic": "orders", "records": records}


def scenario(*steps: dict[str, Any], until: int, partitions: int = 6) -> dict[str, Any]:
    """The document: ``orders`` with ``partitions`` partitions, the shared config, ``steps``, run to ``until``."""
    return {"topics": {"orders": partitions}, "config": dict(CONFIG), "steps": list(steps), "until": until}
