"""Z3 proofs of the model: what is proved, for which sizes, under which assumptions, and why not vacuously.

Read in this order:

* ``core`` / ``solver`` -- what an obligation is, and the strict use of Z3 (every query has a
  timeout; ``unknown`` is a failure; witnesses show steps are not vacuous);
* ``assignors`` -- the four assignors' algorithms, by induction over their loops, for every number of
  members and partitions, cross-checked against ``model.assignors`` on concrete instances;
  ``certificate`` -- the stickiness oracle's optimum, certified (k reachable, k+1 not);
* ``protocol_model`` -- the classic protocol (``model.system``) as a symbolic transition system over
  uninterpreted sorts; ``protocol_invariants`` -- its invariants and their strengthening;
  ``protocol`` -- the induction, split into obligations;
* ``abstraction`` / ``replay`` -- the tie: concrete states read as symbolic valuations, every concrete
  step replayed through the symbolic relation, and the converse on small bounds;
* ``bmc`` -- bounded checks (static rejoin from any reachable Stable state; convergence by exhaustive
  exploration of the executable model); ``mutant_traces`` -- concrete counterexamples for the
  protocol mutants; ``findings`` -- where a catalogue predicate and the protocol part ways;
* ``obligations`` -- the registry and the assumptions.

``groupspec prove`` runs them and writes the report (``groupspec.proof_report``); docs/proofs.md
explains them for people.
"""
