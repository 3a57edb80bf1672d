"""The findings register: what groupspec found wrong (or different) in Kafka, its clients and the mock.

``conformance/findings.json`` holds one entry per finding: ``id``, ``what``, ``who`` (client,
coordinator or assignor), ``version``, ``evidence``, ``replay`` (how to see it again), ``upstream``
(an issue, when one exists) and ``status``. It is rendered in docs/findings.md and in every
conformance report. :func:`replay_command` says in one line how to reproduce an entry;
tests/conformance/test_findings.py replays every entry that needs no broker (the model's assignors,
``simulate``, the embedded coordinator's tests).

**Known findings.** An entry may carry a ``signature``: the client it is about, the versions it holds
for (a PEP 440 specifier), and the differences it shows (comparison, kind, and a regular expression
the difference's detail must match in full). :func:`classify` marks a divergence *known finding <id>*
only when all of these hold for it: the entry is open (its status does not begin with "fixed" or
"closed"); the signature's client is one the difference is about (``Difference.clients``) and the
version of it that ran is inside the range; one of the signature's differences has the divergence's
comparison and kind, and its detail pattern matches the divergence's detail in full. Nothing looser:
a new way for the same client to fail, another client, another version or another kind of difference
stays a divergence. A run whose every difference is a known finding has the verdict
``known-finding``, which does not fail the exit code; one new difference makes it a ``divergence``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from conformance.clients import base_name

if TYPE_CHECKING:
    from conformance.compare import Difference

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
        if "signature" in entry:
            _check_signature(entry["signature"], f"{path.name}[{i}].signature")
    return list(entries)


def _check_signature(sig: Any, where: str) -> None:
    if not isinstance(sig, dict) or not {"client", "versions", "differences"} <= set(sig):
        raise ValueError(f"{where}: needs client, versions and differences")
    try:
        SpecifierSet(sig["versions"])
    except InvalidSpecifier as exc:
        raise ValueError(f"{where}.versions: {exc}") from None
    for j, d in enumerate(sig["differences"]):
        if not {"comparison", "kind", "detail"} <= set(d):
            raise ValueError(f"{where}.differences[{j}]: needs comparison, kind and detail")
        try:
            re.compile(d["detail"])
        except re.error as exc:
            raise ValueError(f"{where}.differences[{j}].detail: {exc}") from None


def is_open(entry: Mapping[str, Any]) -> bool:
    return not str(entry["status"]).lower().startswith(("fixed", "closed"))


def match(d: Difference, versions: Mapping[str, str], entries: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The first open registered finding whose signature this difference has (module docstring), with
    the evidence that matched; None if there is none."""
    for entry in entries:
        sig = entry.get("signature")
        if sig is None or not is_open(entry):
            continue
        version = _version_that_ran(sig["client"], d.clients, versions)
        if version is None or version not in SpecifierSet(sig["versions"]):
            continue
        for p in sig["differences"]:
            if p["comparison"] == d.comparison and p["kind"] == d.kind and re.fullmatch(p["detail"], d.detail):
                return {"finding": entry["id"], "client": sig["client"], "version": str(version),
                        "comparison": d.comparison, "kind": d.kind, "detail": d.detail, "what": d.message}
    return None


def _version_that_ran(client: str, labels: Sequence[str], versions: Mapping[str, str]) -> Version | None:
    """The version of ``client`` among the labels a difference is about: the installed one for a plain
    name, the release's own for ``NAME==VERSION`` (its versions entry reads "2.2.15 (own environment)").
    None when the client is not among them or its version cannot be read (never inside a range)."""
    for label in labels:
        if base_name(label) != client:
            continue
        try:
            return Version(versions.get(label, "").split(" ", 1)[0])
        except InvalidVersion:
            return None
    return None


def classify(differences: Sequence[Difference], versions: Mapping[str, str],
             entries: Sequence[Mapping[str, Any]] | None = None) -> str:
    """Mark every difference that matches a registered open finding (``Difference.known``) and return
    the run's verdict: ``pass`` (no difference), ``known-finding`` (every one known) or ``divergence``."""
    entries = load() if entries is None else entries
    for d in differences:
        d.known = match(d, versions, entries)
    if not differences:
        return "pass"
    return "known-finding" if all(d.known is not None for d in differences) else "divergence"


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
    signed = [e for e in entries if "signature" in e]
    if signed:
        lines += ["", "Signatures: a divergence of a conformance run is classified *known finding* only when it",
                  "matches one of these in full (client, version range, comparison, kind, and the detail pattern;",
                  "`conformance/findings.py`, docs/conformance.md); anything else stays a new divergence.", "",
                  "| id | client | versions | comparison / kind / detail |", "|---|---|---|---|"]
        for e in signed:
            sig = e["signature"]
            shown = "; ".join(f"{d['comparison']} / {d['kind']} / `{d['detail']}`" for d in sig["differences"])
            lines.append(f"| `{e['id']}` | {sig['client']} | `{sig['versions']}` | {shown.replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    Path(__file__).resolve().parents[1].joinpath("docs", "findings.md").write_text(markdown(load()), encoding="utf-8")
