"""Where the model follows Kafka 4.1 more closely than it used to (issue 12, "Model fidelity").

Each test here failed on the model before the fix it names; each states the Kafka behaviour it
holds the model to, with the Java class and method it comes from.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from model import events as ev
from model import system as sy
from model.messages import LeaveGroupRequest
from model.scenario import parse
from tests.model.test_system_support import Outcome, join, run_doc, scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def removed(o: Outcome, member_id_prefix: str) -> list[dict[str, Any]]:
    return [e for e in o.named(ev.COORDINATOR_MEMBER_REMOVED) if e["member_id"].startswith(member_id_prefix)]


# -- 1. one request at a time per connection (SocketServer mutes a connection while a request is parked)


def test_a_leave_group_behind_a_parked_join_group_is_read_only_after_the_join_completes() -> None:
    """b closes while its JoinGroup is parked in the initial rebalance delay. Kafka reads b's
    LeaveGroup only once the JoinGroup is answered (SocketServer keeps the connection muted until
    the response is sent), so generation 1 forms with b in it, and b's leave starts a second
    rebalance."""
    doc = scenario({"t": 4}, [join(0, "a", ["t"], ["range"]), join(0, "b", ["t"], ["range"]),
                              {"at": 1000, "do": "leave", "member": "b"}], 20000, initial_rebalance_delay_ms=3000)
    o = run_doc(doc)
    formed = [e for e in o.named(ev.COORDINATOR_STATE) if e["state"] == "CompletingRebalance"]
    assert formed and formed[0]["generation"] == 1 and len(formed[0]["members"]) == 2
    left = removed(o, "b-")
    assert len(left) == 1 and left[0]["reason"] == "left" and left[0]["timestamp"] >= formed[0]["timestamp"]
    stable = o.named(ev.COORDINATOR_STABLE)
    assert [len(e["members"]) for e in stable][-1] == 1 and stable[-1]["generation"] == 2
    assert not o.failed()


def _start(state: sy.SystemState, config: sy.SystemConfig, name: str, **member: Any) -> sy.SystemState:
    result = sy.step(state, sy.MemberStarts(name, ("t",), ("range",)), config)
    assert result is not None
    state = result[0]
    p = sy.process(state, name)
    assert p is not None and p.member is not None
    cfg = replace(p.config, **member)
    return sy._put_process(state, name, replace(p, config=cfg, member=replace(p.member, config=cfg)))


def _run(state: sy.SystemState, config: sy.SystemConfig, until: int,
         events: list[dict[str, Any]]) -> sy.SystemState:
    """Take the first enabled action until ``until`` (deterministic)."""
    while True:
        actions = sy.enabled(state)
        if not actions or (isinstance(actions[0], sy.ClockAdvances) and actions[0].to > until):
            return state
        result = sy.step(state, actions[0], config)
        assert result is not None
        state = result[0]
        events.extend(result[1])


def test_heartbeats_behind_a_parked_sync_group_expire_the_clients_session_and_it_rejoins() -> None:
    """Follower b's SyncGroup waits for the leader, which stalled before it could read its JoinGroup
    answer; b's heartbeats queue behind the parked SyncGroup and get no answer. After
    session.timeout.ms b's heartbeat thread gives up on the coordinator (HeartbeatThread.run:
    sessionTimeoutExpired -> markCoordinatorUnknown, which disconnects), finds it again and
    rejoins; its JoinGroup carries generation 1 in its subscription, so the coordinator rebalances
    the group before the leader comes back. (The leader's own session is longer, so the coordinator
    does not expire it first.)"""
    config = sy.SystemConfig(coordinator=sy.co.CoordinatorConfig(initial_rebalance_delay_ms=3000),
                             session_timeout_ms=10000, heartbeat_interval_ms=3000, max_poll_interval_ms=60000,
                             rebalance_timeout_ms=60000)
    state = sy.initial_state(config, [("t", 4)])
    state = _start(state, config, "a", session_timeout_ms=45000)
    state = _start(state, config, "b")
    events: list[dict[str, Any]] = []
    state = _run(state, config, 1000, events)
    result = sy.step(state, sy.MemberStalls("a", 40000), config)
    assert result is not None
    state = _run(result[0], config, 40000, events)
    joined = [e for e in events if e["name"] == ev.GROUP_JOINED and e["member"] == "b"]
    assert joined and joined[0]["leader"].startswith("a-")
    rebalances = [e for e in events if e["name"] == ev.COORDINATOR_REBALANCE and e["timestamp"] > joined[0]["timestamp"]]
    assert rebalances, "b never gave up on its parked SyncGroup"
    assert joined[0]["timestamp"] + 10000 <= rebalances[0]["timestamp"] < 41000


# -- 2. the commit before a rebalance is awaited (ConsumerCoordinator.onJoinPrepare)


def test_an_eager_stale_member_waits_for_its_commit_reports_lost_and_rebalances_once() -> None:
    """An eager copy of examples/scenario-static-stall-autocommit.json: a, stalled past its poll
    timeout, comes back with a stale generation. onJoinPrepare waits for its auto-commit, which is
    rejected (ILLEGAL_GENERATION) and resets the generation; the next pass reports everything
    ``partitions_lost`` (not revoked at the stale generation) and sends one JoinGroup, so the group
    rebalances once."""
    doc = json.loads((EXAMPLES / "scenario-static-stall-autocommit.json").read_text(encoding="utf-8"))
    for s in doc["steps"]:
        if "assignors" in s:
            s["assignors"] = ["range"]
    o = run_doc(doc)
    back = 41000 + 19600
    assert not [e for e in o.named(ev.PARTITIONS_REVOKED, "a", since=back)]
    lost = o.named(ev.PARTITIONS_LOST, "a", since=back)
    assert len(lost) == 1 and len(lost[0]["partitions"]) == 6
    assert len(o.named(ev.COORDINATOR_REBALANCE, since=back)) == 1
    assert not o.failed()


def test_close_waits_for_its_commit_and_a_rejected_commit_means_lost_and_no_leave_group() -> None:
    """``close()`` commits synchronously before onLeavePrepare (ConsumerCoordinator.close ->
    maybeAutoCommitOffsetsSync). Here a (dynamic) was stalled through a rebalance that removed it,
    and closes the moment it comes back: its commit is answered UNKNOWN_MEMBER_ID, which resets the
    generation, so onLeavePrepare reports the partitions lost (not revoked) and maybeLeaveGroup
    sends no LeaveGroup (no member id, UNJOINED)."""
    doc = json.loads((EXAMPLES / "scenario-static-stall-autocommit.json").read_text(encoding="utf-8"))
    doc["steps"][0]["instance_id"] = None
    doc["steps"].append({"at": 60600, "do": "leave", "member": "a"})
    o = run_doc(doc, keep_transitions=True)
    assert not o.named(ev.PARTITIONS_REVOKED, "a", since=60600)
    assert len(o.named(ev.PARTITIONS_LOST, "a", since=60600)) == 1
    closing = [after for _, action, after, _ in o.transitions if action == sy.MemberLeaves("a")]
    assert len(closing) == 1
    assert not [r for conn, queue in closing[0].network.requests if conn.startswith("a#")
                for r in queue if isinstance(r, LeaveGroupRequest)]


# -- 3. the auto-commit timer restarts after a rebalance (ConsumerCoordinator.onJoinComplete)


def test_the_periodic_auto_commit_comes_one_interval_after_the_rebalance() -> None:
    doc = scenario({"t": 2}, [join(0, "a", ["t"], ["range"]),
                              {"at": 0, "do": "produce", "topic": "t", "records": 1, "every_ms": 500},
                              join(2000, "b", ["t"], ["range"])],
                   12000, auto_commit_interval_ms=5000)
    o = run_doc(doc)
    synced = o.named(ev.GROUP_SYNCED, "a")
    assert len(synced) >= 2
    rejoined = synced[1]["timestamp"]
    periodic = [e for e in o.named(ev.OFFSETS_COMMITTED, "a", since=rejoined + 1)]
    assert periodic and periodic[0]["timestamp"] >= rejoined + 5000


# -- 4. the leader sees new partitions at its next metadata refresh (metadata.max.age.ms)


def test_added_partitions_reach_the_group_at_the_leaders_next_metadata_refresh() -> None:
    doc = scenario({"t": 2}, [join(0, "a", ["t"], ["range"]), join(0, "b", ["t"], ["range"]),
                              {"at": 10000, "do": "add_partitions", "topic": "t", "count": 4}],
                   400000, metadata_max_age_ms=300000)
    o = run_doc(doc)
    after = o.named(ev.COORDINATOR_REBALANCE, since=10000)
    assert after and after[0]["timestamp"] >= 300000
    assert not o.failed()


def test_metadata_max_age_defaults_to_kafkas_five_minutes() -> None:
    s = parse({"topics": {"t": 1}, "steps": [], "until": 1})
    assert s.config.metadata_max_age_ms == 300000


# -- 5. the heartbeat thread looks for the coordinator before it checks the poll timeout


def test_a_member_stalled_across_a_coordinator_outage_leaves_after_rediscovery() -> None:
    """HeartbeatThread.run handles an unknown coordinator first and checks the poll timeout only once
    it is known again; maybeLeaveGroup sends LeaveGroup only to a known coordinator. So the stalled
    member's LeaveGroup reaches the new coordinator and it is removed as having left."""
    doc = scenario({"t": 2}, [join(0, "a", ["t"], ["range"]), join(0, "b", ["t"], ["range"]),
                              {"at": 5000, "do": "stall", "member": "a", "for_ms": 80000},
                              {"at": 10000, "do": "fail_coordinator", "for_ms": 40000}],
                   90000, max_poll_interval_ms=30000)
    o = run_doc(doc)
    gone = removed(o, "a-")
    assert gone and gone[0]["reason"] == "left" and gone[0]["timestamp"] >= 50000
