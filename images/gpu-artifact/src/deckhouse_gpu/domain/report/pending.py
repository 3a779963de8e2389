# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``kubectl gpu explain``: per node, why a pending Pod's claims do not fit there, and where they do.

The unallocated claims of the Pod are placed together on each node by the module's allocator, with
the scheduler's semantics (DESIGN.md D1, KUBERNETES-FACTS.md F4): all of them fit there or none
does. Where they do not, every device of the node is judged alone by the allocator's own rules
(``explain``), and the reasons are counted per request, with the claims that hold a device in use
or draw from an exhausted counter set. Allocated claims of the Pod stay where they are: only nodes their
allocation's node selector matches are tried, and the Pod's node if it is bound to one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from deckhouse_gpu.domain.allocation.explain import device_reason
from deckhouse_gpu.domain.report.class_devices import ClassDevices
from deckhouse_gpu.domain.report.extended import ExtendedRequest
from deckhouse_gpu.domain.report.holders import Holders
from deckhouse_gpu.domain.report.pod_claims import ALLOCATED, PodClaim
from deckhouse_gpu.k8s_semantics.allocator import rules
from deckhouse_gpu.k8s_semantics.allocator.checks import SelectorFailure
from deckhouse_gpu.k8s_semantics.allocator.gather import Pool
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node, selector_matches
from deckhouse_gpu.k8s_semantics.allocator.reasons import (
    CapacityExhausted,
    CountersExhausted,
    InUse,
    Reason,
    RequestSelectorFalse,
    Rule,
)
from deckhouse_gpu.k8s_semantics.allocator.search import Allocator
from deckhouse_gpu.k8s_semantics.allocator.search_pass import SearchPass
from deckhouse_gpu.k8s_semantics.resources.claims import Alternative, Claim
from deckhouse_gpu.k8s_semantics.resources.model import Device
from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState


@dataclass
class Tally:
    """Devices of a node that one rule stopped, for one request."""

    reason: str  # the rule's words, without what differs from device to device
    rule: str
    devices: int = 0
    held_by: set[str] = field(default_factory=set)  # claims holding them or their counters
    example: str = ""  # one device's full reason


@dataclass
class RequestVerdict:
    claim: str
    request: str
    wants: str  # a count, or "all"
    devices: int  # candidates on the node
    fit_alone: int
    reasons: list[Tally]
    together: bool  # enough fit alone, so they fail only together with the rest


@dataclass
class NodeVerdict:
    node: str
    fits: bool
    error: str | None = None
    pools: list[str] = field(default_factory=list)
    requests: list[RequestVerdict] = field(default_factory=list)
    # Set where a device plugin serves the Pod's extended resource: the Pod goes to it there.
    device_plugin: str | None = None


def nodes_to_try(pod_node: str | None, claims: Sequence[PodClaim], nodes: Sequence[Node]) -> list[Node]:
    """The nodes the Pod can still go to: its own once bound, else those every allocated claim
    of it can be used on (an allocation without a node selector is available everywhere)."""
    found = [n for n in nodes if pod_node is None or n.name == pod_node]
    for claim in claims:
        selector = claim.node_selector if claim.state == ALLOCATED else None
        if selector is not None:
            found = [n for n in found if selector_matches(selector, n)]
    return sorted(found, key=lambda n: n.name)


def _summary(reason: Reason) -> str:
    """The reason's words without what differs per device (amounts left, which card's counter set)."""
    if isinstance(reason, CountersExhausted):
        return f"counter {reason.counter} exhausted"
    if isinstance(reason, CapacityExhausted):
        return f"capacity {reason.capacity} used up by shares"
    if isinstance(reason, RequestSelectorFalse):
        return f"request selector false: {reason.expression}"
    return str(reason)


def _reason(
    allocator: Allocator,
    work: SearchPass,
    state: AllocatedState,
    index: int,
    claim: Claim,
    alternative: Alternative,
    pool: Pool,
    device: Device,
) -> Reason | None:
    """The allocator's reason, except that a device in use and not of the request's kind is
    named for what it is: the scheduler checks use first, but "in use" would suggest that freeing
    it helps."""
    why = device_reason(allocator, work, state, index, claim, alternative, pool, device)
    if why is not None and why.rule == Rule.IN_USE:
        try:
            return rules.selectors(allocator.matcher, alternative, device) or why
        except SelectorFailure:
            return why
    return why


