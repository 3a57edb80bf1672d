"""``groupspec corpus`` and ``groupspec mine`` from the command line: exit codes, outputs, malformed input."""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from groupspec.cli import main
from spark_analysis import mine, session
from spark_analysis.layout import LAYOUT, LayoutError, check_layout
from tests.traces.support import REAL, consumed, ev, write_jsonl
from tests.traces.support import run as check_paths


def _trace_with_double_owner(tmp: Path) -> Path:
    """a and b own t-0 at once (b assigned before a revoked), and a file with a line that is not JSON."""
    d = tmp / "incident"
    write_jsonl(d / "a.jsonl", [ev("startup_complete", 0), ev("partitions_assigned", 100, parts=(0,)),
                                consumed(150, 0, 0, 4), ev("partitions_revoked", 300, parts=(0,)),
                                ev("shutdown_complete", 400)])
    write_jsonl(d / "b.jsonl", [ev("startup_complete", 0), ev("partitions_assigned", 200, parts=(0,)),
                                consumed(250, 0, 5, 9), consumed(260, 1, 0, 3)])
    with (d / "b.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("this is not json\n")
    return d


def test_corpus_from_counts_malformed_lines_per_file_as_the_checker_does(tmp_path: Path) -> None:
    traces = _trace_with_double_owner(tmp_path)
    out = tmp_path / "corpus"
    assert main(["corpus", "--from", str(traces), "--out", str(out)]) == 0
    info = json.loads((out / "input.json").read_text())
    report = check_paths(traces)
    assert info["skipped"] == report["input"]["skipped"] == {"invalid-json": 1}
    assert info["skipped_per_file"] == {str(traces / "b.jsonl"): {"invalid-json": 1}}
    table = pq.read_table(out / "events")
    assert info["events"] == report["input"]["events"] == 9
    assert table.num_rows == 9  # one row per event and partition: each of these names at most one
    assert str(table.schema.field("group").type).startswith("dictionary")


@pytest.mark.parametrize("argv, message", [
    (["corpus", "--from", "/nonexistent-groupspec", "--out", "{tmp}/c"], "no such file"),
    (["corpus", "--groups", "3", "--mutants", "no-such-mutant", "--out", "{tmp}/c"], "unknown mutant"),
    (["corpus", "--groups", "3", "--faults", "meteor", "--out", "{tmp}/c"], "unknown fault"),
    (["mine", "{tmp}"], "not a corpus"),
    (["mine", "{tmp}/nosuch"], "nosuch: no such directory"),
    (["mine", "{tmp}", "--master", "foo"], "--master foo: not a Spark master URL"),
    (["mine", "{tmp}", "--master", "spark//127.0.0.1:7077"], "not a Spark master URL"),
    (["mine", "{tmp}", "--conf", "spark.driver.memory"], "not KEY=VALUE"),
])
def test_bad_input_exits_2_with_one_line(argv: list[str], message: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_mine_conf_a_running_session_cannot_take_is_an_error(spark: Any, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    corpus_dir = tmp_path / "corpus"
    assert main(["corpus", "--from", str(_trace_with_double_owner(tmp_path)), "--out", str(corpus_dir)]) == 0
    capsys.readouterr()
    before = spark.conf.get("spark.sql.shuffle.partitions")
    argv = ["mine", str(corpus_dir), "--out", str(tmp_path / "m"), "--conf", "spark.sql.shuffle.partitions=7",
            "--conf", "spark.driver.memory=2g"]  # static: the test's JVM is running
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "Spark failed" in err[-1] and "spark.driver.memory" in err[-1]
    assert spark.conf.get("spark.sql.shuffle.partitions") == before  # what was set before the refusal is undone


def test_corpus_groups_writes_truth_and_parquet(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    assert main(["corpus", "--groups", "4", "--mutant-fraction", "1", "--mutants", "coop-no-withhold",
                 "--seed", "3", "--workers", "1", "--out", str(out)]) == 0
    truth = json.loads((out / "truth.json").read_text())
    assert set(truth["truth"]) == {"g0000000", "g0000001", "g0000002", "g0000003"}
    assert {t["mutant"] for t in truth["truth"].values()} == {"coop-no-withhold"}
    table = pq.read_table(out / "events")
    assert sum(t["events"] for t in truth["truth"].values()) == len(set(zip(
        table.column("group").to_pylist(), table.column("seq").to_pylist(), strict=True)))


def test_mine_finds_the_violation_exits_1_and_writes_its_reports(spark: Any, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    traces = _trace_with_double_owner(tmp_path)
    corpus_dir = tmp_path / "corpus"
    assert main(["corpus", "--from", str(traces), "--out", str(corpus_dir)]) == 0
    capsys.readouterr()
    out = tmp_path / "mined"
    before = spark.conf.get("spark.sql.shuffle.partitions")
    # a running session left to fit the count to each corpus (as one built without a count is): a given count wins
    spark.conf.set(session.FROM_CORPUS, "true")
    try:
        assert main(["mine", str(corpus_dir), "--out", str(out), "--json",
                     "--conf", "spark.sql.shuffle.partitions=3"]) == 1
        assert spark.conf.get(session.FROM_CORPUS) == "true"
    finally:
        spark.conf.set(session.FROM_CORPUS, "false")
    data = json.loads(capsys.readouterr().out)
    assert data["spark"]["shuffle_partitions"] == 3  # --conf reached the job ...
    assert data["spark"]["shuffle_partitions_from"] == "setting"
    assert spark.conf.get("spark.sql.shuffle.partitions") == before  # ... and the running session is as it was
    checker = check_paths(traces)
    expected = sorted((f["invariant"], f["members"], f["window"]) for f in checker["findings"]
                      if f["severity"] == "violation")
    assert sorted((v["invariant"], v["members"], v["window"]) for v in data["violations"]) == expected
    assert {v["invariant"] for v in data["violations"]} == {"single-owner", "consume-owned-only"}
    assert data["input"]["events"] == checker["input"]["events"]
    assert data["input"]["malformed"] == {"invalid-json": 1}
    summary = data["analytics"]["pause_summary"]
    assert set(summary) == {"count", "min", "50%", "max"} and isinstance(summary["count"], int)
    assert all(v is None or isinstance(v, int) for v in summary.values())  # numbers, not Spark's strings
    assert spark.read.parquet(str(out / "violations.parquet")).count() == len(data["violations"])
    page = (out / "mine.html").read_text()
    assert "b.jsonl:5" in page and "this is not json" in page  # where the line that could not be used is
    assert "<svg" in page and "<script" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    md = (out / "mine.md").read_text()
    assert md.startswith("# groupspec mine")
    assert "pause" in md and "{'count'" not in md  # the pauses in words, not as a Python dict


def test_corpus_merge_runs_writes_every_path_as_one_run(tmp_path: Path) -> None:
    dirs = sorted(str(p) for p in REAL.iterdir() if p.is_dir())[:2]
    for merge, runs in ((["--merge-runs"], 1), ([], 2)):
        out = tmp_path / f"corpus-{runs}"
        assert main(["corpus", "--from", *dirs, *merge, "--out", str(out)]) == 0
        info = json.loads((out / "input.json").read_text())
        assert len(info["runs"]) == runs
        groups = set(pq.read_table(out / "events").column("group").to_pylist())
        assert groups == ({"orders-group"} if merge else {f"orders-group @ {d}" for d in dirs})
        # as one run, the captures' consumers c1, c2, ... are one member each: said, as check says it
        assert bool(info["shared_members"]) == bool(merge)


def test_several_captures_are_runs_kept_apart_as_check_keeps_them(spark: Any, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Five real captures (five clients against the mock coordinator) that all call their group orders-group and
    their consumers c1, c2, ...: `groupspec check` checks each directory named as a run of its own and finds no
    violation. `corpus --from` with the same arguments writes them as the same runs (``orders-group @ DIR``), and
    `mine` finds what check finds, warnings included. (Written as one run, they made 29 false violations.)"""
    dirs = sorted(str(p) for p in REAL.iterdir() if p.is_dir())
    corpus_dir, out = tmp_path / "corpus", tmp_path / "mined"
    assert main(["corpus", "--from", *dirs, "--out", str(corpus_dir)]) == 0
    info = json.loads((corpus_dir / "input.json").read_text())
    checked = check_paths([Path(d) for d in dirs])
    assert [r["run"] for r in info["runs"]] == [r["run"] for r in checked["input"]["runs"]] == dirs
    assert info["events"] == checked["input"]["events"]
    capsys.readouterr()
    assert main(["mine", str(corpus_dir), "--out", str(out), "--json"]) == 0
    mined = json.loads(capsys.readouterr().out)

    def key(f: dict[str, Any]) -> tuple[Any, ...]:
        return (f["group"], f["invariant"], tuple(f["members"]),
                tuple((p["topic"], p["partition"]) for p in f["partitions"]), tuple(f["window"]))

    assert not mined["violations"]
    assert sorted(map(key, mined["warnings"])) == sorted(key(f) for f in checked["findings"])
    assert {f["group"] for f in mined["warnings"]} <= {f"orders-group @ {d}" for d in dirs}
    assert mined["warnings"], "the captures hold zombie warnings: equal empty lists would prove nothing"


@pytest.mark.parametrize("with_good_run", [False, True])
@pytest.mark.parametrize("out_existed", [False, True])
def test_corpus_refuses_a_run_with_no_event_as_check_does(with_good_run: bool, out_existed: bool, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A directory whose every line is skipped is a run with nothing in it: `check` exits 2 for it, and so does
    `corpus --from` (it wrote an empty run before), leaving no half-written corpus for `mine` to read."""
    bad = tmp_path / "bad"
    write_jsonl(bad / "a.jsonl", [{"name": "partitions_assigned", "timestamp": "not a time"}])
    paths = [str(p) for p in sorted(REAL.iterdir()) if p.is_dir()][:1] * with_good_run + [str(bad)]
    out = tmp_path / "corpus"
    if out_existed:
        out.mkdir()
    assert main(["check", *paths]) == 2
    checked = capsys.readouterr().err.strip().splitlines()[-1]
    assert main(["corpus", "--from", *paths, "--out", str(out)]) == 2
    said = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"{bad}: no event read: 1 line(s) skipped (bad-timestamp 1" in said
    assert said.replace("nothing was written", "nothing was checked").split(": ", 1)[1] == checked.split(": ", 1)[1]
    assert (list(out.iterdir()) == []) if out_existed else not out.exists()


def test_corpus_lists_files_beside_directories_that_give_nothing_as_ignored(tmp_path: Path) -> None:
    """A file named beside the capture directories (a shell glob's) from which no event is read: check lists it as
    ignored, not as a run, and so does `corpus --from`."""
    capture = [str(p) for p in sorted(REAL.iterdir()) if p.is_dir()][0]
    notes = write_jsonl(tmp_path / "late.jsonl", [{"name": "partitions_assigned", "timestamp": "not a time"}])
    out = tmp_path / "corpus"
    assert main(["corpus", "--from", capture, str(notes), "--out", str(out)]) == 0
    info = json.loads((out / "input.json").read_text())
    checked = check_paths([Path(capture), notes])
    assert [r["run"] for r in info["runs"]] == [r["run"] for r in checked["input"]["runs"]] == [capture]
    assert {"path": str(notes), "why": "no event read"} in info["ignored_files"]
    assert info["ignored_files"] == checked["input"]["ignored_files"]
    assert info["events"] == checked["input"]["events"]


def test_corpus_writes_a_stored_assignment_as_rows_that_name_a_member_id(tmp_path: Path) -> None:
    """The rows of ``coordinator_stable``: one per member id and partition of its stored assignment, one with topic
    null for a member id given nothing, one with member_id "" for an assignment of no member -- each a stored
    assignment the checker counts (single-owner checked on the coordinator's view) -- and for a stable generation
    without one (a server.log's) no member id, though the event names one."""
    stable = {"group": "g", "generation": 1, "state": "Stable"}
    write_jsonl(tmp_path / "set" / "c.jsonl", [
        ev("coordinator_stable", 1, **stable, assignment={"b-1": [{"topic": "t", "partition": 0}], "a-1": []}),
        ev("coordinator_stable", 2, **stable, assignment={}),
        ev("coordinator_stable", 3, **stable, member_count=1, member_id="a-1")])
    assert main(["corpus", "--from", str(tmp_path / "set"), "--out", str(tmp_path / "corpus")]) == 0
    rows = pq.read_table(tmp_path / "corpus" / "events").to_pylist()
    assert [(r["timestamp"], r["part"], r["member_id"], r["topic"], r["partition"]) for r in rows] == [
        (1, 0, "a-1", None, None), (1, 1, "b-1", "t", 0), (2, 0, "", None, None), (3, 0, None, None, None)]


def test_every_corpus_writer_stamps_the_layout(tmp_path: Path) -> None:
    """--from (one run and several) and --groups write the layout number mine reads into input.json."""
    dirs = sorted(str(p) for p in REAL.iterdir() if p.is_dir())[:2]
    argvs = {"from": ["--from", str(_trace_with_double_owner(tmp_path))], "runs": ["--from", *dirs],
             "groups": ["--groups", "2", "--workers", "1"]}
    for name, argv in argvs.items():
        out = tmp_path / name
        assert main(["corpus", *argv, "--out", str(out)]) == 0
        assert json.loads((out / "input.json").read_text())["layout"] == LAYOUT, name
        check_layout(out)


def _restamped(tmp_path: Path, layout: Any) -> tuple[Path, Path]:
    """A --from corpus whose input.json says ``layout`` (the key left out for ``...``); (corpus, traces)."""
    traces = _trace_with_double_owner(tmp_path)
    corpus_dir = tmp_path / "corpus"
    assert main(["corpus", "--from", str(traces), "--out", str(corpus_dir)]) == 0
    info = json.loads((corpus_dir / "input.json").read_text())
    del info["layout"]
    if layout is not ...:
        info["layout"] = layout
    (corpus_dir / "input.json").write_text(json.dumps(info))
    return corpus_dir, traces


OTHER_LAYOUTS = [(..., "layout none: written before groupspec recorded it"), (LAYOUT + 1, f"layout {LAYOUT + 1};"),
                 (LAYOUT - 1, f"layout {LAYOUT - 1};"),  # the one before: a corpus an older groupspec wrote
                 (0, "layout 0;"), (True, "layout true;"), (str(LAYOUT), f'layout "{LAYOUT}";')]


@pytest.mark.parametrize("layout, said", OTHER_LAYOUTS)
def test_mine_refuses_a_corpus_of_another_layout_and_says_how_to_write_it_again(
        layout: Any, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus_dir, traces = _restamped(tmp_path, layout)
    capsys.readouterr()
    assert main(["mine", str(corpus_dir), "--out", str(tmp_path / "m")]) == 2  # before Spark starts
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert f"{corpus_dir}: a corpus of {said}" in err[0]
    assert f"this groupspec reads layout {LAYOUT} only" in err[0]
    # the options it was read with, every value recorded (input.json's read_with; the format was detected)
    assert err[0].endswith(f"Write it again: groupspec corpus --from {traces} --group default --log-timezone local "
                           "--out NEWDIR")
    assert not (tmp_path / "m").exists()


def test_the_command_names_no_read_option_a_corpus_did_not_record(tmp_path: Path) -> None:
    """A corpus written before input.json recorded --group, --format and --log-timezone: the command names none of
    them (a value put in their place could read the traces otherwise) and says that they were not recorded."""
    corpus_dir, traces = _restamped(tmp_path, LAYOUT - 1)
    info = json.loads((corpus_dir / "input.json").read_text())
    del info["read_with"]
    (corpus_dir / "input.json").write_text(json.dumps(info))
    with pytest.raises(LayoutError) as refused:
        check_layout(corpus_dir)
    command = str(refused.value).split("Write it again: ", 1)[1]
    assert command.startswith(f"groupspec corpus --from {traces} --out NEWDIR (with the --group, --format and "
                              "--log-timezone it was written with, if any: this corpus did not record them)")
    assert "--group default" not in command and "local" not in command


@pytest.mark.parametrize("layout, said", OTHER_LAYOUTS[:2])
def test_submit_refuses_a_corpus_of_another_layout(layout: Any, said: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from spark_analysis import submit

    corpus_dir, _ = _restamped(tmp_path, layout)
    capsys.readouterr()
    assert submit.main([str(corpus_dir), "--out", str(tmp_path / "m")]) == 2  # before a session is built
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"submit.py: {corpus_dir}: a corpus of {said}"), err


def test_the_job_itself_refuses_a_corpus_of_another_layout(spark: Any, tmp_path: Path) -> None:
    """A notebook calling spark_analysis.mine directly gets the refusal too, not a Spark error deep in the job."""
    corpus_dir, _ = _restamped(tmp_path, ...)
    for call in (lambda: mine.run(spark, corpus_dir), lambda: mine.plan(spark, corpus_dir),
                 lambda: mine.load(spark, corpus_dir)):
        with pytest.raises(LayoutError, match="written before groupspec recorded it"):
            call()


def test_an_unreadable_input_json_is_refused_and_a_missing_one_let_through(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    corpus_dir, _ = _restamped(tmp_path, LAYOUT)
    check_layout(corpus_dir)
    (corpus_dir / "input.json").write_text("[1")
    capsys.readouterr()
    assert main(["mine", str(corpus_dir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "input.json: cannot be read" in err[0] and "--out NEWDIR" in err[0]
    (corpus_dir / "input.json").write_text("[1]")
    with pytest.raises(LayoutError, match="not a JSON object"):
        check_layout(corpus_dir)
    # no input.json at all: as mine read such a corpus before layouts were recorded (one put together by hand)
    (corpus_dir / "input.json").unlink()
    check_layout(corpus_dir)


# what session.build raised (str of the Py4JJavaError) when --master named a port nobody listens on, 127.0.0.1:1
_UNREACHABLE = ("An error occurred while calling None.org.apache.spark.sql.classic.SparkSession.\n"
                ": java.lang.IllegalStateException: Cannot call methods on a stopped SparkContext.\n"
                "This stopped SparkContext was created at:\n\norg.apache.spark.api.java.JavaSparkContext.<init>"
                "(JavaSparkContext.scala:59)\n")


def test_a_master_that_does_not_answer_is_said_with_its_cause_and_what_to_check(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pyspark.sql import SparkSession

    from groupspec.commands import mine as mine_cmd

    corpus_dir, _ = _restamped(tmp_path, LAYOUT)

    def unreachable(*_: Any, **__: Any) -> Any:
        raise RuntimeError(_UNREACHABLE)

    # no running session (the suite's is left alone), and the start fails as a master that never answers makes it:
    # something listens at the port (so the command's own connection is answered), but no master
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setattr(session, "build", unreachable)
    with socket.create_server(("127.0.0.1", 0)) as listening:
        url = f"spark://127.0.0.1:{listening.getsockname()[1]}"
        assert main(["mine", str(corpus_dir), "--master", url, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"groupspec mine: cannot start Spark on {url}: java.lang."
                              "IllegalStateException: Cannot call methods on a stopped SparkContext; is a master")
    assert "is a master running at that URL" in err[-1]
    # a local master gets no such hint: its failures are the JVM's own
    assert "is a master" not in mine_cmd.start_failure("local[2]", RuntimeError(_UNREACHABLE))
    assert mine_cmd.start_failure("local[2]", RuntimeError("")) == "cannot start Spark on local[2]: RuntimeError"


def test_a_master_nobody_listens_at_is_said_in_one_line_before_spark_starts(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Not Spark's minute of registration retries and their Java stack traces: the connection is refused at once, and
    the one line says where, for each master of the URL."""
    from pyspark.sql import SparkSession

    from groupspec.commands import mine as mine_cmd

    corpus_dir, _ = _restamped(tmp_path, LAYOUT)

    def started(*_: Any, **__: Any) -> Any:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setattr(session, "build", started)
    ports = []
    for _ in range(2):  # ports that were free a moment ago: nobody listens there
        with socket.create_server(("127.0.0.1", 0)) as free:
            ports.append(free.getsockname()[1])
    url = f"spark://127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}"
    capsys.readouterr()
    assert main(["mine", str(corpus_dir), "--master", url, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"groupspec mine: cannot start Spark on {url}: nothing answers at 127.0.0.1:{ports[0]} (Connection "
                   f"refused), 127.0.0.1:{ports[1]} (Connection refused); is a master running at that URL and "
                   "reachable from here?"]
    assert not (tmp_path / "o").exists()
    # one master of several that answers is enough (Spark registers with whichever does); other masters are Spark's
    with socket.create_server(("127.0.0.1", 0)) as listening:
        assert mine_cmd.unanswered(f"spark://127.0.0.1:{ports[0]},127.0.0.1:{listening.getsockname()[1]}") is None
    assert mine_cmd.unanswered("local[2]") is None and mine_cmd.unanswered("spark://127.0.0.1") is None


@pytest.mark.parametrize("write", [
    ["--groups", "3", "--seed", "5", "--mutant-fraction", "0.7", "--mutants", "coop-no-withhold,commit-old-generation",
     "--faults", "crash,stall", "--workers", "1"],
    ["--groups", "2", "--seed", "1", "--faults", "none", "--mutants", "", "--workers", "1"],
    ["--from", "{real0}", "{real1}", "--merge-runs"],
    # each option reads these traces otherwise than its default (a group name with a space: quoted)
    ["--from", "{kafkatest}/v1.jsonl", "{kafkatest}/v2.jsonl", "--format", "verifiable-consumer", "--group", "orders x"],
    ["--from", "{kafka-python}/k1.log", "--log-timezone", "+02:00"],
])
def test_the_command_a_refused_corpus_names_writes_it_again(write: list[str], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The refusal's "Write it again" command, run as given, writes the same rows (its options decide the groups:
    a simulated corpus's mutants, fraction and faults; a --from corpus's --merge-runs, --group, --format and
    --log-timezone)."""
    import shlex

    dirs = sorted(str(p) for p in REAL.iterdir() if p.is_dir())[:2]
    old = tmp_path / "old"
    argv = [a.replace("{real0}", dirs[0]).replace("{real1}", dirs[1]).replace("{kafkatest}", str(REAL / "kafkatest-range"))
            .replace("{kafka-python}", str(REAL / "kafka-python-range")) for a in write]
    assert main(["corpus", *argv, "--out", str(old)]) == 0
    info = json.loads((old / "input.json").read_text())
    info["layout"] = LAYOUT - 1
    (old / "input.json").write_text(json.dumps(info))
    with pytest.raises(LayoutError) as refused:
        check_layout(old)
    command = str(refused.value).split("Write it again: ", 1)[1]
    assert command.startswith("groupspec corpus ") and "..." not in command
    new = tmp_path / "new"
    again = [str(new) if a == "NEWDIR" else a for a in shlex.split(command)[2:]]
    assert main(["corpus", *again]) == 0
    capsys.readouterr()
    assert pq.read_table(new / "events").equals(pq.read_table(old / "events"))


def test_a_corpus_without_input_json_is_mined_with_a_warning_that_its_lines_were_not_counted(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pyspark.sql import SparkSession

    corpus_dir, _ = _restamped(tmp_path, LAYOUT)
    (corpus_dir / "input.json").unlink()

    def started(*_: Any, **__: Any) -> Any:  # the warning comes before Spark: stop there
        raise RuntimeError("stopped by the test\n: the warning is said by now")

    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setattr(session, "build", started)
    capsys.readouterr()
    assert main(["mine", str(corpus_dir), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"mine: warning: {corpus_dir} has no input.json: the lines its writer could not use are not known" in err


def test_corpus_reads_a_log_with_the_format_and_zone_it_is_told_as_check_does(tmp_path: Path,
                                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`corpus --from` takes check's --format and --log-timezone: a kafka-python log's naive times read at
    +02:00 are two hours before the same read as UTC, and a log named with another client's reader gives
    nothing, refused as check refuses it."""
    log = REAL / "kafka-python-range" / "k1.log"
    first = {}
    for zone in ("UTC", "+02:00"):
        out = tmp_path / f"zone{zone}"
        assert main(["corpus", "--from", str(log), "--log-timezone", zone, "--out", str(out)]) == 0
        first[zone] = min(pq.read_table(out / "events").column("timestamp").to_pylist())
    assert first["UTC"] - first["+02:00"] == 2 * 3600 * 1000
    capsys.readouterr()
    assert main(["corpus", "--from", str(log), "--format", "java-consumer-log", "--out", str(tmp_path / "f")]) == 2
    assert "no event read" in capsys.readouterr().err
    assert main(["check", str(log), "--format", "java-consumer-log"]) == 2


def test_progress_names_the_running_stage_and_says_when_none_runs(spark: Any) -> None:
    """`mine` prints a line every few seconds from its start: the active stages' tasks while Spark computes, and
    that the driver is planning while no stage runs (a large plan's analysis takes tens of seconds, which before
    showed as silence after "starting Spark")."""
    said: list[str] = []
    with mine.Progress(spark, said.append, every_s=0.05):
        time.sleep(0.3)  # nothing submitted: the driver's side
        idle = len(said)
        # one task that sleeps a second inside the JVM (java.lang.Thread.sleep through Spark SQL's reflect); the
        # row's id in the argument keeps the optimizer from calling it once while it plans (constant folding)
        spark.range(0, 1, 1, 1).selectExpr("reflect('java.lang.Thread', 'sleep', cast(1000 + id as bigint))").collect()
    assert idle >= 1 and all(s.endswith("s, no stage running: the driver is planning") for s in said[:idle])
    assert any(re.fullmatch(r"mine: \d+ s, stage \d+: 0/1 tasks", s) for s in said[idle:]), said[idle:]
    assert all(s.startswith("mine: ") for s in said)
