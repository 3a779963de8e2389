# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Differential fuzzing of the CEL engine (k8s_semantics/cel) against cel-python's own interpreter.

Generated expressions (tests/k8s_semantics/cel/cel_expressions.py) run through both: selectors over a
generated device, as the allocator runs them (``SelectorEngine.compile(...).matches``), and closed
expressions of every type (``compile_value``). Each pair must give the same value, or both an error;
the engine may raise nothing but ``SelectorError``.

The grammar keeps to what both implement to the CEL specification. Left out, because only the
engine has it: Kubernetes' libraries (``quantity``, ``semver``, ``isGreaterThan``, ``compareTo``, the
lists, sets, strings and regex extensions), ``version`` attributes and capacities (Semver and
Quantity values), ``has()`` of an attribute domain (Kubernetes answers true for any domain), the
two-variable macros, the cost limit and the type checker (cel-python checks nothing before it
runs). Left out because cel-python departs from the specification (and cel-go) there: operands of
two types in ``==``, ``<`` and ``in`` (heterogeneous equality: an error in cel-python), NaN
(``NaN == NaN`` is true there), ``string()`` of a bool or double (Python's ``True`` and ``100.0``,
not ``true`` and ``100``), ``int()`` of exactly -2^63 as a double and ``uint()`` of a negative double
(both converted there), ``INT_MIN % -1`` (0 there, an overflow in cel-go), an error inside a map
literal (kept in the map there: ``"a" in {"a": 1/0}`` is true, an error in cel-go), an error inside
``exists_one()``, ``filter()`` or ``map()`` under ``&&``, ``||``, ``all()`` or ``exists()`` (raised
past them there: ``true || [0].exists_one(x, 1/0 == 1)`` is an error), negative list indexes
and string indexing (Python's meaning), and numbers parsed from strings (cel-python allows blanks).
"""

from __future__ import annotations

import math
from typing import Any

import celpy
from celpy import celtypes
from hypothesis import event, given
from hypothesis import strategies as st

from deckhouse_gpu.k8s_semantics.cel import SelectorEngine, SelectorError, device_view
from deckhouse_gpu.k8s_semantics.cel.engine import compile_value
from deckhouse_gpu.k8s_semantics.cel.values import Uint, unkey
from tests.k8s_semantics.cel.cel_expressions import DRIVER, Scope, devices, expression
from tests.support.fuzzing import fuzz

ENGINE = SelectorEngine()
CELPY = celpy.Environment()
ERROR = ("error",)
# cel-python's "a" + "b" is a Python str, whose method call .contains() then fails: the function
# given here only makes the receiver a StringType again and calls cel-python's own contains().
CELPY_FUNCTIONS: dict[str, Any] = {"contains": lambda text, part: celtypes.StringType(text).contains(part)}


class _DomainMap(celtypes.MapType):
    """device.attributes as Kubernetes declares it: an unknown domain is an empty map."""

    def __missing__(self, key: Any) -> celtypes.MapType:
        return celtypes.MapType()


def _celpy_value(value: Any) -> Any:
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    if isinstance(value, dict):
        return celtypes.MapType({celtypes.StringType(k): _celpy_value(v) for k, v in value.items()})
    return celtypes.StringType(value)


def celpy_device(device: dict[str, Any]) -> celtypes.MapType:
    attributes: dict[str, dict[str, Any]] = {}
    for key, attribute in device["attributes"].items():
        domain, slash, name = key.partition("/")
        domain, name = (domain, name) if slash else (DRIVER, key)
        attributes.setdefault(domain, {})[name] = next(iter(attribute.values()))
    return celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(DRIVER),
            celtypes.StringType("attributes"): _DomainMap(
                {celtypes.StringType(d): _celpy_value(m) for d, m in attributes.items()}
            ),
            celtypes.StringType("capacity"): _DomainMap(),
        }
    )


def tagged(value: Any) -> Any:
    """A value with its CEL type, comparable across the engines (celtypes subclass int and str)."""
    if isinstance(value, bool | celtypes.BoolType):
        return ("bool", bool(value))
    if isinstance(value, Uint | celtypes.UintType):
        return ("uint", int(value))
    if isinstance(value, int):
        return ("int", int(value))
    if isinstance(value, float):
        return ("double", "nan" if math.isnan(value) else float(value))
    if isinstance(value, str):
        return ("string", str(value))
    if isinstance(value, list):
        return ("list", [tagged(item) for item in value])
    if isinstance(value, dict):
        return ("map", sorted((repr(tagged(unkey(k))), tagged(v)) for k, v in value.items()))
    return ("other", repr(value))


def celpy_result(expression_: str, activation: dict[str, Any]) -> Any:
    try:
        program = CELPY.program(CELPY.compile(expression_), functions=CELPY_FUNCTIONS)
        return tagged(program.evaluate(activation))
    except Exception:
        return ERROR


def ours(run: Any) -> Any:
    try:
        return tagged(run())
    except SelectorError:  # the only exception the engine may raise
        return ERROR


@st.composite
def selectors(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    device, scope = draw(devices())
    return device, draw(expression(scope, "bool"))


@given(selectors())
@fuzz(250)
def test_selectors_over_a_device_agree_with_cel_python(case: tuple[dict[str, Any], str]) -> None:
    device, text = case
    mine = ours(lambda: ENGINE.compile(text).matches(device_view(DRIVER, device)))
    reference = celpy_result(text, {"device": celpy_device(device)})
    if reference not in (ERROR, ("bool", True), ("bool", False)):
        reference = ERROR  # a selector must yield a bool
    event(f"result: {reference[-1]}")
    assert mine == reference, f"{text}\nengine: {mine}\ncel-python: {reference}\ndevice: {device}"


CLOSED = Scope({}, [], device=False)


@given(st.sampled_from(["int", "uint", "double", "string", "bool", "list", "map"]).flatmap(
    lambda kind: expression(CLOSED, kind)
))  # fmt: skip
@fuzz(250)
def test_closed_expressions_of_every_type_agree_with_cel_python(text: str) -> None:
    mine = ours(lambda: compile_value(text).evaluate())
    reference = celpy_result(text, {})
    event(f"type: {reference[0]}")
    assert mine == reference, f"{text}\nengine: {mine}\ncel-python: {reference}"
