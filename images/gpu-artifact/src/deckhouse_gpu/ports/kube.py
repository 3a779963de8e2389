# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The Kubernetes API as the services see it: plain JSON objects, merge patches and typed errors.

Every component reaches the API only through ``KubeAPI``. Two adapters implement it: the real
one on the ``kubernetes`` client and an in-memory store used by the tests and the simulator.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from deckhouse_gpu.domain.inventory import physicalgpu

Object = dict[str, Any]


@dataclass(frozen=True)
class Resource:
    """Which kind of object: enough to build its REST path."""

    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool
    has_status: bool = False
    # Lists and watches ask for metadata only (PartialObjectMetadata): what a cache of big objects
    # that reads only their names and labels receives (Nodes: their status is most of each event).
    metadata_only: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


NODES = Resource("", "v1", "nodes", "Node", namespaced=False, has_status=True)
# Nodes as PartialObjectMetadata: labels and uid without the status most of every Node event carries.
NODE_METADATA = replace(NODES, metadata_only=True)
EVENTS = Resource("", "v1", "events", "Event", namespaced=True)
PODS = Resource("", "v1", "pods", "Pod", namespaced=True, has_status=True)


class KubeError(Exception):
    """Base of every API failure the services handle."""


class NotFound(KubeError):
    pass


class AlreadyExists(KubeError):
    pass


class Conflict(KubeError):
    """The object changed since it was read (resourceVersion or uid precondition failed)."""


class Invalid(KubeError):
    """The API server rejected the object (422) or the request (400)."""


class Forbidden(KubeError):
    """The credentials are missing or lack RBAC permission: retrying will not help until RBAC changes."""


class Unavailable(KubeError):
    """Transient: connection refused, timeout, 5xx, 429. Retry with backoff, and not before
    ``retry_after`` seconds when the server said so (a ``Retry-After`` header)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class WatchExpired(KubeError):
    """The watch's resourceVersion is too old (410 Gone): list again, then watch."""


@dataclass(frozen=True)
class ObjectList:
    items: list[Object]
    resource_version: str


@dataclass(frozen=True)
class WatchEvent:
    """A change; or a ``BOOKMARK``, whose object carries only the ``metadata.resourceVersion`` a
    watch resumes from (the server sends one now and then on a watch that selects little, so that
    its version never falls out of the server's window and a reconnect needs no list)."""

    type: Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
    object: Object


class KubeAPI(Protocol):
    def server_version(self) -> tuple[int, int]:
        """(major, minor) of the API server, e.g. (1, 35); it decides the ResourceSlice layout."""
        ...

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object: ...

    def list(
        self,
        resource: Resource,
        label_selector: str | None = None,
        namespace: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList:
        """Every item, read page by page (``limit``/``continue``) so that no answer is unbounded.
        ``field_selector``: comma-separated ``path=value`` or ``path!=value`` terms on the fields
        the API server can select by (``metadata.name``, ``spec.nodeName``, ``spec.driver``,
        ``status.phase``)."""
        ...

    def create(self, resource: Resource, obj: Object) -> Object: ...

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Object,
        subresource: str | None = None,
        namespace: str | None = None,
    ) -> Object:
        """JSON merge patch. A ``metadata.resourceVersion`` in the patch is a precondition."""
        ...

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        uid: str | None = None,
    ) -> None:
        """Deletes; with ``uid`` only if the object still has that uid (else Conflict)."""
        ...

    def watch(
        self,
        resource: Resource,
        resource_version: str,
        label_selector: str | None = None,
        namespace: str | None = None,
        timeout_seconds: int = 300,
        field_selector: str | None = None,
    ) -> Iterator[WatchEvent]:
        """Events after ``resource_version`` until the server ends the stream at the timeout.

        A too old ``resource_version`` raises ``WatchExpired``, either at this call or while the
        events are iterated (the real server answers 200, then sends an ERROR event; the
        in-memory store fails at the first ``next()``), so callers must catch it around the
        loop, not just around the call. ``BOOKMARK`` events (asked for on every watch) only move the
        resourceVersion on: callers resume from it and report nothing.
        """
        ...


RESOURCE_CLAIMS = Resource(
    "resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", namespaced=True, has_status=True
)
RESOURCE_SLICES = Resource("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", namespaced=False)
PHYSICAL_GPUS = Resource(
    physicalgpu.GROUP,
    physicalgpu.VERSION,
    physicalgpu.PLURAL,
    physicalgpu.KIND,
    namespaced=False,
    has_status=True,
)
