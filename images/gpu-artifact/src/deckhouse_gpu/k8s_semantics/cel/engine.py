# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The engine's public face: :class:`SelectorEngine` compiles an expression once per text (a bounded
cache, shared by threads) into a :class:`CompiledSelector`, which evaluates it for a device.

An evaluation fails, with :class:`SelectorError`, on any CEL error, on a cost beyond
:data:`MAX_COST` and on a result that is not a bool, as the scheduler's does.

:func:`compile_value` compiles an expression that is not a selector, closed or over variables of
its own, into a :class:`CompiledExpression` that yields the CEL value; the conformance tests
(tests/k8s_semantics/cel/test_conformance.py) run the CEL specification's cases through it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any, Final

from deckhouse_gpu.k8s_semantics.cel.compiler.compile_base import DeviceRead
from deckhouse_gpu.k8s_semantics.cel.compiler.compiler import compile_expression, compile_tree
from deckhouse_gpu.k8s_semantics.cel.device_view import DeviceView
from deckhouse_gpu.k8s_semantics.cel.errors import (
    CostExceeded,
    EvalError,
    SelectorError,
    selector_error,
    shown,
)
from deckhouse_gpu.k8s_semantics.cel.nodes import Fn, Frame
from deckhouse_gpu.k8s_semantics.cel.values import type_name

MAX_EXPRESSION_BYTES: Final = 10 * 1024  # CELSelectorExpressionMaxLength
MAX_COST: Final = 1_000_000  # CELSelectorExpressionMaxCost, also the scheduler's runtime limit
CACHE_SIZE: Final = 4096  # compiled expressions kept per engine


class CompiledSelector:
    """One expression, compiled; :meth:`matches` evaluates it for a device."""

    __slots__ = ("_fn", "_private_scope", "device_fields", "device_reads", "expression", "functions")

    def __init__(
        self,
        expression: str,
        fn: Fn,
        private_scope: bool,
        functions: frozenset[str],
        fields: frozenset[str],
        reads: frozenset[DeviceRead] | None = None,
    ) -> None:
        self.expression = expression
        self._fn = fn
        self._private_scope = private_scope
        self.functions = functions  # every function, method and macro called
        self.device_fields = fields  # the fields selected on ``device``
        # The only values of ``device`` the result depends on (see ``CompilerBase.device_reads``);
        # None when it may depend on anything of the device.
        self.device_reads = reads

    def matches(self, device: DeviceView) -> bool:
        """True or False for the device; SelectorError where the scheduler gets an error."""
        if device._error is not None:
            raise selector_error(self.expression, f"device {device.name!r}: {device._error}")
        variables = dict(device._variables) if self._private_scope else device._variables
        result = _run(self.expression, self._fn, variables, device.name)
        if type(result) is not bool:
            raise selector_error(
                self.expression, f"device {device.name!r}: the result is {type_name(result)}, not bool"
            )
        return result

    def __repr__(self) -> str:
        return f"CompiledSelector({shown(self.expression)!r})"


def _run(expression: str, fn: Fn, variables: dict[str, Any], device: str | None) -> Any:
    """The value of a compiled expression; SelectorError on a CEL error or the cost limit, naming
    the device evaluated for, if any."""
    frame = Frame(variables, MAX_COST)
    try:
        result = fn(frame)
    except EvalError as error:
        raise selector_error(expression, f"{_for(device)}{error}") from None
    except CostExceeded:
        raise selector_error(expression, f"{_for(device)}{_COST_EXCEEDED}") from None
    except RecursionError:
        raise selector_error(expression, "expression nested too deeply to evaluate") from None
    except (ArithmeticError, LookupError, TypeError, ValueError) as error:  # not foreseen here
        raise selector_error(
            expression, f"{_for(device)}evaluation failed: {type(error).__name__}: {error}"
        ) from error
    if frame.cost > MAX_COST:
        raise selector_error(expression, f"{_for(device)}{_COST_EXCEEDED}")
    return result


_COST_EXCEEDED: Final = "operation cancelled: actual cost limit exceeded"


def _for(device: str | None) -> str:
    return "" if device is None else f"device {device!r}: "


class CompiledExpression:
    """An expression compiled by :func:`compile_value`: :meth:`evaluate` yields its CEL value (int,
    :class:`~deckhouse_gpu.k8s_semantics.cel.values.Uint`, float, str, bytes, bool, None, list, dict, ...)."""

    __slots__ = ("_fn", "expression", "variables")

    def __init__(self, expression: str, fn: Fn, variables: frozenset[str]) -> None:
        self.expression = expression
        self._fn = fn
        self.variables = variables

    def evaluate(self, bindings: Mapping[str, Any] | None = None) -> Any:
        """The value with ``bindings`` (CEL runtime values, by declared name); SelectorError on any
        evaluation error, as :meth:`CompiledSelector.matches` raises it."""
        variables = dict(bindings or {})
        missing = self.variables - variables.keys()
        if missing:
            raise selector_error(self.expression, f"no value bound to {', '.join(sorted(missing))}")
        return _run(self.expression, self._fn, variables, None)


def compile_value(expression: str, variables: Iterable[str] = ()) -> CompiledExpression:
    """``expression`` compiled with the DRA environment's functions and the declared ``variables``
    (of type dyn) but without ``device``; its result may have any type. SelectorError if it does
    not compile. Not cached: for tests and tools, not the allocator's hot path."""
    names = frozenset(variables)
    root, _ = compile_tree(expression, consumable_capacity=True, variables=sorted(names), device=False)
    return CompiledExpression(expression, root.fn, names)


class SelectorEngine:
    """Compiles DRA selectors once per expression text, for one feature set."""

    def __init__(self, *, consumable_capacity: bool = True) -> None:
        self.consumable_capacity = consumable_capacity
        self._cache: dict[str, CompiledSelector | str] = {}  # a compile error is kept as its message
        self._lock = threading.Lock()

    def compile(self, expression: str) -> CompiledSelector:
        """The compiled selector (the same object for the same text); SelectorError if it does not compile."""
        with self._lock:
            cached = self._cache.get(expression)
        if cached is None:
            cached = self._compile(expression)
            with self._lock:
                cached = self._cache.setdefault(expression, cached)
                if len(self._cache) > CACHE_SIZE:
                    del self._cache[next(iter(self._cache))]
        if isinstance(cached, str):
            raise SelectorError(cached)
        return cached

    def _compile(self, expression: str) -> CompiledSelector | str:
        try:
            return self._compiled(expression)
        except SelectorError as error:
            return str(error)

    def _compiled(self, expression: str) -> CompiledSelector:
        size = len(expression.encode())
        if not expression.strip():
            raise selector_error(expression, "the expression is empty")
        if size > MAX_EXPRESSION_BYTES:
            raise selector_error(expression, f"{size} bytes, longer than the limit of {MAX_EXPRESSION_BYTES}")
        root, compiler = compile_expression(expression, self.consumable_capacity)
        return CompiledSelector(
            expression,
            root.fn,
            compiler.binds_variables,
            frozenset(compiler.functions),
            frozenset(compiler.selected_fields),
            None if compiler.reads_whole else frozenset(compiler.device_reads),
        )
