"""The report renderer: what a reader of proof / check reports relies on."""

import json

from groupspec.render import Document, Section, Table, Timeline, to_html, to_markdown, write_report

HOSTILE = '<script>alert("x")</script>|a\nb'


def _doc() -> Document:
    return Document("Report", [
        "A paragraph.",
        Table(["member", "status"], [[HOSTILE, "proved"], ["c2", "failed"]], caption="summary"),
        Section("Ownership", [Timeline("orders", {"orders-0": [(0, 100, "c1"), (150, None, HOSTILE)],
                                                  "orders-1": []})]),
    ])


def test_html_escapes_every_input_string():
    page = to_html(_doc())
    assert "<script>" not in page
    assert "&lt;script&gt;" in page
    assert page.startswith("<!DOCTYPE html>")
    assert "<svg" in page  # timelines are inline, so the page is self-contained
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_markdown_table_cells_cannot_break_the_table():
    md = to_markdown(_doc())
    row = next(line for line in md.splitlines() if "script" in line and "proved" in line)
    # The pipe inside the cell is escaped and the newline flattened: still exactly two cells.
    assert row.count(" | ") == 1
    assert "\\|a b" in row


def test_markdown_timeline_lists_open_intervals_and_unowned_lanes():
    md = to_markdown(_doc())
    assert "c1 +0 ms to +100 ms" in md
    assert "+150 ms to the end" in md
    assert "(never owned)" in md


def test_write_report_writes_three_files(tmp_path):
    paths = write_report(tmp_path / "out", "proof", {"ok": True}, _doc())
    assert [p.name for p in paths] == ["proof.json", "proof.md", "proof.html"]
    assert json.loads(paths[0].read_text()) == {"ok": True}
    assert paths[1].read_text().startswith("# Report")
