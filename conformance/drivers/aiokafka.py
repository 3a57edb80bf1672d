"""Consumer driver for aiokafka (asyncio; eager protocol only).

Run as ``python -m conformance.drivers.aiokafka --bootstrap ... --group g --topic orders --member a1
--assignor range|roundrobin|sticky --events a1.jsonl 2> a1.log`` (always with ``-m``: the module's
name is the library's).

What it records:

- aiokafka's own log on stderr through :mod:`logging`, format
  ``%(asctime)s %(levelname)s %(name)s %(message)s``: logger ``aiokafka.consumer.group_coordinator``
  at DEBUG ("(Re-)joining group", "Joined group ... (generation N) with member_id ...", "Elected group
  leader", "Setting newly assigned partitions", "Revoking previously assigned partitions", heartbeat
  failures), the rest of ``aiokafka`` at INFO.
- groupspec events from an aiokafka ``ConsumerRebalanceListener`` and the consume loop
  (:mod:`conformance.drivers.common`). aiokafka (0.14 too) implements only the eager protocol and has no
  ``on_partitions_lost``. ``member_id`` / ``generation`` are the group coordinator's attributes of
  those names (``consumer._coordinator``, private: aiokafka exposes no getter); in
  ``on_partitions_revoked`` they are the generation being left, in ``on_partitions_assigned`` the
  one just joined.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Sequence
from typing import Any

import aiokafka
from aiokafka import AIOKafkaConsumer
from aiokafka.abc import ConsumerRebalanceListener
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka.errors import KafkaError
from aiokafka.structs import OffsetAndMetadata
from aiokafka.structs import TopicPartition as ATP

from conformance.drivers.common import (
    PARTITIONS_ASSIGNED,
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

CLIENT = f"aiokafka {aiokafka.__version__}"
ASSIGNORS = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
}


def configure_logging() -> None:
    log_to_stderr({"aiokafka": logging.INFO, "aiokafka.consumer.group_coordinator": logging.DEBUG})


class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, driver: Driver) -> None:
        self.driver = driver

    async def on_partitions_revoked(self, revoked: Any) -> None:
        self.driver.out.write(PARTITIONS_REVOKED, partitions=tps(revoked), **self.driver.identity())

    async def on_partitions_assigned(self, assigned: Any) -> None:
        self.driver.out.write(PARTITIONS_ASSIGNED, partitions=tps(assigned), **self.driver.identity())


class Driver:
    def __init__(self, args: DriverArgs) -> None:
        self.args = args
        self.out = EventWriter(args.events, member=args.member, group=args.group, protocol="eager",
                               assignor=args.assignor, client=CLIENT)
        self.consumer: AIOKafkaConsumer | None = None

    def identity(self) -> dict[str, Any]:
        coordinator = getattr(self.consumer, "_coordinator", None)
        if coordinator is None:
            return {}
        gen = getattr(coordinator, "generation", None)
        member_id = getattr(coordinator, "member_id", None) or None
        return {"member_id": member_id, "generation": gen if isinstance(gen, int) and gen >= 0 else None}

    async def run(self, stop: StopFlag) -> bool:
        conf: dict[str, Any] = {
            "bootstrap_servers": self.args.bootstrap,
            "group_id": self.args.group,
            "client_id": self.args.member,
            "partition_assignment_strategy": tuple(ASSIGNORS[a] for a in self.args.assignors),
            "session_timeout_ms": self.args.session_timeout_ms,
            "heartbeat_interval_ms": self.args.heartbeat_interval_ms,
            "enable_auto_commit": self.args.commit == "auto",
            "auto_offset_reset": "earliest",
        }
        if self.args.instance_id is not None:
            conf["group_instance_id"] = self.args.instance_id
        if self.args.max_poll_interval_ms is not None:
            conf["max_poll_interval_ms"] = self.args.max_poll_interval_ms
        for key, value in self.args.client_option:
            conf[key] = option_value(value)
        consumer = AIOKafkaConsumer(**conf)
        self.consumer = consumer
        failed = False
        await consumer.start()
        try:
            consumer.subscribe(topics=list(self.args.topics), listener=Listener(self))
            self.out.write(STARTUP_COMPLETE, **startup_fields(self.args))
            while not stop.stopped:
                for command in stop.commands():
                    if "subscribe" in command:
                        self.out.update_context(subscription=sorted(command["subscribe"]))
                        consumer.subscribe(topics=list(command["subscribe"]), listener=Listener(self))
                    elif "stall_ms" in command:
                        await asyncio.sleep(command["stall_ms"] / 1000)  # the heartbeat task goes on
                batches = await consumer.getmany(timeout_ms=self.args.poll_ms, max_records=self.args.max_records)
                records = [(r.topic, r.partition, r.offset) for recs in batches.values() for r in recs]
                if records:
                    await self.consumed(records)
        except KafkaError as exc:
            sys.stderr.write(f"groupspec driver: fatal: {exc!r}\n")
            failed = True
        finally:
            try:
                await consumer.stop()
            except KafkaError as exc:
                sys.stderr.write(f"groupspec driver: stop failed: {exc!r}\n")
                failed = True
        self.out.write(SHUTDOWN_COMPLETE, failed=failed)
        self.out.close()
        return not failed

    async def consumed(self, records: list[tuple[str, int, int]]) -> None:
        assert self.consumer is not None
        ident = self.identity()
        summaries = write_consumed(self.out, records, ident)
        if self.args.commit != "sync":
            return
        offsets = {ATP(s.topic, s.partition): OffsetAndMetadata(s.max_offset + 1, "") for s in summaries}
        try:
            await self.consumer.commit(offsets)
        except KafkaError as exc:
            write_committed(self.out, summaries, ident, error=repr(exc))
        else:
            write_committed(self.out, summaries, ident)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("conformance.drivers.aiokafka", argv, tuple(ASSIGNORS))
    configure_logging()
    stop = StopFlag(args.events + ".ctl")
    return 0 if asyncio.run(Driver(args).run(stop)) else 1


if __name__ == "__main__":
    sys.exit(main())
