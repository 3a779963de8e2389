# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The pci.ids names of the data-center GPUs the module's DeviceClass examples and docs name.

The ``gpu.deckhouse.io/device`` label and attribute come from the device's pci.ids name
(``GA100GL [A30 PCIe]`` -> ``a30-pcie``), read from the host. A host without pci.ids, or with one
older than the card (a real H200 host had none at all), would label the card ``10de-2335`` and no
DeviceClass written for ``h200-sxm-141gb`` would match it. These names, exactly as pci.ids spells
them (checked against lspci output of real hosts), stand in where the host has none; the host's
own pci.ids always wins.
"""

from __future__ import annotations

NVIDIA = "10de"

KNOWN_GPU_NAMES: dict[tuple[str, str], str] = {
    (NVIDIA, "20b7"): "GA100GL [A30 PCIe]",
    (NVIDIA, "20f1"): "GA100 [A100 PCIe 40GB]",
    (NVIDIA, "20b5"): "GA100 [A100 PCIe 80GB]",
    (NVIDIA, "2330"): "GH100 [H100 SXM5 80GB]",
    (NVIDIA, "2335"): "GH100 [H200 SXM 141GB]",
    (NVIDIA, "26b9"): "AD102GL [L40S]",
    (NVIDIA, "1eb8"): "TU104GL [Tesla T4]",
}


def known_gpu_name(vendor_id: str, device_id: str) -> str | None:
    return KNOWN_GPU_NAMES.get((vendor_id.lower(), device_id.lower()))
