# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Every object the module emits or shows, against the OpenAPI schema of each Kubernetes version it
knows, 1.34 to 1.37 (DESIGN.md D3, KUBERNETES-FACTS.md F10), strictly: an unknown field is an
error, as with kubectl's server-side field validation.

- the ResourceSlices gpu-handler renders for that version, on every kind of node and with the
  fallbacks, also checked against the module's own slice rules; a newer minor renders as 1.37;
- the example objects of docs/examples;
- the objects shown in docs/*.md (both languages).

The chart's objects are checked in test_helm_objects.py, the claim configurations in
test_opaque_config_webhook.py and the sharing examples in test_sharing_docs.py, for the same versions.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_pool
from deckhouse_gpu.k8s_semantics.versions import NEWEST_MINOR, UnknownVersion
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from testkit.gpu_objects import ready_card
from tests.support.helm_chart import render
from tests.support.k8s_versions import MINORS, SCHEMA_VERSIONS
from tests.support.module_values import module_values

ROOT = Path(__file__).resolve().parents[2]
SHARING, MIG = "gpu.deckhouse.io/sharing", "gpu.deckhouse.io/mig"
# (labels, partitionable, consumable): a plain node, a sharing node, MIG off, and both fallbacks.
NODE_KINDS = {
    "plain": ({}, True, True),
    "sharing": ({SHARING: "true"}, True, True),
    "mig-off": ({MIG: "false"}, True, True),
    "no-partitionable": ({}, False, True),
    "no-consumable-sharing": ({SHARING: "true"}, True, False),
}
# Kinds that come from CRDs (the module's, Deckhouse's or KubeVirt's, whose VirtualMachine
# docs/VFIO.md shows); Kubernetes' own schemas do not have them.
CRD_KINDS = {"ModuleConfig", "ModuleSource", "ModuleUpdatePolicy", "ModulePullOverride", "PhysicalGPU"}
CRD_KINDS |= {"VirtualMachine", "GPUClass"}  # GPUClass: tests/module/test_gpuclass_crd.py


def cards() -> list[dict[str, Any]]:
    """Two nodes with every model: MIG and non-MIG cards, with and without a known NUMA node."""
    return [
        ready_card("w1", "0000:17:00.0", "a30", numa_node=0),
        ready_card("w1", "0000:31:00.0", "a30", numa_node=0),
        ready_card("w1", "0000:b1:00.0", "h100-80gb", numa_node=1),
        ready_card("w1", "0000:ca:00.0", "t4"),
        ready_card("w2", "0000:17:00.0", "a100-40gb"),
        ready_card("w2", "0000:3b:00.0", "a100-80gb", numa_node=0),
        ready_card("w2", "0000:65:00.0", "l40s", numa_node=1),
    ]


def rendered(minor: int, kind: str) -> list[dict[str, Any]]:
    labels, partitionable, consumable = NODE_KINDS[kind]
    return render_nodes(cards(), minor, labels, partitionable, consumable)


def check(obj: dict[str, Any], version: str) -> None:
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.ValidationError as error:
        name = obj.get("metadata", {}).get("name")
        pytest.fail(f"{obj['kind']}/{name} on {version}: {error.message} at {list(error.path)}")


@pytest.mark.parametrize("kind", NODE_KINDS)
@pytest.mark.parametrize("minor", MINORS)
def test_rendered_slices_are_valid_for_their_version(minor: int, kind: str) -> None:
    slices = rendered(minor, kind)
    assert {s["spec"]["nodeName"] for s in slices} == {"w1", "w2"}
    for resource_slice in slices:
        check(resource_slice, f"1.{minor}.0")
    for node in ("w1", "w2"):
        assert validate_pool([s for s in slices if s["spec"]["nodeName"] == node], minor) == []


def test_the_schemas_catch_what_they_are_here_for() -> None:
    # The strict check is not a formality: a stray field or a wrongly typed attribute is refused.
    resource_slice = rendered(NEWEST_MINOR, "plain")[-1]
    resource_slice["spec"]["devices"][0]["attributes"]["resource.kubernetes.io/numaNode"] = {"int": "0"}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(resource_slice, SCHEMA_VERSIONS[-1], strict=True)
    resource_slice = rendered(NEWEST_MINOR, "plain")[-1]
    resource_slice["spec"]["devices"][0]["bogus"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(resource_slice, SCHEMA_VERSIONS[-1], strict=True)


def test_numa_nodes_reach_the_rendered_slices_as_ints() -> None:
    devices = [d for s in rendered(NEWEST_MINOR, "plain") for d in s["spec"].get("devices") or []]
    numa = {d["name"]: d["attributes"].get("resource.kubernetes.io/numaNode") for d in devices}
    assert numa["gpu-0000-b1-00-0"] == {"int": 1}
    assert numa["gpu-0000-17-00-0-mig-4g-24gb-0"] == {"int": 0}
    assert numa["gpu-0000-ca-00-0"] is None  # the T4's NUMA node is unknown


def test_the_1_35_layout_serves_1_36_and_1_37_and_a_newer_minor_renders_as_1_37() -> None:
    for kind in NODE_KINDS:
        assert rendered(35, kind) == rendered(36, kind) == rendered(37, kind) == rendered(38, kind)
        assert rendered(34, kind) != rendered(35, kind)  # a slice per card on 1.34
    with pytest.raises(UnknownVersion):
        rendered(33, "plain")


def test_every_known_version_has_a_schema() -> None:
    assert SCHEMA_VERSIONS == ("1.34.0", "1.35.0", "1.36.0", "1.37.0")
    for version in SCHEMA_VERSIONS:
        check(rendered(int(version.split(".")[1]), "plain")[0], version)


def example_objects() -> list[dict[str, Any]]:
    found = []
    for path in sorted((ROOT / "docs" / "examples").glob("*.yaml")):
        found += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return found


def documented_objects() -> list[Any]:
    """Whole objects in the YAML blocks of docs/*.md; fragments and placeholders are not objects."""
    found = []
    for path in sorted((ROOT / "docs").glob("*.md")):
        for index, block in enumerate(re.findall(r"```yaml\n(.*?)```", path.read_text(), re.DOTALL)):
            try:
                docs = [doc for doc in yaml.safe_load_all(block) if doc]
            except yaml.YAMLError:
                continue
            for doc in docs:
                whole = isinstance(doc, dict) and {"apiVersion", "kind", "metadata"} <= set(doc)
                if whole and doc["kind"] not in CRD_KINDS:
                    found.append(pytest.param(doc, id=f"{path.name}-{index}-{doc['kind']}"))
    return found


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
def test_docs_examples_are_valid_for_every_version(version: str) -> None:
    objects = example_objects()
    assert {o["kind"] for o in objects} >= {"DeviceClass", "ResourceClaimTemplate", "Pod"}
    for obj in objects:
        check(obj, version)


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
@pytest.mark.parametrize("obj", documented_objects())
def test_objects_shown_in_the_docs_are_valid_for_every_version(obj: dict[str, Any], version: str) -> None:
    check(obj, version)


def test_the_docs_show_the_numa_claim() -> None:
    claims = [p.values[0] for p in documented_objects() if p.values[0]["kind"] == "ResourceClaim"]
    assert any(
        c.get("matchAttribute") == "resource.kubernetes.io/numaNode"
        for claim in claims
        for c in claim["spec"]["devices"].get("constraints") or []
    )


def test_the_chart_does_not_depend_on_the_kubernetes_version() -> None:
    # The templates never read .Capabilities.KubeVersion: one rendering serves 1.34 to 1.37, and
    # test_helm_objects.py checks it against every version's schema.
    values = module_values()
    assert render(values, kube_version="1.37.0").objects == render(values).objects
