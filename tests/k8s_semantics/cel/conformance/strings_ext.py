# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""cel-spec conformance cases (see spec.py): the strings extension library that Kubernetes
enables (version 2: ``charAt indexOf lastIndexOf lowerAscii upperAscii replace split substring
trim join strings.quote``), its value and type errors (string_ext.textproto). Nothing left out; a
test without a result expects ``true``.
"""

# ruff: noqa: RUF001 -- the cases compare Greek letters with Latin ones on purpose.

from __future__ import annotations

from tests.k8s_semantics.cel.conformance.spec import ERROR, spec_file, unchecked

QUOTE = [
    ("multiline", r'strings.quote("first\nsecond") == "\"first\\nsecond\""', True),
    ("escaped", r'strings.quote("bell\a") == "\"bell\\a\""', True),
    ("backspace", r'strings.quote("\bbackspace") == "\"\\bbackspace\""', True),
    ("form_feed", r'strings.quote("\fform feed") == "\"\\fform feed\""', True),
    ("carriage_return", r'strings.quote("carriage \r return") == "\"carriage \\r return\""', True),
    ("horizontal_tab", r'strings.quote("horizontal tab\t") == "\"horizontal tab\\t\""', True),
    ("vertical_tab", r'strings.quote("vertical \v tab") == "\"vertical \\v tab\""', True),
    ("double_slash", r'strings.quote("double \\\\ slash") == "\"double \\\\\\\\ slash\""', True),
    (
        "two_escape_sequences",
        r'strings.quote("two escape sequences \\a\\n") == "\"two escape sequences \\\\a\\\\n\""',
        True,
    ),
    ("verbatim", r'strings.quote("verbatim") == "\"verbatim\""', True),
    ("ends_with", r'strings.quote("ends with \\") == "\"ends with \\\\\""', True),
    ("starts_with", r'strings.quote("\\ starts with") == "\"\\\\ starts with\""', True),
    ("printable_unicode", 'strings.quote("printable unicode😀") == "\\"printable unicode😀\\""', True),
    ("mid_string_quote", r'strings.quote("mid string \" quote") == "\"mid string \\\" quote\""', True),
    (
        "single_quote_with_double_quote",
        r"""strings.quote('single-quote with "double quote"') == """
        + r'"\"single-quote with \\\"double quote\\\"\""',
        True,
    ),
    ("size_unicode_char", r"""strings.quote("size('ÿ')") == """ + r'''"\"size('ÿ')\""''', True),
    ("size_unicode_string", r"""strings.quote("size('πέντε')") == """ + r'''"\"size('πέντε')\""''', True),
    ("unicode", r'strings.quote("завтра") == "\"завтра\""', True),
    (
        "unicode_code_points",
        r'strings.quote("\U0001F431\U0001F600\U0001F61B")',
        '"\U0001f431\U0001f600\U0001f61b"',
    ),
    ("unicode_2", r'strings.quote("ta©o©αT") == "\"ta©o©αT\""', True),
    ("empty_quote", 'strings.quote("")', '""'),
]

TYPE_ERRORS = [
    ("charat_invalid_type", "42.charAt(2) == ''"),
    ("charat_invalid_argument", "'hello'.charAt(true) == ''"),
    ("indexof_unary_invalid_type", "24.indexOf('2') == 0"),
    ("indexof_unary_invalid_argument", "'hello'.indexOf(true) == 1"),
    ("indexof_binary_invalid_argument", "42.indexOf('4', 0) == 0"),
    ("indexof_binary_invalid_argument_2", "'42'.indexOf(4, 0) == 0"),
    ("indexof_binary_both_invalid_arguments", "'42'.indexOf('4', '0') == 0"),
    ("indexof_ternary_invalid_arguments", "'42'.indexOf('4', 0, 1) == 0"),
    ("split_invalid_type", "42.split('2') == ['4']"),
    ("replace_invalid_type", "42.replace(2, 1) == '41'"),
    ("replace_binary_invalid_argument", "'42'.replace(2, 1) == '41'"),
    ("replace_binary_invalid_argument_2", "'42'.replace('2', 1) == '41'"),
    ("replace_ternary_invalid_argument", "42.replace('2', '1', 1) == '41'"),
    ("replace_ternary_invalid_argument_2", "'42'.replace(2, '1', 1) == '41'"),
    ("replace_ternary_invalid_argument_3", "'42'.replace('2', 1, 1) == '41'"),
    ("replace_ternary_invalid_argument_4", "'42'.replace('2', '1', '1') == '41'"),
    ("replace_quaternary_invalid_argument", "'42'.replace('2', '1', 1, false) == '41'"),
    ("split_invalid_type_empty_arg", "42.split('') == ['4', '2']"),
    ("split_invalid_argument", "'42'.split(2) == ['4']"),
    ("split_binary_invalid_type", "42.split('2', '1') == ['4']"),
    ("split_binary_invalid_argument", "'42'.split(2, 1) == ['4']"),
    ("split_binary_invalid_argument_2", "'42'.split('2', '1') == ['4']"),
    ("split_ternary_invalid_argument", "'42'.split('2', 1, 1) == ['4']"),
    ("substring_ternary_invalid_argument", "'hello'.substring(1, 2, 3) == ''"),
    ("substring_binary_invalid_type", "30.substring(true, 3) == ''"),
    ("substring_binary_invalid_argument", "'tacocat'.substring(true, 3) == ''"),
    ("substring_binary_invalid_argument_2", "'tacocat'.substring(0, false) == ''"),
]

CASES = spec_file(
    "string_ext",
    {
        "char_at": [
            ("middle_index", "'tacocat'.charAt(3)", "o"),
            ("end_index", "'tacocat'.charAt(7)", ""),
            ("multiple", "'©αT'.charAt(0) == '©' && '©αT'.charAt(1) == 'α' && '©αT'.charAt(2) == 'T'", True),
        ],
        "index_of": [
            ("empty_index", "'tacocat'.indexOf('')", 0),
            ("string_index", "'tacocat'.indexOf('ac')", 1),
            ("nomatch", "'tacocat'.indexOf('none') == -1", True),
            ("empty_index", "'tacocat'.indexOf('', 3) == 3", True),
            ("char_index", "'tacocat'.indexOf('a', 3) == 5", True),
            ("string_index", "'tacocat'.indexOf('at', 3) == 5", True),
            ("unicode_char", "'ta©o©αT'.indexOf('©') == 2", True),
            ("unicode_char_index", "'ta©o©αT'.indexOf('©', 3) == 4", True),
            ("unicode_string_index", "'ta©o©αT'.indexOf('©αT', 3) == 4", True),
            ("unicode_string_nomatch_index", "'ta©o©αT'.indexOf('©α', 5) == -1", True),
            ("char_index", "'ijk'.indexOf('k') == 2", True),
            ("string_with_space_fullmatch", "'hello wello'.indexOf('hello wello') == 0", True),
            ("string_with_space_index", "'hello wello'.indexOf('ello', 6) == 7", True),
            ("string_nomatch_index", "'hello wello'.indexOf('elbo room!!') == -1", True),
        ],
        "last_index_of": [
            ("empty", "'tacocat'.lastIndexOf('') == 7", True),
            ("string", "'tacocat'.lastIndexOf('at') == 5", True),
            ("string_nomatch", "'tacocat'.lastIndexOf('none') == -1", True),
            ("empty_index", "'tacocat'.lastIndexOf('', 3) == 3", True),
            ("char_index", "'tacocat'.lastIndexOf('a', 3) == 1", True),
            ("unicode_char", "'ta©o©αT'.lastIndexOf('©') == 4", True),
            ("unicode_char_index", "'ta©o©αT'.lastIndexOf('©', 3) == 2", True),
            ("unicode_string_index", "'ta©o©αT'.lastIndexOf('©α', 4) == 4", True),
            ("string_with_space_string_index", "'hello wello'.lastIndexOf('ello', 6) == 1", True),
            ("string_with_space_string_nomatch", "'hello wello'.lastIndexOf('low') == -1", True),
            (
                "string_with_space_string_with_space_nomatch",
                "'hello wello'.lastIndexOf('elbo room!!') == -1",
                True,
            ),
            ("string_with_space_fullmatch", "'hello wello'.lastIndexOf('hello wello') == 0", True),
            ("repeated_string", "'bananananana'.lastIndexOf('nana', 7) == 6", True),
        ],
        "ascii_casing": [
            ("lowerascii", "'TacoCat'.lowerAscii() == 'tacocat'", True),
            ("lowerascii_unicode", "'TacoCÆt'.lowerAscii() == 'tacocÆt'", True),
            ("lowerascii_unicode_with_space", "'TacoCÆt Xii'.lowerAscii() == 'tacocÆt xii'", True),
            ("upperascii", "'tacoCat'.upperAscii() == 'TACOCAT'", True),
            ("upperascii_unicode", "'tacoCαt'.upperAscii() == 'TACOCαT'", True),
            ("upperascii_unicode_with_space", "'TacoCÆt Xii'.upperAscii() == 'TACOCÆT XII'", True),
        ],
        "replace": [
            ("no_placeholder", "'12 days 12 hours'.replace('{0}', '2') == '12 days 12 hours'", True),
            ("basic", "'{0} days {0} hours'.replace('{0}', '2') == '2 days 2 hours'", True),
            (
                "chained",
                "'{0} days {0} hours'.replace('{0}', '2', 1).replace('{0}', '23') == '2 days 23 hours'",
                True,
            ),
            ("unicode", "'1 ©αT taco'.replace('αT', 'o©α') == '1 ©o©α taco'", True),
        ],
        "split": [
            ("empty", "'hello world'.split(' ') == ['hello', 'world']", True),
            ("zero_limit", "'hello world events!'.split(' ', 0) == []", True),
            ("one_limit", "'hello world events!'.split(' ', 1) == ['hello world events!']", True),
            ("unicode_negative_limit", "'o©o©o©o'.split('©', -1) == ['o', 'o', 'o', 'o']", True),
        ],
        "substring": [
            ("start", "'tacocat'.substring(4) == 'cat'", True),
            ("start_with_max_length", "'tacocat'.substring(7) == ''", True),
            ("start_and_end", "'tacocat'.substring(0, 4) == 'taco'", True),
            ("start_and_end_equal_value", "'tacocat'.substring(4, 4) == ''", True),
            ("unicode_start_and_end", "'ta©o©αT'.substring(2, 6) == '©o©α'", True),
            ("unicode_start_and_end_equal_value", "'ta©o©αT'.substring(7, 7) == ''", True),
        ],
        "trim": [
            ("blank_spaces_escaped_chars", r"' \f\n\r\t\vtext  '.trim() == 'text'", True),
            ("unicode_space_chars_1", r"'\u0085\u00a0\u1680text'.trim() == 'text'", True),
            (
                "unicode_space_chars_2",
                r"'text\u2000\u2001\u2002\u2003\u2004\u2004\u2006\u2007\u2008\u2009'.trim() == 'text'",
                True,
            ),
            ("unicode_space_chars_3", r"'\u200atext\u2028\u2029\u202F\u205F\u3000'.trim() == 'text'", True),
            (
                "unicode_no_trim",
                r"'\u180etext\u200b\u200c\u200d\u2060\ufeff'.trim() == "
                r"'\u180etext\u200b\u200c\u200d\u2060\ufeff'",
                True,
            ),
        ],
        "join": [
            ("empty_separator", "['x', 'y'].join() == 'xy'", True),
            ("dash_separator", "['x', 'y'].join('-') == 'x-y'", True),
            ("empty_string_empty_separator", "[].join() == ''", True),
            ("empty_string_dash_separator", "[].join('-') == ''", True),
        ],
        "quote": QUOTE,
        "value_errors": [
            ("charat_out_of_range", "'tacocat'.charAt(30) == ''", ERROR),
            ("indexof_out_of_range", "'tacocat'.indexOf('a', 30) == -1", ERROR),
            ("lastindexof_negative_index", "'tacocat'.lastIndexOf('a', -1) == -1", ERROR),
            ("lastindexof_out_of_range", "'tacocat'.lastIndexOf('a', 30) == -1", ERROR),
            ("substring_out_of_range", "'tacocat'.substring(40) == 'cat'", ERROR),
            ("substring_negative_index", "'tacocat'.substring(-1) == 'cat'", ERROR),
            ("substring_end_index_out_of_range", "'tacocat'.substring(1, 50) == 'cat'", ERROR),
            ("substring_begin_index_out_of_range", "'tacocat'.substring(49, 50) == 'cat'", ERROR),
            ("substring_end_index_greater_than_begin_index", "'tacocat'.substring(4, 3) == ''", ERROR),
        ],
        "type_errors": [(name, expr, unchecked(ERROR)) for name, expr in TYPE_ERRORS],
    },
)
