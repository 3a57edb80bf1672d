"""Run the benchmarks: `python -m benchmarks [NAME ...] [-- ARGS]` (NAME: assignors, oracle, checker, ...).

Each ``benchmarks/bench_<name>.py`` measures one area side by side with its peer and writes its
numbers to reports/bench/<name>.json; docs/benchmarks.md records them with the machine they ran on.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def _available() -> list[str]:
    here = Path(__file__).parent
    return sorted(m.name[len("bench_"):] for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))


def main(argv: list[str]) -> int:
    names, extra = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    known = _available()
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"benchmarks: unknown {', '.join(unknown)}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    worst = 0
    for name in names or known:
        print(f"== {name}", flush=True)
        module = importlib.import_module(f"benchmarks.bench_{name}")
        worst = max(worst, int(module.main(list(extra))))
    return worst


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
