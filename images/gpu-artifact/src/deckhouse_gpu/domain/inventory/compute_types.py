# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Which numeric formats a card computes natively, derived from its CUDA compute capability.

A format is listed when the architecture has hardware support for it (tensor cores or native
arithmetic), so a scheduler selector like "needs FP8" never lands on a card that emulates it.
Sources: NVIDIA CUDA C++ Programming Guide (compute capabilities, arithmetic instructions) and
the architecture whitepapers (Turing, Ampere GA100, Ada, Hopper, Blackwell).
"""

from __future__ import annotations

# (format, first compute capability with native support, first one without it again or None)
_FORMATS: tuple[tuple[str, tuple[int, int], tuple[int, int] | None], ...] = (
    ("FP64", (1, 3), None),
    ("FP32", (1, 0), None),
    ("FP16", (5, 3), None),
    ("BF16", (8, 0), None),  # Ampere tensor cores introduced BF16 and TF32
    ("TF32", (8, 0), None),
    ("FP8", (8, 9), None),  # Ada (8.9) and Hopper (9.0) introduced FP8 tensor cores
    ("FP4", (10, 0), None),  # Blackwell
    ("INT8", (6, 1), None),  # dp4a from Pascal GP10x; INT8 tensor cores from Turing
    ("INT4", (7, 5), (9, 0)),  # Turing to Ada tensor cores; Hopper and later dropped INT4
)


def compute_types(major: int, minor: int) -> list[str]:
    capability = (major, minor)
    return [
        name for name, first, gone in _FORMATS if capability >= first and (gone is None or capability < gone)
    ]


def architecture_from_capability(major: int, minor: int) -> str | None:
    """A fallback when NVML does not name the architecture (older drivers)."""
    if major == 7:
        return "Turing" if minor >= 5 else "Volta"
    if major == 8:
        return "Ada Lovelace" if minor == 9 else "Ampere"
    return {5: "Maxwell", 6: "Pascal", 9: "Hopper", 10: "Blackwell", 12: "Blackwell"}.get(major)
