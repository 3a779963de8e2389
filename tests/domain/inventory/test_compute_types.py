# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import pytest

from deckhouse_gpu.domain.inventory.compute_types import architecture_from_capability, compute_types


@pytest.mark.parametrize(
    ("capability", "expected"),
    [
        ((7, 5), ["FP64", "FP32", "FP16", "INT8", "INT4"]),  # T4
        ((8, 0), ["FP64", "FP32", "FP16", "BF16", "TF32", "INT8", "INT4"]),  # A30, A100
        ((8, 9), ["FP64", "FP32", "FP16", "BF16", "TF32", "FP8", "INT8", "INT4"]),  # L40S
        ((9, 0), ["FP64", "FP32", "FP16", "BF16", "TF32", "FP8", "INT8"]),  # H100: no INT4
        ((10, 0), ["FP64", "FP32", "FP16", "BF16", "TF32", "FP8", "FP4", "INT8"]),  # B200
    ],
)
def test_formats_follow_the_hardware(capability, expected):
    assert compute_types(*capability) == expected


def test_fp8_only_where_the_hardware_has_it():
    assert "FP8" not in compute_types(8, 0)
    assert "FP8" not in compute_types(8, 6)
    assert "FP8" in compute_types(8, 9)


@pytest.mark.parametrize(
    ("capability", "name"),
    [
        ((7, 0), "Volta"),
        ((7, 5), "Turing"),
        ((8, 0), "Ampere"),
        ((8, 6), "Ampere"),
        ((8, 9), "Ada Lovelace"),
        ((9, 0), "Hopper"),
        ((10, 0), "Blackwell"),
        ((3, 5), None),
    ],
)
def test_architecture_fallback(capability, name):
    assert architecture_from_capability(*capability) == name
