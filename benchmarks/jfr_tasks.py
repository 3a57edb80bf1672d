"""Where Spark's task threads spend their CPU, from a Java Flight Recording of the driver JVM (local mode).

Spark's own SQL metrics time whole-stage-codegen pipelines from the moment they start until they end, so a
stage's time includes the operators it pulls rows from and the consumer it hands them to: they do not add up.
Sampling the executor task threads' stacks does. Record with the benchmark's ``--conf``::

    python -m benchmarks spark -- --sizes 1000000 --masters 'local[2]' --no-whole --no-duckdb --no-checker \\
      --conf spark.driver.memory=3g \\
      --conf 'spark.driver.extraJavaOptions=-XX:StartFlightRecording=filename=DIR/core.jfr,settings=profile'
    jfr print --stack-depth 100 --events jdk.ExecutionSample DIR/core.jfr > DIR/core.txt
    python -m benchmarks.jfr_tasks DIR/core.txt [--from HH:MM:SS --to HH:MM:SS]

Each sample of a thread named ``Executor task launch worker...`` is charged to its innermost Spark frame (the
JDK, Scala, Unsafe and row-format helpers above it are skipped) and that frame to a kind of work: building or
reading the in-memory cache, decoding Parquet, comparing rows in a sort, moving rows into and out of a sort,
Window functions, the rows a Window operator writes out (every input column copied), joins, aggregates.
``--from`` / ``--to`` keep the samples of one action (the times ``jfr print`` shows, UTC). The kinds are
approximate: a generated method is named by its stage, not by the operator whose code it inlines.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

# frames that belong to whoever called them: the JDK, Scala, Spark's memory and row-format helpers
_HELPER = re.compile(r"^(java\.|sun\.|jdk\.|scala\.|org\.apache\.spark\.unsafe\.|org\.apache\.spark\.memory\.|"
                     r"org\.apache\.spark\.sql\.catalyst\.expressions\.(UnsafeRow|JoinedRow|UnsafeArrayData|"
                     r"SpecificInternalRow|GenericInternalRow|codegen\.Unsafe|codegen\.Buffer)|"
                     r"org\.apache\.spark\.sql\.catalyst\.util\.|"
                     r"org\.apache\.spark\.util\.collection\.unsafe\.sort\.PrefixComparators)")
_WINDOW = ("WindowPartitionEvaluator", "WindowFunctionFrame", "AggregateProcessor")
# (kind, pattern on the innermost Spark frame), first match wins
KINDS = (
    ("cache build (columnar encoding, compression statistics)",
     r"columnar\.(compression\.|\w*Builder|\w*ColumnStats|STRING\.(getField|actualSize)|DirectCopy|\w+\$\.append)"
     r"|DefaultCachedBatchSerializer"),
    ("cache scan", r"columnar\.|ColumnarIterator|ColumnAccessor"),
    ("Parquet decode", r"parquet|vectorized\."),
    ("sort comparisons", r"SpecificOrdering|SortComparator|RowComparator|TimSort|BaseOrdering|RadixSort"),
    ("rows into and out of sorts (copy, prefix)", r"sort_addToSorter|UnsafeExternalSorter|UnsafeInMemorySorter"
     r"|UnsafeExternalRowSorter"),
    ("sort-merge join", r"smj_|SortMergeJoin"),
    ("hash join", r"bhj_|HashedRelation|BroadcastHashJoin"),
    ("hash aggregate", r"hashAgg|HashAggregate|UnsafeFixedWidthAggregationMap"),
)


def samples(path: Path) -> Iterator[tuple[str, str, list[str]]]:
    """``(time, thread, frames innermost first)`` of each ``jdk.ExecutionSample`` in ``jfr print`` text."""
    time = thread = ""
    frames: list[str] | None = None
    with path.open() as f:
        for line in f:
            s = line.strip()
            if s.startswith("startTime = "):
                time = s.split("= ", 1)[1]
            elif s.startswith("sampledThread = "):
                thread = s.split('"')[1]
            elif s == "stackTrace = [":
                frames = []
            elif frames is not None and s == "]":
                yield time, thread, frames
                frames = None
            elif frames is not None and s and not s.startswith("..."):
                frames.append(re.sub(r"\(.*", "", s))


def kind(frames: list[str]) -> str:
    """The kind of work of one sample (see the module doc)."""
    spark = next((fr for fr in frames if not _HELPER.match(fr)), "")
    for name, pattern in KINDS:
        if re.search(pattern, spark):
            return name
    if any(w in fr for fr in frames[:12] for w in _WINDOW):
        return ("Window output rows (every column copied)" if "SpecificUnsafeProjection" in spark
                else "Window functions and buffers")
    return "other generated code (projections, filters, shuffle rows)" if "processNext" in spark else "other"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.jfr_tasks", description=__doc__.split("\n")[0])
    parser.add_argument("samples", type=Path, help="the text of `jfr print --events jdk.ExecutionSample`")
    parser.add_argument("--from", dest="start", default="", help="the first sample's time (HH:MM:SS)")
    parser.add_argument("--to", dest="end", default="~", help="samples before this time only (HH:MM:SS)")
    args = parser.parse_args(argv)
    counts = Counter(kind(frames) for time, thread, frames in samples(args.samples)
                     if thread.startswith("Executor task") and frames and args.start <= time < args.end)
    total = sum(counts.values())
    print(f"{total} samples of Spark's task threads")
    for name, n in counts.most_common():
        print(f"{n:7d} {100 * n / total:5.1f}%  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
