"""The findings register (conformance/findings.json): well formed, rendered in docs/findings.md, and every
entry that needs no broker replayed here -- the assignor bugs through the model's assignors, the model's
findings about Kafka through the simulator, the wire formats through the decoder. Entries replayed by
another test name it (``pytest`` replays), and that test must exist.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from conformance import campaign, findings
from conformance.campaign import model_run
from conformance.group_wire import sticky_user_data
from model.assignors import ASSIGNORS
from model.assignors.sticky import StickyAssignorFailure
from model.invariants.assignment import AssignmentProblem, violated
from model.types import Subscription, TopicPartition

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = findings.load()


def _by_kind(kind: str) -> list[Any]:
    return [pytest.param(e, id=e["id"]) for e in ENTRIES if e["replay"]["kind"] == kind]


def test_the_register_is_rendered_in_docs() -> None:
    assert (ROOT / "docs" / "findings.md").read_text(encoding="utf-8") == findings.markdown(ENTRIES)
    assert len({e["id"] for e in ENTRIES}) == len(ENTRIES) >= 15


@pytest.mark.parametrize("entry", _by_kind("assign"))
def test_assignor_findings_replay(entry: dict[str, Any]) -> None:
    r = entry["replay"]
    subs = tuple(Subscription(m["member_id"], tuple(m["topics"]),
                              owned=tuple(TopicPartition(t, p) for t, p in m.get("owned", [])),
                              generation=m.get("generation", -1)) for m in r["members"])
    assign = ASSIGNORS[r["strategy"]].assign
    if "expect_failure" in r:
        with pytest.raises(StickyAssignorFailure):
            assign(r["partitions"], subs)
        return
    result = assign(r["partitions"], subs)
    assert set(r["expect_violated"]) <= set(violated(r["strategy"], AssignmentProblem.of(r["partitions"], subs),
                                                     result))


@pytest.mark.parametrize("entry", _by_kind("simulate"))
def test_model_findings_about_kafka_replay(entry: dict[str, Any], tmp_path: Path) -> None:
    import json

    doc = json.loads((ROOT / entry["replay"]["scenario"]).read_text(encoding="utf-8"))
    failed, _, _ = model_run(doc, tmp_path)
    assert set(entry["replay"]["expect_violated"]) <= set(failed)


@pytest.mark.parametrize("entry", _by_kind("wire"))
def test_wire_format_findings_replay(entry: dict[str, Any]) -> None:
    decoded = sticky_user_data(bytes.fromhex(entry["replay"]["user_data"]))
    assert decoded is not None and decoded[2] == "kafka-python-3"  # not Java's format


@pytest.mark.parametrize("entry", _by_kind("pytest"))
def test_findings_replayed_by_another_test_name_one_that_exists(entry: dict[str, Any]) -> None:
    path, _, name = entry["replay"]["node"].partition("::")
    text = (ROOT / path).read_text(encoding="utf-8")
    assert not name or f"def {name}(" in text


@pytest.mark.clients
@pytest.mark.parametrize("entry", _by_kind("conform"))
def test_client_findings_on_the_embedded_coordinator_replay(entry: dict[str, Any], tmp_path: Path) -> None:
    """The replay command's run, on the mock: the divergence the finding describes comes back, and is
    classified as this known finding (its signature matches), not as a new divergence."""
    import json

    r = entry["replay"]
    doc = json.loads((ROOT / r["scenario"]).read_text(encoding="utf-8"))
    record = campaign.run_scenario(doc, r["clients"].split(","), tmp_path / "run")
    assert record.verdict == "known-finding", record.comparison
    matched = [d for d in record.comparison["differences"] if (d["known"] or {}).get("finding") == entry["id"]]
    assert any(r["expect"] in d["message"] or r["expect"] == d["detail"] for d in matched), record.comparison


def test_every_signature_names_a_difference_the_comparisons_make() -> None:
    """A signature with a misspelt kind would never match: the known finding would show as new, and the
    register would claim a classification it never makes."""
    import re

    from conformance.compare import KINDS

    signed = [e for e in findings.load() if "signature" in e]
    assert len(signed) >= 8
    for e in signed:
        for d in e["signature"]["differences"]:
            assert d["kind"] in KINDS[d["comparison"]], (e["id"], d)
            re.compile(d["detail"])


def test_a_malformed_signature_is_refused(tmp_path: Path) -> None:
    import json

    entry = dict(findings.load()[0])
    for bad, words in (({"client": "aiokafka", "versions": "=>1", "differences": []}, "versions"),
                       ({"client": "aiokafka", "versions": "==1", "differences": [{"kind": "x"}]}, "differences[0]"),
                       ({"client": "aiokafka", "differences": []}, "needs client")):
        path = tmp_path / "f.json"
        path.write_text(json.dumps([{**entry, "signature": bad}]))
        with pytest.raises(ValueError, match=re.escape(words)):
            findings.load(path)
