# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What compiled code is made of: the evaluation frame, the closures that take it, and compiled
nodes with their static type and, for a constant (folded) subexpression, its value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from deckhouse_gpu.k8s_semantics.cel.compiler.typecheck import DYN, StaticType, type_of_value


class Frame:
    """One evaluation: the variables in scope and the cost so far."""

    __slots__ = ("cost", "limit", "vars")

    def __init__(self, variables: dict[str, Any], limit: int) -> None:
        self.vars = variables
        self.cost = 0
        self.limit = limit


Fn = Callable[[Frame], Any]
UNSET: Final = object()


class Node:
    """A compiled subexpression: its closure, static type, and ``value`` when constant (folded)."""

    __slots__ = ("cost", "fn", "type", "value")

    def __init__(self, fn: Fn, value: Any = UNSET, cost: int = 0, static: StaticType = DYN) -> None:
        self.fn, self.value, self.cost, self.type = fn, value, cost, static

    @property
    def constant(self) -> bool:
        return self.value is not UNSET


def typed(node: Node, static: StaticType) -> Node:
    node.type = static
    return node


def constant_node(value: Any, cost: int = 0) -> Node:
    static = type_of_value(value)
    if cost == 0:

        def literal(fr: Frame) -> Any:
            return value

        return Node(literal, value, 0, static)

    def folded(fr: Frame) -> Any:
        fr.cost += cost
        return value

    return Node(folded, value, cost, static)
