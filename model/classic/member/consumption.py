"""The consumer's records and offset commits (``ConsumerCoordinator``'s commit path, ``KafkaConsumer.poll``).

With a delivery configuration (``model.consumption``), the record part of ``poll()``: the periodic
auto-commit, OffsetFetch for partitions without a position, fetching and processing, the
application's commits, and their answers (``offsets_committed``, ``records_consumed`` events in
VerifiableConsumer's format); without one, the commits of what is owned (a stand-in position).
"""

from __future__ import annotations

from typing import Any

from model import consumption as cs
from model import events as ev
from model.classic.member.state import (
    _RETRIABLE,
    Event,
    Generation,
    JoinFuture,
    JoinPrepareCommit,
    Member,
    MemberState,
    Output,
    PendingCommit,
    _die,
    _request_rejoin,
    _reset_state_and_rejoin,
    _with,
    member_event,
)
from model.consumption import Log
from model.messages import (
    Errors,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Request,
)
from model.types import RebalanceProtocol, TopicPartition


def _in_group(m: Member) -> bool:
    """``ConsumerCoordinator.poll`` would return true: coordinator known, no rebalance under way
    (only then does ``poll()`` auto-commit and fetch committed offsets)."""
    return m.coordinator_node is not None and m.join is JoinFuture.NONE and not m.rejoin_needed \
        and m.state is MemberState.STABLE


def _pending_revocation(m: Member) -> bool:
    """``maybeMarkPartitionsPendingRevocation``: an EAGER member that sent onJoinPrepare's auto-commit
    fetches nothing more from what it owns until the callbacks ran (all of it will be revoked)."""
    return m.config.protocol is RebalanceProtocol.EAGER and m.prepare_commit is not JoinPrepareCommit.NONE


def _poll_records(m: Member, now: int, log: Log, requests: list[Request], events: list[Event]) -> Member:
    """The record part of ``poll()`` (``model.consumption``): when in the group, the periodic
    auto-commit (``maybeAutoCommitOffsetsAsync(now)``) and an OffsetFetch for partitions without a
    position (``updateFetchPositions``); then the records (``pollForFetches``), processed at once or
    handed to the async worker; the worker's finished batches; the application's commit."""
    c = m.consumption
    d = m.config.delivery
    assert c is not None and d is not None
    if _in_group(m):
        if m.config.auto_commit and cs.auto_commit_due(c, now):
            m = _with(m, consumption=cs.auto_commit_reset(c, d, now))
            m = _send_commit(m, cs.all_consumed(c), True, now, requests, events)
            c = m.consumption
            assert c is not None
        if c.fetch_in_flight is None and cs.position_missing(c, m.owned):
            pending = cs.awaiting_position(c, m.owned)
            requests.append(OffsetFetchRequest(pending))
            c = cs.fetch_sent(c, pending)
    polled: cs.Polled = ()
    if not _pending_revocation(m):
        c, polled = cs.poll_records(c, log, d, now)
    done: cs.Polled = polled
    if d.processing == "async":
        c, done = cs.process_due(c, now)
    m = _with(m, consumption=c)
    if done:
        events.append(_records_consumed(m, done, now))
        if not m.config.auto_commit and d.commit != "none":
            m = _send_commit(m, cs.application_offsets(c, d), False, now, requests, events)
    return m


def _records_consumed(m: Member, polled: cs.Polled, now: int) -> Event:
    """VerifiableConsumer's ``records_consumed``: per partition count, minOffset, maxOffset."""
    parts = [{"topic": tp.topic, "partition": tp.partition, "count": last - first + 1, "minOffset": first,
              "maxOffset": last} for tp, first, last in polled]
    event = member_event(m, ev.RECORDS_CONSUMED, now, count=sum(last - first + 1 for _, first, last in polled))
    event["partitions"] = parts  # as VerifiableConsumer prints them, after the count
    return event


def _send_commit(m: Member, offsets: tuple[tuple[TopicPartition, int], ...], auto: bool, now: int,
                 requests: list[Request], events: list[Event], blocks_join: bool = False) -> Member:
    """``sendOffsetCommitRequest``: only a STABLE member (``generationIfStable``) with a known
    coordinator sends; otherwise an application commit fails at once (CommitFailedException, or
    RebalanceInProgressException during a rebalance) and the auto-commit only logs."""
    if not offsets:
        return m
    if m.state is not MemberState.STABLE or m.coordinator_node is None:
        if not auto:
            error = ("RebalanceInProgressException" if m.state in (MemberState.PREPARING_REBALANCE,
                                                                   MemberState.COMPLETING_REBALANCE)
                     else "CommitFailedException" if m.coordinator_node is not None else "COORDINATOR_NOT_AVAILABLE")
            events.append(_offsets_committed(m, m.generation, offsets, None, error, now))
        return m
    requests.append(OffsetCommitRequest(m.generation.member_id, m.config.instance_id, m.generation.generation_id,
                                        offsets))
    return _with(m, commits_in_flight=m.commits_in_flight + (PendingCommit(m.generation, offsets, blocks_join),))


