# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Finds on this node what a CDI spec for its NVIDIA GPUs names, for ``domain.cdi_spec``.

Device nodes and /proc are read under the host root (the host's ``/`` as mounted in the pod);
libraries and tools under the driver root mount, links followed inside it (``MountedDriverRoot``),
since a driver container's links point into its own tree. Libraries are the ones whose file
name carries the running driver's version (read from libnvidia-ml.so.1's target), as nvcdi
picks them: a library left behind by an older driver in the same directory is never mounted.

Anything optional that is missing is logged and left out, so the spec still describes what is
there: /dev/nvidia-uvm, for one, appears only once something loaded nvidia-uvm. The card minor
and the MIG capability minors of an instance being prepared are not optional: without them the
container would get no GPU, so their absence is an error naming the file.
"""

from __future__ import annotations

import filecmp
import logging
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path, PurePosixPath

from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot
from deckhouse_gpu.domain.prepare.container.cdi_spec import (
    CardNode,
    DeviceNode,
    DriverFile,
    DriverFiles,
    MigCaps,
)
from deckhouse_gpu.domain.prepare.container.driver_layout import BINARY_DIRS, LIBRARY_DIRS

log = logging.getLogger(__name__)

CONTROL_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")
# The driver's compute and management libraries (what libnvidia-container calls utility + compute).
COMPUTE_LIBRARIES = (
    "libnvidia-ml",
    "libnvidia-cfg",
    "libcuda",
    "libcudadebugger",
    "libnvidia-opencl",
    "libnvidia-gpucomp",
    "libnvidia-ptxjitcompiler",
    "libnvidia-nvvm",
    "libnvidia-allocator",
    "libnvidia-pkcs11",
    "libnvidia-pkcs11-openssl3",
)
BINARIES = (
    "nvidia-smi",
    "nvidia-debugdump",
    "nvidia-persistenced",
    "nvidia-cuda-mps-control",
    "nvidia-cuda-mps-server",
)
HOOK_BINARY = "nvidia-cdi-hook"
_NVML = "libnvidia-ml.so."
_DEVICE_MINOR = re.compile(r"^Device Minor:\s*(\d+)\s*$", re.MULTILINE)
_FILE_MINOR = re.compile(r"^DeviceFileMinor:\s*(\d+)\s*$", re.MULTILINE)
_CARD_NODE = re.compile(r"nvidia(\d+)")


class DiscoveryError(Exception):
    """Something a GPU container cannot do without is missing; the message names the file."""


class CdiDiscovery:
    def __init__(
        self, driver_root: MountedDriverRoot, host_root: Path | str = "/", host_driver_root: str = "/"
    ) -> None:
        self.driver_root = driver_root
        self.host_root = Path(host_root)
        self.host_driver_root = host_driver_root

    def driver_files(self, hook_path: str | None) -> DriverFiles:
        if hook_path is None:
            log.warning("no nvidia-cdi-hook: containers get the libraries without soname links or ld cache")
        return DriverFiles(
            device_nodes=self.device_nodes(),
            libraries=self.libraries(),
            binaries=self.binaries(),
            hook_path=hook_path,
            host_driver_root=self.host_driver_root,
            driver_root_mount=str(self.driver_root.mount),
        )

    def device_nodes(self) -> tuple[DeviceNode, ...]:
        found = []
        for name in CONTROL_NODES:
            node = self._node(f"/dev/{name}")
            if node is None:
                log.info("device node left out of the CDI spec: missing", extra={"path": f"/dev/{name}"})
            else:
                found.append(node)
        return tuple(found)

    def card_node(self, pci_address: str) -> CardNode:
        minor = card_minor(self.host_root, pci_address)
        node = self._node(f"/dev/nvidia{minor}")
        if node is None:
            log.warning("card device node missing", extra={"path": f"/dev/nvidia{minor}", "pci": pci_address})
        return CardNode(pci_address, minor, node.major if node else None)

    def mig_caps(self, card_minor: int, gpu_instance_id: int, compute_instance_id: int) -> MigCaps:
        instance = self.host_root / f"proc/driver/nvidia/capabilities/gpu{card_minor}/mig/gi{gpu_instance_id}"
        meaning = "the driver publishes it for every MIG instance it created; was the instance destroyed?"
        gi_minor = _read_minor(instance / "access", _FILE_MINOR, "DeviceFileMinor", meaning)
        ci_minor = _read_minor(
            instance / f"ci{compute_instance_id}/access", _FILE_MINOR, "DeviceFileMinor", meaning
        )
        # Both nodes share nvidia-caps' major; use it only when both real nodes agree on it.
        majors = {
            node.major if node else None
            for node in (self._node(f"/dev/nvidia-caps/nvidia-cap{minor}") for minor in (gi_minor, ci_minor))
        }
        return MigCaps(gi_minor, ci_minor, majors.pop() if len(majors) == 1 else None)

    def driver_version(self) -> str | None:
        """The version suffix of libnvidia-ml.so.1's target (580.82.07); None without NVML."""
        for directory in LIBRARY_DIRS:
            inside = self._regular(f"{directory}/{_NVML}1")
            if inside is not None and inside.name.startswith(_NVML) and inside.name != f"{_NVML}1":
                return inside.name[len(_NVML) :]
        return None

    def libraries(self) -> tuple[DriverFile, ...]:
        version = self.driver_version()
        if version is None:
            log.error("no versioned libnvidia-ml.so.1 in the driver root: no driver libraries in CDI specs")
            return ()
        found: dict[PurePosixPath, DriverFile] = {}
        for stem in COMPUTE_LIBRARIES:
            inside = next(
                (p for d in LIBRARY_DIRS if (p := self._regular(f"{d}/{stem}.so.{version}")) is not None),
                None,
            )
            if inside is None:
                log.info("driver library not found", extra={"library": f"{stem}.so.{version}"})
            elif inside not in found:
                found[inside] = DriverFile(str(inside), self._mounted(inside), self._links(inside, stem))
        return tuple(found.values())

    def binaries(self) -> tuple[DriverFile, ...]:
        found = []
        for name in BINARIES:
            for directory in BINARY_DIRS:
                inside = self._regular(f"{directory}/{name}")
                if inside is not None:
                    # Mounted at the name users call; read from where links lead, since a link's
                    # target on the host would be outside HOST_DRIVER_ROOT.
                    found.append(DriverFile(f"/{directory}/{name}", self._mounted(inside)))
                    break
            else:
                log.info("driver tool not found", extra={"binary": name})
        return tuple(found)

    def _regular(self, relative: str) -> PurePosixPath | None:
        inside = self.driver_root.resolve(relative)
        if inside is None:
            return None
        try:
            return inside if stat.S_ISREG(os.stat(self._mounted(inside)).st_mode) else None
        except OSError:
            return None

    def _mounted(self, inside: PurePosixPath) -> str:
        return str(self.driver_root.mount.joinpath(*inside.parts[1:]))

    def _links(self, inside: PurePosixPath, stem: str) -> tuple[str, ...]:
        """Names next to the library that lead to it, as the real install has them (soname, .so)."""
        try:
            names = sorted(os.listdir(self._mounted(inside.parent)))
        except OSError:
            return ()
        return tuple(
            name
            for name in names
            if name.startswith(f"{stem}.so")
            and name != inside.name
            and os.path.islink(self._mounted(inside.parent / name))
            and self.driver_root.resolve(str(inside.parent / name)) == inside
        )

    def _node(self, path: str) -> DeviceNode | None:
        """A node under the host's /dev; numbers only from a real one (simulated hosts have files)."""
        try:
            info = os.stat(self.host_root / path.lstrip("/"))
        except OSError:
            return None
        if stat.S_ISCHR(info.st_mode):
            return DeviceNode(path, os.major(info.st_rdev), os.minor(info.st_rdev))
        if not stat.S_ISREG(info.st_mode):
            return None
        card = _CARD_NODE.fullmatch(PurePosixPath(path).name)
        return DeviceNode(path, None, int(card.group(1)) if card else None)


