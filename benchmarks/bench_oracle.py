"""The stickiness oracle (``model.stickiness``) against its peer, a one-node-per-partition min-cost flow.

``python -m benchmarks oracle [-- --repeat N --out DIR --peer-large]``

Both solve the same question -- the most partitions an assignment under the same balance
constraint keeps with their valid owner -- with ``networkx.max_flow_min_cost``. Columns: ``oracle s``
is groupspec's path (the closed form under a Quota constraint, the compressed flow otherwise),
``flow s`` the compressed flow forced in every case; ``ratio`` and ``r.flow`` are the peer's time over
each. All three answers must agree. The peer builds
the textbook network: source -> member -> partition (cost -1 where the member validly owns the
partition) -> sink, one node per partition and one edge per (member, subscribed partition). The
oracle merges partitions into topic classes and members' choices into subscription groups
(model/stickiness.py), so its graph does not grow with the partition count.

Scenarios (each: a previous generation's ownership, a membership change, an achieved assignment):

* ``equal``: every consumer subscribes to every topic; 10 % of the previous owners left and as many
  new consumers joined; the achieved assignment is roundrobin's (it ignores ownership, so the gap is
  large). Quota constraint.
* ``unequal``: Kafka's testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout pattern -- consumer i
  subscribes to the first half of the topics when i % 4 == 0, else to the second half; the previous
  owner of each partition is a random subscriber; roundrobin's assignment. Counts constraint.

Sizes: ``small`` and ``medium`` run both (the ratio; the peer runs once on medium, it takes seconds);
``large`` (10,000 partitions x 1,000 consumers, the oracle's speed goal of < 2 s) runs the oracle
only, unless ``--peer-large``: the peer's network has 5-10 million edges there.
Results: a table on stdout and reports/bench/oracle.json. The two answers must agree: a
disagreement is exit 1.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import networkx as nx

from model.assignors import assign
from model.invariants.assignment import valid_claims
from model.stickiness import Quota, flow_network, oracle_problem, solve, solve_flow
from model.types import GroupAssignment, Subscription, TopicPartition

SIZES = {"small": (10, 20, 20), "medium": (10, 100, 100), "large": (10, 1000, 1000)}  # topics, partitions/topic, consumers


def scenario(kind: str, topics: int, per_topic: int, consumers: int, seed: int = 7
             ) -> tuple[dict[str, int], list[Subscription], GroupAssignment]:
    rnd = random.Random(seed)
    names = [f"t{i:02d}" for i in range(topics)]
    ppt = dict.fromkeys(names, per_topic)
    width = len(str(consumers * 2))
    ids = [f"c{i:0{width}d}" for i in range(consumers)]

    def topics_of(i: int) -> tuple[str, ...]:
        if kind == "equal":
            return tuple(names)
        return tuple(names[: topics // 2]) if i % 4 == 0 else tuple(names[topics // 2:])

    # the previous generation: members 0..n-1 with ownership; 10 % leave, as many join
    owned: dict[str, list[TopicPartition]] = {m: [] for m in ids}
    subscribers: dict[str, list[str]] = {t: [ids[i] for i in range(consumers) if t in topics_of(i)] for t in names}
    for t in names:
        for p in range(per_topic):
            owned[rnd.choice(subscribers[t])].append(TopicPartition(t, p))
    leaving = set(rnd.sample(ids, consumers // 10))
    subs = [Subscription(m, topics_of(i), tuple(owned[m]), 5) for i, m in enumerate(ids) if m not in leaving]
    subs += [Subscription(f"n{j:0{width}d}", topics_of(j), (), -1) for j in range(len(leaving))]
    achieved = assign("roundrobin", ppt, subs)
    return ppt, subs, achieved


def naive_optimum(ppt: Mapping[str, int], subs: Sequence[Subscription], achieved: GroupAssignment) -> tuple[int, int]:
    """The peer: one node per partition. Returns (optimum, edges)."""
    problem = oracle_problem(ppt, subs, achieved)  # only for the constraint (the same one the oracle uses)
    owner = valid_claims(ppt, subs).owner
    graph = nx.DiGraph()
    constraint = problem.constraint
    if isinstance(constraint, Quota) and constraint.num_max:
        graph.add_edge("s", "extra", capacity=constraint.num_max, weight=0)
    for sub in subs:
        m = ("m", sub.member_id)
        if isinstance(constraint, Quota):
            graph.add_edge("s", m, capacity=constraint.min_quota, weight=0)
            if constraint.num_max:
                graph.add_edge("extra", m, capacity=1, weight=0)
        else:
            graph.add_edge("s", m, capacity=constraint.counts[sub.member_id], weight=0)
        for t in sub.topics:
            for p in range(ppt.get(t, 0)):
                tp = TopicPartition(t, p)
                graph.add_edge(m, tp, capacity=1, weight=-1 if owner.get(tp) == sub.member_id else 0)
    for t, n in ppt.items():
        for p in range(n):
            graph.add_edge(TopicPartition(t, p), "t", capacity=1, weight=0)
    flow = nx.max_flow_min_cost(graph, "s", "t")
    return -int(nx.cost_of_flow(graph, flow)), graph.number_of_edges()


def oracle_optimum(ppt: Mapping[str, int], subs: Sequence[Subscription], achieved: GroupAssignment) -> tuple[int, int]:
    """The oracle as groupspec runs it, end to end: claims, classes, then the closed form (Quota) or the
    flow (Counts). Returns (optimum, 0)."""
    return solve(oracle_problem(ppt, subs, achieved)), 0


def oracle_flow_optimum(ppt: Mapping[str, int], subs: Sequence[Subscription],
                        achieved: GroupAssignment) -> tuple[int, int]:
    """The oracle with the compressed min-cost flow forced, also under a Quota constraint."""
    return solve_flow(oracle_problem(ppt, subs, achieved)), 0


def timed(fn: Callable[[], tuple[int, int]], repeat: int) -> tuple[int, int, float]:
    times, answer = [], (0, 0)
    for _ in range(repeat):
        start = time.perf_counter()
        answer = fn()
        times.append(time.perf_counter() - start)
    return answer[0], answer[1], statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks oracle", description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median is reported")
    parser.add_argument("--out", type=Path, default=Path("reports/bench"))
    parser.add_argument("--peer-large", action="store_true",
                        help="also run the peer on the large size (millions of edges: several GB, minutes)")
    args = parser.parse_args(argv)

    rows: list[dict[str, Any]] = []
    disagree = False
    print(HEADER)
    for size, (topics, per_topic, consumers) in SIZES.items():
        for kind in ("equal", "unequal"):
            ppt, subs, achieved = scenario(kind, topics, per_topic, consumers)
            kept = oracle_problem(ppt, subs, achieved).achieved_kept
            constraint = type(oracle_problem(ppt, subs, achieved).constraint).__name__.lower()
            opt, _, secs = timed(partial(oracle_optimum, ppt, subs, achieved), args.repeat)
            f_opt, _, f_secs = timed(partial(oracle_flow_optimum, ppt, subs, achieved), args.repeat)
            disagree |= f_opt != opt
            edges = flow_network(oracle_problem(ppt, subs, achieved)).number_of_edges()
            row: dict[str, Any] = {"size": size, "scenario": kind, "partitions": topics * per_topic,
                                   "consumers": len(subs), "constraint": constraint, "achieved_kept": kept,
                                   "optimum": opt, "oracle_s": round(secs, 4), "oracle_flow_s": round(f_secs, 4),
                                   "oracle_edges": edges}
            if size != "large" or args.peer_large:
                peer_repeat = args.repeat if size == "small" else 1
                p_opt, p_edges, p_secs = timed(partial(naive_optimum, ppt, subs, achieved), peer_repeat)
                row.update(peer_optimum=p_opt, peer_edges=p_edges, peer_s=round(p_secs, 4),
                           ratio=round(p_secs / secs, 1) if secs else None,
                           ratio_flow=round(p_secs / f_secs, 1) if f_secs else None)
                disagree |= p_opt != opt
            rows.append(row)
            print(_line(row), flush=True)

    result = {"benchmark": "oracle", "python": platform.python_version(), "networkx": nx.__version__,
              "machine": platform.machine(), "repeat": args.repeat, "rows": rows,
              "command": "python -m benchmarks oracle -- " + " ".join(argv or [])}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "oracle.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"written {args.out / 'oracle.json'}")
    if disagree:
        print("the oracle and its peer disagree on an optimum", file=sys.stderr)
        return 1
    return 0


HEADER = (f"{'size':<7}{'subs':<8}{'parts':>6} {'cons':>5} {'constraint':<10} {'kept':>5} {'optimum':>7} "
          f"{'oracle s':>9} {'flow s':>8} {'edges':>6} {'peer s':>8} {'peer edges':>10} {'ratio':>7} {'r.flow':>7}")


def _line(row: dict[str, Any]) -> str:
    peer = (f"{row['peer_s']:8.3f} {row['peer_edges']:>10} {row['ratio']:>6}x {row['ratio_flow']:>6}x"
            if "peer_s" in row else f"{'-':>8} {'-':>10} {'-':>7} {'-':>7}")
    return (f"{row['size']:<7}{row['scenario']:<8}{row['partitions']:>6} {row['consumers']:>5} {row['constraint']:<10} "
            f"{row['achieved_kept']:>5} {row['optimum']:>7} {row['oracle_s']:9.3f} {row['oracle_flow_s']:8.3f} "
            f"{row['oracle_edges']:>6} {peer}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
