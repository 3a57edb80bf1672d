"""The invariant catalogue (ids and statements) and its predicates.

``catalogue`` holds the ids every layer uses; ``assignment`` the predicates over one assignor
round; ``protocol`` the predicates over states of the transition system.
"""

from model.invariants.catalogue import CATALOGUE, Invariant, Kind

__all__ = ["CATALOGUE", "Invariant", "Kind"]
