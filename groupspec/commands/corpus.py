"""``groupspec corpus``: a corpus for ``groupspec mine``, as Parquet (docs/mining.md).

``--groups N`` runs the model's simulator over N random groups (worker processes, one per core)
with faults, records and, in a known fraction of them, named mutants; DIR/truth.json says which
group ran which mutant and what the model's monitor flagged. ``--from PATH...`` reads captured
traces (anything ``groupspec check`` reads) into the same layout, counting unusable lines per file
as the checker does. Exit 0 when the corpus was written, 2 for bad input or usage.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from groupspec.commands.check import log_zone, positive
from groupspec.errors import EXIT_OK, InputError
from traces.readers import FORMATS

NAME = "corpus"
HELP = "write a Parquet corpus for `groupspec mine`: simulated groups (--groups) or captured traces (--from)"


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1: {value}")
    return value


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def configure(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--groups", type=positive, metavar="N", help="simulate N random groups with the model")
    source.add_argument("--from", dest="paths", nargs="+", metavar="PATH",
                        help="trace files or folders (every format groupspec check reads)")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="the corpus directory to write")
    parser.add_argument("--mutant-fraction", type=_fraction, default=0.0, metavar="F",
                        help="with --groups: the fraction of groups that run one of --mutants (default 0)")
    parser.add_argument("--mutants", type=_names, default=None, metavar="a,b",
                        help="with --groups: mutant names (model/mutants.py); default: every mutant")
    parser.add_argument("--faults", type=_names, default=None, metavar="a,b",
                        help="with --groups: fault kinds to draw from (default: all of "
                             "crash,restart,stall,leave,join,subscribe,add_partitions,move_coordinator,"
                             "fail_coordinator; 'none' for no faults)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="with --groups: the seed (default 0)")
    parser.add_argument("--workers", type=positive, default=None, metavar="N",
                        help="with --groups: worker processes (default: one per core)")
    parser.add_argument("--merge-runs", action="store_true",
                        help="with --from: every path one run (as groupspec check --merge-runs); by default each "
                             "directory is a run of its own and its groups are written as GROUP @ DIRECTORY")
    parser.add_argument("--group", default="default", metavar="NAME",
                        help="with --from: the group of events that name none (as groupspec check --group)")
    parser.add_argument("--format", choices=list(FORMATS), default=None,
                        help="with --from: read every named file with this reader instead of detecting the format "
                             "(as groupspec check --format)")
    parser.add_argument("--log-timezone", type=log_zone, default=None, metavar="ZONE",
                        help="with --from: the zone of log times written without one: local (default), UTC or "
                             "+HH:MM (as groupspec check --log-timezone)")


def run(args: argparse.Namespace) -> int:
    from spark_analysis import corpus

    existed = args.out.exists()
    if existed and any(args.out.iterdir()):
        raise InputError("the output directory is not empty", source=str(args.out))
    if args.paths is not None:
        from traces.schema import TraceInputError

        try:
            corpus.from_runs(args.paths, args.out, fmt=args.format, default_group=args.group,
                             naive_offset_ms=args.log_timezone, merge=args.merge_runs)
        except TraceInputError as exc:
            # what was written before the bad run is no corpus: a later `groupspec mine` must not read it as one
            # (the directory was empty or absent, so all of it is this command's)
            _clear(args.out, existed)
            raise InputError(str(exc)) from None
        return EXIT_OK
    from model.mutants import MUTANTS

    mutants = args.mutants if args.mutants is not None else tuple(MUTANTS)
    unknown = [m for m in mutants if m not in MUTANTS]
    if unknown:
        raise InputError(f"--mutants: unknown mutant(s) {', '.join(unknown)}; known: {', '.join(MUTANTS)}")
    faults = args.faults if args.faults is not None else corpus.GROUP_FAULTS
    if faults == ("none",):
        faults = ()
    bad = [f for f in faults if f not in corpus.GROUP_FAULTS]
    if bad:
        raise InputError(f"--faults: unknown fault(s) {', '.join(bad)}; known: {', '.join(corpus.GROUP_FAULTS)}")
    if args.mutant_fraction > 0 and not mutants:
        raise InputError("--mutant-fraction needs at least one mutant")
    spec = corpus.CorpusSpec(groups=args.groups, seed=args.seed, mutant_fraction=args.mutant_fraction,
                             mutants=tuple(mutants), faults=tuple(faults))
    corpus.simulate_groups(spec, args.out, workers=args.workers or os.cpu_count())
    return EXIT_OK


def _clear(out: Path, keep_dir: bool) -> None:
    """Remove what this command wrote into ``out`` (empty or absent when it started); the directory itself stays
    when it was there before."""
    if not out.exists():
        return
    if not keep_dir:
        shutil.rmtree(out)
        return
    for child in out.iterdir():
        if child.is_dir():
            shutil.rmtree(child)
        else:
            child.unlink()
