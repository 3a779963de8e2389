# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The cards of the stand-in libnvidia-ml.so (tests/support/fake_pynvml.py): NVML return codes, an
A30's MIG profiles, a card with what NVML reports of it and its MIG instances, and how handles
encode the card, GPU instance and compute instance they refer to.
"""

from __future__ import annotations

import ctypes
import uuid
from dataclasses import dataclass, field
from typing import Any

MIB = 1024 * 1024
NOT_SUPPORTED, INVALID_ARGUMENT, NOT_FOUND = 3, 2, 6
DRIVER_NOT_LOADED, GPU_IS_LOST, RM_MISMATCH, VERSION_MISMATCH = 9, 15, 18, 25
INSUFFICIENT_SIZE, RESET_REQUIRED, IN_USE, INSUFFICIENT_RESOURCES, NO_PERMISSION = 7, 16, 19, 23, 4
# NVML_COMPUTE_INSTANCE_PROFILE_* index -> compute slices; NVML's compute profile ids are the indexes.
CI_PROFILE_SLICES = {0: 1, 1: 2, 2: 3, 3: 4, 4: 7, 7: 1}


@dataclass
class Profile:
    index: int
    id: int
    name: str
    slices: int
    memory_mib: int
    instances: int
    placements: list[tuple[int, int]]


A30_PROFILES = [
    Profile(0, 14, "MIG 1g.6gb", 1, 5952, 4, [(0, 1), (1, 1), (2, 1), (3, 1)]),
    Profile(1, 5, "MIG 2g.12gb", 2, 11968, 2, [(0, 2), (2, 2)]),
    Profile(3, 0, "MIG 4g.24gb", 4, 24192, 1, [(0, 4)]),
    Profile(15, 21, "MIG 1g.6gb+me", 1, 5952, 1, [(0, 1), (1, 1), (2, 1), (3, 1)]),
]


@dataclass
class Card:
    bus_id: str = "00000000:17:00.0"
    name: str = "NVIDIA A30"
    uuid: str = "GPU-6a1e0c4e-4b2a-11ef-9b1e-0242ac120002"
    memory_mib: int = 24576
    architecture: int | None = 7
    part_number: str | None = "900-21001-0040-100"
    limits_mw: tuple[int, int] | None = (100_000, 165_000)
    limit_mw: int | None = 150_400
    enforced_mw: int | None = 149_600
    mig: tuple[int, int] | None = (0, 1)
    profiles: list[Profile] = field(default_factory=lambda: list(A30_PROFILES))
    fail: dict[str, int] = field(default_factory=dict)  # C function -> return code
    # MIG: nvmlDeviceSetMigMode's activation status (0: the new mode applies at once), the
    # processes on the card (graphics None: NOT_SUPPORTED), its instances and MIG device slots.
    activation: int = 0
    compute_pids: list[int] = field(default_factory=list)
    graphics_pids: list[int] | None = None
    gpu_instances: dict[int, GpuInstance] = field(default_factory=dict)
    mig_slots: list[tuple[int, int] | None] = field(default_factory=lambda: [None] * 7)
    created: int = 0
    compute_mode: int = 0  # NVML_COMPUTEMODE_DEFAULT


@dataclass
class GpuInstance:
    id: int
    profile: Profile
    start: int
    compute: dict[int, tuple[int, int]] = field(default_factory=dict)  # id -> (profile index, serial)


def put(ref: Any, value: Any) -> int:
    ref._obj.value = value
    return 0


def decode_handle(handle: Any) -> tuple[int, int, int]:
    """(card index, GPU instance id, compute instance id) of a handle; -1 for the parts it lacks."""
    value = ctypes.cast(handle, ctypes.c_void_p).value or 0
    return (value & 0xFF) - 1, (value >> 8 & 0xFF) - 1, (value >> 16 & 0xFF) - 1


def write_handle(target: Any, index: int, gi: int = -1, ci: int = -1, *, at: int = 0) -> int:
    pointer = ctypes.c_void_p((index + 1) | (gi + 1) << 8 | (ci + 1) << 16)
    size = ctypes.sizeof(pointer)
    ctypes.memmove(ctypes.addressof(target) + at * size, ctypes.byref(pointer), size)
    return 0


def mig_uuid(card: Card, gi: int, ci: int) -> str:
    """A MIG device's UUID: new for every compute instance created, as the driver's are."""
    serial = card.gpu_instances[gi].compute[ci][1]
    return f"MIG-{uuid.uuid5(uuid.NAMESPACE_URL, f'{card.uuid}/{gi}/{ci}/{serial}')}"
