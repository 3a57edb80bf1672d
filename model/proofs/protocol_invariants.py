"""The protocol invariants over the symbolic state, and the strengthenings that make them inductive.

Each entry is a named predicate over one symbolic state (``model.proofs.protocol_model.State``),
with a sentence saying what it means. The catalogue properties are at the top; the others are the
*strengthening* invariants the induction needs ("no two owners" alone is not inductive: a consumer
that receives an assignment must be known not to collide with one still in flight, and so on).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import z3

from model.proofs.protocol_model import (
    C_COMPL,
    C_PREP,
    C_STABLE,
    COMPL,
    CR_NONE,
    CR_UNK,
    EMPTY,
    F_FAIL,
    F_JOIN,
    F_NONE,
    F_SUCC,
    F_SYNC,
    JR_MIR,
    JR_NONE,
    JR_OK,
    JR_UNK,
    NO_GEN,
    PREP,
    SR_ILL,
    SR_NONE,
    SR_OK,
    SR_UNK,
    STABLE,
    UNJOINED,
    State,
    Z,
    zombie,
)


@dataclass(frozen=True)
class Inv:
    name: str
    text: str
    build: Callable[[State], Z]


def _k(s: State, body: Callable[[Z], Z]) -> Z:
    return s.sorts.forall([s.sorts.K], body)


def _kp(s: State, body: Callable[[Z, Z], Z]) -> Z:
    return s.sorts.forall([s.sorts.K, s.sorts.P], body)


def _justified(s: State, gen: Z, p: Z, k: Z) -> Z:
    return z3.And(s.asgHas(gen, p), s.asgTo(gen, p) == k)


INVARIANTS: dict[str, Inv] = {i.name: i for i in (
    # ---- catalogue properties ----------------------------------------------------------------
    Inv("single-owner",
        "no two members the group still counts own a partition from the same generation's assignment",
        lambda s: s.sorts.forall([s.sorts.K, s.sorts.K, s.sorts.P], lambda k, j, p: z3.Implies(
            z3.And(k != j, s.alive(k), s.alive(j), s.owns(k, p), s.owns(j, p), s.og(k) == s.og(j)),
            z3.Or(zombie(s, k), zombie(s, j))))),
    Inv("eager-idle-owns-nothing",
        "an eager consumer that has run onJoinPrepare and not yet completed the rebalance owns nothing",
        lambda s: _kp(s, lambda k, p: z3.Implies(z3.And(s.alive(k), z3.Not(s.coop(k)), z3.Not(s.np(k))),
                                                 z3.Not(s.owns(k, p))))),
    Inv("rejected-generation-dropped",
        "a consumer never keeps a generation the coordinator has rejected for it (ILLEGAL_GENERATION): it "
        "resets, so its next onJoinPrepare reports what it owned lost and its next JoinGroup claims nothing "
        "with that generation (KAFKA-13419)",
        lambda s: _k(s, lambda k: z3.Implies(z3.And(s.alive(k), s.rej(k) != NO_GEN), s.cgen(k) != s.rej(k)))),
    Inv("commits-from-current-generation",
        "the coordinator accepts offset commits only from members of its current generation",
        lambda s: z3.Not(s.badCommit)),
    # ---- generations ---------------------------------------------------------------------------
    Inv("member-generation-at-most-group",
        "a consumer's generation is never ahead of the coordinator's",
        lambda s: _k(s, lambda k: s.cgen(k) <= s.ggen)),
    Inv("join-answer-generation",
        "a successful JoinGroup answer in flight carries a generation between the consumer's and the group's",
        lambda s: _k(s, lambda k: z3.Implies(s.jrsp(k) == JR_OK, z3.And(s.rGen(k) <= s.ggen,
                                                                        s.rGen(k) >= s.cgen(k))))),
    Inv("generations-well-formed",
        "generations are -1 (none) or more; the coordinator's is at least 0, at least 1 once a generation "
        "formed; answers carry a real generation; a consumer without member id has no generation; a member "
        "id is pending or a member, not both",
        lambda s: z3.And(s.ggen >= 0, z3.Implies(z3.Or(s.gst == COMPL, s.gst == STABLE), s.ggen >= 1),
                         _k(s, lambda k: z3.And(
                             s.cgen(k) >= NO_GEN, s.og(k) >= NO_GEN,
                             z3.Implies(s.jrsp(k) == JR_OK, s.rGen(k) >= 1),
                             z3.Implies(z3.Not(s.hasId(k)), s.cgen(k) == NO_GEN),
                             z3.Not(z3.And(s.pend(k), s.inG(k))))))),
    # ---- ownership is justified by the coordinator's assignment -----------------------------------
    Inv("owned-from-assignment",
        "a counted member owns a partition only if its ownership generation's assignment gave it that partition",
        lambda s: _kp(s, lambda k, p: z3.Implies(z3.And(s.alive(k), s.owns(k, p), z3.Not(zombie(s, k))),
                                                 _justified(s, s.og(k), p, k)))),
    Inv("succeeded-from-assignment",
        "a succeeded JoinGroup/SyncGroup chain of a counted member holds its generation's assignment",
        lambda s: _kp(s, lambda k, p: z3.Implies(
            z3.And(s.alive(k), s.fut(k) == F_SUCC, s.jres(k, p), z3.Not(zombie(s, k))),
            _justified(s, s.cgen(k), p, k)))),
    Inv("sync-answer-from-assignment",
        "a SyncGroup answer in flight to a counted member carries its generation's assignment",
        lambda s: _kp(s, lambda k, p: z3.Implies(
            z3.And(s.alive(k), s.srsp(k) == SR_OK, s.fut(k) == F_SYNC, z3.Not(zombie(s, k))),
            z3.And(s.rsGen(k) == s.cgen(k), z3.Implies(s.rasg(k, p), _justified(s, s.rsGen(k), p, k)))))),
    Inv("stable-assignment-recorded",
        "in Stable the stored assignment is the generation's assignment",
        lambda s: _kp(s, lambda k, p: z3.Implies(z3.And(s.gst == STABLE, s.inG(k), s.stored(k, p)),
                                                 _justified(s, s.ggen, p, k)))),
    Inv("no-assignment-before-sync",
        "before the leader's SyncGroup nothing of the generation is assigned",
        lambda s: s.sorts.forall([s.sorts.P], lambda p: z3.And(
            z3.Implies(s.gst == COMPL, z3.Not(s.asgHas(s.ggen, p))),
            z3.Not(s.asgHas(s.ggen + 1, p))))),
    Inv("sync-request-generation",
        "a SyncGroup in flight or parked carries the consumer's generation; an ILLEGAL_GENERATION answer "
        "is for a generation the group has left",
        lambda s: _k(s, lambda k: z3.Implies(
            z3.And(s.alive(k), s.fut(k) == F_SYNC, s.cgen(k) != NO_GEN),
            z3.And(z3.Implies(s.sreq(k), s.sqGen(k) == s.cgen(k)),
                   z3.Implies(s.awS(k), s.cgen(k) == s.ggen),
                   z3.Implies(s.srsp(k) == SR_ILL, s.cgen(k) < s.ggen))))),
    Inv("parked-sync-only-completing",
        "SyncGroups are parked only in CompletingRebalance",
        lambda s: _k(s, lambda k: z3.Implies(s.awS(k), s.gst == COMPL))),
    # ---- cooperative: a partition changes owner only after the old owner gave it up ----------------
    Inv("added-only-to-its-assignee",
        "a partition a generation's assignment added to a member (it did not claim it) is owned by no other "
        "counted member of that generation",
        lambda s: _kp(s, lambda k, p: z3.Implies(
            z3.And(s.alive(k), z3.Not(zombie(s, k)), s.owns(k, p), s.hasAdd(s.cgen(k), p)),
            s.asgTo(s.cgen(k), p) == k))),
    Inv("added-recorded-with-assignment",
        "what a generation added is part of its assignment",
        lambda s: s.sorts.forall([s.sorts.P], lambda p: z3.And(
            z3.Implies(s.hasAdd(s.ggen, p), z3.And(s.asgHas(s.ggen, p), s.gcoop)),
            z3.Not(s.hasAdd(s.ggen + 1, p))))),
    Inv("stable-claims-respect-adds",
        "in Stable no member's claim collides with a partition the generation added to another member",
        lambda s: _kp(s, lambda k, p: z3.Implies(
            z3.And(s.gst == STABLE, s.gcoop, s.inG(k), s.claim(k, p), s.hasAdd(s.ggen, p)),
            s.asgTo(s.ggen, p) == k))),
    Inv("claims-are-owned-during-the-chain",
        "while a counted member's JoinGroup/SyncGroup chain runs, its claims are exactly what it owns",
        lambda s: _kp(s, lambda k, p: z3.Implies(
            z3.And(s.alive(k), z3.Or(s.coop(k), s.cs(k))),
            z3.And(z3.Implies(z3.And(s.inG(k), z3.Or(s.fut(k) == F_SYNC, s.fut(k) == F_SUCC, s.awJ(k),
                                                      z3.And(s.fut(k) == F_JOIN, s.jrsp(k) == JR_OK))),
                              s.claim(k, p) == s.owns(k, p)),
                   z3.Implies(s.jreq(k), s.rqClaim(k, p) == s.owns(k, p)))))),
    Inv("cooperative-consumers-run-cooperative-sticky",
        "a cooperative consumer's assignors are all cooperative-sticky (the only cooperative one)",
        lambda s: _k(s, lambda k: z3.Implies(s.coop(k), s.cs(k)))),
    Inv("completing-claims-are-owned",
        "while a generation completes, what its counted members claim is what they own",
        lambda s: _kp(s, lambda k, p: z3.Implies(
            z3.And(s.alive(k), z3.Or(s.coop(k), s.cs(k)), s.inG(k), z3.Not(zombie(s, k)), s.cgen(k) == s.ggen,
                   s.gst == COMPL),
            s.claim(k, p) == s.owns(k, p)))),
    Inv("completing-members-are-syncing",
        "while a generation completes, each of its counted members waits for its SyncGroup answer, and no "
        "SyncGroup answer of that generation exists yet",
        lambda s: _k(s, lambda k: z3.Implies(
            z3.And(s.alive(k), z3.Not(zombie(s, k)), s.cgen(k) == s.ggen, s.gst == COMPL),
            z3.And(s.fut(k) == F_SYNC, s.srsp(k) == SR_NONE)))),
    Inv("answered-claims-respect-adds",
        "a member answered into a generation claimed nothing that generation added to another member",
        lambda s: _kp(s, lambda k, p: z3.Implies(
            z3.And(s.alive(k), s.inG(k), s.fut(k) == F_JOIN, s.jrsp(k) == JR_OK, s.claim(k, p),
                   s.hasAdd(s.rGen(k), p)),
            s.asgTo(s.rGen(k), p) == k))),
    Inv("chain-after-prepare",
        "a consumer in a JoinGroup/SyncGroup chain that has not reset has run onJoinPrepare",
        lambda s: _k(s, lambda k: z3.Implies(
            z3.And(s.alive(k), z3.Or(s.fut(k) == F_JOIN, s.fut(k) == F_SYNC, s.fut(k) == F_SUCC),
                   s.cgen(k) != NO_GEN, s.hasId(k)),
            z3.Not(s.np(k))))),
    Inv("joining-has-prepared",
        "a consumer waiting for its JoinGroup answer in PREPARING_REBALANCE has run onJoinPrepare",
        lambda s: _k(s, lambda k: z3.Implies(z3.And(s.alive(k), s.fut(k) == F_JOIN, s.cst(k) == C_PREP),
                                             z3.Not(s.np(k))))),
    Inv("cooperative-group-members-support-it",
        "while cooperative-sticky is the generation's protocol every member supports it",
        lambda s: _k(s, lambda k: z3.Implies(
            z3.And(s.gcoop, z3.Or(s.gst == COMPL, s.gst == STABLE), s.inG(k)), s.cs(k)))),
    # ---- a reset or new consumer owns nothing by the time it joins ----------------------------------
    Inv("reset-owner-will-lose",
        "a consumer that reset its generation or member id and still owns partitions has onJoinPrepare "
        "pending, which declares them lost, and is UNJOINED",
        lambda s: _kp(s, lambda k, p: z3.Implies(
            z3.And(s.alive(k), s.owns(k, p), z3.Or(s.cgen(k) == NO_GEN, z3.Not(s.hasId(k)))),
            z3.And(s.np(k), s.cst(k) == UNJOINED)))),
    Inv("anonymous-join-owns-nothing",
        "a consumer whose JoinGroup carries no member id, or which is a pending member, owns nothing",
        lambda s: _kp(s, lambda k, p: z3.Implies(
            z3.And(s.alive(k), z3.Or(z3.And(s.jreq(k), z3.Not(s.rqHasId(k))), s.pend(k), s.jrsp(k) == JR_MIR)),
            z3.Not(s.owns(k, p))))),
    Inv("joining-consumer-state",
        "a consumer with a JoinGroup in flight, parked or answered is PREPARING_REBALANCE or reset to "
        "UNJOINED, and a consumer with a SyncGroup chain is COMPLETING_REBALANCE or reset",
        lambda s: _k(s, lambda k: z3.And(
            z3.Implies(z3.And(s.alive(k), s.cst(k) == UNJOINED), s.cgen(k) == NO_GEN),
            z3.Implies(z3.And(s.alive(k), z3.Or(s.cst(k) == C_COMPL, s.cst(k) == C_STABLE)), s.hasId(k)),
            z3.Implies(z3.And(s.alive(k), s.fut(k) == F_JOIN), z3.Or(s.cst(k) == C_PREP, s.cst(k) == UNJOINED)),
            z3.Implies(z3.And(s.alive(k), s.fut(k) == F_SYNC), z3.Or(s.cst(k) == C_COMPL, s.cst(k) == UNJOINED)),
            z3.Implies(z3.And(s.alive(k), s.fut(k) == F_SUCC), z3.Or(s.cst(k) == C_STABLE, s.cst(k) == UNJOINED))))),
    Inv("pending-member-is-anonymous-client",
        "a KIP-394 pending member is dynamic, and its consumer has no generation yet and is not past its "
        "JoinGroup",
        lambda s: _k(s, lambda k: z3.Implies(s.pend(k), z3.And(
            z3.Not(s.static(k)), z3.Not(s.awJ(k)), s.jrsp(k) != JR_OK,
            z3.Implies(s.alive(k), z3.And(s.cgen(k) == NO_GEN, z3.Or(s.cst(k) == UNJOINED, s.cst(k) == C_PREP),
                                          z3.Or(s.fut(k) == F_JOIN, s.fut(k) == F_FAIL, s.fut(k) == F_NONE))))))),
    Inv("parked-join-is-a-members",
        "a parked JoinGroup belongs to a member; UNKNOWN_MEMBER_ID answers go to consumers that hold no "
        "entry; an Empty group has no members",
        lambda s: _k(s, lambda k: z3.And(
            z3.Implies(s.awJ(k), s.inG(k)), z3.Implies(s.awS(k), s.inG(k)),
            z3.Implies(z3.And(s.alive(k), s.jrsp(k) == JR_UNK), z3.And(z3.Not(s.inG(k)), z3.Not(s.pend(k)))),
            z3.Implies(z3.And(s.alive(k), s.srsp(k) == SR_UNK), z3.And(z3.Not(s.inG(k)), z3.Not(s.pend(k)))),
            z3.Implies(z3.And(s.alive(k), s.crsp(k) == CR_UNK), z3.Not(s.inG(k))),
            z3.Implies(s.gst == EMPTY, z3.Not(s.inG(k)))))),
    Inv("anonymous-join-from-anonymous-client",
        "a JoinGroup without member id comes from a consumer that has none and claims nothing; a consumer "
        "that lost its member id after sending its JoinGroup with it will be refused",
        lambda s: _k(s, lambda k: z3.And(
            z3.Implies(z3.And(s.alive(k), s.fut(k) == F_JOIN, z3.Not(s.rqHasId(k)),
                              z3.Or(s.jreq(k), s.awJ(k), s.jrsp(k) == JR_OK)), z3.Not(s.hasId(k))),
            z3.Implies(z3.And(s.jreq(k), z3.Not(s.rqHasId(k)), z3.Or(s.coop(k), s.cs(k))),
                       s.sorts.forall([s.sorts.P], lambda p: z3.Not(s.rqClaim(k, p)))),
            z3.Implies(z3.And(s.alive(k), z3.Not(s.hasId(k)), s.rqHasId(k), s.fut(k) == F_JOIN),
                       s.cst(k) == UNJOINED)))),
    Inv("entry-follows-member-id",
        "a dynamic consumer without a member id holds no member entry unless its LeaveGroup is on the way, "
        "and is a pending member only while MEMBER_ID_REQUIRED is on its way to it; a dynamic JoinGroup "
        "without member id reaches the coordinator only after that entry is gone",
        lambda s: _k(s, lambda k: z3.And(
            z3.Implies(z3.And(s.alive(k), z3.Not(s.static(k)), z3.Not(s.hasId(k))),
                       z3.And(z3.Or(z3.Not(s.inG(k)), s.lreq(k)), z3.Or(z3.Not(s.pend(k)), s.jrsp(k) == JR_MIR))),
            z3.Implies(z3.And(z3.Not(s.static(k)), s.jreq(k), z3.Not(s.rqHasId(k))),
                       z3.And(z3.Not(s.pend(k)), z3.Or(z3.Not(s.inG(k)), z3.And(s.lreq(k), z3.Not(s.jFirst(k))))))))),
    Inv("one-entry-per-instance",
        "at most one member entry holds a group.instance.id",
        lambda s: s.sorts.forall([s.sorts.K, s.sorts.K], lambda x, y: z3.Implies(
            z3.And(s.inG(x), s.inG(y), s.static(x), s.static(y), s.inst(x) == s.inst(y)), x == y))),
    Inv("rejected-generation-in-the-past",
        "a rejected generation is older than the group's, and older than any JoinGroup answer in flight",
        lambda s: _k(s, lambda k: z3.And(s.rej(k) < s.ggen,
                                         z3.Implies(s.jrsp(k) == JR_OK, s.rGen(k) > s.rej(k))))),
    Inv("ownership-generation-at-most-group",
        "what a consumer owns comes from a generation no later than the group's, and a JoinGroup answer "
        "never takes a consumer back before it",
        lambda s: _k(s, lambda k: z3.And(s.og(k) <= s.ggen,
                                         z3.Implies(s.jrsp(k) == JR_OK, s.rGen(k) >= s.og(k))))),
    Inv("unused-incarnations-idle",
        "an incarnation that has not started holds no entry and has nothing in flight",
        lambda s: _k(s, lambda k: z3.Implies(z3.Not(s.used(k)), z3.And(
            z3.Not(s.inG(k)), z3.Not(s.pend(k)), z3.Not(s.alive(k)), z3.Not(s.jreq(k)), z3.Not(s.sreq(k)),
            z3.Not(s.lreq(k)), z3.Not(s.creq(k)), s.crsp(k) == CR_NONE,
            s.jrsp(k) == JR_NONE, s.srsp(k) == SR_NONE, z3.Not(s.awJ(k)), z3.Not(s.awS(k)))))),
    Inv("alive-were-started",
        "a live incarnation has started",
        lambda s: _k(s, lambda k: z3.Implies(s.alive(k), s.used(k)))),
    Inv("futures-match-messages",
        "no JoinGroup/SyncGroup chain message or answer exists without the future that waits for it",
        lambda s: _k(s, lambda k: z3.Implies(s.alive(k), z3.And(
            z3.Implies(z3.Or(s.jreq(k), s.awJ(k), s.jrsp(k) != JR_NONE), s.fut(k) == F_JOIN),
            z3.Implies(z3.Or(s.sreq(k), s.awS(k), s.srsp(k) != SR_NONE), s.fut(k) == F_SYNC))))),
    Inv("commit-before-its-join",
        "an OffsetCommit of a live consumer, or its answer, is in flight only while no JoinGroup -> SyncGroup "
        "chain of it is under way (onJoinPrepare waits for its auto-commit before the JoinGroup; close waits "
        "for its commit), and never from a KIP-394 pending member",
        lambda s: _k(s, lambda k: z3.Implies(
            z3.And(s.alive(k), z3.Or(s.creq(k), s.crsp(k) != CR_NONE)),
            z3.And(z3.Or(s.fut(k) == F_NONE, s.fut(k) == F_SUCC), z3.Not(s.pend(k)))))),
    Inv("one-chain-message",
        "a consumer's JoinGroup is in flight, parked or answered -- one of these at a time -- and likewise "
        "its SyncGroup",
        lambda s: _k(s, lambda k: z3.And(
            z3.Not(z3.And(s.jreq(k), s.awJ(k))), z3.Not(z3.And(s.jreq(k), s.jrsp(k) != JR_NONE)),
            z3.Not(z3.And(s.awJ(k), s.jrsp(k) != JR_NONE)),
            z3.Not(z3.And(s.sreq(k), s.awS(k))), z3.Not(z3.And(s.sreq(k), s.srsp(k) != SR_NONE)),
            z3.Not(z3.And(s.awS(k), s.srsp(k) != SR_NONE))))),
)}

_ = (EMPTY, PREP, F_FAIL, F_NONE, JR_NONE, SR_NONE)
