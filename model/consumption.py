"""What a consumer does with records: fetch positions, polls, processing, and which offsets it commits.

The group protocol (``model.classic.member``) decides which partitions a member owns; this module decides
what it reads from them and what it tells the coordinator it has read. It is the record side of
``KafkaConsumer`` (Apache Kafka 4.1, clients/.../consumer/internals/``SubscriptionState``,
``ConsumerCoordinator``, ``Fetcher``), as pure functions on a frozen :class:`Consumption`.

**The log.** Each partition is a log of records at offsets 0, 1, 2, ...; producers append
(``model.system``'s ``RecordsProduced``), nothing is ever deleted, so the log start offset is 0 and
the log end offset is the number of records. Record contents do not matter, only offsets.

**Position** (``SubscriptionState.TopicPartitionState.position``): the offset of the next record the
consumer will fetch from a partition it owns. A newly assigned partition has none (INITIALIZING);
the next ``poll()`` asks the coordinator for the group's committed offsets (OffsetFetch,
``ConsumerCoordinator.refreshCommittedOffsetsIfNeeded``) and starts there. Where the group has
committed nothing, ``auto.offset.reset`` decides (``SubscriptionState.resetInitializingPositions``,
``AutoOffsetResetStrategy``): ``earliest`` starts at the log start, ``latest`` at the log end (a
ListOffsets to the partition leader, answered at once here), ``none`` makes ``poll()`` throw
``NoOffsetForPartitionException``. A revoked or lost partition's position is dropped with it
(``SubscriptionState.assignFromSubscribed``), so a partition that comes back is fetched again.

**Polling** (``KafkaConsumer.poll`` -> ``Fetcher.collectFetch``): one poll returns at most
``max.poll.records`` records, taken partition by partition in a rotating order so that no partition
starves (the fetch buffer drains the partition it last read from before the next one; the model
rotates after every poll). The position advances past what the poll returned. The application
thread polls whenever records are available: consumption takes no model time.

**Processing.** ``sync`` processing handles a poll's records before the next poll, and they count
as consumed when the poll returns (VerifiableConsumer prints ``records_consumed`` then). ``async``
processing hands the records to a worker that finishes them ``processing_ms`` later; a batch of a
partition the member lost or gave up before then is abandoned by the worker. So with ``async`` the
position runs ahead of what was processed, and an auto-commit can commit records nobody processed:
the loss Kafka's documentation warns about (KafkaConsumer javadoc, "Manual Offset Control").

**What is committed.** ``enable.auto.commit`` commits every position
(``SubscriptionState.allConsumed``) every ``auto.commit.interval.ms`` from inside ``poll()``
(``ConsumerCoordinator.maybeAutoCommitOffsetsAsync(now)``), before a rebalance (``onJoinPrepare``)
and on ``close()``. Without it the application commits: after each poll (``commit: sync`` /
``async``: ``commitSync()`` / ``commitAsync()`` of what it processed), and, with
``commit_on_revoke``, in ``onPartitionsRevoked`` for the partitions it gives up. A commit carries
"the offset of the next record the application will consume" (KafkaConsumer#commitSync javadoc).
"""

from __future__ import annotations

from dataclasses import dataclass

from model.system_evolve import evolver, replace
from model.types import TopicPartition

Offsets = tuple[tuple[TopicPartition, int], ...]  # sorted by partition
Log = tuple[tuple[TopicPartition, int], ...]  # log end offset per partition, sorted

RESET_POLICIES = ("earliest", "latest", "none")
COMMIT_POLICIES = ("sync", "async", "none")
PROCESSING_MODES = ("sync", "async")
NO_OFFSET_FOR_PARTITION = "NoOffsetForPartitionException"
POSITION_IGNORES_COMMITTED = "position-ignores-committed"  # model.mutants


