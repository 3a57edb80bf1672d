"""Report rendering: one small document model, rendered to Markdown and to a self-contained HTML page.

Every report groupspec writes (proofs, trace checks, verify, conformance, mining) is a JSON document
for machines plus a :class:`Document` for people. A document is a title and a list of blocks; a
block is a paragraph (``str``), a :class:`Table`, a :class:`~groupspec.timeline.Timeline` (who owned
which partition when), a plot of :mod:`groupspec.plots`, any *figure* (an object with ``to_html()``
and ``to_markdown()``), or a nested :class:`Section`. Table cells are plain values or :class:`Link`.
Every string that came from input is escaped on the way out: HTML through ``html.escape``, Markdown
table cells by escaping ``|`` and flattening newlines, so a member id like ``<script>`` or ``a|b``
cannot break the page.

The page is one file that opens offline: the style sheet is inline, timelines and plots are inline
SVG, there is no script and nothing is fetched. Tables wrap long cells instead of overflowing.

Evidence: :func:`evidence_section` turns ``file:line`` references into a section quoting each line
(an excerpt read from the input) under an anchor; :func:`evidence_link` is the cell that links to
it, and the section links on to the file itself.

Stable API for every report module: ``Document``, ``Section``, ``Table``, ``Link``, ``Timeline``,
``Band``, ``Mark``, ``to_html``, ``to_markdown``, ``write_report``, ``evidence_section``,
``evidence_link``, ``Evidence``; times through :mod:`groupspec.timefmt`.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from groupspec import timeline as _timeline
from groupspec.timeline import Band, Interval, Mark, Timeline

__all__ = ["Band", "Block", "Document", "Evidence", "Figure", "Interval", "Link", "Mark", "Section", "Table",
           "Timeline", "evidence_link", "evidence_section", "page", "to_html", "to_markdown", "write_report"]


@dataclass
class Link:
    """A table cell (or paragraph) that links somewhere: another report, an anchor of this page, a file."""

    text: str
    href: str
    title: str | None = None

    def __str__(self) -> str:
        return self.text


@dataclass
class Table:
    columns: list[str]
    rows: list[list[Any]]
    caption: str | None = None


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)


@runtime_checkable
class Figure(Protocol):
    """Anything that draws itself: plots (:mod:`groupspec.plots`) and other reports' own figures."""

    def to_html(self) -> str: ...

    def to_markdown(self) -> list[str]: ...


Block = str | Table | Timeline | Section | Link | Figure


@dataclass
class Document:
    title: str
    blocks: list[Block] = field(default_factory=list)


# ---------------------------------------------------------------- Markdown


