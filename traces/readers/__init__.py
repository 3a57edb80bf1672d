"""One reader per captured format. Each module has ``read(source, stats)`` yielding located events
(:data:`traces.schema.Located`) one line at a time, and ``sniff(first_lines)`` returning
``(format, confidence 0-100, member names seen)`` or None; :mod:`traces.detect` picks the reader.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType

from traces.readers import broker_log, java_consumer_log, jsonl, kafka_python_log, librdkafka_log
from traces.schema import InputStats, Located, Source

ReadFn = Callable[[Source, InputStats], Iterator[Located]]

# format name -> (reader module, one line for --help and docs)
FORMATS: dict[str, tuple[ModuleType, str]] = {
    "groupspec": (jsonl, "groupspec JSON Lines (the model, the conformance drivers)"),
    "verifiable-consumer": (jsonl, "Apache Kafka VerifiableConsumer JSON, one file per consumer"),
    "kafkatest": (jsonl, "confluent-kafka's kafkatest verifiable consumer (`_time` instead of `timestamp`)"),
    "broker-log": (broker_log, "an Apache Kafka broker's server.log (old Scala and new Java coordinator)"),
    "java-consumer-log": (java_consumer_log, "Apache Kafka Java consumer log (kafka-clients)"),
    "librdkafka-log": (librdkafka_log, "librdkafka log with debug=cgrp (native or through confluent-kafka)"),
    "kafka-python-log": (kafka_python_log, "kafka-python coordinator log"),
}
JSONL_FORMATS = frozenset({"groupspec", "verifiable-consumer", "kafkatest"})


def reader(fmt: str) -> ReadFn:
    read: ReadFn = FORMATS[fmt][0].read
    return read