@dataclass(frozen=True, slots=True)
class DeliveryConfig:
    """The consumer settings and application habits that decide what happens to records.

    Defaults are Kafka's (ConsumerConfig, 4.x): ``auto.offset.reset`` latest, ``max.poll.records``
    500, ``auto.commit.interval.ms`` 5000. ``enable.auto.commit`` is ``MemberConfig.auto_commit``.
    """

    auto_offset_reset: str = "latest"
    auto_commit_interval_ms: int = 5000
    max_poll_records: int = 500
    commit: str = "none"  # without auto-commit: what the application calls after each poll
    commit_on_revoke: bool = False  # commitSync in onPartitionsRevoked
    processing: str = "sync"
    processing_ms: int = 0  # async processing: how long a batch takes


@dataclass(frozen=True, slots=True)
class Batch:
    """Records an ``async`` application polled and has not processed yet: offsets first..last."""

    due: int
    tp: TopicPartition
    first: int
    last: int


@dataclass(frozen=True, slots=True)
class Consumption:
    """One incarnation's record state. ``positions`` covers owned partitions that have a position;
    ``processed`` (async only) is the next offset the worker will finish per partition."""

    positions: Offsets = ()
    processed: Offsets = ()
    batches: tuple[Batch, ...] = ()
    fetch_in_flight: tuple[TopicPartition, ...] | None = None  # an unanswered OffsetFetch asked for these
    auto_commit_due: int = 0  # nextAutoCommitTimer
    rotation: int = 0  # where the next poll starts among the partitions with a position


_evolve = evolver(Consumption)


def start(config: DeliveryConfig, now: int) -> Consumption:
    """A new consumer: no positions; the auto-commit timer starts at construction."""
    return Consumption(auto_commit_due=now + config.auto_commit_interval_ms)


_ENDS: tuple[Log, dict[TopicPartition, int]] = ((), {})


def log_ends(log: Log) -> dict[TopicPartition, int]:
    """``log`` as a dict, remembered for the last log seen (a run asks about the same log value
    once per member between two productions). Do not modify the result."""
    global _ENDS
    cached, ends = _ENDS
    if cached is not log:
        ends = dict(log)
        _ENDS = (log, ends)
    return ends


def log_end(log: Log, tp: TopicPartition) -> int:
    return log_ends(log).get(tp, 0)


# -- positions -------------------------------------------------------------------------------------


def awaiting_position(c: Consumption, owned: frozenset[TopicPartition]) -> tuple[TopicPartition, ...]:
    """Owned partitions with no position (INITIALIZING), sorted: what the next OffsetFetch asks for."""
    have = {tp for tp, _ in c.positions}
    return tuple(sorted(tp for tp in owned if tp not in have))


def position_missing(c: Consumption, owned: frozenset[TopicPartition]) -> bool:
    """``bool(awaiting_position(c, owned))``, asked for on every poll and every scheduler refresh,
    so answered with one set operation instead of building the sorted tuple."""
    return bool(owned) and not owned.issubset([tp for tp, _ in c.positions])


def fetch_sent(c: Consumption, partitions: tuple[TopicPartition, ...]) -> Consumption:
    return replace(c, fetch_in_flight=partitions)


def on_offsets_fetched(c: Consumption, committed: Offsets, owned: frozenset[TopicPartition], log: Log,
                       config: DeliveryConfig, mutants: frozenset[str]) -> tuple[Consumption, str | None]:
    """The OffsetFetch answer: every partition still owned and still without a position starts at
    the committed offset, or where ``auto.offset.reset`` says. Returns the exception ``poll()``
    throws (``none`` with nothing committed), or None.

    Mutant ``position-ignores-committed``: the committed offset is ignored and the reset policy
    always applies (``latest`` then skips what was produced since the last commit).
    """
    have = dict(c.positions)
    processed = dict(c.processed)
    for tp, offset in committed:
        if tp not in owned or tp in have:
            continue  # revoked meanwhile, or already placed
        if offset < 0 or POSITION_IGNORES_COMMITTED in mutants:
            if config.auto_offset_reset == "none":
                return replace(c, fetch_in_flight=None), NO_OFFSET_FOR_PARTITION
            offset = 0 if config.auto_offset_reset == "earliest" else log_end(log, tp)
        have[tp] = offset
        if config.processing == "async":
            processed[tp] = offset
    return replace(c, positions=tuple(sorted(have.items())), processed=tuple(sorted(processed.items())),
                   fetch_in_flight=None), None


