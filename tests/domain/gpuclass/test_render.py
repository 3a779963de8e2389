# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The DeviceClass of a GPUClass: its selector, evaluated by the module's DRA CEL engine on the
offers the driver really publishes (whole cards, MIG instances, shared cards, cards bound to
vfio-pci), its opaque config, owner and updates."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.domain.gpuclass import render
from deckhouse_gpu.domain.gpuclass.matching import card_uuids, matching
from deckhouse_gpu.domain.gpuclass.spec import parse_spec
from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher
from deckhouse_gpu.k8s_semantics.apimachinery.label_selector import parse_selector
from deckhouse_gpu.k8s_semantics.resources.model import build_inventory
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from testkit.gpu_objects import node_cards
from tests.module.deviceclass_examples import ALLOWED_FUNCTIONS

GPU_CLASS = {"metadata": {"name": "c", "uid": "u-1"}}


@pytest.fixture(scope="module")
def slices() -> list[dict[str, Any]]:
    """An A30 and an H100 on plain nodes, and an A30 on a sharing node."""
    plain = node_cards("w1", "a30", 1) + node_cards("w2", "h100-80gb", 1)
    shared = node_cards("s1", "a30", 1)
    return [
        *render_nodes(plain, 35, {}, True, True),
        *render_nodes(shared, 35, {"gpu.deckhouse.io/sharing": "true"}, True, True),
    ]


def selected(
    slices: list[dict[str, Any]], spec: dict[str, Any], uuids: list[str] | None = None
) -> tuple[int, int]:
    expression = render.selector_expression(parse_spec(spec), uuids)
    found = matching(build_inventory(slices), expression, CelMatcher())
    assert found.errors == 0
    return found.devices, found.nodes


def test_whole_cards_of_a_model(slices: list[dict[str, Any]]) -> None:
    # The A30 of w1, and the shared A30 of s1 (taken whole by a claim asking for no share).
    assert selected(slices, {"deviceKind": "Whole", "cards": {"models": ["a30-pcie"]}}) == (2, 2)
    assert selected(slices, {"deviceKind": "Whole"}) == (3, 3)


def test_vfio_leaves_out_shares(slices: list[dict[str, Any]]) -> None:
    assert selected(slices, {"deviceKind": "Whole", "vfio": True}) == (2, 2)


def test_a_mig_profile_on_the_cards_that_offer_it(slices: list[dict[str, Any]]) -> None:
    # Four placements of 1g.6gb on the A30 of w1; the sharing node publishes no MIG instance.
    assert selected(slices, {"deviceKind": "MIG", "migProfile": "1g.6gb"}) == (4, 1)


def test_shares_only_on_sharing_nodes(slices: list[dict[str, Any]]) -> None:
    assert selected(slices, {"deviceKind": "Share", "sharing": {"strategy": "TimeSlicing"}}) == (1, 1)


def test_memory_and_compute_capability(slices: list[dict[str, Any]]) -> None:
    assert selected(slices, {"deviceKind": "Whole", "cards": {"minMemory": "40Gi"}}) == (1, 1)
    assert selected(slices, {"deviceKind": "Whole", "cards": {"minComputeCapability": "9.0"}}) == (1, 1)
    assert selected(slices, {"deviceKind": "Whole", "cards": {"minComputeCapability": "8.0"}}) == (3, 3)
    assert selected(slices, {"deviceKind": "Whole", "cards": {"minComputeCapability": "8.1"}}) == (1, 1)


def test_a_node_selector_becomes_the_cards_of_its_nodes(slices: list[dict[str, Any]]) -> None:
    labels = {"w1": {"pool": "a"}, "w2": {"pool": "b"}, "s1": {"pool": "a"}}
    uuids = card_uuids(build_inventory(slices), parse_selector("pool=a"), labels.get)
    assert len(uuids) == 2
    spec = {"deviceKind": "Whole", "cards": {"nodeSelector": {"matchLabels": {"pool": "a"}}}}
    assert selected(slices, spec, uuids) == (2, 2)
    assert selected(slices, spec, []) == (0, 0)
    # A node that is gone picks nothing.
    assert card_uuids(build_inventory(slices), parse_selector("pool=a"), lambda _n: None) == []


