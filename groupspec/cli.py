"""``groupspec``: the command line. Subcommands live in ``groupspec.commands``, one module each."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from types import ModuleType

from groupspec import commands
from groupspec.errors import EXIT_BAD_INPUT, InputError


def _command_modules() -> list[ModuleType]:
    found = [importlib.import_module(f"{commands.__name__}.{info.name}")
             for info in pkgutil.iter_modules(commands.__path__) if not info.name.startswith("_")]
    return sorted(found, key=lambda m: m.NAME)


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one line, as every groupspec command does on bad usage."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message}\n")


def version_text() -> str:
    """``groupspec 0.1.0 (Python 3.11.7, z3 4.15.4)``: the tool, and what its proofs ran on."""
    import platform

    from groupspec import __version__

    try:
        from importlib.metadata import version

        z3 = f", z3 {version('z3-solver')}"
    except Exception:  # noqa: BLE001 -- z3 missing or not installed as a distribution: say nothing of it
        z3 = ""
    return f"groupspec {__version__} (Python {platform.python_version()}{z3})"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="groupspec",
                     description="Kafka consumer-group rebalancing: model, proofs, conformance, trace checking.")
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for module in _command_modules():
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.configure(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args))
    except InputError as exc:
        print(f"groupspec {args.command}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("groupspec: interrupted", file=sys.stderr)
        return 130
