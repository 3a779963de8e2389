# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The compiler: an expression is parsed by cel-python's CEL grammar (``celpy.celparser``, an LALR
parser) and its tree compiled into a tree of Python closures, once per expression text; calls of
pure functions on constants, such as ``quantity("10Gi")``, are folded at compile time."""

from __future__ import annotations

from collections.abc import Iterable

import lark
from celpy.celparser import CELParseError, CELParser

from deckhouse_gpu.k8s_semantics.cel.compiler.compile_calls import CallCompiler
from deckhouse_gpu.k8s_semantics.cel.compiler.compile_members import MemberCompiler
from deckhouse_gpu.k8s_semantics.cel.compiler.compile_operators import OperatorCompiler
from deckhouse_gpu.k8s_semantics.cel.compiler.typecheck import DYN, type_text
from deckhouse_gpu.k8s_semantics.cel.errors import CompileError, selector_error
from deckhouse_gpu.k8s_semantics.cel.nodes import Node


class Compiler(OperatorCompiler, MemberCompiler, CallCompiler):
    """Compiles one parse tree; records the functions called and the ``device`` fields selected."""


def compile_tree(
    expression: str, consumable_capacity: bool, variables: Iterable[str] = (), device: bool = True
) -> tuple[Node, Compiler]:
    """The root node of ``expression``, of any type, and the compiler that built it; SelectorError if
    it fails. ``variables`` are declared with type dyn; ``device`` declares the ``device`` variable."""
    try:
        tree = CELParser().parse(expression)
    except CELParseError as error:
        where = f"line {error.line}, column {error.column}" if error.line else "the end"
        raise selector_error(expression, f"syntax error at {where}") from None
    except lark.exceptions.LarkError as error:
        raise selector_error(expression, f"syntax error: {type(error).__name__}") from None
    compiler = Compiler(consumable_capacity, variables, device)
    try:
        root = compiler.compile(tree)
    except CompileError as error:
        raise selector_error(expression, f"compilation failed: {error}") from None
    except RecursionError:
        raise selector_error(expression, "compilation failed: the expression is nested too deeply") from None
    return root, compiler


def compile_expression(expression: str, consumable_capacity: bool) -> tuple[Node, Compiler]:
    """The root node of the selector ``expression`` and the compiler that built it; SelectorError if
    it fails or its type is known and not bool."""
    root, compiler = compile_tree(expression, consumable_capacity)
    if root.type not in (DYN, "bool"):
        raise selector_error(
            expression, f"compilation failed: must evaluate to bool, not {type_text(root.type)}"
        )
    return root, compiler
