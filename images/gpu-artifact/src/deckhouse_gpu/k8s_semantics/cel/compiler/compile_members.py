# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Compiling members and primaries: field selection (``device``'s fields resolved at compile time),
indexing, variables, type names, literals, and list and map construction."""

from __future__ import annotations

from typing import Any, cast

import lark

from deckhouse_gpu.k8s_semantics.cel.compiler.compile_base import (
    CompilerBase,
    expression_list,
    string_literal,
    unwrap,
)
from deckhouse_gpu.k8s_semantics.cel.compiler.literals import literal_value
from deckhouse_gpu.k8s_semantics.cel.compiler.typecheck import (
    DEVICE_TYPE,
    DYN,
    FIELD_TYPES,
    common_type,
    element_type,
    no_matching,
    type_kind,
    type_text,
)
from deckhouse_gpu.k8s_semantics.cel.errors import CompileError, EvalError
from deckhouse_gpu.k8s_semantics.cel.nodes import Frame, Node, constant_node
from deckhouse_gpu.k8s_semantics.cel.selection import index_value, select_field
from deckhouse_gpu.k8s_semantics.cel.values import EMPTY_MAP, TYPE_IDENTS, DomainMap, map_key


class MemberCompiler(CompilerBase):
    """The visitors of members, variables and literals."""

    def visit_member_dot(self, tree: lark.Tree[Any]) -> Node:
        target_tree, name_token = tree.children
        name = str(name_token)
        if self._is_device(target_tree):
            self._device_field(name)

            def device_field(fr: Frame) -> Any:
                fr.cost += 2  # the variable and the field
                try:
                    return fr.vars["device"][name]
                except KeyError:  # a view built without the consumable-capacity field
                    raise EvalError(f"no such field: {name}") from None

            return Node(device_field, static=FIELD_TYPES[name])
        domain = self._domain_read(target_tree)
        if domain is not None:
            target_node = self._compile_read(target_tree, (*domain, name))
        else:
            target_node = self.compile(target_tree)
        static = self._selectable(target_node, name)
        target = target_node.fn

        def select(fr: Frame) -> Any:
            value = target(fr)
            fr.cost += 1
            return select_field(value, name)

        return Node(select, static=static)

    def visit_member_index(self, tree: lark.Tree[Any]) -> Node:
        target_tree, key_tree = tree.children
        domain, name = self._domain_read(target_tree), string_literal(unwrap(key_tree))
        if domain is not None and name is not None:
            target_node = self._compile_read(target_tree, (*domain, name))
        else:
            target_node = self.compile(target_tree)
        key = self.compile(key_tree)
        if target_node.type != DYN and type_kind(target_node.type) not in ("list", "map"):
            raise no_matching("_[_]", target_node.type, key.type)
        static, target = element_type(target_node.type), target_node.fn
        if key.constant and type(key.value) is str:
            constant_key = key.value

            def index_by_string(fr: Frame) -> Any:
                value = target(fr)
                fr.cost += 1
                if type(value) is DomainMap:
                    return value.get(constant_key, EMPTY_MAP)
                return index_value(value, constant_key)

            return Node(index_by_string, static=static)
        key_fn = key.fn

        def index(fr: Frame) -> Any:
            value, k = target(fr), key_fn(fr)
            fr.cost += 1
            return index_value(value, k)

        return Node(index, static=static)

    def visit_member_object(self, tree: lark.Tree[Any]) -> Node:
        raise CompileError("message construction is not supported")

    # -- primaries --

    def visit_literal(self, tree: lark.Tree[Any]) -> Node:
        return constant_node(literal_value(cast(lark.Token, tree.children[0])))

    def visit_ident(self, tree: lark.Tree[Any]) -> Node:
        return self._variable(str(tree.children[0]), local=True)

    def visit_dot_ident(self, tree: lark.Tree[Any]) -> Node:
        return self._variable(str(tree.children[0]), local=False)

    def _variable(self, name: str, local: bool) -> Node:
        static = self._local(name) if local else None
        if static is None and name == "device" and self.declares_device:
            self.reads_whole = True  # ``device`` as a value: anything of it may be read
        if static is not None or (name == "device" and self.declares_device):

            def variable(fr: Frame) -> Any:
                fr.cost += 1
                return fr.vars[name]

            return Node(variable, static=DEVICE_TYPE if static is None else static)
        if name in TYPE_IDENTS:
            return constant_node(TYPE_IDENTS[name])
        raise CompileError(f"undeclared reference to '{name}'")

    def visit_list_lit(self, tree: lark.Tree[Any]) -> Node:
        items = [self.compile(item) for item in expression_list(tree, 0)]
        if all(item.constant for item in items):
            return constant_node([item.value for item in items], 10 + sum(item.cost for item in items))
        fns = [item.fn for item in items]

        def make_list(fr: Frame) -> Any:
            values = [fn(fr) for fn in fns]
            fr.cost += 10
            return values

        return Node(make_list, static=("list", common_type([item.type for item in items])))

    def visit_map_lit(self, tree: lark.Tree[Any]) -> Node:
        nodes = [self.compile(part) for part in expression_list(tree, 0)]
        keys, values = nodes[0::2], nodes[1::2]
        for key in keys:
            if key.type not in (DYN, "string", "int", "uint", "bool"):
                raise CompileError(f"unsupported map key type: {type_text(key.type)}")
        pairs = [(k.fn, v.fn) for k, v in zip(keys, values, strict=True)]

        def make_map(fr: Frame) -> Any:
            result: dict[Any, Any] = {}
            for key_fn, value_fn in pairs:
                key = key_fn(fr)
                if type(key) is float:
                    raise EvalError("unsupported map key type: double")
                normal = map_key(key)
                if normal in result:
                    raise EvalError(f"duplicate map key: {key!r}")
                result[normal] = value_fn(fr)
            fr.cost += 30
            return result

        static = ("map", common_type([k.type for k in keys]), common_type([v.type for v in values]))
        return Node(make_map, static=static)
