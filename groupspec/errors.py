"""Errors the command line turns into exit codes (docs/design.md: 0 held, 1 violation, 2 bad input)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_BAD_INPUT = 2


class InputError(Exception):
    """Bad input or usage. The message names the file, the line or field, and what was wrong.

    Raised anywhere below a command; ``groupspec.cli.main`` prints ``groupspec: <message>`` on
    stderr and exits 2. Never a traceback for bad input.
    """

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None) -> None:
        where = source or ""
        if line is not None:
            where = f"{where}:{line}" if where else f"line {line}"
        super().__init__(f"{where}: {message}" if where else message)


def writable_dir(path: object, option: str = "--out") -> None:
    """Refuse an output directory that cannot be written *before* the work that would fill it.

    Creates it (and its parents) if missing, then writes and removes a probe file: the one test that
    answers for permissions, read-only mounts and a file standing where the directory should be.
    """
    import os
    import tempfile
    from pathlib import Path

    target = Path(str(path))
    try:
        target.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".groupspec-probe-", dir=target)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(f"{option} {target}: cannot write there ({exc.strerror or exc})") from None
