"""Per-device checks of the allocator that need no search state: taints, attributes, selectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from deckhouse_gpu.domain.allocation.claims import Alternative, Toleration
from deckhouse_gpu.domain.allocation.model import Device, Taint
from deckhouse_gpu.domain.allocation.semantics import Semantics

ENFORCED_EFFECTS = ("NoSchedule", "NoExecute")


class SelectorFailure(Exception):
    """A CEL selector that does not compile or fails to evaluate: fatal for the attempt."""


class SelectorMatcher(Protocol):
    def matches(self, expression: str, device: Device) -> bool:
        """Raises SelectorFailure when the expression cannot be evaluated on the device."""
        ...


def selectors_match(matcher: SelectorMatcher, alternative: Alternative, device: Device) -> str | None:
    """None when every selector (the class's first, then the request's) is true; else the first
    false expression. Results are cached on the device per expression: they depend on nothing else."""
    for expression in (*alternative.device_class.selectors, *alternative.selectors):
        cached = device.cache.get(expression)
        if cached is None:
            cached = matcher.matches(expression, device)
            device.cache[expression] = cached
        if not cached:
            return expression
    return None


def _tolerates(toleration: Toleration, taint: Taint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return toleration.value == taint.value


def untolerated_taint(
    device: Device, tolerations: Sequence[Toleration], semantics: Semantics
) -> Taint | None:
    for taint in device.taints:
        if semantics.version != "1.34" and taint.effect not in ENFORCED_EFFECTS:
            continue  # 1.35: only taints that keep pods away must be tolerated
        if not any(_tolerates(t, taint) for t in tolerations):
            return taint
    return None


def attribute(device: Device, name: str) -> tuple[str, Any] | None:
    """A fully qualified attribute of the device as (type, value): the exact key, else the id
    alone when the domain is the device's driver."""
    entry = device.attributes.get(name)
    if entry is None:
        domain, _, ident = name.partition("/")
        if domain == device.driver:
            entry = device.attributes.get(ident)
    if not entry:
        return None
    kind, value = next(iter(entry.items()))
    return str(kind), value
