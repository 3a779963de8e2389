# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The node of the NVML and disk fault tests (tests/e2e/test_nvml_faults*.py, test_disk_faults.py).

It is the crash tests' node (tests/e2e/crash_node.py, sim_node.py: two A30s under a host root, the
API on a fake API server, the IOMMU on as in test_prepare_crash_vfio.py), but the handler's
PrepareService runs in the test's own process, built as ``gpu-handler run`` builds it, with its
NVML-facing ports wrapped by testkit/nvml_faults.py. What a call leaves is read back from the host
root's files and the API with the crash tests' helpers, and compared with the node as it was.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from deckhouse_gpu.adapters.kube.kube_client import load_kube
from deckhouse_gpu.cmd.gpu_handler import wiring as handler_wiring
from deckhouse_gpu.cmd.gpu_handler.plugin_wiring import build_prepare
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import PODS
from deckhouse_gpu.services.prepare.service import PrepareService
from deckhouse_gpu.simulator import gpu_handler as gpu_handler_sim
from deckhouse_gpu.simulator.host.sim_card_settings import SimCardSettings
from testkit.fake_apiserver import FakeApiServer
from testkit.nvml_faults import FaultyGpuProcesses, FaultyMig, FaultySettings, FaultyVfioHost, NvmlFaults
from testkit.prepare_world import allocate, allocate_share
from testkit.vfio_world import allocate_vfio
from tests.e2e.sim_node import (
    CARD_A,
    CARD_B,
    PLUGIN_DIR,
    checkpoint_claims,
    claim_specs,
    handler_args,
    metadata_files,
    mig_state,
    ref,
)
from tests.e2e.test_prepare_crash_vfio import AUDIO_A, build_vfio_host
from tests.services.prepare.sharing_world import MPS, NAMESPACE, time_slicing

WHOLE_A = "gpu-0000-17-00-0"
MIG_0, MIG_1 = (f"{WHOLE_A}-mig-1g-6gb-{start}" for start in (0, 1))
_names = itertools.count()


@dataclass(frozen=True)
class Scenario:
    """One offer type: how its claim is allocated, and whether card A starts in MIG mode."""

    name: str
    allocate: Callable[[FakeApiServer, str], dict[str, Any]]
    card_a_in_mig_mode: bool = False


SCENARIOS = (
    Scenario("physical", lambda s, n: allocate(s.kube, n, WHOLE_A)),
    # A whole card found in MIG mode: switched off, and on again when the prepare is rolled back.
    Scenario("physical-from-mig", lambda s, n: allocate(s.kube, n, WHOLE_A), card_a_in_mig_mode=True),
    Scenario("mig", lambda s, n: allocate(s.kube, n, MIG_0, MIG_1)),
    Scenario("time-sliced", lambda s, n: allocate_share(s.kube, n, WHOLE_A, "50", time_slicing("Long"))),
    Scenario("mps", lambda s, n: allocate_share(s.kube, n, WHOLE_A, "50", MPS)),
    Scenario("vfio", lambda s, n: allocate_vfio(s.kube, n, WHOLE_A)),
)


