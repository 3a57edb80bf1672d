"""Traces users captured, read and checked against the model's invariants.

A *trace set* is the files of one incident: a VerifiableConsumer JSON file per consumer, a broker's
``server.log``, the consumers' own logs, or groupspec's JSON Lines. Each file is read by the reader
of its format (:mod:`traces.readers`, picked by :mod:`traces.detect`), which turns it into trace
events (:mod:`model.events`) one line at a time; :mod:`traces.merge` interleaves the files in time
order, and :mod:`traces.checker` runs every invariant the events allow over the merged stream,
keeping state per member and partition only. :mod:`traces.analytics` measures the rebalances and
:mod:`traces.report` assembles the report data; ``groupspec check`` formats it for people.
"""
