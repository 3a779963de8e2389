# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What the prepare steps share: the claim's context, the step protocol and the runner.

The runner runs the steps in order; when one fails it undoes the finished ones in reverse. A
crash (no undo runs) leaves a ``PrepareStarted`` entry whose records let the next call roll
everything back (services/prepare/host_release.py), because every host change is saved as it happens
(DESIGN.md D9). The steps are in services/prepare/prepare_steps.py, services/prepare/prepare_mig_steps.py,
services/prepare/prepare_sharing_steps.py, services/prepare/prepare_vfio_steps.py and
services/prepare/prepare_metadata_steps.py; each of the last four gives its steps and its CDI edits to the
pipeline as one ``PrepareFeature`` (DESIGN.md D20).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, ClaimEntry
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.domain.prepare.vfio import CardGroup, PodRef
from deckhouse_gpu.ports.claim_cdi import ClaimCDI
from deckhouse_gpu.ports.device_metadata import DeviceMetadataFiles
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.mig import MigControl
from deckhouse_gpu.services.prepare.host_release import FeatureRelease, HostPorts, release
from deckhouse_gpu.services.prepare.sharing_host import SharingHost
from deckhouse_gpu.services.prepare.vfio_release import VfioSide

log = logging.getLogger(__name__)


class PrepareError(Exception):
    """What the kubelet shows on the Pod: what failed and what to do."""


@dataclass
class PrepareContext:
    claim: ClaimRef
    checkpoint: Checkpoint
    save: Callable[[Checkpoint], None]
    mig: MigControl
    cdi: ClaimCDI
    now: str
    claim_object: dict[str, Any] | None = None  # the ResourceClaim as read from the API
    cards: list[dict[str, Any]] = field(default_factory=list)  # this node's PhysicalGPUs
    pool: str = ""
    plans: tuple[DevicePlan, ...] = ()
    entry: ClaimEntry | None = None
    done: bool = False  # a step found the claim already prepared: the rest is skipped
    sharing: SharingHost | None = None  # None: a node without sharing (a claim asking for it fails)
    metadata: DeviceMetadataFiles | None = None  # None: no device metadata files for containers
    vfio: VfioSide | None = None  # None: a node without passthrough (a claim asking for it fails)
    vfio_groups: dict[str, CardGroup] = field(default_factory=dict)  # card -> its group as checked
    vfio_pod: PodRef | None = None  # the Pod the claim is reserved for (the QEMU hook payload)
    held: dict[str, str] = field(default_factory=dict)  # card -> why another owner has it (D16)
    # The checkpoint as last saved: what the file says, whatever a failed step held in memory.
    saved: Checkpoint | None = None
    # An undo failed: the entry as saved keeps what is still to release for the next call.
    rollback_incomplete: bool = False
    # The registered features (services/prepare/prepare_steps.py FEATURES), whose release parts give an
    # entry back; None: a context that never releases (a release then fails loudly, not half done).
    features: tuple[PrepareFeature, ...] | None = None

    def __post_init__(self) -> None:
        self.saved = self.checkpoint
        write = self.save

        def save(checkpoint: Checkpoint) -> None:
            write(checkpoint)
            self.saved = checkpoint

        self.save = save

    def ports(self) -> HostPorts:
        return HostPorts(self.mig, self.cdi, self.sharing, self.metadata, self.vfio)

    def release_entry(self, entry: ClaimEntry) -> None:
        """Gives back everything ``entry`` records (host_release.release, strict) and drops it."""
        if self.features is None:
            raise RuntimeError("a prepare context without its features cannot release a claim")
        releases = (feature.release for feature in self.features)
        self.checkpoint = release(entry, self.checkpoint, self.ports(), self.save, releases)

    def store(self, entry: ClaimEntry) -> None:
        self.entry = entry
        self.checkpoint = self.checkpoint.with_entry(entry)
        self.save(self.checkpoint)


class Step(Protocol):
    name: str

    def run(self, ctx: PrepareContext) -> None: ...

    def undo(self, ctx: PrepareContext) -> None: ...


type DeviceEdits = dict[str, dict[str, Any]]  # device name -> its CDI container edits


def no_edits(ctx: PrepareContext) -> DeviceEdits:
    return {}


@dataclass(frozen=True)
class PrepareFeature:
    """What a feature contributes to prepare (DESIGN.md D20), in the pipeline's phases: the
    pipeline (services/prepare/prepare_steps.py) runs the phases in this order, each feature's steps of a
    phase in the order the features are registered, and the CDI writer merges every feature's
    edits. ``devices`` make the claim's devices exist (a MIG instance, a card on vfio-pci);
    ``settings`` set them up for it (sharing); ``files`` are what the containers mount. Every
    host change is recorded in the claim's entry first (DESIGN.md D9), so a step's undo, and the
    rollback after a crash, can give it back: ``release`` is how (services/prepare/host_release.py loops
    over every feature's)."""

    name: str
    checks: tuple[Step, ...] = ()  # before anything on the host changes
    devices: tuple[Step, ...] = ()
    settings: tuple[Step, ...] = ()
    files: tuple[Step, ...] = ()
    device_edits: Callable[[PrepareContext], DeviceEdits] = no_edits
    release: FeatureRelease = field(default_factory=FeatureRelease)


def run_steps(
    steps: tuple[Step, ...], ctx: PrepareContext, after: Callable[[str], None] | None = None
) -> None:
    """Runs ``steps``; on a failure undoes the failed step (it may have done part of its work) and
    the finished ones, in reverse, and re-raises. An undo that fails (NVML lost the card, the disk
    is full) leaves the claim's ``PrepareStarted`` entry as last saved, so the next call for the
    claim rolls back what it records, as after a crash (DESIGN.md D9).

    ``after`` is called at every step boundary (metrics, and the crash tests' kill point).
    """
    finished: list[Step] = []
    for step in steps:
        if ctx.done:
            return
        try:
            step.run(ctx)
        except Exception:
            for done in reversed([*finished, step]):
                try:
                    done.undo(ctx)
                except Exception:
                    ctx.rollback_incomplete = True
                    log.exception(
                        "undo failed; the next call rolls back from the checkpoint", extra={"step": done.name}
                    )
            raise
        finished.append(step)
        if after is not None:
            after(step.name)
