"""Per member, the model's member replayed on the real coordinator's answers (conformance/member_replay.py).

Hand-made wire records (what conformance/group_wire.py writes) show each rule failing and holding;
two recorded real runs (tests/conformance/runs/, from campaigns on the mock) show the replay on real
clients: what agrees stays quiet, what a registered finding describes is classified so, and only that.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance import compare as cmp
from conformance import findings
from conformance.member_replay import commits, replay_member

RUNS = Path(__file__).with_name("runs")
VERSIONS = {"confluent-kafka": "2.16.1", "kafka-python": "3.0.12", "aiokafka": "0.14.0"}
META = (("orders", 3),)


def tps(*ps: int) -> list[dict[str, Any]]:
    return [{"topic": "orders", "partition": p} for p in ps]


class Wire:
    """One member's requests and answers, in order, with its trace beside."""

    def __init__(self, name: str = "b#1", protocol: str = "eager") -> None:
        self.name, self.protocol = name, protocol
        self.pairs: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
        self.events: list[dict[str, Any]] = [{"name": "startup_complete", "timestamp": 0, "member": name}]
        self.t = 0

    def _tick(self) -> int:
        self.t += 10
        return self.t

    def send(self, api: str, answer: dict[str, Any] | None, **fields: Any) -> None:
        t = self._tick()
        req = {"timestamp": t, "kind": "request", "api": api, "client_id": self.name, **fields}
        resp = None if answer is None else {"timestamp": self._tick(), "kind": "response", "api": api, **answer}
        self.pairs.append((req, resp))

    def join(self, member_id: str = "", generation: int = 2, error: str = "NONE", gen_claim: int | None = None) -> None:
        self.send("JoinGroup", {"error": error, "generation": generation, "protocol": "range", "member_id": "m2",
                                "leader": "m1"}, member_id=member_id,
                  protocols=[{"name": "range", "generation": gen_claim}])

    def sync(self, *ps: int, error: str = "NONE") -> None:
        self.send("SyncGroup", {"error": error, "assignment": {"partitions": tps(*ps)}})

    def heartbeat(self, error: str = "NONE") -> None:
        self.send("Heartbeat", {"error": error})

    def event(self, name: str, *ps: int) -> None:
        self.events.append({"name": name, "timestamp": self._tick(), "member": self.name, "protocol": self.protocol,
                            "partitions": tps(*ps)})

    def replay(self, client: str = "kafka-python", assignors: tuple[str, ...] = ("range",),
               stop: tuple[int, str] | None = None) -> Any:
        return replay_member(self.name, client, assignors, ("orders",), META, self.pairs, self.events, [], stop)


def first_generation(w: Wire, *ps: int) -> None:
    w.join()
    w.sync(*ps)
    w.event("partitions_assigned", *ps)


def test_an_eager_member_that_revokes_before_it_rejoins_agrees() -> None:
    w = Wire()
    first_generation(w, 0, 1)
    w.heartbeat("REBALANCE_IN_PROGRESS")
    w.event("partitions_revoked", 0, 1)
    w.join(member_id="m2", generation=3)
    w.sync(0)
    w.event("partitions_assigned", 0)
    out = w.replay()
    assert not out.found and out.compared >= 3


def test_an_eager_member_that_keeps_partitions_when_it_rejoins_diverges() -> None:
    w = Wire()
    first_generation(w, 0, 1)
    w.heartbeat("REBALANCE_IN_PROGRESS")
    w.join(member_id="m2", generation=3)  # no revoke before it
    kinds = {(f.kind, f.detail) for f in w.replay().found}
    assert ("revoke-before-rejoin", "eager") in kinds


def test_after_illegal_generation_everything_owned_is_lost_and_the_member_id_kept() -> None:
    w = Wire()
    first_generation(w, 0, 1)
    w.heartbeat("ILLEGAL_GENERATION")
    w.event("partitions_lost", 0, 1)
    w.join(member_id="m2", generation=3)  # KAFKA-13419: the member id survives ILLEGAL_GENERATION
    assert not w.replay().found
    revoked = Wire()
    first_generation(revoked, 0, 1)
    revoked.heartbeat("ILLEGAL_GENERATION")
    revoked.event("partitions_revoked", 0, 1)
    revoked.join(member_id="m2", generation=3)
    assert [(f.kind, f.detail) for f in revoked.replay().found] == [("callbacks", "revoked where the model loses")]
    # aiokafka has no on_partitions_lost: the same trace is unchecked for it, never a divergence
    out = revoked.replay(client="aiokafka")
    assert not out.found and any("on_partitions_lost" in u for u in out.unchecked)


def test_after_unknown_member_id_the_member_rejoins_without_its_id() -> None:
    w = Wire()
    first_generation(w, 0, 1)
    w.heartbeat("UNKNOWN_MEMBER_ID")
    w.event("partitions_lost", 0, 1)
    w.join(member_id="m2", generation=3)  # kept an id the coordinator no longer knows
    assert [(f.kind, f.detail) for f in w.replay().found] == [("rejoin-identity", "member id")]


