"""What the trust and report work of issue 16 costs the checker: ``python -m benchmarks.bench_check_cost TRACE``.

Runs ``groupspec check`` on one trace (make one with ``python -m benchmarks.gen_trace --events 1000000
--out T.jsonl``) three times each way in this one process and prints the best CPU time of each and their
ratio: the default check, and the check with ``with_activity`` (the per-second event counts only a report
for people asks for). To compare with another tree (say ``main``), run the same command with
``PYTHONPATH`` pointing at it: its line ``default`` is the before.
"""

from __future__ import annotations

import sys
import time

from groupspec.commands.check import check
from traces.checker import CheckConfig


def best_cpu(path: str, with_activity: bool, runs: int = 3) -> tuple[float, int]:
    times, events = [], 0
    for _ in range(runs):
        t0 = time.process_time()
        try:
            report = check([path], CheckConfig(), with_activity=with_activity)
        except TypeError:  # a tree before issue 16 has no with_activity
            if with_activity:
                return float("nan"), 0
            report = check([path], CheckConfig())
        times.append(time.process_time() - t0)
        events = report["input"]["events"]
    return min(times), events


def main(argv: list[str]) -> int:
    path = argv[0]
    plain, events = best_cpu(path, False)
    counted, _ = best_cpu(path, True)
    print(f"default       best {plain:.2f} s CPU, {events / plain:,.0f} events/s")
    if counted == counted:
        print(f"with_activity best {counted:.2f} s CPU, {events / counted:,.0f} events/s "
              f"(x{counted / plain:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
