"""Whatever the events hold, the checker reports: bad fields are counted, never a traceback."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from model.events import STANDARD_NAMES
from traces.report import check_events

_scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 5), st.text(max_size=3), st.floats(allow_nan=True))
_value = st.recursive(_scalar, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.text(max_size=3), inner, max_size=3)),
                      max_leaves=6)
_partition = st.one_of(
    st.fixed_dictionaries({"topic": st.sampled_from(["t", "u"]), "partition": st.integers(0, 2)},
                          optional={"minOffset": st.integers(-1, 20), "maxOffset": st.integers(-1, 20),
                                    "offset": st.one_of(st.integers(-1, 20), _scalar)}),
    _value)
_fields = {
    "member": st.one_of(st.sampled_from(["a", "b"]), _scalar),
    "group": st.one_of(st.just("g"), _scalar),
    "generation": st.one_of(st.integers(-1, 4), _scalar),
    "member_id": st.one_of(st.sampled_from(["a-1", "b-1"]), _scalar),
    "protocol": st.one_of(st.sampled_from(["eager", "cooperative"]), _scalar),
    "partitions": st.one_of(st.lists(_partition, max_size=3), _value),
    "offsets": st.one_of(st.lists(_partition, max_size=3), _value),
    "success": st.one_of(st.booleans(), _scalar),
    "reason": st.one_of(st.text(max_size=10), _scalar),
    "members": st.one_of(st.lists(st.sampled_from(["a-1", "b-1"]), max_size=2), _value),
    "assignment": st.one_of(st.dictionaries(st.sampled_from(["a-1", "b-1"]), st.lists(_partition, max_size=2)),
                            _value),
    "instance_id": st.one_of(st.just("i"), _scalar),
    "replaced_by": _scalar,
    "subscription": st.one_of(st.lists(st.sampled_from(["t", "u"]), max_size=2), _value),
    "state": st.one_of(st.sampled_from(["Stable", "PreparingRebalance", "Empty"]), _scalar),
    "detail": st.one_of(st.sampled_from(["member-assignment", "member-joined"]), _scalar),
}


@st.composite
def events(draw: Any) -> list[dict[str, Any]]:
    out = []
    ts = 0
    for _ in range(draw(st.integers(1, 25))):
        ts += draw(st.integers(0, 50))
        event: dict[str, Any] = {"name": draw(st.sampled_from(sorted(STANDARD_NAMES))), "timestamp": ts}
        for key in draw(st.sets(st.sampled_from(sorted(_fields)), max_size=5)):
            event[key] = draw(_fields[key])
        out.append(event)
    return out


@settings(max_examples=150)
@given(events())
def test_any_events_give_a_report(trace: list[dict[str, Any]]) -> None:
    report = check_events(trace)
    assert report["verdict"] in ("held", "warning", "violation")
    # every event is used or refused (a bad-field line, which is no event), never both, never neither
    assert report["input"]["events"] + sum(report["input"]["skipped"].values()) == len(trace)
    assert set(report["input"]["skipped"]) <= {"bad-field"}
