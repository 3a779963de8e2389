"""The engine's public face: :class:`SelectorEngine` compiles an expression once per text (a bounded
cache, shared by threads) into a :class:`CompiledSelector`, which evaluates it for a device.

An evaluation fails, with :class:`SelectorError`, on any CEL error, on a cost beyond
:data:`MAX_COST` and on a result that is not a bool, as the scheduler's does.
"""

from __future__ import annotations

import threading
from typing import Final

from deckhouse_gpu.domain.cel.compiler import compile_expression
from deckhouse_gpu.domain.cel.device_view import DeviceView
from deckhouse_gpu.domain.cel.errors import (
    CostExceeded,
    EvalError,
    SelectorError,
    selector_error,
    shown,
)
from deckhouse_gpu.domain.cel.nodes import Fn, Frame
from deckhouse_gpu.domain.cel.values import type_name

MAX_EXPRESSION_BYTES: Final = 10 * 1024  # CELSelectorExpressionMaxLength
MAX_COST: Final = 1_000_000  # CELSelectorExpressionMaxCost, also the scheduler's runtime limit
CACHE_SIZE: Final = 4096  # compiled expressions kept per engine


class CompiledSelector:
    """One expression, compiled; :meth:`matches` evaluates it for a device."""

    __slots__ = ("_fn", "_private_scope", "device_fields", "expression", "functions")

    def __init__(
        self, expression: str, fn: Fn, private_scope: bool, functions: frozenset[str], fields: frozenset[str]
    ) -> None:
        self.expression = expression
        self._fn = fn
        self._private_scope = private_scope
        self.functions = functions  # every function, method and macro called
        self.device_fields = fields  # the fields selected on ``device``

    def matches(self, device: DeviceView) -> bool:
        """True or False for the device; SelectorError where the scheduler gets an error."""
        if device._error is not None:
            raise selector_error(self.expression, f"device {device.name!r}: {device._error}")
        variables = dict(device._variables) if self._private_scope else device._variables
        frame = Frame(variables, MAX_COST)
        try:
            result = self._fn(frame)
        except EvalError as error:
            raise selector_error(self.expression, f"device {device.name!r}: {error}") from None
        except CostExceeded:
            raise selector_error(
                self.expression, f"device {device.name!r}: operation cancelled: actual cost limit exceeded"
            ) from None
        except RecursionError:
            raise selector_error(self.expression, "expression nested too deeply to evaluate") from None
        except (ArithmeticError, LookupError, TypeError, ValueError) as error:  # not foreseen here
            raise selector_error(
                self.expression, f"device {device.name!r}: evaluation failed: {type(error).__name__}: {error}"
            ) from error
        if frame.cost > MAX_COST:
            raise selector_error(
                self.expression, f"device {device.name!r}: operation cancelled: actual cost limit exceeded"
            )
        if type(result) is not bool:
            raise selector_error(
                self.expression, f"device {device.name!r}: the result is {type_name(result)}, not bool"
            )
        return result

    def __repr__(self) -> str:
        return f"CompiledSelector({shown(self.expression)!r})"


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
        )
