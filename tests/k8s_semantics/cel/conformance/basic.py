# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""cel-spec conformance cases (see spec.py): literals and plumbing (basic.textproto,
plumbing.textproto), deep and repetitive parse trees (parse.textproto), ``?:`` ``&&`` ``||`` ``!``
(logic.textproto).

Left out: basic's ``namespace`` section (empty); parse's ``message_literal`` and ``select`` tests
(protobuf messages, which the DRA environment has none of).
"""

from __future__ import annotations

from tests.k8s_semantics.cel.conformance.spec import ERROR, U, bound, spec_file, unchecked

BASIC = spec_file(
    "basic",
    {
        "self_eval_zeroish": [
            ("self_eval_int_zero", "0", 0),
            ("self_eval_uint_zero", "0u", U(0)),
            ("self_eval_uint_alias_zero", "0U", U(0)),
            ("self_eval_float_zero", "0.0", 0.0),
            ("self_eval_float_zerowithexp", "0e+0", 0.0),
            ("self_eval_string_empty", "''", ""),
            ("self_eval_string_empty_quotes", '""', ""),
            ("self_eval_string_raw_prefix", 'r""', ""),
            ("self_eval_bytes_empty", 'b""', b""),
            ("self_eval_bool_false", "false", False),
            ("self_eval_null", "null", None),
            ("self_eval_empty_list", "[]", []),
            ("self_eval_empty_map", "{}", {}),
            ("self_eval_string_raw_prefix_triple_double", 'r""""""', ""),
            ("self_eval_string_raw_prefix_triple_single", "r''''''", ""),
        ],
        "self_eval_nonzeroish": [
            ("self_eval_int_nonzero", "42", 42),
            ("self_eval_uint_nonzero", "123456789u", U(123456789)),
            ("self_eval_uint_alias_nonzero", "123456789U", U(123456789)),
            ("self_eval_int_negative_min", "-9223372036854775808", -9223372036854775808),
            ("self_eval_float_negative_exp", "-2.3e+1", -23.0),
            ("self_eval_string_excl", '"!"', "!"),
            ("self_eval_string_escape", r"'\''", "'"),
            ("self_eval_bytes_escape", "b'ÿ'", b"\xc3\xbf"),
            ("self_eval_bytes_invalid_utf8", r"b'\000\xff'", b"\x00\xff"),
            ("self_eval_list_singleitem", "[-1]", [-1]),
            ("self_eval_map_singleitem", '{"k":"v"}', {"k": "v"}),
            ("self_eval_bool_true", "true", True),
            ("self_eval_int_hex", "0x55555555", 1431655765),
            ("self_eval_int_hex_negative", "-0x55555555", -1431655765),
            ("self_eval_uint_hex", "0x55555555u", U(1431655765)),
            ("self_eval_uint_alias_hex", "0x55555555U", U(1431655765)),
            ("self_eval_unicode_escape_four", r'"\u270c"', "\u270c"),
            ("self_eval_unicode_escape_eight", r'"\U0001f431"', "\U0001f431"),
            ("self_eval_ascii_escape_seq", r'"\a\b\f\n\r\t\v\"\'\\"', "\a\b\f\n\r\t\v\"'\\"),
        ],
        "variables": [
            ("self_eval_bound_lookup", "x", bound(123, x=123)),
            ("self_eval_unbound_lookup", "x", unchecked(ERROR)),
            ("unbound_is_runtime_error", "x || true", unchecked(True)),
        ],
        "functions": [
            ("binop", "1 + 1", 2),
            ("unbound", "f_unknown(17)", unchecked(ERROR)),
            ("unbound_is_runtime_error", "f_unknown(17) || true", unchecked(True)),
        ],
        "reserved_const": [
            ("false", "false", bound(False, false=True)),
            ("true", "true", bound(True, true=False)),
            ("null", "null", bound(None, null=True)),
        ],
    },
)

PLUMBING = spec_file(
    "plumbing",
    {
        "min": [("min_program", "17", 17)],
        "eval_results": [
            ("error_result", "1 / 0", ERROR),
            ("eval_map_results", '{"k1":"v1","k":"v"}', {"k": "v", "k1": "v1"}),
        ],
        "check_inputs": [("skip_check", "[17, 'pancakes']", unchecked([17, "pancakes"]))],
        "eval_inputs": [("one_ignored_value_arg", "'foo'", bound("foo", x=17))],
    },
)

PARSE = spec_file(
    "parse",
    {
        "nest": [
            ("list_index", "a[a[a[a[a[a[a[a[a[a[a[a[0]]]]]]]]]]]]", bound(0, a=[0])),
            ("funcall", "int(uint(int(uint(int(uint(int(uint(int(uint(int(uint(7))))))))))))", 7),
            ("list_literal", "size([[[[[[[[[[[[0]]]]]]]]]]]])", 1),
            ("map_literal", "size({0: {0: {0: {0: {0: {0: {0: {0: {0: {0: {0: {0: 'foo'}}}}}}}}}}}})", 1),
            ("parens", "((((((((((((((((((((((((((((((((7))))))))))))))))))))))))))))))))", 7),
        ],
        "repeat": [
            ("conditional", " : ".join(["true ? true"] * 24) + " : false", True),
            ("or", " || ".join(["false"] * 32) + " || true", True),
            ("and", " && ".join(["true"] * 32) + " && false", False),
            ("add_sub", "3" + " - 3 + 3" * 12, 3),
            ("mul_div", "4" + " * 4 / 4" * 12, 4),
            ("not", "!" * 32 + "true", True),
            ("unary_neg", "-" * 32 + "19", 19),
            ("index", "[[[[[[[[[[[['foo']]]]]]]]]]]][0][0][0][0][0][0][0][0][0][0][0][0]", "foo"),
            ("list_literal", f"[{', '.join(str(i) for i in range(32))}][17]", 17),
            (
                "map_literal",
                "{0: 'zero', 1: 'one', 2: 'two', 3: 'three', 4: 'four', 5: 'five', 6: 'six', 7: 'seven', "
                "8: 'eight', 9: 'nine', 10: 'ten', 11: 'eleven', 12: 'twelve', 13: 'thirteen', "
                "14: 'fourteen', 15: 'fifteen', 16: 'sixteen', 17: 'seventeen', 18: 'eighteen', "
                "19: 'nineteen', 20: 'twenty', 21: 'twenty-one', 22: 'twenty-two', 23: 'twenty-three', "
                "24: 'twenty-four', 25: 'twenty-five', 26: 'twenty-six', 27: 'twenty-seven', "
                "28: 'twenty-eight', 29: 'twenty-nine', 30: 'thirty', 31: 'thirty-one'}[17]",
                "seventeen",
            ),
        ],
    },
)

LOGIC = spec_file(
    "logic",
    {
        "conditional": [
            ("true_case", "true ? 1 : 2", 1),
            ("false_case", "false ? 'foo' : 'bar'", "bar"),
            ("error_case", "2 / 0 > 4 ? 'baz' : 'quux'", ERROR),
            ("mixed_type", "true ? 'cows' : 17", unchecked("cows")),
            ("bad_type", "'cows' ? false : 17", unchecked(ERROR)),
        ],
        "AND": [
            ("all_true", "true && true", True),
            ("all_false", "false && false", False),
            ("false_left", "false && true", False),
            ("false_right", "true && false", False),
            ("short_circuit_type_left", "false && 32", unchecked(False)),
            ("short_circuit_type_right", "'horses' && false", unchecked(False)),
            ("short_circuit_error_left", "false && (2 / 0 > 3 ? false : true)", False),
            ("short_circuit_error_right", "(2 / 0 > 3 ? false : true) && false", False),
            ("error_right", "true && 1/0 != 0", ERROR),
            ("error_left", "1/0 != 0 && true", ERROR),
            ("no_overload", "'less filling' && 'tastes great'", unchecked(ERROR)),
        ],
        "OR": [
            ("all_true", "true || true", True),
            ("all_false", "false || false", False),
            ("false_left", "false || true", True),
            ("false_right", "true || false", True),
            ("short_circuit_type_left", "true || 32", unchecked(True)),
            ("short_circuit_type_right", "'horses' || true", unchecked(True)),
            ("short_circuit_error_left", "true || (2 / 0 > 3 ? false : true)", True),
            ("short_circuit_error_right", "(2 / 0 > 3 ? false : true) || true", True),
            ("error_right", "false || 1/0 != 0", ERROR),
            ("error_left", "1/0 != 0 || false", ERROR),
            ("no_overload", "'less filling' || 'tastes great'", unchecked(ERROR)),
        ],
        "NOT": [
            ("not_true", "!true", False),
            ("not_false", "!false", True),
            ("no_overload", "!0", unchecked(ERROR)),
        ],
    },
)

CASES = [*BASIC, *PLUMBING, *PARSE, *LOGIC]
