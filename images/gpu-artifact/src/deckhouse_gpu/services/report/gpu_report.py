# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The three answers of ``kubectl gpu`` over the KubeAPI port (DESIGN.md D12): the cluster is read
once (``ClusterReads``), the domain computes (``domain/report``). The real client and the
simulator's in-memory API serve it alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from deckhouse_gpu.domain.report import capacity as capacity_report
from deckhouse_gpu.domain.report.cards import CardRow, card_rows, counters_left
from deckhouse_gpu.domain.report.class_devices import class_devices
from deckhouse_gpu.domain.report.device_plugins import annotate
from deckhouse_gpu.domain.report.extended import (
    extended_claim,
    extended_requests,
    gpu_classes,
    resource_classes,
)
from deckhouse_gpu.domain.report.holders import claim_ref, device_index, holders
from deckhouse_gpu.domain.report.pending import PodExplanation, explain_pod
from deckhouse_gpu.domain.report.pod_claims import ALLOCATED, MISSING, pod_claims, pod_ref, template_names
from deckhouse_gpu.domain.report.scheduler_cost import SchedulerCost, broad_classes, scheduler_cost
from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher
from deckhouse_gpu.k8s_semantics.allocator.search import Allocator
from deckhouse_gpu.k8s_semantics.allocator.selector_groups import SelectorGroups
from deckhouse_gpu.k8s_semantics.resources.claims import Claim, ClaimError, parse_claim
from deckhouse_gpu.k8s_semantics.resources.model import Inventory, build_inventory
from deckhouse_gpu.k8s_semantics.resources.state import allocated_state
from deckhouse_gpu.ports.kube import KubeAPI
from deckhouse_gpu.services.report.cluster_reads import ClusterReads, InputError


@dataclass
class StatusReport:
    cards: list[CardRow]
    problems: list[str]  # slices or claims that could not be read


@dataclass
class CapacityReport:
    kubernetes: str  # the allocator's semantics: "1.34" to "1.37"
    classes: list[capacity_report.ClassCapacity]
    nodes: list[str]  # the nodes counted
    problems: list[str]  # classes, slices or claims that could not be used
    scheduler: SchedulerCost | None = None  # nodes publishing counters, and what the scheduler pays
    broad: list[str] = field(default_factory=list)  # classes for which every node publishes everything


def status(api: KubeAPI, only_nodes: Sequence[str] = ()) -> StatusReport:
    reads = ClusterReads(api)
    cards = reads.cards()
    known = {str((c.get("status") or {}).get("nodeInfo", {}).get("nodeName") or "") for c in cards}
    unknown = [node for node in only_nodes if node not in known]
    if unknown:
        raise InputError(f"no PhysicalGPU on node {', '.join(unknown)}")
    semantics = reads.semantics(strict=True)
    claims, inventory = reads.claims(), build_inventory(reads.slices())
    state = allocated_state(claims, semantics.consumable)
    if only_nodes:
        cards = [
            c for c in cards if (c.get("status") or {}).get("nodeInfo", {}).get("nodeName") in only_nodes
        ]
    rows = card_rows(
        cards, claims, device_index(inventory), counters_left(inventory, state, semantics), state.shares
    )
    return StatusReport(rows, [*inventory.problems, *state.problems])


def capacity(api: KubeAPI, only_class: str | None = None, only_node: str | None = None) -> CapacityReport:
    reads = ClusterReads(api)
    semantics = reads.semantics(strict=True)  # what the hardware has room for (capacity_of)
    classes, problems = reads.classes()
    if only_class is not None:
        if only_class not in classes:
            raise InputError(f'DeviceClass "{only_class}" not found')
        classes = {only_class: classes[only_class]}
    nodes = reads.nodes()
    everywhere = len(nodes)
    if only_node is not None:
        nodes = [n for n in nodes if n.name == only_node]
        if not nodes:
            raise InputError(f'node "{only_node}" not found')
    inventory = build_inventory(reads.slices())
    state = allocated_state(reads.claims(), semantics.consumable)
    owners = gpu_classes(reads.device_class_objects())
    found = capacity_report.capacity(inventory, classes, state, semantics, nodes, owners)
    names = sorted(n.name for n in nodes)
    problems = [*problems, *inventory.problems, *state.problems]
    cost = scheduler_cost(inventory, semantics.version, everywhere)
    broad = broad_classes({c.device_class: c.devices for c in found}, inventory) if only_node is None else []
    return CapacityReport(semantics.version, found, names, problems, cost, broad)


