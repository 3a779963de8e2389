# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""cel-spec conformance cases (see spec.py): ``size``, ``startsWith``, ``endsWith``, ``matches``,
``contains`` and concatenation of strings and bytes (string.textproto). Nothing left out."""

from __future__ import annotations

from tests.k8s_semantics.cel.conformance.spec import spec_file

CASES = spec_file(
    "string",
    {
        "size": [
            ("empty", "size('')", 0),
            ("one_ascii", "size('A')", 1),
            ("one_unicode", "size('ÿ')", 1),
            ("ascii", "size('four')", 4),
            ("unicode", "size('πέντε')", 5),
            ("bytes_empty", "size(b'')", 0),
            ("bytes", "size(b'abc')", 3),
        ],
        "starts_with": [
            ("basic_true", "'foobar'.startsWith('foo')", True),
            ("basic_false", "'foobar'.startsWith('bar')", False),
            ("empty_target", "''.startsWith('foo')", False),
            ("empty_arg", "'foobar'.startsWith('')", True),
            ("empty_empty", "''.startsWith('')", True),
            ("unicode", "'завтра'.startsWith('за')", True),
            ("unicode_smp", r"'\U0001F431\U0001F600\U0001F61B'.startsWith('\U0001F431')", True),
        ],
        "ends_with": [
            ("basic_true", "'foobar'.endsWith('bar')", True),
            ("basic_false", "'foobar'.endsWith('foo')", False),
            ("empty_target", "''.endsWith('foo')", False),
            ("empty_arg", "'foobar'.endsWith('')", True),
            ("empty_empty", "''.endsWith('')", True),
            ("unicode", "'forté'.endsWith('té')", True),
            ("unicode_smp", r"'\U0001F431\U0001F600\U0001F61B'.endsWith('\U0001F61B')", True),
        ],
        "matches": [
            ("basic", "'hubba'.matches('ubb')", True),
            ("empty_target", "''.matches('foo|bar')", False),
            ("empty_arg", "'cows'.matches('')", True),
            ("empty_empty", "''.matches('')", True),
            ("re_concat", "'abcd'.matches('bc')", True),
            ("re_alt", "'grey'.matches('gr(a|e)y')", True),
            ("re_rep", "'banana'.matches('ba(na)*')", True),
            ("unicode", "'mañana'.matches('a+ñ+a+')", True),
            ("unicode_smp", r"'\U0001F431\U0001F600\U0001F600'.matches('(a|\U0001F600){2}')", True),
        ],
        "concatentation": [
            ("concat_true", "'he' + 'llo'", "hello"),
            ("concat_with_spaces", "'hello' + ' ' == 'hello'", False),
            ("concat_empty_string_beginning", "'' + 'abc'", "abc"),
            ("concat_empty_string_end", "'abc' + ''", "abc"),
            ("concat_empty_with_empty", "'' + ''", ""),
            ("unicode_unicode", "'¢' + 'ÿ' + 'Ȁ'", "¢ÿȀ"),
            ("ascii_unicode", "'r' + 'ô' + 'le'", "rôle"),
            ("ascii_unicode_unicode_smp", r"'a' + 'ÿ' + '\U0001F431'", "aÿ\U0001f431"),
            ("empty_unicode", "'' + 'Ω' + ''", "Ω"),
        ],
        "contains": [
            ("contains_true", "'hello'.contains('he')", True),
            ("contains_empty", "'hello'.contains('')", True),
            ("contains_false", "'hello'.contains('ol')", False),
            ("contains_multiple", "'abababc'.contains('ababc')", True),
            ("contains_unicode", "'Straße'.contains('aß')", True),
            ("contains_unicode_smp", r"'\U0001F431\U0001F600\U0001F601'.contains('\U0001F600')", True),
            ("empty_contains", "''.contains('something')", False),
            ("empty_empty", "''.contains('')", True),
        ],
        "bytes_concat": [
            ("concat", "b'abc' + b'def'", b"abcdef"),
            ("left_unit", r"b'' + b'\xffoo'", b"\xffoo"),
            ("right_unit", "b'zxy' + b''", b"zxy"),
            ("empty_empty", "b'' + b''", b""),
        ],
    },
)
