"""The registry of proof obligations, the assumptions they rest on, and the mutants they must refute.

Every obligation (``model.proofs.core.Obligation``) lives next to the function that discharges it,
in the module of its subject: ``assignors`` (the four assignors' algorithms), ``certificate`` (the
stickiness oracle), ``protocol`` (the classic protocol's safety invariants, by induction over the
symbolic transition system), ``delivery`` (what consumers read and commit: no-gap,
committed-not-ahead, monotonic-consumption and commit-owned-only for positions, by induction per
partition, with its own tie to the executable model), ``bmc`` (bounded checks: convergence, static
rejoin, timeouts) and ``replay`` (the tie between the symbolic model and the executable one).
This module only collects them, in report order, and holds the assumptions, one line each.

Mutants (``model.mutants``): each obligation names the mutants it is run on. A mutant is *refuted*
when at least one of them fails on it with a concrete counterexample replayed through the
executable model; an obligation whose mutants all survive it proves nothing and is reported as a
failure.
"""

from __future__ import annotations

from collections.abc import Iterable

from model.mutants import MUTANTS
from model.proofs.core import Assumption, Obligation

ASSUMPTIONS: dict[str, Assumption] = {
    a.id: a
    for a in (
        Assumption("fifo-per-connection",
                   "messages between a consumer and the coordinator are delivered reliably and in order per "
                   "connection; a crashed incarnation's queued requests and responses are dropped "
                   "(model.network). The broker reads one request of a connection at a time (nothing behind a "
                   "parked JoinGroup / SyncGroup is read until it is answered); the proofs do not need that: "
                   "their relation delivers a connection's requests in order without it, which allows more"),
        Assumption("one-coordinator",
                   "the group has one coordinator that never moves, reloads or fails (no Dead state, no "
                   "NOT_COORDINATOR); every append to the group's log succeeds"),
        Assumption("timers-any-time",
                   "the symbolic model lets every timer (session, rebalance, pending-sync, poll) fire at any "
                   "moment, so the unbounded proofs hold for every choice of timeouts and clock"),
        Assumption("zombie-stops",
                   "a member the group has let go (member id removed, or its generation reset) stops consuming "
                   "within its session timeout and reports its partitions lost; its overlap with the next "
                   "owner is zombie-overlap, reported apart, not a single-owner violation"),
        Assumption("leader-runs-model-assignor",
                   "the leader runs one of the model's four assignors on the member list its JoinGroup answer "
                   "carries; the protocol proofs use only the assignor facts proved in this report "
                   "(one owner per partition, only members, cooperative-sticky's withholding)"),
        Assumption("claims-are-sets",
                   "a member's owned-partition claims are a set: the executable assignors drop duplicates "
                   "(Kafka would find the member itself as a same-generation second claimer)"),
        Assumption("equal-subscriptions",
                   "every member subscribes to the same topics (the case Kafka's quota and roundrobin "
                   "balance promises are made for)"),
        Assumption("no-racks",
                   "no consumer and no partition has a rack (KIP-881 rack-aware assignment is not covered)"),
        Assumption("no-commits",
                   "the protocol proofs' consumers carry no record state (model.classic.member without a delivery "
                   "configuration: their only OffsetCommits are the auto-commits before a rebalance and on close, "
                   "with a stand-in offset), so protocol-commit-fencing is proved for what the coordinator "
                   "accepts, whatever the offsets; positions, polls, processing, OffsetFetch and the offsets "
                   "committed are modelled (model.consumption) and proved per partition by the delivery-* "
                   "obligations (model.proofs.delivery)"),
        Assumption("delivery-one-log",
                   "each partition is one log that starts at offset 0 and only grows: one leader, no retention, "
                   "deletion, compaction or truncation (no unclean leader election), no transactions (no control "
                   "records, no pending transactional offsets), no seek() or assign(), committed offsets never "
                   "expire or are deleted; an OffsetFetch is answered from the offsets stored when it is handled"),
        Assumption("delivery-settings",
                   "every consumer of the group has the same delivery settings (enable.auto.commit, commit "
                   "policy, auto.offset.reset, max.poll.records, processing); the at-least-once proofs leave out "
                   "enable.auto.commit with async processing, where Kafka documents that records can be lost "
                   "(shown reachable in delivery-committed-not-ahead)"),
        Assumption("delivery-ownership-free",
                   "the delivery proofs take ownership as the protocol gives it, at any moment: a partition may be "
                   "assigned, revoked or lost and a consumer may stop at any time, and the coordinator may store "
                   "any in-flight commit, in any order, whatever its generation; they do not rely on single-owner "
                   "or on generation fencing (protocol-commit-fencing proves that separately)"),
        Assumption("static-restart-in-time",
                   "a restarting static member rejoins before its session timeout expires, and nothing else "
                   "happens to the group meanwhile"),
        Assumption("faults-stop",
                   "after the last fault (start, crash, restart, leave, stall, subscription or partition "
                   "change) every member keeps polling and heartbeating"),
    )
}


#: What each obligation is about: the symbolic encoding, the executable model (at stated bounds), or both --
#: and, for an obligation about the encoding, what ties it to the executable model and how far. The report
#: shows this in every row; an obligation with no tie to the executable model says so.
_TIED_PROTOCOL = ("encoding (unbounded); tied to the executable model exhaustively at model-explore-tie's bounds, "
                  "both directions (every model step is an encoding step; every encoding step outside the stated "
                  "over-approximations is a model step, at the fresh and stall cases' states), on model-explore-invariants' "
                  "bounds for its catalogue form, and on sampled runs by replay-tie")