class FaultNode:
    """A fresh host root on the module's API server, and its in-process gpu-handler."""

    def __init__(self, root: Path, kubeconfig: str, server: FakeApiServer, scenario: Scenario) -> None:
        self.root, self.kubeconfig, self.server, self.scenario = root, kubeconfig, server, scenario
        build_vfio_host(root)
        self.faults = NvmlFaults()
        if scenario.card_a_in_mig_mode:
            self.service().mig.set_mig_mode(CARD_A, True)
        self.faults.calls.clear()
        self.before = self.host()
        self.claim: ClaimRef = ref(scenario.allocate(server, f"{scenario.name}-{next(_names)}"))

    def service(self) -> PrepareService:
        """gpu-handler's PrepareService as ``gpu-handler run`` builds it, its NVML ports faulty."""
        args = gpu_handler_sim.parse_args(["run", *handler_args(self.root, self.kubeconfig)])
        api = load_kube(args.kubeconfig)
        nvml = handler_wiring.make_nvml(args, handler_wiring.node_gpu_addresses(args, api))
        service, _, _ = build_prepare(args, api, nvml, SystemClock(), offers=None)
        service.mig = FaultyMig(service.mig, self.faults)
        assert service.sharing is not None
        assert service.vfio is not None
        settings = FaultySettings(service.sharing.settings, self.faults)
        service.sharing = replace(service.sharing, settings=settings, poll_interval=0.01)
        host, gpus = (
            FaultyVfioHost(service.vfio.host, self.faults),
            FaultyGpuProcesses(service.vfio.gpus, self.faults),
        )
        service.vfio = replace(service.vfio, host=host, gpus=gpus, poll_interval=0.01, return_timeout=0.2)
        return service

    def prepare(self, service: PrepareService) -> str:
        return service.prepare([self.claim])[self.claim.uid].error

    def unprepare(self, service: PrepareService) -> str:
        return service.unprepare([self.claim])[self.claim.uid]

    def host(self) -> dict[str, Any]:
        """What the node holds, MIG UUIDs aside: MIG modes and instances, card settings, daemon
        Pods, drivers, CDI specs, device metadata files, VFIO payloads and ledger, checkpoint."""
        mig = {
            card: (
                s["migCurrent"],
                s["migPending"],
                sorted((i["profileID"], i["placementStart"]) for i in s["instances"]),
            )
            for card, s in mig_state(self.root).items()
        }
        settings = SimCardSettings.under(self.root, [CARD_A, CARD_B])
        plugin = self.root / PLUGIN_DIR
        return {
            "mig": mig,
            "settings": {
                c: (str(settings.compute_mode(c)), str(settings.time_slice(c))) for c in (CARD_A, CARD_B)
            },
            "pods": sorted(
                p["metadata"]["name"] for p in self.server.kube.list(PODS, namespace=NAMESPACE).items
            ),
            "drivers": {a: self._driver(a) for a in (CARD_A, AUDIO_A, CARD_B)},
            "specs": claim_specs(self.root),
            "metadata": metadata_files(self.root),
            "vfio": sorted(str(p.relative_to(plugin)) for p in plugin.glob("vfio-*/*")),
            "checkpoint": {uid: entry["state"] for uid, entry in checkpoint_claims(self.root).items()},
        }

    def _driver(self, address: str) -> str | None:
        link = self.root / "sys/bus/pci/devices" / address / "driver"
        return link.resolve().name if link.is_symlink() else None

    def entry(self) -> dict[str, Any] | None:
        entry: dict[str, Any] | None = checkpoint_claims(self.root).get(self.claim.uid)
        return entry

    def leaks(self) -> list[str]:
        """What the host holds that no checkpoint entry accounts for: a MIG instance nobody
        recorded outside the placements a PrepareStarted entry asked for (its rollback finds
        those), a spec, metadata files or a daemon Pod without an entry."""
        entries = checkpoint_claims(self.root)
        recorded = {(r["card"], r["placementStart"]) for e in entries.values() for r in e.get("mig", [])}
        asked = {
            (d["card"], d.get("placementStart"))
            for e in entries.values()
            if e["state"] == "PrepareStarted"
            for d in e["devices"]
        }
        found = []
        for card, state in mig_state(self.root).items():
            for instance in state["instances"]:
                where = (card, instance["placementStart"])
                if where not in recorded and where not in asked:
                    found.append(f"MIG instance {where} owned by no entry")
        host = self.host()
        if not entries:
            for key in ("specs", "metadata", "pods", "vfio"):
                if host[key] != self.before[key]:
                    found.append(f"{key} left without an entry: {host[key]}")
        return found


__all__ = ["CARD_B", "MIG_0", "MIG_1", "SCENARIOS", "WHOLE_A", "FaultNode", "Scenario"]
