# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""cel-spec conformance cases (see spec.py): ``bytes double int uint string type dyn`` and the type
denotations (conversions.textproto).

Left out: ``int(timestamp(...))`` (section int, test timestamp): the engine refuses timestamps at
compile time.
"""

from __future__ import annotations

from tests.k8s_semantics.cel.conformance.spec import ERROR, T, U, spec_file, unchecked

TYPE_VALUES = [
    ("bool", "type(true)", T("bool")),
    ("bool_denotation", "bool", T("bool")),
    ("dyn_no_denotation", "dyn", unchecked(ERROR)),
    ("int", "type(0)", T("int")),
    ("int_denotation", "int", T("int")),
    ("eq_same", "type(true) == type(false)", True),
    ("uint", "type(64u)", T("uint")),
    ("uint_denotation", "uint", T("uint")),
    ("double", "type(3.14)", T("double")),
    ("double_denotation", "double", T("double")),
    ("null_type", "type(null)", T("null_type")),
    ("null_type_denotation", "null_type", T("null_type")),
    ("string", "type('foo')", T("string")),
    ("string_denotation", "string", T("string")),
    ("bytes", r"type(b'\xff')", T("bytes")),
    ("bytes_denotation", "bytes", T("bytes")),
    ("list", "type([1, 2, 3])", T("list")),
    ("list_denotation", "list", T("list")),
    ("lists_monomorphic", "type([1, 2, 3]) == type(['one', 'two', 'three'])", True),
    ("map", "type({4: 16})", T("map")),
    ("map_denotation", "map", T("map")),
    ("map_monomorphic", "type({'one': 1}) == type({1: 'one'})", True),
    ("eq_diff", "type(7) == type(7u)", False),
    ("neq_same", "type(0.0) != type(-0.0)", False),
    ("neq_diff", "type(0.0) != type(0)", True),
    ("meta", "type(type(7)) == type(type(7u))", True),
    ("type", "type(int)", T("type")),
    ("type_denotation", "type", T("type")),
    ("type_type", "type(type)", T("type")),
]

CASES = spec_file(
    "conversions",
    {
        "bytes": [
            ("string_empty", "bytes('')", b""),
            ("string", "bytes('abc')", b"abc"),
            ("string_unicode", "bytes('ÿ')", b"\xc3\xbf"),
            ("string_unicode_vs_literal", r"bytes('\377') == b'\377'", False),
        ],
        "double": [
            ("int_zero", "double(0)", 0.0),
            ("int_pos", "double(1000000000000)", 1e12),
            ("int_neg", "double(-1000000000000000)", -1e15),
            ("int_min_exact", "double(-9007199254740992)", -9.007199254740992e15),
            ("int_max_exact", "double(9007199254740992)", 9.007199254740992e15),
            ("int_range", "double(9223372036854775807)", 9.223372036854775807e18),
            ("uint_zero", "double(0u)", 0.0),
            ("uint_pos", "double(123u)", 123.0),
            ("uint_max_exact", "double(9007199254740992u)", 9.007199254740992e15),
            ("uint_range", "double(18446744073709551615u)", 1.8446744073709551615e19),
            ("string_zero", "double('0')", 0.0),
            ("string_zero_dec", "double('0.0')", 0.0),
            ("string_neg_zero", "double('-0.0')", -0.0),
            ("string_no_dec", "double('123')", 123.0),
            ("string_pos", "double('123.456')", 123.456),
            ("string_neg", "double('-987.654')", -987.654),
            ("string_exp_pos_pos", "double('6.02214e23')", 6.02214e23),
            ("string_exp_pos_neg", "double('1.38e-23')", 1.38e-23),
            ("string_exp_neg_pos", "double('-84.32e7')", -8.432e8),
            ("string_exp_neg_neg", "double('-5.43e-21')", -5.43e-21),
        ],
        "dyn": [("dyn_heterogeneous_list", "type(dyn([1, 'one']))", T("list"))],
        "int": [
            ("uint", "int(42u)", 42),
            ("uint_zero", "int(0u)", 0),
            ("uint_max_exact", "int(9223372036854775807u)", 9223372036854775807),
            ("uint_range", "int(18446744073709551615u)", ERROR),
            ("double_round_neg", "int(-123.456)", -123),
            ("double_truncate", "int(1.9)", 1),
            ("double_truncate_neg", "int(-7.9)", -7),
            ("double_half_pos", "int(11.5)", 11),
            ("double_half_neg", "int(-3.5)", -3),
            ("double_big_exact", "int(double(36028797018963968))", 36028797018963968),
            ("double_big_precision", "int(double(36028797018963969))", 36028797018963968),
            ("double_int_max_range", "int(9223372036854775807.0)", ERROR),
            ("double_int_min_range", "int(-9223372036854775808.0)", ERROR),
            ("double_range", "int(1e99)", ERROR),
            ("string", "int('987')", 987),
        ],
        "string": [
            ("int", "string(123)", "123"),
            ("int_neg", "string(-456)", "-456"),
            ("uint", "string(9876u)", "9876"),
            ("double", "string(123.456)", "123.456"),
            ("double_hard", "string(-4.5e-3)", "-0.0045"),
            ("bytes", "string(b'abc')", "abc"),
            ("bytes_unicode", r"string(b'\303\277')", "ÿ"),
            ("bytes_invalid", r"string(b'\000\xff')", ERROR),
        ],
        "type": TYPE_VALUES,
        "uint": [
            ("int", "uint(1729)", U(1729)),
            ("int_max", "uint(9223372036854775807)", U(9223372036854775807)),
            ("int_neg", "uint(-1)", ERROR),
            ("double", "uint(3.14159265)", U(3)),
            ("double_truncate", "uint(1.9)", U(1)),
            ("double_half", "uint(25.5)", U(25)),
            ("double_big_exact", "uint(double(36028797018963968u))", U(36028797018963968)),
            ("double_big_precision", "uint(double(36028797018963969u))", U(36028797018963968)),
            ("double_uint_max_range", "int(18446744073709551615.0)", ERROR),
            ("double_range_beyond_uint", "uint(6.022e23)", ERROR),
            ("string", "uint('300')", U(300)),
        ],
    },
)
