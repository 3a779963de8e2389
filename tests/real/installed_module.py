# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The module installed on a real cluster, as far as a shared test cluster allows: its CRDs for
real, the CRDs of the other modules its chart writes to (permissive stand-ins, see FOREIGN_KINDS),
its namespace for real, and every rendered object sent with server-side field validation Strict,
as ``kubectl apply --server-side`` does and as Deckhouse's Helm would be refused.

Objects go through a dry run (``dryRun=All``: defaulting, validation and admission, no storage)
unless a test needs them stored; the cluster is shared by the whole test run, so nothing here
leaves a webhook or a workload behind.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from testkit.real_cluster import RESOURCES, ApiError, RealCluster, collection_path, object_path

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = "d8-gpu"
STRICT = "fieldValidation=Strict"
MANAGER = "gpu-tests"

# Kinds the chart writes whose CRDs come from other modules (Prometheus operator, Deckhouse's
# monitoring and VPA modules): kind -> (group, version, namespaced). Their real CRDs are not
# vendored here (a copy would be one more stand-in that drifts), so each gets a permissive CRD
# (x-kubernetes-preserve-unknown-fields): the server still judges the object's metadata (name,
# labels, namespace) and that it is written at the group and version the chart uses; the content is
# judged by tests/module (promtool for the rules, the dashboard and monitor tests).
FOREIGN_KINDS: dict[str, tuple[str, str, bool]] = {
    "ServiceMonitor": ("monitoring.coreos.com", "v1", True),
    "PodMonitor": ("monitoring.coreos.com", "v1", True),
    "PrometheusRule": ("monitoring.coreos.com", "v1", True),
    "GrafanaDashboardDefinition": ("deckhouse.io", "v1", False),
    "VerticalPodAutoscaler": ("autoscaling.k8s.io", "v1", True),
}

_installed: dict[str, set[str]] = {}
# The module CRDs each cluster refused, by version: reported by the CRD test, not by every test.
crd_refusals: dict[str, dict[str, str]] = {}
_lock = threading.Lock()


def crd_files() -> list[Path]:
    """Every CRD Deckhouse applies from crds/: *.yaml except the doc- and _ prefixes."""
    return sorted(p for p in (ROOT / "crds").glob("*.yaml") if not p.name.startswith(("doc-", "_")))


def module_crds() -> list[dict[str, Any]]:
    found = []
    for path in crd_files():
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                found.append(doc)
    return found


def foreign_crd(kind: str) -> dict[str, Any]:
    group, version, namespaced = FOREIGN_KINDS[kind]
    plural = RESOURCES[kind][0]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{group}",
            # *.k8s.io is a protected group: the real VPA CRD carries this annotation too.
            "annotations": {
                "api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/63797"
            },
        },
        "spec": {
            "group": group,
            "scope": "Namespaced" if namespaced else "Cluster",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }


def apply_strict(cluster: RealCluster, obj: Mapping[str, Any], *, dry_run: bool = False) -> Any:
    """Server-side apply with Strict field validation: an unknown or duplicate field is an error."""
    query = f"?fieldManager={MANAGER}&force=true&{STRICT}" + ("&dryRun=All" if dry_run else "")
    return cluster.request(
        "PATCH", object_path(obj) + query, dict(obj), content_type="application/apply-patch+yaml"
    )


def create_strict(cluster: RealCluster, obj: Mapping[str, Any], *, dry_run: bool = True) -> Any:
    """A create as Helm does it (POST), Strict; an object another test already stored is judged
    as the update a Helm upgrade would make (server-side apply, dry run)."""
    query = f"?{STRICT}" + ("&dryRun=All" if dry_run else "")
    try:
        return cluster.request("POST", collection_path(obj) + query, dict(obj))
    except ApiError as error:
        if error.status != 409 or not dry_run:
            raise
        return apply_strict(cluster, obj, dry_run=True)


def established(cluster: RealCluster, name: str) -> bool:
    crd = cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    conditions = {c["type"]: c["status"] for c in crd.get("status", {}).get("conditions", [])}
    return conditions.get("Established") == "True" and conditions.get("NamesAccepted") == "True"


def install_crds(cluster: RealCluster, crds: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Applies the CRDs for real and waits until each is Established (its kind is served);
    returns the server's refusals by CRD name, so one refused CRD does not hide the others."""
    names, refused = [], {}
    for crd in crds:
        try:
            apply_strict(cluster, crd)
        except ApiError as error:
            refused[crd["metadata"]["name"]] = str(error)
        else:
            names.append(crd["metadata"]["name"])
    for name in names:
        cluster.wait_for(partial(established, cluster, name), 60, f"CRD {name} Established")
    return refused


def with_namespace(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Helm installs a namespaced object without a namespace into the release's namespace."""
    placed: dict[str, Any] = json.loads(json.dumps(obj))
    if RESOURCES.get(obj["kind"], ("", False))[1]:
        placed["metadata"].setdefault("namespace", NAMESPACE)
    return placed


def install_module(cluster: RealCluster, rendered_namespace: Mapping[str, Any]) -> None:
    """Once per cluster: the module's CRDs, the stand-in CRDs of the other modules, the namespace."""
    with _lock:
        if cluster.version in _installed:
            return
        crd_refusals[cluster.version] = install_crds(cluster, module_crds())
        foreign = install_crds(cluster, [foreign_crd(kind) for kind in FOREIGN_KINDS])
        assert foreign == {}, foreign
        apply_strict(cluster, rendered_namespace)
        _installed[cluster.version] = set()


def refusals(cluster: RealCluster, objects: Iterable[Mapping[str, Any]], workers: int = 4) -> list[str]:
    """Each object dry-run created; the server's refusals, one line each. An object this cluster
    already accepted (the same in another render) is not sent again."""
    accepted = _installed.setdefault(cluster.version, set())
    todo: dict[str, dict[str, Any]] = {}
    for obj in objects:
        placed = with_namespace(obj)
        key = json.dumps(placed, sort_keys=True)
        if key not in accepted:
            todo[key] = placed

    def send(item: tuple[str, dict[str, Any]]) -> str | None:
        key, obj = item
        where = f"{obj['kind']}/{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"
        try:
            create_strict(cluster, obj)
        except ApiError as error:
            return f"{where}: HTTP {error.status}: {error.body.get('message', error.body)}"
        with _lock:
            accepted.add(key)
        return None

    # Namespaces of other Deckhouse modules the chart writes into (d8-monitoring): they exist
    # wherever those modules run; stored for real, as a namespace disturbs no other test.
    for namespace in {obj["metadata"].get("namespace") for obj in todo.values()} - {None, NAMESPACE}:
        cluster.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return [line for line in pool.map(send, todo.items()) if line is not None]
