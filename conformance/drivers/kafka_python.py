"""Consumer driver for kafka-python (pure Python; eager assignors and, since 3.0, cooperative-sticky).

Run as ``python -m conformance.drivers.kafka_python --bootstrap ... --group g --topic orders
--member k1 --assignor range|roundrobin|sticky|cooperative-sticky --events k1.jsonl 2> k1.log``.

What it records:

- kafka-python's own log on stderr through :mod:`logging`, format
  ``%(asctime)s %(levelname)s %(name)s %(message)s`` (asctime as ``2025-01-31 12:00:00,123``):
  logger ``kafka.coordinator`` (and ``kafka.coordinator.consumer``) at DEBUG -- "Successfully
  joined group g <Generation 3 (member_id: ..., protocol: range)>", "Elected group leader",
  "Setting newly assigned partitions {...}", "Revoking previously assigned partitions {...}",
  SyncGroup / heartbeat failures -- and the rest of ``kafka`` at INFO. The heartbeat thread's
  logger ``kafka.coordinator.heartbeat`` stays at INFO (its DEBUG lines are one per heartbeat), and
  one DEBUG message is dropped: ``coordinator.poll: timeout in ensure_active_group; returning
  early``, which kafka-python repeats on every poll while a rebalance is in progress.
- groupspec events from a ``ConsumerRebalanceListener`` and the consume loop
  (:mod:`conformance.drivers.common`). kafka-python 3.0 brought KIP-429: a
  ``CooperativeStickyAssignor`` (kafka/coordinator/assignors/cooperative_sticky.py) and
  ``ConsumerRebalanceListener.on_partitions_lost`` (before 3.0 only the eager protocol, and a lost
  assignment reported as revoked). ``member_id`` and ``generation`` are read from
  the coordinator's ``_generation`` (kafka.coordinator.base.Generation; a private attribute:
  kafka-python has no public getter that works inside the callbacks, ``generation_if_stable()``
  answers None while rebalancing). In ``on_partitions_revoked`` it is the generation being left,
  in ``on_partitions_assigned`` the one just joined.

``api_version`` defaults to ``(2, 3, 0)``: against librdkafka's mock cluster kafka-python's
version probing picks request versions the mock parses wrongly (docs/embedded-coordinator.md);
``-X api_version=auto`` lets kafka-python probe, ``-X api_version=2.5.0`` pins another.
"""

from __future__ import annotations

import logging
import sys
import time
import traceback
from collections.abc import Sequence
from typing import Any

import kafka
from kafka import KafkaConsumer
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata
from kafka.structs import TopicPartition as KTP

from conformance.drivers.common import (
    PARTITIONS_ASSIGNED,
    PARTITIONS_LOST,
    PARTITIONS_REVOKED,
    SHUTDOWN_COMPLETE,
    STARTUP_COMPLETE,
    DriverArgs,
    EventWriter,
    StopFlag,
    log_to_stderr,
    option_value,
    parse_args,
    startup_fields,
    tps,
    write_committed,
    write_consumed,
)

CLIENT = f"kafka-python {kafka.__version__}"
ASSIGNORS: dict[str, Any] = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
}
try:  # KIP-429 came in kafka-python 2.3; an older release (--client kafka-python==2.2.x) offers the rest
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
except ImportError:
    pass
else:
    ASSIGNORS["cooperative-sticky"] = CooperativeStickyAssignor
DEFAULT_API_VERSION = (2, 3, 0)


# kafka-python logs this at DEBUG on every poll() while a rebalance is in progress (hundreds of
# times a second); it says nothing the surrounding lines do not, and would make up most of a log.
# kafka-python 3.0 adds "need_rejoin: False ..." at DEBUG on every poll (a "True" line says why it
# rejoins and is kept).
POLL_SPAM = "coordinator.poll: timeout in ensure_active_group; returning early"
POLL_SPAM_PREFIX = "need_rejoin: False"


def _not_poll_spam(record: logging.LogRecord) -> bool:
    msg = str(record.msg)
    return msg != POLL_SPAM and not msg.startswith(POLL_SPAM_PREFIX)


