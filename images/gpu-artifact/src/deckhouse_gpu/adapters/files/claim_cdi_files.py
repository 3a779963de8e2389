# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The per-claim CDI specs as files: discovery of the driver and the card, the spec, the writer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from deckhouse_gpu.adapters.files.cdi_discovery import CdiDiscovery
from deckhouse_gpu.adapters.files.cdi_writer import CdiWriter
from deckhouse_gpu.domain.prepare.container.cdi_spec import (
    ClaimDevice,
    DriverFiles,
    claim_device_name,
    claim_spec,
    qualified_id,
)
from deckhouse_gpu.domain.prepare.mig_instance import MigRecord
from deckhouse_gpu.domain.prepare.plan import DevicePlan


class FileClaimCDI:
    """Implements the ClaimCDI port. The driver's files are discovered again whenever the driver
    version changes, so an upgrade on the node never leaves stale paths in new containers; in
    between, the discovery (hundreds of stats and links) is not repeated on every prepare."""

    def __init__(self, discovery: CdiDiscovery, writer: CdiWriter, hook_path: str | None) -> None:
        self.discovery = discovery
        self.writer = writer
        self.hook_path = hook_path
        self._files: DriverFiles | None = None
        self._files_version: str | None = None

    def driver_files(self) -> DriverFiles:
        version = self.discovery.driver_version()
        if self._files is None or version is None or version != self._files_version:
            self._files = self.discovery.driver_files(self.hook_path)
            self._files_version = version
        # Device nodes are cheap to look at and some appear late (nvidia-uvm loads on first use).
        return replace(self._files, device_nodes=self.discovery.device_nodes())

    def write_claim(
        self,
        claim_uid: str,
        devices: tuple[DevicePlan, ...],
        mig: tuple[MigRecord, ...],
        edits: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> dict[str, tuple[str, ...]]:
        instances: dict[tuple[str, int | None], MigRecord] = {(r.card, r.placement_start): r for r in mig}
        entries = []
        for plan in devices:
            if plan.vfio:  # on vfio-pci: the nvidia driver knows the card no more (DESIGN.md D7)
                entries.append(ClaimDevice(plan.device, None, None, (edits or {}).get(plan.device)))
                continue
            card = self.discovery.card_node(plan.card)
            caps = None
            if plan.kind == "MIG":
                record = instances[(plan.card, plan.placement_start)]
                caps = self.discovery.mig_caps(card.minor, record.gpu_instance_id, record.compute_instance_id)
            entries.append(ClaimDevice(plan.device, card, caps, (edits or {}).get(plan.device)))
        files = self.driver_files() if any(entry.card is not None for entry in entries) else None
        spec = claim_spec(files, claim_uid, entries)
        self.writer.write_claim(claim_uid, spec)
        return {plan.device: (qualified_id(claim_device_name(claim_uid, plan.device)),) for plan in devices}

    def delete_claim(self, claim_uid: str) -> None:
        self.writer.delete_claim(claim_uid)

    def claims_with_specs(self) -> set[str]:
        return set(self.writer.claim_uids())
