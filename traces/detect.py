"""Which files make the trace set, and which reader reads each.

Paths are files or directories (walked recursively, hidden files skipped). Each file's format is
told from its first lines (at most 256 KiB): every reader's ``sniff`` scores them and the highest
score wins, so a JSON file of trace events, a broker's ``server.log`` and a consumer's log can lie
in one directory. A file named on the command line that no reader recognises is an error (exit 2)
naming it and its first line; a file found in a directory that no reader recognises (a README, a
report) is listed as ignored. ``--format`` forces one reader for the named files, and for the
files of a directory that this reader recognises.

Members. A JSON Lines file whose events carry no ``member`` is one member, named after the file.
When a consumer's callback trace (JSON Lines) and its client log are both in the set, the
callbacks say what the application owned: the log's assignment lines are then only context
(:attr:`Plan.callback_members`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from traces.readers import FORMATS, JSONL_FORMATS
from traces.readers.jsonl import commits_shown
from traces.schema import Source
from traces.schema import TraceInputError as InputError

SNIFF_BYTES = 256 * 1024
SNIFF_LINES = 400
_SUFFIXES = (".gz", ".jsonl", ".json", ".ndjson", ".log", ".txt", ".out", ".err", ".stdout", ".stderr")


@dataclass
class Plan:
    sources: list[Source]
    ignored: list[dict[str, str]]  # files of a directory that are not traces: path, why
    callback_members: frozenset[str]


def _stem(path: Path) -> str:
    name = path.name
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if name.endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
                changed = True
    return name


def head_lines(path: Path) -> list[str]:
    """The first lines of a file (decompressed if .gz), decoded leniently."""
    if path.suffix == ".gz":
        import gzip

        with gzip.open(path, "rb") as fh:
            data = fh.read(SNIFF_BYTES)
    else:
        with path.open("rb") as fh:
            data = fh.read(SNIFF_BYTES)
    return data.decode("utf-8", "replace").splitlines()[:SNIFF_LINES]


def sniff(lines: list[str]) -> tuple[str, int, frozenset[str]] | None:
    """The best-scoring reader's answer for these lines, or None."""
    best: tuple[str, int, frozenset[str]] | None = None
    seen: set[str] = set()
    for module, _help in FORMATS.values():
        if module.__name__ in seen:
            continue
        seen.add(module.__name__)
        answer = module.sniff(lines)
        if answer is not None and (best is None or answer[1] > best[1]):
            best = answer
    return best


def too_deep(lines: list[str]) -> int | None:
    """The number of the first line that is JSON nested deeper than a decoder goes, if any.

    Python's json decoder recurses once per level (RecursionError past about 1,000) and orjson stops
    at 1,024: such a line is answered as ``groupspec assign`` answers it, "nested too deeply".
    """
    import json

    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith(("{", "[")):
            try:
                json.loads(line)
            except RecursionError:
                return n
            except ValueError:
                continue
    return None


def _walk(paths: Sequence[str]) -> list[tuple[Path, str, bool]]:
    """(path, label, named explicitly) for every file, in a stable order, each once."""
    out: list[tuple[Path, str, bool]] = []
    seen: set[Path] = set()
    for given in paths:
        path = Path(given)
        if path.is_dir():
            children = sorted(p for p in path.rglob("*")
                              if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts))
            for child in children:
                real = child.resolve()
                if real not in seen:
                    seen.add(real)
                    out.append((child, str(child), False))
        elif path.is_file():
            real = path.resolve()
            if real not in seen:
                seen.add(real)
                out.append((path, given, True))
        elif path.exists():
            raise InputError("not a regular file or directory", source=given)
        else:
            raise InputError("no such file or directory", source=given)
    return out


