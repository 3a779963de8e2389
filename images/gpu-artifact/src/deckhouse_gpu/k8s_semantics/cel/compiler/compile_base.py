# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The compiler's core: dispatch over cel-python's parse tree (a ``lark.Tree``), the variables in
scope, and the checks that the operator, member and call compilers share.

Nesting: parentheses and chains of ``||`` / ``&&`` cost no depth; about 450 nested operators
(Python's recursion limit; cel-go's parser allows 250) fail to compile with "nested too deeply".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import lark

from deckhouse_gpu.k8s_semantics.cel.compiler.literals import literal_value
from deckhouse_gpu.k8s_semantics.cel.compiler.typecheck import (
    DYN,
    StaticType,
    element_type,
    no_matching,
    type_kind,
    type_text,
)
from deckhouse_gpu.k8s_semantics.cel.device_view import CONSUMABLE_FIELD, DEVICE_FIELDS
from deckhouse_gpu.k8s_semantics.cel.errors import CompileError
from deckhouse_gpu.k8s_semantics.cel.nodes import Fn, Node

# The names in cel-python's grammar (celpy/cel.lark, pinned by requirements) that the compilers rely
# on: rules (``tree.data``, dispatched on or read by position) and terminals (``token.type``).
# tests/k8s_semantics/cel/test_grammar.py holds the installed grammar to them, so that an upgrade that
# renames one fails there first.
GRAMMAR_RULES: Final = frozenset(
    {
        *("expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication"),
        *("relation_lt", "relation_le", "relation_gt", "relation_ge", "relation_eq", "relation_ne"),
        *("relation_in", "addition_add", "addition_sub"),
        *("multiplication_mul", "multiplication_div", "multiplication_mod", "unary", "unary_not"),
        *("unary_neg", "member", "member_dot", "member_dot_arg", "member_index", "member_object"),
        *("primary", "literal", "dot_ident_arg", "dot_ident", "ident_arg", "ident", "paren_expr"),
        *("list_lit", "map_lit", "exprlist", "mapinits"),
    }
)
GRAMMAR_TERMINALS: Final = frozenset(
    {"INT_LIT", "UINT_LIT", "FLOAT_LIT", "STRING_LIT", "MLSTRING_LIT", "BYTES_LIT", "BOOL_LIT", "NULL_LIT"}
    | {"IDENT"}
)

_WRAPPERS: Final = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member"}
)
_WRAPPERS_AND_PARENS: Final = _WRAPPERS | {"primary", "paren_expr"}
MAP_FIELDS: Final = ("attributes", "capacity")  # device fields that are maps of domain to map

DeviceRead = tuple[str, ...]  # ("driver",), ("allowMultipleAllocations",) or (field, domain, id)


def unwrap(tree: Any) -> Any:
    """The first node below single-child wrappers (and parentheses)."""
    while isinstance(tree, lark.Tree) and tree.data in _WRAPPERS_AND_PARENS and len(tree.children) == 1:
        tree = tree.children[0]
    return tree


def ident_name(tree: Any) -> str | None:
    node = unwrap(tree)
    if isinstance(node, lark.Tree) and node.data == "ident":
        return str(node.children[0])
    return None


def string_literal(tree: Any) -> str | None:
    """The value of a string literal (not bytes); None for anything else."""
    if not isinstance(tree, lark.Tree) or tree.data != "literal" or not tree.children:
        return None
    token = tree.children[0]
    if not isinstance(token, lark.Token) or token.type not in ("STRING_LIT", "MLSTRING_LIT"):
        return None
    value = literal_value(token)
    return value if isinstance(value, str) else None


def expression_list(tree: lark.Tree[Any], index: int) -> list[Any]:
    """The expressions of an optional ``exprlist`` child."""
    if len(tree.children) > index and isinstance(tree.children[index], lark.Tree):
        return list(tree.children[index].children)
    return []


