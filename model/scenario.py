"""Scenarios: what happens to a consumer group, and when, as a JSON document (docs/scenarios.md).

A scenario names the topics and their partition counts, the group settings, a list of timed steps
(members joining, crashing, restarting, stalling, freezing, leaving, changing subscription; partitions being
added; producers appending records; the coordinator moving or failing) and when the run ends::

    {"topics": {"orders": 6},
     "config": {"session_timeout_ms": 10000, "initial_rebalance_delay_ms": 0},
     "steps": [{"at": 0, "do": "join", "member": "a", "topics": ["orders"]},
               {"at": 8000, "do": "crash", "member": "a"}],
     "until": 60000}

:func:`parse` checks a decoded document and turns it into a :class:`Scenario` whose steps are the
transition system's fault actions (``model.system``). Every problem is a :class:`ScenarioError`
naming where it is (``steps[3]``, ``config.session_timeout_ms``) and what is wrong; the first one
found is raised. Member liveness is followed through the steps, so "crash a member that is not
running" is caught here, not at run time. The same format drives the future conformance suite,
so it says what happens, not how a particular client does it.

Records are modelled (``model.consumption``) when the scenario produces any (a ``produce`` step) or
sets any of the delivery settings (:data:`DELIVERY_KEYS`); otherwise the run is about group
membership only, as the proofs see it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from model import consumption as cs
from model.assignors import ASSIGNORS
from model.classic import coordinator as co
from model.classic import member as mb
from model.system import (
    CoordinatorFails,
    CoordinatorMoves,
    Fault,
    MemberCrashes,
    MemberFreezes,
    MemberLeaves,
    MemberRestarts,
    MemberStalls,
    MemberStarts,
    MemberSubscribes,
    PartitionsAdded,
    RecordsProduced,
    SystemConfig,
)

DEFAULT_RUN_AFTER_LAST_STEP_MS = 60000

# Records, positions and commits (model.consumption): any of these turns the record model on.
DELIVERY_KEYS = ("auto_offset_reset", "auto_commit_interval_ms", "max_poll_records", "commit", "commit_on_revoke",
                 "processing", "processing_ms")
CONFIG_KEYS = ("group_id", "session_timeout_ms", "rebalance_timeout_ms", "heartbeat_interval_ms",
               "initial_rebalance_delay_ms", "max_poll_interval_ms", "enable_auto_commit", *DELIVERY_KEYS,
               "brokers", "metadata_max_age_ms")

# action -> (required fields, optional fields), besides "at" and "do"
STEP_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "join": (("member", "topics"), ("assignors", "instance_id")),
    "crash": (("member",), ()),
    "restart": (("member",), ()),
    "stall": (("member", "for_ms"), ()),
    "freeze": (("member", "for_ms"), ()),
    "leave": (("member",), ()),
    "subscribe": (("member", "topics"), ()),
    "add_partitions": (("topic", "count"), ()),
    "produce": (("topic", "records"), ("partition", "every_ms", "until")),
    "move_coordinator": ((), ()),
    "fail_coordinator": (("for_ms",), ()),
}


class ScenarioError(ValueError):
    """A scenario that cannot be run. ``where`` is a path into the document (``steps[3]``)."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where
        self.message = message


@dataclass(frozen=True, slots=True)
class Step:
    at: int
    action: Fault
    index: int  # its position in the document's ``steps``
    repeated: bool = False  # a later firing of a periodic step (``every_ms``)


@dataclass(frozen=True, slots=True)
class Scenario:
    topics: tuple[tuple[str, int], ...]  # sorted by topic
    config: SystemConfig
    steps: tuple[Step, ...]  # in time order (the document's order)
    until: int


# -- small typed readers ----------------------------------------------------------------------------


