# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""kubectl gpu explain in the domain: a Pod's claims, where they can go, and why not elsewhere."""

from __future__ import annotations

from deckhouse_gpu.domain.report.holders import claim_ref, device_index, holders
from deckhouse_gpu.domain.report.pending import PodExplanation, explain_pod, nodes_to_try
from deckhouse_gpu.domain.report.pod_claims import (
    ALLOCATED,
    MISSING,
    NOT_CREATED,
    UNALLOCATED,
    pod_claims,
    template_names,
)
from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.allocator.search import Allocator
from deckhouse_gpu.k8s_semantics.resources.claims import parse_claim, parse_classes
from deckhouse_gpu.k8s_semantics.resources.model import build_inventory
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import allocated_state
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES, PODS, RESOURCE_CLAIM_TEMPLATES
from deckhouse_gpu.ports.kube import RESOURCE_CLAIMS, RESOURCE_SLICES
from testkit.gpu_cluster import GpuCluster

NODES = [Node("h100"), Node("h100b"), Node("t4")]


def _cluster() -> GpuCluster:
    cluster = GpuCluster()
    cluster.node("h100", "h100-80gb", 3)
    cluster.node("h100b", "h100-80gb", 2)
    cluster.node("t4", "t4", 1)
    cluster.publish()
    cluster.classes()
    cluster.claim("ml", "small", "gpu-h100-80gb-mig-1g.10gb", 1, node="h100", pod="train")
    cluster.claim("ml", "big", "gpu-h100-80gb", 1, node="h100", pod="big")
    return cluster


def _explain(cluster: GpuCluster, pod_name: str) -> PodExplanation:
    kube, semantics = cluster.kube, Semantics("1.35")
    pod = kube.get(PODS, pod_name, namespace="ml")
    claims = kube.list(RESOURCE_CLAIMS).items
    templates = {t["metadata"]["name"]: t for t in kube.list(RESOURCE_CLAIM_TEMPLATES, namespace="ml").items}
    assert set(template_names(pod)) <= set(templates) | {"gone"}
    found = pod_claims(pod, {claim_ref(c): c for c in claims}, templates)
    explanation = PodExplanation(f"ml/{pod_name}", "Pending", pod["spec"].get("nodeName"), found)
    explanation.problems += [c.problem for c in found if c.problem]
    classes = parse_classes(kube.list(DEVICE_CLASSES).items)
    parsed = [
        parse_claim(c.obj, classes, semantics)
        for c in found
        if c.state in (UNALLOCATED, NOT_CREATED) and c.obj
    ]
    inventory = build_inventory(kube.list(RESOURCE_SLICES).items)
    allocator = Allocator(inventory, semantics, CelMatcher())
    held = holders(claims, device_index(inventory))
    return explain_pod(explanation, allocator, parsed, NODES, allocated_state(claims, True), held)


def test_why_not_here_with_the_claims_that_hold_the_cards_and_where_it_fits() -> None:
    cluster = _cluster()
    cluster.claim("ml", "two", "gpu-h100-80gb", 2)
    cluster.pod("ml", "wants-two", [("gpu", "two", None)])
    explanation = _explain(cluster, "wants-two")
    assert [c.state for c in explanation.claims] == [UNALLOCATED]
    assert explanation.fits_on == ["h100b"]
    assert explanation.placeable
    h100 = next(n for n in explanation.nodes if n.node == "h100")
    (request,) = h100.requests
    assert (request.claim, request.request, request.wants, request.fit_alone, request.devices) == (
        "ml/two",
        "gpu",
        "2",
        1,
        78,
    )
    reasons = {t.reason: t for t in request.reasons}
    assert sorted(reasons["in use"].held_by) == ["ml/big"]
    # ml/small's 1g.10gb took the first placement in packing order (slice 6,
    # domain/offers/placement_order.py), so the whole card's first counter used up is that slice.
    assert sorted(reasons["counter memory-slice-6 exhausted"].held_by) == ["ml/small"]
    assert reasons["not of DeviceClass gpu-h100-80gb"].devices == 75  # the MIG offers, in use or not
    assert reasons["in use"].devices == 1
    assert not request.together  # one card fits alone; two are wanted
    t4 = next(n for n in explanation.nodes if n.node == "t4")
    assert [t.reason for t in t4.requests[0].reasons] == ["not of DeviceClass gpu-h100-80gb"]


def test_claims_from_templates_missing_claims_and_allocated_ones() -> None:
    cluster = _cluster()
    cluster.template("ml", "one-t4", "gpu-t4")
    cluster.pod("ml", "from-template", [("gpu", None, "one-t4")])
    explanation = _explain(cluster, "from-template")
    (claim,) = explanation.claims
    assert (claim.state, claim.claim, claim.source) == (
        NOT_CREATED,
        "ml/from-template-gpu",
        "template one-t4",
    )
    assert explanation.fits_on == ["t4"]

    cluster.pod("ml", "lost", [("gpu", "gone-claim", None), ("other", None, "gone")])
    lost = _explain(cluster, "lost")
    assert [c.state for c in lost.claims] == [MISSING, MISSING]
    assert lost.problems == [
        "ResourceClaim ml/gone-claim does not exist",
        "ResourceClaimTemplate ml/gone does not exist",
    ]
    assert lost.nodes == []
    assert not lost.placeable

    # A Pod with an allocated claim and a new one: only the allocated claim's node is tried.
    cluster.claim("ml", "more", "gpu-h100-80gb", 1)
    cluster.pod("ml", "two-claims", [("a", "small", None), ("b", "more", None)], generated={})
    both = _explain(cluster, "two-claims")
    assert [c.state for c in both.claims] == [ALLOCATED, UNALLOCATED]
    assert [n.node for n in both.nodes] == ["h100"]
    assert both.fits_on == ["h100"]


def test_nodes_to_try() -> None:
    cluster = _cluster()
    claims = {claim_ref(c): c for c in cluster.kube.list(RESOURCE_CLAIMS).items}
    pod = {
        "metadata": {"namespace": "ml", "name": "p"},
        "spec": {"resourceClaims": [{"name": "a", "resourceClaimName": "big"}]},
    }
    found = pod_claims(pod, claims, {})
    assert [n.name for n in nodes_to_try(None, found, NODES)] == ["h100"]  # the allocation's node selector
    assert [n.name for n in nodes_to_try("t4", [], NODES)] == ["t4"]  # a bound Pod stays on its node
    assert nodes_to_try("gone", [], NODES) == []
