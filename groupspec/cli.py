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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="groupspec",
                     description="Kafka consumer-group rebalancing: model, proofs, conformance, trace checking.")
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