def _md_cell(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(_md_cell(v) for v in value)
    if isinstance(value, Link):
        return f"[{_md_text(value.text)}]({value.href.replace(' ', '%20').replace(')', '%29')})"
    return _md_text("" if value is None else str(value))


def _md_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _md_table(table: Table) -> list[str]:
    out = []
    if table.caption:
        out += [f"*{_md_text(table.caption)}*", ""]
    out.append("| " + " | ".join(_md_cell(c) for c in table.columns) + " |")
    out.append("|" + "|".join("---" for _ in table.columns) + "|")
    for row in table.rows:
        out.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
    return out


def _md_blocks(blocks: Sequence[Block], depth: int) -> list[str]:
    out: list[str] = []
    for block in blocks:
        if isinstance(block, str):
            out += [block, ""]
        elif isinstance(block, Link):
            out += [_md_cell(block), ""]
        elif isinstance(block, Table):
            out += _md_table(block) + [""]
        elif isinstance(block, Timeline):
            out += _timeline.to_markdown(block) + [""]
        elif isinstance(block, Section):
            out += ["#" * min(depth, 6) + " " + block.title, ""]
            out += _md_blocks(block.blocks, depth + 1)
        else:
            out += list(block.to_markdown()) + [""]
    return out


def to_markdown(doc: Document) -> str:
    return "\n".join([f"# {doc.title}", ""] + _md_blocks(doc.blocks, 2)).rstrip() + "\n"


# ---------------------------------------------------------------- HTML

CSS = """
:root{color-scheme:light}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5rem auto;max-width:80rem;color:#1f2328;
 padding:0 1rem;line-height:1.45;overflow-wrap:anywhere}
h1{font-size:1.6rem;margin-bottom:.5rem} h2{font-size:1.3rem;border-bottom:1px solid #d0d7de;padding-bottom:.2rem;margin-top:2rem}
h3{font-size:1.1rem} h4,h5,h6{font-size:1rem}
p.headline{font-size:1.1rem;font-weight:600;padding:.6rem .8rem;border-radius:6px;background:#f6f8fa;border-left:5px solid #888}
p.headline.ok{border-color:#1a7f37;background:#eef8f0} p.headline.bad{border-color:#c62828;background:#fdecea}
p.headline.warn{border-color:#bf8700;background:#fff8c5}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;font-size:.88rem;max-width:100%;table-layout:auto}
th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top;overflow-wrap:break-word}
td.long{overflow-wrap:anywhere}
th{background:#f6f8fa;overflow-wrap:normal} p.caption{font-style:italic;margin:.8rem 0 .2rem}
td.ok{color:#1a7f37;font-weight:600;white-space:nowrap} td.bad{color:#c62828;font-weight:600;white-space:nowrap}
tr:nth-child(even) td{background:#fafbfc}
figure{margin:1rem 0 1.5rem;max-width:100%} figcaption{font-style:italic;margin-bottom:.3rem}
svg{display:block;max-width:100%;height:auto;font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
svg text{font-size:11px;fill:#1f2328} svg text.tick{font-size:10px;fill:#57606a} svg text.clock{fill:#8c959f}
svg text.owner{fill:#fff;font-size:10px} svg text.section{font-style:italic;fill:#57606a}
.legend{display:flex;flex-wrap:wrap;gap:.3rem 1rem;font-size:.85rem;margin:.3rem 0 0 0}
.legend .key{display:inline-flex;align-items:center;gap:.35rem}
.legend i{display:inline-block;width:1.1rem;height:.8rem;border-radius:2px}
.legend i.hatch-overlap{background:repeating-linear-gradient(45deg,#d62728 0 2px,#fbe3e3 2px 5px);outline:1px solid #d62728}
.legend i.hatch-zombie{background:repeating-linear-gradient(-45deg,#e6a100 0 2px,#fdf3dc 2px 5px);outline:1px solid #e6a100}
.legend i.open{border:1px dashed #333;background:#ccc}
.note{color:#57606a;font-size:.9rem}
pre.excerpt{background:#f6f8fa;padding:.3rem .5rem;margin:.2rem 0 .8rem;white-space:pre-wrap;overflow-wrap:anywhere;
 font-size:.8rem;border-left:3px solid #d0d7de}
dl.evidence dt{font-family:ui-monospace,monospace;font-size:.85rem;margin-top:.4rem}
dl.evidence dd{margin:0 0 0 1rem} :target{background:#fff8c5}
a{color:#0969da}
"""

_GOOD = {"proved", "refuted", "held", "true", "ok", "pass", "passed", "agree", "agrees"}
_BAD = {"failed", "survived", "violated", "false", "unknown", "violation", "fail", "diverges", "error"}


def _html_value(value: Any) -> str:
    if isinstance(value, Link):
        title = f' title="{html.escape(value.title)}"' if value.title else ""
        return f'<a href="{html.escape(value.href, quote=True)}"{title}>{html.escape(value.text)}</a>'
    if isinstance(value, list | tuple):
        return ", ".join(_html_value(v) for v in value)
    return html.escape("" if value is None else str(value))


def _html_cell(value: Any, tag: str = "td") -> str:
    text = "" if value is None or isinstance(value, list | tuple) else str(value)
    classes = []
    if tag == "td" and text.lower() in _GOOD:
        classes.append("ok")
    elif tag == "td" and text.lower() in _BAD:
        classes.append("bad")
    words = (str(v) for v in value) if isinstance(value, list | tuple) else text.split()
    if any(len(w) > 32 for w in words):
        classes.append("long")  # a path or an id: may break anywhere, so it cannot push the table wide
    cls = f' class="{" ".join(classes)}"' if classes else ""
    return f"<{tag}{cls}>{_html_value(value)}</{tag}>"


def _html_table(table: Table) -> str:
    parts = ["<table>"]
    if table.caption:  # a paragraph, not <caption>: a caption wraps at the width of a narrow table
        parts.insert(0, f'<p class="caption">{html.escape(table.caption)}</p>')
    parts.append("<thead><tr>" + "".join(_html_cell(c, "th") for c in table.columns) + "</tr></thead><tbody>")
    for row in table.rows:
        parts.append("<tr>" + "".join(_html_cell(c) for c in row) + "</tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


def _headline_class(text: str) -> str:
    """A report's first paragraph is its verdict: green when it starts with "held", red when it does not hold."""
    low = text.lower().removeprefix("verdict: ")
    if low.startswith(("not held", "violation", "something failed", "failed")):
        return "headline bad"
    if low.startswith("held, with"):
        return "headline warn"
    if low.startswith("held"):
        return "headline ok"
    return "headline"


def _html_blocks(blocks: Sequence[Block], depth: int, first: bool = False) -> list[str]:
    out: list[str] = []
    for i, block in enumerate(blocks):
        if isinstance(block, str):
            cls = f' class="{_headline_class(block)}"' if first and i == 0 else ""
            out.append(f"<p{cls}>{html.escape(block)}</p>")
        elif isinstance(block, Link):
            out.append(f"<p>{_html_value(block)}</p>")
        elif isinstance(block, Table):
            out.append(_html_table(block))
        elif isinstance(block, Timeline):
            out.append(_timeline.to_html(block))
        elif isinstance(block, Section):
            level = min(depth, 6)
            anchor = _anchor(block.title)
            out.append(f'<section id="{anchor}"><h{level}>{html.escape(block.title)}</h{level}>')
            out += _html_blocks(block.blocks, depth + 1)
            out.append("</section>")
        else:
            out.append(block.to_html())
    return out


def _anchor(title: str) -> str:
    return "s-" + "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-")[:60]


def page(title: str, body: str) -> str:
    """The page shell: one self-contained HTML file (inline style, no script, nothing fetched)."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)}</title><style>{CSS}</style></head>"
            f"<body><h1>{html.escape(title)}</h1>\n{body}\n</body></html>\n")


def to_html(doc: Document) -> str:
    return page(doc.title, "\n".join(_html_blocks(doc.blocks, 2, first=True)))


def write_report(out_dir: Path, stem: str, data: dict[str, Any], doc: Document) -> list[Path]:
    """Write ``stem.json``, ``stem.md`` and ``stem.html`` into ``out_dir`` (created if missing)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{stem}.json", out_dir / f"{stem}.md", out_dir / f"{stem}.html"]
    paths[0].write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
    paths[1].write_text(to_markdown(doc), encoding="utf-8")
    paths[2].write_text(to_html(doc), encoding="utf-8")
    return paths


# ---------------------------------------------------------------- evidence


@dataclass
class Evidence:
    """``file:line`` references, each quoted once in an evidence section under an anchor."""

    refs: dict[str, str] = field(default_factory=dict)  # "file:line" -> anchor
    limit: int = 300

    def anchor(self, ref: str) -> str | None:
        if ref not in self.refs and len(self.refs) < self.limit and _split_ref(ref) is not None:
            self.refs[ref] = f"ev-{len(self.refs) + 1}"
        return self.refs.get(ref)


def _split_ref(ref: str) -> tuple[str, int] | None:
    path, sep, line = ref.rpartition(":")
    if not sep or not line.isdigit():
        return None
    return path, int(line)


def evidence_link(ref: str, evidence: Evidence) -> Link | str:
    """The cell for one ``file:line``: a link to its quoted line in this page's evidence section."""
    anchor = evidence.anchor(ref)
    return Link(ref, f"#{anchor}", "the line, quoted below") if anchor else ref


def evidence_links(refs: Iterable[str], evidence: Evidence) -> list[Link | str]:
    return [evidence_link(r, evidence) for r in refs]


def _read_lines(path: Path, wanted: set[int]) -> dict[int, str]:
    """The wanted lines of a file (gzip if .gz), read once, each cut to 400 characters."""
    out: dict[int, str] = {}
    if not wanted:
        return out
    last = max(wanted)
    try:
        if path.suffix == ".gz":
            import gzip

            fh: Any = gzip.open(path, "rb")  # noqa: SIM115 -- closed by the with below
        else:
            fh = path.open("rb")  # noqa: SIM115 -- closed by the with below
        with fh:
            for n, raw in enumerate(fh, 1):
                if n in wanted:
                    out[n] = raw[:400].decode("utf-8", "replace").rstrip("\r\n")
                if n >= last:
                    break
    except (OSError, EOFError):
        return out
    return out


class _Quotes:
    """The evidence section as a figure: anchors, links to the files, the quoted lines."""

    def __init__(self, items: list[tuple[str, str, str | None, str | None]]) -> None:
        self.items = items  # (ref, anchor, file URI or None, excerpt or None)

    def to_html(self) -> str:
        parts = ['<dl class="evidence">']
        for ref, anchor, uri, excerpt in self.items:
            link = f' <a href="{html.escape(uri, quote=True)}">open the file</a>' if uri else ""
            parts.append(f'<dt id="{anchor}">{html.escape(ref)}{link}</dt>')
            parts.append(f'<dd><pre class="excerpt">{html.escape(excerpt)}</pre></dd>' if excerpt is not None
                         else '<dd class="note">(the line could not be read back)</dd>')
        parts.append("</dl>")
        return "".join(parts)

    def to_markdown(self) -> list[str]:
        out = []
        for ref, _anchor, _uri, excerpt in self.items:
            out.append(f"- `{ref}`: `{(excerpt or '(unreadable)').replace('`', chr(39))[:200]}`")
        return out


def evidence_section(evidence: Evidence, title: str = "Evidence: the input lines cited") -> Section | None:
    """A section quoting every line ``evidence`` handed out an anchor for (None if none)."""
    if not evidence.refs:
        return None
    by_file: dict[str, set[int]] = {}
    for ref in evidence.refs:
        split = _split_ref(ref)
        if split is not None:
            by_file.setdefault(split[0], set()).add(split[1])
    lines = {path: _read_lines(Path(path), wanted) for path, wanted in by_file.items()}
    items = []
    for ref, anchor in evidence.refs.items():
        split = _split_ref(ref)
        assert split is not None
        path, n = split
        p = Path(path)
        uri = p.resolve().as_uri() if p.is_file() else None
        items.append((ref, anchor, uri, lines.get(path, {}).get(n)))
    note = ("Each finding's evidence links here: the line as it is in the input file (cut at 400 characters)."
            + (f" Only the first {evidence.limit} references are quoted." if len(evidence.refs) >= evidence.limit
               else ""))
    return Section(title, [note, _Quotes(items)])
