# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The API writes of a node component and their failures, and the KubeAPI wrapper that counts them.

Every create, patch and delete goes through ``MeteredKube``: a write counts once, a failed one
also by the error the services see (ports/kube.py); reads and watches pass through uncounted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from deckhouse_gpu.domain.metric_labels import API_ERRORS, bounded
from deckhouse_gpu.ports.kube import KubeAPI, KubeError, Object, ObjectList, Resource, WatchEvent


class ApiWriteMetrics:
    """``<prefix>_api_writes_total{resource}`` and ``<prefix>_api_write_errors_total{resource, error}``."""

    def __init__(self, registry: CollectorRegistry, prefix: str) -> None:
        self.registry = registry
        self.api_writes = Counter(
            f"{prefix}_api_writes",
            "Writes (create, patch, delete) to the API server, by resource kind",
            ["resource"],
            registry=registry,
        )
        self.api_write_errors = Counter(
            f"{prefix}_api_write_errors",
            "Failed writes to the API server, by resource kind and error",
            ["resource", "error"],
            registry=registry,
        )

    def observe_api_write(self, resource: str, error: str | None) -> None:
        self.api_writes.labels(resource).inc()
        if error is not None:
            self.api_write_errors.labels(resource, bounded(error, API_ERRORS)).inc()


class MeteredKube:
    """Implements ``ports.kube.KubeAPI`` around another one; anything else it has is passed on."""

    def __init__(self, inner: KubeAPI, metrics: ApiWriteMetrics) -> None:
        self.inner, self.metrics = inner, metrics

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def server_version(self) -> tuple[int, int]:
        return self.inner.server_version()

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        return self.inner.get(resource, name, namespace=namespace)

    def list(
        self,
        resource: Resource,
        label_selector: str | None = None,
        namespace: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList:
        return self.inner.list(
            resource, label_selector=label_selector, namespace=namespace, field_selector=field_selector
        )

    def create(self, resource: Resource, obj: Object) -> Object:
        try:
            created = self.inner.create(resource, obj)
        except KubeError as error:
            self.metrics.observe_api_write(resource.kind, type(error).__name__)
            raise
        self.metrics.observe_api_write(resource.kind, None)
        return created

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Object,
        subresource: str | None = None,
        namespace: str | None = None,
    ) -> Object:
        try:
            patched = self.inner.patch(resource, name, patch, subresource=subresource, namespace=namespace)
        except KubeError as error:
            self.metrics.observe_api_write(resource.kind, type(error).__name__)
            raise
        self.metrics.observe_api_write(resource.kind, None)
        return patched

    def delete(
        self, resource: Resource, name: str, namespace: str | None = None, uid: str | None = None
    ) -> None:
        try:
            self.inner.delete(resource, name, namespace=namespace, uid=uid)
        except KubeError as error:
            self.metrics.observe_api_write(resource.kind, type(error).__name__)
            raise
        self.metrics.observe_api_write(resource.kind, None)

    def watch(
        self,
        resource: Resource,
        resource_version: str,
        label_selector: str | None = None,
        namespace: str | None = None,
        timeout_seconds: int = 300,
        field_selector: str | None = None,
    ) -> Iterator[WatchEvent]:
        return self.inner.watch(
            resource,
            resource_version,
            label_selector=label_selector,
            namespace=namespace,
            timeout_seconds=timeout_seconds,
            field_selector=field_selector,
        )
