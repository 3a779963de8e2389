# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import pytest

from deckhouse_gpu.domain.inventory.pci import (
    driver_type,
    is_gpu,
    is_pci_address,
    parse_class_code,
    parse_hex_id,
)
from deckhouse_gpu.domain.inventory.physicalgpu import DriverType


@pytest.mark.parametrize(
    ("text", "expected"), [("0x10de\n", "10de"), ("0x10DE", "10de"), ("10de", "10de"), ("0x3", "0003")]
)
def test_parse_hex_id(text, expected):
    assert parse_hex_id(text) == expected


@pytest.mark.parametrize("text", ["", "garbage", "0x10de0", "0xzz", "\x00\x01"])
def test_parse_hex_id_rejects_garbage(text):
    with pytest.raises(ValueError, match="hex id"):
        parse_hex_id(text)


def test_parse_class_code():
    assert parse_class_code("0x030200\n") == "030200"
    with pytest.raises(ValueError, match="class code"):
        parse_class_code("0x0302")


@pytest.mark.parametrize(
    ("class_code", "vendor", "expected"),
    [
        ("030200", "10de", True),  # 3D controller (data-center GPUs)
        ("030000", "10de", True),  # VGA compatible (workstation cards)
        ("030000", "1a03", False),  # the BMC's ASPEED VGA
        ("040300", "10de", False),  # the GPU's HD audio function
        ("068000", "10de", False),  # NVSwitch
        ("038000", "10de", False),  # other display controller
        ("030200", "1002", False),  # AMD: not inventoried yet
    ],
)
def test_is_gpu(class_code, vendor, expected):
    assert is_gpu(class_code, vendor) is expected


def test_driver_type_mapping():
    assert driver_type("nvidia") is DriverType.NVIDIA
    assert driver_type("vfio-pci") is DriverType.VFIO
    assert driver_type("amdgpu") is DriverType.ROCM
    assert driver_type("nouveau") is DriverType.NOUVEAU
    assert driver_type("pci-stub") is DriverType.OTHER
    assert driver_type(None) is None


@pytest.mark.parametrize(
    ("text", "ok"),
    [("0000:02:00.0", True), ("0000:02:00.8", False), ("0000:2:00.0", False), ("0000:0G:00.0", False)],
)
def test_is_pci_address(text, ok):
    assert is_pci_address(text) is ok


def test_pcie_root_from_a_resolved_sysfs_path():
    from deckhouse_gpu.domain.inventory.pci import pcie_root  # noqa: PLC0415

    assert pcie_root("/sys/devices/pci0000:16/0000:16:02.0/0000:17:00.0") == "pci0000:16"
    assert pcie_root("/host/sys/devices/pci10000:00/0000:17:00.0") is None  # VMD domains have no plain root
    assert pcie_root("/tmp/elsewhere/0000:17:00.0") is None
