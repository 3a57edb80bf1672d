"""The Spark job and the streaming checker report exactly the same findings.

Compared per finding: group, invariant, severity, members, partitions, time window and
occurrences, for every invariant the Spark job covers (spark_analysis.mine.COVERED), on every trace
set under tests/traces/samples and on a generated corpus with faults and every mutant; and the
measure handoff-duplicates (the report's ``delivery``): every handoff with duplicates field by field,
the handoffs and duplicates per partition, and the totals. The
comparison goes through PySpark's own ``assertDataFrameEqual``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from spark_analysis import converges as cv
from spark_analysis import coordinator_assignments as ca
from spark_analysis import corpus, layout, mine
from spark_analysis import delivery as dl
from spark_analysis import handoff as hd
from spark_analysis import invariants as inv
from spark_analysis import membership as mb
from spark_analysis import notes as nt
from tests.spark_analysis import crafted
from tests.spark_analysis.conftest import GENERATED
from tests.spark_analysis.test_delivery_plan import _plan_nodes
from tests.traces.support import ev, write_jsonl
from tests.traces.support import run as check_paths
from traces import zombies as zombie_words
from traces.checker import CheckConfig, Checker
from traces.coordinator_checks import COORDINATOR_ONLY
from traces.detect import plan as make_plan
from traces.merge import merged
from traces.report import check_events
from traces.schema import InputStats, Source

pyspark_testing = pytest.importorskip("pyspark.testing")

SCHEMA = ("group string, invariant string, severity string, members array<string>, "
          "partitions array<struct<topic:string,partition:int>>, t0 long, t1 long, occurrences long")


def _key(f: dict[str, Any], group: str) -> tuple[Any, ...]:
    return (group, f["invariant"], f["severity"], sorted(f["members"]),
            sorted((p["topic"], p["partition"]) for p in f["partitions"]), f["window"][0], f["window"][1],
            f["occurrences"])


def _frame(spark: Any, keys: list[tuple[Any, ...]]) -> Any:
    rows = [(g, i, s, m, [{"topic": t, "partition": p} for t, p in ps], t0, t1, n)
            for g, i, s, m, ps, t0, t1, n in keys]
    return spark.createDataFrame(rows, SCHEMA)


def _spark_keys(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return sorted(_key(f, f["group"]) for f in report["violations"] + report["warnings"])


# the rules the crafted sets (tests/spark_analysis/crafted.py) break, so that their comparison is never vacuous
CRAFTED = ("monotonic-consumption", "committed-not-ahead", "no-gap", "subscribed-only", "revoke-only-moved",
           "static-rejoin", "converges")
OFFSET_RULES = ("no-gap", "committed-not-ahead")
# the measure handoff-duplicates (the report's "delivery" section), compared per handoff with duplicates, per
# partition, and in total
DELIVERY_TOTALS = ("handoffs", "handoffs_with_duplicates", "handoffs_unmeasured", "duplicates")


def _handoffs(delivery: dict[str, Any], group: Any = lambda g: g) -> list[tuple[Any, ...]]:
    return [(group(e["group"]), e["topic"], e["partition"], e["from"], e["to"], e["at"], e["start"],
             e["previous_position"], e["committed"], e["duplicates"], e["cause"], e["detail"], tuple(e["evidence"]))
            for e in delivery["handoff_examples"]]


def _per_partition(delivery: dict[str, Any], group: Any = lambda g: g) -> list[tuple[Any, ...]]:
    return [(group(p["group"]), p["topic"], p["partition"], p["handoffs"], p["duplicates"])
            for p in delivery["per_partition"]]


class _Delivery:
    """The checker's delivery sections, summed over runs (the Spark job mines them all at once)."""

    def __init__(self) -> None:
        self.totals = dict.fromkeys(DELIVERY_TOTALS, 0)
        self.by_cause: dict[str, int] = {}
        self.handoffs: list[tuple[Any, ...]] = []
        self.per_partition: list[tuple[Any, ...]] = []

    def add(self, delivery: dict[str, Any], group: Any = lambda g: g) -> None:
        for k in DELIVERY_TOTALS:
            self.totals[k] += delivery[k]
        for cause, n in delivery["duplicates_by_cause"].items():
            self.by_cause[cause] = self.by_cause.get(cause, 0) + n
        self.handoffs += _handoffs(delivery, group)
        self.per_partition += _per_partition(delivery, group)

    def assert_equal(self, mined: dict[str, Any]) -> None:
        got = mined["delivery"]
        assert {k: got[k] for k in DELIVERY_TOTALS} == self.totals
        assert got["duplicates_by_cause"] == dict(sorted(self.by_cause.items()))
        assert sorted(_handoffs(got)) == sorted(self.handoffs)
        assert sorted(_per_partition(got)) == sorted(self.per_partition)
        assert not got["handoff_examples_truncated"]


