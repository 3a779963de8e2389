# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A cluster as ``kubectl gpu`` reads it, in a ``MemoryKube``: Nodes, PhysicalGPUs as the components
leave them, the ResourceSlices gpu-handler publishes for them (``render_nodes``), the DeviceClasses
of docs/examples, and claims allocated by the module's allocator, prepared or not, with Pods."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from deckhouse_gpu.domain.offers.mig_profile_policy import MigProfileRule
from deckhouse_gpu.domain.offers.model import DRIVER
from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.allocator.search import Allocator
from deckhouse_gpu.k8s_semantics.resources.claims import parse_claim, parse_classes
from deckhouse_gpu.k8s_semantics.resources.model import build_inventory
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import allocated_state
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES, PODS, RESOURCE_CLAIM_TEMPLATES
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, RESOURCE_CLAIMS, RESOURCE_SLICES, Object, Resource
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.gpu_objects import ready_card

EXAMPLES = Path(__file__).resolve().parents[1] / "docs/examples/deviceclasses.yaml"
# Every kind kubectl gpu reads, for a FakeApiServer in front of the cluster.
RESOURCES: tuple[Resource, ...] = (
    NODES,
    PHYSICAL_GPUS,
    RESOURCE_SLICES,
    RESOURCE_CLAIMS,
    RESOURCE_CLAIM_TEMPLATES,
    DEVICE_CLASSES,
    PODS,
)


def example_classes() -> list[Object]:
    return [item for item in yaml.safe_load_all(EXAMPLES.read_text()) if item]


class GpuCluster:
    def __init__(self, kube: MemoryKube | None = None, minor: int = 35) -> None:
        self.kube = kube or MemoryKube()
        self.kube.version = (1, minor)
        self.minor = minor
        self._cards: dict[str, list[Object]] = {}
        self._labels: dict[str, dict[str, str]] = {}

    def node(
        self, name: str, model: str | None = None, count: int = 0, labels: Mapping[str, str] | None = None
    ) -> list[Object]:
        """A Node with ``count`` healthy cards of ``model``, as the components leave them."""
        self._labels[name] = dict(labels or {})
        self.kube.create(
            NODES,
            {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **self._labels[name]}}},
        )
        cards = (
            [ready_card(name, f"0000:{0x10 + i * 0x08:02x}:00.0", model) for i in range(count)]
            if model
            else []
        )
        for card in cards:
            self.kube.create(PHYSICAL_GPUS, card)
            self.kube.patch(
                PHYSICAL_GPUS, card["metadata"]["name"], {"status": card["status"]}, subresource="status"
            )
        self._cards[name] = cards
        return cards

    def publish(self, mig_profiles: Sequence[MigProfileRule] = ()) -> None:
        """The slices gpu-handler publishes for every node's cards and labels (and dra.migProfiles)."""
        for name, cards in self._cards.items():
            for item in render_nodes(cards, self.minor, self._labels[name], True, True, True, mig_profiles):
                self.kube.create(RESOURCE_SLICES, item)

    def classes(self, names: list[str] | None = None) -> None:
        for item in example_classes():
            if names is None or item["metadata"]["name"] in names:
                self.kube.create(DEVICE_CLASSES, item)

    def claim(
        self,
        namespace: str,
        name: str,
        device_class: str,
        count: int = 1,
        node: str | None = None,
        pod: str | None = None,
        prepared: bool = False,
        share: str | None = None,
    ) -> Object:
        """A claim of ``count`` devices of the class; with ``node``, allocated there by the allocator,
        reserved for ``pod`` (created, bound to the node) and, when ``prepared``, with status.devices."""
        exactly: dict[str, Any] = {"deviceClassName": device_class, "count": count}
        if share is not None:
            exactly["capacity"] = {"requests": {"sharePercent": share}}
        spec = {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}
        created = self.kube.create(
            RESOURCE_CLAIMS, {"metadata": {"name": name, "namespace": namespace}, "spec": spec}
        )
        if node is None:
            return created
        semantics = Semantics(f"1.{min(self.minor, 35)}")
        classes = parse_classes(self.kube.list(DEVICE_CLASSES).items)
        claims = self.kube.list(RESOURCE_CLAIMS).items
        allocator = Allocator(build_inventory(self.kube.list(RESOURCE_SLICES).items), semantics, CelMatcher())
        outcome = allocator.allocate(
            [parse_claim(created, classes, semantics)],
            Node(node, self._labels.get(node, {})),
            allocated_state(claims, True),
        )
        if outcome.allocations is None:
            raise ValueError(
                f"claim {namespace}/{name} does not fit node {node}: {outcome.error or 'no room'}"
            )
        (allocation,) = outcome.allocations
        status: dict[str, Any] = {"allocation": allocation}
        if pod is not None:
            made = self.pod(namespace, pod, [("gpu", name, None)], node=node, phase="Running")
            status["reservedFor"] = [{"resource": "pods", "name": pod, "uid": made["metadata"]["uid"]}]
        if prepared:
            status["devices"] = [
                {
                    "driver": DRIVER,
                    "pool": r["pool"],
                    "device": r["device"],
                    "data": {
                        "kind": "MIG" if "-mig-" in r["device"] else "Physical",
                        **({"migUUID": f"MIG-{r['device']}"} if "-mig-" in r["device"] else {}),
                    },
                }
                for r in allocation["devices"]["results"]
            ]
        return self.kube.patch(
            RESOURCE_CLAIMS, name, {"status": status}, subresource="status", namespace=namespace
        )

    def template(self, namespace: str, name: str, device_class: str, count: int = 1) -> Object:
        request = {"name": "gpu", "exactly": {"deviceClassName": device_class, "count": count}}
        body = {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [request]}}},
        }
        return self.kube.create(RESOURCE_CLAIM_TEMPLATES, body)

    def pod(
        self,
        namespace: str,
        name: str,
        claims: list[tuple[str, str | None, str | None]],
        node: str | None = None,
        phase: str = "Pending",
        generated: Mapping[str, str] | None = None,
    ) -> Object:
        """A Pod with claims (entry, claim name, template name); ``generated`` names the claims made
        from templates (status.resourceClaimStatuses)."""
        entries = [
            {
                "name": entry,
                **({"resourceClaimName": claim} if claim else {"resourceClaimTemplateName": template}),
            }
            for entry, claim, template in claims
        ]
        container = {
            "name": "main",
            "image": "cuda",
            "resources": {"claims": [{"name": e[0]} for e in claims]},
        }
        spec: dict[str, Any] = {"containers": [container], "resourceClaims": entries}
        if node is not None:
            spec["nodeName"] = node
        self.kube.create(PODS, {"metadata": {"name": name, "namespace": namespace}, "spec": spec})
        status: dict[str, Any] = {"phase": phase}
        if generated:
            status["resourceClaimStatuses"] = [
                {"name": k, "resourceClaimName": v} for k, v in generated.items()
            ]
        return self.kube.patch(PODS, name, {"status": status}, subresource="status", namespace=namespace)
