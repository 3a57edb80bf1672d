"""Every kind of HTML report, opened in a real browser (headless Chromium, Debian's package).

What a person relies on when they open a report: it loads without script errors, nothing runs off
the right edge of a 1400 px window (wide tables wrap), and where there is an ownership timeline it
is drawn -- with the double ownership a counterexample or a broken cooperative rebalance proves
visible as its own hatched mark. Screenshots of each page are left in the test's temporary
directory for a person to look at.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupspec.cli import main
from tests.groupspec.browser import Browser, chromium_path
from tests.traces.support import REAL, ev, write_jsonl

pytestmark = pytest.mark.skipif(
    chromium_path() is None, reason="no Chromium on this machine (.ci/run installs Debian's chromium package)")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
WIDTH = 1400

LAYOUT = """(() => {
  const w = document.documentElement.clientWidth;
  const name = e => e.tagName.toLowerCase() + '.' + (typeof e.className === 'string' ? e.className
                                                      : e.className.baseVal);
  const over = [...document.querySelectorAll('body *')].filter(e => {
    const r = e.getBoundingClientRect(); return r.width > 0 && r.right > w + 1; }).map(name);
  const timelines = [...document.querySelectorAll('svg.timeline')].map(s => ({
    width: s.getBoundingClientRect().width, owned: s.querySelectorAll('rect.owned').length,
    lanes: s.querySelectorAll('g.lane').length, overlaps: s.querySelectorAll('rect.overlap').length,
    bands: s.querySelectorAll('rect.band').length}));
  return {scroll: document.documentElement.scrollWidth, client: w, over: over.slice(0, 8), timelines,
          plots: document.querySelectorAll('svg.plot').length, tables: document.querySelectorAll('table').length,
          headline: (document.querySelector('p.headline') || {}).className || null,
          brokenLinks: [...document.querySelectorAll('a[href^="#"]')].filter(
            a => !document.getElementById(a.getAttribute('href').slice(1))).length};
})()"""


def _coop_overlap_trace(path: Path) -> Path:
    """Two cooperative members of generation 2: b is given t-0 while a still holds it."""
    def e(name: str, ts: int, member: str, gen: int, **fields: Any) -> dict[str, Any]:
        return ev(name, ts, member=member, member_id=f"{member}-1", generation=gen, protocol="cooperative",
                  group="g", **fields)

    return write_jsonl(path, [
        e("group_joined", 1_714_644_000_000, "a", 1), e("partitions_assigned", 1_714_644_000_010, "a", 1, parts=[0, 1]),
        e("group_joined", 1_714_644_002_000, "a", 2), e("group_joined", 1_714_644_002_000, "b", 2),
        e("partitions_assigned", 1_714_644_002_010, "b", 2, parts=[0]),
        e("group_joined", 1_714_644_003_000, "a", 3), e("group_joined", 1_714_644_003_000, "b", 3),
        e("partitions_revoked", 1_714_644_003_010, "a", 3, parts=[0])])


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One HTML page of every kind groupspec writes."""
    out = tmp_path_factory.mktemp("reports")
    pages: dict[str, Path] = {}
    main(["check", "--out", str(out / "check-real"), str(REAL / "kafka-python-range")])
    pages["check, a real capture"] = out / "check-real" / "report.html"
    main(["check", "--out", str(out / "check-runs"), str(REAL / "aiokafka-range"), str(REAL / "confluent-kafka-range")])
    pages["check, two runs"] = out / "check-runs" / "report.html"
    trace = _coop_overlap_trace(out / "coop" / "trace.jsonl")
    main(["check", "--out", str(out / "check-coop"), str(trace)])
    pages["check, a cooperative overlap"] = out / "check-coop" / "report.html"
    main(["prove", "--quiet", "--only", "double-claim-both-keep", "--out", str(out / "proof")])
    pages["proof"] = out / "proof" / "proof.html"
    main(["simulate", str(EXAMPLES / "scenario-static-zombie.json"), "--out", str(out / "t.jsonl"),
          "--report", str(out / "simulate")])
    pages["simulate"] = out / "simulate" / "simulate.html"
    main(["assign", "--quiet", str(EXAMPLES / "assign-cooperative-join.json"), "--out", str(out / "assign")])
    pages["assign"] = out / "assign" / "assign.html"
    examples = out / "examples"
    examples.mkdir()
    for name in ("assign-roundrobin-two-topics.json", "scenario-static-zombie.json"):
        shutil.copy(EXAMPLES / name, examples / name)
    main(["verify", "--skip-proofs", "--skip-clients", "--examples", str(examples), "--out", str(out / "verify")])
    pages["verify"] = out / "verify" / "verify.html"
    for kind, page in pages.items():
        assert page.is_file(), kind
    return pages


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    path = chromium_path()
    assert path is not None
    b = Browser(path)
    try:
        yield b
    finally:
        b.close()


def _layout(browser: Browser, page: Path, shots: Path) -> dict[str, Any]:
    opened = browser.open(page.resolve().as_uri(), width=WIDTH)
    layout: dict[str, Any] = opened.evaluate(LAYOUT)
    layout["errors"] = opened.errors()
    opened.screenshot(shots / (page.parent.name + ".png"))
    return layout


@pytest.mark.parametrize("kind", ["check, a real capture", "check, two runs", "check, a cooperative overlap", "proof",
                                  "simulate", "assign", "verify"])
def test_report_loads_fits_and_draws(kind: str, reports: dict[str, Path], browser: Browser) -> None:
    layout = _layout(browser, reports[kind], reports[kind].parent)
    assert layout["errors"] == []
    assert layout["scroll"] <= layout["client"] == WIDTH, json.dumps(layout)
    assert layout["over"] == [], json.dumps(layout)
    assert layout["brokenLinks"] == 0
    assert layout["headline"] is not None and "headline" in layout["headline"]
    if kind != "assign":
        assert layout["timelines"] or kind == "verify", json.dumps(layout)
    for timeline in layout["timelines"]:
        assert timeline["owned"] > 0 and timeline["lanes"] > 0
        assert 600 <= timeline["width"] <= WIDTH  # drawn, and wide enough to read
    if kind.startswith("check, a real"):
        assert layout["plots"] >= 3  # rebalance durations, stop-the-world per member, events over time
        assert layout["timelines"][0]["bands"] > 0  # rebalances as bands


@pytest.mark.parametrize("kind", ["check, a cooperative overlap", "proof"])
def test_double_ownership_is_visible(kind: str, reports: dict[str, Path], browser: Browser) -> None:
    """Two owners of one partition are drawn in two sub-rows and their overlap is hatched, not painted over."""
    layout = _layout(browser, reports[kind], reports[kind].parent)
    assert sum(t["overlaps"] for t in layout["timelines"]) >= 1, json.dumps(layout)


def test_check_report_links_evidence_to_quoted_input_lines(reports: dict[str, Path], browser: Browser) -> None:
    page = browser.open(reports["check, a cooperative overlap"].resolve().as_uri(), width=WIDTH)
    quoted = page.evaluate("""(() => { const a = document.querySelector('td a[href^="#ev-"]');
        const dt = document.getElementById(a.getAttribute('href').slice(1));
        return [a.textContent, dt.textContent, dt.nextElementSibling.textContent]; })()""")
    ref, anchor_text, excerpt = quoted
    assert ref.endswith("trace.jsonl:5") and anchor_text.startswith(ref)
    assert '"partitions_assigned"' in excerpt and '"member": "b"' in excerpt
