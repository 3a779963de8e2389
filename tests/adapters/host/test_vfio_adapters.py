# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""VFIO's adapters: the real sysfs one (its reads, and the exact writes it makes, on a tree of
plain files), the simulated kernel that acts on those writes, the payload and ledger files, and
the NVML side over the stand-in libnvidia-ml.so."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from deckhouse_gpu.adapters.files.vfio_files import FileVfioLedger, FileVfioPayloads
from deckhouse_gpu.adapters.host.sysfs_vfio import SysfsVfio
from deckhouse_gpu.adapters.nvml.nvml_vfio import RealGpuProcesses
from deckhouse_gpu.ports.vfio import GpuProcesses, VfioError, VfioHost
from deckhouse_gpu.simulator.host import driver_tree
from deckhouse_gpu.simulator.host.gpu_catalog import OTHER_DEVICES
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML
from deckhouse_gpu.simulator.host.sim_vfio import SimGpuProcesses, SimulatedVfio
from tests.support import fake_pynvml
from tests.support.fake_pynvml import Card, FakeLibrary, real_nvml

fresh_bindings = fake_pynvml.fresh_bindings  # autouse: clean bindings for every test
CARD, AUDIO_FN, NIC_FN = "0000:17:00.0", "0000:17:00.1", "0000:18:00.0"
AUDIO = next(m for m in OTHER_DEVICES if m.key == "gpu-audio")
NIC = next(m for m in OTHER_DEVICES if m.key == "nic")


def host(root: Path, vfio: bool = True) -> HostBuilder:
    built = HostBuilder(root).install_nvidia_driver()
    if vfio:
        built.load_driver("vfio-pci")
    built.load_driver("snd_hda_intel")
    built.add_gpu("a30", CARD, "nvidia", iommu_group=12)
    built.add_function(AUDIO_FN, AUDIO, "snd_hda_intel", 12)
    return built


def driver(root: Path, address: str) -> str | None:
    link = root / "sys/bus/pci/devices" / address / "driver"
    return link.resolve().name if link.is_symlink() else None


def test_sysfs_reads_groups_functions_and_virtual_functions(tmp_path):
    built = host(tmp_path)
    built.add_function(NIC_FN, NIC, None, 13)
    built.write_device_file(CARD, "sriov_numvfs", "4\n")
    sysfs: VfioHost = SysfsVfio(tmp_path)
    assert sysfs.vfio_available()
    assert sysfs.iommu_group(CARD) == 12
    assert sysfs.iommu_group(NIC_FN) == 13
    assert sysfs.group_addresses(12) == (CARD, AUDIO_FN)
    gpu = sysfs.function(CARD)
    assert (gpu.class_code, gpu.vendor_id, gpu.device_id, gpu.driver) == ("030200", "10de", "20b7", "nvidia")
    assert gpu.numa_node is None  # sysfs says -1
    assert gpu.pcie_root == "pci0000:17"
    assert sysfs.function(NIC_FN).driver is None
    assert sysfs.sriov_vfs(CARD) == 4
    assert sysfs.sriov_vfs(AUDIO_FN) == 0  # no SR-IOV capability at all
    assert not SysfsVfio(tmp_path / "elsewhere").vfio_available()
    with pytest.raises(VfioError, match=r"cannot read PCI function 0000:99:00\.0"):
        sysfs.function("0000:99:00.0")
    with pytest.raises(VfioError, match="cannot list IOMMU group 77"):
        sysfs.group_addresses(77)
    with pytest.raises(VfioError, match="is not a PCI address"):
        sysfs.function("../../etc")


def test_the_real_adapter_writes_override_unbind_and_probe_in_that_order(tmp_path):
    host(tmp_path)
    bus = tmp_path / "sys/bus/pci"
    for path in (bus / "drivers/nvidia/unbind", bus / "drivers_probe"):
        path.write_text("")  # plain files: the writes land, and nothing acts on them
    with pytest.raises(VfioError, match="is bound to nvidia after the probe, not to vfio-pci"):
        SysfsVfio(tmp_path).bind_vfio(CARD)
    device = bus / "devices" / CARD
    assert (device / "driver_override").read_text() == "vfio-pci"
    assert (bus / "drivers/nvidia/unbind").read_text() == CARD
    assert (bus / "drivers_probe").read_text() == CARD


