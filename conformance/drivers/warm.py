"""A driver process started ahead of time: it imports its driver (and so its client library), then
waits for its go.

``python -m conformance.drivers.warm MODULE`` imports ``MODULE`` (e.g.
``conformance.drivers.kafka_python``), then blocks reading one JSON line from stdin:
``{"argv": [...], "log": PATH}``. On it, the process sends its stdout and stderr to ``PATH`` (the
driver's log, as a cold start would) and runs ``MODULE.main(argv)``: from then on it *is* that driver,
with the same pid, so SIGKILL, SIGSTOP and SIGTERM reach the client exactly as in a cold start
(:class:`conformance.drivers.process.ConsumerProcess`). End of input without a go (the runner closed
the pool) is a clean exit.

Why: a Python client takes 0.3-1 s to import (kafka-python the longest, measured in
docs/benchmarks.md), and a conformance run starts a consumer per join and restart; a pool of these
(:class:`conformance.drivers.process.WarmPool`) takes the import off the run's critical path.

A warm process asks the kernel to SIGKILL it when the thread that started it ends
(``prctl(PR_SET_PDEATHSIG)``, Linux), so a runner killed outright leaves no idle driver behind.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent() -> None:
    """SIGKILL this process when its parent goes (Linux only; elsewhere nothing)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def main() -> int:
    die_with_parent()
    module = importlib.import_module(sys.argv[1])
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    go = json.loads(line)
    fd = os.open(go["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    argv = [str(a) for a in go["argv"]]
    sys.argv = [sys.argv[1], *argv]
    return int(module.main(argv) or 0)


if __name__ == "__main__":
    sys.exit(main())
