"""Other releases of the Python clients, each in an environment of its own.

A maintainer holds two releases of a client side by side in one campaign: ``groupspec conform
--client kafka-python==2.2.15`` runs the drivers of that release next to the pinned one. A release is
named by its *label*, ``NAME==VERSION`` (pip's requirement syntax, the form a user already knows);
the label is what the campaign's client lists, run directories, matrix rows and replay commands
carry, so a row of the report and its replay say which release ran.

The environment of a release is a plain ``venv`` (PEP 405) with that one requirement installed by
pip, made on first use under ``~/.cache/groupspec/clients/NAME-VERSION`` (``GROUPSPEC_CLIENTS_CACHE``
moves the cache) and reused afterwards. It holds only the client and its dependencies: the driver
code (conformance/drivers, model/events.py, model/types.py: the standard library only) comes from
this checkout through ``PYTHONPATH``, as for the pinned clients, so both releases run the *same*
driver and differ only in the library under it.

- **A lock per release** (``fcntl.flock`` on ``NAME-VERSION.lock`` beside it): two campaigns that
  ask for the same release at once build it once; the second waits, then reuses it.
- **Ready marker**: ``groupspec-client.json`` is written last, after pip succeeded and the driver
  imported the library (the *probe*). A directory without it (a build killed half way) is removed and
  built again; one with it is reused without running pip.
- **The probe** imports the release's driver under the release's Python and reports what the driver
  saw: the client's own version line (with librdkafka's for confluent-kafka) and the assignors this
  release offers on the classic protocol (kafka-python 2.2 has no cooperative-sticky, for instance,
  so such a scenario is "unsupported" for it, not an error).
- **Failures are one line**: pip cannot get the release (no such version, no network), or the driver
  cannot use it (an API it needs is missing): :class:`ReleaseUnavailable`, which ``groupspec conform``
  turns into exit 2.

Which interpreter runs a driver is decided by :func:`launcher` (the one hook in
:mod:`conformance.drivers.process`): a plain client name runs under this Python, a label under its
release's environment, which must have been made first (:func:`environment`).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# The clients a release can be asked of: pip distribution -> driver module (conformance/drivers).
RELEASABLE = {
    "confluent-kafka": "conformance.drivers.confluent_kafka",
    "kafka-python": "conformance.drivers.kafka_python",
    "aiokafka": "conformance.drivers.aiokafka",
}
MARKER = "groupspec-client.json"
# PEP 440 public versions: what pip accepts after ``==`` for a release (no wildcards, no ranges).
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?$")
PIP_TIMEOUT_S = 600
PROBE_TIMEOUT_S = 60
# Run under the release's Python: import its driver and say what it saw (one JSON line on stdout).
_PROBE = ("import importlib, json, sys; m = importlib.import_module(sys.argv[1]); "
          "print(json.dumps({'client': m.CLIENT, 'assignors': list(m.ASSIGNORS)}))")


class ReleaseUnavailable(Exception):
    """A release that cannot be run: the message is one line saying which and why."""


@dataclass(frozen=True)
class Release:
    """``NAME==VERSION``: one release of one of the Python clients."""

    name: str
    version: str

    @property
    def label(self) -> str:
        return f"{self.name}=={self.version}"

    @property
    def dirname(self) -> str:
        return f"{self.name}-{self.version}"


@dataclass(frozen=True)
class Environment:
    """A made environment: its Python, what the driver reported, and whether this call built it."""

    release: Release
    path: Path
    client: str  # the driver's version line, e.g. "kafka-python 2.2.15"
    assignors: tuple[str, ...]
    fresh: bool = False

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


def parse_release(text: str) -> Release:
    """``NAME==VERSION`` -> :class:`Release`; a ValueError whose message says what was wrong."""
    name, sep, version = text.partition("==")
    if not sep:
        raise ValueError(f"{text!r}: expected NAME==VERSION, e.g. kafka-python==2.2.15")
    if name not in RELEASABLE:
        raise ValueError(f"{text!r}: unknown client {name!r}; releases can be run of {', '.join(RELEASABLE)}")
    if not _VERSION.match(version):
        raise ValueError(f"{text!r}: {version!r} is not a release version (like 2.2.15)")
    return Release(name, version)


def is_release(client: str) -> bool:
    return "==" in client


def base_name(client: str) -> str:
    """The client a label is a release of (``kafka-python==2.2.15`` -> ``kafka-python``)."""
    return client.partition("==")[0]


def cache_root() -> Path:
    configured = os.environ.get("GROUPSPEC_CLIENTS_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "groupspec" / "clients"


def _marker(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((path / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not (path / "bin" / "python").exists():
        return None
    return data


def _from_marker(release: Release, path: Path, data: dict[str, Any], fresh: bool) -> Environment:
    return Environment(release, path, str(data["client"]), tuple(data["assignors"]), fresh)


@contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _last_line(text: str) -> str:
    """pip's reason is its last ERROR line (the rest is resolver chatter)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR:")]
    return (errors or lines or ["no output"])[-1]