def test_a_write_the_kernel_refuses_says_what_to_fix(tmp_path):
    host(tmp_path)
    simulated = SimulatedVfio(tmp_path)
    simulated.read_only.add(CARD)
    with pytest.raises(VfioError, match=r"driver_override: Read-only file system; /sys is mounted read-only"):
        simulated.bind_vfio(CARD)
    assert driver(tmp_path, CARD) == "nvidia"  # nothing moved


def test_the_simulated_kernel_moves_the_driver_and_says_so(tmp_path):
    host(tmp_path)
    nvml = SimulatedNVML({CARD: "a30"})
    events: list[tuple[str, str]] = []
    kernel = SimulatedVfio(tmp_path, nvml, lambda action, address: events.append((action, address)))
    kernel.bind_vfio(CARD)
    kernel.bind_vfio(AUDIO_FN)
    assert (driver(tmp_path, CARD), driver(tmp_path, AUDIO_FN)) == ("vfio-pci", "vfio-pci")
    assert events == [("unbind", CARD), ("bind", CARD), ("unbind", AUDIO_FN), ("bind", AUDIO_FN)]
    assert nvml.device_addresses() == []  # NVML sees cards on nvidia only
    assert not (tmp_path / "proc/driver/nvidia/gpus" / CARD).exists()
    assert (tmp_path / "dev/vfio/12").exists()
    assert (tmp_path / "dev/vfio/vfio").exists()
    kernel.restore(AUDIO_FN, "snd_hda_intel")
    assert (tmp_path / "dev/vfio/12").exists()  # the group is still held by the card
    kernel.restore(CARD, "nvidia")
    kernel.restore(CARD, "nvidia")  # again: nothing left to do
    assert (driver(tmp_path, CARD), driver(tmp_path, AUDIO_FN)) == ("nvidia", "snd_hda_intel")
    assert not (tmp_path / "dev/vfio/12").exists()
    assert nvml.device_addresses() == [CARD]
    assert (tmp_path / "proc/driver/nvidia/gpus" / CARD / "information").exists()
    assert (tmp_path / "sys/bus/pci/devices" / CARD / "driver_override").read_text() == "(null)"  # cleared


def test_giving_a_function_back_to_a_driver_not_loaded_fails_clearly(tmp_path):
    built = host(tmp_path)
    kernel = SimulatedVfio(tmp_path)
    kernel.bind_vfio(AUDIO_FN)
    os.rmdir(built.sys / "bus/pci/drivers/snd_hda_intel")
    with pytest.raises(
        VfioError, match=r"cannot give 0000:17:00.1 back to snd_hda_intel: the driver is not loaded"
    ):
        kernel.restore(AUDIO_FN, "snd_hda_intel")
    kernel.restore(AUDIO_FN, None)  # an unbound function stays unbound
    assert driver(tmp_path, AUDIO_FN) is None
    with pytest.raises(VfioError, match=r"0000:19:00\.0 is gone"):
        kernel.restore("0000:19:00.0", "nvidia")


def test_a_probe_without_vfio_pci_loaded_leaves_the_function_unbound(tmp_path):
    host(tmp_path, vfio=False)
    with pytest.raises(VfioError, match="is bound to no driver after the probe, not to vfio-pci"):
        SimulatedVfio(tmp_path).bind_vfio(AUDIO_FN)


def test_device_nodes_carry_numbers_only_when_real(tmp_path):
    driver_tree.write(tmp_path / "dev/vfio/12")
    (tmp_path / "dev/vfio/vfio").symlink_to("/dev/null")  # a real character device
    sysfs = SysfsVfio(tmp_path)
    null = os.stat("/dev/null").st_rdev
    assert sysfs.device_node("/dev/vfio/vfio").major == os.major(null)
    assert sysfs.device_node("/dev/vfio/vfio").minor == os.minor(null)
    assert sysfs.device_node("/dev/vfio/12").major is None
    assert sysfs.device_node("/dev/vfio/13").path == "/dev/vfio/13"


