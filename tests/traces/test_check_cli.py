"""``groupspec check`` on the command line: exit codes, --json, --out, the human summary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from groupspec.cli import main
from tests.traces.support import SAMPLES, consumed, ev, write_jsonl

CLEAN = {"a": [ev("startup_complete", 0), ev("partitions_assigned", 10, parts=[0, 1]), consumed(20, 0, 0, 4),
               ev("partitions_revoked", 100, parts=[0, 1]), ev("shutdown_complete", 110)],
         "b": [ev("startup_complete", 0), ev("partitions_assigned", 200, parts=[0, 1]), ev("shutdown_complete", 300)]}
BROKEN = {"a": [ev("startup_complete", 0), ev("partitions_assigned", 10, parts=[0]), ev("partitions_revoked", 300, parts=[0]),
                ev("shutdown_complete", 310)],
          "b": [ev("startup_complete", 0), ev("partitions_assigned", 200, parts=[0]), ev("shutdown_complete", 400)]}


def _write(tmp_path: Path, files: dict[str, list[dict[str, object]]]) -> Path:
    for name, events in files.items():
        write_jsonl(tmp_path / f"{name}.jsonl", events)
    return tmp_path


def test_exit_0_when_nothing_is_violated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(_write(tmp_path, CLEAN))]) == 0
    out = capsys.readouterr().out
    assert "read 2 file(s), 8 event(s)" in out
    assert "verdict: held" in out


def test_exit_1_on_a_violation_with_where_it_happened(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(_write(tmp_path, BROKEN))]) == 1
    out = capsys.readouterr().out
    assert "VIOLATION single-owner [group default] a, b t-0 at t=0.200 s for 100 ms" in out
    assert f"{tmp_path / 'b.jsonl'}:2" in out and f"{tmp_path / 'a.jsonl'}:3" in out


def test_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(_write(tmp_path, BROKEN)), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    [finding] = report["findings"]
    assert {"invariant", "severity", "group", "members", "partitions", "window", "evidence"} <= finding.keys()
    assert finding["partitions"] == [{"topic": "t", "partition": 0}]
    assert report["input"]["files"] == 2 and report["input"]["events"] == 7 and report["input"]["skipped"] == {}
    assert {u["invariant"] for u in report["unchecked"]} >= {"generation-monotonic", "converges"}
    assert all(u["reason"] for u in report["unchecked"])


def test_out_writes_the_three_reports_with_an_escaped_timeline(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    traces = tmp_path / "traces"
    files = {"a": [ev("startup_complete", 0, member="<script>alert(1)</script>"),
                   ev("partitions_assigned", 10, parts=[0], member="<script>alert(1)</script>")]}
    _write(traces, files)
    out_dir = tmp_path / "report"
    assert main(["check", str(traces), "--out", str(out_dir)]) == 0
    assert sorted(p.name for p in out_dir.iterdir()) == ["report.html", "report.json", "report.md"]
    html = (out_dir / "report.html").read_text()
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert "<svg" in html and "t-0" in html  # the ownership timeline
    data = json.loads((out_dir / "report.json").read_text())
    assert data["groups"]["default"]["timeline"] == {"t-0": [[10, None, "<script>alert(1)</script>"]]}
    assert "Who owned which partition when" in (out_dir / "report.md").read_text()


@pytest.mark.parametrize("argv", [
    ["check", "/nonexistent/trace.jsonl"],
    ["check", "--skew-ms", "-5", "x"],
    ["check", "--format", "morse", "x"],
    ["check", "--log-timezone", "Mars", "x"],
])
def test_exit_2_on_unusable_input_or_usage(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        code = main(argv)
        raise SystemExit(code)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1


def test_strict_exits_2_naming_the_bad_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", CLEAN["a"])
    path.write_text(path.read_text() + '{"timestamp": 5, "name": "partitions_teleported"}\n')
    assert main(["check", str(path)]) == 0
    capsys.readouterr()
    assert main(["check", str(path), "--strict"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:6: unknown-event" in err


def test_end_to_end_in_a_subprocess_never_a_traceback(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b'{"timestamp": 1, "name": "startup_complete"}\n\x00\xff\xfe{{{\n[]\n{"name": 3}\n')
    cases = [([str(garbage)], 0), ([str(_write(tmp_path / "broken", BROKEN))], 1), ([str(tmp_path / "missing")], 2),
             ([str(garbage), "--strict"], 2), ([str(SAMPLES / "broker" / "server-scala-3.7.log"), "--json"], 0)]
    for args, expected in cases:
        done = subprocess.run([sys.executable, "-m", "groupspec", "check", *args], capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == expected, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
