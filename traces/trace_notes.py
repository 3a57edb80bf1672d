"""The ``unchecked`` notes that depend on what the whole trace shows, worded once.

The streaming checker (:meth:`traces.checker.Checker.unchecked`) calls these with its own counters;
the Spark job (``spark_analysis.notes``) calls them with the same counts taken as aggregates over a
corpus, so both say the same words by construction. Each function takes counts, never the checker's
state: what a count means is said in its docstring, and is what the job counts.
"""

from __future__ import annotations

from typing import Any


def _note(invariant: str, reason: str, partial: bool = False) -> dict[str, Any]:
    return {"invariant": invariant, "reason": reason, "partial": partial}


def ownership_notes(ownership: int) -> list[dict[str, Any]]:
    """``ownership``: ownership callbacks (``partitions_assigned`` / ``_revoked`` / ``_lost`` not superseded by a
    callback trace) plus assignments the coordinator stored or sent (KIP-848); none: single-owner and
    zombie-overlap are not checked at all."""
    if ownership:
        return []
    return [_note("single-owner", "no partitions_assigned events and no stored assignments in the trace"),
            _note("zombie-overlap", "no partitions_assigned events in the trace")]


def subscription_notes(subscriptions: int) -> list[dict[str, Any]]:
    """``subscriptions``: member events naming a ``subscription``."""
    if subscriptions:
        return []
    return [_note("subscribed-only", "no member said what it subscribes to (field subscription; Java client "
                                     "logs: 'Subscribed to topic(s)')")]


def protocol_notes(generations: int, cooperative: int, eager: int, unknown: int) -> list[dict[str, Any]]:
    """generation-monotonic, revoke-before-assign, revoke-only-moved and eager-revoke-all, from ``generations``
    (member events with a generation) and how many members ended the trace known to be ``cooperative`` /
    ``eager`` or of ``unknown`` protocol (``Member.protocol``: the last ``protocol`` field, else the default,
    else the kind of the first assignor named)."""
    out = []
    no_gen = not generations
    if no_gen:
        out.append(_note("generation-monotonic", "no generation in the events (plain VerifiableConsumer output has "
                                                 "none)"))
    if cooperative == 0:
        out.append(_note("revoke-before-assign", "no member is known to use the cooperative protocol (field "
                                                 "protocol, assignor cooperative-sticky, or --protocol)"))
        out.append(_note("revoke-only-moved", "no member is known to use the cooperative protocol"))
    elif no_gen:
        out.append(_note("revoke-before-assign", "without generations only the order is checked (as single-owner)",
                         partial=True))
        out.append(_note("revoke-only-moved", "needs the generation of each callback, which these events do not "
                                              "carry"))
    if eager == 0:
        out.append(_note("eager-revoke-all", "no member is known to use the eager protocol (field protocol, an "
                                             "eager assignor, or --protocol)"))
    elif unknown:
        out.append(_note("eager-revoke-all", f"{unknown} member(s) of unknown protocol were not checked",
                         partial=True))
    if unknown and cooperative:
        out.append(_note("revoke-only-moved", f"{unknown} member(s) of unknown protocol were not checked",
                         partial=True))
    return out


def consumption_notes(ownership: int, commits: int, unverified: int) -> list[dict[str, Any]]:
    """consume-owned-only and commit-owned-only: ``ownership`` as :func:`ownership_notes` counts it but callbacks
    only, ``commits`` successful ``offsets_committed`` events, ``unverified`` consumption and commit entries of
    partitions a member did not own before its assignment was known (a client log that starts mid-way)."""
    if not ownership and not commits:
        return [_note("consume-owned-only", "no records_consumed or offsets_committed events")]
    if unverified:
        return [_note(invariant, f"{unverified} consumption or commit entries came from members whose assignment "
                                 f"was not known yet (a log that starts mid-way)", partial=True)
                for invariant in ("consume-owned-only", "commit-owned-only")]
    return []
