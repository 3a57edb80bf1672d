"""groupspec's executable specification of Kafka consumer-group rebalancing.

Pure and deterministic: no I/O, no wall clock, no unseeded randomness. Everything else in
groupspec (the proofs, the trace checker, the conformance suite, the Spark jobs) is checked
against what this package says.
"""