def plan(paths: Sequence[str], forced: str | None = None, naive_offset_ms: int | None = None,
         strays_ignored: bool = False) -> Plan:
    """The sources of a trace set; InputError when a named file cannot be read as a trace.

    ``strays_ignored``: files named on the command line beside directories (a shell glob such as
    ``samples/*`` names the README too) whose format cannot be told are listed as ignored, with
    the reason, instead of stopping the check; a file named alone is still an error.
    """
    if forced is not None and forced not in FORMATS:
        raise InputError(f"unknown format {forced!r}; known: {', '.join(FORMATS)}")
    sources: list[Source] = []
    ignored: list[dict[str, str]] = []
    for path, label, explicit in _walk(paths):
        try:
            lines = head_lines(path)
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", source=label) from None
        except EOFError:
            raise InputError("compressed file is truncated", source=label) from None
        if not any(line.strip() for line in lines):
            ignored.append({"path": label, "why": "empty"})
            continue
        found = sniff(lines)
        if forced is not None:
            members = found[2] if found is not None else frozenset()
            if not explicit and (found is None or FORMATS[found[0]][0] is not FORMATS[forced][0]):
                ignored.append({"path": label, "why": f"not {forced}"})
                continue
            fmt = forced
        elif found is None:
            deep = too_deep(lines) if explicit else None
            if deep is not None:
                raise InputError("invalid JSON: nested too deeply", source=label, line=deep)
            if explicit and not strays_ignored:
                first = next(line for line in lines if line.strip())
                raise InputError(f"cannot tell the format (first line: {first[:80]!r}); "
                                 f"name it with --format ({', '.join(FORMATS)})", source=label)
            ignored.append({"path": label, "why": "not a trace format groupspec reads"})
            continue
        else:
            fmt, _score, members = found
        group_of = getattr(FORMATS[fmt][0], "group_of", None)
        sources.append(Source(index=len(sources), path=path, label=label, format=fmt, member=_stem(path),
                              members=members, naive_offset_ms=naive_offset_ms,
                              group_hint=group_of(lines) if group_of is not None else None,
                              commits_shown=commits_shown(fmt, lines) if fmt in JSONL_FORMATS else False))
    if not sources and not strays_ignored:
        where = ", ".join(paths)
        raise InputError(f"no trace files in {where}" + (f" ({len(ignored)} file(s) ignored)" if ignored else ""))
    _disambiguate_members(sources)
    _name_log_members(sources, _pair_logs(sources))
    callback: set[str] = set()
    for source in sources:
        if source.format in JSONL_FORMATS:
            callback |= source.members or {source.member}
    return Plan(sources, ignored, frozenset(callback))


def _pair_logs(sources: list[Source]) -> set[int]:
    """Pair each consumer's callback trace with its own client log: the same file name in one directory.

    A process's stdout and its log are named alike by whoever captured them (Kafka's system tests
    keep ``verifiable_consumer.stdout`` beside ``verifiable_consumer.log``; ``c1.jsonl`` beside
    ``c1.log``). Such a log, when it holds one consumer, is the callback trace's member whatever
    its client id says (a static member's ``consumer-<group>-<instance>``, a lone JVM's
    ``consumer-<group>-1``), and the group its lines name is the callback trace's group from the
    trace's first event on. The indices of the paired logs are returned.
    """
    traces: dict[tuple[Path, str], list[Source]] = {}
    for source in sources:
        if source.format in JSONL_FORMATS and len(source.members) <= 1:
            traces.setdefault((source.path.parent, _stem(source.path)), []).append(source)
    paired: set[int] = set()
    for source in sources:
        if source.format in JSONL_FORMATS or len(source.members) > 1:
            continue
        same = traces.get((source.path.parent, _stem(source.path)), [])
        if len(same) != 1:
            continue
        trace = same[0]
        member = next(iter(trace.members)) if trace.members else trace.member  # a trace naming its one member
        source.member, source.named_by_file = member, True
        source.members = frozenset({member})
        if trace.group is None:
            trace.group = source.group_hint
        paired.add(source.index)
    return paired


def _name_log_members(sources: list[Source], paired: set[int]) -> None:
    """Client ids seen in more than one log cannot name members: name those logs' members by file."""
    seen: dict[str, int] = {}
    for source in sources:
        if source.format not in JSONL_FORMATS and source.index not in paired:
            for name in source.members:
                seen[name] = seen.get(name, 0) + 1
    for source in sources:
        if source.format in JSONL_FORMATS or source.index in paired \
                or not any(seen.get(name, 0) > 1 for name in source.members):
            continue
        if len(source.members) <= 1:
            source.named_by_file = True
        else:
            source.member_prefix = source.member + "/"
        source.members = frozenset({source.member}) if source.named_by_file else frozenset(
            source.member_prefix + name for name in source.members)


def _disambiguate_members(sources: list[Source]) -> None:
    """Two files named alike in different directories are two members: name them by their path."""
    counts: dict[str, int] = {}
    for source in sources:
        if source.format in JSONL_FORMATS and not source.members:
            counts[source.member] = counts.get(source.member, 0) + 1
    for source in sources:
        if counts.get(source.member, 0) > 1 and source.format in JSONL_FORMATS and not source.members:
            source.member = str(Path(source.label).with_name(source.member))
