# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Per-device checks of the allocator that need no search state: taints, attributes, selectors.

``selectors_match`` is the selectors rule itself (``rules`` holds the others); the taint and
attribute lookups here are what the taints and constraints rules build on.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol

from deckhouse_gpu.k8s_semantics.allocator.reasons import NotOfClass, Reason, RequestSelectorFalse
from deckhouse_gpu.k8s_semantics.resources.claims import Alternative, Toleration
from deckhouse_gpu.k8s_semantics.resources.model import Device, Taint
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics

ENFORCED_EFFECTS = ("NoSchedule", "NoExecute")


class SelectorFailure(Exception):
    """A CEL selector that does not compile or fails to evaluate: fatal for the attempt."""


class SelectorMatcher(Protocol):
    def matches(self, expression: str, device: Device) -> bool:
        """Raises SelectorFailure when the expression cannot be evaluated on the device."""
        ...


def selectors_match(matcher: SelectorMatcher, alternative: Alternative, device: Device) -> Reason | None:
    """None when every selector (the class's first, then the request's) is true; else why not.
    Results are cached on the device per expression: they depend on nothing else."""
    cache = device.cache
    # Two loops: a false selector of the class and one of the request are different reasons.
    for expression in alternative.device_class.selectors:
        cached = cache.get(expression)
        if cached is None:
            cached = cache[expression] = matcher.matches(expression, device)
        if not cached:
            return _not_of_class(alternative.device_class.name)
    for expression in alternative.selectors:
        cached = cache.get(expression)
        if cached is None:
            cached = cache[expression] = matcher.matches(expression, device)
        if not cached:
            return _request_selector_false(expression)
    return None


# Most candidates of a request fail a selector of its class, so these reasons are made once per
# class or expression, not once per device: the search would otherwise allocate per candidate.
@lru_cache(maxsize=256)
def _not_of_class(name: str) -> Reason:
    return NotOfClass(name)


@lru_cache(maxsize=256)
def _request_selector_false(expression: str) -> Reason:
    return RequestSelectorFalse(expression)


def _tolerates(toleration: Toleration, taint: Taint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    # Any other operator than Equal (empty is read as Equal) tolerates nothing, as upstream.
    return toleration.operator == "Equal" and toleration.value == taint.value


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
