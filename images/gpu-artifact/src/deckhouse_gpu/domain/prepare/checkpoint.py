# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's prepare checkpoint: which claims it prepared and what it changed on the host.

Two-phase (DESIGN.md D9): an entry is written ``PrepareStarted`` before the host is touched
and ``PrepareCompleted`` after, so a crash in between leaves a record of what may be half done.
MIG records are added one at a time as the instances are created, so a rollback knows exactly
what to destroy; a switch of a card's MIG mode, either way, is recorded before it is made, so a
rollback knows which mode to give back; a PCI function moved to vfio-pci is recorded with the
driver it had before it is moved (DESIGN.md D7). The file carries the node's boot ID: MIG instances go
with the driver at a reboot and CDI specs under /var/run with the tmpfs, so entries from another
boot are not prepared any more and are handed back separately for the leftovers that do survive
(a CDI spec under /etc/cdi, a card's MIG mode). Pure: bytes in, bytes out; timestamps come from
the caller.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from deckhouse_gpu.domain.config import features
from deckhouse_gpu.domain.prepare.attribution import ClaimAttribution, attribution_from_json, attribution_json
from deckhouse_gpu.domain.prepare.checkpoint_fields import (
    CorruptCheckpoint,
    Fields,
    as_object,
    flat_json,
    flat_values,
    get,
    one_of,
    strings,
)
from deckhouse_gpu.domain.prepare.mig_instance import MigRecord
from deckhouse_gpu.domain.prepare.plan import KINDS, DevicePlan
from deckhouse_gpu.domain.prepare.vfio import VfioRecord

__all__ = [
    "STATES",
    "VERSION",
    "Checkpoint",
    "ClaimEntry",
    "CorruptCheckpoint",
    "Decoded",
    "decode",
    "encode",
]

VERSION = 1
CHECKSUM_PREFIX = "sha256:"

type State = Literal["PrepareStarted", "PrepareCompleted"]
STATES: tuple[State, ...] = ("PrepareStarted", "PrepareCompleted")
SHARING_STRATEGIES = features.names()


@dataclass(frozen=True)
class ClaimEntry:
    uid: str
    namespace: str
    name: str
    state: State
    devices: tuple[DevicePlan, ...]
    mig: tuple[MigRecord, ...] = ()
    mig_enabled_cards: tuple[str, ...] = ()  # cards this claim switched to MIG mode
    mig_disabled_cards: tuple[str, ...] = ()  # cards in MIG mode this claim switched off (whole cards)
    cdi_device_ids: dict[str, tuple[str, ...]] = field(default_factory=dict)  # device -> CDI ids
    updated: str = ""  # RFC 3339, for people reading the file
    vfio: tuple[VfioRecord, ...] = ()  # functions this claim moved to vfio-pci, in the order moved
    attribution: ClaimAttribution | None = None  # Pods, DeviceClasses, shares (None: written before)

    def with_state(self, state: State, updated: str | None = None) -> ClaimEntry:
        return replace(self, state=state, updated=self.updated if updated is None else updated)

    def completed(self, cdi_device_ids: dict[str, tuple[str, ...]], updated: str | None = None) -> ClaimEntry:
        done = replace(self, cdi_device_ids=dict(cdi_device_ids))
        return done.with_state("PrepareCompleted", updated)

    def with_mig(self, record: MigRecord) -> ClaimEntry:
        """Adds a created instance; one with the same (card, GI, CI) is replaced, not doubled."""
        kept = tuple(existing for existing in self.mig if existing.key != record.key)
        return replace(self, mig=(*kept, record))

    def without_mig(self, key: tuple[str, int, int]) -> ClaimEntry:
        """Drops an instance once destroyed, so a rollback interrupted halfway resumes where it was."""
        return replace(self, mig=tuple(record for record in self.mig if record.key != key))

    def with_vfio(self, record: VfioRecord) -> ClaimEntry:
        """Adds a function about to be moved; one already recorded keeps its first (original) driver."""
        if any(existing.function == record.function for existing in self.vfio):
            return self
        return replace(self, vfio=(*self.vfio, record))

    def without_vfio(self, function: str) -> ClaimEntry:
        """Drops a function once it is back on its driver, so a rollback resumes where it stopped."""
        return replace(self, vfio=tuple(record for record in self.vfio if record.function != function))

    def with_mig_enabled(self, card: str) -> ClaimEntry:
        if card in self.mig_enabled_cards:
            return self
        return replace(self, mig_enabled_cards=(*self.mig_enabled_cards, card))

    def with_mig_disabled(self, card: str) -> ClaimEntry:
        if card in self.mig_disabled_cards:
            return self
        return replace(self, mig_disabled_cards=(*self.mig_disabled_cards, card))


@dataclass(frozen=True)
class Checkpoint:
    boot_id: str
    claims: dict[str, ClaimEntry] = field(default_factory=dict)  # by claim UID

    def get(self, uid: str) -> ClaimEntry | None:
        return self.claims.get(uid)

    def with_entry(self, entry: ClaimEntry) -> Checkpoint:
        return replace(self, claims={**self.claims, entry.uid: entry})

    def without(self, uid: str) -> Checkpoint:
        return replace(self, claims={key: entry for key, entry in self.claims.items() if key != uid})

    def entries_in(self, state: State) -> list[ClaimEntry]:
        return [self.claims[uid] for uid in sorted(self.claims) if self.claims[uid].state == state]

    def owned_mig(self) -> set[tuple[str, int, int]]:
        """(card, GI, CI) of every instance some entry owns, half-prepared ones included."""
        return {record.key for entry in self.claims.values() for record in entry.mig}

    def owned_vfio(self) -> set[str]:
        """PCI functions some entry moved to vfio-pci (and has not given back yet)."""
        return {record.function for entry in self.claims.values() for record in entry.vfio}


@dataclass(frozen=True)
class Decoded:
    checkpoint: Checkpoint  # always under the boot ID the caller passed
    dropped_after_reboot: list[ClaimEntry] = field(default_factory=list)
    corrupt_reason: str = ""  # set by a store that found the file corrupt and started afresh


def checksum(document: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON (sorted keys, no spaces, ASCII) of all but the checksum."""
    body = {key: value for key, value in document.items() if key != "checksum"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return CHECKSUM_PREFIX + hashlib.sha256(canonical.encode("ascii")).hexdigest()


def encode(checkpoint: Checkpoint) -> bytes:
    claims = {uid: _entry_json(checkpoint.claims[uid]) for uid in sorted(checkpoint.claims)}
    document: dict[str, Any] = {"version": VERSION, "bootID": checkpoint.boot_id, "claims": claims}
    document["checksum"] = checksum(document)
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")


def decode(data: bytes, boot_id: str) -> Decoded:
    """The checkpoint for this boot; entries of another boot come back in ``dropped_after_reboot``."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError too
        raise CorruptCheckpoint(f"not JSON: {error}") from None
    if not isinstance(document, dict):
        raise CorruptCheckpoint(f"expected a JSON object at the top, got {type(document).__name__}")
    version = get(document, "version", "", int)
    if version != VERSION:  # checked first: a newer version may hash differently
        raise CorruptCheckpoint(f"unknown version {version} (this reader knows {VERSION})")
    stated = get(document, "checksum", "", str)
    if not stated.startswith(CHECKSUM_PREFIX):
        raise CorruptCheckpoint(f"checksum: unsupported algorithm in {stated!r}")
    actual = checksum(document)
    if stated != actual:
        raise CorruptCheckpoint(f"checksum mismatch: the file says {stated}, its content hashes to {actual}")
    written_boot = get(document, "bootID", "", str)
    claims: dict[str, ClaimEntry] = {}
    for uid, raw in get(document, "claims", "", dict).items():
        entry = _entry(raw, f"claims.{uid}")
        if entry.uid != uid:
            raise CorruptCheckpoint(f"claims.{uid}: the entry's uid is {entry.uid!r}")
        claims[uid] = entry
    if written_boot != boot_id:
        return Decoded(Checkpoint(boot_id), dropped_after_reboot=[claims[uid] for uid in sorted(claims)])
    return Decoded(Checkpoint(boot_id, claims))


_DEVICE_FIELDS: Fields = {
    "request": ("request", str, True),
    "pool": ("pool", str, True),
    "device": ("device", str, True),
    "card": ("card", str, True),
    "kind": ("kind", str, True),
    "share_id": ("shareID", str, False),
    "profile_id": ("profileID", int, False),
    "placement_start": ("placementStart", int, False),
    "placement_size": ("placementSize", int, False),
    "uuid": ("uuid", str, False),
    "vfio": ("vfio", bool, False),
}
# A device's sharing: the strategy's name here, and the fields of its plan next to it, which the
# strategy reads and writes itself (SharingStrategy.plan_json / plan_read): ``timeSlice``,
# ``mpsThreadPercentage`` and ``mpsMemoryLimitMiB`` as version 1 has always written them.
_SHARING = "sharing"
_MIG_FIELDS: Fields = {
    "card": ("card", str, True),
    "gpu_instance_id": ("gpuInstanceID", int, True),
    "compute_instance_id": ("computeInstanceID", int, True),
    "profile_id": ("profileID", int, True),
    "placement_start": ("placementStart", int, True),
    "placement_size": ("placementSize", int, True),
    "uuid": ("uuid", str, True),
}
# Added after version 1 was first written: a file without it moved no function.
_VFIO_FIELDS: Fields = {
    "card": ("card", str, True),
    "function": ("function", str, True),
    "driver": ("originalDriver", str, False),
    "iommu_group": ("iommuGroup", int, True),
}


def _entry_json(entry: ClaimEntry) -> dict[str, Any]:
    return {
        "uid": entry.uid,
        "namespace": entry.namespace,
        "name": entry.name,
        "state": entry.state,
        "devices": [_device_json(device) for device in entry.devices],
        "mig": [flat_json(record, _MIG_FIELDS) for record in entry.mig],
        "migEnabledCards": list(entry.mig_enabled_cards),
        "migDisabledCards": list(entry.mig_disabled_cards),
        "cdiDeviceIDs": {device: list(ids) for device, ids in entry.cdi_device_ids.items()},
        "updated": entry.updated,
        "vfio": [flat_json(record, _VFIO_FIELDS) for record in entry.vfio],
    } | ({} if entry.attribution is None else {"attribution": attribution_json(entry.attribution)})


def _entry(raw: Any, path: str) -> ClaimEntry:
    obj = as_object(raw, path)
    devices = get(obj, "devices", path, list)
    mig = get(obj, "mig", path, list, required=False) or []
    vfio = get(obj, "vfio", path, list, required=False) or []
    cdi = get(obj, "cdiDeviceIDs", path, dict, required=False) or {}
    # Added after version 1 was first written: a file without it says nothing of who uses the claim.
    known = obj.get("attribution")
    attribution = None if known is None else attribution_from_json(known, f"{path}.attribution")
    return ClaimEntry(
        uid=get(obj, "uid", path, str),
        namespace=get(obj, "namespace", path, str),
        name=get(obj, "name", path, str),
        state=one_of(get(obj, "state", path, str), f"{path}.state", STATES),
        devices=tuple(_device(item, f"{path}.devices[{i}]") for i, item in enumerate(devices)),
        mig=tuple(
            MigRecord(**flat_values(item, f"{path}.mig[{i}]", _MIG_FIELDS)) for i, item in enumerate(mig)
        ),
        mig_enabled_cards=strings(obj.get("migEnabledCards") or [], f"{path}.migEnabledCards"),
        # Added after version 1 was first written: a file without it switched no card off.
        mig_disabled_cards=strings(obj.get("migDisabledCards") or [], f"{path}.migDisabledCards"),
        cdi_device_ids={device: strings(ids, f"{path}.cdiDeviceIDs.{device}") for device, ids in cdi.items()},
        updated=get(obj, "updated", path, str, required=False) or "",
        vfio=tuple(
            VfioRecord(**flat_values(item, f"{path}.vfio[{i}]", _VFIO_FIELDS)) for i, item in enumerate(vfio)
        ),
        attribution=attribution,
    )


def _device_json(device: DevicePlan) -> dict[str, Any]:
    out = flat_json(device, _DEVICE_FIELDS)
    if device.sharing is not None:
        out[_SHARING] = device.sharing.strategy
        out |= features.planned_by(device.sharing).plan_json(device.sharing)
    return out


class _PlanFields:
    """One device record's fields as a strategy reads its plan from them (``PlanReader``)."""

    def __init__(self, obj: dict[str, Any], path: str) -> None:
        self.obj, self.path = obj, path

    def value(self, key: str, kind: type) -> Any:
        return get(self.obj, key, self.path, kind, required=False)

    def one_of(self, key: str, value: str, allowed: tuple[str, ...]) -> str:
        return one_of(value, f"{self.path}.{key}", allowed)


def _device(raw: Any, path: str) -> DevicePlan:
    values = flat_values(raw, path, _DEVICE_FIELDS)
    one_of(values["kind"], f"{path}.kind", KINDS)
    name = get(raw, _SHARING, path, str, required=False)
    if name is not None:
        one_of(name, f"{path}.{_SHARING}", SHARING_STRATEGIES)
    # Every strategy checks its fields where present, as version 1 always has; the named one's
    # make the plan.
    fields = _PlanFields(raw, path)
    plans = {strategy.name: strategy.plan_read(fields) for strategy in features.STRATEGIES}
    return DevicePlan(**values, sharing=None if name is None else plans[name])
