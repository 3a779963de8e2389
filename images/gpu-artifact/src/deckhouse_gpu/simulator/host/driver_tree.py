# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Builds an NVIDIA node on disk the way CDI discovery reads it: /dev, /proc and a driver root.

Plain functions over a root path, shared by the tests and the simulator. Device nodes
are plain files (creating real ones needs CAP_MKNOD), unless ``GPU_SIM_DEVICE_NODES=mknod``:
then they are character devices with the numbers the driver gives them, for a real container
runtime to create in its containers (tests/runtime); libraries come with the links a real
install has: ``libnvidia-ml.so.1 -> libnvidia-ml.so.580.82.07`` and, for a few, the
development name ``libcuda.so -> libcuda.so.1``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

DRIVER_VERSION = "580.82.07"
LIB_DIR = "usr/lib/x86_64-linux-gnu"
BIN_DIR = "usr/bin"
# Library stem -> its soname, as the 580 driver ships them.
SONAMES = {
    "libnvidia-ml": "libnvidia-ml.so.1",
    "libnvidia-cfg": "libnvidia-cfg.so.1",
    "libcuda": "libcuda.so.1",
    "libcudadebugger": "libcudadebugger.so.1",
    "libnvidia-opencl": "libnvidia-opencl.so.1",
    "libnvidia-gpucomp": "libnvidia-gpucomp.so." + DRIVER_VERSION,  # no separate soname
    "libnvidia-ptxjitcompiler": "libnvidia-ptxjitcompiler.so.1",
    "libnvidia-nvvm": "libnvidia-nvvm.so.4",
    "libnvidia-allocator": "libnvidia-allocator.so.1",
}
DEV_LINKS = ("libcuda", "libnvidia-ml")  # what the -dev packages add: <stem>.so -> soname
BINARIES = ("nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control")
CONTROL_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")
NODES_ENV = "GPU_SIM_DEVICE_NODES"
# The nvidia module's fixed major and minors; nvidia-uvm, nvidia-caps and the VFIO groups get a
# dynamic major from the kernel, so any free one stands for it.
NVIDIA_MAJOR = 195
CONTROL_NUMBERS = {
    "nvidiactl": (NVIDIA_MAJOR, 255),
    "nvidia-modeset": (NVIDIA_MAJOR, 254),
    "nvidia-uvm": (508, 0),
    "nvidia-uvm-tools": (508, 1),
}
CAPS_MAJOR = 509
VFIO_CONTAINER = (10, 196)  # the misc device /dev/vfio/vfio
VFIO_GROUP_MAJOR = 510


def write(path: Path, content: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


def device_node(path: Path, major: int, minor: int) -> Path:
    """A device node of the simulated host: a plain file, or with ``GPU_SIM_DEVICE_NODES=mknod``
    a character device ``major:minor`` (never opened: nothing drives those numbers here)."""
    if os.environ.get(NODES_ENV) != "mknod":
        return write(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(major, minor))
    return path


def link(path: Path, target: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        path.unlink()
    path.symlink_to(target)
    return path


def add_driver_libraries(
    driver_root: Path,
    version: str = DRIVER_VERSION,
    lib_dir: str = LIB_DIR,
    sonames: Mapping[str, str] = SONAMES,
    dev_links: Iterable[str] = DEV_LINKS,
    with_links: bool = True,
) -> dict[str, Path]:
    """Each library's versioned file plus its soname link; returns stem -> the real file."""
    directory = driver_root / lib_dir
    real = {}
    for stem, soname in sonames.items():
        versioned = f"{stem}.so.{version}"
        real[stem] = write(directory / versioned, f"ELF {versioned}\n")
        if with_links and soname != versioned:
            link(directory / soname, versioned)
    for stem in dev_links if with_links else ():
        link(directory / f"{stem}.so", sonames[stem])
    return real


def add_driver_binaries(
    driver_root: Path, names: Iterable[str] = BINARIES, bin_dir: str = BIN_DIR
) -> list[Path]:
    paths = [write(driver_root / bin_dir / name, "#!/bin/sh\n") for name in names]
    for path in paths:
        path.chmod(0o755)
    return paths


def build_driver_root(driver_root: Path, version: str = DRIVER_VERSION) -> Path:
    """A driver installed the Ubuntu way: libraries in the multiarch directory, tools in usr/bin."""
    add_driver_libraries(driver_root, version)
    add_driver_binaries(driver_root)
    return driver_root


def add_control_nodes(host_root: Path, names: Iterable[str] = CONTROL_NODES) -> list[Path]:
    return [device_node(host_root / "dev" / name, *CONTROL_NUMBERS[name]) for name in names]


def add_card(host_root: Path, pci_address: str, minor: int, model: str = "NVIDIA A100-SXM4-40GB") -> Path:
    """/dev/nvidia<minor> and the driver's /proc information file for the card; returns the file."""
    device_node(host_root / "dev" / f"nvidia{minor}", NVIDIA_MAJOR, minor)
    lines = [
        f"Model: \t\t {model}",
        "IRQ:   \t\t 150",
        f"GPU UUID: \t GPU-{minor:08x}-0000-0000-0000-000000000000",
        "Video BIOS: \t 92.00.45.00.06",
        "Bus Type: \t PCIe",
        "DMA Size: \t 47 bits",
        "DMA Mask: \t 0x7fffffffffff",
        f"Bus Location: \t {pci_address}",
        f"Device Minor: \t {minor}",
        "GPU Excluded:\t No",
    ]
    return write(
        host_root / "proc/driver/nvidia/gpus" / pci_address.lower() / "information", "\n".join(lines) + "\n"
    )


def _access(minor: int) -> str:
    return f"DeviceFileMinor: {minor}\nDeviceFileMode: 292\nDeviceFileModify: 1\n"


def add_mig_instance(
    host_root: Path, card_minor: int, gi: int, ci: int, gi_minor: int, ci_minor: int
) -> tuple[Path, Path]:
    """The access files of a GPU instance and its compute instance, their caps nodes, mig-minors."""
    base = host_root / f"proc/driver/nvidia/capabilities/gpu{card_minor}/mig/gi{gi}"
    gi_file = write(base / "access", _access(gi_minor))
    ci_file = write(base / f"ci{ci}" / "access", _access(ci_minor))
    for minor in (gi_minor, ci_minor):
        device_node(host_root / "dev/nvidia-caps" / f"nvidia-cap{minor}", CAPS_MAJOR, minor)
    minors = host_root / "proc/driver/nvidia-caps/mig-minors"
    old = minors.read_text() if minors.exists() else ""
    entries = f"gpu{card_minor}/gi{gi}/access {gi_minor}\ngpu{card_minor}/gi{gi}/ci{ci}/access {ci_minor}\n"
    write(minors, old + entries)
    return gi_file, ci_file


def build_host(host_root: Path, cards: Mapping[str, int]) -> Path:
    """A host with the control nodes and the given cards (PCI address -> device minor)."""
    add_control_nodes(host_root)
    for address, minor in cards.items():
        add_card(host_root, address, minor)
    return host_root


def add_image_hook(path: Path, content: str = "#!/bin/sh\nexit 0\n") -> Path:
    """A stand-in for the nvidia-cdi-hook binary shipped in the image."""
    write(path, content).chmod(0o755)
    return path
