# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The PhysicalGPU CRD's validation: its patterns and bounds, and encoded model values checked against it."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from deckhouse_gpu.domain.inventory import physicalgpu as pg
from deckhouse_gpu.k8s_semantics.apimachinery.codec import encode
from tests.support import crd_schema
from tests.support.crd_schema import Schema, node_at, walk
from tests.support.openapi_validator import validate
from tests.support.physicalgpu_samples import SOME_TIME, a30_status

# The shared fixtures, bound here so that pytest finds them for this module's tests.
crd, version, root, status = crd_schema.crd, crd_schema.version, crd_schema.root, crd_schema.status


# --- (f) validation patterns ---------------------------------------------------------------------

HEX4_GOOD = ["10de", "20b7", "1002", "0000"]
HEX4_BAD = ["10DE", "0x10de", "10d", "10dee", "10de\n", "", "g0de"]


@pytest.mark.parametrize(
    ("path", "good", "bad"),
    [
        (
            "pciInfo.address",
            ["0000:02:00.0", "0000:af:1f.7", "0001:c1:00.1"],
            ["0000:02:00", "02:00.0", "0000:02:00.8", "0000:AF:00.0", "0000:02:00.0\n", "0000-02-00-0", ""],
        ),
        (
            "pciInfo.class.code",
            ["0302", "0300", "030200"],
            ["0x0302", "030", "03020", "0302000", "030g", "0302 "],
        ),
        ("pciInfo.vendor.id", HEX4_GOOD, HEX4_BAD),
        ("pciInfo.device.id", HEX4_GOOD, HEX4_BAD),
        ("pciInfo.subsystem.vendorID", HEX4_GOOD, HEX4_BAD),
        ("pciInfo.subsystem.deviceID", HEX4_GOOD, HEX4_BAD),
        (
            "conditions[].reason",
            ["NVMLUnavailable", "DriverNotReady", "A", "Driver_not:ready,2"],
            ["", "1Reason", "Not Ready", "Reason-", "Reason:"],
        ),
        (
            "conditions[].type",
            ["DriverReady", "HardwareHealthy", "gpu.deckhouse.io/Custom"],
            ["", "Driver Ready", "-Driver", "Driver/"],
        ),
        ("capabilities.nvidia.computeCap", ["8.0", "9.0", "12.10"], ["8", "v8.0", "8.0.1", "8,0"]),
        ("currentState.nvidia.cudaVersion", ["13.0", "12.8"], ["13", "13.0.1", "cuda13.0"]),
    ],
)
def test_patterns(status: Schema, path: str, good: list[str], bad: list[str]) -> None:
    pattern = node_at(status, path)["pattern"]
    rejected = [value for value in good if not re.fullmatch(pattern, value)]
    accepted = [value for value in bad if re.fullmatch(pattern, value)]
    assert not rejected, f"{path}: real values rejected: {rejected}"
    assert not accepted, f"{path}: bad values accepted: {accepted}"


def test_counts_are_not_negative(status: Schema) -> None:
    integers = [(path, node) for path, node in walk(status, "") if node["type"] == "integer"]
    assert integers
    unbounded = [path for path, node in integers if node.get("minimum", -1) < 0]
    assert not unbounded, f"integers without minimum >= 0: {unbounded}"


# --- encoded model values against the CRD --------------------------------------------------------


def test_a_real_status_passes_the_crd_validation(status: Schema) -> None:
    errors = validate(status, encode(a30_status()))
    assert not errors, "\n".join(errors)


def test_a_minimal_status_passes_the_crd_validation(status: Schema) -> None:
    minimal = pg.PhysicalGPUStatus(
        pci_info=pg.PCIInfo("0000:02:00.0", pg.PCIClass("0302"), pg.NamedID("10de"), pg.NamedID("20b7"))
    )
    assert validate(status, encode(minimal)) == []


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"pci_info": {"address": "0000:02:00"}}, "status.pciInfo.address"),
        ({"pci_info": {"vendor": pg.NamedID("10DE")}}, "status.pciInfo.vendor.id"),
        ({"pci_info": {"numa_node": -1}}, "status.pciInfo.numaNode"),
        (
            {"current_state": {"nvidia": pg.NvidiaState(cuda_version="13")}},
            "status.currentState.nvidia.cudaVersion",
        ),
    ],
)
def test_bad_values_fail_the_crd_validation(status: Schema, changes: dict[str, Any], fragment: str) -> None:
    value = a30_status()
    for name, fields in changes.items():
        value = dataclasses.replace(value, **{name: dataclasses.replace(getattr(value, name), **fields)})
    errors = validate(status, encode(value))
    assert any(error.startswith(fragment) for error in errors), errors


def test_a_condition_with_a_bad_reason_fails_the_crd_validation(status: Schema) -> None:
    bad = pg.Condition("DriverReady", pg.ConditionStatus.FALSE, "Not ready", "", SOME_TIME)
    errors = validate(status, encode(pg.PhysicalGPUStatus(conditions=[bad])))
    assert errors == ["status.conditions[0].reason: 'Not ready' does not match " + bad_reason_pattern(status)]


def bad_reason_pattern(status: Schema) -> str:
    pattern = node_at(status, "conditions[].reason")["pattern"]
    assert isinstance(pattern, str)
    return pattern
