# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""How NVML failures read: which return codes mean the library as a whole is gone, and the messages."""

from __future__ import annotations

from typing import Any


def library_codes(nv: Any) -> set[int]:
    """Return codes after which no query can work until NVML is initialised again."""
    names = ("UNINITIALIZED", "LIBRARY_NOT_FOUND", "DRIVER_NOT_LOADED", "LIB_RM_VERSION_MISMATCH")
    return {getattr(nv, f"NVML_ERROR_{name}") for name in names}


def unavailable_message(nv: Any, query: str, error: Any) -> str:
    hints = {
        nv.NVML_ERROR_LIBRARY_NOT_FOUND: "libnvidia-ml.so.1 was not found: the NVIDIA driver's user-space "
        "part is not installed where gpu-handler looks; check the driver installation and the driver root",
        nv.NVML_ERROR_DRIVER_NOT_LOADED: "the NVIDIA kernel module is not loaded: load it (modprobe nvidia) "
        "or wait for the driver container to finish installing",
        nv.NVML_ERROR_LIB_RM_VERSION_MISMATCH: "the NVML library does not match the loaded kernel module, "
        "usually after a driver upgrade without a reboot: reboot the node or reload the nvidia module",
        nv.NVML_ERROR_NO_PERMISSION: "no permission to open the NVIDIA device files: gpu-handler must run "
        "privileged with /dev mounted",
        nv.NVML_ERROR_UNINITIALIZED: "NVML was shut down underneath gpu-handler; it will initialise again",
    }
    hint = hints.get(error.value)
    return f"{query} failed: {describe(error)}" + (f"; {hint}" if hint else "")


def describe(error: Any) -> str:
    return f"{error} (NVML return code {getattr(error, 'value', '?')})"
