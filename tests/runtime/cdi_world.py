# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A simulated GPU node whose CDI specs a real container runtime can load (tests/runtime).

Five A30s on a bare-metal host under the test's folder, each in an IOMMU group of its own, with
``GPU_SIM_DEVICE_NODES=mknod``: the simulated driver's device nodes (/dev/nvidia*, the MIG
capability nodes, /dev/vfio/*) are character devices, so discovery finds their numbers and the
runtime creates them in a container without looking at the machine's own /dev. gpu-handler's
prepare service is built from ``gpu-handler-sim run`` arguments exactly as the process builds it
(``plugin_wiring.build_prepare``), on the in-memory API server, with the paths as the host sees
them pointing into the test's folder:
- the driver root as the host sees it (``--host-driver-root``) is the simulated host root, where
  the simulated driver is installed: the specs' library and tool mounts name real files;
- the plugin directory (``--plugin-dir``) is a folder of the test, reached by the handler through
  a link inside the host root, as in tests/real/handler_world.py: MPS pipe directories, the VFIO
  payload and the device metadata files are mounted from it;
- ``--cdi-hook-path`` is a stand-in for nvidia-cdi-hook that records its arguments.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckhouse_gpu.cmd.gpu_handler import wiring as handler_wiring
from deckhouse_gpu.cmd.gpu_handler.plugin_wiring import build_prepare
from deckhouse_gpu.domain.prepare.container.cdi_spec import claim_spec_file
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS
from deckhouse_gpu.services.prepare.service import PrepareService
from deckhouse_gpu.simulator import gpu_handler as gpu_handler_sim
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host import driver_tree
from deckhouse_gpu.simulator.host.gpu_catalog import OTHER_DEVICES
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from testkit.gpu_objects import ready_card
from testkit.prepare_world import allocate, allocate_share
from testkit.vfio_world import VFIO_DEVICE_CONFIG, allocate_vfio

NODE = "w1"
CARDS = ("0000:17:00.0", "0000:31:00.0", "0000:4b:00.0", "0000:65:00.0", "0000:ca:00.0")
AUDIO = next(model for model in OTHER_DEVICES if model.key == "gpu-audio")
MPS_NAMESPACE = "d8-gpu"
HOOK_LOG = "hook-calls.log"
GPU_CONFIG = {"apiVersion": "resource.gpu.deckhouse.io/v1alpha1", "kind": "GpuConfig"}
MPS = {**GPU_CONFIG, "sharing": {"strategy": "MPS"}}
TIME_SLICED = {**GPU_CONFIG, "sharing": {"strategy": "TimeSlicing", "timeSlicing": {"interval": "Long"}}}


def offer(card: str) -> str:
    return "gpu-" + card.replace(":", "-").replace(".", "-")


@dataclass
class CdiNode:
    root: Path
    api: MemoryKube
    service: PrepareService

    @property
    def host(self) -> Path:
        return self.root / "host"

    @property
    def plugin_dir(self) -> Path:
        return self.root / "plugin"

    @property
    def cdi_dir(self) -> Path:
        return self.host / "etc/cdi"

    def spec(self, claim: ClaimRef) -> Any:
        return json.loads((self.cdi_dir / claim_spec_file(claim.uid)).read_text())

    def prepare(self, claim: dict[str, Any]) -> tuple[ClaimRef, tuple[str, ...]]:
        """Prepares the claim as the kubelet asks gpu-handler to; its CDI device IDs."""
        meta = claim["metadata"]
        ref = ClaimRef(meta["namespace"], meta["uid"], meta["name"])
        result = self.service.prepare([ref])[ref.uid]
        assert not result.error, f"prepare of {ref.name}: {result.error}"
        ids = tuple(i for device in result.devices for i in device.cdi_device_ids)
        assert ids, f"prepare of {ref.name} returned no CDI device"
        return ref, ids

    def device_numbers(self, path: str) -> tuple[int, int]:
        info = os.stat(self.host / path.lstrip("/"))
        return os.major(info.st_rdev), os.minor(info.st_rdev)

    def hook_calls(self) -> list[str]:
        path = self.root / HOOK_LOG
        return path.read_text().splitlines() if path.exists() else []


def build_node(root: Path) -> CdiNode:
    """The host and gpu-handler's prepare service; needs GPU_SIM_DEVICE_NODES=mknod set (and root)."""
    assert os.environ.get(driver_tree.NODES_ENV) == "mknod"
    host = HostBuilder(root / "host").standard_node().install_nvidia_driver()
    host.load_driver("vfio-pci").load_driver("snd_hda_intel")
    for group, card in enumerate(CARDS, start=40):
        host.add_gpu("a30", card, "nvidia", iommu_group=group)
        host.add_function(card[:-1] + "1", AUDIO, "snd_hda_intel", group)
    plugin = root / "plugin"
    plugin.mkdir()
    driver_tree.link(root / "host" / str(plugin).lstrip("/"), str(plugin))
    hook = driver_tree.write(root / "nvidia-cdi-hook", f'#!/bin/sh\necho "$@" >> {root / HOOK_LOG}\n')
    hook.chmod(0o755)
    api = MemoryKube()
    api.create(NODES, {"metadata": {"name": NODE}})
    for card in CARDS:
        obj = ready_card(NODE, card, "a30")
        status = obj.pop("status")
        status["nodeInfo"] = {"nodeName": NODE, "bareMetal": True}  # as gpu-node-agent reads DMI
        api.create(PHYSICAL_GPUS, obj)
        api.patch(PHYSICAL_GPUS, obj["metadata"]["name"], {"status": status}, subresource="status")
    args = gpu_handler_sim.parse_args(
        ["run", "--node-name", NODE, "--kubeconfig", str(root / "unused-kubeconfig"),
         "--nvml-sim", ",".join(["a30"] * len(CARDS)), "--host-root", str(root / "host"),
         "--host-driver-root", str(root / "host"), "--cdi-root", "/etc/cdi",
         "--cdi-hook-path", str(hook), "--plugin-dir", str(plugin), "--namespace", MPS_NAMESPACE,
         "--mps-image", "registry.example/gpu-handler:test"]
    )  # fmt: skip
    nvml = handler_wiring.make_nvml(args, handler_wiring.node_gpu_addresses(args, api))
    service, _, _ = build_prepare(args, api, nvml, SystemClock(), offers=None)
    return CdiNode(root, api, service)


def allocate_claims(api: MemoryKube) -> dict[str, dict[str, Any]]:
    """One claim of each kind, each on a card of its own, allocated as the scheduler writes them."""
    whole, mig, mps, sliced, vfio = CARDS
    return {
        "whole": allocate(api, "whole", offer(whole)),
        "mig": allocate(api, "mig", f"{offer(mig)}-mig-1g-6gb-0"),
        "mps": allocate_share(api, "mps", offer(mps), "50", MPS),
        "time-sliced": allocate_share(api, "time-sliced", offer(sliced), "50", TIME_SLICED),
        "vfio": allocate_vfio(api, "vfio", offer(vfio), parameters=VFIO_DEVICE_CONFIG),
    }
