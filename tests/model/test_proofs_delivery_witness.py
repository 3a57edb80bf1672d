"""The ``unknown`` once seen in ``delivery-committed-not-ahead`` (issue 17), pinned down.

Its second witness ("an in-flight commit passes a record nobody processed") was a satisfiability
query over the invariant's quantifiers. Z3's model-based quantifier instantiation is incomplete
there and gave up ("incomplete quantifiers") or not depending only on the order terms were created
in: the names ``_with_range`` draws from a module-wide counter, which a full ``groupspec prove``
run advances further than a run of the one obligation. Before the fix, each of these counter values made
the obligation ``unknown`` alone in a fresh process (found by sweeping the counter; in one pytest process
the terms earlier cases create shift them, so at least one still fails without the fix); the witness is now shown
on one concrete pre-state, where the quantifiers are decided.
"""

from __future__ import annotations

import itertools

import pytest

from model.proofs import delivery
from model.proofs.core import RunConfig

# counter values at which the witness came back unknown before the fix (0-3000 swept)
FORMERLY_UNKNOWN = (148, 222, 435, 629, 1147)


@pytest.mark.parametrize("start", FORMERLY_UNKNOWN)
def test_committed_not_ahead_is_proved_whatever_the_terms_created_before(start: int,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(delivery, "_COUNTER", itertools.count(start))
    out = delivery.delivery_committed_not_ahead.run(RunConfig())
    bad = [(q.name, q.result, q.note) for q in out.queries if q.result != q.expect]
    assert bad == [] and str(out.status) == "proved"
