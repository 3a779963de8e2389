# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The allocator's selector matcher over the module's CEL engine (k8s_semantics/cel).

A device's CEL view is built once and kept on the device; compiled expressions are cached by the
engine; results are cached per (device, expression) by the allocator (checks.selectors_match).
"""

from __future__ import annotations

from deckhouse_gpu.k8s_semantics.allocator.checks import SelectorFailure
from deckhouse_gpu.k8s_semantics.cel import SelectorEngine, SelectorError, device_view
from deckhouse_gpu.k8s_semantics.resources.model import Device

_VIEW = ("cel-view",)


class CelMatcher:
    def __init__(self, *, consumable_capacity: bool = True) -> None:
        self.consumable_capacity = consumable_capacity
        self.engine = SelectorEngine(consumable_capacity=consumable_capacity)

    def matches(self, expression: str, device: Device) -> bool:
        try:
            compiled = self.engine.compile(expression)
            view = device.cache.get(_VIEW)
            if view is None:
                view = device_view(device.driver, device.raw, consumable_capacity=self.consumable_capacity)
                device.cache[_VIEW] = view
            return compiled.matches(view)
        except SelectorError as error:
            raise SelectorFailure(str(error)) from error
