# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The module installs on a real kube-apiserver of each version: its CRDs are created and
Established, and every object the chart renders (for every values set of the module tests, the
webhook enabled, and 0, 1, 2 and 500 GPU nodes through the gpu_node_labels hook) is accepted
with Strict field validation. The server is the judge here: what its validation, defaulting and
admission say replaces the Python ports of its rules the module tests used to carry.

Workloads, webhook configurations and policies go through a server-side dry run (the cluster is
shared by the run); the CRDs and the namespace are stored, as other tests of the tier need them.
"""

from __future__ import annotations

from functools import cache

import pytest

from testkit.real_cluster import ApiError, RealCluster
from tests.module.helm_render_sets import GPU_NODE_COUNTS, RENDERED, render_for_gpu_nodes, with_webhook_values
from tests.real.installed_module import (
    FOREIGN_KINDS,
    NAMESPACE,
    crd_refusals,
    create_strict,
    established,
    install_module,
    module_crds,
    refusals,
)
from tests.support.helm_chart import Rendered, render

RENDER_NAMES = (
    *(f"values-{name}" for name in RENDERED),
    "values-webhook",
    *(f"gpu-nodes-{count}" for count in GPU_NODE_COUNTS),
)


@cache
def rendered(name: str) -> Rendered:
    """Each render once per test run, whatever the number of versions it is sent to."""
    kind, _, which = name.partition("-")
    if kind == "gpu":
        return render_for_gpu_nodes(int(which.removeprefix("nodes-")))
    if which == "webhook":
        return render(with_webhook_values())
    return RENDERED[which]


def installed(cluster: RealCluster) -> RealCluster:
    install_module(cluster, rendered("values-defaults").get("Namespace", NAMESPACE))
    return cluster


def test_every_crd_of_the_module_is_established_as_written(real_cluster: RealCluster) -> None:
    crds = module_crds()
    assert {crd["spec"]["names"]["kind"] for crd in crds} >= {"PhysicalGPU"}
    installed(real_cluster)
    assert crd_refusals[real_cluster.version] == {}
    for crd in crds:
        name = crd["metadata"]["name"]
        assert established(real_cluster, name), name
        stored = real_cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
        # Nothing of a schema was dropped on the way: a field the server does not know is refused
        # by Strict validation, and this catches one it would silently prune.
        for ours, theirs in zip(crd["spec"]["versions"], stored["spec"]["versions"], strict=True):
            assert theirs["schema"] == ours["schema"], (name, ours["name"])
        assert stored["status"]["acceptedNames"]["kind"] == crd["spec"]["names"]["kind"]


def test_every_kind_the_chart_writes_is_served(real_cluster: RealCluster) -> None:
    kinds = {obj["kind"] for name in RENDER_NAMES for obj in rendered(name).objects}
    installed(real_cluster)
    discovered = set()
    for group_version in {obj["apiVersion"] for name in RENDER_NAMES for obj in rendered(name).objects}:
        path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        discovered |= {resource["kind"] for resource in real_cluster.request("GET", path)["resources"]}
    assert kinds <= discovered, kinds - discovered
    assert set(FOREIGN_KINDS) <= kinds  # every stand-in CRD is used


@pytest.mark.parametrize("name", RENDER_NAMES)
def test_every_rendered_object_is_accepted(real_cluster: RealCluster, name: str) -> None:
    objects = rendered(name).objects
    assert objects
    refused = refusals(installed(real_cluster), objects)
    assert not refused, "\n".join(refused)


def test_the_server_refuses_what_the_old_stand_ins_were_written_for(real_cluster: RealCluster) -> None:
    """The check above is only worth what the server refuses: the two-node affinity that once
    passed every test and failed on a cluster, and an unknown field (Strict validation)."""
    daemonset = dict(rendered("values-defaults").get("DaemonSet", "gpu-handler"))
    spec = dict(daemonset["spec"])
    template = dict(spec["template"])
    pod = dict(template["spec"])
    requirement = {"key": "metadata.name", "operator": "In", "values": ["gpu-1", "gpu-2"]}
    pod["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [requirement]}]
            }
        }
    }
    template["spec"] = pod
    spec["template"] = template
    broken = {**daemonset, "spec": spec}
    installed(real_cluster)
    with pytest.raises(ApiError) as refused:
        create_strict(
            real_cluster, {**broken, "metadata": {**daemonset["metadata"], "name": "refused-affinity"}}
        )
    assert refused.value.status == 422
    assert "must be only one value when `operator` is 'In' or 'NotIn' for node field selector" in str(
        refused.value
    )
    typo = {
        **daemonset,
        "metadata": {**daemonset["metadata"], "name": "refused-typo"},
        "spec": {**spec, "replica": 1},
    }
    with pytest.raises(ApiError) as strict:
        create_strict(real_cluster, typo)
    assert 'unknown field "spec.replica"' in str(strict.value)