def _held_by(reason: Reason, device: Device, holders: Holders) -> list[str]:
    if isinstance(reason, InUse | CapacityExhausted):
        return holders.of_device(device.key)
    if isinstance(reason, CountersExhausted):
        return holders.of_counter_set((device.driver, device.pool, reason.counter_set))
    return []


def explain_node(
    allocator: Allocator, claims: Sequence[Claim], node: Node, state: AllocatedState, holders: Holders
) -> NodeVerdict:
    outcome = allocator.allocate(claims, node, state)
    if outcome.allocations is not None:
        return NodeVerdict(node.name, True)
    verdict = NodeVerdict(node.name, False, outcome.error)
    if outcome.error and not outcome.error.startswith("invalid resource pools"):
        return verdict  # the attempt itself failed: there is nothing to judge per device
    work = allocator.start(claims, node, state)
    gathered = work.gathered
    verdict.pools = [f"pool {problem} is invalid and was skipped" for problem in gathered.invalid]
    verdict.pools += [
        f"pool {p.driver}/{p.name} is incomplete (slices still being published)"
        for p in gathered.pools
        if p.incomplete
    ]
    if not gathered.pools and not gathered.invalid:
        verdict.pools.append(f"node {node.name} has no ResourceSlices")
    for index, claim in enumerate(claims):
        for request in claim.requests:
            for alternative in request.alternatives:
                tallies: dict[str, Tally] = {}
                fit, total = 0, 0
                for pool in gathered.pools:
                    for device in pool.candidates:
                        total += 1
                        why = _reason(allocator, work, state, index, claim, alternative, pool, device)
                        if why is None:
                            fit += 1
                            continue
                        text = _summary(why)
                        tally = tallies.get(text)
                        if tally is None:
                            example = f"{device.name}: {why}"
                            tally = tallies[text] = Tally(text, why.rule.value, example=example)
                        tally.devices += 1
                        tally.held_by.update(_held_by(why, device, holders))
                enough = fit > 0 and (alternative.all_devices or fit >= alternative.count)
                verdict.requests.append(
                    RequestVerdict(
                        claim=claim.ref,
                        request=alternative.name,
                        wants="all" if alternative.all_devices else str(alternative.count),
                        devices=total,
                        fit_alone=fit,
                        reasons=sorted(tallies.values(), key=lambda t: (-t.devices, t.reason)),
                        together=enough,
                    )
                )
    return verdict


@dataclass
class PodExplanation:
    pod: str
    phase: str
    node: str | None  # spec.nodeName
    claims: list[PodClaim]
    nodes: list[NodeVerdict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what keeps the claims from any node
    extended: list[ExtendedRequest] = field(default_factory=list)  # the containers' extended resources
    classes: list[ClassDevices] = field(default_factory=list)  # of the requests left to allocate
    gpu_classes: dict[str, str] = field(default_factory=dict)  # DeviceClass -> its GPUClass

    @property
    def fits_on(self) -> list[str]:
        return [n.node for n in self.nodes if n.fits]

    @property
    def plugin_nodes(self) -> list[str]:
        """Nodes where a device plugin serves the Pod's extended resources (DESIGN.md D16)."""
        return [n.node for n in self.nodes if n.device_plugin]

    @property
    def placeable(self) -> bool:
        """Whether the claims fit some node (or nothing is left to allocate)."""
        if self.problems:
            return False
        return bool(self.fits_on) or all(c.state == ALLOCATED for c in self.claims)


def explain_pod(
    explanation: PodExplanation,
    allocator: Allocator,
    parsed: Sequence[Claim],
    nodes: Sequence[Node],
    state: AllocatedState,
    holders: Holders,
) -> PodExplanation:
    """Fills ``nodes`` for the parsed unallocated claims, tried on ``nodes`` in name order."""
    if explanation.problems or not parsed:
        return explanation
    tried = nodes_to_try(explanation.node, explanation.claims, nodes)
    if not tried:
        explanation.problems.append(
            "no node is left to try: the Pod's node, or the nodes its allocated claims are "
            "available on, do not exist"
        )
    explanation.nodes = [explain_node(allocator, parsed, node, state, holders) for node in tried]
    return explanation
