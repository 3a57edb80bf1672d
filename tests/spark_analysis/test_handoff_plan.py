"""The handoffs' plan (``handoff.handoffs``), held on its physical plan.

The handoffs read frames that mine.plan caches, every one partitioned by group: a join or window keyed by
``(group, ...)`` over them needs no exchange. A union of two selects of the intervals reports no partitioning in Spark
4.0, so the window over it was planned after an exchange by (group, topic, partition), and every frame joined to the
handoffs after it was exchanged the same way (14 exchanges at h24). One explode per interval keeps the partitioning.
The holders' polls (the one branch that reads every poll) were sorted once per reader of the handoffs that came after
their join: they are now read once.

No-gap's one join with the broker's commits is held in test_delivery_plan.py
(``test_no_gap_joins_the_hidden_candidates_once``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from spark_analysis import handoff, mine
from tests.spark_analysis.test_delivery_plan import _plan_nodes


def _kind(node: Any) -> str:
    return str(node.getClass().getSimpleName())


def _keys(sort: Any) -> list[str]:
    """A SortExec's keys as written, without expression ids (a key may be an expression: ``cast(h_ac as bigint)``)."""
    order = sort.sortOrder()
    return [re.sub(r"#\d+L?", "", order.apply(i).child().toString()) for i in range(order.size())]


def test_the_handoffs_shuffle_only_the_auto_commit_rows_and_sort_the_polls_once(
        spark: Any, samples_corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the checkpoint of the handoffs (handoff._cut) ends the plan where it stands: its input's plan is counted apart
    cut: list[Any] = []
    checkpoint = handoff._cut
    monkeypatch.setattr(handoff, "_cut", lambda df: cut.append(df) or checkpoint(df))
    p = mine.plan(spark, samples_corpus)
    try:
        assert len(cut) == 1
        nodes, inner = _plan_nodes(p.handoffs), _plan_nodes(cut[0])
        exchanges = [n.simpleString(10) for n in nodes + inner if "Exchange" in _kind(n)]
        # the one left: _auto's union of three frames of a member's auto-commit rows, by group (a few rows)
        assert len(exchanges) == 1, exchanges
        assert "hashpartitioning(a_group" in exchanges[0]
        # the releases and starts: an explode of the intervals, under each of the two windows over them (the handoffs'
        # and the holders'); the one union is _auto's
        assert [sum(_kind(n) == "GenerateExec" for n in x) for x in (nodes, inner)] == [0, 2]
        assert [sum(_kind(n) == "UnionExec" for n in x) for x in (nodes, inner)] == [1, 0]
        # every poll sorted once, by the holder's ownership it may be (was three times, and three more for the
        # restarts' test)
        polls = [_keys(n) for n in nodes if _kind(n) == "SortExec" and _keys(n)[0] == "p_group"]
        assert polls == [["p_group", "p_topic", "p_partition", "p_member", "p_ac"]]
        # the last poll's position and the said auto-commit are hash aggregates (max_by a long), not sorts of structs
        sort_aggs = [n.simpleString(10) for n in nodes if _kind(n) == "SortAggregateExec"]
        assert not any("p_pos" in s or "a_seq" in s for s in sort_aggs), sort_aggs
    finally:
        p.release()
