# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import os

import pytest

from deckhouse_gpu.adapters.host.sysfs_host import SysfsHost
from deckhouse_gpu.ports.host import HostUnreadable
from deckhouse_gpu.simulator.host.host_builder import HostBuilder


def test_only_supported_gpus_are_reported(host: HostBuilder):
    host.add_gpu("a30", "0000:17:00.0", iommu_group=30)
    host.add_gpu("t4", "0000:b1:00.0", driver=None)
    scan = SysfsHost(host.root).scan_pci()
    assert [d.address for d in scan.gpus] == ["0000:17:00.0", "0000:b1:00.0"]
    assert scan.errors == []
    assert scan.scanned == 14  # 12 other functions (BMC VGA, GPU audio, NVSwitch, ...) + 2 GPUs
    a30 = scan.gpus[0]
    assert (a30.class_code, a30.vendor_id, a30.device_id) == ("030200", "10de", "20b7")
    assert (a30.subsystem_vendor_id, a30.subsystem_device_id) == ("10de", "1532")
    assert a30.driver == "nvidia"
    assert a30.iommu_group == 30
    assert a30.numa_node is None  # sysfs says -1
    assert a30.pcie_root == "pci0000:17"  # from the resolved sysfs path
    assert scan.gpus[1].driver is None


def test_bus_entries_are_symlinks_like_real_sysfs(host: HostBuilder):
    host.add_gpu("a30", "0000:17:00.0", iommu_group=3)
    entry = host.bus_devices / "0000:17:00.0"
    assert entry.is_symlink()
    assert os.readlink(entry / "driver").endswith("bus/pci/drivers/nvidia")
    assert os.readlink(entry / "iommu_group").endswith("kernel/iommu_groups/3")


@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        ("class", "garbage\n", "class: not a 24-bit PCI class code"),
        ("vendor", "\x00\xff\n", "vendor: not a 16-bit hex id"),
        ("device", "0x12345\n", "device: not a 16-bit hex id"),
    ],
)
def test_garbage_skips_only_the_affected_device(host: HostBuilder, file, content, message):
    host.add_gpu("a30", "0000:17:00.0")
    host.add_gpu("a30", "0000:31:00.0")
    host.write_device_file("0000:31:00.0", file, content)
    scan = SysfsHost(host.root).scan_pci()
    assert [d.address for d in scan.gpus] == ["0000:17:00.0"]
    assert [(e.address, e.message.split("'")[0].strip()) for e in scan.errors] == [
        ("0000:31:00.0", message + ":")
    ]


def test_unreadable_device_file_is_reported(host: HostBuilder):
    host.add_gpu("a30", "0000:17:00.0")
    (host.device_dir("0000:17:00.0") / "vendor").unlink()
    scan = SysfsHost(host.root).scan_pci()
    assert scan.gpus == []
    assert scan.errors[0].address == "0000:17:00.0"
    assert scan.errors[0].message.startswith("cannot read vendor")


def test_broken_optional_files_do_not_lose_the_card(host: HostBuilder):
    host.add_gpu("a30", "0000:17:00.0")
    host.write_device_file("0000:17:00.0", "subsystem_vendor", "junk")
    host.write_device_file("0000:17:00.0", "numa_node", "1\n")
    (gpu,) = SysfsHost(host.root).scan_pci().gpus
    assert gpu.subsystem_vendor_id is None
    assert gpu.numa_node == 1


def test_strange_directory_name_is_reported_not_fatal(host: HostBuilder):
    (host.bus_devices / "not-an-address").mkdir()
    scan = SysfsHost(host.root).scan_pci()
    assert [e.address for e in scan.errors] == ["not-an-address"]


def test_missing_device_list_is_host_unreadable(tmp_path):
    with pytest.raises(HostUnreadable, match="cannot list"):
        SysfsHost(tmp_path).scan_pci()


def test_facts_from_host_files(host: HostBuilder):
    facts = SysfsHost(host.root).facts()
    assert facts.kernel_release is not None
    assert facts.kernel_release.strip() == "5.15.0-105-generic"
    assert facts.dmi_sys_vendor == "Supermicro"
    assert facts.os_release is not None
    assert "ID=ubuntu" in facts.os_release


def test_os_release_falls_back_to_usr_lib(host: HostBuilder):
    text = (host.root / "etc/os-release").read_text()
    (host.root / "etc/os-release").unlink()
    (host.root / "usr/lib").mkdir(parents=True)
    (host.root / "usr/lib/os-release").write_text(text)
    assert SysfsHost(host.root).facts().os_release == text


def test_missing_facts_are_none(tmp_path):
    facts = SysfsHost(tmp_path).facts()
    assert (facts.os_release, facts.kernel_release, facts.dmi_sys_vendor, facts.dmi_product_name) == (
        None,
    ) * 4


def test_pci_ids_first_location_wins_and_is_cached_until_changed(host: HostBuilder):
    reader = SysfsHost(host.root)
    ids = reader.pci_ids()
    assert ids is not None
    assert ids.device_name("10de", "20b7") == "GA100GL [A30 PCIe]"
    assert reader.pci_ids() is ids
    host.install_pci_ids("10de  NVIDIA Corp (hwdata)\n", location="usr/share/hwdata/pci.ids")
    newer = reader.pci_ids()
    assert newer is not None
    assert newer.vendor_name("10de") == "NVIDIA Corp (hwdata)"


def test_no_pci_ids_anywhere(tmp_path):
    assert SysfsHost(tmp_path).pci_ids() is None