def card_minor(host_root: Path, pci_address: str) -> int:
    """The card's /dev/nvidia<minor> number, from the file the NVIDIA driver keeps for each card."""
    info = host_root / "proc/driver/nvidia/gpus" / pci_address.lower() / "information"
    meaning = (
        "the NVIDIA driver writes it for every card it drives; is the card bound to the nvidia "
        "driver and the kernel module loaded?"
    )
    return _read_minor(info, _DEVICE_MINOR, "Device Minor", meaning)


def _read_minor(path: Path, pattern: re.Pattern[str], field: str, meaning: str) -> int:
    try:
        text = path.read_text()
    except OSError as error:
        raise DiscoveryError(f"cannot read {path}: {error.strerror or error} ({meaning})") from None
    match = pattern.search(text)
    if match is None:
        raise DiscoveryError(f"{path} has no '{field}: N' line ({meaning})")
    return int(match.group(1))


def stage_cdi_hook(
    configured: str | None, image_hook: Path, plugin_dir: Path, plugin_dir_on_host: str | None = None
) -> str | None:
    """The host path of nvidia-cdi-hook for the specs: NVIDIA_CDI_HOOK_PATH when set, else a copy.

    The runtime runs hooks on the host, where the image's binary does not exist; the plugin
    directory is a host path mounted into the pod, so a copy there is reachable. The copy replaces
    the old one by rename: writing over a binary the runtime is executing fails with ETXTBSY.
    """
    if configured:
        return configured
    target = plugin_dir / HOOK_BINARY
    try:
        if not (target.is_file() and filecmp.cmp(image_hook, target, shallow=False)):
            plugin_dir.mkdir(parents=True, exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(dir=plugin_dir, prefix=f".{HOOK_BINARY}.")
            try:
                with os.fdopen(descriptor, "wb") as copy, image_hook.open("rb") as source:
                    shutil.copyfileobj(source, copy)
                    copy.flush()
                    os.fsync(copy.fileno())
                os.chmod(temporary, 0o755)  # noqa: S103 - the runtime executes it, as any user
                os.replace(temporary, target)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
    except OSError as error:
        log.error("cannot stage nvidia-cdi-hook", extra={"from": str(image_hook), "error": str(error)})
        return None
    return str(PurePosixPath(plugin_dir_on_host or str(plugin_dir)) / HOOK_BINARY)
