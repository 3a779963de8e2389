# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The per-device rules of the allocator, each once: None when the device passes, else a Reason.

The search calls them for pass or fail, explain for the words. Three live elsewhere, next to what
they share: selectors with the selector cache (``checks``, named ``selectors`` here too), counters
with the counter accounting (``counters``), the constraints' attributes with the constraints
(``constraints``). Feature gates are checked inside the rules, so no caller applies a rule the
scheduler skips.
"""

from __future__ import annotations

from fractions import Fraction

from deckhouse_gpu.k8s_semantics.allocator import capacity
from deckhouse_gpu.k8s_semantics.allocator.checks import selectors_match, untolerated_taint
from deckhouse_gpu.k8s_semantics.allocator.reasons import (
    IN_USE,
    NEEDS_BINDING_CONDITIONS,
    PARTITIONABLE_OFF,
    TAKEN_BY_CLAIM,
    TAKEN_IN_PASS,
    CapacityExhausted,
    NoCapacity,
    PolicyBroken,
    Reason,
    TaintNotTolerated,
)
from deckhouse_gpu.k8s_semantics.allocator.search_pass import SearchPass
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity
from deckhouse_gpu.k8s_semantics.resources.claims import Alternative
from deckhouse_gpu.k8s_semantics.resources.model import Device
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState

ZERO = Fraction(0)
_NONE: dict[str, Fraction] = {}


def binding_conditions(device: Device) -> Reason | None:
    """Binding conditions need a feature (DRADeviceBindingConditions) this allocator leaves off."""
    return NEEDS_BINDING_CONDITIONS if device.binding_conditions else None


def in_use(
    work: SearchPass,
    state: AllocatedState,
    claim_index: int,
    alternative: Alternative,
    device: Device,
    semantics: Semantics,
) -> Reason | None:
    if alternative.admin_access:
        return TAKEN_BY_CLAIM if any(p.device is device for p in work.placed[claim_index]) else None
    if device.key in state.in_use:
        return IN_USE
    if device.allow_multiple and semantics.consumable:
        return None  # shared: its capacity decides
    return TAKEN_IN_PASS if device.key in work.allocating else None


# The selectors rule is ``checks.selectors_match``, where the selector cache lives; it raises
# SelectorFailure, which ends the attempt in the search.
selectors = selectors_match


def partitionable(device: Device, semantics: Semantics) -> Reason | None:
    return PARTITIONABLE_OFF if device.consumes and not semantics.partitionable else None


def taints(device: Device, alternative: Alternative, semantics: Semantics) -> Reason | None:
    if not semantics.taints:
        return None
    taint = untolerated_taint(device, alternative.tolerations, semantics)
    return None if taint is None else TaintNotTolerated(taint)


def capacity_fits(
    work: SearchPass, state: AllocatedState, alternative: Alternative, device: Device, semantics: Semantics
) -> Reason | None:
    """Whether the request's capacity fits what the device's shares left (KUBERNETES-FACTS.md F4.5)."""
    if not semantics.consumable:
        return None
    for name in alternative.capacity:
        if name not in device.capacity:
            return NoCapacity(name)
    shared = state.shares.get(device.key, _NONE)
    sharing = work.sharing.get(device.key, _NONE)
    for name, cap in device.capacity.items():
        amount = capacity.consumed(cap, alternative.capacity.get(name))
        if capacity.violates(cap, amount):
            return PolicyBroken(name, amount)
        used = shared.get(name, ZERO) + sharing.get(name, ZERO)
        if amount.value + used > cap.value.value:
            return CapacityExhausted(name, amount, cap.value, used)
    return None


def consumed(alternative: Alternative, device: Device) -> dict[str, Quantity]:
    """What a share takes of each capacity of the device, once ``capacity_fits`` passed."""
    return {
        name: capacity.consumed(cap, alternative.capacity.get(name)) for name, cap in device.capacity.items()
    }
