# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The DRA CEL engine (k8s_semantics/cel): compile-time errors, the compile cache and the limits on
length, cost and nesting."""

from __future__ import annotations

import pytest

from deckhouse_gpu.k8s_semantics import cel as cel_package
from deckhouse_gpu.k8s_semantics.cel import (
    MAX_COST,
    MAX_EXPRESSION_BYTES,
    CompiledSelector,
    SelectorEngine,
    SelectorError,
)
from deckhouse_gpu.k8s_semantics.cel.engine import compile_value
from deckhouse_gpu.k8s_semantics.cel.values import Uint
from tests.k8s_semantics.cel.sample_device import ENGINE, A, C, evaluate

# --- compile-time errors ----------------------------------------------------------------------------

COMPILE_ERRORS = [
    ("", "the expression is empty"),
    ("  \n ", "the expression is empty"),
    ("1 +", "syntax error at line 1, column"),
    ("device.attributes[", "syntax error"),
    ("a.?b", "syntax error"),  # optional types are not supported
    ('device.attributes["gpu.example.com/model"] == "x"', r"'_==_' applied to \(map\(string, dyn\), string"),
    ("device.foo", "undefined field 'foo' of device"),
    ("has(device.bar)", "undefined field 'bar' of device"),
    ("foo(1)", "undeclared reference to 'foo'"),
    ("x == 1", "undeclared reference to 'x'"),
    ("device.driver.frobnicate()", "undeclared reference to 'frobnicate'"),
    ("duration('1s') > duration('0s')", "undeclared reference to 'duration'"),
    ("timestamp('2024-01-01T00:00:00Z') > timestamp('2023-01-01T00:00:00Z')", "undeclared reference"),
    ("size(1, 2) == 1", "found no matching overload for 'size' with 2 argument"),
    ("'a'.startsWith() == true", "found no matching overload for 'startsWith' with 0 argument"),
    ("1", "must evaluate to bool, not int"),
    ("device.driver", "must evaluate to bool, not string"),
    ("[true]", r"must evaluate to bool, not list\(bool\)"),
    ("!1", r"'!_' applied to \(int\)"),
    ("1 && true", r"'_&&_' applied to \(int\)"),
    ("1 ? true : false", r"'_\?_:_' applied to \(int\)"),
    ("1 + 'a' == 2", r"'_\+_' applied to \(int, string\)"),
    ("1 + 1.0 == 2.0", r"'_\+_' applied to \(int, double\)"),
    ("1.5 % 1.0 == 0.5", r"'_%_' applied to \(double, double\)"),
    ("-'a' == 'a'", r"'-_' applied to \(string\)"),
    ("1 in 2", r"'@in' applied to \(int, int\)"),
    ("'a' < 1", r"'_<_' applied to \(string, int\)"),
    ("quantity('1') < quantity('2')", r"'_<_' applied to \(kubernetes.Quantity, kubernetes.Quantity\)"),
    (f"{C}.memory >= quantity('1Gi')", r"'_>=_' applied to \(kubernetes.Quantity, kubernetes.Quantity\)"),
    ("quantity('1') == 1", r"'_==_' applied to \(kubernetes.Quantity, int\)"),
    ("semver('1.0.0') > semver('0.1.0')", r"'_>_' applied to \(kubernetes.Semver, kubernetes.Semver\)"),
    ("'a'.b == 1", "type 'string' does not support field selection"),
    ("1[0] == 1", r"'_\[_\]' applied to \(int, int\)"),
    ("has(device)", r"invalid argument to has\(\) macro"),
    ("has(1)", r"invalid argument to has\(\) macro"),
    ("[1].all(x, y, z, true)", r"invalid arguments to the all\(\) macro"),
    ("(1).all(x, true)", r"all\(\) cannot range over int"),
    (f"{A}.all(k, k.x)", "type 'string' does not support field selection"),  # k is a map key: a string
    ("'\\q' == 'q'", "invalid escape sequence"),
    ("b'\\u00e9' == b''", "invalid unicode escape"),
    ("cel.bind(1, 2, true)", r"cel.bind\(\) takes a variable name"),
    ("device.T{f: 1} == 1", "message construction is not supported"),
    ("9223372036854775808 > 0", "invalid int literal"),
    ("18446744073709551616u > 0u", "invalid uint literal"),
    ("{1.5: 1}.size() == 1", "unsupported map key type: double"),
    ("1. == 1.0", "invalid double literal 1.: a digit must follow the point"),  # cel-go: a syntax error
    ("2.e3 == 2000.0", "invalid double literal 2.e3"),
    ("42.size() == 2", "syntax error at line 1, column 4"),  # cel-go: no size() of an int
]


@pytest.mark.parametrize(("expression", "reason"), COMPILE_ERRORS)
def test_compile_errors(expression: str, reason: str) -> None:
    with pytest.raises(SelectorError, match=reason):
        ENGINE.compile(expression)


def test_a_short_expression_is_quoted_whole_on_one_line() -> None:
    with pytest.raises(SelectorError) as raised:
        ENGINE.compile("device.driver ==\n  1 +")
    assert str(raised.value).startswith("CEL selector 'device.driver == 1 +': syntax error")


# --- compile once, limits --------------------------------------------------------------------------------


def test_compile_is_cached_per_expression_text() -> None:
    engine = SelectorEngine()
    first = engine.compile("device.driver == 'x'")
    assert isinstance(first, CompiledSelector)
    assert engine.compile("device.driver == 'x'") is first
    assert engine.compile("device.driver == 'y'") is not first
    assert SelectorEngine().compile("device.driver == 'x'") is not first
    assert first.expression == "device.driver == 'x'"
    for _ in range(2):  # a compile error is remembered and raised again, whole
        with pytest.raises(SelectorError, match="undeclared reference to 'nope'"):
            engine.compile("nope()")


def test_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cel_package.engine, "CACHE_SIZE", 2)  # read where SelectorEngine looks
    engine = SelectorEngine()
    first = engine.compile("true")
    engine.compile("false")
    engine.compile("true && false")
    assert engine.compile("true") is not first


def test_compiled_selector_reports_functions_and_device_fields() -> None:
    compiled = ENGINE.compile(
        f"has({A}.x) && {C}.memory.compareTo(quantity('1')) > 0 && [1].all(i, i > 0)"
        " && cel.bind(v, device.driver, v.startsWith('g')) && sets.contains([1], [1])"
    )
    assert compiled.functions == {
        *("has", "compareTo", "quantity", "all", "cel.bind", "startsWith", "sets.contains")
    }
    assert compiled.device_fields == {"attributes", "capacity", "driver"}


def test_expression_length_limit_in_bytes() -> None:
    filler = MAX_EXPRESSION_BYTES - len("'' == ''")
    at_limit = f"'{'a' * filler}' == ''"
    assert len(at_limit.encode()) == MAX_EXPRESSION_BYTES
    assert evaluate(at_limit) is False
    with pytest.raises(SelectorError, match=f"10241 bytes, longer than the limit of {MAX_EXPRESSION_BYTES}"):
        ENGINE.compile(f"'{'a' * (filler + 1)}' == ''")
    multibyte = f"'{'é' * (filler // 2 + 1)}' == ''"  # fewer characters than the limit, more bytes
    assert len(multibyte) < MAX_EXPRESSION_BYTES < len(multibyte.encode())
    with pytest.raises(SelectorError, match="longer than the limit"):
        ENGINE.compile(multibyte)


def _nested_maps(depth: int) -> str:
    expression = "1"
    for level in range(depth):
        expression = f"[0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(v{level}, {expression})"
    return f"{expression}.size() == 10"


def test_cost_limit_stops_a_runaway_expression() -> None:
    assert MAX_COST == 1_000_000
    assert evaluate(_nested_maps(4)) is True  # 10^4 iterations: well within the limit
    for expression in (
        _nested_maps(5),  # 10^5 iterations of ~12 each
        f"{_nested_maps(5)} || true",  # the limit is not an error a decisive side absorbs
        # all() on a fixed list is cheaper per iteration: six levels
        "".join(f"[0, 1, 2, 3, 4, 5, 6, 7, 8, 9].all(v{level}, " for level in range(6)) + "true" + ")" * 6,
    ):
        with pytest.raises(SelectorError, match="operation cancelled: actual cost limit exceeded"):
            evaluate(expression)


def test_cost_grows_with_string_sizes() -> None:
    """contains() costs the product of both lengths / 10 (cel-go): ten calls on 4000 characters exceed
    the limit, while the same loop on short strings costs little."""
    loop = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9].all(i, !s.contains(s + 'b'))"
    assert evaluate(f"cel.bind(s, 'aaaa', {loop})") is True
    with pytest.raises(SelectorError, match="actual cost limit exceeded"):
        evaluate(f"cel.bind(s, '{'a' * 4000}', {loop})")


def test_deep_nesting() -> None:
    """Parentheses and long chains cost no depth; 3000 nested operators are refused (cel-go: 250)."""
    assert evaluate("(" * 3000 + "true" + ")" * 3000) is True
    assert evaluate(" || ".join(["false"] * 1000) + " || true") is True
    assert evaluate("!" * 200 + "true") is True
    with pytest.raises(SelectorError, match="compilation failed: the expression is nested too deeply"):
        ENGINE.compile("!" * 3000 + "true")


# --- expressions that are not selectors (compile_value) ---------------------------------------------


def test_compile_value_yields_the_value_of_any_type() -> None:
    assert compile_value("1 + 2").evaluate() == 3
    assert type(compile_value("1u + 2u").evaluate()) is Uint
    assert compile_value("[1, 2].map(x, x * 2)").evaluate() == [2, 4]
    assert compile_value("{'a': 1}").evaluate() == {"a": 1}
    assert compile_value("'a' < 'b'").evaluate() is True


def test_compile_value_binds_declared_variables_of_type_dyn() -> None:
    compiled = compile_value("x.name + y", ["x", "y"])
    assert compiled.variables == {"x", "y"}
    assert compiled.evaluate({"x": {"name": 1}, "y": 2}) == 3
    assert compiled.evaluate({"x": {"name": "a"}, "y": "b"}) == "ab"
    with pytest.raises(SelectorError, match="no value bound to y"):
        compiled.evaluate({"x": {"name": 1}})
    with pytest.raises(SelectorError, match=r"no such overload: _\+_\(int, string\)"):
        compiled.evaluate({"x": {"name": 1}, "y": "b"})


def test_compile_value_has_no_device_and_the_selectors_limits() -> None:
    with pytest.raises(SelectorError, match="undeclared reference to 'device'"):
        compile_value("device.driver")
    with pytest.raises(SelectorError, match="syntax error"):
        compile_value("1 +")
    with pytest.raises(SelectorError, match="operation cancelled: actual cost limit exceeded"):
        compile_value(_nested_maps(5)).evaluate()
