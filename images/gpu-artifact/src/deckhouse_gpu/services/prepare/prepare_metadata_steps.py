# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The prepare step that writes the claim's device metadata files (KEP-5304, docs/PREPARE.md
"Device metadata for containers"), and the CDI mounts that show them to the containers.

The files are written before the CDI spec that mounts them, and on every Kubernetes version: a
1.34 or 1.35 kubelet does not know the protocol, but the files are the driver's alone (written by
it, mounted by the runtime from its CDI spec), so they work there too, and nothing reads them when
nobody asks. A crash after the files leaves a ``PrepareStarted`` entry, and its rollback deletes
them with the CDI spec (services/prepare/host_release.py, DESIGN.md D9).
"""

from __future__ import annotations

from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint
from deckhouse_gpu.domain.prepare.container.device_metadata import mount_edits, request_files
from deckhouse_gpu.services.prepare.host_release import FeatureRelease, HostPorts, Releasing
from deckhouse_gpu.services.prepare.prepare_context import DeviceEdits, PrepareContext, PrepareFeature


class WriteDeviceMetadata:
    """One file per request of the claim: its devices and their published attributes."""

    name = "write-device-metadata"

    def run(self, ctx: PrepareContext) -> None:
        if ctx.metadata is None:
            return
        assert ctx.entry is not None
        files = request_files(ctx.claim_object or {}, ctx.plans, ctx.cards, ctx.entry.mig)
        ctx.metadata.write_claim(ctx.claim.uid, files)

    def undo(self, ctx: PrepareContext) -> None:
        if ctx.metadata is not None:
            ctx.metadata.delete_claim(ctx.claim.uid)


def metadata_edits(ctx: PrepareContext) -> DeviceEdits:
    """Device name -> the CDI mount of its request's metadata file."""
    files = ctx.metadata
    if files is None:
        return {}
    uid = ctx.claim.uid
    return mount_edits(ctx.claim_object or {}, ctx.plans, lambda request: files.host_path(uid, request))


def delete_files(state: Releasing) -> None:
    forget_files(state.entry.uid, state.ports)


def delete_unowned_files(checkpoint: Checkpoint, ports: HostPorts, cards: list[str]) -> None:
    """At start: the files of claims no entry knows."""
    if ports.metadata is not None:
        for uid in ports.metadata.claims_with_files() - set(checkpoint.claims):
            ports.metadata.delete_claim(uid)


def forget_files(uid: str, ports: HostPorts) -> None:
    if ports.metadata is not None:
        ports.metadata.delete_claim(uid)


METADATA_FEATURE = PrepareFeature(
    "device-metadata",
    files=(WriteDeviceMetadata(),),
    device_edits=metadata_edits,
    release=FeatureRelease(files=delete_files, unowned_files=delete_unowned_files, forget=forget_files),
)