_TIED_DELIVERY = ("encoding (unbounded); tied to the executable model exhaustively at model-explore-delivery's bounds "
                  "(one direction: every model step is a sequence of delivery steps; 1-2 consumers, two partitions, "
                  "auto-commit/latest and commitSync/earliest; two more policies in --deep) and on the 12 seeded runs of delivery-tie (every "
                  "commit policy, async processing, coordinator moves)")
ABOUT: dict[str, str] = {
    **{i: "both: the Z3 encoding of the assignor's loop, and the executable assignor (model.assignors) run on "
          "concrete instances and checked to be a model of it"
       for i in ("range-balance", "range-exact-cover", "roundrobin-balance", "sticky-claims-single-owner",
                 "sticky-quota", "coop-withhold")},
    "stickiness-optimum": "the executable stickiness oracle (model.stickiness) against Z3, on generated rounds",
    **{i: _TIED_PROTOCOL for i in ("protocol-single-owner", "protocol-revoke-before-assign",
                                   "protocol-generation-monotonic", "protocol-eager-revoke-all",
                                   "protocol-commit-fencing", "protocol-structure-chains",
                                   "protocol-structure-membership")},
    "protocol-steps-reachable": "encoding only (non-vacuity of its micro-steps); not tied to the executable model",
    "static-rejoin-fast-path": "encoding only (8 micro-steps from any invariant state); not tied to the executable "
                               "model beyond the protocol tie",
    **{i: _TIED_DELIVERY for i in ("delivery-no-gap", "delivery-committed-not-ahead", "delivery-commit-owned-only",
                                   "delivery-monotonic-consumption")},
    "delivery-steps-reachable": "encoding only (non-vacuity of its steps); not tied to the executable model",
    "delivery-tie": "both, sampled: 12 seeded runs of the executable model replayed through the delivery encoding",
    "converges-after-change": "the executable model (model.system), every interleaving at the stated bounds",
    "replay-tie": "both, sampled: seeded random runs of the executable model replayed through the encoding",
    "replay-converse": "both, sampled: symbolic successors of sampled concrete states realised by the executable model",
    "model-explore-invariants": "the executable model (model.system), every reachable state at the stated bounds",
    "model-explore-tie": "both, exhaustive at the stated bounds: every reachable transition of the executable model "
                         "checked against the encoding's relation, and at every explored state of the fresh and stall cases "
                         "the converse (every micro-step the encoding allows, outside the stated over-approximations, "
                         "is taken by the model)",
    "model-explore-delivery": "both, exhaustive at the stated bounds: every reachable transition of the executable "
                              "model with records checked against the delivery encoding",
    **{i: "the executable model's transition functions (model.classic.coordinator / member) against Kafka's "
          "answers, at every distinct state seeded runs reach (model.proofs.contracts); not the encoding"
       for i in ("model-coordinator-contracts", "model-member-contracts")},
}


def about(obligation_id: str) -> str:
    return ABOUT.get(obligation_id, "not stated: not tied to the executable model")


def _collect() -> tuple[Obligation, ...]:
    from model.proofs import assignors, bmc, certificate, contracts, delivery, explore, protocol, replay

    return (*assignors.OBLIGATIONS, certificate.stickiness_optimum, *protocol.OBLIGATIONS, *delivery.OBLIGATIONS,
            *bmc.OBLIGATIONS, *replay.OBLIGATIONS, *explore.OBLIGATIONS, *contracts.OBLIGATIONS)


OBLIGATIONS: tuple[Obligation, ...] = _collect()
BY_ID: dict[str, Obligation] = {ob.id: ob for ob in OBLIGATIONS}


def get(obligation_id: str) -> Obligation:
    try:
        return BY_ID[obligation_id]
    except KeyError:
        raise KeyError(f"unknown obligation {obligation_id!r}; known: {', '.join(BY_ID)}") from None


def select(only: Iterable[str]) -> tuple[list[Obligation], list[str]]:
    """The obligations and mutants named by ``only`` (obligation ids, invariant ids or mutant names).

    An invariant id selects every obligation about it; a mutant name selects that mutant and the
    obligations run on it. Empty ``only`` selects everything. ``KeyError`` names what is unknown.
    """
    wanted = [w for w in only if w]
    if not wanted:
        return list(OBLIGATIONS), sorted(MUTANTS)
    obligations: list[Obligation] = []
    mutants: list[str] = []
    unknown: list[str] = []
    for w in wanted:
        hits = [ob for ob in OBLIGATIONS if w in (ob.id, ob.invariant)]
        if w in MUTANTS:
            mutants.append(w)
            hits += [ob for ob in OBLIGATIONS if w in ob.mutants]
        if not hits and w not in MUTANTS:
            unknown.append(w)
        obligations += [ob for ob in hits if ob not in obligations]
    if unknown:
        known = sorted({*BY_ID, *(ob.invariant for ob in OBLIGATIONS), *MUTANTS})
        raise KeyError(f"unknown obligation, invariant or mutant: {', '.join(unknown)}; known: {', '.join(known)}")
    if not mutants:  # an obligation selected alone still runs the mutants it must refute
        mutants = sorted({m for ob in obligations for m in ob.mutants})
    return [ob for ob in OBLIGATIONS if ob in obligations], mutants


def check_registry() -> list[str]:
    """Problems with the registry itself: unknown assumption ids or mutants, duplicate ids."""
    problems: list[str] = []
    if len(BY_ID) != len(OBLIGATIONS):
        problems.append("duplicate obligation ids")
    for ob in OBLIGATIONS:
        problems += [f"{ob.id}: unknown assumption {a}" for a in ob.assumptions if a not in ASSUMPTIONS]
        problems += [f"{ob.id}: unknown mutant {m}" for m in ob.mutants if m not in MUTANTS]
        if ob.id not in ABOUT:
            problems.append(f"{ob.id}: the report cannot say what it is about (add it to ABOUT)")
    return problems
