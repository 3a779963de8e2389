# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The allocation invariant of DESIGN.md S8.1, checked over every allocation of our driver.

Pure: ResourceSlices (as the allocator's Inventory) and allocated claims in, violations out.
The scheduler keeps the invariant through counters (DESIGN.md D2); the audit catches what
slips through anyway: a second allocator racing the scheduler, a hand-written status, the
scheduler's own accounting quirks (KUBERNETES-FACTS.md F4.4), slices republished under allocations.

- a device allocated exclusively to two claims;
- MIG and Physical devices of one card allocated at the same time;
- shares of one card whose claims ask for different sharing of the card: another strategy, or
  another time-slice interval (only shares of a whole card meet: a MIG instance or an exclusive
  card has one claim);
- a shared device's capacity, or a card's counters, allocated beyond their value.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity, QuantityError
from deckhouse_gpu.k8s_semantics.resources.model import Device, Inventory, Slice

DRIVER = "gpu.deckhouse.io"
EXCLUSIVE = "DoubleAllocation"
MIXED_MODES = "MigAndPhysical"
MIXED_SHARING = "MixedSharingStrategies"
CAPACITY = "CapacityOvercommitted"
COUNTERS = "CountersOvercommitted"
KINDS = (EXCLUSIVE, MIXED_MODES, MIXED_SHARING, CAPACITY, COUNTERS)

# What a share (a result and its allocation) asks of the whole card, equal for every two shares
# that can sit on one card ("MPS", "TimeSlicing (interval Default)"); None when its config cannot
# be prepared at all, so it never meets the others. Injected so the audit does not depend on the
# opaque-config API's details (domain/allocation/card_sharing.py gives the real one).
CardSharingOf = Callable[[Mapping[str, Any], Mapping[str, Any]], str | None]


@dataclass(frozen=True)
class Violation:
    kind: str
    claims: tuple[str, ...]  # namespace/name of every claim involved, sorted
    node: str
    subject: str  # the device or card
    message: str


@dataclass(frozen=True)
class Use:
    claim: str
    result: Mapping[str, Any]
    allocation: Mapping[str, Any]


def _claim_ref(claim: Mapping[str, Any]) -> str:
    meta = claim.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _uses(claims: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], list[Use]]:
    uses: dict[tuple[str, str, str], list[Use]] = defaultdict(list)
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or ():
            if (
                isinstance(result, Mapping)
                and result.get("driver") == DRIVER
                and not result.get("adminAccess")
            ):
                key = (str(result.get("driver")), str(result.get("pool")), str(result.get("device")))
                uses[key].append(Use(_claim_ref(claim), result, allocation))
    return uses


def _text(device: Device, name: str) -> str | None:
    entry = device.attributes.get(name) or device.attributes.get(f"{DRIVER}/{name}") or {}
    value = entry.get("string")
    return str(value) if value is not None else None


def _node(device: Device) -> str:
    return device.selection.node_name or ""


def _newest(inventory: Inventory) -> list[Slice]:
    """The slices of the newest generation of every pool of our driver."""
    newest: dict[tuple[str, str], int] = {}
    for item in inventory.slices:
        key = (item.driver, item.pool)
        newest[key] = max(newest.get(key, item.generation), item.generation)
    return [s for s in inventory.slices if s.driver == DRIVER and s.generation == newest[(s.driver, s.pool)]]


def _devices(inventory: Inventory) -> dict[tuple[str, str, str], Device]:
    return {device.key: device for item in _newest(inventory) for device in item.devices}


def audit(
    inventory: Inventory, claims: Iterable[Mapping[str, Any]], sharing_of: CardSharingOf
) -> list[Violation]:
    uses = _uses(claims)
    devices = _devices(inventory)
    violations: list[Violation] = []
    cards: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for key, found in sorted(uses.items()):
        device = devices.get(key)
        if device is None:
            continue  # published no more: the handler keeps prepared devices, nothing to compare
        node = _node(device)
        shares = [u for u in found if u.result.get("shareID")]
        exclusive = [u for u in found if not u.result.get("shareID")]
        names = tuple(sorted({u.claim for u in found}))
        if len(exclusive) > 1 or (exclusive and shares):
            violations.append(
                Violation(
                    EXCLUSIVE,
                    names,
                    node,
                    device.name,
                    f"device {device.name} is allocated to {len(found)} claims",
                )
            )
        violations += _capacity(device, shares, node)
        violations += _mixed_sharing(device, shares, node, sharing_of)
        card = _text(device, "pciAddress")
        if card:
            cards[(node, card)][_text(device, "deviceType") or "Physical"].update(u.claim for u in found)
    for (node, card), modes in sorted(cards.items()):
        if "MIG" in modes and "Physical" in modes:
            names = tuple(sorted(modes["MIG"] | modes["Physical"]))
            violations.append(
                Violation(
                    MIXED_MODES,
                    names,
                    node,
                    card,
                    f"card {card} has MIG and Physical devices allocated at once",
                )
            )
    violations += _counters(inventory, devices, uses)
    return violations


