# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Compiling the operators: ``?:``, chains of ``||`` / ``&&`` (commutative over errors), the
relations ``== != < <= > >= in``, arithmetic and the unary ``!`` and ``-``."""

from __future__ import annotations

from collections.abc import Callable
from operator import ge, gt, le, lt
from typing import Any, Final

import lark

from deckhouse_gpu.k8s_semantics.cel.compiler.compile_base import CompilerBase, unwrap
from deckhouse_gpu.k8s_semantics.cel.compiler.comprehensions import decide
from deckhouse_gpu.k8s_semantics.cel.compiler.costs import compare_cost, concat_cost
from deckhouse_gpu.k8s_semantics.cel.compiler.typecheck import (
    ARITHMETIC_TYPES,
    DYN,
    NUMERIC_TYPES,
    ORDERED_TYPES,
    compatible,
    no_matching,
    type_kind,
    unify,
)
from deckhouse_gpu.k8s_semantics.cel.library.operators import (
    add_values,
    compare,
    divide,
    int64,
    modulo,
    multiply,
    subtract,
    values_equal,
)
from deckhouse_gpu.k8s_semantics.cel.nodes import Fn, Frame, Node, typed
from deckhouse_gpu.k8s_semantics.cel.selection import is_member
from deckhouse_gpu.k8s_semantics.cel.values import Uint, no_overload

_OPERATOR_NAMES: Final = {
    "relation_eq": "_==_",
    "relation_ne": "_!=_",
    "relation_lt": "_<_",
    "relation_le": "_<=_",
    "relation_gt": "_>_",
    "relation_ge": "_>=_",
    "relation_in": "@in",
    "addition_add": "_+_",
    "addition_sub": "_-_",
    "multiplication_mul": "_*_",
    "multiplication_div": "_/_",
    "multiplication_mod": "_%_",
}


class OperatorCompiler(CompilerBase):
    """The visitors of the operators."""

    def visit_expr(self, tree: lark.Tree[Any]) -> Node:
        if len(tree.children) == 1:
            return self._single(tree)
        cond_node, then_node, other_node = (self.compile(c) for c in tree.children)
        cond = self._bool_operand("_?_:_", cond_node)
        then, other = then_node.fn, other_node.fn

        def ternary(fr: Frame) -> Any:
            test = cond(fr)
            if test is True:
                return then(fr)
            if test is False:
                return other(fr)
            raise no_overload("_?_:_", test)

        return Node(ternary, static=then_node.type if then_node.type == other_node.type else DYN)

    def visit_conditionalor(self, tree: lark.Tree[Any]) -> Node:
        return self._logical_chain(tree, is_or=True)

    def visit_conditionaland(self, tree: lark.Tree[Any]) -> Node:
        return self._logical_chain(tree, is_or=False)

    def _logical_chain(self, tree: lark.Tree[Any], is_or: bool) -> Node:
        """``a || b || c`` as one node: the grammar nests a chain leftwards, one level per operand."""
        operands = []
        node: Any = tree
        while isinstance(node, lark.Tree) and node.data == tree.data and len(node.children) == 2:
            operands.append(node.children[1])
            node = unwrap(node.children[0])
        operands.append(node)
        name = "_||_" if is_or else "_&&_"
        fns = [self._bool_operand(name, self.compile(operand)) for operand in reversed(operands)]
        return Node(_logical(fns, is_or), static="bool")

    def visit_relation(self, tree: lark.Tree[Any]) -> Node:
        if len(tree.children) == 1:
            return self._single(tree)
        operator_tree, right_tree = tree.children
        operator = str(operator_tree.data)
        left, right = self.compile(operator_tree.children[0]), self.compile(right_tree)
        name, types = _OPERATOR_NAMES[operator], (left.type, right.type)
        if DYN not in types:
            if operator in ("relation_eq", "relation_ne") and not compatible(*types):
                raise no_matching(name, *types)
            if operator == "relation_in" and type_kind(right.type) not in ("list", "map"):
                raise no_matching(name, *types)
            if operator in _ORDERING and not (
                (left.type in NUMERIC_TYPES and right.type in NUMERIC_TYPES)
                or (left.type == right.type and left.type in ORDERED_TYPES)
            ):
                raise no_matching(name, *types)
        return typed(_relation_node(operator, left, right), "bool")

    def _arithmetic(self, tree: lark.Tree[Any]) -> Node:
        if len(tree.children) == 1:
            return self._single(tree)
        operator_tree, right_tree = tree.children
        operator = str(operator_tree.data)
        left, right = self.compile(operator_tree.children[0]), self.compile(right_tree)
        shared = unify(left.type, right.type)
        if DYN not in (left.type, right.type) and (
            shared is None or type_kind(shared) not in ARITHMETIC_TYPES[operator]
        ):
            raise no_matching(_OPERATOR_NAMES[operator], left.type, right.type)
        static = DYN if shared is None else shared
        a_fn, b_fn = left.fn, right.fn
        if operator == "addition_add":

            def add(fr: Frame) -> Any:
                a, b = a_fn(fr), b_fn(fr)
                fr.cost += concat_cost(a, b)
                return add_values(a, b)

            return Node(add, static=static)
        apply = {
            "addition_sub": subtract,
            "multiplication_mul": multiply,
            "multiplication_div": divide,
            "multiplication_mod": modulo,
        }[operator]

        def arithmetic(fr: Frame) -> Any:
            a, b = a_fn(fr), b_fn(fr)
            fr.cost += 1
            return apply(a, b)

        return Node(arithmetic, static=static)

    visit_addition = visit_multiplication = _arithmetic

    def visit_unary(self, tree: lark.Tree[Any]) -> Node:
        if len(tree.children) == 1:
            return self._single(tree)
        operator, operand_tree = tree.children
        operand_node = self.compile(operand_tree)
        operand = operand_node.fn
        if operator.data == "unary_not":
            self._bool_operand("!_", operand_node)

            def logical_not(fr: Frame) -> Any:
                value = operand(fr)
                fr.cost += 1
                if type(value) is not bool:
                    raise no_overload("!_", value)
                return not value

            return Node(logical_not, static="bool")
        if operand_node.type not in (DYN, "int", "double"):
            raise no_matching("-_", operand_node.type)

        def negate(fr: Frame) -> Any:
            value = operand(fr)
            fr.cost += 1
            if type(value) is int:
                return int64(-value, "-_")
            if type(value) is float:
                return -value
            raise no_overload("-_", value)

        return Node(negate, static=operand_node.type)


def _logical(operands: list[Fn], is_or: bool) -> Fn:
    """``||`` (``is_or``) or ``&&`` over operands left to right, commutative over errors as in CEL:
    a decisive operand (true for ``||``, false for ``&&``) wins over an error on either side."""
    decisive = is_or
    name = "_||_" if is_or else "_&&_"

    def logical(fr: Frame) -> Any:
        return decide(fr, operands, decisive, name)

    return logical


def _relation_node(operator: str, left: Node, right: Node) -> Node:
    a_fn, b_fn = left.fn, right.fn
    if operator in ("relation_eq", "relation_ne"):
        negate = operator == "relation_ne"
        if right.constant and type(right.value) is str:
            constant, extra = right.value, right.cost

            def equals_string(fr: Frame) -> Any:
                a = a_fn(fr)
                fr.cost += extra + 1
                result = a == constant if type(a) is str else values_equal(a, constant)
                return result is not negate

            return Node(equals_string)

        def equals(fr: Frame) -> Any:
            a, b = a_fn(fr), b_fn(fr)
            fr.cost += compare_cost(a, b)
            return values_equal(a, b) is not negate

        return Node(equals)
    if operator == "relation_in":
        return _membership(left, right)
    exact, test, name = _ORDERING[operator]

    def ordering(fr: Frame) -> Any:
        a, b = a_fn(fr), b_fn(fr)
        fr.cost += compare_cost(a, b)
        kind = type(a)
        if kind is type(b) and kind in _EXACT:  # the common case, compared directly
            return exact(a, b)
        return test(compare(name, a, b))

    return Node(ordering)


# Types whose values of one type Python orders as CEL does (no NaN, no conversion).
_EXACT: Final = frozenset({int, Uint, str, bytes, bool})
# Per ordering operator: Python's operator, the test of ``compare``'s -1, 0 or 1, the CEL name.
_ORDERING: Final[dict[str, tuple[Callable[[Any, Any], bool], Callable[[int], bool], str]]] = {
    "relation_lt": (lt, lambda c: c < 0, "_<_"),
    "relation_le": (le, lambda c: c <= 0, "_<=_"),
    "relation_gt": (gt, lambda c: c > 0, "_>_"),
    "relation_ge": (ge, lambda c: c >= 0, "_>=_"),
}


def _membership(item: Node, container: Node) -> Node:
    item_fn, container_fn = item.fn, container.fn
    if container.constant and type(container.value) is list and all(type(v) is str for v in container.value):
        strings, extra = frozenset(container.value), container.cost + len(container.value)

        def in_strings(fr: Frame) -> Any:
            value = item_fn(fr)
            fr.cost += extra
            return value in strings if type(value) is str else is_member(value, container.value)

        return Node(in_strings)

    def contained(fr: Frame) -> Any:
        value, where = item_fn(fr), container_fn(fr)
        fr.cost += len(where) if type(where) is list else 1
        return is_member(value, where)

    return Node(contained)
