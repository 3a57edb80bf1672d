"""``groupspec conform``: real clients run generated scenarios; each run is compared with the model.

Scenarios are drawn by hypothesis (conformance/strategies.py, ``--seed`` reproduces a campaign) in
the format of docs/scenarios.md; each is run by real consumer processes against the coordinator
(``--cluster mock``: librdkafka's mock cluster, the default) and by the model, and the two are
compared (conformance/compare.py; docs/conformance.md says what is compared and why). ``--scenario
FILE`` runs one scenario file instead (the replay command of every run is such a call). ``--client
NAME==VERSION`` adds another release of a Python client, run in an environment of its own made by pip on
first use and cached (conformance/clients.py): every client list naming NAME runs again with the release.

Writes conformance.json, conformance.md and conformance.html into ``--out``, with each run's
directory under ``runs/`` (scenario.json, the members' traces and logs, group-wire.jsonl,
model-trace.jsonl, run.json). Exit 0 when every run passed or was unsupported, 1 on a divergence,
2 on bad input or an infrastructure failure (a run whose clients could not start is an error).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from groupspec.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_VIOLATION, InputError

NAME = "conform"
HELP = "run generated scenarios with real Kafka clients and compare every run with the model"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", choices=["mock", "kafka"], default="mock",
                        help="coordinator: librdkafka's mock cluster (default) or an Apache Kafka broker")
    parser.add_argument("--clients", default=None,
                        help="comma-separated clients dealt to the members in join order; several lists "
                             "separated by ';' run each (default: confluent-kafka,kafka-python,aiokafka on the "
                             "mock; java on kafka)")
    parser.add_argument("--client", action="append", default=[], metavar="NAME==VERSION",
                        help="also run this release of a Python client (confluent-kafka, kafka-python, aiokafka), "
                             "in an environment of its own made by pip on first use and cached: every client "
                             "list naming NAME runs again with the release in its place (repeatable)")
    parser.add_argument("--strategies", default=None,
                        help="assignment strategies of the classic protocol, and consumer-protocol: the same "
                             "scenarios under KIP-848's consumer protocol (librdkafka, the Java consumer), judged by "
                             "the trace checker alone (default: all five; with --scenario, the classic protocol, "
                             "and --strategies consumer-protocol runs the file under KIP-848's)")
    parser.add_argument("--examples", type=int, default=2, help="scenarios per strategy and client set")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scenario", type=Path, metavar="FILE", help="run this one scenario file")
    parser.add_argument("--workers", type=int, default=None,
                        help="groups run side by side (default: 6 on the mock, where runs mostly wait on its "
                             "timers; 1 on kafka, a broker per run)")
    parser.add_argument("--out", type=Path, default=Path("reports/conform"))
    parser.add_argument("--json", action="store_true", help="print conformance.json to stdout")


def _client_sets(text: str) -> list[list[str]]:
    """``--clients``: lists of client names, or of releases ``NAME==VERSION`` (replay commands name them)."""
    from conformance.clients import is_release, parse_release
    from conformance.real_run import CLIENTS

    sets = []
    for part in text.split(";"):
        clients = [c for c in part.replace("+", ",").split(",") if c]
        for c in clients:
            if is_release(c):
                try:
                    parse_release(c)
                except ValueError as exc:
                    raise InputError(f"--clients: {exc}") from None
        unknown = [c for c in clients if c not in CLIENTS and not is_release(c)]
        if unknown or not clients:
            raise InputError(f"--clients: unknown client {unknown[0] if unknown else '(none)'}; known: "
                             f"{', '.join(CLIENTS)}")
        sets.append(clients)
    return sets


def with_releases(client_sets: list[list[str]], releases: list[str]) -> list[list[str]]:
    """The client sets, then each again with a release in place of its client (a set without that
    client: the release alone), so that the two releases run the same scenarios side by side."""
    from conformance.clients import base_name

    out = [list(s) for s in client_sets]
    for label in releases:
        name = base_name(label)
        again = [[label if c == name else c for c in s] for s in client_sets if name in s]
        for s in again or [[label]]:
            if s not in out:
                out.append(s)
    return out


def prepare_releases(client_sets: list[list[str]]) -> None:
    """Make (or find in the cache) the environment of every release the campaign names."""
    from conformance.clients import ReleaseUnavailable, environment, is_release, parse_release

    for label in dict.fromkeys(c for s in client_sets for c in s if is_release(c)):
        try:
            env = environment(parse_release(label), progress=lambda msg: print(msg, file=sys.stderr, flush=True))
        except ReleaseUnavailable as exc:
            raise InputError(f"--client {exc}") from None
        print(f"{label}: {env.client} in {env.path}{' (made now)' if env.fresh else ''}; assignors "
              f"{', '.join(env.assignors)}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """SIGTERM stops the campaign as Ctrl-C does: its runs' processes killed, what finished reported.

    Without it SIGTERM (``kill``, ``timeout``, a CI job's cancel) ends the runner outright: pooled
    drivers die with it (``PR_SET_PDEATHSIG``), but a cold-started client (the Java consumer) and a
    real broker (``--cluster kafka``) would be left running. A SIGINT the runner inherited as ignored
    (a background job of a script, ``nohup``) stays ignored, as POSIX asks; SIGTERM still works there."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(args: argparse.Namespace) -> int:
    from conformance import campaign, findings
    from conformance import strategies as strat
    from conformance.clients import parse_release
    from groupspec.conform_report import document, summary
    from groupspec.render import write_report

    default = "java" if args.cluster == "kafka" else "confluent-kafka,kafka-python,aiokafka"
    releases = []
    for text in args.client:
        try:
            releases.append(parse_release(text).label)
        except ValueError as exc:
            raise InputError(f"--client {exc}") from None
    client_sets = with_releases(_client_sets(args.clients or default), releases)
    if args.strategies is None:
        args.strategies = ",".join(strat.STRATEGIES if args.scenario is not None
                                   else (*strat.STRATEGIES, strat.CONSUMER_PROTOCOL))
    chosen = [s for s in args.strategies.split(",") if s]
    known = (*strat.STRATEGIES, strat.CONSUMER_PROTOCOL)
    bad = [s for s in chosen if s not in known]
    if bad or not chosen:
        raise InputError(f"--strategies: unknown {bad[0] if bad else '(none)'}; known: {', '.join(known)}")
    if args.examples < 1:
        raise InputError("--examples: must be at least 1")
    if args.workers is not None and args.workers < 1:
        raise InputError("--workers: must be at least 1")
    prepare_releases(client_sets)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.scenario is not None:
        from groupspec.commands.simulate import load_scenario

        load_scenario(str(args.scenario))  # every problem is an InputError naming the place
        doc = json.loads(args.scenario.read_text(encoding="utf-8"))
        # the file's own assignors under the classic protocol, and / or under KIP-848's consumer protocol
        protocols = [p for p, asked in (("classic", any(c in strat.STRATEGIES for c in chosen)),
                                        ("consumer", strat.CONSUMER_PROTOCOL in chosen)) if asked]
        runs = [(s, p) for p in protocols for s in client_sets]
        plan = campaign.Plan([(i, doc, s) for i, (s, _) in enumerate(runs)],
                             {i: p for i, (_, p) in enumerate(runs) if p != "classic"})
    else:
        plan = campaign.plan(args.seed, args.examples, chosen, client_sets)

    def progress(done: int, total: int, record: campaign.RunRecord) -> None:
        print(f"[{done}/{total}] {record.verdict:11s} {','.join(record.clients)} {record.strategy} {record.kind} "
              f"({record.seconds:.1f}s)", file=sys.stderr, flush=True)

    interrupted: campaign.CampaignInterrupted | None = None
    try:
        workers = args.workers if args.workers is not None else (6 if args.cluster == "mock" else 1)
        with sigterm_as_ctrl_c():
            records = campaign.campaign(plan, args.out, workers=workers, cluster=args.cluster, progress=progress)
    except campaign.CampaignInterrupted as exc:  # Ctrl-C or SIGTERM: runs in progress killed; report what finished
        interrupted, records = exc, exc.records
    except KeyboardInterrupt:  # before any run started
        interrupted, records = campaign.CampaignInterrupted([], len(plan.runs)), []
    data = campaign.document(records, findings.load(), seed=None if args.scenario else args.seed,
                             cluster=args.cluster,
                             versions=campaign.client_versions(c for s in client_sets for c in s))
    if interrupted is not None:
        data["interrupted"] = {"finished": len(records), "planned": interrupted.total}
    try:
        write_report(args.out, "conformance", data, document(data))
    except OSError as exc:
        raise InputError(f"cannot write the report: {exc.strerror or exc}", source=str(args.out)) from None
    if args.json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        sys.stdout.write(summary(data))
    if interrupted is not None:
        print(f"interrupted: {len(records)} of {interrupted.total} runs finished and are in "
              f"{args.out / 'conformance.json'}; every client process of the runs in progress was killed",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    if data["counts"]["error"]:
        return EXIT_BAD_INPUT
    return EXIT_VIOLATION if data["counts"]["divergence"] else EXIT_OK
