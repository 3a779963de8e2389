# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""DRA offers: what each healthy card can be allocated as (DESIGN.md D2, D5, D6).

Pure data. A card gives one Physical offer and, when MIG-capable and allowed, one MIG offer per
(profile, placement) of the profiles offered. One counter set per MIG-capable card makes Physical
and MIG exclusive in the scheduler itself: the Physical offer consumes the whole set, a MIG offer
its placement's memory slices and what else the set keeps (domain/offers/counter_layout.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from deckhouse_gpu.domain.offers.class_demand import ClassDemand

DRIVER = "gpu.deckhouse.io"
STANDARD_DOMAIN = "resource.kubernetes.io"
PHYSICAL: Literal["Physical"] = "Physical"
MIG: Literal["MIG"] = "MIG"

AttributeValue = str | int | bool


@dataclass(frozen=True)
class RequestPolicy:
    default: str
    min: str
    max: str
    step: str


@dataclass(frozen=True)
class Capacity:
    value: str  # a Kubernetes quantity
    policy: RequestPolicy | None = None


@dataclass(frozen=True)
class DeviceTaint:
    """A device taint (KUBERNETES-FACTS.md F1.7).

    ``timeAdded`` is the API server's (domain/offers/device_taints.py).
    """

    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class Offer:
    name: str  # DNS label; sorted names are the scheduler's first-fit order
    card: str  # PCI address of the card
    kind: Literal["Physical", "MIG"]
    attributes: dict[str, AttributeValue]  # qualified names; unqualified ones are the driver's
    capacity: dict[str, Capacity]
    consumes: dict[str, str] = field(default_factory=dict)  # counter -> quantity, from the card's set
    shared: bool = False  # allowMultipleAllocations
    taints: tuple[DeviceTaint, ...] = ()  # why the scheduler should keep away (an unhealthy card)


@dataclass(frozen=True)
class CounterSet:
    name: str
    counters: dict[str, str]


@dataclass(frozen=True)
class CardOffers:
    address: str
    counter_set: CounterSet | None
    offers: list[Offer]


@dataclass(frozen=True)
class OfferPolicy:
    """What this node and this API server allow."""

    mig: bool = True  # false on nodes labelled gpu.deckhouse.io/mig=false
    sharing: bool = False  # true on nodes labelled gpu.deckhouse.io/sharing=true
    partitionable: bool = True  # the API server keeps sharedCounters/consumesCounters
    consumable: bool = True  # the API server keeps allowMultipleAllocations/requestPolicy
    # (device, MIG profiles offered) for each device (the gpu.deckhouse.io/device label) that the
    # ModuleConfig's dra.migProfiles restricts on this node; other devices offer every profile.
    mig_profiles: tuple[tuple[str, frozenset[str]], ...] = ()
    # "grouped", published: "reduced" with each run of memory slices that can count as one counted
    # as one (counter_layout.grouped; issue 37: about a fifth of the scheduler's cost of a typical
    # class set). "reduced": the same without runs; "full": the layout before any reduction; both
    # kept for the benchmark and the equivalence proof. "minimal": "reduced" without the memory slices another
    # slice dominates (slice 7 of an A100/H100), a candidate of issue 32.
    counters: Literal["reduced", "full", "minimal", "grouped"] = "grouped"
    # The DeviceClasses of the cluster: only offers one of them may select are published
    # (domain/offers/class_demand.py, DESIGN.md D19); None: not known (yet), every offer is.
    demand: ClassDemand | None = None

    def offered_profiles(self, device: str) -> frozenset[str] | None:
        """The MIG profiles a card of ``device`` offers here; None: all of them."""
        return next((profiles for name, profiles in self.mig_profiles if name == device), None)


_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def mebibytes(mib: int) -> str:
    """``mib`` MiB as the API server stores it (resource.Quantity's canonical form): the largest
    binary suffix that keeps the number whole, and a bare "0". A slice rendered in any other
    spelling comes back different from the server, so the publisher would rewrite it on every
    pass ("0Mi" is stored as "0", "24576Mi" as "24Gi")."""
    if mib == 0:
        return "0"
    amount, power = mib, 2  # mebibytes: 1024**2 bytes
    while amount % 1024 == 0 and power < len(_BINARY_SUFFIXES) - 1:
        amount, power = amount // 1024, power + 1
    return f"{amount}{_BINARY_SUFFIXES[power]}"