def fetch_failed(c: Consumption) -> Consumption:
    """OffsetFetch answered with an error: the partitions are still initializing; asked again later."""
    return replace(c, fetch_in_flight=None)


def retain(c: Consumption, owned: frozenset[TopicPartition]) -> Consumption:
    """Drop the positions, processing state and pending batches of partitions no longer owned."""
    if all(tp in owned for tp, _ in c.positions) and all(b.tp in owned for b in c.batches):
        return c
    return replace(c, positions=tuple(p for p in c.positions if p[0] in owned),
                   processed=tuple(p for p in c.processed if p[0] in owned),
                   batches=tuple(b for b in c.batches if b.tp in owned))


# -- polling and processing ---------------------------------------------------------------------------

Polled = tuple[tuple[TopicPartition, int, int], ...]  # (partition, first offset, last offset)


def records_available(c: Consumption, log: Log) -> bool:
    if not c.positions:
        return False
    ends = log_ends(log)
    for tp, pos in c.positions:  # noqa: SIM110 - a plain loop is faster; runs at every scheduler refresh
        if ends.get(tp, 0) > pos:
            return True
    return False


def poll_records(c: Consumption, log: Log, config: DeliveryConfig, now: int) -> tuple[Consumption, Polled]:
    """One poll's records: up to ``max.poll.records``, partitions in rotating order."""
    ends = log_ends(log)
    positions = c.positions
    n = len(positions)
    budget = config.max_poll_records
    polled: list[tuple[TopicPartition, int, int]] = []
    for i in range(n):
        tp, pos = positions[(c.rotation + i) % n]
        take = min(budget, ends.get(tp, 0) - pos)
        if take <= 0:
            continue
        polled.append((tp, pos, pos + take - 1))
        budget -= take
        if budget == 0:
            break
    if not polled:
        return c, ()
    moved = {tp: last + 1 for tp, _, last in polled}
    batches = c.batches
    if config.processing == "async":
        batches += tuple(Batch(now + config.processing_ms, tp, first, last) for tp, first, last in polled)
    polled.sort()
    return _evolve(c, {"positions": tuple([(tp, moved.get(tp, pos)) for tp, pos in positions]),
                       "batches": batches, "rotation": (c.rotation + 1) % n}), tuple(polled)


def next_batch_due(c: Consumption) -> int | None:
    return min((b.due for b in c.batches), default=None)


def process_due(c: Consumption, now: int) -> tuple[Consumption, Polled]:
    """The async worker finishes every batch due by ``now``, oldest first."""
    done = tuple(b for b in c.batches if b.due <= now)
    if not done:
        return c, ()
    processed = dict(c.processed)
    for b in done:
        processed[b.tp] = b.last + 1
    return replace(c, batches=tuple(b for b in c.batches if b.due > now),
                   processed=tuple(sorted(processed.items()))), tuple((b.tp, b.first, b.last) for b in done)


# -- commits -----------------------------------------------------------------------------------------


def all_consumed(c: Consumption) -> Offsets:
    """``SubscriptionState.allConsumed``: what auto-commit commits, the positions."""
    return c.positions


def application_offsets(c: Consumption, config: DeliveryConfig,
                        partitions: frozenset[TopicPartition] | None = None) -> Offsets:
    """What the application commits: what it processed (the position, with ``sync`` processing),
    for ``partitions`` (default: all it has a position for)."""
    source = c.processed if config.processing == "async" else c.positions
    return tuple(p for p in source if partitions is None or p[0] in partitions)


def auto_commit_due(c: Consumption, now: int) -> bool:
    return c.auto_commit_due <= now


def auto_commit_reset(c: Consumption, config: DeliveryConfig, now: int) -> Consumption:
    """``nextAutoCommitTimer.reset(autoCommitIntervalMs)``."""
    return replace(c, auto_commit_due=now + config.auto_commit_interval_ms)
