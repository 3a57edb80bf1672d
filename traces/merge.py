"""The files of a trace set as one stream of events in time order, read lazily.

Each file's reader yields its events in file order; :func:`heapq.merge` interleaves them by
``(timestamp, file, position)``, holding one pending event per file. Nothing is read ahead, so
memory does not grow with the length of the files: what grows is the checker's state, per member
and partition.

Within a file, order is the file's own (a process writes its events in the order they happened,
even if its clock steps back). Between files, timestamps come from different clocks: two events
of different files less than the clock-skew tolerance apart may have happened in either order.
The merge does not reorder them -- there is no right order to pick -- the checker decides with the
tolerance instead: an ownership overlap between two files no longer than ``--skew-ms`` is not
reported, and a zombie's activity counts only when it is later than the new owner's assignment by
more than that.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from traces.readers import reader
from traces.schema import InputStats, Located, Source


def merged(sources: list[Source], stats: InputStats) -> Iterator[Located]:
    """All events of ``sources`` in time order (then file order, then position in the file)."""
    streams = [reader(source.format)(source, stats) for source in sources]
    if len(streams) == 1:
        return streams[0]
    return heapq.merge(*streams)
