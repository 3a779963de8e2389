# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What the simulator says of device taints: a card whose published devices gain or lose taints
(health as device taints, domain/offers/device_taints.py), read from the ResourceSlices as
``kubectl get resourceslices`` shows them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from deckhouse_gpu.domain.offers.device_taints import describe, device_taints
from deckhouse_gpu.domain.offers.model import DRIVER

Card = tuple[str, str]  # (node, PCI address)


def card_taints(slices: Iterable[Mapping[str, Any]]) -> dict[Card, str]:
    """Every card with published devices -> their taints ("" for none)."""
    found: dict[Card, list[str]] = {}
    for item in slices:
        spec = item.get("spec") or {}
        if spec.get("driver") != DRIVER:
            continue
        for device in spec.get("devices") or []:
            address = ((device.get("attributes") or {}).get("pciAddress") or {}).get("string")
            if address:
                shown = found.setdefault((str(spec.get("nodeName")), str(address)), [])
                texts = [describe(taint) for taint in device_taints(device)]
                shown.extend(text for text in texts if text not in shown)
    return {card: ", ".join(texts) for card, texts in found.items()}


class TaintWatch:
    """Remembers what was shown; ``changes`` says which cards were tainted or untainted since."""

    def __init__(self) -> None:
        self._seen: dict[Card, str] = {}

    def changes(self, slices: Iterable[Mapping[str, Any]]) -> list[str]:
        now = card_taints(slices)
        lines = []
        for card in sorted(set(now) | set(self._seen)):
            before, after = self._seen.get(card, ""), now.get(card)
            where = f"{card[0]} card {card[1]}"
            if after and after != before:
                lines.append(f"{where} tainted {after}")
            elif before and after == "":
                lines.append(f"{where} untainted")
            elif before and after is None:
                lines.append(f"{where} no longer offered (was tainted {before})")
        self._seen = {card: taints for card, taints in now.items() if taints}
        return lines
