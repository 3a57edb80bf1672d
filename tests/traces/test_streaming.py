"""The checker streams: its state grows with members and partitions (and the capped reports), never
with the number of events; and the readers never hold a file."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from benchmarks.gen_trace import generate
from tests.traces.support import run
from traces.analytics import AnalyticsConfig
from traces.checker import CheckConfig, Checker
from traces.detect import plan
from traces.merge import merged
from traces.schema import InputStats


def _state_after(path: Path, **analytics: int) -> tuple[int, int]:
    p = plan([str(path)])
    stats = InputStats()
    checker = Checker(p.sources, CheckConfig(analytics=AnalyticsConfig(**analytics)), stats, p.callback_members)
    checker.run(merged(p.sources, stats))
    checker.finish()
    assert checker.finding_counts == {}, checker.finding_counts  # the generated traces are correct
    return checker.state_size(), checker.events


def test_state_does_not_grow_with_events(tmp_path: Path) -> None:
    small = generate(tmp_path / "small.jsonl", 5_000, members=8, partitions=24, rebalance_every=10**9)
    large = generate(tmp_path / "large.jsonl", 40_000, members=8, partitions=24, rebalance_every=10**9)
    assert large >= 7 * small
    small_state, small_events = _state_after(tmp_path / "small.jsonl")
    large_state, large_events = _state_after(tmp_path / "large.jsonl")
    assert large_events >= 7 * small_events
    assert large_state <= small_state + 8  # the same members and partitions: the same state
    assert large_state < 8 * 24 * 10


def test_state_is_capped_when_rebalances_keep_coming(tmp_path: Path) -> None:
    generate(tmp_path / "stormy.jsonl", 40_000, members=6, partitions=12, rebalance_every=400, seed=3)
    state, _ = _state_after(tmp_path / "stormy.jsonl", max_rebalances=50, timeline_cap=200)
    assert state < 6 * 12 * 10 + 50 + 200 + 100


def test_split_files_merge_to_the_same_result(tmp_path: Path) -> None:
    generate(tmp_path / "one.jsonl", 20_000, members=5, partitions=10, rebalance_every=3_000, seed=7)
    generate(tmp_path / "split", 20_000, members=5, partitions=10, rebalance_every=3_000, seed=7, split=True)
    one, split = run(tmp_path / "one.jsonl"), run(tmp_path / "split")
    assert one["verdict"] == split["verdict"] == "held"
    assert one["input"]["events"] == split["input"]["events"]
    assert split["input"]["files"] == len(list((tmp_path / "split").iterdir()))
    assert one["groups"]["bench"]["rebalance_count"] == split["groups"]["bench"]["rebalance_count"]


def test_peak_memory_does_not_grow_with_the_trace(tmp_path: Path) -> None:
    generate(tmp_path / "a.jsonl", 5_000, members=8, partitions=24, rebalance_every=10**9)
    generate(tmp_path / "b.jsonl", 40_000, members=8, partitions=24, rebalance_every=10**9)

    def peak(path: Path) -> int:
        tracemalloc.start()
        try:
            run(path)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(tmp_path / "a.jsonl"), peak(tmp_path / "b.jsonl")
    assert (tmp_path / "b.jsonl").stat().st_size > 7 * (tmp_path / "a.jsonl").stat().st_size
    assert large < small * 1.5, (small, large)