def _describe(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _int(value: Any, where: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError(where, f"expected an integer, got {_describe(value)}")
    if value < minimum:
        raise ScenarioError(where, f"must be at least {minimum}, got {value}")
    return value


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ScenarioError(where, f"expected a non-empty string, got {_describe(value)}")
    return value


def _distinct_names(value: Any, where: str, what: str,
                    check: Callable[[str, str], None] | None = None) -> tuple[str, ...]:
    """A non-empty list of ``what`` names: each a non-empty string, then each passing ``check``
    (given the name and where it stands), and none listed twice."""
    if not isinstance(value, list) or not value:
        raise ScenarioError(where, f"expected a non-empty list of {what} names")
    names = tuple(_name(v, f"{where}[{i}]") for i, v in enumerate(value))
    if check is not None:
        for i, n in enumerate(names):
            check(n, f"{where}[{i}]")
    if len(set(names)) != len(names):
        article = "an" if what[0] in "aeiou" else "a"
        raise ScenarioError(where, f"lists {article} {what} twice")
    return names


def _topics(value: Any, where: str) -> tuple[str, ...]:
    return _distinct_names(value, where, "topic")


def _member(value: Any, where: str) -> str:
    name = _name(value, where)
    if "#" in name:
        raise ScenarioError(where, f'member name {name!r} contains "#", which separates incarnations')
    return name


def _known_assignor(name: str, where: str) -> None:
    if name not in ASSIGNORS:
        raise ScenarioError(where, f'unknown assignor "{name}"; known: {", ".join(ASSIGNORS)}')


def _assignors(value: Any, where: str) -> tuple[str, ...]:
    names = _distinct_names(value, where, "assignor", _known_assignor)
    try:
        mb.rebalance_protocol(names)
    except ValueError as exc:
        raise ScenarioError(where, str(exc)) from None
    return names


# -- the document ---------------------------------------------------------------------------------


def parse(doc: Any) -> Scenario:
    """Check a decoded scenario document and build the :class:`Scenario`."""
    if not isinstance(doc, Mapping):
        raise ScenarioError("", f"a scenario is a JSON object, got {_describe(doc)}")
    unknown = sorted(set(doc) - {"topics", "config", "steps", "until"})
    if unknown:
        raise ScenarioError(unknown[0], 'unknown field; expected "topics", "config", "steps", "until"')
    topics = _parse_topics(doc.get("topics"))
    config = _parse_config(doc.get("config", {}))
    if "steps" not in doc:
        raise ScenarioError("steps", "missing")
    given_until = None if doc.get("until") is None else _int(doc["until"], "until", minimum=0)
    steps = _parse_steps(doc["steps"], dict(topics), given_until)
    last = max((st.at for st in steps if not st.repeated), default=0)
    until = last + DEFAULT_RUN_AFTER_LAST_STEP_MS if given_until is None else given_until
    if until < last:
        raise ScenarioError("until", f"{until} is before the last step (at {last})")
    if config.delivery is None and any(isinstance(st.action, RecordsProduced) for st in steps):
        config = replace(config, delivery=cs.DeliveryConfig())
    return Scenario(topics=topics, config=config, steps=steps, until=until)


def _parse_topics(value: Any) -> tuple[tuple[str, int], ...]:
    if value is None:
        raise ScenarioError("topics", "missing")
    if not isinstance(value, Mapping):
        raise ScenarioError("topics", "expected an object of topic name -> partition count")
    return tuple(sorted((_name(t, "topics"), _int(n, f"topics.{t}", minimum=1)) for t, n in value.items()))


def _parse_config(value: Any) -> SystemConfig:
    if not isinstance(value, Mapping):
        raise ScenarioError("config", "expected an object")
    for key in value:
        if key not in CONFIG_KEYS:
            raise ScenarioError(f"config.{key}", f"unknown setting; known: {', '.join(CONFIG_KEYS)}")

    group_id = "group" if value.get("group_id") is None else _name(value["group_id"], "config.group_id")
    session = _setting(value, "session_timeout_ms", mb.DEFAULT_SESSION_TIMEOUT_MS, 1)
    heartbeat = _setting(value, "heartbeat_interval_ms", mb.DEFAULT_HEARTBEAT_INTERVAL_MS, 1)
    # The Java consumer has one setting for both (GroupRebalanceConfig: the rebalance timeout is
    # max.poll.interval.ms); either one given alone sets both.
    max_poll = None if value.get("max_poll_interval_ms") is None else \
        _int(value["max_poll_interval_ms"], "config.max_poll_interval_ms", minimum=1)
    rebalance = None if value.get("rebalance_timeout_ms") is None else \
        _int(value["rebalance_timeout_ms"], "config.rebalance_timeout_ms", minimum=1)
    max_poll_ms = max_poll or rebalance or mb.DEFAULT_MAX_POLL_INTERVAL_MS
    rebalance_ms = rebalance or max_poll_ms
    delay = _setting(value, "initial_rebalance_delay_ms", co.CoordinatorConfig().initial_rebalance_delay_ms, 0)
    auto_commit = _flag(value, "enable_auto_commit", True)
    if heartbeat >= session:
        raise ScenarioError("config.heartbeat_interval_ms",
                            f"must be lower than session_timeout_ms ({heartbeat} >= {session}), as the "
                            "consumer requires (Heartbeat's constructor)")
    brokers = _setting(value, "brokers", 3, 1)
    metadata_max_age = _setting(value, "metadata_max_age_ms", mb.DEFAULT_METADATA_MAX_AGE_MS, 1)
    return SystemConfig(metadata_max_age_ms=metadata_max_age, coordinator=co.CoordinatorConfig(group_id=group_id, initial_rebalance_delay_ms=delay),
                        session_timeout_ms=session, rebalance_timeout_ms=rebalance_ms,
                        heartbeat_interval_ms=heartbeat, max_poll_interval_ms=max_poll_ms,
                        auto_commit=auto_commit, delivery=_parse_delivery(value, auto_commit), brokers=brokers)


def _setting(value: Mapping[str, Any], key: str, default: int, minimum: int) -> int:
    """The integer setting ``config.<key>``, or ``default`` when absent or null."""
    return default if value.get(key) is None else _int(value[key], f"config.{key}", minimum=minimum)


def _flag(value: Mapping[str, Any], key: str, default: bool) -> bool:
    """The true/false setting ``config.<key>``, or ``default`` when absent."""
    got = value.get(key, default)
    if not isinstance(got, bool):
        raise ScenarioError(f"config.{key}", f"expected true or false, got {_describe(got)}")
    return got


def _choice(value: Mapping[str, Any], key: str, choices: tuple[str, ...], default: str) -> str:
    got = value.get(key)
    if got is None:
        return default
    if got not in choices:
        raise ScenarioError(f"config.{key}", f"expected one of {', '.join(choices)}, got {_quote(got)}")
    return str(got)


def _parse_delivery(value: Mapping[str, Any], auto_commit: bool) -> cs.DeliveryConfig | None:
    """The record settings (``model.consumption.DeliveryConfig``), or None when none is given."""
    if not any(value.get(k) is not None for k in DELIVERY_KEYS):
        return None
    d = cs.DeliveryConfig()
    commit = _choice(value, "commit", cs.COMMIT_POLICIES, d.commit)
    on_revoke = _flag(value, "commit_on_revoke", False)
    if auto_commit and (commit != "none" or on_revoke):
        key = "commit" if commit != "none" else "commit_on_revoke"
        raise ScenarioError(f"config.{key}", "the application commits only with enable_auto_commit false "
                                             "(with auto-commit on, the consumer commits by itself)")
    return cs.DeliveryConfig(
        auto_offset_reset=_choice(value, "auto_offset_reset", cs.RESET_POLICIES, d.auto_offset_reset),
        auto_commit_interval_ms=_setting(value, "auto_commit_interval_ms", d.auto_commit_interval_ms, 1),
        max_poll_records=_setting(value, "max_poll_records", d.max_poll_records, 1),
        commit=commit, commit_on_revoke=on_revoke,
        processing=_choice(value, "processing", cs.PROCESSING_MODES, d.processing),
        processing_ms=_setting(value, "processing_ms", d.processing_ms, 0))


def _parse_steps(value: Any, topics: dict[str, int], until: int | None) -> tuple[Step, ...]:
    if not isinstance(value, list):
        raise ScenarioError("steps", "expected a list of steps")
    running: set[str] = set()
    started: set[str] = set()
    steps: list[Step] = []
    previous_at = 0
    for i, raw in enumerate(value):
        where = f"steps[{i}]"
        if not isinstance(raw, Mapping):
            raise ScenarioError(where, f"expected an object, got {_describe(raw)}")
        if "do" not in raw:
            raise ScenarioError(where, 'missing "do"')
        do = raw["do"]
        if not isinstance(do, str) or do not in STEP_FIELDS:
            raise ScenarioError(where, f'unknown action {_quote(do)}; known: {", ".join(STEP_FIELDS)}')
        if "at" not in raw:
            raise ScenarioError(where, 'missing "at"')
        at = _int(raw["at"], f"{where}.at", minimum=0)
        if at < previous_at:
            raise ScenarioError(f"{where}.at", f"{at} is before the previous step's time {previous_at}; "
                                "steps are listed in time order")
        previous_at = at
        required, optional = STEP_FIELDS[do]
        for key in raw:
            if key not in ("at", "do", *required, *optional):
                raise ScenarioError(f"{where}.{key}", f'unknown field for "{do}"')
        for key in required:
            if key not in raw:
                raise ScenarioError(where, f'"{do}" needs "{key}"')
        action = _step_action(do, raw, where, running, started, topics)
        steps.append(Step(at, action, i))
        if do == "produce" and raw.get("every_ms") is not None:
            steps.extend(Step(t, action, i, repeated=True) for t in _repeats(raw, where, at, until))
    return tuple(sorted(steps, key=lambda st: st.at))  # stable: equal times keep document order


def _repeats(raw: Mapping[str, Any], where: str, at: int, until: int | None) -> range:
    """The later firings of a periodic producer: every ``every_ms`` after ``at`` up to its own
    ``until``, or the scenario's (which must then be given)."""
    every = _int(raw["every_ms"], f"{where}.every_ms", minimum=1)
    end = until if raw.get("until") is None else _int(raw["until"], f"{where}.until", minimum=at)
    if end is None:
        raise ScenarioError(f"{where}.every_ms", 'a periodic producer needs an "until" (its own or the scenario\'s)')
    if (end - at) // every > 1_000_000:
        raise ScenarioError(f"{where}.every_ms", f"fires more than a million times before {end}")
    return range(at + every, end + 1, every)


def _quote(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else _describe(value)


def _step_action(do: str, raw: Mapping[str, Any], where: str, running: set[str], started: set[str],
                 topics: dict[str, int]) -> Fault:
    if do == "produce":
        topic = _name(raw["topic"], f"{where}.topic")
        if topic not in topics:
            raise ScenarioError(f"{where}.topic", f"no topic {topic} (topics: {', '.join(sorted(topics))})")
        partition = None if raw.get("partition") is None else _int(raw["partition"], f"{where}.partition", minimum=0)
        if partition is not None and partition >= topics[topic]:
            raise ScenarioError(f"{where}.partition", f"topic {topic} has {topics[topic]} partitions here")
        return RecordsProduced(topic, _int(raw["records"], f"{where}.records", minimum=1), partition)
    if do == "move_coordinator":
        return CoordinatorMoves()
    if do == "fail_coordinator":
        return CoordinatorFails(_int(raw["for_ms"], f"{where}.for_ms", minimum=1))
    if do == "add_partitions":
        topic = _name(raw["topic"], f"{where}.topic")
        count = _int(raw["count"], f"{where}.count", minimum=1)
        if count <= topics.get(topic, 0):
            raise ScenarioError(f"{where}.count", f"topic {topic} already has {topics[topic]} partitions; "
                                "a partition count can only grow")
        topics[topic] = count
        return PartitionsAdded(topic, count)
    name = _member(raw["member"], f"{where}.member")
    if do == "join":
        if name in running:
            raise ScenarioError(f"{where}.member", f"member {name} is already running")
        assignors = mb.DEFAULT_ASSIGNORS if raw.get("assignors") is None else \
            _assignors(raw["assignors"], f"{where}.assignors")
        instance_id = None if raw.get("instance_id") is None else _name(raw["instance_id"], f"{where}.instance_id")
        running.add(name)
        started.add(name)
        return MemberStarts(name, _topics(raw["topics"], f"{where}.topics"), assignors, instance_id)
    if do == "restart":
        if name not in started:
            raise ScenarioError(f"{where}.member", f"member {name} has never joined; restart needs a join first")
        running.add(name)
        return MemberRestarts(name)
    if name not in running:
        raise ScenarioError(f"{where}.member", f"member {name} is not running here (not joined yet, crashed or left)")
    if do == "crash":
        running.discard(name)
        return MemberCrashes(name)
    if do == "leave":
        running.discard(name)
        return MemberLeaves(name)
    if do == "stall":
        return MemberStalls(name, _int(raw["for_ms"], f"{where}.for_ms", minimum=1))
    if do == "freeze":
        return MemberFreezes(name, _int(raw["for_ms"], f"{where}.for_ms", minimum=1))
    assert do == "subscribe"
    return MemberSubscribes(name, _topics(raw["topics"], f"{where}.topics"))
