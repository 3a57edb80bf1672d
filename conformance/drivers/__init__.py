"""Real consumers as separate processes, each writing a groupspec trace and its client's own log.

One module per client library (run with ``python -m``): :mod:`.confluent_kafka` (librdkafka),
:mod:`.kafka_python`, :mod:`.aiokafka`; :mod:`.kafkatest` runs confluent-kafka's own kafkatest
VerifiableConsumer. :mod:`.common` holds what they share, :mod:`.process` starts, stops and
watches them.
"""
