"""The benchmark's profile of the whole job (``python -m benchmarks spark -- --profile``) covers every part of it.

``bench_spark.profile`` wraps the functions ``mine.plan`` calls, by module and name (``PLAN_CALLS``), and runs each
frame they return as a part of its own; a frame built by a call it does not wrap runs nowhere on its own, and its
cost falls on whichever later part reads it, or on none (``notes.counts`` and
``cooperative.same_generation_overlaps`` were missed so, issue 15). Held here to ``mine.plan``'s source: every call
it makes to a public function of a ``spark_analysis`` module is wrapped, or listed with why it is not
(``PLAN_UNWRAPPED``), and nothing else is listed. No Spark runs.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
import types

from benchmarks import bench_spark
from spark_analysis import mine


def _calls(fn: types.FunctionType, module: types.ModuleType) -> set[tuple[str, str]]:
    """``(module, name)`` of each public ``spark_analysis`` function ``fn`` calls, as the profile must patch it: a
    module's attribute (``inv.unowned`` -> ``("invariants", "unowned")``), or a name bound in ``module`` itself
    (``member_rows``, imported into mine -> ``("mine", "member_rows")``; patching ownership's would miss it)."""
    found: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(fn)))):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            target = getattr(module, f.value.id, None)
            if isinstance(target, types.ModuleType) and target.__name__.startswith("spark_analysis."):
                name, called = target.__name__.split(".", 1)[1], getattr(target, f.attr)
                if inspect.isfunction(called) and not f.attr.startswith("_"):
                    found.add((name, f.attr))
        elif isinstance(f, ast.Name):
            called = getattr(module, f.id, None)
            if inspect.isfunction(called) and called.__module__.startswith("spark_analysis.") \
                    and not f.id.startswith("_"):
                found.add((module.__name__.split(".", 1)[1], f.id))
    return found


def _listed(table: dict[str, tuple[str, ...]]) -> set[tuple[str, str]]:
    return {(m, n) for m, names in table.items() for n in names}


def test_the_profile_wraps_every_spark_analysis_call_of_mine_plan() -> None:
    called = _calls(mine.plan, mine)
    wrapped, unwrapped = _listed(bench_spark.PLAN_CALLS), _listed(bench_spark.PLAN_UNWRAPPED)
    assert not wrapped & unwrapped
    # a call the profile does not wrap: its frame is no part of the profile
    assert sorted(called - wrapped - unwrapped) == []
    # a name listed that mine.plan no longer calls: a stale entry (the profile would wrap a function for nothing)
    assert sorted((wrapped | unwrapped) - called) == []
    # and each name is the function the profile patches (getattr on that module)
    for module_name, name in wrapped:
        assert inspect.isfunction(getattr(importlib.import_module(f"spark_analysis.{module_name}"), name))


def test_the_call_finder_sees_both_kinds_of_call() -> None:
    # the finder itself, on mine.plan: a module's attribute and a name imported into mine are both found, and a
    # DataFrame method or a local helper (keep) is not
    called = _calls(mine.plan, mine)
    assert {("invariants", "unowned"), ("mine", "member_rows"), ("notes", "counts")} <= called
    assert not {n for _, n in called} & {"keep", "unionByName", "persist"}