def explain(api: KubeAPI, namespace: str, name: str) -> PodExplanation:
    reads = ClusterReads(api)
    pod = reads.pod(namespace, name)
    phase = str((pod.get("status") or {}).get("phase") or "")
    if phase != "Pending":
        raise InputError(f"pod {pod_ref(pod)} is {phase or 'in no phase'}, not Pending: nothing to explain")
    has_claims = bool((pod.get("spec") or {}).get("resourceClaims"))
    # Extended resources (KEP-5004) are the main path: no claim exists until the scheduler has a
    # node, so the classes behind the resource names say what the Pod asks for.
    extended = extended_requests(pod, resource_classes(reads.device_class_objects()))
    if not has_claims and not extended:
        raise InputError(
            f"pod {pod_ref(pod)} has no resource claims and asks for no extended resource of a "
            "DeviceClass: nothing to explain"
        )
    semantics = reads.semantics(strict=False)  # the scheduler's, whose decision is explained
    claims = reads.claims()
    by_ref = {claim_ref(c): c for c in claims}
    found = pod_claims(pod, by_ref, reads.templates(namespace, template_names(pod))) if has_claims else []
    from_resources = extended_claim(pod, extended, by_ref)
    if from_resources is not None:
        found.append(from_resources)
    owners = gpu_classes(reads.device_class_objects())
    explanation = PodExplanation(
        pod_ref(pod),
        phase,
        (pod.get("spec") or {}).get("nodeName"),
        found,
        problems=[],
        extended=extended,
        gpu_classes=owners,
    )
    explanation.problems += [c.problem for c in found if c.state == MISSING and c.problem]
    explanation.problems += [
        f"extended resource {r.resource} of container {r.container}: no DeviceClass has "
        f"spec.extendedResourceName {r.resource}, so nothing in the cluster gives it"
        for r in extended
        if r.device_class is None
    ]
    classes, _ = reads.classes()
    inventory = build_inventory(reads.slices())
    state = allocated_state(claims, semantics.consumable)
    parsed = []
    for claim in found:
        if claim.state in (ALLOCATED, MISSING) or claim.obj is None:
            continue
        try:
            parsed.append(parse_claim(claim.obj, classes, semantics))
        except ClaimError as error:
            explanation.problems.append(str(error))
    matcher = CelMatcher(consumable_capacity=semantics.consumable)
    groups = _warm(matcher, parsed, inventory)
    allocator = Allocator(inventory, semantics, matcher)
    held = holders(claims, device_index(inventory))
    asked = {a.device_class.name: a.device_class for c in parsed for r in c.requests for a in r.alternatives}
    explanation.classes = class_devices(groups, inventory, [asked[n] for n in sorted(asked)], owners, held)
    explained = explain_pod(explanation, allocator, parsed, reads.nodes(), state, held)
    by_name = {str(n["metadata"]["name"]): n for n in reads.node_objects()}
    annotate(explained.nodes, by_name, extended)  # device plugins and other owners (DESIGN.md D16)
    return explained


def _warm(matcher: CelMatcher, parsed: Sequence[Claim], inventory: Inventory) -> SelectorGroups:
    """Every request's selectors judged once per group of alike devices (``SelectorGroups``):
    explain judges each device of each node, which would otherwise evaluate them device by device."""
    selectors = [
        (*a.device_class.selectors, *a.selectors)
        for claim in parsed
        for request in claim.requests
        for a in request.alternatives
    ]
    groups = SelectorGroups(matcher, [e for expressions in selectors for e in expressions])
    devices = [device for item in inventory.slices for device in item.devices]
    for expressions in selectors:
        groups.warm(expressions, devices)
    return groups
