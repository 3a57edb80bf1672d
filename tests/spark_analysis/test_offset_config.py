"""A member's offset settings: the corpus carries across a move of groups exactly what the checker accepts.

The checker refuses an event naming a setting it does not accept (``traces.checker.refuse_bad_context``: a
``bad-field`` skip); the corpus writes a member's last accepted settings on its first row in a new group
(``corpus._MemberGroups``), where the job's no-gap rule reads the reset policy. Both read one table,
``traces.delivery.OFFSET_CONFIG``; this runs the real checker and the real corpus writer on the same trace
for each value, so a reader that stops using the table (or a table the two read apart) shows here. No Spark.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from spark_analysis import corpus
from tests.traces.support import ev, tps, write_jsonl
from tests.traces.support import run as check_paths

# values each setting may be given in a trace: some the checker accepts, some not (wrong type or range, and
# values Python cannot hash, which a membership test in a set would choke on)
CANDIDATES: dict[str, list[Any]] = {
    "auto_offset_reset": ["earliest", "latest", "none", "smallest", "", 0, True, ["earliest"], {"a": 1}],
    "enable_auto_commit": [True, False, "true", 1, 0, [True]],
    "auto_commit_interval_ms": [0, 5000, -1, 5000.0, "5000", True, [5000]],
}
CASES = [(key, value) for key, values in CANDIDATES.items() for value in values]


def _trace(tmp_path: Path, key: str, value: Any) -> Path:
    # c1 names the setting in the default group, then its assignment names group g: the checker moves it there
    # (Checker._member) and the corpus writes the g row with what c1 said before
    return write_jsonl(tmp_path / "c1.jsonl", [ev("startup_complete", 1000, **{key: value}),
                                               ev("partitions_assigned", 2000, group="g", partitions=tps(0))])


@pytest.mark.parametrize(("key", "value"), CASES, ids=[f"{k}={v!r}" for k, v in CASES])
def test_the_corpus_carries_a_setting_exactly_when_the_checker_accepts_it(tmp_path: Path, key: str,
                                                                         value: Any) -> None:
    path = _trace(tmp_path, key, value)
    skipped = check_paths(path)["input"]["skipped_examples"]
    accepted = not skipped
    if not accepted:  # refused with the field named, not by an error of another kind
        assert [s["reason"] for s in skipped] == ["bad-field"] and f"{key} is not " in skipped[0]["detail"], skipped
    corpus.from_traces([str(path)], tmp_path / "corpus", progress=None)
    rows = pq.read_table(tmp_path / "corpus" / "events").to_pylist()
    moved = [r for r in rows if r["group"] == "g" and r["name"] == "partitions_assigned"]
    assert len(moved) == 1
    assert moved[0][key] == (value if accepted else None)


def test_the_candidates_hold_values_of_both_kinds() -> None:
    # the test above can fail either way only if the checker accepts some candidates of each setting and not others
    from traces.delivery import OFFSET_CONFIG

    for key, values in CANDIDATES.items():
        valid = OFFSET_CONFIG[key][0]
        assert {bool(valid(v)) for v in values} == {True, False}, key


# per setting: two values the checker accepts (the second falsy where the type has one, which a truth test in place of
# the table's would drop) and one it refuses; and the checker's Member attribute that holds it
HISTORIES = {"auto_offset_reset": ("earliest", "latest", "smallest", "auto_offset_reset"),
             "enable_auto_commit": (True, False, "true", "auto_commit"),
             "auto_commit_interval_ms": (5000, 0, -1, "auto_commit_interval_ms")}


def _histories(key: str) -> dict[str, list[dict[str, Any]]]:
    """What c1 says of ``key`` before its assignment naming group g moves it there (the last event of each)."""
    first, second, refused, _ = HISTORIES[key]
    moving = {"group": "g", "partitions": tps(0)}
    return {
        "last value": [ev("startup_complete", 1000, **{key: first}), ev("group_joined", 1500, **{key: second}),
                       ev("partitions_assigned", 2000, **moving)],
        "refused line": [ev("startup_complete", 1000, **{key: first}), ev("group_joined", 1500, **{key: refused}),
                         ev("partitions_assigned", 2000, **moving)],
        "the row's own": [ev("startup_complete", 1000, **{key: first}),
                          ev("partitions_assigned", 2000, **moving, **{key: second})],
        "across a restart": [ev("startup_complete", 1000, **{key: second}), ev("startup_complete", 1500),
                             ev("partitions_assigned", 2000, **moving)],
    }


HISTORY_CASES = [(key, story) for key in HISTORIES for story in _histories(key)]


@pytest.mark.parametrize(("key", "story"), HISTORY_CASES, ids=[f"{k}-{s}" for k, s in HISTORY_CASES])
def test_the_moved_row_holds_the_setting_the_checker_holds_there(tmp_path: Path, key: str, story: str) -> None:
    """The corpus's carried path (``corpus._Context.carried``, ``update``) against the checker's member state at the
    move: the last accepted value, not a refused one, the row's own over a carried one, kept across a restart."""
    from traces.checker import Checker
    from traces.schema import InputStats, Source
    from traces.state import CheckConfig

    events = _histories(key)[story]
    path = write_jsonl(tmp_path / "c1.jsonl", events)
    # the checker's Member after the trace, whose last event is the one that moves c1: what it holds there
    source = Source(index=0, path=path, label=str(path), format="groupspec", member="c1")
    checker = Checker([source], CheckConfig(), InputStats())
    checker.run((e["timestamp"], 0, n, n, e) for n, e in enumerate(events, start=1))
    member = checker.members["c1"]
    assert member.group == "g"
    held = getattr(member, HISTORIES[key][3])
    assert held is not None
    corpus.from_traces([str(path)], tmp_path / "corpus", progress=None)
    rows = pq.read_table(tmp_path / "corpus" / "events").to_pylist()
    moved = [r for r in rows if r["group"] == "g"]
    assert len(moved) == 1 and moved[0]["moved_from"] == "default"
    assert moved[0][key] == held and type(moved[0][key]) is type(held)
