"""Consumer driver for librdkafka, through confluent-kafka-python.

Run as ``python -m conformance.drivers.confluent_kafka --bootstrap ... --group g --topic orders
--member c1 --assignor range|roundrobin|cooperative-sticky --events c1.jsonl 2> c1.log``
(always with ``-m``: the module's name is the library's, run as a script it would import itself).

What it records, and where each field comes from:

- librdkafka's own log with ``debug=cgrp`` on stderr, in librdkafka's format
  (``%7|<sec>.<ms>|<FACILITY>|<client>#consumer-N| [thrd:...]: ...``): JoinGroup / SyncGroup
  responses with the generation and member id, state changes, rebalance reasons.
- groupspec events from the rebalance callbacks (``on_assign`` / ``on_revoke`` / ``on_lost``; with
  cooperative-sticky librdkafka passes only the partitions added or removed, with eager ones the
  whole assignment), and from the consume loop (see :mod:`conformance.drivers.common`).
  ``member_id`` is ``Consumer.memberid()``. ``generation``: the client API has no getter, but
  ``Consumer.consumer_group_metadata()`` returns librdkafka's serialised group metadata
  (``rd_kafka_consumer_group_metadata_write``, rdkafka_cgrp.c: ``"CGMDv2:"``, the generation as a
  native int32, then group id, member id, instance id as NUL-terminated strings), which carries
  the generation the consumer is in at that moment; :func:`generation_of` reads it.
- ``protocol``: ``cooperative`` when every assignor given is cooperative-sticky, else ``eager``
  (``DriverArgs.protocol``; librdkafka picks the rebalance protocol from the assignors, rd_kafka_cgrp.c
  ``rd_kafka_cgrp_assignor_run``).
"""

from __future__ import annotations

import struct
import sys
import time
from collections.abc import Sequence
from typing import Any

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from conformance.drivers.common import (
    PARTITIONS_ASSIGNED,
    PARTITIONS_LOST,
    PARTITIONS_REVOKED,
    SHUTDOWN_COMPLETE,
    STARTUP_COMPLETE,
    DriverArgs,
    EventWriter,
    StopFlag,
    parse_args,
    startup_fields,
    tps,
    write_committed,
    write_consumed,
)

_version = confluent_kafka.version()  # a str in 2.12 (the docs say a (str, int) tuple)
CLIENT = (f"confluent-kafka {_version[0] if isinstance(_version, tuple) else _version} "
          f"(librdkafka {confluent_kafka.libversion()[0]})")
# librdkafka's classic assignors (rdkafka_assignor.c: range, roundrobin, cooperative-sticky; no eager sticky).
ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")
_CGMD_MAGIC = b"CGMDv2:"


def generation_of(cgmd: bytes) -> int | None:
    """The generation id inside librdkafka's serialised consumer group metadata, or None."""
    if not cgmd.startswith(_CGMD_MAGIC) or len(cgmd) < len(_CGMD_MAGIC) + 4:
        return None
    (generation,) = struct.unpack_from("=i", cgmd, len(_CGMD_MAGIC))
    return int(generation)


def consumer_protocol(args: DriverArgs) -> bool:
    """``-X group.protocol=consumer``: KIP-848's protocol (librdkafka 2.4+, rdkafka_cgrp.c
    ``rd_kafka_cgrp_consumer_*``): the assignor runs on the broker and the session and heartbeat are the
    broker's, so librdkafka refuses partition.assignment.strategy, session.timeout.ms and
    heartbeat.interval.ms with it ("not supported for group.protocol=consumer"); the driver leaves them out."""
    return dict(args.client_option).get("group.protocol") == "consumer"


def client_config(args: DriverArgs) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": args.member,
        "partition.assignment.strategy": ",".join(args.assignors),
        "session.timeout.ms": args.session_timeout_ms,
        "heartbeat.interval.ms": args.heartbeat_interval_ms,
        "enable.auto.commit": args.commit == "auto",
        "auto.offset.reset": "earliest",
        "debug": "cgrp",
        # librdkafka refuses max.poll.interval.ms < session.timeout.ms.
        "max.poll.interval.ms": max(args.session_timeout_ms, args.max_poll_interval_ms or 30000),
    }
    if args.instance_id is not None:
        conf["group.instance.id"] = args.instance_id
    if consumer_protocol(args):
        for key in ("partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms"):
            del conf[key]
        conf["max.poll.interval.ms"] = args.max_poll_interval_ms or 30000
    for key, value in args.client_option:
        conf[key] = value
    return conf


