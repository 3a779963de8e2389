# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""cel-spec conformance cases (see spec.py): the two-variable comprehensions ``all exists
existsOne transformList transformMap`` (macros2.textproto). Nothing left out."""

from __future__ import annotations

from tests.k8s_semantics.cel.conformance.spec import ERROR, spec_file

MANY = "{'foo': 'bar', 'baz': 'bux', 'hello': 'world'}"

CASES = spec_file(
    "macros2",
    {
        "exists": [
            ("list_elem_all_true", "[1, 2, 3].exists(i, v, i > -1 && v > 0)", True),
            ("list_elem_some_true", "[1, 2, 3].exists(i, v, i == 1 && v == 2)", True),
            ("list_elem_none_true", "[1, 2, 3].exists(i, v, i > 2 && v > 3)", False),
            ("list_elem_type_shortcircuit", "[1, 'foo', 3].exists(i, v, i == 1 && v != '1')", True),
            ("list_elem_type_exhaustive", "[1, 'foo', 3].exists(i, v, i == 3 || v == '10')", False),
            ("list_elem_exists_error", "[1, 2, 3].exists(i, v, v / i == 17)", ERROR),
            ("list_empty", "[].exists(i, v, i == 0 || v == 2)", False),
            ("map_key", "{'key1':1, 'key2':2}.exists(k, v, k == 'key2' && v == 2)", True),
            ("not_map_key", "!{'key1':1, 'key2':2}.exists(k, v, k == 'key3' || v == 3)", True),
            ("map_key_type_shortcircuit", "{'key':1, 1:21}.exists(k, v, k != 2 && v != 22)", True),
            ("map_key_type_exhaustive", "!{'key':1, 1:42}.exists(k, v, k == 2 && v == 43)", True),
        ],
        "all": [
            ("list_elem_all_true", "[1, 2, 3].all(i, v, i > -1 && v > 0)", True),
            ("list_elem_some_true", "[1, 2, 3].all(i, v, i == 1 && v == 2)", False),
            ("list_elem_none_true", "[1, 2, 3].all(i, v, i == 3 || v == 4)", False),
            ("list_elem_type_shortcircuit", "[1, 'foo', 3].all(i, v, i == 0 || v == 1)", False),
            ("list_elem_type_exhaustive", "[0, 'foo', 3].all(i, v, v % 2 == i)", False),
            ("list_elem_type_error_exhaustive", "[0, 'foo', 5].all(i, v, v % 3 == i)", ERROR),
            ("list_elem_error_shortcircuit", "[1, 2, 3].all(i, v, 6 / (2 - v) == i)", False),
            ("list_elem_error_exhaustive", "[1, 2, 3].all(i, v, v / i != 17)", ERROR),
            ("list_empty", "[].all(i, v, i > -1 || v > 0)", True),
            ("map_key", "{'key1':1, 'key2':2}.all(k, v, k == 'key2' && v == 2)", False),
        ],
        "existsOne": [
            ("list_empty", "[].existsOne(i, v, i == 3 || v == 7)", False),
            ("list_one_true", "[7].existsOne(i, v, i == 0 && v == 7)", True),
            ("list_one_false", "[8].existsOne(i, v, i == 0 && v == 7)", False),
            ("list_none", "[1, 2, 3].existsOne(i, v, i > 2 || v > 3)", False),
            ("list_one", "[5, 7, 8].existsOne(i, v, v % 5 == i)", True),
            ("list_many", "[0, 1, 2, 3, 4].existsOne(i, v, v % 2 == i)", False),
            ("list_all", "['foal', 'foo', 'four'].existsOne(i, v, i > -1 && v.startsWith('fo'))", False),
            ("list_no_shortcircuit", "[3, 2, 1, 0].existsOne(i, v, v / i > 1)", ERROR),
            (
                "map_one",
                "{6: 'six', 7: 'seven', 8: 'eight'}.existsOne(k, v, k % 5 == 2 && v == 'seven')",
                True,
            ),
        ],
        "transformList": [
            ("empty", "[].transformList(i, v, i / v)", []),
            ("empty_filter", "[].transformList(i, v, i > v, i / v)", []),
            ("one", "[3].transformList(i, v, v * v + i)", [9]),
            ("one_filter", "[3].transformList(i, v, i == 0 && v == 3, v * v + i)", [9]),
            ("many", "[2, 4, 6].transformList(i, v, v / 2 + i)", [1, 3, 5]),
            ("many_filter", "[2, 4, 6].transformList(i, v, i != 1 && v != 4, v / 2 + i)", [1, 5]),
            ("error", "[2, 1, 0].transformList(i, v, v / i)", ERROR),
            ("error_filter", "[2, 1, 0].transformList(i, v, v / i > 0, v)", ERROR),
        ],
        "transformMap": [
            ("empty", "{}.transformMap(k, v, k + v)", {}),
            ("empty_filter", "{}.transformMap(k, v, k == 'foo' && v == 'bar', k + v)", {}),
            ("one", "{'foo': 'bar'}.transformMap(k, v, k + v)", {"foo": "foobar"}),
            (
                "one_filter",
                "{'foo': 'bar'}.transformMap(k, v, k == 'foo' && v == 'bar', k + v)",
                {"foo": "foobar"},
            ),
            (
                "many",
                MANY + ".transformMap(k, v, k + v)",
                {"foo": "foobar", "baz": "bazbux", "hello": "helloworld"},
            ),
            (
                "many_filter",
                MANY + ".transformMap(k, v, k != 'baz' && v != 'bux', k + v)",
                {"foo": "foobar", "hello": "helloworld"},
            ),
            ("error", "{'foo': 2, 'bar': 1, 'baz': 0}.transformMap(k, v, 4 / v)", ERROR),
            (
                "error_filter",
                "{'foo': 2, 'bar': 1, 'baz': 0}.transformMap(k, v, k == 'baz' && 4 / v == 0, v)",
                ERROR,
            ),
        ],
    },
)
