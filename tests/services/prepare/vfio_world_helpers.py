# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What the VFIO prepare tests share: a node of two cards with IOMMU groups, claims, files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deckhouse_gpu.ports.dra_plugin import ClaimRef, PrepareResult
from deckhouse_gpu.services.prepare.service import PrepareService
from testkit.vfio_world import VfioWorld, build_vfio_world

A100, A30 = "0000:3b:00.0", "0000:5e:00.0"
WHOLE_A100, WHOLE_A30 = "gpu-0000-3b-00-0", "gpu-0000-5e-00-0"
VM_ANNOTATION = {"gpu.deckhouse.io/vfio": "true"}


@pytest.fixture
def node(tmp_path: Path) -> VfioWorld:
    return build_vfio_world(tmp_path, {A100: "a100-40gb", A30: "a30"})


def ref(claim: dict[str, Any]) -> ClaimRef:
    meta = claim["metadata"]
    return ClaimRef(meta["namespace"], meta["uid"], meta["name"])


def prepare(service: PrepareService, claim: dict[str, Any]) -> PrepareResult:
    return service.prepare([ref(claim)])[ref(claim).uid]


def entries(node: VfioWorld) -> dict[str, Any]:
    path = node.world.checkpoint_path
    return json.loads(path.read_text())["claims"] if path.exists() else {}


def spec(node: VfioWorld, uid: str) -> dict[str, Any] | None:
    path = node.world.cdi_root / f"gpu.deckhouse.io-gpu_{uid}.json"
    return json.loads(path.read_text()) if path.exists() else None


def payload(node: VfioWorld, uid: str) -> dict[str, Any] | None:
    path = node.world.root / "plugin/vfio-payload" / f"{uid}.json"
    return json.loads(path.read_text()) if path.exists() else None


def ledger(node: VfioWorld) -> list[str]:
    return sorted(p.stem for p in Path(node.world.root / "plugin/vfio-ledger").glob("*.json"))


def drivers(node: VfioWorld, card: str) -> tuple[str | None, str | None]:
    return node.driver(card), node.driver(node.audio(card))


def untouched(node: VfioWorld) -> bool:
    """Nothing of passthrough left: both cards on their drivers, no record, no file."""
    return (
        drivers(node, A100) == ("nvidia", "snd_hda_intel")
        and drivers(node, A30) == ("nvidia", "snd_hda_intel")
        and entries(node) == {}
        and ledger(node) == []
        and sorted(node.world.nvml.device_addresses()) == [A100, A30]
    )