def _run(argv: list[str], timeout_s: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=env,
                          stdin=subprocess.DEVNULL, check=False)


def environment(release: Release, *, root: Path | None = None,
                progress: Callable[[str], None] | None = None) -> Environment:
    """The environment of ``release``, made on first use (venv + pip + probe) and reused after."""
    root = root or cache_root()
    path = root / release.dirname
    with _locked(root / f"{release.dirname}.lock"):
        data = _marker(path)
        if data is not None:
            return _from_marker(release, path, data, fresh=False)
        if path.exists():
            shutil.rmtree(path)  # a build that died half way: start again
        if progress is not None:
            progress(f"making an environment for {release.label} in {path} (pip, first use only)")
        try:
            data = _build(release, path)
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise
        (path / f"{MARKER}.tmp").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        (path / f"{MARKER}.tmp").replace(path / MARKER)
        return _from_marker(release, path, data, fresh=True)


def _build(release: Release, path: Path) -> dict[str, Any]:
    # pip sees the user's pip configuration (index, certificates) but not this checkout on PYTHONPATH
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    try:
        made = _run([sys.executable, "-m", "venv", str(path)], PIP_TIMEOUT_S, env=clean)
        if made.returncode != 0:
            raise ReleaseUnavailable(f"{release.label}: cannot make a venv in {path}: {_last_line(made.stderr)}")
        python = str(path / "bin" / "python")
        pip = _run([python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                    release.label], PIP_TIMEOUT_S, env=clean)
    except subprocess.TimeoutExpired:
        raise ReleaseUnavailable(f"{release.label}: pip did not finish within {PIP_TIMEOUT_S}s") from None
    if pip.returncode != 0:
        raise ReleaseUnavailable(f"{release.label}: pip cannot get it: {_last_line(pip.stderr + pip.stdout)}")
    env = dict(clean, PYTHONPATH=str(PROJECT_ROOT))
    try:
        probe = _run([python, "-c", _PROBE, RELEASABLE[release.name]], PROBE_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        raise ReleaseUnavailable(f"{release.label}: its driver did not import within {PROBE_TIMEOUT_S}s") from None
    if probe.returncode != 0:
        raise ReleaseUnavailable(f"{release.label}: installed, but the driver cannot use it: "
                                 f"{_last_line(probe.stderr)}")
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    return {"release": release.label, "client": seen["client"], "assignors": seen["assignors"],
            "python": python}


def made(client: str, *, root: Path | None = None) -> Environment:
    """The environment of a release label that :func:`environment` already made (no build here)."""
    release = parse_release(client)
    path = (root or cache_root()) / release.dirname
    data = _marker(path)
    if data is None:
        raise ReleaseUnavailable(f"{client}: no environment in {path}; groupspec conform makes it first")
    return _from_marker(release, path, data, fresh=False)


def launcher(client: str) -> tuple[str, str]:
    """(Python to run the driver with, client whose driver it is): this interpreter for a plain
    client name, the release's environment for ``NAME==VERSION``."""
    if not is_release(client):
        return sys.executable, client
    return str(made(client).python), base_name(client)


__all__ = ["Environment", "RELEASABLE", "Release", "ReleaseUnavailable", "base_name", "cache_root", "environment",
           "is_release", "launcher", "made", "parse_release"]
