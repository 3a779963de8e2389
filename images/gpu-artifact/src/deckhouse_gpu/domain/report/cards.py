# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``kubectl gpu status``: per card, its health, the mode it is used in and what it holds.

A card is a PhysicalGPU; what it holds is read from the claims: the results of our driver in its
node's pool whose device is one of its offers (``gpu-<address>``, ``...-mig-<profile>-<start>``,
DESIGN.md D5), and their ``status.devices`` entries once prepared (services/prepare/claim_status.py).
What is left of its counter set is the allocator's own accounting (``counters.availability``),
so it agrees with what the scheduler (and ``capacity``) can still place.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from deckhouse_gpu.domain.allocation.claim_config import ConfigRefused, device_config
from deckhouse_gpu.domain.config.opaque_types import VFIOConfig
from deckhouse_gpu.domain.inventory import conditions
from deckhouse_gpu.domain.inventory.other_owner import OTHER_OWNER
from deckhouse_gpu.domain.inventory.physicalgpu import (
    DRIVER_READY,
    HARDWARE_HEALTHY,
    LABEL_DEVICE,
    LABEL_NODE,
    DriverType,
)
from deckhouse_gpu.domain.naming import physical_name
from deckhouse_gpu.domain.offers.counter_layout import SLICE, slice_runs
from deckhouse_gpu.domain.offers.device_taints import describe
from deckhouse_gpu.domain.offers.model import DRIVER, DeviceTaint
from deckhouse_gpu.domain.offers.slice_layout import pool_name
from deckhouse_gpu.domain.report.holders import DeviceKey, claim_ref, result_key, results
from deckhouse_gpu.k8s_semantics.allocator.counters import availability
from deckhouse_gpu.k8s_semantics.allocator.gather import gather
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.resources.model import Device, Inventory
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState

IDLE, WHOLE, MIG, SHARED, VFIO = "idle", "whole", "MIG", "shared", "VFIO"
# (node, counter set) -> (what is left, the set's counters); None when not published.
CountersOf = Callable[[str, str], tuple[dict[str, Fraction], dict[str, Fraction]] | None]


@dataclass
class Hold:
    """A claim's devices on the card."""

    claim: str
    devices: list[str]
    prepared: bool  # every one of them is in the claim's status.devices
    pods: list[str]  # status.reservedFor
    shared: bool = False


@dataclass
class MigInstance:
    device: str
    profile: str
    start: int | None
    claim: str
    uuid: str | None  # once prepared


@dataclass
class CardRow:
    node: str
    name: str
    address: str
    model: str
    healthy: str  # the condition's status, "" when missing
    healthy_reason: str
    driver_ready: str
    driver_ready_reason: str
    mode: str
    offered: bool  # the card's devices are published
    holds: list[Hold] = field(default_factory=list)
    mig: list[MigInstance] = field(default_factory=list)
    slices_free: list[int] | None = None  # memory slices left, when the card has a counter set
    slices_total: int | None = None
    memory_left: Fraction | None = None  # bytes of the counter set's memory left
    memory_total: Fraction | None = None
    share_left: Fraction | None = None  # percent of a shared card not taken by shares
    taints: list[str] = field(default_factory=list)  # of its published devices, key=value:effect
    other_owner: str = ""  # the OtherOwner reason while another owner holds the card (DESIGN.md D16)

    @property
    def ready(self) -> bool:
        return self.healthy == "True" and self.driver_ready == "True"


def _condition(card: Mapping[str, Any], kind: str) -> tuple[str, str]:
    found = conditions.find((card.get("status") or {}).get("conditions"), kind) or {}
    return str(found.get("status") or ""), str(found.get("reason") or "")


def _model(card: Mapping[str, Any]) -> str:
    status = card.get("status") or {}
    product = (status.get("capabilities") or {}).get("productName")
    labels = (card.get("metadata") or {}).get("labels") or {}
    name = ((status.get("pciInfo") or {}).get("device") or {}).get("name")
    return str(product or name or labels.get(LABEL_DEVICE) or "")


def _attribute(device: Device | None, name: str) -> Any:
    entry = device.attributes.get(name) if device is not None else None
    return next(iter(entry.values())) if entry else None


