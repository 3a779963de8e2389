# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Undoing a claim's host changes: shared by unprepare, by the rollback of a leftover PrepareStarted
entry and by the cleanup at start. Every action is idempotent, and the checkpoint is saved after
each one, so a crash in the middle resumes where it stopped.

What is released is each feature's: a ``PrepareFeature`` (services/prepare/prepare_context.py) carries a
``FeatureRelease``, and the functions here loop over them phase by phase, in the order the
features are registered (``FEATURES`` in services/prepare/prepare_steps.py), naming none (DESIGN.md D20).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, ClaimEntry
from deckhouse_gpu.ports.claim_cdi import ClaimCDI
from deckhouse_gpu.ports.device_metadata import DeviceMetadataFiles
from deckhouse_gpu.ports.mig import MigControl
from deckhouse_gpu.services.prepare.sharing_host import SharingHost
from deckhouse_gpu.services.prepare.vfio_release import VfioSide

log = logging.getLogger(__name__)

Save = Callable[[Checkpoint], None]


@dataclass(frozen=True)
class HostPorts:
    """What the release works with; None: the node runs without the feature."""

    mig: MigControl
    cdi: ClaimCDI
    sharing: SharingHost | None = None
    metadata: DeviceMetadataFiles | None = None
    vfio: VfioSide | None = None


@dataclass
class Releasing:
    """One claim's release under way: each part reads the entry and moves the checkpoint on,
    saving after each host change. ``strict``: what cannot be given back raises, and the entry
    stays for the kubelet's retry; else it is logged (the cleanup at start)."""

    entry: ClaimEntry
    checkpoint: Checkpoint
    ports: HostPorts
    save: Save
    strict: bool


type ReleasePart = Callable[[Releasing], None]
type UnownedPart = Callable[[Checkpoint, HostPorts, list[str]], None]  # checkpoint, ports, cards
type ForgetPart = Callable[[str, HostPorts], None]  # claim UID, ports


@dataclass(frozen=True)
class FeatureRelease:
    """What a feature gives back, by phase. A claim's release runs, across the features:
    ``holders`` (what holds a device: an MPS server, a function on vfio-pci), ``devices`` (what
    made them: MIG instances and modes), ``settings`` (what its cards keep for the other claims),
    then the claim's CDI spec goes, then ``files``. At start, what no entry owns goes in the same
    phases (``unowned_*``, the CDI specs between devices and files). ``forget`` is the unprepare of
    a claim no entry knows (a lost checkpoint): what it may have left on disk. An entry of an
    earlier boot is released only by the features whose changes can outlive a reboot
    (``survives_reboot``: a MIG mode can, a function's binding to vfio-pci cannot)."""

    holders: ReleasePart | None = None
    devices: ReleasePart | None = None
    settings: ReleasePart | None = None
    files: ReleasePart | None = None
    unowned_holders: UnownedPart | None = None
    unowned_devices: UnownedPart | None = None
    unowned_files: UnownedPart | None = None
    forget: ForgetPart | None = None
    survives_reboot: bool = True


def release(
    entry: ClaimEntry,
    checkpoint: Checkpoint,
    ports: HostPorts,
    save: Save,
    releases: Iterable[FeatureRelease],
    strict: bool = True,
) -> Checkpoint:
    """Gives back everything ``entry`` records, feature by feature (``FeatureRelease``): first
    what holds its devices (the MPS daemons only this claim used; the functions it moved to
    vfio-pci, so NVML sees their cards again for what follows), then the devices (MIG instances
    and modes), then the cards' settings the other claims need, the claim's CDI spec and its
    files; the entry is dropped last."""
    parts = tuple(releases)
    state = Releasing(entry, checkpoint, ports, save, strict)
    for phase in ([p.holders for p in parts], [p.devices for p in parts], [p.settings for p in parts]):
        _run(phase, state)
    ports.cdi.delete_claim(entry.uid)
    _run([p.files for p in parts], state)
    state.checkpoint = state.checkpoint.without(entry.uid)
    save(state.checkpoint)
    return state.checkpoint


def _run(phase: list[ReleasePart | None], state: Releasing) -> None:
    for part in phase:
        if part is not None:
            part(state)


def clean_unowned(
    checkpoint: Checkpoint, ports: HostPorts, cards: list[str], releases: Iterable[FeatureRelease]
) -> None:
    """At start, what no entry owns, feature by feature: functions left on vfio-pci and their
    payloads first (a card on vfio-pci has no MIG mode NVML can read), MIG instances on ``cards``,
    CDI specs, device metadata files."""
    parts = tuple(releases)
    phases = ([p.unowned_holders for p in parts], [p.unowned_devices for p in parts])
    for phase in phases:
        for part in phase:
            if part is not None:
                part(checkpoint, ports, cards)
    for uid in ports.cdi.claims_with_specs() - set(checkpoint.claims):
        ports.cdi.delete_claim(uid)
    for part in (p.unowned_files for p in parts):
        if part is not None:
            part(checkpoint, ports, cards)


def forget(uid: str, ports: HostPorts, releases: Iterable[FeatureRelease]) -> None:
    """Unprepare of a claim no entry knows: its CDI spec and what each feature may have left."""
    ports.cdi.delete_claim(uid)
    for release_ in releases:
        if release_.forget is not None:
            release_.forget(uid, ports)
