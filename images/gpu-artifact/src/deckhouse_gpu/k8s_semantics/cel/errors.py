# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The engine's errors: :class:`SelectorError` for callers, and the signals raised inside.

:class:`EvalError` is a CEL error value while evaluating, :class:`CostExceeded` the runtime cost
limit and :class:`CompileError` an expression refused when compiling; the engine turns each into a
SelectorError that quotes the expression.
"""

from __future__ import annotations

from typing import Final

_SHOWN: Final = 80  # characters of an expression quoted in an error


class SelectorError(Exception):
    """An expression that does not compile, fails to evaluate or does not yield a bool."""


def shown(expression: str) -> str:
    flat = " ".join(expression.split())
    return flat if len(flat) <= _SHOWN else flat[: _SHOWN - 3] + "..."


def selector_error(expression: str, reason: str) -> SelectorError:
    return SelectorError(f"CEL selector {shown(expression)!r}: {reason}")


class EvalError(Exception):
    """A CEL error value: absorbed by ``&&``, ``||``, ``all`` and ``exists``, fatal otherwise."""


class CostExceeded(Exception):
    """The runtime cost limit: never absorbed."""


class CompileError(Exception):
    """An expression refused when compiling: syntax, names or types this engine does not accept."""
