"""Random runs of the whole system with every protocol invariant checked after every step.

A hypothesis state machine drives model/system.py: its rules are the system's own actions (chosen
among the enabled ones) and the faults (start, crash, restart, clean leave, stall, subscription
change, added partitions, records produced, the coordinator moving or failing) on a pool of three
members and two topics, with or without records (and then with one of the commit habits of
``model.consumption``). After every rule the invariant monitor -- the delivery invariants too, with
records -- must have found nothing but warnings and violations the model knows Kafka itself commits
(``known_kafka_gap``). At the end the faults stop, the system runs on by itself, and the group must
settle within the protocol's bound (``converges``).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from model import records as rec
from model import system as sy
from model.classic import coordinator as co
from model.consumption import DeliveryConfig
from model.invariants.protocol import Monitor, convergence_horizon, settled

MEMBERS = ("a", "b", "c")
MAX_STEPS_PER_INSTANT = 5000  # far more than any rebalance of three members needs: a livelock, not work
TOPICS = ("t", "u")
ASSIGNOR_LISTS = (("range",), ("roundrobin",), ("sticky",), ("cooperative-sticky",), ("cooperative-sticky", "range"))
# (enable.auto.commit, records): none, and the commit habits that matter to a handoff.
DELIVERY = (
    (True, None),
    (True, DeliveryConfig(auto_offset_reset="earliest", auto_commit_interval_ms=2000, max_poll_records=3)),
    (False, DeliveryConfig(auto_offset_reset="earliest", commit="sync", commit_on_revoke=True)),
    (False, DeliveryConfig(auto_offset_reset="latest", commit="async", processing="async", processing_ms=1500)),
    (False, DeliveryConfig(auto_offset_reset="earliest", commit="none")),
)


class GroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.config = sy.SystemConfig()
        self.state = sy.initial_state(self.config)
        self.monitor = Monitor(self.config)
        self.assignors: tuple[str, ...] = ("range",)
        self.at_instant = 0  # transitions taken since the clock last moved
        self.events: list[dict[str, Any]] = []

    @initialize(assignors=st.sampled_from(ASSIGNOR_LISTS), delay=st.sampled_from([0, 3000]),
                auto_commit=st.booleans(), delivery=st.sampled_from(DELIVERY))
    def setup(self, assignors: tuple[str, ...], delay: int, auto_commit: bool,
              delivery: tuple[bool, DeliveryConfig | None]) -> None:
        self.assignors = assignors
        records = delivery[1]
        self.config = sy.SystemConfig(coordinator=co.CoordinatorConfig(initial_rebalance_delay_ms=delay),
                                      session_timeout_ms=10000, heartbeat_interval_ms=3000,
                                      rebalance_timeout_ms=20000, max_poll_interval_ms=20000,
                                      auto_commit=auto_commit if records is None else delivery[0],
                                      delivery=records)
        self.state = sy.initial_state(self.config, [("t", 4), ("u", 2)])
        self.monitor = Monitor(self.config)

    def take(self, action: Any) -> bool:
        result = sy.step(self.state, action, self.config)
        if result is None:
            return False
        after, events = result
        self.at_instant = self.at_instant + 1 if after.now == self.state.now else 0
        assert self.at_instant < MAX_STEPS_PER_INSTANT, f"time does not advance at {after.now} ms ({action})"
        self.monitor.observe(self.state, action, after, events)
        self.events.extend(events)
        self.state = after
        return True

    @rule(choices=st.lists(st.integers(min_value=0, max_value=15), min_size=1, max_size=120))
    def system_runs(self, choices: list[int]) -> None:
        for choice in choices:
            actions = sy.enabled(self.state)
            if not actions:
                return
            self.take(actions[choice % len(actions)])

    @rule(ms=st.sampled_from([1000, 10000, 40000]))
    def runs_for(self, ms: int) -> None:
        """The system runs by itself for a while (first enabled action each time)."""
        end = self.state.now + ms
        while True:
            actions = sy.enabled(self.state)
            if not actions or (isinstance(actions[0], sy.ClockAdvances) and actions[0].to > end):
                return
            self.take(actions[0])

    def running(self, index: int) -> str | None:
        names = [m.name for m in sy.running(self.state)]
        return names[index % len(names)] if names else None

    @rule(index=st.integers(min_value=0, max_value=2), topics=st.sets(st.sampled_from(TOPICS), min_size=1),
          static=st.booleans())
    def start(self, index: int, topics: set[str], static: bool) -> None:
        down = [n for n in MEMBERS if sy.running_member(self.state, n) is None]
        if down:
            member = down[index % len(down)]
            self.take(sy.MemberStarts(member, tuple(sorted(topics)), self.assignors,
                                      f"{member}-i" if static else None))

    @rule(index=st.integers(min_value=0, max_value=2))
    def crash(self, index: int) -> None:
        member = self.running(index)
        if member is not None:
            self.take(sy.MemberCrashes(member))

    @rule(index=st.integers(min_value=0, max_value=2))
    def restart(self, index: int) -> None:
        known = [n for n, _ in self.state.processes]
        if known:
            self.take(sy.MemberRestarts(known[index % len(known)]))

    @rule(index=st.integers(min_value=0, max_value=2))
    def leave(self, index: int) -> None:
        member = self.running(index)
        if member is not None:
            self.take(sy.MemberLeaves(member))

    @rule(index=st.integers(min_value=0, max_value=2), for_ms=st.sampled_from([500, 5000, 15000, 25000]))
    def stall(self, index: int, for_ms: int) -> None:
        member = self.running(index)
        if member is not None:
            self.take(sy.MemberStalls(member, for_ms))

    @rule(index=st.integers(min_value=0, max_value=2), topics=st.sets(st.sampled_from(TOPICS), min_size=1))
    def subscribe(self, index: int, topics: set[str]) -> None:
        member = self.running(index)
        if member is not None:
            self.take(sy.MemberSubscribes(member, tuple(sorted(topics))))

    @rule(topic=st.sampled_from(TOPICS), more=st.integers(min_value=1, max_value=2))
    def add_partitions(self, topic: str, more: int) -> None:
        count = dict(self.state.metadata).get(topic, 0)
        if count < 8:
            self.take(sy.PartitionsAdded(topic, count + more))

    @rule(topic=st.sampled_from(TOPICS), count=st.integers(min_value=1, max_value=7))
    def produce(self, topic: str, count: int) -> None:
        self.take(sy.RecordsProduced(topic, count))

    @rule()
    def coordinator_moves(self) -> None:
        self.take(sy.CoordinatorMoves())

    @rule(for_ms=st.sampled_from([200, 4000, 15000]))
    def coordinator_fails(self, for_ms: int) -> None:
        self.take(sy.CoordinatorFails(for_ms))

    @invariant()
    def only_warnings_and_known_kafka_gaps(self) -> None:
        unexpected = [v for v in self.monitor.failed() if v.known_kafka_gap is None]
        assert not unexpected, "\n".join(f"{v.invariant} at {v.time}: {v.message}" for v in unexpected)

    def teardown(self) -> None:
        # The faults stop: the system runs by itself, and must settle within the protocol's bound.
        horizon = self.state.now + convergence_horizon(self.config) + 1
        while self.state.now <= horizon:
            actions = sy.enabled(self.state)
            if not actions:
                break
            self.take(actions[0])
        self.monitor.finish(self.state)
        unexpected = [v for v in self.monitor.failed() if v.known_kafka_gap is None]
        assert not unexpected, "\n".join(f"{v.invariant} at {v.time}: {v.message}" for v in unexpected)
        assert settled(self.state) or self.monitor.settled_since_disturbance
        d = self.config.delivery
        if d is not None and d.auto_offset_reset == "earliest" and not (self.config.auto_commit and d.processing == "async"):
            # At least once, end to end: whatever happened, no record below what the group read or
            # committed went unprocessed.
            lost = {str(tp): pr.lost for tp, pr in rec.summarize(self.events, self.state.log).items() if pr.lost}
            assert not lost, f"records lost: {lost}"


TestGroupMachine = GroupMachine.TestCase
TestGroupMachine.settings = settings(max_examples=150, stateful_step_count=50, deadline=None,
                                     suppress_health_check=[HealthCheck.too_slow])
