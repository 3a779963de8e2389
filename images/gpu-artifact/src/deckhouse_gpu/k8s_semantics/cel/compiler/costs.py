# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Runtime cost, modelled on cel-go's cost tracker and enforced against ``MAX_COST``.

Each variable, field selection, index, ``has()`` and function or operator call costs 1; ``&&``,
``||``, ``?:`` and literals cost 0; a list literal 10 and a map literal 30. Size-dependent calls cost
what cel-go charges: ``in`` on a list its length, string and list ``+`` 0.1 per element or
character, ``==`` and ordering of strings 0.1 per character of the shorter, ``contains`` and
``matches`` the product of both lengths' factors; the strings, regex, lists and sets extensions 1
plus 0.1 per character or 1 per element of their receiver. A comprehension adds a fixed cost per
iteration for its hidden accumulator (3 for ``all``/``exists``, 2 for ``exists_one``, 12 for
``map``/``filter``/``transform*``). The figure may differ from cel-go's by a few units per node; the
limit is checked after every comprehension iteration and at the end, so a runaway expression stops
early. The estimated (static) cost check that the API server applies to new expressions is not done.
"""

from __future__ import annotations

import math
from typing import Any, Final

from deckhouse_gpu.k8s_semantics.cel.values import MAPS


def size_of(value: Any) -> int:
    kind = type(value)
    if kind is str or kind is bytes or kind is list or kind in MAPS:
        return len(value)
    return 1


def _traversal(size: int) -> int:
    """cel-go's ``ceil(size * StringTraversalCostFactor)``."""
    return (size + 9) // 10


def compare_cost(left: Any, right: Any) -> int:
    kind = type(left)
    if (kind is str or kind is bytes) and type(right) is kind:
        return max(1, _traversal(min(len(left), len(right))))
    return 1


def concat_cost(left: Any, right: Any) -> int:
    kind = type(left)
    if (kind is str or kind is bytes or kind is list) and type(right) is kind:
        return max(1, _traversal(len(left) + len(right)))
    return 1


def receiver_cost(target: Any, *_: Any) -> int:
    """The strings/lists extensions: a pass over the receiver."""
    kind = type(target)
    if kind is list:
        return len(target)
    if kind is str or kind is bytes:
        return _traversal(len(target))
    return 0


def contains_cost(text: Any, part: Any) -> int:
    return _traversal(size_of(text)) * _traversal(size_of(part)) - 1


def matches_cost(text: Any, pattern: Any) -> int:
    return _traversal(1 + size_of(text)) * math.ceil(size_of(pattern) * 0.25) - 1


def arg_cost(_: Any, part: Any) -> int:
    return max(0, _traversal(size_of(part)) - 1)


# Per-iteration cost of the accumulator a macro expands to in cel-go.
ITERATION_COST: Final = {
    "all": 3,
    "exists": 3,
    "exists_one": 2,
    "existsOne": 2,
    "map": 12,
    "filter": 12,
    "transformList": 12,
    "transformMap": 12,
}
