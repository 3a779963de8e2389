# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The GPUClass spec rules, as the controller checks them again after the CRD's schema and CEL
rules (the in-memory API server runs neither)."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.domain.config.mps_sharing import MPS
from deckhouse_gpu.domain.gpuclass.spec import DeviceKind, InvalidSpec, parse_spec
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity


def problems(spec: Any) -> list[str]:
    with pytest.raises(InvalidSpec) as caught:
        parse_spec(spec)
    return caught.value.problems


def test_a_full_spec_is_read() -> None:
    spec = parse_spec(
        {
            "deviceKind": "Whole",
            "vfio": True,
            "cards": {
                "models": ["a30-pcie", "a100-pcie-80gb"],
                "minMemory": "20Gi",
                "minComputeCapability": "8.0",
                "nodeSelector": {
                    "matchLabels": {"pool": "vm"},
                    "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}],
                },
            },
            "extendedResourceName": "gpu.deckhouse.io/vm",
        }
    )
    assert spec.kind is DeviceKind.WHOLE
    assert spec.vfio
    assert spec.cards.models == ("a30-pcie", "a100-pcie-80gb")
    assert spec.cards.min_memory == Quantity.parse("20Gi")
    assert spec.cards.min_compute_capability == (8, 0)
    selector = spec.cards.node_selector
    assert selector is not None
    assert selector.matches({"pool": "vm", "zone": "b"})
    assert not selector.matches({"pool": "vm", "zone": "c"})
    assert not selector.matches({"zone": "a"})
    assert spec.extended_resource_name == "gpu.deckhouse.io/vm"


def test_a_share_and_a_mig_profile() -> None:
    share = parse_spec({"deviceKind": "Share", "sharing": {"strategy": "MPS", "sharePercent": 25}})
    assert share.sharing is not None
    assert (share.sharing.strategy, share.sharing.settings) == ("MPS", MPS(25))
    mig = parse_spec({"deviceKind": "MIG", "migProfile": "1g.6gb+me"})
    assert mig.mig_profile == "1g.6gb+me"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, "spec.deviceKind: None is not one of Whole, MIG, Share"),
        ({"deviceKind": "MIG"}, "spec.migProfile: required with deviceKind MIG"),
        ({"deviceKind": "Whole", "migProfile": "1g.5gb"}, "spec.migProfile: only with deviceKind MIG"),
        ({"deviceKind": "MIG", "migProfile": "big"}, "'big' is not a MIG profile name"),
        ({"deviceKind": "Share"}, "spec.sharing: required with deviceKind Share"),
        ({"deviceKind": "Whole", "sharing": {"strategy": "MPS"}}, "spec.sharing: only with deviceKind Share"),
        (
            {"deviceKind": "MIG", "migProfile": "1g.5gb", "vfio": True},
            "spec.vfio: a virtual machine gets a whole card",
        ),
        (
            {"deviceKind": "Share", "sharing": {"strategy": "TimeSlicing", "sharePercent": 50}},
            "spec.sharing.sharePercent: only with strategy MPS",
        ),
        (
            {"deviceKind": "Share", "sharing": {"strategy": "MPS", "interval": "Short"}},
            "spec.sharing.interval: only with strategy TimeSlicing",
        ),
        (
            {"deviceKind": "Share", "sharing": {"strategy": "MPS", "sharePercent": 0}},
            "spec.sharing.sharePercent: 0 is not an integer from 1 to 100",
        ),
        (
            {
                "deviceKind": "Share",
                "sharing": {"strategy": "MPS"},
                "extendedResourceName": "gpu.deckhouse.io/s",
            },
            "spec.extendedResourceName: a Pod asking through an extended resource cannot ask for a share",
        ),
        ({"deviceKind": "Whole", "extendedResourceName": "a30"}, "is not <domain>/<name>"),
        (
            {"deviceKind": "Whole", "extendedResourceName": "kubernetes.io/a30"},
            "the kubernetes.io domain is reserved",
        ),
        (
            {"deviceKind": "Whole", "extendedResourceName": "gpu.deckhouse.io/1g.6gb+me"},
            "is not <domain>/<name>",
        ),
        (
            {"deviceKind": "Whole", "extendedResourceName": "nvidia.com/mig-1g.6gb"},
            "spec.extendedResourceName: nvidia.com/mig-1g.6gb is the device plugin's name of a MIG "
            "instance of profile 1g.6gb: only with deviceKind MIG",
        ),
        (
            {"deviceKind": "MIG", "migProfile": "2g.12gb", "extendedResourceName": "nvidia.com/mig-1g.6gb"},
            "use nvidia.com/mig-2g.12gb",
        ),
        (
            {"deviceKind": "Whole", "cards": {"minMemory": "lots"}},
            "spec.cards.minMemory: 'lots' is not a quantity",
        ),
        (
            {"deviceKind": "Whole", "cards": {"minMemory": "0"}},
            "spec.cards.minMemory: must be more than zero",
        ),
        ({"deviceKind": "Whole", "cards": {"minComputeCapability": "8"}}, "is not major.minor"),
        ({"deviceKind": "Whole", "cards": {"minComputeCapability": 8.0}}, "is not major.minor"),
        ({"deviceKind": "Whole", "cards": {"models": ['a30"']}}, "is not a model value"),
        ({"deviceKind": "Whole", "cards": {"models": ["t4", "t4"]}}, "a model is listed twice"),
        (
            {
                "deviceKind": "Whole",
                "cards": {"nodeSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
            },
            "In and NotIn need values",
        ),
        (
            {"deviceKind": "Whole", "cards": {"nodeSelector": {"matchLabels": {"a": "not valid"}}}},
            "spec.cards.nodeSelector:",
        ),
    ],
)
def test_every_rule_names_its_field(spec: dict[str, Any], expected: str) -> None:
    found = problems(spec)
    assert any(expected in p for p in found), found


def test_all_the_problems_are_listed_at_once() -> None:
    found = problems({"deviceKind": "MIG", "vfio": True, "sharing": {"strategy": "MPS"}})
    assert len(found) == 3, found


def test_the_device_plugins_names_are_allowed_for_what_they_name() -> None:
    whole = parse_spec({"deviceKind": "Whole", "extendedResourceName": "nvidia.com/gpu"})
    assert whole.extended_resource_name == "nvidia.com/gpu"
    mixed = {"deviceKind": "MIG", "migProfile": "1g.10gb", "extendedResourceName": "nvidia.com/mig-1g.10gb"}
    assert parse_spec(mixed).extended_resource_name == "nvidia.com/mig-1g.10gb"
    media = {
        "deviceKind": "MIG",
        "migProfile": "1g.10gb+me",
        "extendedResourceName": "nvidia.com/mig-1g.10gb.me",
    }
    assert parse_spec(media).mig_profile == "1g.10gb+me"
