"""The findings register: what groupspec found wrong (or different) in Kafka, its clients and the mock.

``conformance/findings.json`` holds one entry per finding: ``id``, ``what``, ``who`` (client,
coordinator or assignor), ``version``, ``evidence``, ``replay`` (how to see it again), ``upstream``
(an issue, when one exists) and ``status``. It is rendered in docs/findings.md and in every
conformance report. :func:`replay_command` says in one line how to reproduce an entry;
tests/conformance/test_findings.py replays every entry that needs no broker (the model's assignors,
``simulate``, the embedded coordinator's tests).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REGISTER = Path(__file__).with_name("findings.json")
FIELDS = ("id", "what", "who", "version", "evidence", "replay", "upstream", "status")


def load(path: Path = REGISTER) -> list[dict[str, Any]]:
    """Every finding, checked for its fields and unique ids."""
    entries = json.loads(path.read_text(encoding="utf-8"))
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        missing = [f for f in FIELDS if f not in entry]
        if missing:
            raise ValueError(f"{path.name}[{i}]: missing {', '.join(missing)}")
        if entry["id"] in seen:
            raise ValueError(f"{path.name}[{i}]: id {entry['id']!r} used twice")
        seen.add(entry["id"])
    return list(entries)


def replay_command(entry: dict[str, Any]) -> str:
    r = entry["replay"]
    kind = r["kind"]
    if kind == "assign":
        return f"pytest tests/conformance/test_findings.py -k {entry['id']}"
    if kind == "pytest":
        return f"pytest {r['node']}"
    if kind == "simulate":
        return f"groupspec simulate {r['scenario']}"
    if kind == "wire":
        return f"python -c 'from conformance.group_wire import sticky_user_data; print(sticky_user_data(bytes.fromhex(\"{r['user_data']}\")))'"
    if kind == "conform":
        return f"groupspec conform --scenario {r['scenario']} --clients {r['clients']}"
    return "read the sources named in the evidence"


def markdown(entries: list[dict[str, Any]]) -> str:
    """docs/findings.md."""
    lines = ["# Findings", "",
             "What groupspec found wrong, or different from Apache Kafka's Java reference, in Kafka itself, its",
             "clients and librdkafka's mock cluster. One entry per finding; the register is",
             "`conformance/findings.json` (this page is generated from it by `python -m conformance.findings`),",
             "and every conformance report lists it too. `tests/conformance/test_findings.py` replays every entry",
             "that needs no broker.", "",
             "| id | what | who, version | replay | upstream | status |", "|---|---|---|---|---|---|"]
    for e in entries:
        cells = [f"`{e['id']}`", e["what"], f"{e['who']} {e['version']}", f"`{replay_command(e)}`",
                 e["upstream"] or "none known", e["status"]]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    lines += ["", "Evidence, per entry:", ""]
    lines += [f"- `{e['id']}`: {e['evidence']}" for e in entries]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    Path(__file__).resolve().parents[1].joinpath("docs", "findings.md").write_text(markdown(load()), encoding="utf-8")
