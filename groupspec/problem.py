"""Read an assignment problem (``groupspec assign``'s input, docs/assign.md) into model types.

The format::

    {"strategy": "range" | "roundrobin" | "sticky" | "cooperative-sticky",
     "topics": {"<topic>": <partition count>},
     "members": [{"member_id": "c1", "instance_id": null, "topics": ["t1"],
                  "owned": [{"topic": "t1", "partition": 0}], "generation": 3, "rack": null}]}

``instance_id``, ``owned``, ``generation`` (default -1) and ``rack`` are optional. Every mistake is
reported as one line naming the file, the line of the enclosing JSON object or array, and the JSON
path of the field (``members[2].owned[0].partition: expected an integer``); ``groupspec.cli`` turns
it into exit code 2.

What is *not* a mistake: the claims in ``owned`` may name unknown topics, partitions out of range,
negative partitions, duplicates, or partitions other members claim too. Members send such claims in
real groups and the assignors tolerate them (``model.invariants.assignment.valid_claims`` says which
count); rejecting them here would make those cases untestable. A member may also subscribe to a topic
missing from ``topics``: Kafka skips topics without metadata.
"""

from __future__ import annotations

import bisect
import json
import json.scanner
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from groupspec.errors import InputError
from model.assignors import ASSIGNORS
from model.invariants.assignment import AssignmentProblem
from model.types import Subscription, TopicPartition

# A guard against a typo turning into a hang: the largest problem groupspec assign accepts.
MAX_TOTAL_PARTITIONS = 5_000_000

TOP_FIELDS = ("strategy", "topics", "members")
MEMBER_FIELDS = ("member_id", "instance_id", "topics", "owned", "generation", "rack")
CLAIM_FIELDS = ("topic", "partition")


@dataclass(frozen=True, slots=True)
class ParsedProblem:
    strategy: str
    problem: AssignmentProblem
    source: str


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _LineDecoder(json.JSONDecoder):
    """A JSON decoder that remembers the line on which each object and array starts.

    It runs the pure-Python scanner (``json.scanner.py_make_scanner``), which, unlike the C one,
    calls ``self.parse_object`` / ``self.parse_array``; wrapping them gives every container's
    opening position. Duplicate keys are refused, with the line of their object.
    """

    def __init__(self, source: str) -> None:
        super().__init__(object_pairs_hook=_no_duplicates)
        self.source = source
        self.lines: dict[int, int] = {}
        self._newlines: list[int] = []
        base_object: Callable[..., tuple[Any, int]] = getattr(self, "parse_object")  # noqa: B009 (untyped)
        base_array: Callable[..., tuple[Any, int]] = getattr(self, "parse_array")  # noqa: B009

        def parse_object(s_and_end: tuple[str, int], *args: Any) -> tuple[Any, int]:
            line = self.line_at(s_and_end[1] - 1)
            try:
                value, end = base_object(s_and_end, *args)
            except _DuplicateKey as dup:
                raise InputError(f"duplicate key {json.dumps(dup.key)} in one object", source=source,
                                 line=line) from None
            self.lines[id(value)] = line
            return value, end

        def parse_array(s_and_end: tuple[str, int], scan_once: Any) -> tuple[Any, int]:
            line = self.line_at(s_and_end[1] - 1)
            value, end = base_array(s_and_end, scan_once)
            self.lines[id(value)] = line
            return value, end

        self.parse_object = parse_object
        self.parse_array = parse_array
        self.scan_once = getattr(json.scanner, "py_make_scanner")(self)  # noqa: B009 (not in typeshed)

    def line_at(self, offset: int) -> int:
        return bisect.bisect_left(self._newlines, offset) + 1

    def decode(self, s: str, _w: Any = None) -> Any:
        self._newlines = [i for i, ch in enumerate(s) if ch == "\n"]
        return super().decode(s)


class _Reader:
    """Walks the decoded document; every error names the JSON path and the enclosing line."""

    def __init__(self, source: str, lines: dict[int, int]) -> None:
        self.source = source
        self.lines = lines

    def fail(self, container: Any, path: str, message: str) -> NoReturn:
        raise InputError(f"{path or 'the document'}: {message}", source=self.source, line=self.lines.get(id(container)))

    def obj(self, value: Any, parent: Any, path: str, known: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(parent, path, f"expected an object, got {_kind(value)}")
        unknown = [k for k in value if k not in known]
        if unknown:
            self.fail(value, f"{path}.{unknown[0]}" if path else unknown[0],
                      f"unknown field (known fields: {', '.join(known)})")
        return value

    def required(self, obj: dict[str, Any], key: str, path: str) -> Any:
        if key not in obj:
            self.fail(obj, _join(path, key), "missing required field")
        return obj[key]

    def string(self, value: Any, container: Any, path: str) -> str:
        if not isinstance(value, str):
            self.fail(container, path, f"expected a string, got {_kind(value)}")
        if not value:
            self.fail(container, path, "must not be empty")
        return value

    def optional_string(self, value: Any, container: Any, path: str) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            self.fail(container, path, f"expected a string or null, got {_kind(value)}")
        return self.string(value, container, path)

    def integer(self, value: Any, container: Any, path: str, *, minimum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(container, path, f"expected an integer, got {_kind(value)}")
        if minimum is not None and value < minimum:
            self.fail(container, path, f"must be >= {minimum}, got {value}")
        return value

    def array(self, value: Any, container: Any, path: str) -> list[Any]:
        if not isinstance(value, list):
            self.fail(container, path, f"expected an array, got {_kind(value)}")
        return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def parse(text: str, source: str) -> ParsedProblem:
    """Parse the text of a problem file; ``source`` names it in error messages.

    The C decoder reads the document; only when something is wrong is it read again by the slower
    line-tracking decoder, to name the line of the mistake.
    """
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", source=source, line=exc.lineno) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", source=source) from None
    except _DuplicateKey:
        pass  # located below
    else:
        try:
            return _read(_Reader(source, {}), document)
        except InputError:
            pass  # located below
    decoder = _LineDecoder(source)
    try:
        located = decoder.decode(text)
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", source=source) from None
    return _read(_Reader(source, decoder.lines), located)


def load(path: str) -> ParsedProblem:
    """Read a problem from a file, or from stdin when ``path`` is ``-``."""
    if path == "-":
        source = "<stdin>"
        try:
            text = sys.stdin.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read: {exc}", source=source) from None
    else:
        source = path
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"cannot read: not UTF-8 text ({exc.reason} at byte {exc.start})", source=source) from None
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", source=source) from None
    return parse(text, source)