class CompilerBase:
    """The state of one compilation; the visitors are in the subclasses that :class:`Compiler` joins."""

    def __init__(self, consumable_capacity: bool, variables: Iterable[str] = (), device: bool = True) -> None:
        self.device_fields = set(DEVICE_FIELDS) | ({CONSUMABLE_FIELD} if consumable_capacity else set())
        self.declares_device = device  # False for a closed expression (engine.compile_value)
        # Declared variables (of type dyn), then comprehension and bind variables, innermost last.
        self.scope: list[tuple[str, StaticType]] = [(name, DYN) for name in variables]
        self.functions: set[str] = set()
        self.selected_fields: set[str] = set()
        self.binds_variables = False
        # What the expression can read of ``device``: every ``device.<field>`` and every
        # ``device.attributes["<domain>"].<id>`` (or capacity, or ``[<id>]``) with literal names.
        # ``reads_whole`` when it may read more: ``device`` itself, or a map of attributes as a
        # whole (iterated, sized, tested with ``in`` or ``has()``). Then the result may depend on
        # anything of the device; otherwise only on these values (capacity counting groups
        # devices by them, k8s_semantics/allocator/selector_groups.py).
        self.device_reads: set[DeviceRead] = set()
        self.reads_whole = False
        self._in_read = 0  # compiling the ``device.attributes["<domain>"]`` of a recorded read

    def compile(self, tree: Any) -> Node:
        tree = unwrap(tree)  # iteratively: parentheses and precedence levels cost no recursion
        if isinstance(tree, lark.Token):
            raise CompileError(f"unexpected token {tree!s}")
        handler = getattr(self, f"visit_{tree.data}", None)
        if handler is None:
            raise CompileError(f"unsupported syntax: {tree.data}")
        node: Node = handler(tree)
        return node

    def _local(self, name: str) -> StaticType | None:
        for bound, static in reversed(self.scope):
            if bound == name:
                return static
        return None

    def _bool_operand(self, function: str, node: Node) -> Fn:
        if node.type not in (DYN, "bool"):
            raise no_matching(function, node.type)
        return node.fn

    # -- shared by the visitors --

    def _single(self, tree: lark.Tree[Any]) -> Node:
        return self.compile(tree.children[0])

    visit_primary = visit_member = visit_paren_expr = _single

    def _selectable(self, target: Node, name: str) -> StaticType:
        """The static type of ``target.name``; a compile error where it cannot be selected."""
        if target.type == DYN:
            return DYN
        if type_kind(target.type) == "map":
            return element_type(target.type)
        raise CompileError(f"type '{type_text(target.type)}' does not support field selection ('{name}')")

    def _device_field(self, name: str) -> None:
        if name not in self.device_fields:
            raise CompileError(f"undefined field '{name}' of device")
        self.selected_fields.add(name)
        if name not in MAP_FIELDS:
            self.device_reads.add((name,))
        elif not self._in_read:
            self.reads_whole = True

    def _domain_read(self, tree: Any) -> tuple[str, str] | None:
        """(field, domain) when ``tree`` is ``device.attributes["<domain>"]`` (or ``capacity``) with a
        string literal; the caller records the id it reads below and compiles ``tree`` in
        ``_reading``, so that this map of one domain does not count as read whole."""
        node = unwrap(tree)
        if not isinstance(node, lark.Tree) or node.data != "member_index":
            return None
        target, key = unwrap(node.children[0]), unwrap(node.children[1])
        if not isinstance(target, lark.Tree) or target.data != "member_dot":
            return None
        field = str(target.children[1])
        if field not in MAP_FIELDS or not self._is_device(target.children[0]):
            return None
        domain = string_literal(key)
        return None if domain is None else (field, domain)

    def _compile_read(self, tree: Any, read: DeviceRead) -> Node:
        self.device_reads.add(read)
        self._in_read += 1
        try:
            return self.compile(tree)
        finally:
            self._in_read -= 1

    def _is_device(self, tree: Any) -> bool:
        return self.declares_device and ident_name(tree) == "device" and self._local("device") is None
