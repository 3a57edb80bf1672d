"""Every relative link in the README and docs/ leads somewhere: the file exists, and an anchor names one of
its headings (as GitHub renders it). The docs cite each other by section ("benchmarks-spark.md, "the offsets
cut""), and a moved section must not leave a reader at a dead link."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
# [text](target): the target up to the closing parenthesis, no spaces (a title after a space is not used here)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case; letters, digits, ``_``, ``-`` and spaces kept, spaces made
    ``-``; everything else (punctuation, backticks) dropped."""
    text = heading.strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def _prose(page: Path) -> list[tuple[int, str]]:
    """The page's lines outside fenced code blocks, numbered from 1."""
    out, fenced = [], False
    for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
        elif not fenced:
            out.append((n, line))
    return out


@cache  # read once per page, however many links lead to it
def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings; a repeated heading gets ``-1``, ``-2``, ..."""
    seen: Counter[str] = Counter()
    out = set()
    for _, line in _prose(page):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = _slug(m.group(1))
            out.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
            seen[slug] += 1
    return out


def broken(page: Path, root: Path = ROOT) -> list[str]:
    """``page:line: target: why`` for each relative link of the page that leads nowhere."""
    out = []
    for n, line in _prose(page):
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ... are not checked here
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                out.append(f"{page.relative_to(root)}:{n}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                out.append(f"{page.relative_to(root)}:{n}: {target}: no heading with that anchor in {dest.name}")
    return out


def test_slug_follows_github():
    assert _slug("Mining on Spark: `member_rows`' windows merged (issue 15, h18-windows)") == \
        "mining-on-spark-member_rows-windows-merged-issue-15-h18-windows"
    assert _slug("Proofs (`groupspec prove`, `python -m benchmarks proofs`)") == \
        "proofs-groupspec-prove-python--m-benchmarks-proofs"


def test_a_dead_link_is_reported(tmp_path):
    (tmp_path / "a.md").write_text("# Top\n\n## Two words\n\n[ok](#two-words) [gone](b.md) [bad](#nowhere)\n"
                                   "```\n[inside a fence](c.md)\n```\n", encoding="utf-8")
    assert broken(tmp_path / "a.md", tmp_path) == ["a.md:5: b.md: no such file",
                                                   "a.md:5: #nowhere: no heading with that anchor in a.md"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    assert broken(page) == []