def test_a_rejoin_nothing_asked_for_is_unexpected() -> None:
    w = Wire()
    first_generation(w, 0, 1)
    w.heartbeat()
    w.join(member_id="m2", generation=3)
    out = w.replay()
    assert [(f.kind, f.detail) for f in out.found][:1] == [("unexpected-rejoin", "after a successful SyncGroup")]


def test_a_cooperative_member_revokes_exactly_owned_minus_assigned_then_rejoins() -> None:
    def run(revoked: tuple[int, ...]) -> Any:
        w = Wire(protocol="cooperative")
        w.send("JoinGroup", {"error": "NONE", "generation": 2, "protocol": "cooperative-sticky", "member_id": "m2",
                             "leader": "m1"}, member_id="", protocols=[{"name": "cooperative-sticky"}])
        w.sync(0, 1, 2)
        w.event("partitions_assigned", 0, 1, 2)
        w.heartbeat("REBALANCE_IN_PROGRESS")
        w.send("JoinGroup", {"error": "NONE", "generation": 3, "protocol": "cooperative-sticky", "member_id": "m2",
                             "leader": "m1"}, member_id="m2", protocols=[{"name": "cooperative-sticky"}])
        w.sync(0)
        w.event("partitions_revoked", *revoked)
        w.send("JoinGroup", {"error": "NONE", "generation": 4, "protocol": "cooperative-sticky", "member_id": "m2",
                             "leader": "m1"}, member_id="m2", protocols=[{"name": "cooperative-sticky"}])
        return w.replay(client="confluent-kafka", assignors=("cooperative-sticky",))
    assert not run((1, 2)).found
    assert [(f.kind, f.detail) for f in run((2,)).found] == [("callbacks", "other callbacks")]


def test_a_close_revokes_what_the_member_owns() -> None:
    w = Wire()
    first_generation(w, 0, 1)
    stop = w.t + 5
    w.event("partitions_revoked", 0, 1)
    w.send("LeaveGroup", {"error": "NONE"})
    assert not w.replay(stop=(stop, "leave")).found
    silent = Wire()
    first_generation(silent, 0, 1)
    stop = silent.t + 5
    silent.send("LeaveGroup", {"error": "NONE"})
    assert [(f.kind, f.detail) for f in silent.replay(stop=(stop, "leave")).found] == \
        [("callbacks", "no callback at its close")]


def test_commits_on_revoke_follow_the_policy() -> None:
    consumed = {"name": "records_consumed", "timestamp": 15, "protocol": "eager",
                "partitions": [{"topic": "orders", "partition": 0, "minOffset": 0, "maxOffset": 4}]}
    revoke = {"name": "partitions_revoked", "timestamp": 30, "protocol": "eager", "partitions": tps(0)}
    join = ({"timestamp": 40, "api": "JoinGroup"}, None)
    commit = ({"timestamp": 35, "api": "OffsetCommit", "offsets": [{"topic": "orders", "partition": 0, "offset": 5}]},
              None)
    assert commits("b#1", "auto", [commit, join], [consumed, revoke], None) == ([], [])
    found, _ = commits("b#1", "auto", [join], [consumed, revoke], None)
    assert [f.detail for f in found] == ["no commit before revoking it"]
    found, _ = commits("b#1", "none", [commit, join], [consumed, revoke], None)
    assert [f.detail for f in found] == ["committed under the none policy"]
    assert commits("b#1", "sync", [join], [consumed, revoke], None)[1]  # unchecked, with why


def recorded(name: str) -> cmp.Comparison:
    """The comparison of a recorded real run, as conformance.campaign.run_scenario makes it."""
    d = RUNS / name
    doc = json.loads((d / "scenario.json").read_text())
    wire = [json.loads(line) for line in (d / "group-wire.jsonl").read_text().splitlines()]
    timeline = json.loads((d / "timeline.json").read_text())
    members = json.loads((d / "members.json").read_text())["members"]
    paths = sorted(d.glob("*#*.jsonl"))
    traces = cmp.read_traces(paths)
    logs = {p.stem: p.with_suffix(".log").read_text() for p in paths}
    c = cmp.Comparison()
    unexpected = cmp.member_replays(wire, traces, doc, timeline, members, c)
    cmp.members_that_died(traces, logs, c, members)
    cmp.rebalances_per_change(wire, timeline, False, c, unexpected, members, cmp.deaths(traces, logs))
    cmp.assignor_rounds(wire, [(0, doc["topics"])], members, c)
    return c


def test_a_real_kafka_python_run_shows_its_two_registered_bugs_and_nothing_else() -> None:
    c = recorded("kafka-python-died-and-rejoined")
    assert c.reactions > 10 and c.rounds >= 3
    assert findings.classify(c.differences, VERSIONS) == "known-finding"
    assert {d.known["finding"] for d in c.differences if d.known} == {
        "kafka-python-join-task-replaced", "kafka-python-poll-raises-on-broker-down"}
    assert all(d.clients == ["kafka-python"] for d in c.differences)