def configure_logging() -> None:
    log_to_stderr({"kafka": logging.INFO, "kafka.coordinator": logging.DEBUG, "kafka.coordinator.heartbeat": logging.INFO},
                  keep=_not_poll_spam)


def _option_value(key: str, value: str) -> Any:
    if key == "api_version":
        return None if value == "auto" else tuple(int(x) for x in value.split("."))
    return option_value(value)


def client_config(args: DriverArgs) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap_servers": args.bootstrap.split(","),
        "group_id": args.group,
        "client_id": args.member,
        "partition_assignment_strategy": [ASSIGNORS[a] for a in args.assignors],
        "session_timeout_ms": args.session_timeout_ms,
        "heartbeat_interval_ms": args.heartbeat_interval_ms,
        "enable_auto_commit": args.commit == "auto",
        "auto_offset_reset": "earliest",
        "api_version": DEFAULT_API_VERSION,
    }
    if args.instance_id is not None:
        conf["group_instance_id"] = args.instance_id
    if args.max_poll_interval_ms is not None:
        conf["max_poll_interval_ms"] = args.max_poll_interval_ms
    for key, value in args.client_option:
        conf[key] = _option_value(key, value)
    return conf


class Driver(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, args: DriverArgs) -> None:
        self.args = args
        self.out = EventWriter(args.events, member=args.member, group=args.group, protocol=args.protocol,
                               assignor=args.assignor, client=CLIENT)
        self.consumer = KafkaConsumer(**client_config(args))

    def identity(self) -> dict[str, Any]:
        generation = getattr(getattr(self.consumer, "_coordinator", None), "_generation", None)
        if generation is None:
            return {}
        member_id = generation.member_id or None
        gen = generation.generation_id
        return {"member_id": member_id, "generation": gen if gen is not None and gen >= 0 else None}

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.out.write(PARTITIONS_REVOKED, partitions=tps(revoked), **self.identity())

    def on_partitions_lost(self, lost: Any) -> None:
        self.out.write(PARTITIONS_LOST, partitions=tps(lost), **self.identity())

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.out.write(PARTITIONS_ASSIGNED, partitions=tps(assigned), **self.identity())

    def run(self, stop: StopFlag) -> bool:
        self.consumer.subscribe(topics=list(self.args.topics), listener=self)
        self.out.write(STARTUP_COMPLETE, **startup_fields(self.args))
        failed = False
        try:
            while not stop.stopped:
                for command in stop.commands():
                    if "subscribe" in command:
                        self.out.update_context(subscription=sorted(command["subscribe"]))
                        self.consumer.subscribe(topics=list(command["subscribe"]), listener=self)
                    elif "stall_ms" in command:
                        time.sleep(command["stall_ms"] / 1000)  # the heartbeat thread goes on
                batches = self.consumer.poll(timeout_ms=self.args.poll_ms, max_records=self.args.max_records)
                records = [(r.topic, r.partition, r.offset) for recs in batches.values() for r in recs]
                if records:
                    self.consumed(records)
        except KafkaError as exc:
            traceback.print_exc(file=sys.stderr)  # where the client raised it: evidence for a finding
            sys.stderr.write(f"groupspec driver: fatal: {exc!r}\n")
            failed = True
        try:
            self.consumer.close()
        except KafkaError as exc:
            sys.stderr.write(f"groupspec driver: close failed: {exc!r}\n")
            failed = True
        self.out.write(SHUTDOWN_COMPLETE, failed=failed)
        self.out.close()
        return not failed

    def consumed(self, records: list[tuple[str, int, int]]) -> None:
        ident = self.identity()
        summaries = write_consumed(self.out, records, ident)
        if self.args.commit != "sync":
            return
        offsets = {KTP(s.topic, s.partition): OffsetAndMetadata(s.max_offset + 1, "", -1) for s in summaries}
        try:
            self.consumer.commit(offsets=offsets)
        except KafkaError as exc:
            write_committed(self.out, summaries, ident, error=repr(exc))
        else:
            write_committed(self.out, summaries, ident)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("conformance.drivers.kafka_python", argv, tuple(ASSIGNORS))
    configure_logging()
    stop = StopFlag(args.events + ".ctl")
    return 0 if Driver(args).run(stop) else 1


if __name__ == "__main__":
    sys.exit(main())
