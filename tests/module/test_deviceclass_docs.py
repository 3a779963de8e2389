# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The CEL and YAML examples of docs/DRA.md and docs/DRA.ru.md: the CEL of the attribute and capacity
tables is safe and selects something, the DeviceClasses shown are the examples themselves, and the
claim that keeps a GPU and a NIC on one NUMA node does so in the module's allocator."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml

from deckhouse_gpu.k8s_semantics.cel import device_view
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.services.allocation.allocation_preview import preview
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from testkit.gpu_objects import ready_card
from tests.module import deviceclass_examples
from tests.module.deviceclass_examples import (
    ALLOWED_FUNCTIONS,
    CLASSES,
    DEVICE_FIELDS,
    DRIVER,
    ENGINE,
    EXAMPLES,
    VARIANTS,
    rendered_devices,
)
from tests.support.k8s_versions import MINORS

# The shared fixture, bound here so that pytest finds it for this module's tests.
cards = deviceclass_examples.cards

DOCS = [EXAMPLES.parent / "DRA.md", EXAMPLES.parent / "DRA.ru.md"]
_TABLE_CEL = re.compile(r"^\|.*\| `((?:device\.|has\().*)` \|$")


def doc_cel_examples() -> list[str]:
    """The CEL example of every table row that ends with one (the attribute and capacity tables)."""
    return [m[1] for doc in DOCS for line in doc.read_text().splitlines() if (m := _TABLE_CEL.match(line))]


def on_numa_nodes(cards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same cards on a two-socket host: the agent read NUMA nodes 0 and 1 from sysfs (the
    simulated hosts say -1, no affinity, so the simulated cards carry none)."""
    placed = copy.deepcopy(cards)
    for index, card in enumerate(placed):
        card["status"]["pciInfo"]["numaNode"] = index % 2
    return placed


def test_doc_cel_examples_are_safe_and_select_something(cards: list[dict[str, Any]]) -> None:
    examples = doc_cel_examples()
    assert len(examples) >= 2 * 20, "the attribute and capacity tables of both languages"
    # Devices with and without a NUMA node: a guarded example must not fail on those without.
    devices = [
        d for c in (cards, on_numa_nodes(cards)) for v in VARIANTS[:2] for _, d in rendered_devices(c, 35, v)
    ]
    views = [device_view(DRIVER, device) for device in devices]
    for expression in sorted(set(examples)):
        selector = ENGINE.compile(expression)
        assert selector.functions <= ALLOWED_FUNCTIONS, expression
        assert selector.device_fields <= DEVICE_FIELDS, expression
        # A list, not a generator: every device is evaluated, so an unguarded example fails.
        assert any([selector.matches(view) for view in views]), f"selects nothing: {expression}"


def test_doc_yaml_objects_are_the_examples() -> None:
    shown = 0
    for doc in DOCS:
        for block in re.findall(r"```yaml\n(.*?)```", doc.read_text(), re.DOTALL):
            obj = yaml.safe_load(block)
            if isinstance(obj, dict) and obj.get("kind") == "DeviceClass":
                assert obj == CLASSES[obj["metadata"]["name"]], f"{doc.name}: differs from the example"
                shown += 1
    assert shown == 2


# --- a GPU and a NIC on one NUMA node

NUMA = "resource.kubernetes.io/numaNode"
NIC_DRIVER = "nic.example.com"  # any other DRA driver that publishes the standard attribute


def doc_claims() -> list[dict[str, Any]]:
    """The ResourceClaims shown in each language, in order."""
    found: list[list[dict[str, Any]]] = []
    for doc in DOCS:
        blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", doc.read_text(), re.DOTALL)]
        found.append([b for b in blocks if isinstance(b, dict) and b.get("kind") == "ResourceClaim"])
    assert found[0] == found[1], "both languages show the same claims"
    return found[0]


def numa_claim() -> dict[str, Any]:
    (claim,) = [
        c
        for c in doc_claims()
        if any(x.get("matchAttribute") == NUMA for x in c["spec"]["devices"].get("constraints") or [])
    ]
    return claim


def nic_world(nic_numa: int, card_numa: tuple[int | None, int | None], minor: int) -> dict[str, Any]:
    """Two A30s of one node, each on its NUMA node, and one NIC of another driver; the doc's claim."""
    claim = numa_claim()
    nic_class = claim["spec"]["devices"]["requests"][1]["exactly"]["deviceClassName"]
    cards = [
        ready_card("w1", address, "a30", numa_node=numa)
        for address, numa in zip(("0000:17:00.0", "0000:b1:00.0"), card_numa, strict=True)
    ]
    nic = {"name": "nic-0", "attributes": {NUMA: {"int": nic_numa}}}
    nics = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "w1-nics"},
        "spec": {"driver": NIC_DRIVER, "pool": {"name": "nics/w1", "generation": 1, "resourceSliceCount": 1},
                 "nodeName": "w1", "devices": [nic]},
    }  # fmt: skip
    classes = [
        CLASSES["gpu-a30"],
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": nic_class},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{NIC_DRIVER}"'}}]}},
    ]  # fmt: skip
    slices = [*render_nodes(cards, minor, {}, True, True), nics]
    return preview(slices, classes, [claim], [], Semantics(f"1.{minor}"), "w1")


@pytest.mark.parametrize("minor", MINORS)
def test_doc_numa_claim_puts_the_gpu_on_the_nics_numa_node(minor: int) -> None:
    claim = numa_claim()
    assert [r["name"] for r in claim["spec"]["devices"]["requests"]] == ["gpu", "nic"]
    # The first card in name order is on NUMA node 0: a NIC there takes it, a NIC on 1 the other.
    for nic_numa, card in ((0, "gpu-0000-17-00-0"), (1, "gpu-0000-b1-00-0")):
        report = nic_world(nic_numa, (0, 1), minor)
        (placed,) = report["claims"]
        results = placed["allocation"]["devices"]["results"]
        assert [(r["request"], r["device"]) for r in results] == [("gpu", card), ("nic", "nic-0")], report


def test_doc_numa_claim_stays_pending_without_a_card_on_the_nics_numa_node() -> None:
    report = nic_world(1, (0, None), 37)  # one card on node 0, the other's NUMA node unknown
    assert "claims" not in report, report
    assert report["unallocated"][0]["node"] == "w1"
