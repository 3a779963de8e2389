# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The health of every device of the node as the kubelet shows it in Pod status (KUBERNETES-FACTS.md F6.3).

Pure: PhysicalGPU objects in, one entry per device name out. A card's devices are every name the
scheduler may have allocated it under: its Physical offer (a shared offer has the same name) and
one MIG offer per profile and placement of its capabilities, whether or not the node's policy
publishes them now, so a claim allocated under an earlier policy is still covered. All of them
follow the card's HardwareHealthy condition:

- ``True``: Healthy;
- ``NVMLQueryFailed`` (after the grace period): Unhealthy: NVML fails on this very card, as it
  does when the card fell off the bus;
- any other reason (NVML unavailable on the node, the driver not ready, the card not bound to
  nvidia) or no condition yet: Unknown, the card's state cannot be read;
- a card whose PhysicalGPU is gone (removed from the node) keeps the names it had, Unhealthy.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from deckhouse_gpu.domain.inventory import conditions
from deckhouse_gpu.domain.inventory.health.hardware_health import REASON_QUERY_FAILED
from deckhouse_gpu.domain.inventory.physicalgpu import GROUP, HARDWARE_HEALTHY
from deckhouse_gpu.domain.naming import mig_name, physical_name

type Health = Literal["Healthy", "Unhealthy", "Unknown"]
HEALTHY: Health = "Healthy"
UNHEALTHY: Health = "Unhealthy"
UNKNOWN: Health = "Unknown"
# The device taint an unhealthy card's offers carry (domain/offers/device_taints.py); here, below
# the offers, because inventory's events name it too.
TAINT_KEY = f"{GROUP}/unhealthy"
# The kubelet keeps 1024 characters of a message and marks the cut with "..."; cut here the same way.
MAX_MESSAGE = 1024


@dataclass(frozen=True)
class DeviceHealth:
    device: str  # the ResourceSlice device name, as allocations name it
    card: str  # PCI address
    health: Health
    message: str = ""


@dataclass(frozen=True)
class HealthReport:
    """One complete list for the kubelet: every device of the pool, each time."""

    pool: str
    devices: tuple[DeviceHealth, ...]
    checked_at: int  # Unix seconds of the pass that determined it


def device_names(card: dict[str, Any]) -> tuple[str, ...]:
    """The card's Physical offer and every MIG placement of its capabilities, sorted."""
    status = card.get("status") or {}
    address = (status.get("pciInfo") or {}).get("address")
    if not address:
        return ()
    mig = ((status.get("capabilities") or {}).get("nvidia") or {}).get("mig") or {}
    names = {physical_name(address)}
    for profile in mig.get("profiles") or []:
        for placement in profile.get("placements") or []:
            names.add(mig_name(address, str(profile["name"]), int(placement["start"])))
    return tuple(sorted(names))


def _limited(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def card_health(card: dict[str, Any]) -> tuple[Health, str]:
    """The health of the card's devices and the message the Pod shows for it."""
    status = card.get("status") or {}
    address = str((status.get("pciInfo") or {}).get("address") or "")
    condition = conditions.find(status.get("conditions"), HARDWARE_HEALTHY)
    if condition is None:
        return UNKNOWN, f"card {address}: gpu-handler has not checked it yet"
    if condition.get("status") == "True":
        return HEALTHY, ""
    reason, text = str(condition.get("reason") or ""), str(condition.get("message") or "")
    # NVML's own texts begin with the card's address; the others get it here, so it is said once.
    where = "" if text.startswith(address) else f"card {address}: "
    message = _limited(f"{where}HardwareHealthy={condition.get('status')} ({reason}): {text}")
    if reason == REASON_QUERY_FAILED or condition.get("status") == "False":
        return UNHEALTHY, message
    return UNKNOWN, message


def node_health(
    cards: Iterable[dict[str, Any]], known: Mapping[str, Sequence[str]]
) -> tuple[tuple[DeviceHealth, ...], dict[str, tuple[str, ...]]]:
    """Every device of the node's cards, sorted by name, and the names to remember per card.

    ``known`` holds the names of earlier calls: a card no longer listed keeps them, Unhealthy.
    """
    present: dict[str, tuple[str, ...]] = {}
    entries: list[DeviceHealth] = []
    for card in cards:
        names = device_names(card)
        if not names:
            continue  # no PCI address yet: no device was offered either
        address = str(card["status"]["pciInfo"]["address"])
        present[address] = names
        health, message = card_health(card)
        entries.extend(DeviceHealth(name, address, health, message) for name in names)
    for address, earlier in known.items():
        if address not in present:
            gone = f"card {address} is no longer on the node: its PhysicalGPU is gone"
            entries.extend(DeviceHealth(name, address, UNHEALTHY, gone) for name in earlier)
    remembered = {address: tuple(names) for address, names in known.items()}
    remembered.update(present)
    return tuple(sorted(entries, key=lambda entry: entry.device)), remembered


def health_lines(devices: Iterable[DeviceHealth]) -> list[str]:
    """For people (the simulator, logs): one line per card and state, e.g.
    ``gpu-0000-17-00-0 and 7 MIG devices: Unhealthy: 0000:17:00.0: ... GPU is lost``."""
    groups: dict[tuple[str, Health, str], list[str]] = defaultdict(list)
    for entry in devices:
        groups[(entry.card, entry.health, entry.message)].append(entry.device)
    lines = []
    for (card, health, message), names in sorted(groups.items()):
        physical = physical_name(card)
        others = len(names) - 1 if physical in names else len(names)
        mig = f"{others} MIG device{'s' if others > 1 else ''}"
        if physical not in names:
            subject = f"{mig} of card {card}"
        else:
            subject = f"{physical} and {mig}" if others else physical
        lines.append(f"{subject}: {health}" + (f": {message}" if message else ""))
    return lines