def _offsets_committed(m: Member, sent: Generation, offsets: tuple[tuple[TopicPartition, int], ...],
                       partition_errors: dict[TopicPartition, Errors] | None, error: str | None, now: int) -> Event:
    """VerifiableConsumer's ``offsets_committed`` (``success``, ``error``), with the generation and
    member id the commit was sent with."""
    items: list[dict[str, Any]] = []
    for tp, offset in offsets:
        item: dict[str, Any] = {"topic": tp.topic, "partition": tp.partition, "offset": offset}
        perr = (partition_errors or {}).get(tp, Errors.NONE)
        if perr is not Errors.NONE:
            item["error"] = perr.name
        items.append(item)
    event = member_event(m, ev.OFFSETS_COMMITTED, now, success=error is None, error=error)
    event["offsets"] = items
    event["generation"] = sent.generation_id
    if sent.member_id:
        event["member_id"] = sent.member_id
    return event


def _commit_owned(m: Member, now: int, requests: list[Request], events: list[Event],
                  blocks_join: bool = False) -> Member:
    """``maybeAutoCommitOffsetsAsync``: commit the position of every owned partition, sent only
    while the member is STABLE (``sendOffsetCommitRequest`` uses ``generationIfStable`` and fails
    locally otherwise). Without records a position is a stand-in: the time."""
    if not m.config.auto_commit or not m.owned:
        return m
    offsets = cs.all_consumed(m.consumption) if m.consumption is not None else \
        tuple((tp, now) for tp in sorted(m.owned))
    return _send_commit(m, offsets, True, now, requests, events, blocks_join)


def _on_offset_commit_response(m: Member, r: OffsetCommitResponse, now: int) -> Output:
    """``OffsetCommitResponseHandler.handle``; with records, the answer is an ``offsets_committed``
    event (VerifiableConsumer prints one per commit callback)."""
    if not m.commits_in_flight:
        return m, (), ()
    pending = m.commits_in_flight[0]
    sent = pending.generation
    m = _with(m, commits_in_flight=m.commits_in_flight[1:])
    if pending.blocks_join and m.prepare_commit is JoinPrepareCommit.IN_FLIGHT:
        m = _with(m, prepare_commit=JoinPrepareCommit.RETRY if r.error in _RETRIABLE else JoinPrepareCommit.DONE)
    events: tuple[Event, ...] = ()
    if m.consumption is not None and pending.offsets:
        errors = dict(r.partition_errors)
        failed = [e for e in (r.error, *errors.values()) if e is not Errors.NONE]
        events = (_offsets_committed(m, sent, pending.offsets, errors, failed[0].name if failed else None, now),)
    error = r.error
    if error is Errors.FENCED_INSTANCE_ID:
        return (_with(m, commit_fenced=True) if m.generation == sent else m), (), events
    if error is Errors.REBALANCE_IN_PROGRESS:
        return _request_rejoin(m, "offset commit failed since group is already rebalancing"), (), events
    if error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
        if m.generation != sent and m.state is MemberState.PREPARING_REBALANCE:
            return m, (), events  # already in another rebalance with a new generation: nothing to reset
        return _reset_state_and_rejoin(m, f"encountered {error.name} from OFFSET_COMMIT response",
                                       error is not Errors.ILLEGAL_GENERATION), (), events
    return m, (), events


def _on_offset_fetch_response(m: Member, r: OffsetFetchResponse, now: int, log: Log,
                              mutants: frozenset[str]) -> Output:
    """``OffsetFetchResponseHandler`` then ``SubscriptionState``: positions from the committed
    offsets or ``auto.offset.reset`` (``model.consumption.on_offsets_fetched``); ``none`` with
    nothing committed makes ``poll()`` throw NoOffsetForPartitionException, which ends the
    application."""
    c, d = m.consumption, m.config.delivery
    if c is None or d is None or c.fetch_in_flight is None:
        return m, (), ()
    if r.error is not Errors.NONE:
        return _with(m, consumption=cs.fetch_failed(c)), (), ()
    c, error = cs.on_offsets_fetched(c, r.offsets, m.owned, log, d, mutants)
    m = _with(m, consumption=c)
    if error is not None:
        return _die(m, error, now)
    return m, (), ()
