"""A real Apache Kafka broker for groupspec: the reference coordinator (docs/kafka-broker.md).

The harness API, kept small and stable for the scenario runner and the captures::

    from conformance.kafka import KafkaBroker

    with KafkaBroker(version="4.1.1", workdir=run_dir) as broker:   # fetched, formatted, started, ready
        broker.create_topic("orders", 6)
        broker.produce("orders", 30)            # Kafka's VerifiableProducer
        ... clients connect to broker.bootstrap ("127.0.0.1:PORT") ...
        broker.add_partitions("orders", 8)
        broker.restart()                        # same ports and storage; restart(hard=True) is SIGKILL
    # stopped (also on an exception or Ctrl-C), data deleted, run_dir/logs/server.log kept

- ``KafkaBroker(version, workdir, *, port=0, controller_port=0, settings=None, start_timeout_s=90)``:
  one KRaft node (broker + controller) on 127.0.0.1; ``port=0`` picks free ports, fixed for its life.
- ``start()`` / ``stop()`` / ``restart(hard=False)`` / ``kill()`` / ``close()``; ``alive``, ``pid``.
- ``bootstrap``, ``server_log`` (the coordinator's log), ``log_dir``, ``workdir``.
- ``create_topic(name, partitions)``, ``add_partitions(name, total)``, ``produce(topic, count)``,
  ``run_tool(main_class, args)`` for any other Kafka tool, ``java_command(main_class, args)`` to start one.
- Errors: :class:`KafkaUnavailable` (no java / mvn, jars not fetchable, broker not up in time, port taken),
  an infrastructure failure: the CLI exits 2 on it. ``env_problem()`` says beforehand why Kafka cannot run.

By hand: ``python -m conformance.kafka [--kafka-version V] [--topic NAME:PARTITIONS]`` starts one, prints
its bootstrap and log, and stops it on Ctrl-C.
"""

from conformance.kafka.broker import TEST_SETTINGS, KafkaBroker, env_problem
from conformance.kafka.jars import DEFAULT_VERSION, KafkaUnavailable, fetch

__all__ = ["DEFAULT_VERSION", "TEST_SETTINGS", "KafkaBroker", "KafkaUnavailable", "env_problem", "fetch"]
