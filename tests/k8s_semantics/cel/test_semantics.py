# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The DRA CEL engine (k8s_semantics/cel): CEL semantics (arithmetic, comparison, conversions, macros and
the extension libraries) and the errors evaluation raises, integer overflow included."""

from __future__ import annotations

import pytest

from deckhouse_gpu.k8s_semantics.cel import SelectorError
from tests.k8s_semantics.cel.sample_device import ENGINE, VIEW, A, evaluate

# --- CEL semantics -----------------------------------------------------------------------------------

TRUE_EXPRESSIONS = [
    # arithmetic: int64, truncating division, Go's remainder, uint, double
    "7 / 2 == 3 && 7 / -2 == -3 && -7 / 2 == -3",
    "7 % 3 == 1 && -7 % 2 == -1 && 7 % -2 == 1",
    "-9223372036854775807 % -1 == 0 && -9223372036854775808 % 1 == 0 && 9223372036854775807 % -1 == 0",
    "-9223372036854775808 < 0 && 9223372036854775807 > 0",
    "0x1F == 31 && -0x10 == -16 && 010 == 10",
    "1u + 2u == 3u && 7u / 2u == 3u && 7u % 4u == 3u",
    "1.5 * 2.0 == 3.0 && 1.0 / 0.0 > 1e308 && -1.0 / 0.0 < -1e308",
    "1.0 / 2.0 == 0.5 && -(-2) == 2 && -(1.5) == -1.5",
    # comparison: cross-type numbers, strings, bytes, bools
    "1 < 1.5 && 2u > 1 && 1.0 <= 1 && 1 == 1.0 && 1 == 1u",
    # an int or uint against a double: the sign beyond the integer range, else a rounding conversion
    # to double (cel-go's compareDoubleInt), so 2^63 - 1 equals 2^63 and 2^53 + 1 equals 2^53
    "dyn(9223372036854775807) == 9223372036854775808.0"
    " && !(dyn(9223372036854775807) < 9223372036854775808.0)",
    "9007199254740993 == dyn(9007199254740992.0) && dyn(1) < 1e300 && dyn(-1) > -1e300 && dyn(0u) > -0.5",
    "dyn(18446744073709551615u) == 18446744073709551616.0 && 9223372036854775807 < 9223372036854775808u",
    "!(0.0 / 0.0 == 0.0 / 0.0) && !(dyn(1) == 0.0 / 0.0) && dyn(0.0 / 0.0) != 1u",
    "'a' < 'b' && 'abc' >= 'abb' && b'a' < b'b' && false < true",
    # strings, bytes, lists
    "'ab' + 'c' == 'abc' && b'a' + b'b' == b'ab' && [1, 2] + [3] == [1, 2, 3]",
    "[] + [3, 4] == [3, 4] && [1, 2] + [] == [1, 2] && {'a': []}['a'] + [1] == [1]",
    "size('héllo') == 5 && 'héllo'.size() == 5 && size(b'\\xff') == 1 && size([1, 2]) == 2",
    "size({'a': 1}) == 1 && 'ell' in ['hello', 'ell'] && !('x' in ['y'])",
    "'hello'.contains('ell') && 'hello'.startsWith('he') && 'hello'.endsWith('lo')",
    "r'\\d' == '\\\\d' && '''multi\nline'''.contains('\\n') && '\\u00e9' == 'é'",
    "b'\\xff\\101' == b'\\377A' && '\\x41\\101\\U0001F600' == 'AA😀' && br'\\x' == b'\\\\x'",
    """'''it's''' == "it's" && '''a "b" c''' == 'a "b" c'""",
    r"""'\a\b\f\v\?\`' == '\x07\x08\x0c\x0b?`' && '\"\'' == "\"'" """,
    # equality is deep and typed
    "[1, [2, 'x']] == [1, [2, 'x']] && [1] != [1, 2] && {'a': [1]} == {'a': [1]}",
    "[true] != [dyn(1)] && null == null && {'a': 1} != {'a': 2}",
    # maps: bool and int keys are distinct, a double finds an int key, has() on maps
    "{true: 1, 1: 2}.size() == 2 && {true: 'b'}[true] == 'b' && {1: 'a'}[1.0] == 'a'",
    "has({'a': 1}.a) && !has({'a': 1}.b) && {'a': {'b': 2}}.a.b == 2",
    "[10, 20][1] == 20 && [10, 20][1u] == 20",
    # logic: errors are absorbed by a decisive other side
    "false && 1 / 0 == 1 ? false : true",
    "!(1 / 0 == 1 && false) && (1 / 0 == 1 || true) && (true || 1 / 0 == 1)",
    "(true ? 1 : 2) == 1 && (false ? 1 : 2) == 2",
    # conversions
    "int('42') == 42 && int('-7') == -7 && int(2.9) == 2 && int(-2.9) == -2 && int(3u) == 3",
    "uint(3) == 3u && uint('8') == 8u && double(1) == 1.0 && double('1.5') == 1.5",
    # the doubles nearest the int64 / uint64 limits that still convert (2^63 - 1024 and 2^64 - 2048)
    "int(-9223372036854774784.0) == -9223372036854774784",
    "int(9223372036854774784.0) == 9223372036854774784",
    "uint(18446744073709549568.0) == 18446744073709549568u && uint(-0.0) == 0u && int(-0.5) == 0",
    "double('inf') > 1e308 && double('-Infinity') < 0.0 && double('1e3') == 1000.0",
    "string(1) == '1' && string(1u) == '1' && string(true) == 'true' && string(b'abc') == 'abc'",
    "string(1.5) == '1.5' && string(100.0) == '100' && string(1e6) == '1e+06' && string(1e21) == '1e+21'",
    "string(0.0001) == '0.0001' && string(0.00001) == '1e-05' && string(-0.5) == '-0.5'",
    "bool('true') && bool('T') && !bool('0') && bytes('a') == b'a' && dyn(1) == 1",
    "type(1) == int && type('a') == string && type(1u) == uint && type([]) == list && type({}) == map",
    "type(1.0) == double && type(true) == bool && type(null) == null_type && type(int) == type",
    "type(quantity('1')) != type(1) && type(semver('1.0.0')) == type(semver('2.0.0'))",
    # macros
    "[1, 2, 3].all(x, x > 0) && [1, 2, 3].exists(x, x == 2) && [1, 2, 3].exists_one(x, x > 2)",
    "[1, 2, 3].map(x, x * 2) == [2, 4, 6] && [1, 2, 3].map(x, x > 1, x * 10) == [20, 30]",
    "[1, 2, 3].filter(x, x > 1) == [2, 3] && {'a': 1, 'b': 2}.filter(k, k == 'b') == ['b']",
    "{'a': 1, 'b': 2}.all(k, k in ['a', 'b']) && {'a': 1}.map(k, k + '!') == ['a!']",
    "[[1, 2], [3]].all(l, l.all(x, x > 0)) && [1, 2].exists(x, [3].exists(y, x + y == 5))",
    "[0, 1].exists(x, 1 / x == 1) && ![0, 2].all(x, 1 / x > 1)",
    "[1].all(device, device == 1) && device.driver == 'gpu.example.com'",  # shadowing, then restored
    # two-variable comprehensions
    "[10, 20].all(i, v, v == (i + 1) * 10) && {'a': 1}.exists(k, v, k == 'a' && v == 1)",
    "[1, 2, 3].existsOne(i, v, v == 2) && ![2, 2].existsOne(i, v, v == 2)",
    "[1, 2].transformList(i, v, i * v) == [0, 2] && [1, 2].transformList(i, v, v > 1, v) == [2]",
    "{'a': 1}.transformMap(k, v, v + 1) == {'a': 2} && [5].transformMap(i, v, v) == {0: 5}",
    # cel.bind
    "cel.bind(x, 2, x * x == 4) && cel.bind(d, device.attributes['gpu.example.com'], d.model == 'A30')",
    "cel.bind(x, 1, cel.bind(x, 2, x == 2) && x == 1)",
    # strings extension
    "'hello'.charAt(1) == 'e' && 'hello'.charAt(5) == '' && 'héllo'.indexOf('l') == 2",
    "'hello'.indexOf('l', 3) == 3 && 'hello'.indexOf('z') == -1 && 'hello'.lastIndexOf('l') == 3",
    "'hello'.lastIndexOf('l', 2) == 2 && 'HeLLo'.lowerAscii() == 'hello' && 'héllo'.upperAscii() == 'HéLLO'",
    "'a.b.c'.replace('.', '-') == 'a-b-c' && 'a.b.c'.replace('.', '-', 1) == 'a-b.c'",
    "'a,b,c'.split(',') == ['a', 'b', 'c'] && 'a,b,c'.split(',', 2) == ['a', 'b,c']",
    "'a,b'.split(',', 0) == [] && 'abc'.split('') == ['a', 'b', 'c']",
    "'hello'.substring(1, 3) == 'el' && 'hello'.substring(2) == 'llo' && '  hi \\t'.trim() == 'hi'",
    "['a', 'b'].join('-') == 'a-b' && ['a', 'b'].join() == 'ab'",
    # regular expressions (RE2)
    "'abc123'.matches('^[a-z]+[0-9]+$') && matches('abc', 'b') && !'abc'.matches('^b')",
    "'abc123'.find('[0-9]+') == '123' && 'abc'.find('[0-9]') == ''",
    "'a1b2c3'.findAll('[0-9]') == ['1', '2', '3'] && 'a1b2c3'.findAll('[0-9]', 2) == ['1', '2']",
    # lists and sets
    "[1, 2, 3].isSorted() && ![3, 1].isSorted() && [1, 2, 3].sum() == 6 && [1.5, 2.5].sum() == 4.0",
    "[1, 3, 2].max() == 3 && [1, 3, 2].min() == 1 && ['b', 'a'].min() == 'a'",
    "[1, 2, 2].indexOf(2) == 1 && [1, 2, 2].lastIndexOf(2) == 2 && [1].indexOf(5) == -1",
    "sets.contains([1, 2, 3], [1, 2]) && !sets.contains([1], [2]) && sets.contains([1], [])",
    "sets.equivalent([1, 2], [2, 1, 1]) && sets.intersects([1, 2], [2, 3]) && !sets.intersects([1], [])",
]


@pytest.mark.parametrize("expression", TRUE_EXPRESSIONS)
def test_cel_semantics(expression: str) -> None:
    assert evaluate(expression) is True


# --- errors at evaluation ------------------------------------------------------------------------------

RUNTIME_ERRORS = [
    (f'{A}.missing == "x"', "no such key: missing"),
    (f"{A}.model", "the result is string, not bool"),
    (f"{A}.index", "the result is int, not bool"),
    ("device.attributes['example.org'].model == 'x'", "no such key: model"),
    ("{'a': 1}['b'] == 1", "no such key: b"),
    ("[1][2] == 1", "index out of bounds: 2"),
    ("1 / 0 == 1", "division by zero"),
    ("1 % 0 == 1", "modulus by zero"),
    ("9223372036854775807 + 1 > 0", "integer overflow"),
    ("-9223372036854775808 / -1 > 0", "integer overflow in _/_"),
    ("-9223372036854775808 % -1 == 0", r"integer overflow in _%_"),
    ("-9223372036854775808 - 1 < 0", "integer overflow"),
    ("1u - 2u > 0u", "unsigned integer overflow"),
    ("true && 1 / 0 == 1", "division by zero"),  # absorbed only by a decisive other side
    ("1 / 0 == 1 || false", "division by zero"),
    ("[1, 0].all(x, 1 / x > 0)", "division by zero"),
    ("[1, 0].exists(x, 1 / x > 1)", "division by zero"),
    ("[0].exists_one(x, 1 / x > 1)", "division by zero"),
    (f"{A}.model ? true : false", r"no such overload: _\?_:_\(string\)"),
    (f"!{A}.model", r"no such overload: !_\(string\)"),
    (f"{A}.model && true", r"no such overload: _&&_\(string\)"),
    (f"{A}.model < 1", r"no such overload: _<_\(string, int\)"),
    (f"{A}.model + 1 == 1", r"no such overload: _\+_\(string, int\)"),
    (f"quantity('3') == {A}.index", r"no such overload: _==_\(kubernetes.Quantity, int\)"),
    (f"{A}.driverVersion == 'x'", r"no such overload: _==_\(kubernetes.Semver, string\)"),
    ("int('x') == 1", "cannot convert 'x' to int"),
    ("int(' 42') == 42", "cannot convert"),
    ("int(1e19) == 1", "integer overflow in int"),
    # -2^63 fits an int64, yet cel-go's range check excludes it; the literal below 2^63 rounds to 2^63
    ("int(-9223372036854775808.0) < 0", "integer overflow in int"),
    ("int(9223372036854775807.0) > 0", "integer overflow in int"),
    ("int(double('NaN')) == 0", "integer overflow in int"),
    ("int(double('-inf')) == 0", "integer overflow in int"),
    ("uint(-1) == 1u", "unsigned integer overflow in uint"),
    ("uint(-1.0) == 1u", "unsigned integer overflow in uint"),
    ("uint(-0.5) == 0u", "unsigned integer overflow in uint"),
    ("uint(18446744073709551616.0) == 1u", "unsigned integer overflow in uint"),
    ("uint(double('NaN')) == 0u", "unsigned integer overflow in uint"),
    ("bool('yes')", "cannot convert 'yes' to bool"),
    ("string(b'\\xff') == ''", "invalid UTF-8"),
    ("{'a': 1, 'a': 2}.size() == 1", "duplicate map key"),
    ("'a'.matches('(?=a)')", "invalid regular expression"),
    ("'abc'.charAt(4) == ''", "index out of range: 4"),
    ("'abc'.substring(2, 1) == ''", r"substring out of range: \[2:1\]"),
    ("[].min() == 0", "min called on an empty list"),
    ("['a', 1].isSorted()", r"no such overload: _<_\(int, string\)"),
    ("0.0 / 0.0 < 1.0", "NaN values cannot be ordered"),
    ("dyn(1) >= 0.0 / 0.0", "NaN values cannot be ordered"),
    ("[1.0, 0.0 / 0.0].isSorted()", "NaN values cannot be ordered"),
    ("size(1) == 1", r"no such overload: size\(int\)"),
    ("'a'.isInteger()", r"no such overload: isInteger\(string\)"),
    ("quantity('abc') == quantity('1')", "'abc' is not a Kubernetes quantity"),
    ("quantity('1.5').asInteger() == 1", "cannot convert value to integer"),
    ("quantity('1').add('x') == quantity('1')", r"no such overload: add\(kubernetes.Quantity, string\)"),
    ("quantity('1').compareTo(semver('1.0.0')) == 0", r"no such overload: compareTo\(kubernetes.Quantity"),
    ("semver('1.2') == semver('1.2.0')", "could not parse semver"),
    ("semver('1.2-beta', true) == semver('1.2.0')", "short version cannot contain PreRelease/Build"),
    ("semver(1) == semver('1.0.0')", r"no such overload: semver\(int, bool\)"),
    ("semver('1.0.0').major() == 1 && 'a'.major() == 1", r"no such overload: major\(string\)"),
    ("sets.contains(1, [1])", r"no such overload: sets.contains\(int, list\)"),
]


@pytest.mark.parametrize(("expression", "reason"), RUNTIME_ERRORS)
def test_runtime_errors(expression: str, reason: str) -> None:
    compiled = ENGINE.compile(expression)
    with pytest.raises(SelectorError, match=reason):
        compiled.matches(VIEW)


def test_an_error_names_the_expression_truncated_and_the_device() -> None:
    expression = f'{A}.model == "A30" && ' + " && ".join(f"{A}.missing{i} == {i}" for i in range(10))
    with pytest.raises(SelectorError) as raised:
        evaluate(expression)
    message = str(raised.value)
    shown = message.split("'")[1]
    assert message.startswith('CEL selector \'device.attributes["gpu.example.com"].model == ')
    assert len(shown) == 80
    assert shown.endswith("...")
    assert message.endswith("device 'gpu-0': no such key: missing0")