def _partial_notes(notes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((u["invariant"], u["reason"]) for u in notes if u["invariant"] in OFFSET_RULES and u["partial"])


def _spark_notes(mined: dict[str, Any], group_prefix: str) -> list[tuple[str, str]]:
    rows = [r for r in mined["unchecked_per_group"] if r["group"].startswith(group_prefix)]
    return _partial_notes(dl.unchecked(rows))


def _undecided(notes: list[dict[str, Any]]) -> list[str]:
    return [u["reason"] for u in notes if u["invariant"] == "single-owner" and u["partial"]]


def _converges(findings: list[dict[str, Any]], group: Any = lambda g: g) -> list[tuple[Any, ...]]:
    """converges' findings with their message (it names the group: the Spark job's prefixed name) and evidence line."""
    return sorted((group(f["group"]), f["window"][0], f["message"].replace(f"group {f['group']} ", f"group {group(f['group'])} ", 1),
                   [e.rsplit(":", 1)[1] for e in f["evidence"]]) for f in findings if f["invariant"] == "converges")


def _rejected(findings: list[dict[str, Any]], group: Any = lambda g: g) -> list[tuple[Any, ...]]:
    """generation-monotonic's findings after a rejected generation: when, the message (without the file names of the
    SyncGroup answer it quotes: the job's are the corpus's paths), and the evidence lines (the SyncGroup answer and the
    revoke or assignment)."""
    return sorted((group(f["group"]), f["window"][0], re.sub(r" at \S+:(\d+)\)", r" at :\1)", f["message"]),
                   f["evidence"][0].split(" ")[0], [e.rsplit(":", 1)[1] for e in f["evidence"]]) for f in findings
                  if f["invariant"] == "generation-monotonic" and "rejected" in f["message"])


def _coordinator_notes(notes: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    """The full notes of the invariants only the coordinator's view shows (none of its events in the trace)."""
    return sorted((u["invariant"], u["reason"], u["partial"]) for u in notes
                  if u["invariant"] in COORDINATOR_ONLY and not u["partial"])


def _converges_notes(notes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((u["invariant"], u["reason"]) for u in notes if u["invariant"] == "converges" and u["partial"])


def _zombies(findings: list[dict[str, Any]], group: Any = lambda g: g) -> list[tuple[Any, ...]]:
    """single-owner's and zombie-overlap's findings with their message (why the old owner was a zombie, in
    parentheses) and evidence (``FILE:line``, ``FILE:end``) as written."""
    return sorted((group(f["group"]), f["invariant"], sorted(f["members"]),
                   sorted((p["topic"], p["partition"]) for p in f["partitions"]), f["window"][0], f["message"],
                   f["evidence"]) for f in findings if f["invariant"] in ("single-owner", "zombie-overlap"))


def _moved(findings: list[dict[str, Any]], group: Any = lambda g: g) -> list[tuple[Any, ...]]:
    """The findings of the crafted sets of a member that moves groups (crafted.MOVED) with their message (the
    generation carried into the new group is named there) and evidence lines; converges is compared by
    :func:`_converges`."""
    return sorted((group(f["group"]), f["invariant"], sorted(f["members"]), f["window"][0], f["message"],
                   [e.rsplit(":", 1)[1] for e in f["evidence"]]) for f in findings
                  if group(f["group"]).startswith("crafted-moved-") and f["invariant"] in mine.COVERED
                  and f["invariant"] != "converges")


# the invariants of the notes about what the whole trace never showed (traces.trace_notes, traces.delivery's
# offsets_seen_notes / commits_seen_notes), and the ones every trace set compares and the samples hold
WHOLE_TRACE = ("single-owner", "zombie-overlap", "subscribed-only", "generation-monotonic", "revoke-before-assign",
               "revoke-only-moved", "eager-revoke-all", "consume-owned-only", "commit-owned-only", "no-gap",
               "monotonic-consumption", "committed-not-ahead")


def _trace_notes(notes: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    """The whole-trace notes: every note of those invariants but the partial ones worded elsewhere (undecided
    overlaps, the offset rules' counts)."""
    return sorted((u["invariant"], u["reason"], u["partial"]) for u in notes if u["invariant"] in WHOLE_TRACE
                  and not (u["partial"] and u["invariant"] in ("single-owner",) + OFFSET_RULES))


def test_every_sample_trace_set_agrees_with_the_checker(spark: Any, sample_sets: dict[str, Path],
                                                        samples_corpus: Path, samples_mined: dict[str, Any]) -> None:
    expected: list[tuple[Any, ...]] = []
    delivery = _Delivery()
    converges: list[tuple[Any, ...]] = []
    converges_held = []
    rejected: list[tuple[Any, ...]] = []
    zombies: list[tuple[Any, ...]] = []
    moved: list[tuple[Any, ...]] = []
    groups = Counter(r["group"].split("/", 1)[0] for r in mine.load(spark, samples_corpus).select("group").distinct()
                     .collect())
    no_coordinator = []
    undecided: list[str] = []
    trace_notes: dict[str, list[tuple[str, str, bool]]] = {}
    not_covered = sorted((n["invariant"], n["reason"]) for n in samples_mined["not_covered"])
    for name, path in sample_sets.items():
        report = check_paths(path, max_findings=1_000_000)
        delivery.add(report["delivery"], lambda g, name=name: f"{name}/{g}")
        expected += [_key(f, f"{name}/{f['group']}") for f in report["findings"] if f["invariant"] in mine.COVERED]
        # what the offset rules could not judge, counted per reason as the checker counts it
        checker_notes = _partial_notes(report["unchecked"])
        assert _spark_notes(samples_mined, f"{name}/") == checker_notes, name
        # converges: the message and the notes (KIP-848 groups, streaks a server.log alone cannot judge) too
        found = _converges(report["findings"], lambda g, name=name: f"{name}/{g}")
        converges += found
        if report["opportunities"].get("converges") and not found and not _converges_notes(report["unchecked"]):
            converges_held.append(name)
        rejected += _rejected(report["findings"], lambda g, name=name: f"{name}/{g}")
        zombies += _zombies(report["findings"], lambda g, name=name: f"{name}/{g}")
        moved += _moved(report["findings"], lambda g, name=name: f"{name}/{g}")
        rows = [r for r in samples_mined["unchecked_per_group"] if r["group"].startswith(f"{name}/")]
        assert _converges_notes(cv.unchecked(rows)) == _converges_notes(report["unchecked"]), name
        # no coordinator event in the set: converges and static-rejoin not checked, in the checker's words
        assert _coordinator_notes(mb.unchecked(rows, groups[name])) == _coordinator_notes(report["unchecked"]), name
        no_coordinator += [name] if _coordinator_notes(report["unchecked"]) else []
        # overlaps a removal the trace cannot name leaves undecided: not judged, in the checker's words
        assert _undecided(inv.undecided_notes(rows)) == _undecided(report["unchecked"]), name
        undecided += [name] if _undecided(report["unchecked"]) else []
        # what the whole trace never showed (no ownership, subscription, generation, cooperative or eager member,
        # offsets, commits), counted per set as the checker counts it
        assert _trace_notes(nt.unchecked(rows)) == _trace_notes(report["unchecked"]), name
        trace_notes[name] = _trace_notes(report["unchecked"])
        # what the checker never judges from a trace, the job lists as not covered, in the checker's words
        assert sorted((u["invariant"], u["reason"]) for u in report["unchecked"]
                      if u["invariant"] not in mine.COVERED + mine.MEASURED) == not_covered, name
    got = _spark_keys(samples_mined)
    assert expected, "the samples hold findings of covered invariants: a comparison of nothing proves nothing"
    assert set(CRAFTED) <= {k[1] for k in expected}, "every crafted rule is broken somewhere"
    pyspark_testing.assertDataFrameEqual(_frame(spark, got), _frame(spark, sorted(expected)))
    assert _converges(samples_mined["violations"]) == sorted(converges)
    assert any(not g.startswith("crafted-") for g, *_ in converges), "a real broker's trace breaks converges"
    # a protocol that goes back is read at its last change: eager again in g (a finding), cooperative again in h
    assert [g for g, *_ in converges if g.startswith("crafted-converges-protocol-back/")] == \
        ["crafted-converges-protocol-back/g"]
    assert _rejected(samples_mined["violations"]) == sorted(rejected)
    assert {g.split("/")[0] for g, *_ in rejected} == {"crafted-rejected-revoke", "crafted-rejected-kept"}, \
        "revoking and keeping what a rejected generation owned are compared, and the sets that hold are clean"
    assert {"crafted-converges-resets", "kafka-4.1.1-java-eager"} <= set(converges_held), \
        "converges is judged and holds on a crafted and a real trace set"
    notes = [u["reason"] for u in samples_mined["unchecked"] if u["invariant"] == "converges"]
    assert any(n.startswith("KIP-848") for n in notes) and any(n[0].isdigit() for n in notes), \
        "the samples hold KIP-848 groups and streaks a server.log alone cannot judge"
    assert delivery.totals["handoffs_with_duplicates"] and len(delivery.by_cause) >= 4, "handoffs are compared on something"
    delivery.assert_equal(samples_mined)
    assert "java-consumer" in no_coordinator and "crafted-static-rejoin" not in no_coordinator, \
        "sets with and without the coordinator's view are compared"
    assert not _coordinator_notes(samples_mined["unchecked"]), "the corpus holds coordinator events"
    # a removed member id counts as named only if a member's id was it when the old owner let go (crafted
    # "undecided-*": one that rejoined with another, one named only later, and the control, still named: a violation);
    # the note's example is the first overlap the checker judges ("undecided-revoke-order": a revoke's order); another
    # group's removal counts for an old owner that named no group, not for one that named the default group
    # ("undecided-no-group", "undecided-named-default": a violation); a member that moved groups keeps its id until it
    # names another or restarts, in the new group ("undecided-moved-rejoined", "-restarted", and the control, whose
    # first event in the new group names none, "-kept": a violation)
    assert sorted(undecided) == ["crafted-undecided-moved-rejoined", "crafted-undecided-moved-restarted",
                                 "crafted-undecided-named-later", "crafted-undecided-no-group",
                                 "crafted-undecided-rejoined-id", "crafted-undecided-revoke-order",
                                 "real-vc-stall-zombie-output-only"], \
        "an undecided overlap is compared, and only there"
    assert sorted(k[:4] for k in expected if k[0].startswith("crafted-undecided-")) == \
        [("crafted-undecided-moved-kept/g", "single-owner", "violation", ["a", "b"]),
         ("crafted-undecided-named-default/default", "single-owner", "violation", ["a", "b"]),
         ("crafted-undecided-named-id/g", "single-owner", "violation", ["a", "b"])]
    # single-owner and zombie-overlap word why the old owner was a zombie, and cite where its trace ended, alike
    assert _zombies(samples_mined["violations"] + samples_mined["warnings"]) == sorted(zombies)
    reasons = {why for why, template in zombie_words.REASONS.items()
               if any(re.search(re.sub(r"\\{\w+\\}", ".*", re.escape(template)), z[5]) for z in zombies)}
    assert reasons == set(zombie_words.REASONS), "every reason a zombie can have is compared"
    assert any(e.endswith(".log.gz:end") and "/mixed-clients/" in e for z in zombies for e in z[6]), \
        "an ownership open at the end of a member with callbacks and a client log cites the file of its last line"
    # every whole-trace note is compared somewhere (crafted.NOTES), but the consumption rules' partial one: an entry
    # is unverified only for a member known from a client log alone, and no client log shows consumption
    kinds = {(i, p, r.split(" ")[0].isdigit()) for notes in trace_notes.values() for i, r, p in notes}
    assert {(i, False, False) for i in WHOLE_TRACE} | {(i, True, False) for i in ("revoke-before-assign",)} \
        | {(i, True, True) for i in ("revoke-only-moved", "eager-revoke-all")} <= kinds
    assert {r for i, r, _ in trace_notes["crafted-notes-no-gap-unjudged"] if i == "no-gap"} \
        == {"no member started a partition with a committed offset (or reset=earliest) known"}
    assert "single-owner" not in {i for i, *_ in trace_notes["crafted-notes-stored-assignment"]}, \
        "a stored assignment is checked on the coordinator's view"
    # ... one that gives nothing too (the job reads its rows: layout._stored), a stable generation without one is none,
    # whatever member_id it says; both disagreed before h29-notes
    assert [n for n in ("empty", "none", "absent")
            if "single-owner" in {i for i, *_ in trace_notes[f"crafted-notes-stored-assignment-{n}"]}] == ["absent"]
    # a protocol, or while a member names none an assignor, said only on a poll or commit is read on both sides (the
    # checker's hot path sends it to the general path): b is eager from its poll on, a cooperative, c eager from its
    # commit; before h29-notes the checker judged a eager and counted b and c of unknown protocol
    assert [(k[1], k[3]) for k in expected if k[0].startswith("crafted-protocol-on-poll/")] == \
        [("eager-revoke-all", ["b"])]
    assert "eager-revoke-all" not in {i for i, *_ in trace_notes["crafted-protocol-on-poll"]}
    # a line naming a setting the checker does not accept, a poll, commit or record of the wrong shape, or a coordinator
    # event with a field of the wrong shape, is refused whole by both (crafted.MALFORMED): the findings of each set are
    # the ones of a trace without that line
    assert {(k[0].split("/")[0], k[1]) for k in expected if k[0].startswith("crafted-malformed-")} == {
        ("crafted-malformed-setting-assign", "consume-owned-only"),
        ("crafted-malformed-setting-startup", "monotonic-consumption"),
        ("crafted-malformed-setting-poll", "monotonic-consumption"),
        ("crafted-malformed-poll", "monotonic-consumption"),
        ("crafted-malformed-commit", "no-gap"),
        ("crafted-malformed-record-data", "monotonic-consumption"),
        ("crafted-malformed-coordinator-removal", "converges")}
    assert sorted(k[3] for k in expected if k[0].startswith("crafted-malformed-poll/")) == [["a"], ["b"]]
    # a stored assignment giving a partition to two or three member ids (crafted "stored-twice"): single-owner on the
    # coordinator's view, each member id paired with the one before it in member-id order, the clean generation none;
    # the job judged no stored assignment before h29-stored
    assert sorted((k[0], k[3], k[4]) for k in expected if k[0].startswith("crafted-stored-twice/")) == [
        ("crafted-stored-twice/g", ["a-1", "b-1"], [("t", 0)]), ("crafted-stored-twice/g", ["a-1", "b-1"], [("t", 1)]),
        ("crafted-stored-twice/g", ["b-1", "c-1"], [("t", 1)]), ("crafted-stored-twice/h", ["w-1", "x-1"], [("t", 5)])]
    # KIP-848 member assignments (crafted "kip848-held"): a partition given while another member id still has it to
    # revoke, and two while another holds them; not a handoff after the release, nor one after a removal (the job kept
    # no partition of a member assignment before h29-stored: layout 4)
    assert sorted((k[3], k[4], k[5]) for k in expected if k[0].startswith("crafted-kip848-held/")) == [
        (["a-1", "b-1"], [("t", 1)], 210), (["b-1", "c-1"], [("t", 1), ("t", 2)], 420)]
    # a cooperative overlap between two members of one generation: revoke-before-assign beside single-owner
    assert {k[1] for k in expected if k[0].startswith("crafted-coop-same-generation/")} \
        == {"revoke-before-assign", "single-owner"}
    # a callback trace beside its own client log (crafted.PAIRED): what the log's superseded ownership lines say of
    # the member counts on both sides -- a KIP-848 consumer's subscription (said on no other line), and its last
    # event before a restart (the end of a zombie overlap, t1 above). Both disagreed before h27-superseded.
    assert {(k[0].split("/")[0], k[1], k[6] - k[5]) for k in expected if k[0].startswith("crafted-superseded-")} == {
        ("crafted-superseded-subscription", "subscribed-only", 0), ("crafted-superseded-restart", "zombie-overlap", 1000)}
    # a member that moved groups: what it carried (its generation, per file too) is read alike, worded alike; its
    # protocol counts in the group it left only until it left
    assert _moved(samples_mined["violations"] + samples_mined["warnings"]) == sorted(moved)
    assert {(g.split("/")[0], i) for g, i, *_ in moved} >= {
        ("crafted-moved-generation", "eager-revoke-all"), ("crafted-moved-generation-down", "generation-monotonic"),
        ("crafted-moved-assigned-gen-revoke", "revoke-only-moved")}
    # what the member's last assignment and last flag before the move hold back in the new group: one finding each,
    # for the generation after them (the job flagged the one no newer, and the one flagged before the move, too)
    assert [(g, m[len("eager member a "):m.index(" while")]) for g, i, _, _, m, _ in moved
            if g.startswith(("crafted-moved-assigned-gen/", "crafted-moved-eager-flagged/"))] == [
        ("crafted-moved-assigned-gen/g", "joined generation 4"), ("crafted-moved-eager-flagged/default", "joined generation 5"),
        ("crafted-moved-eager-flagged/g", "joined generation 6")]
    assert "crafted-moved-converges" in converges_held, "the group a member left is judged without its protocol"


def test_the_trace_set_is_the_run_and_its_prefix(spark: Any) -> None:
    """``ownership.trace_set``: with the runs of a corpus of several, a group's run is the listed label its name
    ends with after " @ " (the longest that fits: a label may hold " @ "), and its SET/ prefix is read from the name
    without it (a "/" of the label is none); a group of no listed run keeps its prefix alone; without runs, the
    prefix alone."""
    from pyspark.sql import functions as F

    from spark_analysis.ownership import TraceSets, trace_set

    groups = ["g @ /tmp/a", "S/g @ /tmp/a", "g @ b @ /tmp/a", "g @ /tmp/b @ /tmp/a", "S/h", "h"]
    frame = spark.createDataFrame([(g,) for g in groups], "group string")
    runs = ("/tmp/a", "/tmp/b @ /tmp/a")
    got = [(r["with_runs"], r["without"], r["unprefixed"]) for r in frame.select(
        trace_set(F.col("group"), TraceSets(runs)).alias("with_runs"), trace_set(F.col("group")).alias("without"),
        trace_set(F.col("group"), TraceSets(runs, prefixed=False)).alias("unprefixed")).collect()]
    # without them, the label's "/" made a set of each group name, in whichever run (before h31-runs); in a corpus
    # whose groups carry no set's prefix, a "/" of a group's own name is none either
    assert got == [(" @ /tmp/a", "g @ /", " @ /tmp/a"), ("S/ @ /tmp/a", "S/", " @ /tmp/a"),
                   (" @ /tmp/a", "g @ b @ /", " @ /tmp/a"), (" @ /tmp/b @ /tmp/a", "g @ /", " @ /tmp/b @ /tmp/a"),
                   ("S/", "S/", ""), ("", "", "")]


def test_several_runs_are_judged_run_by_run_as_the_checker_judges_them(spark: Any, tmp_path: Path) -> None:
    """A corpus of two runs (``corpus --from a/ b/``, crafted.RUNS) is judged as ``check a/ b/`` judges them: each
    run alone, the member ids one run names and the removals it holds counting for none of the other's overlaps. The
    overlap in a is undecided (its removed id is named only in b), the one in b a violation (the only removal that
    could decide it is a's); the job called the first a violation and left the second undecided before h31-runs."""
    dirs = []
    for run, files in crafted.RUNS.items():
        for member, events in files.items():
            write_jsonl(tmp_path / run / f"{member}.jsonl", events)
        dirs.append(str(tmp_path / run))
    corpus.from_runs(dirs, tmp_path / "corpus", progress=None)
    mined = mine.run(spark, tmp_path / "corpus")
    checked = check_paths([Path(d) for d in dirs], max_findings=1_000_000)
    expected = sorted(_key(f, f["group"]) for f in checked["findings"] if f["invariant"] in mine.COVERED)
    assert _spark_keys(mined) == expected
    assert [(k[0], k[1], k[3]) for k in expected] == [(f"default @ {dirs[1]}", "single-owner", ["d", "e"])]
    # the undecided overlap: one, in a's group g (the checker's note names the run it is in)
    assert [r.split(": ", 1)[0] for r in _undecided(checked["unchecked"])] == [f"in {dirs[0]}"]
    assert [(r["group"], r["n"]) for r in mined["unchecked_per_group"] if r["what"] == inv.UNDECIDED] == \
        [(f"g @ {dirs[0]}", 1)]
    # the run is read from the group name by built-in expressions on rows the job already had: no exchange or
    # broadcast more than a corpus of one run's plan (docs/mining-internals.md, "Shuffles, broadcasts and the session
    # settings"; the session turns Spark's own broadcasts off, so these are the plan's)
    assert (mined["spark"]["shuffles"], mined["spark"]["broadcasts"]) == (8, 4)


def test_a_slash_in_a_group_name_is_no_trace_set(spark: Any, tmp_path: Path) -> None:
    """In a corpus written as a user writes one (``corpus --from``: no set prefix), a "/" in a group's name is part
    of the name, as the checker reads it: crafted.SLASHED's removal from ``team/h`` counts for an old owner in the
    default group that named none, so its overlap is undecided on both sides, not a violation (before, the job took
    "team/" for a trace set of its own)."""
    for member, events in crafted.SLASHED.items():
        write_jsonl(tmp_path / "set" / f"{member}.jsonl", events)
    corpus.from_traces([str(tmp_path / "set")], tmp_path / "corpus", progress=None)
    mined = mine.run(spark, tmp_path / "corpus")
    checked = check_paths(tmp_path / "set", max_findings=1_000_000)
    expected = sorted(_key(f, f["group"]) for f in checked["findings"] if f["invariant"] in mine.COVERED)
    assert _spark_keys(mined) == expected
    assert not [k for k in expected if k[1] == "single-owner"]
    assert len(_undecided(checked["unchecked"])) == 1
    assert [(r["group"], r["n"]) for r in mined["unchecked_per_group"] if r["what"] == inv.UNDECIDED] == \
        [("default", 1)]


def test_corpus_from_counts_the_lines_it_cannot_use_as_the_checker_does(sample_sets: dict[str, Path],
                                                                         tmp_path: Path) -> None:
    """``corpus --from`` refuses a line exactly where ``groupspec check`` does, per reason, with the same first
    locations and words (docs/check.md, "Input that cannot be used"), and counts the events it used as the checker
    counts them (a refused line is none): on every sample and crafted set, among them settings the checker does not
    accept on a startup, an assignment and a poll, polls, commits and records of the wrong shape, and coordinator events
    with a field of the wrong shape (crafted.MALFORMED). The job reports these counts as written (input.malformed,
    input.malformed_per_file: mine.run reads them from input.json), so comparing them here compares the job's. No
    Spark."""
    refused = {}
    for name, path in sample_sets.items():
        doc = corpus.from_traces([str(path)], tmp_path / name, progress=None)
        report = check_paths(path)["input"]
        assert doc["skipped"] == report["skipped"], name
        assert doc["events"] == report["events"], name
        shown = min(len(doc["skipped_examples"]), len(report["skipped_examples"]))
        assert doc["skipped_examples"][:shown] == report["skipped_examples"][:shown], name
        # per file (the job's input.malformed_per_file), where the checker's examples list every line it refused
        if sum(report["skipped"].values()) == len(report["skipped_examples"]):
            per_file: dict[str, Counter[str]] = {}
            for e in report["skipped_examples"]:
                per_file.setdefault(e["where"].rsplit(":", 1)[0], Counter())[e["reason"]] += 1
            assert doc["skipped_per_file"] == {k: dict(v) for k, v in sorted(per_file.items())}, name
        refused[name] = [e["detail"].split(": ", 1)[1].split(" ")[0] for e in report["skipped_examples"]
                         if e["reason"] == "bad-field"]
    assert {f"crafted-{n}" for n in crafted.MALFORMED} <= {n for n, r in refused.items() if r}
    assert {"auto_offset_reset", "enable_auto_commit", "auto_commit_interval_ms", "offsets", "minOffset", "maxOffset",
            "topic", "offset", "coordinator_member_removed", "assignment", "group", "reason"} <= \
        {r for names in refused.values() for r in names}, refused


def _checker_named(checker: Checker, located: Iterable[Any]) -> dict[int, bool | None]:
    """Run ``checker`` over ``located`` and return, per event (its place in the stream, from 1), whether its member
    had named its group after the checker read it (``Member.group_explicit``; None for a coordinator event): read
    between events, as the checker asks for the next one."""
    said: dict[int, bool | None] = {}

    def stepping() -> Iterator[Any]:
        for seq, item in enumerate(located, start=1):
            yield item
            event = item[4]
            member = event.get("member") or checker.sources[item[1]].member
            known = checker.members.get(member) if isinstance(member, str) else None
            said[seq] = None if event["name"].startswith("coordinator_") or known is None else known.group_explicit

    checker.run(stepping())
    return said


def _written_named(out: Path) -> dict[int, bool | None]:
    rows = pq.read_table(out / "events", columns=["seq", "group_named"]).to_pylist()
    return {r["seq"]: r["group_named"] for r in rows}


def test_the_corpus_says_whether_a_member_had_named_its_group_as_the_checker_keeps_it(
        sample_sets: dict[str, Path], tmp_path: Path) -> None:
    """``group_named`` on every row of every sample and crafted set, and of simulated groups, is the checker's
    ``Member.group_explicit`` after it read that event (the undecided rule reads it: which groups' removals count
    for an old owner); null on the coordinator's. Among them members that name the default group, name none, take
    their group from the client log paired with their callback trace, and move to a group. No Spark."""
    seen: set[tuple[bool | None, bool | None]] = set()  # (a member's flag before, after) per row
    for name, path in sample_sets.items():
        corpus.from_traces([str(path)], tmp_path / name, progress=None)
        written = _written_named(tmp_path / name)
        plan = make_plan([str(path)], None, None)
        stats = InputStats()
        said = _checker_named(Checker(plan.sources, CheckConfig(), stats, plan.callback_members),
                              merged(plan.sources, stats))
        assert {seq: said[seq] for seq in written} == written, name
        last: dict[str, bool | None] = {}
        for seq, (_, src, _, _, event) in enumerate(merged(plan.sources, InputStats()), start=1):
            member = event.get("member") or plan.sources[src].member
            if seq in written and written[seq] is not None:
                seen.add((last.get(member), written[seq]))
                last[member] = written[seq]
    assert {(None, False), (None, True), (False, False), (False, True), (True, True)} <= seen, seen
    spec = corpus.CorpusSpec(groups=3, seed=5)
    corpus.simulate_groups(spec, tmp_path / "simulated", workers=1, progress=None)
    written = _written_named(tmp_path / "simulated")
    rows = pq.read_table(tmp_path / "simulated" / "events", columns=["group", "seq", "group_named"]).to_pylist()
    for index in range(spec.groups):
        events, _ = corpus.simulate_group(spec, index)
        label = corpus.group_name(index)
        source = Source(index=0, path=Path(f"{label}.jsonl"), label=f"{label}.jsonl", format="groupspec",
                        member=f"{label}.jsonl")
        said = _checker_named(Checker([source], CheckConfig(), InputStats()),
                              ((int(e["timestamp"]), 0, n, n, e) for n, e in enumerate(events, start=1)))
        written = {r["seq"]: r["group_named"] for r in rows if r["group"] == label}
        assert written == said and set(said.values()) == {None, True}, label


def test_a_short_list_of_handoffs_names_the_same_ones(spark: Any, sample_sets: dict[str, Path],
                                                      samples_mined: dict[str, Any]) -> None:
    """With more handoffs with duplicates than the list holds, the checker (``max_findings``) and the job
    (``max_examples``) list the same ones, the first by group, time, topic, partition and new owner, in that order:
    on crafted.SETS["handoffs-listed"], whose handoffs the checker closes in another order. The job's listing
    (``handoff.summary``) runs over its own handoffs of that set, from the sample corpus's run."""
    name = "crafted-handoffs-listed"
    mine_handoffs = [h for h in samples_mined["delivery"]["handoff_examples"] if h["group"].startswith(f"{name}/")]
    rows = [(h["group"], h["topic"], h["partition"], h["from"], h["to"], h["at"], h["start"], h["previous_position"],
             h["committed"], h["duplicates"], h["cause"], h["detail"], h["evidence"], True) for h in mine_handoffs]
    frame = spark.createDataFrame(rows, "group string, topic string, partition int, previous string, new string, "
                                        "ts long, start long, previous_position long, committed long, duplicates long, "
                                        "cause string, detail string, evidence array<string>, measured boolean")
    listed = hd.summary(frame, max_examples=2)
    checked = check_paths(sample_sets[name], max_findings=2)["delivery"]
    assert len(mine_handoffs) == checked["handoffs_with_duplicates"] == 5
    assert checked["handoff_examples_truncated"] and listed["handoff_examples_truncated"]
    assert _handoffs(listed) == _handoffs(checked, lambda g: f"{name}/{g}")  # the same ones, in the same order
    assert [(h["partition"], h["at"]) for h in checked["handoff_examples"]] == [(4, 210), (3, 220)]


def _checker_generated() -> tuple[list[tuple[Any, ...]], dict[str, list[tuple[str, str]]], _Delivery, int]:
    """The checker's findings of covered invariants on the generated corpus, its offset rules' and converges' notes
    per group, its handoffs, and how many rebalances it judged for converges."""
    keys: list[tuple[Any, ...]] = []
    notes: dict[str, list[tuple[str, str]]] = {}
    delivery = _Delivery()
    rebalances = 0
    for index in range(GENERATED.groups):
        events, _ = corpus.simulate_group(GENERATED, index)
        group = corpus.group_name(index)
        report = check_events(events, CheckConfig(max_findings=1_000_000), label=f"{group}.jsonl")
        keys += [_key(f, f["group"]) for f in report["findings"] if f["invariant"] in mine.COVERED]
        notes[group] = _partial_notes(report["unchecked"]) + _converges_notes(report["unchecked"])
        delivery.add(report["delivery"])
        rebalances += report["opportunities"].get("converges", 0)
    return sorted(keys), notes, delivery, rebalances


def test_a_generated_corpus_with_every_mutant_agrees_with_the_checker(spark: Any, generated_corpus: Path,
                                                                       generated_mined: dict[str, Any]) -> None:
    truth = layout.read_truth(generated_corpus)
    assert truth is not None
    assert {t["mutant"] for t in truth["truth"].values()} - {None} == set(GENERATED.mutants)
    expected, notes, delivery, rebalances = _checker_generated()
    assert any(k[2] == "violation" for k in expected), "the mutants make violations the checker sees"
    assert {"no-gap", "committed-not-ahead", "static-rejoin"} <= {k[1] for k in expected}
    # no mutant breaks converges (none changes how many rebalances a membership change takes; truth.json's monitor
    # flags none): it must hold in every group, over every rebalance the simulator's coordinator made
    assert rebalances > 100 and "converges" not in {k[1] for k in expected}
    for group, checker_notes in notes.items():
        rows = [r for r in generated_mined["unchecked_per_group"] if r["group"] == group]
        assert _spark_notes(generated_mined, group) + _converges_notes(cv.unchecked(rows)) == checker_notes, group
    pyspark_testing.assertDataFrameEqual(_frame(spark, _spark_keys(generated_mined)), _frame(spark, expected))
    assert delivery.totals["handoffs_with_duplicates"], "handoffs are compared on something"
    delivery.assert_equal(generated_mined)


def test_recall_and_precision_against_truth(generated_corpus: Path, generated_mined: dict[str, Any]) -> None:
    """Every mutant group the model's monitor flags with a covered invariant is flagged; no clean group is."""
    truth = layout.read_truth(generated_corpus)
    assert truth is not None
    flagged = {f["group"] for f in generated_mined["violations"]}
    entries = truth["truth"]
    target = {g for g, t in entries.items() if t["mutant"] and set(t["monitor"]) & set(mine.COVERED)}
    clean = {g for g, t in entries.items() if not t["mutant"] and not t["monitor"]}
    assert target, "some mutant must show in a covered invariant, or recall is vacuous"
    assert target <= flagged, f"missed: {sorted(target - flagged)}"
    assert clean, "some groups are clean"
    assert not clean & flagged, f"clean groups flagged: {sorted(clean & flagged)}"
    assert generated_mined["truth"]["precision_clean"] == 1.0
    # mine.json's own score says the same: recall over the groups the monitor flagged with a covered invariant
    assert generated_mined["truth"]["recall"] == 1.0 and generated_mined["truth"]["judged"] == len(target)


def test_recall_counts_apart_what_no_trace_can_show() -> None:
    """A mutant group the monitor flagged only with an invariant the job does not judge (balanced: one
    assignment's property) is listed apart, not missed; one flagged with a covered invariant and not caught is."""
    truth = {"truth": {
        "g1": {"mutant": "range-ceil-quota", "monitor": ["balanced"]},
        "g2": {"mutant": "coop-no-withhold", "monitor": ["revoke-before-assign", "single-owner"]},
        "g3": {"mutant": "position-ignores-committed", "monitor": ["no-gap"]},
        "g4": {"mutant": None, "monitor": []},
        "g5": {"mutant": "double-claim-both-keep", "monitor": []}}}
    got = mine.score(truth, {"g2"})
    assert got["mutant_groups_flagged_by_monitor"] == 3 and got["judged"] == 2
    assert got["recall"] == 0.5 and got["missed"] == ["g3"]
    assert got["flagged_only_beyond_traces"] == 1 and got["beyond_traces"] == {"g1": ["balanced"]}
    assert got["clean_groups"] == 1 and got["precision_clean"] == 1.0


def test_membership_reasons_read_the_same_in_java(spark: Any, samples_corpus: Path) -> None:
    """converges' and static-rejoin's reason patterns, run by Spark's rlike (Java regex, ``(?i)``), decide every
    rebalance reason of the samples (real brokers' server.logs, the mock's, the crafted sets) as Python's re does."""
    from pyspark.sql import functions as F

    from spark_analysis.membership import _java
    from traces.coordinator_checks import _MEMBERSHIP_REASON, _PROTOCOL_CHANGE_REASON

    reasons = mine.load(spark, samples_corpus).filter(F.col("reason").isNotNull()).select("reason").distinct()
    patterns = {"membership": _MEMBERSHIP_REASON, "protocol": _PROTOCOL_CHANGE_REASON}
    got = reasons.select("reason", *[F.col("reason").rlike(_java(p.pattern)).alias(k) for k, p in patterns.items()])
    rows = got.collect()
    assert len(rows) > 20 and {True, False} <= {r["membership"] for r in rows}, "reasons of both kinds are compared"
    for r in rows:
        assert {k: r[k] for k in patterns} == {k: p.search(r["reason"]) is not None for k, p in patterns.items()}, \
            r["reason"]


@pytest.fixture(scope="module")
def member_only(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str | None, dict[str, Any]]]:
    """A trace set with member events only (no coordinator event), in two groups, mined with ``--protocol cooperative``
    and without one (two runs of the job, shared by the tests below: each run's plans cost the session's driver
    memory)."""
    root = tmp_path_factory.mktemp("member-only")
    files = {"a": [ev("startup_complete", 0, assignor="range"), ev("partitions_assigned", 10, parts=[0], generation=1),
                   ev("partitions_assigned", 20, parts=[1], generation=2), ev("shutdown_complete", 30)],
             "b": [ev("startup_complete", 0, group="h"), ev("partitions_assigned", 10, parts=[2], generation=1),
                   ev("shutdown_complete", 30)]}
    for name, events in files.items():
        write_jsonl(root / "set" / f"{name}.jsonl", events)
    corpus.from_traces([str(root / "set")], root / "corpus", progress=None)
    return root / "set", {protocol: mine.run(spark, root / "corpus", config=mine.MineConfig(default_protocol=protocol))
                          for protocol in ("cooperative", None)}


def test_a_default_protocol_is_read_as_the_checker_reads_it(
        member_only: tuple[Path, dict[str | None, dict[str, Any]]]) -> None:
    """``--protocol`` makes every member's protocol known from its start: the checker then never reads it from the
    assignor a member names, so a member naming range under ``--protocol cooperative`` is cooperative (its second
    assignment without a revoke is no eager-revoke-all), while without one the assignor makes it eager."""
    path, mined = member_only
    seen = {}
    for protocol in ("cooperative", None):
        expected = sorted(_key(f, f["group"]) for f in check_paths(path, default_protocol=protocol)["findings"]
                          if f["invariant"] in mine.COVERED)
        got = _spark_keys(mined[protocol])
        assert got == expected, protocol
        seen[protocol] = {k[1] for k in got}
    assert "eager-revoke-all" not in seen["cooperative"] and "eager-revoke-all" in seen[None], \
        "the default decides, over the assignor, only when one is given"


def test_a_corpus_without_the_coordinators_view_says_what_it_cannot_check(
        member_only: tuple[Path, dict[str | None, dict[str, Any]]]) -> None:
    """With no coordinator event in the corpus, converges and static-rejoin are unchecked, as the checker says (its
    full note, not a partial one); each group without one is named in ``unchecked_per_group``."""
    path, mined = member_only
    expected = _coordinator_notes(check_paths(path)["unchecked"])
    assert {n[0] for n in expected} == {"converges", "static-rejoin"}
    assert _coordinator_notes(mined[None]["unchecked"]) == expected
    assert sorted(r["group"] for r in mined[None]["unchecked_per_group"] if r["what"] == mb.NO_COORDINATOR) == \
        ["default", "h"]


def test_whole_trace_notes_with_and_without_a_default_protocol(
        member_only: tuple[Path, dict[str | None, dict[str, Any]]]) -> None:
    """The job's report says what the whole trace never showed as the checker says it: with ``--protocol
    cooperative`` every member is cooperative (no eager-revoke-all), without one the member naming range is eager
    and the other of unknown protocol (eager-revoke-all in part)."""
    path, mined = member_only
    seen = {}
    for protocol in ("cooperative", None):
        expected = _trace_notes(check_paths(path, default_protocol=protocol)["unchecked"])
        assert _trace_notes(mined[protocol]["unchecked"]) == expected, protocol
        seen[protocol] = {(i, p) for i, _, p in expected}
    assert ("eager-revoke-all", False) in seen["cooperative"] and ("eager-revoke-all", True) in seen[None]



def test_coordinator_assignments_are_judged_without_an_exchange(spark: Any, samples_corpus: Path) -> None:
    """single-owner on the coordinator's view (coordinator_assignments) reads the corpus partitioned by group as
    mine.plan caches it: every window, join and aggregate there is keyed by group first, so it adds sorts of those few
    rows and no exchange: one sort for the stored assignments' window, three for the member assignments' (the window over
    assignments and removals, each side of the join)."""
    events = mine.load(spark, samples_corpus).repartition("group").persist()
    try:
        for check, sorts in ((ca.stored_twice, 1), (ca.held_twice, 3)):
            kinds = [str(n.getClass().getSimpleName()) for n in _plan_nodes(check(events))]
            assert "InMemoryTableScanExec" in kinds, kinds  # the cached corpus, whose own plan is not walked
            assert (kinds.count("ShuffleExchangeExec"), kinds.count("SortExec")) == (0, sorts), (check.__name__, kinds)
    finally:
        events.unpersist()