def test_payloads_are_written_readable_and_found_by_claim(tmp_path):
    payloads = FileVfioPayloads(tmp_path / "plugin", "/var/lib/kubelet/plugins/gpu.deckhouse.io")
    payloads.write_claim("uid-1", b"{}\n")
    path = tmp_path / "plugin/vfio-payload/uid-1.json"
    assert path.read_bytes() == b"{}\n"
    assert path.stat().st_mode & 0o777 == 0o644
    assert payloads.host_path("uid-1") == "/var/lib/kubelet/plugins/gpu.deckhouse.io/vfio-payload/uid-1.json"
    assert payloads.claims_with_files() == {"uid-1"}
    payloads.delete_claim("uid-1")
    payloads.delete_claim("uid-1")
    payloads.delete_claim("../x")
    assert payloads.claims_with_files() == set()
    with pytest.raises(ValueError, match="cannot name a VFIO payload file"):
        payloads.write_claim("../escape", b"")


def test_the_ledger_keeps_this_boots_moves_only(tmp_path):
    boot = driver_tree.write(tmp_path / "boot_id", "boot-1\n")
    ledger = FileVfioLedger(tmp_path / "plugin", boot)
    ledger.add(CARD, "nvidia")
    ledger.add(AUDIO_FN, None)
    assert ledger.entries() == {CARD: "nvidia", AUDIO_FN: None}
    ledger.remove(AUDIO_FN)
    ledger.remove(AUDIO_FN)
    assert ledger.entries() == {CARD: "nvidia"}
    (tmp_path / "plugin/vfio-ledger/0000:18:00.0.json").write_text("not json")
    boot.write_text("boot-2\n")  # rebooted: nothing this driver moved is moved any more
    assert ledger.entries() == {}
    assert sorted(p.name for p in (tmp_path / "plugin/vfio-ledger").iterdir()) == ["0000:18:00.0.json"]
    with pytest.raises(ValueError, match="is not a PCI address"):
        ledger.add("../x", "nvidia")
    document = {"function": CARD, "originalDriver": 7, "bootID": "boot-2"}
    (tmp_path / "plugin/vfio-ledger" / f"{CARD}.json").write_text(json.dumps(document))
    assert ledger.entries() == {}  # unreadable: kept for a person, never acted on


def test_nvml_lists_compute_and_graphics_processes_of_a_card(tmp_path):
    library = FakeLibrary(Card(compute_pids=[77, 12], graphics_pids=[12, 300]))
    gpus: GpuProcesses = RealGpuProcesses(real_nvml(library), tmp_path)
    assert gpus.processes(CARD) == (12, 77, 300)
    with pytest.raises(VfioError, match=r"0000:31:00\.0: NVML cannot list its processes"):
        gpus.processes("0000:31:00.0")


def test_a_compute_only_card_has_no_graphics_processes_to_list(tmp_path):
    # One library per test: pynvml keeps the first it opens for the rest of the process.
    compute_only = FakeLibrary(Card(compute_pids=[5]))  # graphics: NOT_SUPPORTED
    assert RealGpuProcesses(real_nvml(compute_only), tmp_path).processes(CARD) == (5,)


def test_a_card_is_visible_once_the_kernel_driver_and_nvml_have_it(tmp_path):
    library = FakeLibrary(Card())
    gpus = RealGpuProcesses(real_nvml(library), tmp_path)
    assert not gpus.visible(CARD)  # the kernel driver has not taken it yet
    driver_tree.add_card(tmp_path, CARD, 0)
    assert gpus.visible(CARD)
    driver_tree.add_card(tmp_path, "0000:31:00.0", 1)
    assert not gpus.visible("0000:31:00.0")  # the kernel has it, NVML (initialised again) does not
    assert library.calls["nvmlShutdown"] >= 1
    gpus.let_go(CARD)
    assert gpus.visible(CARD)  # NVML opens again on its next use


def test_the_simulated_nvml_side(tmp_path):
    nvml = SimulatedNVML({CARD: "a30"})
    gpus: GpuProcesses = SimGpuProcesses(nvml)
    assert gpus.processes(CARD) == ()
    nvml.set_busy(CARD, True, (31337,))
    assert gpus.processes(CARD) == (31337,)
    nvml.set_busy(CARD)
    assert gpus.processes(CARD) == (4242,)
    assert gpus.visible(CARD)
    nvml.remove_card(CARD)
    assert not gpus.visible(CARD)
    with pytest.raises(VfioError, match="NVML cannot list its processes"):
        gpus.processes(CARD)
    nvml.fail_library()
    assert not gpus.visible(CARD)