def test_another_driver_s_device_is_refused_before_any_attribute_is_read() -> None:
    other = {
        "metadata": {"name": "nic", "resourceVersion": "1"},
        "spec": {
            "driver": "nic.example.com",
            "nodeName": "w1",
            "pool": {"name": "p", "generation": 0, "resourceSliceCount": 1},
            "devices": [{"name": "eth0"}],
        },
    }
    expression = render.selector_expression(
        parse_spec(
            {
                "deviceKind": "MIG",
                "migProfile": "1g.5gb",
                "cards": {"minMemory": "1Gi", "minComputeCapability": "8.0"},
            }
        )
    )
    device = build_inventory([other]).slices[0].devices[0]
    assert CelMatcher().matches(expression, device) is False


def test_the_selector_uses_only_what_a_1_34_api_server_accepts() -> None:
    spec = parse_spec(
        {
            "deviceKind": "Whole",
            "vfio": True,
            "cards": {
                "models": ["a30-pcie"],
                "minMemory": "1Gi",
                "minComputeCapability": "8.0",
                "nodeSelector": {},
            },
        }
    )
    expression = render.selector_expression(spec, ["GPU-1"])
    called = {word.rstrip("(") for word in expression.replace(".", " ").split() if word.endswith("(")}
    assert called <= ALLOWED_FUNCTIONS, called - ALLOWED_FUNCTIONS


def test_config_of_each_kind() -> None:
    vfio = render.opaque_config(parse_spec({"deviceKind": "Whole", "vfio": True}))
    assert vfio == [
        {
            "opaque": {
                "driver": "gpu.deckhouse.io",
                "parameters": {
                    "apiVersion": "resource.gpu.deckhouse.io/v1alpha1",
                    "kind": "VfioDeviceConfig",
                },
            }
        }
    ]
    sliced = render.opaque_config(
        parse_spec({"deviceKind": "Share", "sharing": {"strategy": "TimeSlicing", "interval": "Long"}})
    )
    assert sliced[0]["opaque"]["parameters"] == {
        "apiVersion": "resource.gpu.deckhouse.io/v1alpha1",
        "kind": "GpuConfig",
        "sharing": {"strategy": "TimeSlicing", "timeSlicing": {"interval": "Long"}},
    }
    assert render.opaque_config(parse_spec({"deviceKind": "Whole"})) == []
    assert render.opaque_config(parse_spec({"deviceKind": "MIG", "migProfile": "1g.5gb"})) == []


def test_the_device_class_is_owned_and_updated_in_place() -> None:
    spec = parse_spec({"deviceKind": "Whole", "extendedResourceName": "gpu.deckhouse.io/c"})
    desired = render.device_class(GPU_CLASS, spec)
    assert desired["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "gpu.deckhouse.io/v1alpha1",
            "kind": "GPUClass",
            "name": "c",
            "uid": "u-1",
            "controller": True,
        }
    ]
    assert render.owned_by_a_gpu_class(desired, "c")
    assert not render.owned_by_a_gpu_class({"metadata": {"name": "c"}}, "c")
    stored = {**desired, "metadata": {**desired["metadata"], "resourceVersion": "7"}}
    assert render.update_patch(stored, desired) is None
    changed = render.device_class(GPU_CLASS, parse_spec({"deviceKind": "Whole"}))
    assert render.update_patch(stored, changed) == {
        "spec": {"extendedResourceName": None},
        "metadata": {"resourceVersion": "7"},
    }
    # A GPUClass deleted and created again takes over the DeviceClass its predecessor left.
    again = render.device_class({"metadata": {"name": "c", "uid": "u-2"}}, spec)
    patch = render.update_patch(stored, again)
    assert patch is not None
    assert patch["metadata"]["ownerReferences"][0]["uid"] == "u-2"


def test_summary() -> None:
    assert (
        render.summary(
            parse_spec(
                {
                    "deviceKind": "Share",
                    "sharing": {"strategy": "MPS", "sharePercent": 25},
                    "cards": {"models": ["a30-pcie"]},
                }
            )
        )
        == "MPS share 25%, of a30-pcie"
    )
    assert (
        render.summary(
            parse_spec({"deviceKind": "MIG", "migProfile": "1g.5gb", "cards": {"minMemory": "4Gi"}})
        )
        == "MIG 1g.5gb, of any model, >= 4Gi"
    )