def _well_formed_claims(claims: list[Any]) -> list[TopicPartition] | None:
    """The claims as topic-partitions when every one is well formed, else None (then each is checked).

    The fast path for the million-claim problems of Kafka's scale tests: one comprehension, no
    per-field calls.
    """
    try:
        out = [TopicPartition(c["topic"], c["partition"]) for c in claims]
    except (TypeError, KeyError):
        return None
    ok = all(type(c) is dict and len(c) == 2 for c in claims) and all(
        type(tp.topic) is str and tp.topic and type(tp.partition) is int for tp in out)
    return out if ok else None


def _read(r: _Reader, document: Any) -> ParsedProblem:
    top = r.obj(document, document, "", TOP_FIELDS)
    strategy = r.string(r.required(top, "strategy", ""), top, "strategy")
    if strategy not in ASSIGNORS:
        r.fail(top, "strategy", f"unknown strategy {json.dumps(strategy)}; known: {', '.join(ASSIGNORS)}")

    topics_value = r.required(top, "topics", "")
    if not isinstance(topics_value, dict):
        r.fail(top, "topics", f"expected an object mapping topic names to partition counts, got {_kind(topics_value)}")
    partitions_per_topic: dict[str, int] = {}
    for name, count in topics_value.items():
        path = f"topics[{json.dumps(name)}]"
        if not name:
            r.fail(topics_value, path, "a topic name must not be empty")
        partitions_per_topic[name] = r.integer(count, topics_value, path, minimum=0)
    total = sum(partitions_per_topic.values())
    if total > MAX_TOTAL_PARTITIONS:
        r.fail(topics_value, "topics", f"{total} partitions in all; groupspec assign takes at most {MAX_TOTAL_PARTITIONS}")

    members_value = r.array(r.required(top, "members", ""), top, "members")
    subscriptions: list[Subscription] = []
    seen_ids: dict[str, int] = {}
    seen_instances: dict[str, int] = {}
    for index, raw in enumerate(members_value):
        path = f"members[{index}]"
        member = r.obj(raw, members_value, path, MEMBER_FIELDS)
        member_id = r.string(r.required(member, "member_id", path), member, f"{path}.member_id")
        if member_id in seen_ids:
            r.fail(member, f"{path}.member_id",
                   f"duplicate member id {json.dumps(member_id)} (also members[{seen_ids[member_id]}])")
        seen_ids[member_id] = index

        instance_id = r.optional_string(member.get("instance_id"), member, f"{path}.instance_id")
        if instance_id is not None:
            if instance_id in seen_instances:
                r.fail(member, f"{path}.instance_id", f"duplicate instance id {json.dumps(instance_id)} "
                       f"(also members[{seen_instances[instance_id]}]); the coordinator fences one of them")
            seen_instances[instance_id] = index

        topics_path = f"{path}.topics"
        topic_list = r.array(r.required(member, "topics", path), member, topics_path)
        topics: list[str] = topic_list
        if not (all(type(t) is str and t for t in topic_list) and len(set(topic_list)) == len(topic_list)):
            topics, seen = [], set()
            for t_index, topic in enumerate(topic_list):
                name = r.string(topic, topic_list, f"{topics_path}[{t_index}]")
                if name in seen:
                    r.fail(topic_list, f"{topics_path}[{t_index}]",
                           f"topic {json.dumps(name)} is listed twice (a subscription is a set)")
                seen.add(name)
                topics.append(name)

        owned_path = f"{path}.owned"
        owned_list = r.array(member.get("owned", []), member, owned_path)
        fast = _well_formed_claims(owned_list)
        owned: list[TopicPartition] = fast if fast is not None else []
        for c_index, raw_claim in enumerate(owned_list if fast is None else ()):
            claim_path = f"{owned_path}[{c_index}]"
            claim = r.obj(raw_claim, owned_list, claim_path, CLAIM_FIELDS)
            topic_name = r.string(r.required(claim, "topic", claim_path), claim, f"{claim_path}.topic")
            number = r.integer(r.required(claim, "partition", claim_path), claim, f"{claim_path}.partition")
            owned.append(TopicPartition(topic_name, number))

        generation_value = member.get("generation")
        generation = -1 if generation_value is None else r.integer(
            generation_value, member, f"{path}.generation", minimum=-1)
        rack = r.optional_string(member.get("rack"), member, f"{path}.rack")
        subscriptions.append(Subscription(member_id, tuple(topics), tuple(owned), generation, instance_id, rack))

    return ParsedProblem(strategy, AssignmentProblem(partitions_per_topic, tuple(subscriptions)), r.source)
