# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What is already allocated, as the scheduler sees it (KUBERNETES-FACTS.md F4.3, "already-allocated").

Results with adminAccess are ignored; with consumable capacity, results with a shareID are shares
(their consumed capacity is summed per device) and do not make the device "in use"; every other
result does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity, QuantityError

DeviceKey = tuple[str, str, str]  # driver, pool, device


@dataclass
class AllocatedState:
    in_use: set[DeviceKey] = field(default_factory=set)
    shares: dict[DeviceKey, dict[str, Fraction]] = field(default_factory=dict)  # summed consumedCapacity
    problems: list[str] = field(default_factory=list)

    def add_result(self, result: Mapping[str, Any], consumable: bool, where: str = "") -> None:
        key = (str(result.get("driver")), str(result.get("pool")), str(result.get("device")))
        if result.get("adminAccess") is True:
            return
        if consumable and result.get("shareID"):
            totals = self.shares.setdefault(key, {})
            for name, text in (result.get("consumedCapacity") or {}).items():
                try:
                    amount = Quantity.parse(str(text)).value
                except QuantityError as error:
                    self.problems.append(f"{where}: consumedCapacity {name}: {error}")
                    continue
                totals[str(name)] = totals.get(str(name), Fraction(0)) + amount
            return
        self.in_use.add(key)


def allocated_state(claims: Iterable[Mapping[str, Any]], consumable: bool) -> AllocatedState:
    state = AllocatedState()
    for claim in claims:
        metadata = claim.get("metadata") or {}
        where = f"claim {metadata.get('namespace', '')}/{metadata.get('name', '')}"
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or ():
            if isinstance(result, Mapping):
                state.add_result(result, consumable, where)
    return state
