"""Hypothesis strategies over the scenario format (docs/scenarios.md), for conformance campaigns.

:func:`scenarios` draws a scenario document that ``groupspec simulate`` accepts as it is: a group of
three or four members joining one after another with one assignor (the *strategy* of the campaign
cell), then one to four events drawn from clean leaves, crashes (SIGKILL), restarts, stalls (the
application stops polling; short, or past ``max_poll_interval_ms``), freezes (the whole process stops,
SIGSTOP / SIGCONT; within the session, or past ``session_timeout_ms`` but within
``max_poll_interval_ms``), subscription changes, a new
topic, records produced, coordinator moves and a failed coordinator broker (down, then up), with a
commit policy (auto-commit, commitSync after each poll, or none). Which client runs which member is
not part of the document (:func:`conformance.real_run.member_clients` deals the ``--clients`` list);
a mixed group is a run with several clients.

Steps are spaced :data:`SPACING_MS` apart so that the model, too, settles between steps (the real
run waits for quiet, :mod:`conformance.real_run`): longer than a session timeout plus a stall past
``max.poll.interval.ms``. Member liveness is followed while drawing, so every step is legal.

:func:`draw` makes a campaign: ``n`` documents from the strategy under ``@seed(seed)``, generation
phase only (no shrinking of real runs), no example database: the same seed and hypothesis version
give the same campaign.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

SPACING_MS = 30000
CONFIG = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000, "max_poll_interval_ms": 12000,
          "initial_rebalance_delay_ms": 0}
STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
# KIP-848's consumer protocol as a strategy of the matrix: the coordinator assigns (range on both
# coordinators, the one the mock computes), and the same scenarios run (conformance/kip848.py).
CONSUMER_PROTOCOL = "consumer-protocol"
CONSUMER_PROTOCOL_ASSIGNOR = "range"
EVENTS = ("leave", "crash", "restart", "stall", "freeze", "subscribe", "new_topic", "produce", "move_coordinator",
          "fail_coordinator", "rejoin")
MEMBERS = ("a", "b", "c", "d")


@st.composite
def scenarios(draw: Any, strategy: str | None = None, events: tuple[str, ...] = EVENTS) -> dict[str, Any]:
    """One scenario document; ``strategy`` fixes the assignor every member offers (``consumer-protocol``:
    the coordinator's range assignor, asked for by every member)."""
    assignor = (CONSUMER_PROTOCOL_ASSIGNOR if strategy == CONSUMER_PROTOCOL else strategy) or draw(
        st.sampled_from(STRATEGIES))
    partitions = draw(st.integers(min_value=3, max_value=8))
    topics = {"orders": partitions}
    config: dict[str, Any] = dict(CONFIG)
    policy = draw(st.sampled_from(("auto", "sync", "none")))
    if policy == "auto":
        config["enable_auto_commit"] = True
    else:
        config["enable_auto_commit"] = False
        config["commit"] = policy
    n = draw(st.integers(min_value=3, max_value=4))
    members = list(MEMBERS[:n])
    steps: list[dict[str, Any]] = []
    at = 0
    running: list[str] = []
    stopped: list[str] = []
    subs: dict[str, list[str]] = {}
    for m in members:
        steps.append({"at": at, "do": "join", "member": m, "assignors": [assignor], "topics": ["orders"]})
        subs[m] = ["orders"]
        running.append(m)
        at += SPACING_MS
    if draw(st.booleans()):
        steps.append({"at": at - SPACING_MS // 2, "do": "produce", "topic": "orders", "records": 5})
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        choices = [e for e in events if _possible(e, running, stopped, topics)]
        if not choices:
            break
        event = draw(st.sampled_from(choices))
        step: dict[str, Any] = {"at": at, "do": event}
        if event in ("leave", "crash", "restart", "stall", "freeze", "subscribe"):
            m = draw(st.sampled_from(sorted(running)))
            step["member"] = m
            if event in ("leave", "crash"):
                running.remove(m)
                stopped.append(m)
            elif event == "stall":
                step["for_ms"] = draw(st.sampled_from((3000, 16000)))  # within / past max.poll.interval.ms
            elif event == "freeze":
                # Within the session / past it (the member is expired while frozen) but within max.poll.
                step["for_ms"] = draw(st.sampled_from((3000, 9000)))
            elif event == "subscribe":
                new = [t for t in sorted(topics) if t not in subs[m]]
                subs[m] = (subs[m] + new[:1]) if new else ["orders"]
                step["topics"] = sorted(subs[m])
        elif event == "rejoin":
            m = draw(st.sampled_from(sorted(stopped)))
            stopped.remove(m)
            running.append(m)
            subs[m] = ["orders"]
            step = {"at": at, "do": "join", "member": m, "assignors": [assignor], "topics": ["orders"]}
        elif event == "new_topic":
            name = f"audit{len(topics)}"
            step = {"at": at, "do": "add_partitions", "topic": name, "count": draw(st.integers(1, 4))}
            topics_after = dict(topics)
            topics_after[name] = step["count"]
            topics.clear()
            topics.update(topics_after)
        elif event == "produce":
            step.update({"topic": "orders", "records": draw(st.integers(1, 10))})
        elif event == "fail_coordinator":
            step["for_ms"] = 4000
        steps.append(step)
        at += SPACING_MS
    first_topics = {"orders": partitions}
    return {"topics": first_topics, "config": config, "steps": steps, "until": at}


def _possible(event: str, running: list[str], stopped: list[str], topics: dict[str, int]) -> bool:
    if event in ("leave", "crash", "restart", "stall", "freeze", "subscribe"):
        return bool(running) and (event not in ("leave", "crash") or len(running) > 1)
    if event == "rejoin":
        return bool(stopped)
    if event == "new_topic":
        return len(topics) < 3
    return True


def kind(doc: dict[str, Any]) -> str:
    """The kind of a scenario for the report's matrix: its first step that is not a join or produce."""
    for step in doc["steps"]:
        if step["do"] not in ("join", "produce"):
            if step["do"] == "stall" and step["for_ms"] > doc["config"].get("max_poll_interval_ms", 300000):
                return "stall-past-max-poll"
            if step["do"] == "freeze" and step["for_ms"] > doc["config"].get("session_timeout_ms", 45000):
                return "freeze-past-session"
            return str(step["do"])
    return "joins-only"


def draw(seed_value: int, n: int, strategy: str | None = None, events: tuple[str, ...] = EVENTS) -> list[dict[str, Any]]:
    """``n`` scenario documents drawn from :func:`scenarios` under ``seed_value`` (reproducible).

    Hypothesis's first examples are its simplest, so a small campaign would be mostly joins and a
    leave: ``10 n`` (at least 40) are drawn and ``n`` picked round-robin over their kinds (:func:`kind`),
    in order of first appearance, so that even a short campaign meets crashes, stalls, restarts,
    subscription changes and coordinator faults."""
    pool: list[dict[str, Any]] = []

    @settings(max_examples=max(n * 10, 40), database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @seed(seed_value)
    @given(scenarios(strategy, events))
    def collect(doc: dict[str, Any]) -> None:
        if doc not in pool:
            pool.append(doc)

    collect()
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for doc in pool:
        by_kind.setdefault(kind(doc), []).append(doc)
    out: list[dict[str, Any]] = []
    while len(out) < n and any(by_kind.values()):
        for docs in by_kind.values():
            if docs and len(out) < n:
                out.append(docs.pop(0))
    return out
