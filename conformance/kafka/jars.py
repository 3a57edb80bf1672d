"""The Apache Kafka jars: fetched by Maven from ``conformance/java/broker/pom.xml`` into a cache, once per version.

The cache lives outside the work tree, ``$GROUPSPEC_CACHE`` or ``~/.cache/groupspec``, as
``kafka/<version>/*.jar`` (about 93 jars, 54 MB for 4.1.1). A directory is complete only when its
``.complete`` marker exists: Maven copies into a temporary sibling which is renamed into place, so an
interrupted fetch never leaves a half-filled version behind, and a file lock keeps two processes from
fetching the same version at once. Maven is run offline first (everything already in ``~/.m2``), then
online. A failure raises :class:`KafkaUnavailable` with the tail of Maven's output.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

DEFAULT_VERSION = "4.1.1"
POM_DIR = Path(__file__).resolve().parents[1] / "java" / "broker"
_TAIL = 3000
_COMPLETE = ".complete"


class KafkaUnavailable(RuntimeError):
    """Kafka cannot be run here: no ``java`` / ``mvn``, the jars cannot be fetched, or the broker did not come up."""


def cache_root() -> Path:
    root = os.environ.get("GROUPSPEC_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "groupspec"


@dataclass(frozen=True)
class FetchResult:
    """Where a version's jars are, and what fetching them cost (``seconds`` 0 when they were cached)."""

    directory: Path
    jars: int
    bytes: int
    seconds: float


def jar_dir(version: str = DEFAULT_VERSION, root: Path | None = None) -> Path:
    return (root or cache_root()) / "kafka" / version


def is_complete(directory: Path) -> bool:
    return (directory / _COMPLETE).is_file() and any(directory.glob("kafka_2.13-*.jar"))


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _TAIL else "..." + text[-_TAIL:]


def fetch(version: str = DEFAULT_VERSION, root: Path | None = None, *, mvn: str | None = None) -> FetchResult:
    """The jars of Kafka ``version``, fetching them with Maven the first time."""
    directory = jar_dir(version, root)
    if not is_complete(directory):
        started = time.monotonic()
        _fetch_into(directory, version, mvn)
        seconds = time.monotonic() - started
    else:
        seconds = 0.0
    jars = sorted(directory.glob("*.jar"))
    return FetchResult(directory, len(jars), sum(j.stat().st_size for j in jars), seconds)


def _fetch_into(directory: Path, version: str, mvn: str | None) -> None:
    found = shutil.which(mvn or "mvn")
    if found is None:
        raise KafkaUnavailable(
            f"cannot fetch Apache Kafka {version}: `{mvn or 'mvn'}` is not found (install Maven 3.8+), and "
            f"{directory} holds no complete copy")
    mvn = found
    directory.parent.mkdir(parents=True, exist_ok=True)
    with open(directory.parent / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be fetching this version: wait for it
        if is_complete(directory):
            return
        partial = directory.parent / f".{version}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        base = [mvn, "-B", "-q", "dependency:copy-dependencies", f"-Dkafka.version={version}",
                f"-DoutputDirectory={partial}", "-DincludeScope=runtime"]
        proc: subprocess.CompletedProcess[str] | None = None
        for args in ([*base[:1], "-o", *base[1:]], base):
            proc = subprocess.run(args, cwd=POM_DIR, capture_output=True, text=True, check=False)
            if proc.returncode == 0 and any(partial.glob("kafka_2.13-*.jar")):
                break
        else:
            assert proc is not None
            shutil.rmtree(partial, ignore_errors=True)
            raise KafkaUnavailable(
                f"fetching Apache Kafka {version} with Maven failed (`{' '.join(base)}` in {POM_DIR} exited "
                f"{proc.returncode}; is {version} a release on Maven Central?):\n{_tail(proc.stdout + proc.stderr)}")
        (partial / _COMPLETE).write_text(version + "\n")
        shutil.rmtree(directory, ignore_errors=True)
        partial.rename(directory)


def classpath(directory: Path) -> str:
    """The class path of every jar in ``directory`` (the JVM's wildcard form)."""
    return str(directory / "*")


__all__ = ["DEFAULT_VERSION", "POM_DIR", "FetchResult", "KafkaUnavailable", "cache_root", "classpath", "fetch",
           "is_complete", "jar_dir"]
