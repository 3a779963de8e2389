# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""DeviceClasses and ResourceClaims as the allocator reads them (KUBERNETES-FACTS.md F2.1, F2.2)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity, QuantityError
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics

Object = Mapping[str, Any]
MAX_RESULTS = 32  # AllocationResultsMaxSize


class ClaimError(Exception):
    """Fatal for the allocation attempt, as the scheduler's pre-pass errors are."""


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def raw(self) -> dict[str, str]:
        found = {"key": self.key, "operator": self.operator, "value": self.value, "effect": self.effect}
        return {k: v for k, v in found.items() if v}


@dataclass(frozen=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...]
    config: tuple[Object, ...]


@dataclass(frozen=True)
class Alternative:
    """An ``exactly`` request, or one subrequest of ``firstAvailable``."""

    name: str  # "req" or "req/sub": the name results carry
    request: str  # the base request name
    device_class: DeviceClass
    selectors: tuple[str, ...]
    all_devices: bool
    count: int
    admin_access: bool
    tolerations: tuple[Toleration, ...]
    capacity: Mapping[str, Quantity]


@dataclass(frozen=True)
class Request:
    name: str
    alternatives: tuple[Alternative, ...]


@dataclass(frozen=True)
class Constraint:
    requests: tuple[str, ...]  # empty: every request
    match_attribute: str | None
    distinct_attribute: str | None

    def applies(self, alternative: Alternative) -> bool:
        return not self.requests or alternative.request in self.requests or alternative.name in self.requests


@dataclass(frozen=True)
class Claim:
    namespace: str
    name: str
    uid: str
    requests: tuple[Request, ...]
    constraints: tuple[Constraint, ...]
    config: tuple[Object, ...]

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_class(item: Object) -> DeviceClass:
    spec = item.get("spec") or {}
    selectors = []
    for selector in spec.get("selectors") or ():
        expression = ((selector or {}).get("cel") or {}).get("expression")
        if not isinstance(expression, str) or not expression.strip():
            raise ClaimError(f"DeviceClass {item.get('metadata', {}).get('name')}: empty CEL selector")
        selectors.append(expression)
    configs = tuple(c for c in spec.get("config") or () if isinstance(c, Mapping))
    return DeviceClass(str((item.get("metadata") or {}).get("name")), tuple(selectors), configs)


def parse_classes(items: Iterable[Object]) -> dict[str, DeviceClass]:
    found = {}
    for item in items:
        device_class = parse_class(item)
        found[device_class.name] = device_class
    return found


def _tolerations(raw: Any) -> tuple[Toleration, ...]:
    found = []
    for entry in raw or ():
        if isinstance(entry, Mapping):
            found.append(
                Toleration(
                    str(entry.get("key") or ""),
                    str(entry.get("operator") or "Equal"),
                    str(entry.get("value") or ""),
                    str(entry.get("effect") or ""),
                )
            )
    return tuple(found)


def _alternative(
    raw: Object, name: str, base: str, classes: Mapping[str, DeviceClass], semantics: Semantics, where: str
) -> Alternative:
    class_name = str(raw.get("deviceClassName"))
    if class_name not in classes:
        raise ClaimError(f"{where}: device class {class_name} not found")
    selectors = []
    for selector in raw.get("selectors") or ():
        expression = ((selector or {}).get("cel") or {}).get("expression")
        if not isinstance(expression, str) or not expression.strip():
            raise ClaimError(f"{where}: empty CEL selector")
        selectors.append(expression)
    mode = raw.get("allocationMode") or "ExactCount"
    if mode not in ("ExactCount", "All"):
        raise ClaimError(f"{where}: unknown allocationMode {mode}")
    count = int(raw.get("count") or 1) if mode == "ExactCount" else 0
    if count < 0 or (mode == "ExactCount" and count == 0):
        raise ClaimError(f"{where}: count must be positive")
    admin = raw.get("adminAccess") is True
    if admin and not semantics.admin_access:
        raise ClaimError(f"{where}: adminAccess requires the DRAAdminAccess feature")
    requested: dict[str, Quantity] = {}
    for key, value in ((raw.get("capacity") or {}).get("requests") or {}).items():
        if not semantics.consumable:
            raise ClaimError(f"{where}: capacity requests require the DRAConsumableCapacity feature")
        try:
            requested[str(key)] = Quantity.parse(str(value))
        except QuantityError as error:
            raise ClaimError(f"{where}: capacity {key}: {error}") from error
    return Alternative(
        name=name,
        request=base,
        device_class=classes[class_name],
        selectors=tuple(selectors),
        all_devices=mode == "All",
        count=count,
        admin_access=admin,
        tolerations=_tolerations(raw.get("tolerations")),
        capacity=requested,
    )


def parse_claim(item: Object, classes: Mapping[str, DeviceClass], semantics: Semantics) -> Claim:
    metadata = item.get("metadata") or {}
    ref = f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"
    devices = ((item.get("spec") or {}).get("devices")) or {}
    requests = []
    for index, raw in enumerate(devices.get("requests") or ()):
        name = str(raw.get("name"))
        where = f"claim {ref} request {name}"
        if raw.get("firstAvailable"):
            if not semantics.prioritized_list:
                raise ClaimError(f"{where}: firstAvailable requires the DRAPrioritizedList feature")
            alternatives = tuple(
                _alternative(
                    sub, f"{name}/{sub.get('name')}", name, classes, semantics, f"{where}/{sub.get('name')}"
                )
                for sub in raw["firstAvailable"]
            )
        else:
            exactly = raw.get("exactly")
            if not isinstance(exactly, Mapping):
                raise ClaimError(f"{where} (#{index}): neither exactly nor firstAvailable")
            alternatives = (_alternative(exactly, name, name, classes, semantics, where),)
        requests.append(Request(name, alternatives))
    constraints = []
    for raw in devices.get("constraints") or ():
        constraints.append(
            Constraint(
                tuple(str(r) for r in raw.get("requests") or ()),
                raw.get("matchAttribute"),
                raw.get("distinctAttribute"),
            )
        )
    minimum = sum(min((a.count if not a.all_devices else 1) for a in r.alternatives) for r in requests)
    if minimum > MAX_RESULTS:
        raise ClaimError(f"claim {ref} asks for at least {minimum} devices, more than {MAX_RESULTS}")
    return Claim(
        namespace=str(metadata.get("namespace", "")),
        name=str(metadata.get("name", "")),
        uid=str(metadata.get("uid", "")),
        requests=tuple(requests),
        constraints=tuple(constraints),
        config=tuple(c for c in devices.get("config") or () if isinstance(c, Mapping)),
    )
