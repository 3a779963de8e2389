# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""cel-spec conformance cases (see spec.py): lists (lists.textproto), maps, field selection on maps,
``has()`` and ``in`` (fields.textproto), the macros ``all exists exists_one map filter``
(macros.textproto) and their two-variable forms with ``transformList`` and ``transformMap``
(macros2.textproto), ``cel.bind`` (bindings_ext.textproto).

Left out: fields' tests of qualified variable names (``a.b.c`` declared as one variable, with or
without a container: qualified_ident, map_field_select, qualified_identifier_resolution_unchecked,
list_field_select_unsupported, ident_with_longest_prefix_check): the DRA environment declares one
variable, ``device``, and no container.
"""

from __future__ import annotations

from tests.k8s_semantics.cel.conformance.spec import ERROR, U, bound, spec_file, unchecked

LISTS = spec_file(
    "lists",
    {
        "concatentation": [
            ("list_append", "[0, 1, 2] + [3, 4, 5] == [0, 1, 2, 3, 4, 5]", True),
            ("list_not_commutative", "[0, 1, 2] + [3, 4, 5] == [3, 4, 5, 0, 1, 2]", False),
            ("list_repeat", "[2] + [2]", [2, 2]),
            ("empty_empty", "[] + []", []),
            ("left_unit", "[] + [3, 4]", [3, 4]),
            ("right_unit", "[1, 2] + []", [1, 2]),
        ],
        "index": [
            ("zero_based", "[7, 8, 9][0]", 7),
            ("zero_based_double", "[7, 8, 9][dyn(0.0)]", 7),
            ("zero_based_double_error", "[7, 8, 9][dyn(0.1)]", ERROR),
            ("zero_based_uint", "[7, 8, 9][dyn(0u)]", 7),
            ("singleton", "['foo'][0]", "foo"),
            ("middle", "[0, 1, 1, 2, 3, 5, 8, 13][4]", 3),
            ("last", "['George', 'John', 'Paul', 'Ringo'][3]", "Ringo"),
            ("range", "[1, 2, 3][3]", ERROR),
        ],
        "in": [
            ("empty", "7 in []", False),
            ("singleton", "4u in [4u]", True),
            ("first", "'alpha' in ['alpha', 'beta', 'gamma']", True),
            ("middle", "3 in [5, 4, 3, 2, 1]", True),
            ("last", "20u in [4u, 6u, 8u, 12u, 20u]", True),
            ("double_in_ints", "dyn(3.0) in [5, 4, 3, 2, 1]", True),
            ("uint_in_ints", "dyn(3u) in [5, 4, 3, 2, 1]", True),
            ("int_in_doubles", "dyn(3) in [5.0, 4.0, 3.0, 2.0, 1.0]", True),
            ("uint_in_doubles", "dyn(3u) in [5.0, 4.0, 3.0, 2.0, 1.0]", True),
            ("int_in_uints", "dyn(3) in [5u, 4u, 3u, 2u, 1u]", True),
            ("double_in_uints", "dyn(3.0) in [5u, 4u, 3u, 2u, 1u]", True),
            ("missing", "'hawaiian' in ['meat', 'veggie', 'margarita', 'cheese']", False),
        ],
        "size": [
            ("list_empty", "size([])", 0),
            ("list", "size([1, 2, 3])", 3),
            ("map_empty", "size({})", 0),
            ("map", "size({1: 'one', 2: 'two', 3: 'three'})", 3),
        ],
    },
)

FIELDS = spec_file(
    "fields",
    {
        "map_fields": [
            ("map_key_int64", "{0:1,2:2,5:true}[5]", True),
            ("map_key_uint64", "{0u:1u,2u:'happy',5u:3u}[2u]", "happy"),
            ("map_key_string", "{'name':100u}['name']", U(100)),
            ("map_key_bool", "{true:5}[true]", 5),
            ("map_key_mixed_type", "{true:1,2:2,5u:3}[true]", 1),
            ("map_key_mixed_numbers_double_key", "{1u: 1.0, 2: 2.0, 3u: 3.0}[3.0]", 3.0),
            ("map_key_mixed_numbers_lossy_double_key", "{1u: 1.0, 2: 2.0, 3u: 3.0}[3.1]", ERROR),
            ("map_key_mixed_numbers_uint_key", "{1u: 1.0, 2: 2.0, 3u: 3.0}[2u]", 2.0),
            ("map_key_mixed_numbers_int_key", "{1u: 1.0, 2: 2.0, 3u: 3.0}[1]", 1.0),
            ("map_field_access", "x.name", bound(1024, x={"name": 1024})),
            ("map_no_such_key", "{0:1,2:2,5:3}[1]", ERROR),
            ("map_field_select_no_such_key", "x.name", bound(ERROR, x={"holiday": "field"})),
            ("map_value_null", "{true:null}[true]", None),
            ("map_value_bool", "{27:false}[27]", False),
            ("map_value_string", "{'n':'x'}['n']", "x"),
            ("map_value_float", "{3:15.15}[3]", 15.15),
            ("map_value_uint64", "{0u:1u,2u:2u,5u:3u}[0u]", U(1)),
            ("map_value_int64", "{true:1,false:2}[true]", 1),
            ("map_value_bytes", '{0:b""}[0]', b""),
            ("map_value_list", "{0u:[1]}[0u]", [1]),
            ("map_value_map", '{"map": {"k": "v"}}["map"]', {"k": "v"}),
            ("map_value_mix_type", '{"map": {"k": "v"}, "list": [1]}["map"]', {"k": "v"}),
        ],
        "map_has": [
            ("has", "has({'a': 1, 'b': 2}.a)", True),
            ("has_not", "has({'a': 1, 'b': 2}.c)", False),
            ("has_empty", "has({}.a)", False),
        ],
        "qualified_identifier_resolution": [
            ("int64_field_select_unsupported", "a.pancakes", unchecked(bound(ERROR, a=15))),
            ("map_key_float", "{3.3:15.15, 1.0: 5}[1.0]", unchecked(ERROR)),
            ("map_key_null", "{null:false}[null]", unchecked(ERROR)),
            ("map_value_repeat_key", "{true:1,false:2,true:3}[true]", ERROR),
            ("map_value_repeat_key_heterogeneous", "{0: 1, 0u: 2}[0.0]", ERROR),
        ],
        "in": [
            ("empty", "7 in {}", False),
            ("singleton", "true in {true: 1}", True),
            (
                "present",
                "'George' in {'John': 'smart', 'Paul': 'cute', 'George': 'quiet', 'Ringo': 'funny'}",
                True,
            ),
            ("absent", "'spider' in {'ant': 6, 'fly': 6, 'centipede': 100}", False),
            (
                "mixed_numbers_and_keys_present",
                "3.0 in {1: 1, 2: 2, 3u: 3} && 2u in {1u: 1, 2: 2} && 1 in {1u: 1, 2: 2}",
                True,
            ),
            ("mixed_numbers_and_keys_absent", "3.1 in {1: 1, 2: 2, 3u: 3}", False),
        ],
    },
)

MACROS = spec_file(
    "macros",
    {
        "exists": [
            ("list_elem_all_true", "[1, 2, 3].exists(e, e > 0)", True),
            ("list_elem_some_true", "[1, 2, 3].exists(e, e == 2)", True),
            ("list_elem_none_true", "[1, 2, 3].exists(e, e > 3)", False),
            ("list_elem_type_shortcircuit", "[1, 'foo', 3].exists(e, e != '1')", True),
            ("list_elem_type_exhaustive", "[1, 'foo', 3].exists(e, e == '10')", False),
            ("list_elem_exists_error", "[1, 2, 3].exists(e, e / 0 == 17)", ERROR),
            ("list_empty", "[].exists(e, e == 2)", False),
            ("map_key", "{'key1':1, 'key2':2}.exists(k, k == 'key2')", True),
            ("not_map_key", "!{'key1':1, 'key2':2}.exists(k, k == 'key3')", True),
            ("map_key_type_shortcircuit", "{'key':1, 1:21}.exists(k, k != 2)", True),
            ("map_key_type_exhaustive", "!{'key':1, 1:42}.exists(k, k == 2)", True),
        ],
        "all": [
            ("list_elem_all_true", "[1, 2, 3].all(e, e > 0)", True),
            ("list_elem_some_true", "[1, 2, 3].all(e, e == 2)", False),
            ("list_elem_none_true", "[1, 2, 3].all(e, e == 17)", False),
            ("list_elem_type_shortcircuit", "[1, 'foo', 3].all(e, e == 1)", False),
            ("list_elem_type_exhaustive", "[1, 'foo', 3].all(e, e % 2 == 1)", ERROR),
            ("list_elem_error_shortcircuit", "[1, 2, 3].all(e, 6 / (2 - e) == 6)", False),
            ("list_elem_error_exhaustive", "[1, 2, 3].all(e, e / 0 != 17)", ERROR),
            ("list_empty", "[].all(e, e > 0)", True),
            ("map_key", "{'key1':1, 'key2':2}.all(k, k == 'key2')", False),
        ],
        "exists_one": [
            ("list_empty", "[].exists_one(a, a == 7)", False),
            ("list_one_true", "[7].exists_one(a, a == 7)", True),
            ("list_one_false", "[8].exists_one(a, a == 7)", False),
            ("list_none", "[1, 2, 3].exists_one(x, x > 20)", False),
            ("list_one", "[6, 7, 8].exists_one(foo, foo % 5 == 2)", True),
            ("list_many", "[0, 1, 2, 3, 4].exists_one(n, n % 2 == 1)", False),
            ("list_all", "['foal', 'foo', 'four'].exists_one(n, n.startsWith('fo'))", False),
            ("list_no_shortcircuit", "[3, 2, 1, 0].exists_one(n, 12 / n > 1)", ERROR),
            ("map_one", "{6: 'six', 7: 'seven', 8: 'eight'}.exists_one(foo, foo % 5 == 2)", True),
        ],
        "map": [
            ("list_empty", "[].map(n, n / 2)", []),
            ("list_one", "[3].map(n, n * n)", [9]),
            ("list_many", "[2, 4, 6].map(n, n / 2)", [1, 2, 3]),
            ("list_error", "[2, 1, 0].map(n, 4 / n)", ERROR),
        ],
        "filter": [
            ("list_empty", "[].filter(n, n % 2 == 0)", []),
            ("list_one_true", "[2].filter(n, n == 2)", [2]),
            ("list_one_false", "[1].filter(n, n > 3)", []),
            ("list_none", "[1, 2, 3].filter(e, e > 3)", []),
            ("list_some", "[0, 1, 2, 3, 4].filter(x, x % 2 == 1)", [1, 3]),
            ("list_all", "[1, 2, 3].filter(n, n > 0)", [1, 2, 3]),
            ("list_no_shortcircuit", "[3, 2, 1, 0].filter(n, 12 / n > 4)", ERROR),
        ],
        "nested": [
            ("filter_all", "['signer'].filter(signer, ['artifact'].all(artifact, true))", ["signer"]),
            ("all_all", "['signer'].all(signer, ['artifact'].all(artifact, true))", True),
        ],
    },
)

BINDINGS_EXT = spec_file(
    "bindings_ext",
    {
        "bind": [
            ("boolean_literal", "cel.bind(t, true, t)", True),
            ("string_concat", 'cel.bind(msg, "hello", msg + msg + msg)', "hellohellohello"),
            ("bind_nested", "cel.bind(t1, true, cel.bind(t2, true, t1 && t2))", True),
            ("macro_exists", "cel.bind(valid_elems, [1, 2, 3], [3, 4, 5].exists(e, e in valid_elems))", True),
            (
                "macro_not_exists",
                "cel.bind(valid_elems, [1, 2, 3], ![4, 5].exists(e, e in valid_elems))",
                True,
            ),
        ],
    },
)

CASES = [*LISTS, *FIELDS, *MACROS, *BINDINGS_EXT]
