# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""DRA device selectors for the tests: a thin layer over the module's engine (k8s_semantics/cel).

It keeps the tests' older spelling (``Selector(expression)``, ``device_view(device, driver)``); new
tests use :class:`deckhouse_gpu.k8s_semantics.cel.SelectorEngine` directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deckhouse_gpu.k8s_semantics.cel import MAX_EXPRESSION_BYTES, DeviceView, SelectorEngine, SelectorError
from deckhouse_gpu.k8s_semantics.cel import device_view as _device_view

__all__ = ["MAX_EXPRESSION_BYTES", "DeviceView", "Selector", "SelectorError", "device_view", "selects"]

_ENGINES = {flag: SelectorEngine(consumable_capacity=flag) for flag in (True, False)}


def device_view(device: Mapping[str, Any], driver: str, consumable_capacity: bool = True) -> DeviceView:
    """The CEL ``device`` variable for one ResourceSlice device of ``driver``."""
    return _device_view(driver, device, consumable_capacity=consumable_capacity)


class Selector:
    """One ``cel.expression`` of a DeviceClass or a request, compiled once (SelectorError if not)."""

    def __init__(self, expression: str, consumable_capacity: bool = True) -> None:
        self.expression = expression
        self._compiled = _ENGINES[consumable_capacity].compile(expression)

    def matches(self, device: DeviceView) -> bool:
        return self._compiled.matches(device)

    def functions(self) -> set[str]:
        """Every function, method and macro the expression calls."""
        return set(self._compiled.functions)

    def device_fields(self) -> set[str]:
        """The fields selected on the ``device`` variable (``device.driver`` -> ``driver``)."""
        return set(self._compiled.device_fields)


def selects(selectors: list[Selector], device: DeviceView) -> bool:
    """All selectors must hold, as for a class's selectors together with a request's."""
    return all(selector.matches(device) for selector in selectors)
