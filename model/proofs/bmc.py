"""Bounded checks: what induction does not cover (static rejoin, convergence, behaviour with timeouts).

Two kinds of bounded check, each saying exactly what is bounded:

* **static-rejoin** (symbolic, bounded in steps only). From *any* state satisfying the protocol's
  inductive invariant -- so from every reachable state, for any number of consumers and
  partitions -- in which the group is Stable and a static member's process restarts, the fixed
  sequence of micro-steps of KIP-345's fast path (start, JoinGroup with no member id, the
  coordinator replaces the entry, the JoinGroup answer, SyncGroup, its answer, the next poll) is
  taken with no other step interleaved (assumption ``static-restart-in-time``). Z3 shows that the
  coordinator answers at once with the current generation and stays Stable, and that the new
  incarnation ends up owning exactly what the old one was assigned. The bound is the 8 micro-steps.
* **converges** (explicit, bounded in members, partitions and steps). ``model.system`` itself is
  explored exhaustively: from every settled group of M consumers over P partitions (each assignor,
  eager and cooperative), after one membership change (a consumer leaves, crashes or joins), every
  interleaving of deliveries, polls, heartbeats and timers with no further fault is enumerated, and
  each must reach a settled state (``model.invariants.protocol.settled``) within the protocol's bound
  of rebalances (eager 1, cooperative 2) and the step bound. This is brute force on purpose: it runs
  the executable model, not an abstraction of it; the state space is kept small by exploring only
  the instants at which something happens.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import z3

from model import events as ev
from model import system as sy
from model.classic import coordinator as co
from model.invariants import protocol as pinv
from model.proofs import protocol_model as pm
from model.proofs.core import Outcome, RunConfig, obligation, outcome
from model.proofs.protocol_invariants import INVARIANTS
from model.proofs.solver import Prover

# -- static rejoin ---------------------------------------------------------------------------------

STATIC_SEQUENCE = ("crash", "start", "poll-send-join", "coordinator-static-replace", "receive-join-ok",
                   "coordinator-sync", "receive-sync-ok", "poll-complete-join")


@obligation(
    id="static-rejoin-fast-path", invariant="static-rejoin", scope="bounded",
    statement="a static member restarting while the group is Stable gets its assignment back with no "
              "rebalance: from any reachable Stable state (any number of consumers and partitions), after "
              "the old incarnation dies and the new one sends JoinGroup with no member id and the same "
              "group.instance.id, the coordinator answers at once with the current generation and stays "
              "Stable, and the new incarnation's SyncGroup returns, and it then owns, exactly the old "
              "incarnation's assignment",
    source="KIP-345; GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin (Stable, protocol "
           "unchanged); ClassicGroup.replaceStaticMember",
    assumptions=("static-restart-in-time", "fifo-per-connection", "one-coordinator"),
    bounds={"micro_steps": len(STATIC_SEQUENCE)},
    mutants=("static-rejoin-rebalances",),
)
def static_rejoin_fast_path(cfg: RunConfig) -> Outcome:
    prover = Prover(cfg.timeout_ms)
    u = pm.Sorts.unbounded("sr")
    states = [pm.State(u, f"_sr{i}") for i in range(len(STATIC_SEQUENCE) + 1)]
    old, k, c = z3.Const("old", u.K), z3.Const("new", u.K), z3.Const("c", u.K)
    s0 = states[0]
    premises = [inv.build(s0) for inv in INVARIANTS.values()]
    premises += [s0.gst == pm.STABLE, s0.inG(old), s0.static(old), s0.alive(old), k != old,
                 z3.Not(s0.used(k)), s0.static(k), s0.inst(k) == s0.inst(old), s0.cs(k) == s0.cs(old),
                 s0.coop(k) == s0.coop(old), s0.ac(k) == s0.ac(old)]
    steps = []
    for i, name in enumerate(STATIC_SEQUENCE):
        who, other = (old, c) if name == "crash" else (k, old if name == "coordinator-static-replace" else c)
        steps.append(pm.action_by_name(name).relation(states[i], states[i + 1], who, other, None, cfg.mutants))
    replace_at = STATIC_SEQUENCE.index("coordinator-static-replace") + 1
    same_protocol = z3.Bool(f"same_protocol{states[replace_at].tag}")  # same assignors: the same selection
    refuse = z3.Bool(f"refuse{states[-1].tag}")  # the assignment matches its subscription
    s_rep, s_end = states[replace_at], states[-1]
    no_rebalance = z3.And(s_rep.gst == pm.STABLE, s_rep.ggen == s0.ggen, s_rep.jrsp(k) == pm.JR_OK,
                          s_rep.rGen(k) == s0.ggen)
    prover.valid("the coordinator replaces the static member's entry without a rebalance: Stable, same "
                 "generation, the new incarnation answered at once",
                 no_rebalance, [*premises, same_protocol, *steps[:replace_at]])
    back = z3.And(s_end.gst == pm.STABLE, s_end.ggen == s0.ggen,
                  u.forall([u.P], lambda p: s_end.owns(k, p) == s0.stored(old, p)))
    prover.valid("after its SyncGroup the new incarnation owns exactly the old incarnation's assignment",
                 back, [*premises, same_protocol, z3.Not(refuse), *steps])
    prover.witness("non-vacuous: the whole sequence is possible from some Stable state in which the static "
                   "member owns partitions",
                   [*premises, same_protocol, z3.Not(refuse), *steps,
                    u.exists([u.P], lambda p: s0.stored(old, p))])
    if cfg.mutants and prover.status.value != "proved":
        from model.proofs import mutant_traces

        found = mutant_traces.refute(cfg.mutants, ["static-rejoin"], cfg)
        prover.queries.extend(found.queries)
        return outcome(prover, found.summary, counterexample=found.counterexample, violated=found.violated,
                       facts=found.facts)
    return outcome(prover, "a static member restarting in Stable gets its assignment back with no rebalance")


# -- convergence, explicit ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    members: int
    partitions: int
    assignors: tuple[str, ...]
    change: str  # "leave" | "crash" | "join"


def converge_config() -> sy.SystemConfig:
    return sy.SystemConfig(coordinator=co.CoordinatorConfig(initial_rebalance_delay_ms=0),
                           session_timeout_ms=6000, rebalance_timeout_ms=4000, heartbeat_interval_ms=3000,
                           max_poll_interval_ms=300000)


def _settle(state: sy.SystemState, config: sy.SystemConfig, limit: int = 5000) -> sy.SystemState | None:
    """Run one deterministic interleaving (first enabled action) until the group is settled."""
    for _ in range(limit):
        if pinv.settled(state):
            return state
        acts = sy.enabled(state)
        if not acts:
            return None
        result = sy.step(state, acts[0], config)
        if result is None:
            return None
        state = result[0]
    return None


def _start(case: Case, config: sy.SystemConfig) -> sy.SystemState | None:
    state = sy.initial_state(config, [("t", case.partitions)])
    for i in range(case.members):
        result = sy.step(state, sy.MemberStarts(f"m{i}", ("t",), case.assignors), config)
        if result is None:
            return None
        state = result[0]
    return _settle(state, config)


def _change(state: sy.SystemState, case: Case, config: sy.SystemConfig) -> sy.SystemState | None:
    action: sy.Action
    if case.change == "leave":
        action = sy.MemberLeaves("m0")
    elif case.change == "crash":
        action = sy.MemberCrashes("m0")
    else:
        action = sy.MemberStarts(f"m{case.members}", ("t",), case.assignors)
    result = sy.step(state, action, config)
    return None if result is None else result[0]


def explore(case: Case, config: sy.SystemConfig, max_states: int, max_depth: int) -> dict[str, Any]:
    """Every interleaving after the change: reachable states, worst rebalance count, violations."""
    base = _start(case, config)
    if base is None:
        return {"error": "the group did not settle before the change"}
    start = _change(base, case, config)
    if start is None:
        return {"error": "the change could not be applied"}
    coop = any(pm_coop(a) for a in case.assignors) and len(case.assignors) == 1 and case.assignors[0] == \
        "cooperative-sticky"
    bound = 2 if coop else 1
    seen: dict[sy.SystemState, int] = {start: 0}
    queue: deque[tuple[sy.SystemState, int, int]] = deque([(start, 0, 0)])
    worst = 0
    settled_states = 0
    problems: list[str] = []
    truncated = False
    while queue:
        state, depth, rebalances = queue.popleft()
        if pinv.settled(state):
            settled_states += 1
            worst = max(worst, rebalances)
            if rebalances > bound:
                problems.append(f"settled after {rebalances} rebalances (bound {bound})")
            continue
        if rebalances > bound:
            problems.append(f"{rebalances} rebalances without settling (bound {bound})")
            continue
        if depth >= max_depth:
            problems.append(f"not settled within {max_depth} steps")
            continue
        acts = sy.enabled(state)
        if not acts:
            problems.append("stuck: nothing enabled and not settled")
            continue
        for a in acts:
            result = sy.step(state, a, config)
            if result is None:
                continue
            nxt, events = result
            r = rebalances + sum(1 for e in events if e["name"] == ev.COORDINATOR_REBALANCE)
            if seen.get(nxt, 10**9) <= r:
                continue
            if len(seen) >= max_states:
                truncated = True
                continue
            seen[nxt] = r
            queue.append((nxt, depth + 1, r))
        if problems and len(problems) > 5:
            break
    return {"states": len(seen), "settled_states": settled_states, "worst_rebalances": worst, "bound": bound,
            "problems": problems[:5], "truncated": truncated}


def pm_coop(assignor: str) -> bool:
    return assignor == "cooperative-sticky"


def cases(members: int, partitions: int) -> Iterable[Case]:
    for m in range(2, members + 1):
        for assignors in (("range",), ("roundrobin",), ("sticky",), ("cooperative-sticky",)):
            for change in ("leave", "crash", "join"):
                yield Case(m, partitions, assignors, change)


def _deepen_converges(b: Any) -> dict[str, int]:
    # a cooperative double rebalance of one more consumer takes markedly more steps in its slowest interleaving
    return {"members": b["members"] + 1, "partitions": b["partitions"] + 1, "max_steps": b["max_steps"] * 2,
            "max_states": b["max_states"] * 4}


@obligation(
    id="converges-after-change", invariant="converges", scope="bounded",
    statement="once membership stops changing the group settles within the protocol's bound (eager 1, "
              "cooperative 2 rebalances): every interleaving of the executable model after one leave, crash "
              "or join, for every assignor, up to the bounds on consumers, partitions and steps",
    source="model.system; model.invariants.protocol.settled / rebalance_bound",
    assumptions=("faults-stop", "fifo-per-connection", "one-coordinator"),
    bounds={"members": 4, "partitions": 4, "max_steps": 120, "max_states": 40000},
    deepen=_deepen_converges,
)
def converges_after_change(cfg: RunConfig) -> Outcome:
    bounds = dict(converges_after_change.bounds)
    bounds.update(cfg.bounds or {})
    prover = Prover(cfg.timeout_ms)
    config = converge_config()
    total_states = 0
    worst: dict[str, int] = {}
    for case in cases(bounds["members"], bounds["partitions"]):
        res = explore(case, config, bounds["max_states"], bounds["max_steps"])
        label = f"{case.members} consumers x {case.partitions} partitions, {case.assignors[0]}, {case.change}"
        if "error" in res:
            prover.record(label, False, res["error"])
            continue
        total_states += res["states"]
        key = case.assignors[0]
        worst[key] = max(worst.get(key, 0), res["worst_rebalances"])
        ok = not res["problems"] and not res["truncated"]
        note = "; ".join(res["problems"]) or ("state limit reached" if res["truncated"] else
                                             f"{res['states']} states, worst {res['worst_rebalances']} rebalance(s)")
        prover.record(f"{label}: every interleaving settles within {res['bound']} rebalance(s)", ok, note)
    return outcome(prover, f"{total_states} states explored; every interleaving settles within the bound",
                   bounds=bounds, facts={"states": total_states, "worst_rebalances_per_assignor": worst})


OBLIGATIONS = (static_rejoin_fast_path, converges_after_change)
