"""Errors the command line turns into exit codes (DESIGN.md: 0 held, 1 violation, 2 bad input)."""

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
