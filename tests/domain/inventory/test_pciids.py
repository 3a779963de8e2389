# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

from deckhouse_gpu.domain.inventory.pciids import parse_pci_ids
from deckhouse_gpu.simulator.host.gpu_catalog import pci_ids_text

SAMPLE = """\
# comment
10de  NVIDIA Corporation
\t20b7  GA100GL [A30 PCIe]
\t\t10de 1532  A30 24GB
\t2330  GH100 [H100 SXM5 80GB]
1002  Advanced Micro Devices, Inc. [AMD/ATI]
\t740f  Aldebaran/MI200 [Instinct MI210]

C 03  Display controller
\t00  VGA compatible controller
\t\t00  VGA controller
\t02  3D controller
"""


def test_names_for_indexed_vendor_devices_subsystems_and_classes():
    ids = parse_pci_ids(SAMPLE, frozenset({"10de"}))
    assert ids.vendor_name("10de") == "NVIDIA Corporation"
    assert ids.device_name("10de", "20b7") == "GA100GL [A30 PCIe]"
    assert ids.subsystem_name("10de", "20b7", "10de", "1532") == "A30 24GB"
    assert ids.class_name("030200") == "3D controller"
    assert ids.class_name("030000") == "VGA compatible controller"
    assert ids.class_name("038000") == "Display controller"  # unknown subclass: the base class name
    assert ids.skipped_lines == 0


def test_other_vendors_keep_only_their_name():
    ids = parse_pci_ids(SAMPLE, frozenset({"10de"}))
    assert ids.vendor_name("1002") == "Advanced Micro Devices, Inc. [AMD/ATI]"
    assert ids.device_name("1002", "740f") is None


def test_malformed_lines_cost_only_their_own_names():
    broken = SAMPLE.replace("\t2330  GH100", "\t23  GH100").replace("C 03", "C 3x", 0)
    broken += "\x00\x01 binary junk\n\tzz  bad subclass\n"
    ids = parse_pci_ids(broken, frozenset({"10de"}))
    assert ids.device_name("10de", "2330") is None
    assert ids.device_name("10de", "20b7") == "GA100GL [A30 PCIe]"
    assert ids.class_name("030200") == "3D controller"
    assert ids.skipped_lines == 3


def test_a_truncated_file_keeps_what_came_before():
    ids = parse_pci_ids(SAMPLE[: SAMPLE.index("\t2330")], frozenset({"10de"}))
    assert ids.device_name("10de", "20b7") == "GA100GL [A30 PCIe]"
    assert ids.classes == {}


def test_simulator_excerpt_parses_cleanly():
    ids = parse_pci_ids(pci_ids_text(), frozenset({"10de"}))
    assert ids.skipped_lines == 0
    assert ids.device_name("10de", "26b9") == "AD102GL [L40S]"
