# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The built-in ``vm`` scenario (``make demo SCENARIO=vm``): a VM's launcher Pod gets a whole A100
through VFIO, the PhysicalGPU follows the card to vfio-pci and back, its MIG offers go and return,
and VFIO is refused on a VM node and on a card with a process.

The facts are read from the simulated world after each step (sysfs, the API, the files), then the
CLI run is checked to print them."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from deckhouse_gpu.domain.prepare.container.cdi_spec import claim_spec_file
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, RESOURCE_CLAIMS, RESOURCE_SLICES
from deckhouse_gpu.simulator.cli import main
from deckhouse_gpu.simulator.prepare import CLAIM_NAMESPACE
from deckhouse_gpu.simulator.scenario import load_scenario
from deckhouse_gpu.simulator.simulation import SimulatedCluster
from deckhouse_gpu.simulator.vfio import PLUGIN_DIR

NODE, A100, AUDIO, A30 = "worker-1", "0000:3b:00.0", "0000:3b:00.1", "0000:5e:00.0"
WAIT = 30.0
GPUCLASS_STEPS = 3  # the scenario opens with the GPUClass flow of a Deckhouse VM (issue 31)


@pytest.fixture(scope="module")
def cluster() -> Iterator[SimulatedCluster]:
    with SimulatedCluster(load_scenario("vm")) as cluster:
        yield cluster


def step(cluster: SimulatedCluster, index: int) -> list[str]:
    """The index-th step after the GPUClass flow; those are run_gpuclass_flow's."""
    return run(cluster, GPUCLASS_STEPS + index)


def run(cluster: SimulatedCluster, index: int) -> list[str]:
    cluster.apply(cluster.scenario.steps[index])
    cluster.settle()
    return cluster.report


def driver(cluster: SimulatedCluster, address: str) -> str | None:
    link = cluster.nodes[NODE].builder.device_dir(address) / "driver"
    return link.readlink().name if link.is_symlink() else None


def driver_type(cluster: SimulatedCluster, address: str) -> str | None:
    for card in cluster.api.list(PHYSICAL_GPUS).items:
        status = card.get("status") or {}
        if (status.get("pciInfo") or {}).get("address") == address:
            return (status.get("currentState") or {}).get("driverType")
    return None


def offers(cluster: SimulatedCluster) -> set[str]:
    return {
        device["name"]
        for piece in cluster.api.list(RESOURCE_SLICES).items
        if piece["spec"]["nodeName"] == NODE
        for device in piece["spec"].get("devices") or []
    }


def until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {WAIT} s")
        time.sleep(0.05)


def uid(cluster: SimulatedCluster, name: str) -> str:
    return str(cluster.api.get(RESOURCE_CLAIMS, name, namespace=CLAIM_NAMESPACE)["metadata"]["uid"])


def test_a_deckhouse_vm_gets_its_card_through_a_gpu_class(cluster: SimulatedCluster) -> None:
    until(lambda: "gpu-0000-3b-00-0-mig-1g-5gb-0" in offers(cluster), "the A100's MIG offers published")
    report = run(cluster, 0)
    assert (
        "  GPUClass a100-vm: Ready=True (DeviceClassReady): DeviceClass a100-vm selects 1 devices on 1 nodes"
        in report
    )
    vfio = '{"apiVersion":"resource.gpu.deckhouse.io/v1alpha1","kind":"VfioDeviceConfig"}'
    assert f"    config: {vfio}" in report
    assert cluster.api.get(DEVICE_CLASSES, "a100-vm")["metadata"]["ownerReferences"][0]["kind"] == "GPUClass"

    report = run(cluster, 1)
    assert "  gpu-dra-controller's webhook: allowed" in report
    claim = "virt-launcher-vm-0-q8r5t-gpu-0-x9q2w"
    assert (
        f"  gpu-dra-controller allocated {claim}: gpu-0000-3b-00-0 (config from FromClaim, FromClass)"
        in report
    )
    assert (driver(cluster, A100), driver(cluster, AUDIO)) == ("vfio-pci", "vfio-pci")
    claim_uid = uid(cluster, claim)
    root = cluster.nodes[NODE].builder.root
    spec = json.loads((root / "etc/cdi" / claim_spec_file(claim_uid)).read_text())
    edits = spec["devices"][0]["containerEdits"]
    assert [n["path"] for n in edits["deviceNodes"]] == ["/dev/vfio/vfio", "/dev/vfio/30"]
    metadata = root / PLUGIN_DIR.lstrip("/") / "dra-device-metadata" / claim_uid / "gpu-0" / "metadata.json"
    document, _ = json.JSONDecoder().raw_decode(metadata.read_text())
    (device,) = document["requests"][0]["devices"]
    assert device["attributes"]["resource.kubernetes.io/pciBusID"] == {"string": A100}
    assert document["podClaimName"] == "gpu-0"
    assert any(line.endswith(f"resource.kubernetes.io/pciBusID={A100}") for line in report)

    report = run(cluster, 2)
    assert f"  unprepared {claim}" in report
    assert f"  device metadata of {claim}: removed" in report
    assert (driver(cluster, A100), driver(cluster, AUDIO)) == ("nvidia", "snd_hda_intel")
    assert not metadata.exists()
    assert cluster.api.list(RESOURCE_CLAIMS, namespace=CLAIM_NAMESPACE).items == []


