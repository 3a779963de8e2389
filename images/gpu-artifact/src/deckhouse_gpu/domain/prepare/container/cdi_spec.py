# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""CDI specs for gpu.deckhouse.io devices, built as plain dicts from what discovery found.

Two kinds of file share the kind ``gpu.deckhouse.io/gpu``. The base spec names every Physical
card (``gpu-0000-17-00-0``) and carries the common edits; it is rewritten on each publish. A
claim's transient spec names ``<claim-uid>-<device>`` and is written on Prepare. It repeats the
common edits at spec level, so one claim device id brings the card, the control nodes, the
libraries and the hooks, all discovered at Prepare time: the base spec can be stale on a fresh
node where /dev/nvidia-uvm appears only later (NVIDIA's issue #1380). A spec's own edits apply
only when one of its devices is injected, which is why each file needs them.

What goes in follows nvidia-ctk's ``cdi generate`` (nvcdi): /dev/nvidiaN per card; nvidiactl,
nvidia-uvm, nvidia-uvm-tools and nvidia-modeset for everyone; the driver's libraries and tools
bind-mounted read-only; ``nvidia-cdi-hook`` creating soname links and refreshing the loader cache;
``NVIDIA_VISIBLE_DEVICES=void`` so that an nvidia-container-runtime underneath does not inject
devices a second time. A MIG device is its parent's node plus the GPU- and compute-instance
capability nodes and nothing else: CUDA enumerates exactly the MIG devices whose caps it may open.
No ``CUDA_VISIBLE_DEVICES``: nvcdi sets none, and CDI merges env by name, so two MIG devices in
one container would each set it and the last one would hide the other.

Files are found by the handler under the driver root mount (``/driver-root``); workloads see
them at the same place inside the root, and the runtime reads them on the host under
HOST_DRIVER_ROOT (``/run/nvidia/driver``), so each mount's hostPath is rewritten to that.

A card passed to a virtual machine (VFIO, DESIGN.md D7) is none of that: the VM's own driver uses
it, so its device gets no /dev/nvidiaN, only what its extra edits bring (the VFIO nodes); and a
claim whose devices all go to a VM gets no driver files, hooks or NVIDIA_VISIBLE_DEVICES at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from deckhouse_gpu.domain.naming import pci_address_slug
from deckhouse_gpu.k8s_semantics.cdi.cdi_rules import required_version

VENDOR = "gpu.deckhouse.io"
CLASS = "gpu"
KIND = f"{VENDOR}/{CLASS}"
BASE_SPEC_FILE = f"{VENDOR}-{CLASS}.json"
_CLAIM_PREFIX = f"{VENDOR}-{CLASS}_"
VISIBLE_DEVICES_VOID = "NVIDIA_VISIBLE_DEVICES=void"
# What nvcdi puts on library and tool mounts: read-only, no setuid, no device files.
MOUNT_OPTIONS = ("ro", "nosuid", "nodev", "rbind", "rprivate")
CAPS_DIR = "/dev/nvidia-caps"
# Applications dlopen "libcuda.so" although only the -dev package ships that name (nvcdi adds it too).
_ALWAYS_LINKED = {"libcuda.so.": "libcuda.so"}


@dataclass(frozen=True)
class DeviceNode:
    path: str  # the same on the host and in the container: /dev/nvidiactl
    major: int | None = None  # None: not a real device node here; the runtime stats the host's
    minor: int | None = None


@dataclass(frozen=True)
class DriverFile:
    """A file of the driver: where workloads see it, and where gpu-handler found its content."""

    container_path: str  # inside the driver root: /usr/lib/x86_64-linux-gnu/libcuda.so.580.82.07
    mounted_at: str  # the real file under the mount, links resolved: /driver-root/usr/lib/...
    links: tuple[str, ...] = ()  # names in the same directory that lead to it: libcuda.so.1


@dataclass(frozen=True)
class DriverFiles:
    device_nodes: tuple[DeviceNode, ...]  # the control nodes every GPU container needs
    libraries: tuple[DriverFile, ...]
    binaries: tuple[DriverFile, ...]
    hook_path: str | None  # nvidia-cdi-hook on the host; None: no hooks (logged by discovery)
    host_driver_root: str = "/"
    driver_root_mount: str = "/driver-root"


@dataclass(frozen=True)
class CardNode:
    pci_address: str
    minor: int  # /dev/nvidia<minor>
    major: int | None = None


@dataclass(frozen=True)
class MigCaps:
    gi_minor: int  # /dev/nvidia-caps/nvidia-cap<gi_minor> opens the GPU instance
    ci_minor: int  # ... and this one its compute instance
    major: int | None = None  # nvidia-caps' major, dynamic: known only from a real node


@dataclass(frozen=True)
class ClaimDevice:
    name: str  # the allocated device's name in the ResourceSlice
    card: CardNode | None  # None: a card on vfio-pci, whose nodes are all in ``extra_edits``
    mig: MigCaps | None = None
    # Edits of this device only, beside its nodes: an MPS client's pipe directory, env and limits.
    extra_edits: Mapping[str, Any] | None = None


def base_device_name(pci_address: str) -> str:
    return f"gpu-{pci_address_slug(pci_address)}"


def claim_device_name(claim_uid: str, device_name: str) -> str:
    return f"{claim_uid}-{device_name}"


def qualified_id(device_name: str) -> str:
    """The form DRA's cdi_device_ids carry: ``gpu.deckhouse.io/gpu=<name>``."""
    return f"{KIND}={device_name}"


def claim_spec_file(claim_uid: str) -> str:
    return f"{_CLAIM_PREFIX}{claim_uid.replace('/', '_')}.json"


def claim_uid_of(file_name: str) -> str | None:
    """The claim UID of a transient spec file name; None for any other file."""
    if not (file_name.startswith(_CLAIM_PREFIX) and file_name.endswith(".json")):
        return None
    return file_name[len(_CLAIM_PREFIX) : -len(".json")] or None


def host_path(files: DriverFiles, mounted_at: str) -> str:
    """A path under the driver root mount, as the host (and so the runtime) sees it."""
    try:
        inside = PurePosixPath(mounted_at).relative_to(files.driver_root_mount)
    except ValueError:
        raise ValueError(
            f"{mounted_at} is not under the driver root mount {files.driver_root_mount}"
        ) from None
    return str(PurePosixPath(files.host_driver_root) / inside)


def node_edit(node: DeviceNode) -> dict[str, Any]:
    edit: dict[str, Any] = {"path": node.path}
    if node.major is not None and node.minor is not None:
        # Type plus numbers is a complete description: the runtime can create the node even
        # when the host's is briefly gone, instead of failing to stat it.
        edit.update(type="c", major=node.major, minor=node.minor)
    return edit


def _hook(hook_path: str, name: str, args: list[str]) -> dict[str, Any]:
    binary = PurePosixPath(hook_path).name
    # nvidia-ctk serves the same hooks under "nvidia-ctk hook ..."; nvidia-cdi-hook at top level.
    fixed = [binary, "hook"] if binary == "nvidia-ctk" else [binary]
    return {"hookName": "createContainer", "path": hook_path, "args": [*fixed, name, *args]}


def _links(library: DriverFile) -> list[str]:
    container = PurePosixPath(library.container_path)
    names = list(library.links)
    for prefix, extra in _ALWAYS_LINKED.items():
        if container.name.startswith(prefix) and extra not in names and extra != container.name:
            names.append(extra)
    return [f"{container.name}::{container.parent / name}" for name in names if name != container.name]


def common_edits(files: DriverFiles) -> dict[str, Any]:
    edits: dict[str, Any] = {"env": [VISIBLE_DEVICES_VOID]}
    if files.device_nodes:
        edits["deviceNodes"] = [node_edit(node) for node in files.device_nodes]
    mounts = [
        {
            "hostPath": host_path(files, item.mounted_at),
            "containerPath": item.container_path,
            "options": list(MOUNT_OPTIONS),
        }
        for item in (*files.libraries, *files.binaries)
    ]
    if mounts:
        edits["mounts"] = mounts
    if files.hook_path and files.libraries:
        hooks = []
        links = [arg for library in files.libraries for link in _links(library) for arg in ("--link", link)]
        if links:  # links before the cache refresh, so ldconfig sees them
            hooks.append(_hook(files.hook_path, "create-symlinks", links))
        folders = dict.fromkeys(str(PurePosixPath(item.container_path).parent) for item in files.libraries)
        folder_args = [arg for folder in folders for arg in ("--folder", folder)]
        hooks.append(_hook(files.hook_path, "update-ldcache", folder_args))
        edits["hooks"] = hooks
    return edits


def card_edits(card: CardNode, mig: MigCaps | None = None) -> dict[str, Any]:
    nodes = [node_edit(DeviceNode(f"/dev/nvidia{card.minor}", card.major, card.minor))]
    if mig is not None:
        nodes += [
            node_edit(DeviceNode(f"{CAPS_DIR}/nvidia-cap{minor}", mig.major, minor))
            for minor in (mig.gi_minor, mig.ci_minor)
        ]
    return {"deviceNodes": nodes}


def merge_device_edits(*sources: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Device name -> the edits of every source for that device, combined: lists (env, mounts,
    device nodes, hooks) are concatenated in the order of the sources, never replaced; two
    sources setting one non-list field differently is a bug and raises ValueError."""
    merged: dict[str, dict[str, Any]] = {}
    for source in sources:
        for device, edits in source.items():
            into = merged.setdefault(device, {})
            for key, value in edits.items():
                if key not in into:
                    into[key] = list(value) if isinstance(value, list) else value
                elif isinstance(into[key], list) and isinstance(value, list):
                    into[key] = [*into[key], *value]
                elif into[key] != value:
                    raise ValueError(f"device {device}: two edits set {key} differently")
    return merged


def _spec(devices: list[dict[str, Any]], edits: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"cdiVersion": "", "kind": KIND, "devices": devices}
    if edits:
        spec["containerEdits"] = edits
    spec["cdiVersion"] = required_version(spec)  # the lowest that covers it: runtimes lag behind
    return spec


def base_spec(files: DriverFiles, cards: Sequence[CardNode]) -> dict[str, Any] | None:
    """One device per Physical card; None without cards (CDI needs a device, so no file then)."""
    if not cards:
        return None
    devices = [
        {"name": base_device_name(card.pci_address), "containerEdits": card_edits(card)}
        for card in sorted(cards, key=lambda card: card.pci_address)
    ]
    return _spec(devices, common_edits(files))


def claim_spec(files: DriverFiles | None, claim_uid: str, devices: Sequence[ClaimDevice]) -> dict[str, Any]:
    """The transient spec of one claim; its device ids are ``qualified_id(claim_device_name(...))``.
    ``files`` is needed, and used, only when a device is used through the nvidia driver."""
    if not devices:
        raise ValueError(f"claim {claim_uid}: a CDI spec needs at least one device")
    entries = []
    for device in devices:
        own = card_edits(device.card, device.mig) if device.card is not None else {}
        entries.append(
            {
                "name": claim_device_name(claim_uid, device.name),
                "containerEdits": merge_device_edits({"": own}, {"": device.extra_edits or {}}).get("", {}),
            }
        )
    if not any(device.card is not None for device in devices):
        return _spec(entries, {})
    if files is None:
        raise ValueError(f"claim {claim_uid}: the driver's files are needed for its nvidia devices")
    return _spec(entries, common_edits(files))
