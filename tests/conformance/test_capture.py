"""The capture tool and the samples it left in tests/traces/samples/real (what the trace checker's tests read)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance import capture
from conformance.capture import CAPTURES, CaptureResult, write_readme
from model.events import STANDARD_NAMES

SAMPLES = Path(__file__).resolve().parents[1] / "traces" / "samples" / "real"
MAX_FILE_BYTES = 400_000


def test_an_unknown_capture_name_is_bad_usage(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert capture.main(["--out", str(tmp_path), "--only", "no-such-client"]) == 2
    err = capsys.readouterr().err
    assert "unknown capture(s) ['no-such-client']" in err and "confluent-kafka-range" in err
    assert not any(tmp_path.iterdir())


def test_readme_describes_each_directory_and_a_failed_capture(tmp_path: Path) -> None:
    (tmp_path / "confluent-kafka-range").mkdir()
    (tmp_path / "kafka-python-range").mkdir()
    results = [CaptureResult("kafka-python-range", False, 3.0, [], "WaitTimeout: timed out after 30s waiting for x")]
    text = write_readme(tmp_path, results).read_text()
    assert "### `confluent-kafka-range/`" in text and "### `kafka-python-range/`" in text
    assert "### `aiokafka-range/`" not in text  # not captured here, not described
    assert "Last capture failed: WaitTimeout" in text
    assert "python -m conformance.capture --out tests/traces/samples/real --only kafka-python-range" in text


@pytest.mark.parametrize("spec", CAPTURES, ids=[c.name for c in CAPTURES])
def test_committed_sample_is_complete(spec: capture.Capture) -> None:
    directory = SAMPLES / spec.name
    assert directory.is_dir(), f"missing sample {directory}: run python -m conformance.capture"
    scenario = json.loads((directory / "scenario.json").read_text())
    assert scenario["error"] is None and scenario["capture"] == spec.name
    assert scenario["versions"]["librdkafka"]
    for path in directory.iterdir():
        assert path.stat().st_size < MAX_FILE_BYTES, f"{path} is too large for a test sample"
    first, second, third = spec.members
    traces = {m: [json.loads(line) for line in (directory / f"{m}.jsonl").read_text().splitlines()]
              for m in spec.members}
    for member, events in traces.items():
        assert (directory / f"{member}.log").stat().st_size > 0
        assert {e["name"] for e in events} <= STANDARD_NAMES
        assert any(e["name"] == "partitions_assigned" for e in events)
        assert any(e["name"] == "records_consumed" for e in events)
        assert any(e["name"] == "offsets_committed" and e["success"] for e in events)
        if spec.client == "kafkatest":
            assert all("_time" in e for e in events)
        else:
            assert all(isinstance(e["timestamp"], int) and e["member"] == member for e in events)
            assert events[0]["name"] == "startup_complete" and events[0]["subscription"] == ["orders"]
    # The scenario: first and third leave cleanly, the second is killed (its trace just ends).
    assert traces[first][-1]["name"] == traces[third][-1]["name"] == "shutdown_complete"
    assert all(e["name"] != "shutdown_complete" for e in traces[second])
    assert (directory / "mock-coordinator.log").read_text().count("changing state") >= 5
    assert (directory / "proxy.log").is_file() == spec.proxy


def test_samples_readme_names_every_sample() -> None:
    text = (SAMPLES / "README.md").read_text()
    for spec in CAPTURES:
        assert f"### `{spec.name}/`" in text
