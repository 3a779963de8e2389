# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What ``kubectl gpu`` reads of a cluster, and the failures it can name (DESIGN.md D12).

One list per kind, whole (every namespace), and a get for the Pod and templates ``explain``
looks at: nothing per node, nothing written. Each failure of the API becomes one of two errors
with one line that says what to do: ``ClusterError`` (cannot read the cluster: unreachable,
credentials, RBAC, the module or DRA not installed) and ``InputError`` (what was asked for does
not exist or does not fit the command).
"""

from __future__ import annotations

from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.resources.claims import ClaimError, DeviceClass, parse_class
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics, version_for
from deckhouse_gpu.k8s_semantics.versions import NEWEST_MINOR
from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES, PODS, RESOURCE_CLAIM_TEMPLATES
from deckhouse_gpu.ports.kube import (
    NODES,
    PHYSICAL_GPUS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    Forbidden,
    KubeAPI,
    KubeError,
    NotFound,
    Object,
    Resource,
    Unavailable,
)

RBAC_HINT = "see the RBAC a user needs in docs/KUBECTL.md"


class ReportError(Exception):
    """A failure the command reports in one line."""


class ClusterError(ReportError):
    """The cluster cannot be read: unreachable, no permission, the module or DRA missing."""


class InputError(ReportError):
    """What was asked for does not exist, or is not something the command answers."""


def _what(resource: Resource) -> str:
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural


def _failure(error: KubeError, verb: str, resource: Resource, where: str) -> ClusterError:
    if isinstance(error, Forbidden):
        return ClusterError(f"not allowed to {verb} {_what(resource)}{where} ({error}); {RBAC_HINT}")
    if isinstance(error, NotFound) and resource == PHYSICAL_GPUS:
        return ClusterError(
            f"the gpu module is not installed in this cluster: the API server serves no {_what(resource)}"
        )
    if isinstance(error, NotFound):
        return ClusterError(
            f"the API server serves no {_what(resource)} {resource.version}: "
            "Dynamic Resource Allocation needs Kubernetes 1.34 or newer"
        )
    if isinstance(error, Unavailable):
        return ClusterError(f"the API server cannot be reached: {error}")
    return ClusterError(f"cannot {verb} {_what(resource)}{where}: {error}")


class ClusterReads:
    """Typed reads over the KubeAPI port; every API error leaves as a ReportError."""

    def __init__(self, api: KubeAPI) -> None:
        self.api = api
        self._device_classes: list[Object] | None = None  # listed once: classes() and the reports
        self._nodes: list[Object] | None = None  # listed once: the node selection and the explain notes

    def list_all(self, resource: Resource) -> list[Object]:
        where = " in all namespaces" if resource.namespaced else ""
        try:
            return self.api.list(resource).items
        except KubeError as error:
            raise _failure(error, "list", resource, where) from error

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object | None:
        """The object, or None when it does not exist."""
        try:
            return self.api.get(resource, name, namespace=namespace)
        except NotFound:
            return None
        except KubeError as error:
            where = f" in namespace {namespace}" if namespace else ""
            raise _failure(error, "get", resource, where) from error

    def semantics(self, strict: bool) -> Semantics:
        """The allocator's semantics for this API server: its minor, 1.34 to 1.37 (a newer one as 1.37)."""
        try:
            major, minor = self.api.server_version()
        except KubeError as error:
            if isinstance(error, Unavailable):
                raise ClusterError(f"the API server cannot be reached: {error}") from error
            raise ClusterError(f"cannot read the API server's version: {error}") from error
        return Semantics(version_for(minor if major == 1 else NEWEST_MINOR), strict=strict)

    def cards(self) -> list[Object]:
        return self.list_all(PHYSICAL_GPUS)

    def slices(self) -> list[Object]:
        return self.list_all(RESOURCE_SLICES)

    def claims(self) -> list[Object]:
        return self.list_all(RESOURCE_CLAIMS)

    def nodes(self) -> list[Node]:
        return [
            Node(str(n["metadata"]["name"]), dict((n.get("metadata") or {}).get("labels") or {}))
            for n in self.node_objects()
        ]

    def node_objects(self) -> list[Object]:
        """The Nodes as stored, listed once: their device plugins' resources are read too."""
        if self._nodes is None:
            self._nodes = self.list_all(NODES)
        return self._nodes

    def device_class_objects(self) -> list[Object]:
        """The DeviceClasses as stored: their owners and extended resource names are read too."""
        if self._device_classes is None:
            self._device_classes = self.list_all(DEVICE_CLASSES)
        return self._device_classes

    def classes(self) -> tuple[dict[str, DeviceClass], list[str]]:
        """DeviceClasses by name, and why those that cannot be used were left out."""
        found: dict[str, DeviceClass] = {}
        problems = []
        for item in self.device_class_objects():
            try:
                device_class = parse_class(item)
            except ClaimError as error:
                problems.append(str(error))
                continue
            found[device_class.name] = device_class
        return found, problems

    def pod(self, namespace: str, name: str) -> Object:
        found = self.get(PODS, name, namespace)
        if found is None:
            raise InputError(f'pod "{name}" not found in namespace "{namespace}"')
        return found

    def templates(self, namespace: str, names: list[str]) -> dict[str, Object]:
        found = {}
        for name in names:
            template = self.get(RESOURCE_CLAIM_TEMPLATES, name, namespace)
            if template is not None:
                found[name] = template
        return found