def _prepared(claim: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
    entries = (claim.get("status") or {}).get("devices") or []
    return {
        (str(e.get("pool")), str(e.get("device"))): e
        for e in entries
        if isinstance(e, Mapping) and e.get("driver") == DRIVER
    }


def _pods(claim: Mapping[str, Any]) -> list[str]:
    namespace = (claim.get("metadata") or {}).get("namespace", "")
    reserved = (claim.get("status") or {}).get("reservedFor") or []
    return sorted(f"{namespace}/{r.get('name')}" for r in reserved if r.get("resource") == "pods")


def _card_of(name: str) -> str:
    """The card's Physical offer name of one of its offers (DESIGN.md D5)."""
    return name.split("-mig-", 1)[0]


def _by_card(claims: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    """Claims with results of our driver, per (pool, card's Physical offer name)."""
    found: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for claim in claims:
        cards = {(k[1], _card_of(k[2])) for k in map(result_key, results(claim)) if k[0] == DRIVER}
        for card in cards:
            found.setdefault(card, []).append(claim)
    return found


def _holds(
    row: CardRow, pool: str, claims: Iterable[Mapping[str, Any]], devices: Mapping[DeviceKey, Device]
) -> bool:
    """Fills what the card holds; True when a hold is for a virtual machine (VFIOConfig)."""
    whole = physical_name(row.address)
    vfio = False
    for claim in claims:
        ref, prepared, mine = claim_ref(claim), _prepared(claim), []
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in results(claim):
            key = result_key(result)
            if key[0] != DRIVER or key[1] != pool or _card_of(key[2]) != whole:
                continue
            mine.append(result)
            entry = prepared.get((pool, key[2]))
            if key[2] != whole:
                device = devices.get(key)
                uuid = ((entry or {}).get("data") or {}).get("migUUID")
                profile = _attribute(device, "migProfile") or key[2][len(whole) + 5 :].rsplit("-", 1)[0]
                start = _attribute(device, "migPlacementStart")
                row.mig.append(MigInstance(key[2], str(profile), start, ref, uuid))
            else:
                # A config gpu-handler refuses at prepare is, here, only not a virtual machine's.
                with contextlib.suppress(ConfigRefused):
                    vfio = vfio or isinstance(device_config(result, allocation, "Physical"), VFIOConfig)
        if mine:
            done = all((pool, str(r.get("device"))) in prepared for r in mine)
            shared = any(r.get("shareID") for r in mine)
            names = sorted({str(r.get("device")) for r in mine})
            row.holds.append(Hold(ref, names, done, _pods(claim), shared))
    return vfio


def _mode(row: CardRow, card: Mapping[str, Any], vfio: bool) -> str:
    driver = ((card.get("status") or {}).get("currentState") or {}).get("driverType")
    if vfio or driver == DriverType.VFIO.value:
        return VFIO
    if row.mig:
        return MIG
    if any(hold.shared for hold in row.holds):
        return SHARED
    return WHOLE if row.holds else IDLE


def card_rows(
    cards: Iterable[Mapping[str, Any]],
    claims: Iterable[Mapping[str, Any]],
    devices: Mapping[DeviceKey, Device],
    counters_of: CountersOf,
    shares: Mapping[DeviceKey, Mapping[str, Fraction]],
) -> list[CardRow]:
    """One row per card, by node and PCI address. ``counters_of`` says what the card's counter set
    has left; ``shares`` what the shares of each shared device took (the allocator's state)."""
    by_card = _by_card(claims)
    offered = {(k[1], _card_of(k[2])) for k in devices if k[0] == DRIVER}
    taints = _taints(devices)
    rows = []
    for card in cards:
        status, labels = card.get("status") or {}, (card.get("metadata") or {}).get("labels") or {}
        node = str((status.get("nodeInfo") or {}).get("nodeName") or labels.get(LABEL_NODE) or "")
        address = str((status.get("pciInfo") or {}).get("address") or "")
        healthy, healthy_reason = _condition(card, HARDWARE_HEALTHY)
        ready, ready_reason = _condition(card, DRIVER_READY)
        owned, owner_reason = _condition(card, OTHER_OWNER)
        pool = pool_name(node)
        key = (DRIVER, pool, physical_name(address))
        row = CardRow(
            node, str((card.get("metadata") or {}).get("name", "")), address, _model(card),
            healthy, healthy_reason, ready, ready_reason, IDLE,
            offered=(pool, key[2]) in offered, taints=taints.get((pool, key[2]), []),
        )  # fmt: skip
        row.other_owner = owner_reason if owned == "True" else ""
        vfio = _holds(row, pool, by_card.get((pool, key[2]), []), devices) if address else False
        row.mode = _mode(row, card, vfio)
        found = counters_of(node, physical_name(address)) if address else None
        if found is not None:
            left, total = found
            row.slices_total, row.slices_free = _slices(left, total, _covered(row, devices, pool))
            row.memory_left, row.memory_total = _memory(row, card, left, total, devices, pool)
        device = devices.get(key)
        if device is not None and device.allow_multiple and "sharePercent" in device.capacity:
            taken = (shares.get(key) or {}).get("sharePercent", Fraction(0))
            row.share_left = device.capacity["sharePercent"].value.value - taken
        rows.append(row)
    return sorted(rows, key=lambda r: (r.node, r.address, r.name))


def _slices(
    left: Mapping[str, Fraction], total: Mapping[str, Fraction], covered: set[str]
) -> tuple[int, list[int]]:
    """The card's memory slices and the free ones, from its memory counters: a slice's own counter
    says whether it is free; a run counted as one (counter_layout.grouped) is all free when nothing
    of it is used, else the slices of it that no held MIG device covers."""
    free: list[str] = []
    runs = slice_runs(total)
    for name, run in runs.items():
        available = left.get(name, Fraction(0))
        if available <= 0:
            continue
        free += run if len(run) == 1 or available >= len(run) else [one for one in run if one not in covered]
    return sum(len(run) for run in runs.values()), sorted(int(name.removeprefix(SLICE)) for name in free)


def _covered(row: CardRow, devices: Mapping[DeviceKey, Device], pool: str) -> set[str]:
    """The memory slices the MIG devices held on the card cover."""
    covered: set[str] = set()
    for name in {name for hold in row.holds for name in hold.devices}:
        device = devices.get((DRIVER, pool, name))
        start, size = _attribute(device, "migPlacementStart"), _attribute(device, "migPlacementSize")
        if isinstance(start, int) and isinstance(size, int):
            covered.update(f"{SLICE}{index}" for index in range(start, start + size))
    return covered


def _memory(
    row: CardRow,
    card: Mapping[str, Any],
    left: Mapping[str, Fraction],
    total: Mapping[str, Fraction],
    devices: Mapping[DeviceKey, Device],
    pool: str,
) -> tuple[Fraction | None, Fraction | None]:
    """Memory left and total, in bytes: the counter set's, where it has a memory counter (the full
    layout); else the card's memory less the memory capacity of the devices its claims hold, which
    the published set no longer counts (domain/offers/counter_layout.py: it never binds)."""
    if "memory" in total:
        return left.get("memory"), total["memory"]
    mib = ((card.get("status") or {}).get("capabilities") or {}).get("memoryMiB")
    if type(mib) is not int:
        return None, None
    whole, used = Fraction(mib * 2**20), Fraction(0)
    for name in {name for hold in row.holds if not hold.shared for name in hold.devices}:
        device = devices.get((DRIVER, pool, name))
        capacity = device.capacity.get("memory") if device is not None else None
        if capacity is None:
            return None, whole  # a device no longer published: what it holds is unknown
        used += capacity.value.value
    return whole - used, whole


def _taints(devices: Mapping[DeviceKey, Device]) -> dict[tuple[str, str], list[str]]:
    """The taints of each card's published devices (health as device taints: the same on all of
    them), per (pool, card's Physical offer name), as kubectl writes them."""
    found: dict[tuple[str, str], list[str]] = {}
    for key, device in devices.items():
        if key[0] != DRIVER or not device.taints:
            continue
        shown = found.setdefault((key[1], _card_of(key[2])), [])
        for taint in device.taints:
            text = describe(DeviceTaint(taint.key, taint.value, taint.effect))
            if text not in shown:
                shown.append(text)
    return found


def counters_left(inventory: Inventory, state: AllocatedState, semantics: Semantics) -> CountersOf:
    """What each counter set of our driver has left on a node, as the allocator counts it."""
    nodes: dict[str, dict[str, tuple[dict[str, Fraction], dict[str, Fraction]]]] = {}

    def lookup(node: str, set_name: str) -> tuple[dict[str, Fraction], dict[str, Fraction]] | None:
        if node not in nodes:
            gathered = gather(inventory, Node(node), semantics)
            available = availability(gathered, state, semantics)
            sets = nodes[node] = {}
            for pool in gathered.pools:
                for scope, counter_sets in pool.counters.items() if pool.driver == DRIVER else ():
                    for name, counters in counter_sets.items():
                        left = available.get((f"{pool.driver}/{pool.name}", scope, name), {})
                        sets[name] = (dict(left), {n: q.value for n, q in counters.items()})
        return nodes[node].get(set_name)

    return lookup