class Driver:
    def __init__(self, args: DriverArgs) -> None:
        self.args = args
        consumer = consumer_protocol(args)
        self.out = EventWriter(
            args.events, member=args.member, group=args.group,
            protocol="consumer" if consumer else args.protocol,
            assignor=dict(args.client_option).get("group.remote.assignor", "server") if consumer else args.assignor,
            client=CLIENT,
        )
        self.consumer = Consumer(client_config(args))

    # -- identity -----------------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        member_id = self.consumer.memberid() or None
        try:
            generation = generation_of(self.consumer.consumer_group_metadata())
        except KafkaException:
            generation = None
        return {"member_id": member_id, "generation": generation}

    # -- rebalance callbacks ------------------------------------------------------------------

    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.out.write(PARTITIONS_ASSIGNED, partitions=tps(partitions), **self.identity())

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.out.write(PARTITIONS_REVOKED, partitions=tps(partitions), **self.identity())

    def on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.out.write(PARTITIONS_LOST, partitions=tps(partitions), **self.identity())

    # -- the loop -----------------------------------------------------------------------------

    def subscribe(self, topics: Sequence[str]) -> None:
        self.consumer.subscribe(list(topics), on_assign=self.on_assign, on_revoke=self.on_revoke,
                                on_lost=self.on_lost)

    def run(self, stop: StopFlag) -> bool:
        self.subscribe(self.args.topics)
        self.out.write(STARTUP_COMPLETE, **startup_fields(self.args))
        failed = False
        try:
            while not stop.stopped:
                for command in stop.commands():
                    if "subscribe" in command:
                        self.out.update_context(subscription=sorted(command["subscribe"]))
                        self.subscribe(command["subscribe"])
                    elif "stall_ms" in command:
                        time.sleep(command["stall_ms"] / 1000)  # librdkafka's threads go on
                messages = self.consumer.consume(num_messages=self.args.max_records,
                                                 timeout=self.args.poll_ms / 1000)
                records = []
                for msg in messages:
                    err = msg.error()
                    if err is not None:
                        if err.fatal() or err.code() == KafkaError._FATAL:  # the event carries _FATAL itself
                            # librdkafka's fatal consumer error (e.g. FENCED_INSTANCE_ID, KIP-345): the instance
                            # is unusable and must be closed (librdkafka INTRODUCTION.md "Fatal consumer
                            # errors"), as the Java client's FencedInstanceIdException ends its poll loop
                            raise KafkaException(err)
                        if err.code() != KafkaError._PARTITION_EOF:
                            sys.stderr.write(f"% groupspec driver: consume error: {err}\n")
                        continue
                    records.append((msg.topic(), msg.partition(), msg.offset()))
                if records:
                    self.consumed(records)
        except KafkaException as exc:
            sys.stderr.write(f"% groupspec driver: fatal: {exc}\n")
            failed = True
        try:
            self.consumer.close()
        except KafkaException as exc:
            sys.stderr.write(f"% groupspec driver: close failed: {exc}\n")
            failed = True
        self.out.write(SHUTDOWN_COMPLETE, failed=failed)
        self.out.close()
        return not failed

    def consumed(self, records: list[tuple[str, int, int]]) -> None:
        ident = self.identity()
        summaries = write_consumed(self.out, records, ident)
        if self.args.commit != "sync":
            return
        offsets = [TopicPartition(s.topic, s.partition, s.max_offset + 1) for s in summaries]
        try:
            result = self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            write_committed(self.out, summaries, ident, error=str(exc.args[0]))
            return
        errors = [f"{p.topic}-{p.partition}: {p.error}" for p in (result or []) if p.error is not None]
        write_committed(self.out, summaries, ident, error="; ".join(errors) if errors else None)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("conformance.drivers.confluent_kafka", argv, ASSIGNORS)
    stop = StopFlag(args.events + ".ctl")
    return 0 if Driver(args).run(stop) else 1


if __name__ == "__main__":
    sys.exit(main())
