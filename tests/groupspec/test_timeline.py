"""Times, the ownership timeline and the plots: what a reader of any report relies on."""

from __future__ import annotations

import re

from groupspec import timefmt
from groupspec.plots import Counts, HBars, TimeBars
from groupspec.render import Band, Document, Mark, Timeline, to_html, to_markdown
from groupspec.timeline import from_events, overlaps, pauses, sub_rows, tick_labels, ticks

WALL = 1_795_257_949_804  # 2026-11-21T10:45:49.804Z


def test_times_read_as_wall_clock_and_time_since_start() -> None:
    assert timefmt.iso_ms(WALL) == "2026-11-21T10:45:49.804Z"
    assert timefmt.at(WALL + 15_300, WALL) == "2026-11-21T10:46:05.104Z (+15.3 s)"
    assert timefmt.iso_ms(3000) == "t=3.000 s"  # a model clock is not a date in 1970
    assert [timefmt.duration(ms) for ms in (850, 2063, 12_400, 185_000, 7_260_000)] == [
        "850 ms", "2.06 s", "12.4 s", "3 min 05 s", "2 h 01 min"]
    assert timefmt.window(WALL, WALL, WALL) == "2026-11-21T10:45:49.804Z (+0 ms)"
    assert timefmt.window(WALL, WALL + 100, WALL).endswith("for 100 ms")


def test_ticks_fall_on_round_steps_from_the_start() -> None:
    got = ticks(WALL - 265, WALL + 15_000, origin=WALL)
    steps = {b - a for a, b in zip(got, got[1:], strict=False)}
    assert steps == {2000} and got[0] == WALL
    assert tick_labels(WALL + 4000, WALL) == ("+4 s", "10:45:53.804")
    assert tick_labels(120_000, 0) == ("+2 min", "")


def test_two_owners_of_one_partition_get_two_sub_rows_and_an_overlap() -> None:
    ivs = [(0, 100, "a"), (50, None, "b"), (100, 200, "a")]
    assert sub_rows(ivs, 300) == [0, 1, 0]
    assert overlaps(ivs, 300) == [(50, 100, "a", "b"), (100, 200, "b", "a")]
    page = to_html(Document("t", [Timeline("own", {"p-0": ivs, "p-1": [(0, 300, "c")]})]))
    assert page.count('class="overlap"') == 2
    rows = {float(y) for y in re.findall(r'<rect class="owned" x="[\d.]+" y="([\d.]+)"', page)}
    assert len(rows) == 3  # p-0 in two sub-rows, p-1 in one


def test_a_zombie_window_replaces_the_overlap_hatch_and_everything_has_a_legend() -> None:
    tl = Timeline("own", {"p-0": [(0, 100, "a"), (50, None, "b")]}, bands=[Band(40, 60, "rebalance")],
                  marks=[Mark(50, 100, "zombie a", "zombie", "p-0"), Mark(10, 20, "a owned nothing", "pause", "a")])
    page = to_html(Document("t", [tl]))
    assert 'class="overlap"' not in page and 'class="zombie"' in page
    for key in ("zombie window", "rebalance", "stop-the-world (owned nothing)", "still owned at the end"):
        assert key in page


def test_pauses_are_the_gaps_a_member_owned_nothing_during_a_rebalance() -> None:
    lanes = {"p-0": [(0, 100, "a"), (300, None, "a")], "p-1": [(0, 150, "a"), (500, None, "b")]}
    marks = pauses(lanes, [Band(120, 320, "rebalance")])
    assert [(m.lane, m.start, m.end) for m in marks] == [("a", 150, 300)]
    assert pauses(lanes, []) == []  # a gap outside any rebalance is not a stop-the-world


def test_a_counterexample_timeline_shows_claims_rebalances_and_double_ownership() -> None:
    events = [
        {"name": "group_joined", "timestamp": 0, "member": "m0", "owned": [{"topic": "t", "partition": 0}]},
        {"name": "group_joined", "timestamp": 0, "member": "m1", "owned": [{"topic": "t", "partition": 0}]},
        {"name": "coordinator_rebalance", "timestamp": 1},
        {"name": "coordinator_stable", "timestamp": 5, "generation": 2},
        {"name": "partitions_revoked", "timestamp": 6, "member": "m1", "partitions": [{"topic": "t", "partition": 0}]},
    ]
    tl = from_events(events, "x")
    assert tl.start == 0  # time since the run's start, not since the last interval drawn
    assert tl.lanes == {"t-0": [(0, 6, "m1"), (0, None, "m0")]}
    assert [(b.start, b.end) for b in tl.bands] == [(1, 5)]
    assert overlaps(tl.lanes["t-0"], 6) == [(0, 6, "m1", "m0")]
    md = "\n".join(to_markdown(Document("d", [tl])).splitlines())
    assert "Owned by two members at once: t-0 by m1 and m0 from +0 ms for 6 ms" in md


def test_plots_are_inline_svg_with_their_values_in_tooltips_and_markdown() -> None:
    bars = TimeBars("durations", [(WALL, 564, "g2"), (WALL + 1000, 2063, "g3")], start=WALL)
    counts = Counts("events", [WALL, WALL + 10, WALL + 5000], start=WALL, marks=[(WALL + 1000, "rebalance")])
    hbars = HBars("stopped", [("k1", 3740, "k1"), ("k2", 3620, "k2")])
    page = to_html(Document("p", [bars, counts, hbars]))
    assert page.count('<svg class="plot"') == 3 and "<script" not in page
    assert "g3: 2.06 s at 2026-11-21T10:45:50.804Z (+1.00 s)" in page
    assert 'class="mark"' in page
    md = to_markdown(Document("p", [bars, counts, hbars]))
    assert "*durations*: +0 ms 564 ms, +1.00 s 2.06 s" in md and "*stopped*: k1 3.74 s, k2 3.62 s" in md
