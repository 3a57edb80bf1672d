"""A hung client for the robustness tests: librdkafka's real driver (conformance.drivers.confluent_kafka)
whose process ignores SIGTERM, as a client stuck in close() would. It joins and consumes like the
real one; only the harness's clean stop never ends it, so the run must kill it at its deadline."""

from __future__ import annotations

import signal
import sys
from typing import Any

from conformance.drivers import confluent_kafka as real

_install = signal.signal


def _no_sigterm(signum: int, handler: Any) -> Any:
    return _install(signum, signal.SIG_IGN if signum == signal.SIGTERM else handler)


def main(argv: list[str] | None = None) -> int:
    signal.signal = _no_sigterm  # type: ignore[assignment]  # the driver's StopFlag installs its handler later
    return real.main(argv)


if __name__ == "__main__":
    sys.exit(main())
