"""The mining job as a ``spark-submit`` application: the same job, on whatever master spark-submit names.

    spark-submit --master spark://HOST:7077 --py-files groupspec.zip \\
        spark_analysis/submit.py CORPUS --out DIR

The driver plans the job with the project's Python code; executors run only Spark's built-in
functions (the jobs have no Python UDF), so they need no Python package of ours. ``--py-files``
ships the packages anyway (:func:`package_zip` writes the zip), so the command also works when
the driver itself runs on the cluster (``--deploy-mode cluster``). The corpus path must be
readable by every executor (a shared file system, HDFS, S3). Writes ``DIR/violations.parquet``
and ``DIR/mine.json``; exit 0 / 1 / 2 as ``groupspec mine``.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from pathlib import Path

PACKAGES = ("model", "traces", "spark_analysis")


def package_zip(dest: Path, root: Path | None = None) -> Path:
    """A zip of the packages the driver imports, for ``--py-files``."""
    root = root or Path(__file__).resolve().parents[1]
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in PACKAGES:
            for path in sorted((root / package).rglob("*.py")):
                zf.write(path, path.relative_to(root).as_posix())
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="submit.py", description="groupspec mine as a spark-submit application")
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    from spark_analysis import mine, session
    from spark_analysis.layout import LayoutError, check_layout, part_files

    if not part_files(args.corpus):
        print(f"submit.py: {args.corpus}: not a corpus (no events/part-*.parquet)", file=sys.stderr)
        return 2
    try:
        check_layout(args.corpus)  # before the session starts (mine.run checks again)
    except LayoutError as exc:
        print(f"submit.py: {exc}", file=sys.stderr)
        return 2
    spark = session.build(master=None)  # the master spark-submit was given
    try:
        data = mine.run(spark, args.corpus, args.out)
    finally:
        spark.stop()
    (args.out / "mine.json").write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    return 1 if data["violations"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
