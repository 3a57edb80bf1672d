"""The corpus layout: trace events as Parquet rows, one row per (event, partition).

docs/design.md, "Formats" 3. Each trace event (:mod:`model.events`) becomes one row per partition it
names (``partitions`` of the ownership callbacks and of ``records_consumed``, ``offsets`` of
``offsets_committed`` and of the broker's ``coordinator_offset_commit``, the stored ``assignment`` of
``coordinator_stable``: one row per member id and partition, a member id given nothing one row with ``topic`` null,
:func:`_stored`, the ``partitions`` and ``pending_revocation`` of a KIP-848 member assignment, ``coordinator_state``
with ``detail`` member-assignment: one row per partition of each, told apart by the column ``pending_revocation``,
:func:`_member_assignment`) and one row with ``topic`` null when it names none. The columns keep the trace
format's field names (``minOffset``, ``maxOffset``, ``offset``, ``success``, ...), plus where the
event came from:

- ``group``: the event's group; where it does not say, the group its member last named, else
  the checker's default group (``CheckConfig.default_group``). A member whose first events name
  no group moves, as in the checker (``Checker._member``), to the first group an event names while
  it owns nothing; its rows before the move stay in the old group.
- ``group_named``: on a member event's rows, whether its member had named its group by then (the checker's
  ``Member.group_explicit``: set by the member's first event if it or its file names a group -- a callback trace's
  from its paired client log -- and by a move), null on a coordinator event's. ``group`` alone cannot say it: a
  member that names the default group is in the group of one that names none. The undecided rule reads it
  (``invariants.judged_overlaps``: the checker's ``_unnamed_removal`` counts every group's removals for an old owner
  that never named its group, its own group's for one that did).
- the context fields (``subscription``, ``protocol``, ``assignor``, ``member_id``,
  ``auto_offset_reset``, ``enable_auto_commit``, ``auto_commit_interval_ms``) are the event's, except
  on a moved member's first row in its new group (and its next row, if the first is a client-log
  ownership line the job drops): those also carry what the member said before the move and the row
  does not say -- its last subscription, protocol, member id (not past a ``startup_complete``, not
  on a ``group_synced``) and offset configuration, and its first assignor when it named no protocol
  (in place of the row's own, which the checker no longer reads once an assignor set the protocol) --
  because the checker keeps them when it moves the member and the job keeps them per group and
  member (:class:`spark_analysis.corpus._MemberGroups`).
- the move columns, null but on a moved member's rows in its new group: ``moved_from``, on the row
  that moved it (the first one in the new group), the group it left; on the row that carries the
  context, ``moved_generation``, its generation at the move where the row names none (the
  checker's ``Member.generation``; ``generation`` stays the event's, as it is also read as the
  group's), ``moved_generations``, the last generation of each of its files (``Member.gen_by_src``,
  which ``generation-monotonic`` compares per file), and ``moved_revoked``, revoke-only-moved's
  memory of partitions it revoked in a generation newer than its last assignment's
  (``Member.complete_revoked``), and ``moved_assigned_gen``, the generation of its last assignment
  (``Member.assigned_gen``, which ``eager-revoke-all`` compares a join with) -- none of the four on a
  ``startup_complete``, which forgets them.
- ``member``: the consumer process the event belongs to, resolved the way the checker resolves it
  (the event's ``member``, else the file's member); null for coordinator events.
- ``seq``: the event's place in the merged, time-ordered stream of its corpus (the order the
  checker reads it in); every row of one event shares it, ``part`` numbers its partitions.
- ``source`` / ``line``: the file and line the event was read from (evidence ``file:line``),
  ``jsonl``: whether that file is a callback trace (JSON Lines) rather than a client log;
  ``callback``: whether the member has such a trace in its set (then the checker takes its
  client-log ownership lines as context only, "superseded").

Strings are dictionary-encoded. A corpus directory holds ``events/part-NNNNN.parquet`` files, each
sorted by ``(group, seq)`` (row groups of consecutive groups), so that one group's rows are read
together, plus ``input.json`` (events, lines, malformed lines per file and reason, as the checker
counts them; ``layout``, the number of what a row holds: :data:`LAYOUT`; for a ``--from`` corpus ``runs`` and
``read_with``, what the command that writes it again names: :func:`_rewrite_hint`) and, for simulated corpora,
``truth.json``. A simulated corpus's files hold whole groups. A ``--from`` corpus is written in the
traces' merged time order, a file every 2M rows (``corpus.ROWS_PER_PART``), so past that size one group's
rows can span files; the job does not rely on either (it repartitions by group), a reader that maps files
one by one must.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

STRING_COLUMNS = ("group", "name", "member", "source", "member_id", "instance_id", "protocol", "assignor",
                  "topic", "error", "reason", "state", "auto_offset_reset", "format", "detail", "moved_from")

SCHEMA = pa.schema([
    ("group", pa.dictionary(pa.int32(), pa.string())),
    ("seq", pa.int64()),
    ("part", pa.int32()),
    ("timestamp", pa.int64()),
    ("name", pa.dictionary(pa.int32(), pa.string())),
    ("member", pa.dictionary(pa.int32(), pa.string())),
    ("source", pa.dictionary(pa.int32(), pa.string())),
    ("line", pa.int64()),
    ("jsonl", pa.bool_()),
    ("callback", pa.bool_()),
    ("member_id", pa.dictionary(pa.int32(), pa.string())),
    ("instance_id", pa.dictionary(pa.int32(), pa.string())),
    ("generation", pa.int64()),
    ("protocol", pa.dictionary(pa.int32(), pa.string())),
    ("assignor", pa.dictionary(pa.int32(), pa.string())),
    ("topic", pa.dictionary(pa.int32(), pa.string())),
    ("partition", pa.int32()),
    ("count", pa.int64()),
    ("minOffset", pa.int64()),
    ("maxOffset", pa.int64()),
    ("offset", pa.int64()),
    ("success", pa.bool_()),
    ("error", pa.dictionary(pa.int32(), pa.string())),
    ("reason", pa.dictionary(pa.int32(), pa.string())),
    ("state", pa.dictionary(pa.int32(), pa.string())),
    ("auto_offset_reset", pa.dictionary(pa.int32(), pa.string())),
    ("format", pa.dictionary(pa.int32(), pa.string())),
    ("commits_shown", pa.bool_()),
    ("enable_auto_commit", pa.bool_()),
    ("auto_commit_interval_ms", pa.int64()),
    ("subscription", pa.list_(pa.string())),
    ("detail", pa.dictionary(pa.int32(), pa.string())),
    ("members", pa.list_(pa.string())),
    ("member_count", pa.int64()),
    ("moved_from", pa.dictionary(pa.int32(), pa.string())),
    ("moved_generation", pa.int64()),
    ("moved_generations", pa.map_(pa.string(), pa.int64())),
    ("moved_revoked", pa.list_(pa.struct([("generation", pa.int64()), ("topic", pa.string()),
                                          ("partition", pa.int32())]))),
    ("moved_assigned_gen", pa.int64()),
    ("pending_revocation", pa.bool_()),
    ("group_named", pa.bool_()),
])
COLUMNS = tuple(SCHEMA.names)

# The number of the corpus layout this code writes and reads: every corpus writer puts it into input.json
# (``layout``) and the job refuses a corpus that says another (check_layout). A corpus is written once and mined
# many times, so a row that holds something else than it did must not be read as if it did not: bump this number
# whenever what a corpus row holds changes -- a column added, removed or renamed, or a column that says something
# else for the same traces -- and add a line below saying what changed at the new number.
#   1 (h27-layout): the first number recorded. The columns of SCHEMA, and the context a member says on a client-log
#     ownership line the job drops carried to its next row (h27-superseded). Corpora written before say no number:
#     some lack the move or context columns, and none carries that context (the job would miss what it says).
#   2 (h29-notes): a coordinator_stable's rows name a member id only for a stored assignment, every such
#     assignment's: a member id given nothing has a row of its own (topic null), an assignment of no member one
#     with member_id "" (_stored). At 1 an empty stored assignment's row named none, as a stable generation's
#     without one does, and the job did not count it (notes.counts); a stray member_id on a coordinator_stable
#     event was written on its row.
#   3 (h29-coord): no row of a coordinator event the checker refuses (a field its handler reads of the wrong shape:
#     traces.coordinator_checks.refuse_bad_coordinator), and input.json counts it a bad-field line. At 2 such an event
#     was written (a stored assignment with a bad entry, a removal without a member id, an event of group 7 in the
#     default group) and the job read it where the checker had refused it.
#   4 (h29-stored): a KIP-848 member assignment (coordinator_state, detail member-assignment) has one row per partition
#     of its ``partitions`` (``pending_revocation`` false) and of its ``pending_revocation`` (true), one row with
#     ``topic`` null if both are empty (_member_assignment); the column ``pending_revocation`` is new, null on every
#     other row. At 3 such an event was one row with ``topic`` null and its partitions were not kept: the job could not
#     judge single-owner on them (traces.coordinator_checks.CoordinatorChecks._kip848_assignment).
#   5 (h31-known): the column ``group_named``, on every member row: whether the member had named its group by that row
#     (the checker's Member.group_explicit), null on coordinator rows. At 4 the rows said only the resolved group, so
#     the job took a member of the default group for one that never named its group -- one that named "default"
#     (or a --group other than the default) was judged otherwise than the checker judges it (the undecided rule,
#     Checker._unnamed_removal, counts every group's removals for a member that never named its group).
LAYOUT = 5


def write_input(out: Path, doc: dict[str, Any]) -> None:
    """Write the corpus's ``input.json``, stamped with the layout its rows were written in (:func:`check_layout`)."""
    doc["layout"] = LAYOUT
    (out / "input.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def read_input(corpus: Path) -> dict[str, Any]:
    path = corpus / "input.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def read_truth(corpus: Path) -> dict[str, Any] | None:
    path = corpus / "truth.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


class LayoutError(ValueError):
    """A corpus this code cannot mine: written in another layout, or an ``input.json`` that cannot be read.

    The message names the directory, the layout found, the one read here, and the command that writes the corpus
    again. ``groupspec mine`` turns it into exit 2 (``InputError``); ``spark_analysis/submit.py`` prints it and
    exits 2. A ``ValueError``, not groupspec's ``InputError``: spark_analysis does not import groupspec (submit.py's
    zip ships model, traces and spark_analysis only)."""


# input.json's ``read_with`` (spark_analysis.corpus.read_with) and the option of ``corpus --from`` each key is
_READ_WITH = (("group", "--group"), ("format", "--format"), ("log_timezone", "--log-timezone"))


def _rewrite_hint(corpus: Path, info: dict[str, Any]) -> str:
    """The command that writes ``corpus`` again, as far as its input.json says what it was written from."""
    runs = [run for run in info.get("runs") or () if isinstance(run, dict)]
    paths = [p for run in runs for p in run.get("paths") or ()]
    if paths and all(isinstance(p, str) for p in paths):
        # "all inputs" is the label traces.runs.split gives the one run of --merge-runs: without the flag the
        # same paths are written as one run per directory, other groups ("GROUP @ RUN")
        merge = " --merge-runs" if len(runs) == 1 and runs[0].get("run") == "all inputs" else ""
        command = f"groupspec corpus --from {' '.join(map(shlex.quote, paths))}{merge}"
        read_with = info.get("read_with")
        if not isinstance(read_with, dict):
            # written before h30-left recorded them: the command names none, and says so (a default in its place
            # could read the traces otherwise than they were read)
            return (f"{command} --out NEWDIR (with the --group, --format and --log-timezone it was written with, if "
                    "any: this corpus did not record them)")
        # a null format was detected per file: no --format
        options = "".join(f" {flag} {shlex.quote(value)}" for key, flag in _READ_WITH
                          if isinstance(value := read_with.get(key), str))
        return f"{command}{options} --out NEWDIR"
    try:
        truth = read_truth(corpus)
    except (OSError, ValueError):
        truth = None
    if isinstance(truth, dict) and isinstance(truth.get("groups"), int) and isinstance(truth.get("seed"), int):
        # every option that decides the groups (each group's rng is (seed, index), and it draws a mutant only
        # when there are mutants: corpus.simulate_group), so that the command writes the same groups again
        options = f"--groups {truth['groups']} --seed {truth['seed']}"
        fraction, mutants, faults = truth.get("mutant_fraction"), truth.get("mutants"), truth.get("faults")
        if isinstance(fraction, int | float) and isinstance(mutants, list) and isinstance(faults, list):
            options += f" --mutant-fraction {fraction}"
            # no --mutants means every mutant: an empty list must be said, as the empty name list
            options += f" --mutants {shlex.quote(','.join(map(str, mutants)))}"
            options += f" --faults {','.join(map(str, faults)) or 'none'}"
        else:
            options += " ..."
        return f"groupspec corpus {options} --out NEWDIR"
    return "groupspec corpus --from TRACES --out NEWDIR (or --groups N for a simulated one)"


def check_layout(corpus: Path) -> None:
    """Refuse (:class:`LayoutError`) a corpus whose ``input.json`` says no ``layout`` or another than :data:`LAYOUT`.

    A corpus without ``input.json`` is let through, as the job read one before layouts were recorded (its report
    then has no line or file counts): no corpus writer leaves it out, so it is one put together by hand, and what
    its rows hold is its writer's word."""
    path = corpus / "input.json"
    if not path.exists():
        return
    try:
        info = read_input(corpus)
    except (OSError, ValueError) as exc:
        raise LayoutError(f"{path}: cannot be read ({exc}); write the corpus again: "
                          f"{_rewrite_hint(corpus, {})}") from None
    if not isinstance(info, dict):
        raise LayoutError(f"{path}: not a JSON object; write the corpus again: {_rewrite_hint(corpus, {})}")
    found = info.get("layout")
    # a bool is an int to Python: ``true`` is not layout 1
    if isinstance(found, int) and not isinstance(found, bool) and found == LAYOUT:
        return
    said = "none: written before groupspec recorded it" if found is None else json.dumps(found)
    raise LayoutError(f"{corpus}: a corpus of layout {said}; this groupspec reads layout {LAYOUT} only (what its "
                      f"rows hold changed: spark_analysis/layout.py, LAYOUT). Write it again: "
                      f"{_rewrite_hint(corpus, info)}")


_PARTITION_LISTS = {"partitions_assigned": "partitions", "partitions_revoked": "partitions",
                    "partitions_lost": "partitions", "records_consumed": "partitions",
                    "offsets_committed": "offsets", "coordinator_offset_commit": "offsets"}


def _int(value: Any) -> int | None:
    """An integer field as the checker reads it (bools and non-numbers are not integers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _strings(value: Any) -> list[str] | None:
    """A list of names (``subscription``, ``members``) as the checker reads it; anything else: null."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


# the move columns of one event (see the module doc): moved_from, moved_generation, moved_generations (as pairs),
# moved_revoked (as (generation, topic, partition)), moved_assigned_gen
Moved = tuple[str | None, int | None, list[tuple[str, int]] | None, list[tuple[int, str, int]] | None, int | None]
_NOT_MOVED: Moved = (None, None, None, None, None)


def _stored(assignment: Any) -> list[tuple[str | None, dict[str, Any]]]:
    """The rows of a ``coordinator_stable`` event's stored ``assignment`` (per member id, its partitions): one per
    member id and partition, and one with no partition (``topic`` null) for a member id given nothing, so that every
    stored assignment leaves rows that name a member id -- an assignment of no member one with ``member_id`` "" (no
    member id Kafka gives: ``JoinGroupRequest.UNKNOWN_MEMBER_ID``). The checker counts each stored assignment, empty
    or not, as single-owner checked on the coordinator's view (``CoordinatorChecks._check_stored_assignment``); the
    job counts the events whose first row names a member id (``notes.counts``). No assignment (a server.log's stable
    generation): no member id, whatever else the event says."""
    if not isinstance(assignment, dict):
        return []
    rows: list[tuple[str | None, dict[str, Any]]] = []
    for mid, tps in sorted(assignment.items()):
        given = [p for p in tps if isinstance(p, dict)] if isinstance(tps, list) else []
        rows += [(mid, p) for p in given] or [(mid, {})]
    return rows or [("", {})]


def _member_assignment(event: dict[str, Any]) -> list[tuple[dict[str, Any], bool]]:
    """The rows of a KIP-848 member assignment (``coordinator_state``, ``detail`` member-assignment: the partitions
    the coordinator gives the member and those it has still to revoke), each with whether it is one to revoke (the
    column ``pending_revocation``), the given ones first, in the event's order. The checker keeps both per member id
    until its next assignment or its removal (``CoordinatorChecks._kip848_assignment``)."""
    return [(p, pending) for key, pending in (("partitions", False), ("pending_revocation", True))
            for p in event.get(key) or () if isinstance(p, dict)]


class Columns:
    """Rows collected column by column (cheaper than a dict per row), turned into an Arrow table."""

    def __init__(self) -> None:
        self.data: dict[str, list[Any]] = {c: [] for c in COLUMNS}

    def __len__(self) -> int:
        return len(self.data["seq"])

    def add_event(self, event: dict[str, Any], *, group: str, member: str | None, seq: int, source: str,
                  line: int, jsonl: bool, callback: bool = False, fmt: str | None = None,
                  commits_shown: bool | None = None, moved: Moved | None = None,
                  group_named: bool | None = None) -> None:
        """Append the rows of one event (one per partition it names, or one); ``moved``: the move columns;
        ``group_named``: whether its member had named its group (null for a coordinator event)."""
        name = event["name"]
        common = (group, seq, _int(event["timestamp"]), name, member, source, line, jsonl, callback,
                  _str(event.get("instance_id")), _int(event.get("generation")), _str(event.get("protocol")),
                  _str(event.get("assignor")), _str(event.get("reason")), _str(event.get("state")),
                  _str(event.get("auto_offset_reset")), fmt, commits_shown, _bool(event.get("enable_auto_commit")),
                  _int(event.get("auto_commit_interval_ms")), _strings(event.get("subscription")), _str(event.get("detail")), _strings(event.get("members")),
                  _int(event.get("member_count")), *(moved or _NOT_MOVED), group_named)
        success = event.get("success")
        success = success if isinstance(success, bool) else None
        member_id = _str(event.get("member_id"))
        parts: list[tuple[str | None, dict[str, Any]]] = []
        pending: list[bool] = []  # per part, pending_revocation's value (a KIP-848 member assignment's rows only)
        key = _PARTITION_LISTS.get(name)
        if key is not None:
            parts = [(member_id, p) for p in event.get(key) or () if isinstance(p, dict)]
        elif name == "coordinator_stable":
            parts = _stored(event.get("assignment"))
            member_id = None  # the coordinator's: no member's
        elif name == "coordinator_state" and event.get("detail") == "member-assignment":
            given = _member_assignment(event)
            parts = [(member_id, p) for p, _ in given]
            pending = [flag for _, flag in given]
        elif name == "record_data":
            parts = [(member_id, {"topic": event.get("topic"), "partition": event.get("partition"),
                                  "minOffset": event.get("offset"), "maxOffset": event.get("offset")})]
        if not parts:
            self._row(common, 0, member_id, None, None, None, None, None, None, success, _str(event.get("error")),
                      None)
            return
        for i, (mid, p) in enumerate(parts):
            self._row(common, i, mid, _str(p.get("topic")), _int(p.get("partition")), _int(p.get("count")),
                      _int(p.get("minOffset")), _int(p.get("maxOffset")), _int(p.get("offset")), success,
                      _str(p.get("error")) or _str(event.get("error")), pending[i] if pending else None)

    def _row(self, common: tuple[Any, ...], part: int, member_id: str | None, topic: str | None,
             partition: int | None, count: int | None, low: int | None, high: int | None, offset: int | None,
             success: bool | None, error: str | None, pending: bool | None) -> None:
        (group, seq, ts, name, member, source, line, jsonl, callback, instance_id, generation, protocol, assignor, reason,
         state, reset, fmt, shown, auto, interval, subscription, detail, members, member_count, moved_from,
         moved_generation, moved_generations, moved_revoked, moved_assigned_gen, group_named) = common
        d = self.data
        for col, value in (("group", group), ("seq", seq), ("part", part), ("timestamp", ts), ("name", name),
                           ("member", member), ("source", source), ("line", line), ("jsonl", jsonl), ("callback", callback),
                           ("member_id", member_id), ("instance_id", instance_id), ("generation", generation),
                           ("protocol", protocol), ("assignor", assignor), ("topic", topic),
                           ("partition", partition), ("count", count), ("minOffset", low), ("maxOffset", high),
                           ("offset", offset), ("success", success), ("error", error), ("reason", reason),
                           ("state", state), ("auto_offset_reset", reset), ("format", fmt),
                           ("commits_shown", shown), ("enable_auto_commit", auto),
                           ("auto_commit_interval_ms", interval), ("subscription", subscription),
                           ("detail", detail), ("members", members), ("member_count", member_count),
                           ("moved_from", moved_from), ("moved_generation", moved_generation),
                           ("moved_generations", moved_generations),
                           ("moved_revoked", moved_revoked and [{"generation": g, "topic": t, "partition": p}
                                                                for g, t, p in moved_revoked]),
                           ("moved_assigned_gen", moved_assigned_gen), ("pending_revocation", pending),
                           ("group_named", group_named)):
            d[col].append(value)

    def table(self) -> pa.Table:
        plain = pa.schema([pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
                           for f in SCHEMA])
        table = pa.Table.from_pydict(self.data, schema=plain)
        table = table.sort_by([("group", "ascending"), ("seq", "ascending"), ("part", "ascending")])
        return table.cast(SCHEMA)


def write_part(table: pa.Table, out: Path, index: int, row_group_size: int = 1 << 20) -> Path:
    """Write one part file of a corpus (whole groups, sorted by group and seq)."""
    path = out / "events" / f"part-{index:05d}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_size, compression="zstd",
                   use_dictionary=list(STRING_COLUMNS))
    return path


def events_dir(corpus: Path) -> Path:
    return corpus / "events"


def part_files(corpus: Path) -> list[Path]:
    return sorted(events_dir(corpus).glob("part-*.parquet"))


def concat(tables: Iterable[pa.Table]) -> pa.Table:
    return pa.concat_tables(list(tables)).unify_dictionaries()
