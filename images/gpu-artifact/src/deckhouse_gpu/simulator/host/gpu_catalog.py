# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""PCI identities of the GPU models the simulator and the tests put into simulated hosts.

Ids and names are those of the public pci.ids database; the model keys match the NVML data
names used by gpu-handler (``a30``, ``a100-40gb``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PciModel:
    key: str
    vendor_id: str
    device_id: str
    class_code: str
    subsystem_vendor_id: str
    subsystem_device_id: str
    device_name: str  # as pci.ids names it
    subsystem_name: str


NVIDIA = "10de"

GPU_MODELS: dict[str, PciModel] = {
    model.key: model
    for model in (
        PciModel("a30", NVIDIA, "20b7", "030200", NVIDIA, "1532", "GA100GL [A30 PCIe]", "A30 24GB"),
        PciModel(
            "a100-40gb", NVIDIA, "20f1", "030200", NVIDIA, "145f", "GA100 [A100 PCIe 40GB]", "A100 PCIe"
        ),
        PciModel(
            "a100-80gb", NVIDIA, "20b5", "030200", NVIDIA, "1533", "GA100 [A100 PCIe 80GB]", "A100 80GB"
        ),
        PciModel(
            "h100-80gb", NVIDIA, "2330", "030200", NVIDIA, "16c1", "GH100 [H100 SXM5 80GB]", "H100 SXM5"
        ),
        # Recorded from a real card (nvml_models/h200-141gb.yaml); the subsystem has no pci.ids name.
        PciModel("h200-141gb", NVIDIA, "2335", "030200", NVIDIA, "18bf", "GH100 [H200 SXM 141GB]", ""),
        PciModel("l40s", NVIDIA, "26b9", "030200", NVIDIA, "1851", "AD102GL [L40S]", "L40S"),
        PciModel("t4", NVIDIA, "1eb8", "030200", NVIDIA, "12a2", "TU104GL [Tesla T4]", "T4 16GB"),
    )
}

# PCI functions that are not inventoried GPUs but sit on real GPU nodes: they prove the filter.
OTHER_DEVICES: tuple[PciModel, ...] = (
    PciModel("bridge", "8086", "2030", "060400", "8086", "0000", "Sky Lake-E PCI Express Root Port A", ""),
    PciModel("nic", "15b3", "101b", "020000", "15b3", "0007", "MT28908 Family [ConnectX-6]", ""),
    PciModel("nvme", "144d", "a808", "010802", "144d", "a801", "NVMe SSD Controller SM981/PM981/PM983", ""),
    PciModel("bmc-vga", "1a03", "2000", "030000", "1a03", "2000", "ASPEED Graphics Family", ""),
    PciModel("gpu-audio", NVIDIA, "10f8", "040300", NVIDIA, "0000", "TU104 HD Audio Controller", ""),
    PciModel("nvswitch", NVIDIA, "22a3", "068000", NVIDIA, "1796", "GH100 [H100 NVSwitch]", ""),
)

VENDOR_NAMES = {
    NVIDIA: "NVIDIA Corporation",
    "8086": "Intel Corporation",
    "15b3": "Mellanox Technologies",
    "144d": "Samsung Electronics Co Ltd",
    "1a03": "ASPEED Technology, Inc.",
}

CLASS_NAMES = {
    "01": ("Mass storage controller", {"08": "Non-Volatile memory controller"}),
    "02": ("Network controller", {"00": "Ethernet controller"}),
    "03": ("Display controller", {"00": "VGA compatible controller", "02": "3D controller"}),
    "04": ("Multimedia controller", {"03": "Audio device"}),
    "06": ("Bridge", {"04": "PCI bridge", "80": "Bridge"}),
}


def pci_ids_text() -> str:
    """A small pci.ids in the real file's format, covering every model above."""
    lines = ["# pci.ids excerpt written for the gpu module simulator"]
    models = [*GPU_MODELS.values(), *OTHER_DEVICES]
    for vendor_id, vendor_name in sorted(VENDOR_NAMES.items()):
        lines.append(f"{vendor_id}  {vendor_name}")
        for model in sorted((m for m in models if m.vendor_id == vendor_id), key=lambda m: m.device_id):
            lines.append(f"\t{model.device_id}  {model.device_name}")
            if model.subsystem_name:
                lines.append(
                    f"\t\t{model.subsystem_vendor_id} {model.subsystem_device_id}  {model.subsystem_name}"
                )
    lines.append("")
    lines.append("# List of known device classes, subclasses and programming interfaces")
    for code, (name, subclasses) in sorted(CLASS_NAMES.items()):
        lines.append(f"C {code}  {name}")
        lines.extend(f"\t{sub}  {sub_name}" for sub, sub_name in sorted(subclasses.items()))
    return "\n".join(lines) + "\n"