def _mixed_sharing(
    device: Device, shares: list[Use], node: str, sharing_of: CardSharingOf
) -> list[Violation]:
    """Shares of one card that ask different things of it; the message groups the claims by ask."""
    asks: dict[str, set[str]] = defaultdict(set)
    for use in shares:
        ask = sharing_of(use.result, use.allocation)
        if ask is not None:
            asks[ask].add(use.claim)
    if len(asks) < 2:
        return []
    names = tuple(sorted({claim for claims in asks.values() for claim in claims}))
    listing = "; ".join(f"{ask}: {', '.join(sorted(claims))}" for ask, claims in sorted(asks.items()))
    message = (
        f"shares of {device.name} ask for different sharing of the card ({listing}): every share of "
        "one card must use the same strategy and, for TimeSlicing, the same interval (no sharing "
        "config counts as TimeSlicing at interval Default); gpu-handler refuses to prepare a share "
        "that differs from those prepared on the card"
    )
    return [Violation(MIXED_SHARING, names, node, device.name, message)]


def _capacity(device: Device, shares: list[Use], node: str) -> list[Violation]:
    totals: dict[str, Fraction] = defaultdict(Fraction)
    for use in shares:
        for name, text in (use.result.get("consumedCapacity") or {}).items():
            try:
                totals[str(name)] += Quantity.parse(str(text)).value
            except QuantityError:
                continue
    found = []
    for name, total in sorted(totals.items()):
        cap = device.capacity.get(name)
        if cap is not None and total > cap.value.value:
            names = tuple(sorted({u.claim for u in shares}))
            used = Quantity.exact(total, cap.value.binary)
            found.append(
                Violation(
                    CAPACITY,
                    names,
                    node,
                    device.name,
                    f"{device.name} capacity {name}: {used} allocated of {cap.value}",
                )
            )
    return found


def _limits(inventory: Inventory) -> dict[tuple[str, str], Mapping[str, Quantity]]:
    """Counter sets of the newest generation of each pool of our driver, by (pool, set)."""
    return {
        (f"{item.driver}/{item.pool}", name): counters
        for item in _newest(inventory)
        for name, counters in item.counter_sets
    }


def _counters(
    inventory: Inventory,
    devices: Mapping[tuple[str, str, str], Device],
    uses: Mapping[tuple[str, str, str], list[Use]],
) -> list[Violation]:
    """Per counter set: every allocated device counted once, shared or not (strict accounting)."""
    used: dict[tuple[str, str], dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    claims: dict[tuple[str, str], set[str]] = defaultdict(set)
    nodes: dict[tuple[str, str], str] = {}
    for key, found in uses.items():
        device = devices.get(key)
        if device is None:
            continue
        for set_name, counters in device.consumes:
            scope = (f"{device.driver}/{device.pool}", set_name)
            nodes[scope] = _node(device)
            claims[scope].update(u.claim for u in found)
            for name, amount in counters.items():
                used[scope][name] += amount.value
    violations = []
    limits = _limits(inventory)
    for scope, totals in sorted(used.items()):
        limit = limits.get(scope, {})
        over = [
            f"{name} {Quantity.exact(total, limit[name].binary)} of {limit[name]}"
            for name, total in sorted(totals.items())
            if name in limit and total > limit[name].value
        ]
        if over:
            message = f"counter set {scope[1]} of pool {scope[0]} is overcommitted: {', '.join(over)}"
            violations.append(
                Violation(COUNTERS, tuple(sorted(claims[scope])), nodes[scope], scope[1], message)
            )
    return violations
