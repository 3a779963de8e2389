# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Compiling calls and macros: global functions and methods (folded where pure and constant),
``has()``, ``cel.bind`` and the comprehension macros."""

from __future__ import annotations

from typing import Any, Final

import lark

from deckhouse_gpu.k8s_semantics.cel.compiler.compile_base import (
    CompilerBase,
    expression_list,
    ident_name,
    unwrap,
)
from deckhouse_gpu.k8s_semantics.cel.compiler.comprehensions import LOOPS, comprehension_fn, restore_variable
from deckhouse_gpu.k8s_semantics.cel.compiler.costs import ITERATION_COST
from deckhouse_gpu.k8s_semantics.cel.compiler.typecheck import (
    DEVICE_TYPE,
    DYN,
    RESULT_TYPES,
    StaticType,
    element_type,
    range_type,
    type_kind,
    type_text,
)
from deckhouse_gpu.k8s_semantics.cel.errors import CompileError, EvalError
from deckhouse_gpu.k8s_semantics.cel.library.functions import (
    FOLDABLE,
    GLOBALS,
    METHODS,
    NAMESPACES,
    CostFn,
    Impl,
)
from deckhouse_gpu.k8s_semantics.cel.nodes import UNSET, Fn, Frame, Node, constant_node, typed
from deckhouse_gpu.k8s_semantics.cel.selection import field_present


class CallCompiler(CompilerBase):
    """The visitors of calls, ``has()``, ``cel.bind`` and comprehensions."""

    def visit_member_dot_arg(self, tree: lark.Tree[Any]) -> Node:
        target_tree, name = tree.children[0], str(tree.children[1])
        args = expression_list(tree, 2)
        namespace = ident_name(target_tree)
        if namespace is not None and self._local(namespace) is None and namespace != "device":
            if namespace == "cel" and name == "bind":
                self.functions.add("cel.bind")
                return self._bind(args)
            if namespace in NAMESPACES:
                return self._call_global(f"{namespace}.{name}", args)
        if name in ITERATION_COST and len(args) >= 2 and ident_name(args[0]) is not None:
            self.functions.add(name)
            return self._comprehension(name, target_tree, args)
        self.functions.add(name)
        entry = METHODS.get(name)
        if entry is None:
            raise CompileError(f"undeclared reference to '{name}'")
        impl, counts, cost_fn = entry
        if len(args) not in counts:
            raise CompileError(f"found no matching overload for '{name}' with {len(args)} argument(s)")
        target = self.compile(target_tree).fn
        node = _call([target, *(self.compile(a).fn for a in args)], impl, cost_fn)
        return typed(node, RESULT_TYPES.get(name, DYN))

    def visit_ident_arg(self, tree: lark.Tree[Any]) -> Node:
        name, args = str(tree.children[0]), expression_list(tree, 1)
        if name == "has":
            self.functions.add(name)
            return self._has(args)
        return self._call_global(name, args)

    def visit_dot_ident_arg(self, tree: lark.Tree[Any]) -> Node:
        return self._call_global(str(tree.children[0]), expression_list(tree, 1))

    # -- calls and macros --

    def _call_global(self, name: str, arg_trees: list[Any]) -> Node:
        self.functions.add(name)
        entry = GLOBALS.get(name)
        if entry is None:
            raise CompileError(f"undeclared reference to '{name}'")
        impl, counts, cost_fn = entry
        if len(arg_trees) not in counts:
            raise CompileError(f"found no matching overload for '{name}' with {len(arg_trees)} argument(s)")
        args = [self.compile(a) for a in arg_trees]
        if name in FOLDABLE and all(a.constant for a in args):
            try:
                return constant_node(impl(*(a.value for a in args)), 1 + sum(a.cost for a in args))
            except EvalError:
                pass  # fails when evaluated, as upstream
        static = args[0].type if name == "dyn" else RESULT_TYPES.get(name, DYN)
        return typed(_call([a.fn for a in args], impl, cost_fn), DYN if name == "dyn" else static)

    def _has(self, arg_trees: list[Any]) -> Node:
        select = unwrap(arg_trees[0]) if len(arg_trees) == 1 else None
        if not isinstance(select, lark.Tree) or select.data != "member_dot":
            raise CompileError("invalid argument to has() macro")
        target_tree, name = select.children[0], str(select.children[1])
        domain = self._domain_read(target_tree)
        if self._is_device(target_tree):
            self._device_field(name)
            whole = self.reads_whole
            target_node = self.compile(target_tree)
            self.reads_whole = whole  # of ``device`` itself, only whether the field is there is read
        elif domain is not None:  # the presence of one id: a read of its value or of its absence
            target_node = self._compile_read(target_tree, (*domain, name))
        else:
            target_node = self.compile(target_tree)
        if target_node.type not in (DYN, DEVICE_TYPE):
            self._selectable(target_node, name)
        target = target_node.fn

        def has(fr: Frame) -> Any:
            value = target(fr)
            fr.cost += 1
            return field_present(value, name)

        return Node(has, static="bool")

    def _bind(self, arg_trees: list[Any]) -> Node:
        name = ident_name(arg_trees[0]) if len(arg_trees) == 3 else None
        if name is None:
            raise CompileError("cel.bind() takes a variable name, a value and an expression")
        init_node = self.compile(arg_trees[1])
        self.scope.append((name, init_node.type))
        body_node = self.compile(arg_trees[2])
        self.scope.pop()
        self.binds_variables = True
        init, body = init_node.fn, body_node.fn

        def bind(fr: Frame) -> Any:
            saved = fr.vars.get(name, UNSET)
            fr.vars[name] = init(fr)
            try:
                return body(fr)
            finally:
                restore_variable(fr.vars, name, saved)

        return Node(bind, static=body_node.type)

    def _comprehension(self, macro: str, target_tree: Any, arg_trees: list[Any]) -> Node:
        two = macro.startswith("transform") or (len(arg_trees) == 3 and macro in _TWO_VARIABLE)
        count = 2 if two else 1
        names = [ident_name(a) for a in arg_trees[:count]]
        allowed = (3, 4) if macro.startswith("transform") else (2, 3) if macro == "map" else (count + 1,)
        if None in names or len(arg_trees) not in allowed:
            raise CompileError(f"invalid arguments to the {macro}() macro")
        target_node = self.compile(target_tree)
        if target_node.type != DYN and type_kind(target_node.type) not in ("list", "map"):
            raise CompileError(f"{macro}() cannot range over {type_text(target_node.type)}")
        container = target_node.type
        if two:
            first = "int" if type_kind(container) == "list" else range_type(container)
            variables = [(names[0] or "", first), (names[1] or "", element_type(container))]
        else:
            variables = [(names[0] or "", range_type(container))]
        self.scope.extend(variables)
        bodies = [self.compile(a) for a in arg_trees[count:]]
        del self.scope[-count:]
        self.binds_variables = True
        function = comprehension_fn(
            macro, target_node.fn, [n for n, _ in variables], [b.fn for b in bodies], LOOPS[macro], two
        )
        if macro in ("map", "transformList"):
            static: StaticType = ("list", bodies[-1].type)
        elif macro == "filter":
            static = container if type_kind(container) == "list" else ("list", range_type(container))
        elif macro == "transformMap":
            static = ("map", variables[0][1], bodies[-1].type)
        else:
            static = "bool"
        return Node(function, static=static)


_TWO_VARIABLE: Final = frozenset({"all", "exists", "existsOne"})


def _call(fns: list[Fn], impl: Impl, cost_fn: CostFn) -> Node:
    """A function call; ``fns`` are the receiver (for a method) and the arguments."""
    if len(fns) == 1 and cost_fn is None:
        (only,) = fns

        def call1(fr: Frame) -> Any:
            value = only(fr)
            fr.cost += 1
            return impl(value)

        return Node(call1)
    if len(fns) == 2 and cost_fn is None:
        first, second = fns

        def call2(fr: Frame) -> Any:
            a, b = first(fr), second(fr)
            fr.cost += 1
            return impl(a, b)

        return Node(call2)

    def call(fr: Frame) -> Any:
        values = [fn(fr) for fn in fns]
        fr.cost += 1 + (cost_fn(*values) if cost_fn is not None else 0)
        return impl(*values)

    return Node(call)