def test_a_known_finding_is_matched_only_on_its_signature() -> None:
    c = recorded("kafka-python-died-and-rejoined")
    assert findings.classify(c.differences, {**VERSIONS, "kafka-python": "3.0.13"}) == "divergence"  # another release
    died = next(d for d in c.differences if d.kind == "client-died")
    died.detail = "KafkaTimeoutError()"  # the same client dying of something else is new
    assert findings.classify([died], VERSIONS) == "divergence" and died.known is None


def test_a_release_in_its_own_environment_is_matched_on_its_own_version() -> None:
    # ``--client kafka-python==X`` labels the member with the release; its version is what that
    # environment's driver reported, not the installed kafka-python's
    for label, version, verdict in (("kafka-python==3.0.12", "3.0.12 (own environment)", "known-finding"),
                                    ("kafka-python==2.2.15", "2.2.15 (own environment)", "divergence")):
        c = recorded("kafka-python-died-and-rejoined")
        for d in c.differences:
            d.clients = [label]
        assert findings.classify(c.differences, {**VERSIONS, "kafka-python": "9.9.9", label: version}) == verdict


def test_a_real_mixed_group_agrees_but_for_aiokafkas_close() -> None:
    c = recorded("mixed-aiokafka-close")
    assert c.reactions > 10
    assert findings.classify(c.differences, VERSIONS) == "known-finding"
    assert [(d.known or {}).get("finding") for d in c.differences] == ["aiokafka-no-revoke-on-close"]


def test_the_report_shows_known_findings_apart_from_divergences() -> None:
    from conformance import campaign
    from groupspec.conform_report import document, summary
    from groupspec.render import to_html, to_markdown

    c = recorded("mixed-aiokafka-close")
    verdict = findings.classify(c.differences, VERSIONS)
    known = campaign.RunRecord(0, "s.json", "range", "leave", ["confluent-kafka", "kafka-python", "aiokafka"], {},
                               "aiokafka 0.14.0", verdict, "groupspec conform --scenario s.json",
                               comparison=c.to_json())
    fresh = cmp.Comparison(differences=[cmp.Difference("reaction", "callbacks", "b#1 did something new",
                                                       kind="callbacks", detail="other callbacks",
                                                       clients=["kafka-python"])])
    assert findings.classify(fresh.differences, VERSIONS) == "divergence"
    new = campaign.RunRecord(1, "t.json", "range", "leave", ["kafka-python"], {}, "kafka-python 3.0.12",
                             "divergence", "groupspec conform --scenario t.json", comparison=fresh.to_json())
    data = campaign.document([known, new], findings.load(), seed=1, cluster="mock", versions=VERSIONS)
    assert data["counts"]["known-finding"] == 1 and data["counts"]["divergence"] == 1
    assert [r["index"] for r in data["known"]] == [0] and [r["index"] for r in data["divergences"]] == [1]
    md = to_markdown(document(data))
    known_section = md[md.index("Known findings met"):]
    assert "aiokafka-no-revoke-on-close" in known_section and "aiokafka 0.14.0" in known_section
    assert "did something new" in md[md.index("## Divergences"):md.index("Known findings met")]
    assert "known finding" in to_html(document(data))
    text = summary(data)
    assert "known finding run 0" in text and "DIVERGENCE run 1" in text and "something new" in text


def test_aiokafka_drops_its_member_id_on_illegal_generation() -> None:
    # A recorded run: aiokafka's SyncGroup answered ILLEGAL_GENERATION, and it rejoins with an empty member
    # id where Java (and the model's member) keeps its id; nothing else in the run is new.
    c = recorded("aiokafka-sync-illegal-generation-resets-id")
    reset = [d for d in c.differences if d.kind == "rejoin-identity"]
    assert [(d.detail, d.clients) for d in reset] == [("member id reset", ["aiokafka"])]
    assert reset[0].evidence["real"] == "" and reset[0].evidence["model"] == "0x7fdfb8009900"
    assert findings.classify(c.differences, VERSIONS) == "known-finding"
    assert reset[0].known is not None and reset[0].known["finding"] == "aiokafka-illegal-generation-resets-member-id"


def test_an_assignment_answered_while_the_member_closes_is_not_held_against_it() -> None:
    """A recorded Kafka 4.1.1 run (Java and librdkafka, range; the end of the run): b's close started a
    rebalance, c#2 (Java) got its SyncGroup answer after the runner had asked it to close, and left without
    applying it (AbstractCoordinator.close runs no onJoinComplete). That is timing, not the protocol: it
    was a false divergence ("other callbacks") and is now unchecked with why; everything else is compared."""
    c = recorded("java-sync-answered-during-close")
    assert c.differences == []
    assert any(u.startswith("c#2: its SyncGroup answer at 1795652484421 came after it was asked to close")
               for u in c.unchecked)
    assert c.reactions > 40 and c.rounds >= 7
