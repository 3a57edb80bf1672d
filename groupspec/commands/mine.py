"""``groupspec mine DIR``: the checker's invariants and rebalance analytics over a corpus, on Spark.

DIR is a corpus (``groupspec corpus``). ``local[*]`` by default, ``--master spark://...`` for a
cluster. Writes ``violations.parquet`` and mine.json / .md / .html into ``--out`` (default
reports/mine); ``--json`` prints the report on stdout. Progress goes to stderr. Exit 0 when no
violation was found, 1 when one was, 2 for a corpus that cannot be read, one written in another layout
(``spark_analysis.layout.LAYOUT``: the message says how to write it again) or a Spark failure.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from groupspec.errors import EXIT_OK, EXIT_VIOLATION, InputError

NAME = "mine"
HELP = "find the checker's violations and rebalance analytics in a Parquet corpus with Spark"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("corpus", type=Path, metavar="DIR", help="a corpus written by groupspec corpus")
    parser.add_argument("--master", default="local[*]", metavar="URL", help="Spark master (default local[*])")
    parser.add_argument("--out", type=Path, default=Path("reports/mine"), metavar="DIR",
                        help="where violations.parquet and mine.{json,md,html} go (default reports/mine)")
    parser.add_argument("--json", action="store_true", help="print the report (JSON) on stdout")
    parser.add_argument("--skew-ms", type=int, default=0, metavar="N",
                        help="clock skew tolerated between files (as groupspec check --skew-ms)")
    parser.add_argument("--protocol", choices=["eager", "cooperative"], default=None,
                        help="the protocol of members that do not say (as groupspec check --protocol)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting (repeatable), as spark-submit --conf: for a large corpus "
                             "spark.driver.memory=6g, spark.sql.shuffle.partitions=32 (docs/mining.md)")


def spark_conf(pairs: list[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` pairs as a dict; a pair without ``=`` or with an empty key is an InputError."""
    conf: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise InputError(f"--conf {pair}: not KEY=VALUE (e.g. --conf spark.driver.memory=6g)")
        conf[key.strip()] = value
    return conf


# the master URLs Spark 4 accepts (SparkContext.createTaskScheduler, SparkSubmit's "Master must either be yarn or
# start with spark, k8s, or local"): another one only fails after the JVM started, with the gateway's message
_MASTER = re.compile(r"local(\[[^\]]+\])?|local-cluster\[[^\]]+\]|yarn|(spark|k8s)://.+")