def test_the_vm_scenario_step_by_step(cluster: SimulatedCluster) -> None:
    until(lambda: "gpu-0000-3b-00-0-mig-1g-5gb-0" in offers(cluster), "the A100's MIG offers published")
    report = step(cluster, 0)
    assert (driver(cluster, A100), driver(cluster, AUDIO)) == ("vfio-pci", "vfio-pci")
    assert driver_type(cluster, A100) == "VFIO"  # the agent followed the uevents on its own
    until(lambda: not any(o.startswith("gpu-0000-3b-00-0-mig") for o in offers(cluster)), "MIG offers gone")
    assert "gpu-0000-3b-00-0" in offers(cluster)  # the whole card stays offered while the VM holds it
    root = cluster.nodes[NODE].builder.root
    spec = json.loads((root / "etc/cdi" / claim_spec_file(uid(cluster, "vm-1-gpu"))).read_text())
    assert [n["path"] for n in spec["devices"][0]["containerEdits"]["deviceNodes"]] == [
        "/dev/vfio/vfio",
        "/dev/vfio/30",
    ]
    payload = json.loads(
        (root / PLUGIN_DIR.lstrip("/") / "vfio-payload" / f"{uid(cluster, 'vm-1-gpu')}.json").read_text()
    )
    assert payload["pod"]["name"] == "virt-launcher-vm-1-x7k2p"
    assert (
        f"  {A100}: IOMMU group 30: {A100} vfio-pci, {AUDIO} vfio-pci; PhysicalGPU driverType VFIO" in report
    )

    report = step(cluster, 1)
    assert any(
        "VFIO passthrough needs a bare-metal node, and vm-worker's nodeInfo.bareMetal" in r for r in report
    )
    step(cluster, 2)
    report = step(cluster, 3)
    refused = f"processes run on card {A30} (PIDs 31337): stop them; the kubelet retries the prepare"
    assert f"  prepare failed: {refused}" in report
    assert driver(cluster, A30) == "nvidia"

    step(cluster, 4)
    assert (driver(cluster, A100), driver(cluster, AUDIO)) == ("nvidia", "snd_hda_intel")
    assert driver_type(cluster, A100) == "Nvidia"
    until(lambda: "gpu-0000-3b-00-0-mig-1g-5gb-0" in offers(cluster), "the A100's MIG offers back")


def test_make_demo_with_the_vm_scenario_shows_the_card_going_and_coming_back() -> None:
    out = io.StringIO()
    assert main(["--scenario", "vm"], out=out) == 0
    sections = out.getvalue().split("\nStep ")
    assert len(sections) == 1 + GPUCLASS_STEPS + 5
    ready, vm_pod, released, passed, on_vm, _, busy, back = sections[1:]
    assert "GPUClass a100-vm: Ready=True (DeviceClassReady)" in ready
    assert "DeviceClass a100-vm generated, owned by GPUClass a100-vm" in ready
    assert (
        "the VM module's ResourceClaimTemplate demo/vm-0-0-5f1c9a2e: request gpu-0: exactly a100-vm" in vm_pod
    )
    assert "device nodes /dev/vfio/vfio, /dev/vfio/30" in vm_pod
    assert f"resource.kubernetes.io/pciBusID={A100}" in vm_pod
    assert f"{A100}: IOMMU group 30: {A100} nvidia, {AUDIO} snd_hda_intel" in released
    assert "device nodes /dev/vfio/vfio, /dev/vfio/30" in passed
    assert "CDI common edits: none (no driver mounts, hooks or env)" in passed
    assert f"{A100}: IOMMU group 30: {A100} vfio-pci, {AUDIO} vfio-pci; PhysicalGPU driverType VFIO" in passed
    assert f"IOMMU group 30: {A100} (was nvidia), {AUDIO} (was snd_hda_intel)" in passed
    assert "QEMU hook payload VFIOPassthrough for Pod demo/virt-launcher-vm-1-x7k2p" in passed
    assert "prepare failed: card 0000:00:05.0: VFIO passthrough needs a bare-metal node" in on_vm
    assert "(PIDs 31337)" in busy
    assert (
        f"{A100}: IOMMU group 30: {A100} nvidia, {AUDIO} snd_hda_intel; PhysicalGPU driverType Nvidia" in back
    )
