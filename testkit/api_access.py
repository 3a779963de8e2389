# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Who asked the API server for what: the requests a ``FakeApiServer`` recorded, as the
(verb, group, resource, subresource, namespace) an RBAC authorizer checks, per client.

Each component is told apart by its bearer token: a test gives every component a kubeconfig of
its own (``write_kubeconfig(directory, url, token=<component>)``), as each pod has its own
ServiceAccount token in a cluster, and the token names the component (``gpu-handler``, or
``gpu-handler/w1`` for one of several instances). Nothing in the module
changes for it. The log is kept as JSON (``save``/``load``), so that several runs (the end-to-end
world of tests/e2e/test_least_privilege.py, a chaos run) can be merged and compared with the
Helm-rendered RBAC (tests/support/rbac_rules.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import unquote

from testkit.fake_apiserver import RecordedRequest

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True, order=True)
class Access:
    """One right used: a resource request as RBAC sees it, or a non-resource URL (``path``)."""

    component: str
    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""  # "" for a cluster-scoped object or a request across all namespaces
    path: str = ""  # only for non-resource URLs such as /version

    @property
    def resource_path(self) -> str:
        """``pods/status`` as RBAC rules name it."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    def __str__(self) -> str:
        if self.path:
            return f"{self.component}: {self.verb} {self.path}"
        where = f"in namespace {self.namespace}" if self.namespace else "cluster-wide"
        group = self.group or "core"
        return f"{self.component}: {self.verb} {self.resource_path} ({group}) {where}"


def component_of(authorization: str | None) -> str:
    """The component a request came from: its bearer token up to a "/" (the chaos world of
    testkit/chaos_world.py names one instance per node, ``gpu-handler/w1``), or "anonymous"."""
    scheme, _, token = (authorization or "").partition(" ")
    # The scheme's case is free (RFC 9110); the kubernetes client's in-cluster loader writes "bearer".
    return token.partition("/")[0] if scheme.lower() == "bearer" and token else "anonymous"


def access_of(request: RecordedRequest) -> Access:
    """The RBAC attributes of one request, as the API server's request-info resolver derives them."""
    component = component_of(request.authorization)
    parts = [unquote(part) for part in request.path.strip("/").split("/")]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        rest = []
    if not rest:  # /version, /api, /apis/<group>/<version>: discovery, not a resource
        return Access(component, request.method.lower(), path=request.path)
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    resource, name = rest[0], rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if request.method == "GET":
        verb = ("watch" if request.query.get("watch") in ("true", "1") else "list") if not name else "get"
    elif request.method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _VERBS.get(request.method, request.method.lower())
    return Access(component, verb, group, resource, subresource, namespace)


class AccessLog:
    """The distinct accesses of one or more runs, with how many requests each took."""

    def __init__(self, counts: dict[Access, int] | None = None) -> None:
        self.counts: dict[Access, int] = dict(counts or {})

    @classmethod
    def of(cls, requests: Iterable[RecordedRequest]) -> AccessLog:
        log = cls()
        for request in requests:
            access = access_of(request)
            log.counts[access] = log.counts.get(access, 0) + 1
        return log

    def merge(self, other: AccessLog) -> AccessLog:
        merged = dict(self.counts)
        for access, count in other.counts.items():
            merged[access] = merged.get(access, 0) + count
        return AccessLog(merged)

    def components(self) -> set[str]:
        return {access.component for access in self.counts}

    def of_component(self, component: str) -> list[Access]:
        return sorted(access for access in self.counts if access.component == component)

    def save(self, path: Path) -> None:
        rows = [{**asdict(access), "requests": count} for access, count in sorted(self.counts.items())]
        path.write_text(json.dumps(rows, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> AccessLog:
        counts: dict[Access, int] = {}
        for row in json.loads(path.read_text()):
            count = int(row.pop("requests"))
            counts[Access(**row)] = count
        return cls(counts)