def start_failure(master: str, exc: Exception) -> str:
    """The one line that says why Spark did not start on ``master``.

    A Py4JJavaError's first line names only the call that failed ("An error occurred while calling
    None.org.apache.spark.sql.classic.SparkSession."); the Java exception is on the line after it, prefixed ": ".
    A standalone master that does not answer shows only as a context stopped while it started (Spark's
    StandaloneAppClient gives up after its registration retries and stops it), so the hint names the likely cause
    (the cases a TCP connection answers at once never get here: :func:`unanswered`)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    cause = next((line.removeprefix(":").strip() for line in lines[1:] if line.startswith(":")),
                 lines[0] if lines else type(exc).__name__)
    hint = ""
    if master.startswith("spark://"):
        hint = "; is a master running at that URL and reachable from here? (Spark's log above says what it tried)"
    return f"cannot start Spark on {master}: {cause.rstrip('.') if hint else cause}{hint}"


def unanswered(master: str, timeout_s: float = 5.0) -> str | None:
    """Why no standalone master of ``master`` (``spark://HOST:PORT[,HOST:PORT...]``) can be reached, or None.

    Spark finds out only after its registration retries (StandaloneAppClient: 3 tries 20 s apart, each logged as a
    WARN with the connection's Java stack trace on stderr), then stops the context it was starting: a minute and
    some hundred lines before the one line that says so. A TCP connection tried here first answers the common
    mistakes at once, before the JVM starts: nothing listens at that port (connection refused), a host name that
    does not resolve, no route. Only those definite answers refuse; a master that answers (or a connection that
    only times out, which Spark may still make) is left to Spark, and then its log says what happened."""
    import socket

    if not master.startswith("spark://"):
        return None
    failures = []
    for address in master.removeprefix("spark://").split(","):
        host, colon, port = address.rpartition(":")
        if not colon or not port.isdigit():
            return None  # Spark's own message says what is wrong with the URL
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
                return None
        except TimeoutError:
            return None
        except OSError as exc:
            failures.append(f"{address} ({exc.strerror or exc})")
    return f"nothing answers at {', '.join(failures)}"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from spark_analysis.layout import LayoutError, check_layout, part_files

    if not _MASTER.fullmatch(args.master):
        raise InputError(f"--master {args.master}: not a Spark master URL (local[*], local[N], spark://HOST:PORT, "
                         "yarn, k8s://...)")
    conf = spark_conf(args.conf)
    if "spark.sql.shuffle.partitions" in conf:
        from spark_analysis.session import FROM_CORPUS

        # a count given here wins over the one mine.plan would fit to the corpus, also in a running session that
        # was left to fit it (docs/mining.md, "Large corpora")
        conf.setdefault(FROM_CORPUS, "false")
    if not args.corpus.exists():
        # said apart from "not a corpus": a mistyped path is the likelier mistake, and its fix another
        raise InputError("no such directory; name a corpus written by groupspec corpus --out DIR",
                         source=str(args.corpus))
    if not args.corpus.is_dir() or not part_files(args.corpus):
        raise InputError("not a corpus (no events/part-*.parquet); write one with groupspec corpus",
                         source=str(args.corpus))
    try:
        check_layout(args.corpus)  # before Spark starts: mine.load checks again, for callers of spark_analysis.mine
    except LayoutError as exc:
        raise InputError(str(exc)) from None
    if not (args.corpus / "input.json").exists():
        # mined all the same (docs/mining.md, "The corpus"), but a report that shows no malformed line must not
        # read as "none": nobody counted them
        _say(f"mine: warning: {args.corpus} has no input.json: the lines its writer could not use are not known "
             "(the report's input.malformed is empty, lines and files null); groupspec corpus writes it")
    from pyspark.sql import SparkSession

    from groupspec import mine_report
    from spark_analysis import mine, session

    config = mine.MineConfig(skew_ms=args.skew_ms, default_protocol=args.protocol)
    # a session already running in this process (a notebook, the test suite) is used and left running
    ours = SparkSession.getActiveSession() is None
    failure = unanswered(args.master) if ours else None
    if failure is not None:
        raise InputError(f"cannot start Spark on {args.master}: {failure}; is a master running at that URL and "
                         "reachable from here?")
    _say(f"mine: starting Spark ({args.master})" if ours else "mine: using the running SparkSession")
    try:
        spark = session.build(args.master, extra=conf) if ours else SparkSession.getActiveSession()
    except Exception as exc:  # the JVM did not start: infrastructure, exit 2 with one line
        raise InputError(start_failure(args.master, exc)) from None
    # a running session gets the settings for this run only (a static one, such as the driver's memory,
    # cannot change there: Spark says so, and that is the error)
    before: dict[str, str | None] = {}
    try:
        for key, value in conf.items() if not ours else ():
            old = spark.conf.get(key, None)
            spark.conf.set(key, value)
            before[key] = old
        data = mine.run(spark, args.corpus, args.out, config, progress=_say)
    except Exception as exc:
        from pyspark.errors import PySparkException

        if isinstance(exc, PySparkException):
            raise InputError(f"Spark failed: {str(exc).splitlines()[0]}", source=str(args.corpus)) from None
        raise
    finally:
        if ours:
            spark.stop()
        else:
            session.restore(spark, before)
    written = mine_report.write(args.out, data)
    _say(f"mine: {len(data['violations'])} violation(s), {len(data['warnings'])} warning(s) in "
         f"{data['input']['events']:,} events; report: {', '.join(str(p) for p in written)}")
    if args.json:
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    return EXIT_VIOLATION if data["violations"] else EXIT_OK
