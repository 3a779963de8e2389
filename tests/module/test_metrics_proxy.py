# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Every component's /metrics behind kube-rbac-proxy, as rendered by a real Helm 3 over every value
set: the component listens for /metrics on loopback only and keeps its probes on the pod's
address; the sidecar (templates/_kube_rbac_proxy.tpl) serves /metrics over HTTPS on port
https-metrics and asks the API server whether the caller may get the workload's
prometheus-metrics subresource; Prometheus scrapes that port with its token, and
templates/rbac-to-us.yaml lets it (and only it) read the subresource.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.module.helm_render_sets import RENDERED, SIDECAR, env, every, own_containers, pod_spec
from tests.support.helm_chart import Rendered
from tests.support.module_values import REGISTRY, digest
from tests.support.rbac_rules import service_account_rules

# The module's components: their workload kind, as the sidecar's authorization names it.
COMPONENTS = {
    "gpu-handler": "daemonsets",
    "gpu-node-agent": "daemonsets",
    "gpu-controller": "deployments",
    "gpu-dra-controller": "deployments",
}
RESOURCE = {"DaemonSet": "daemonsets", "Deployment": "deployments"}


def sidecar(workload: dict[str, Any]) -> dict[str, Any]:
    (found,) = [c for c in pod_spec(workload)["containers"] if c["name"] == SIDECAR]
    container: dict[str, Any] = found
    return container


def metrics_address(container: dict[str, Any]) -> str:
    """What the component is told: env METRICS_ADDRESS or the --metrics-address flag."""
    flags = [a.split("=", 1)[1] for a in container.get("args", []) if a.startswith("--metrics-address=")]
    variables = [v for k, v in env(container).items() if k == "METRICS_ADDRESS"]
    (address,) = flags + variables
    return str(address)


@pytest.mark.parametrize("rendered", every("proxied"))
def test_every_component_serves_metrics_on_loopback_behind_its_sidecar(rendered: Rendered) -> None:
    proxied = {w["metadata"]["name"] for w in rendered.workloads() if SIDECAR in _names(w)}
    assert proxied == set(COMPONENTS)
    for name, resource in COMPONENTS.items():
        workload = next(w for w in rendered.workloads() if w["metadata"]["name"] == name)
        assert RESOURCE[workload["kind"]] == resource
        (main,) = own_containers(workload)
        host, _, port = metrics_address(main).rpartition(":")
        assert host == "127.0.0.1", name  # never the pod's address: only the sidecar reaches it
        assert {p["name"] for p in main["ports"]} >= {"http-probes"}, name
        assert "https-metrics" not in {p["name"] for p in main["ports"]}, name
        for probe in ("livenessProbe", "readinessProbe"):
            assert main[probe]["httpGet"]["port"] == "http-probes", (name, probe)
        proxy = sidecar(workload)
        config = yaml.safe_load(env(proxy)["KUBE_RBAC_PROXY_CONFIG"])
        assert config == {
            "upstreams": [
                {
                    "upstream": f"http://127.0.0.1:{port}/metrics",
                    "path": "/metrics",
                    "authorization": {
                        "resourceAttributes": {
                            "namespace": "d8-gpu",
                            "apiGroup": "apps",
                            "apiVersion": "v1",
                            "resource": resource,
                            "subresource": "prometheus-metrics",
                            "name": name,
                        }
                    },
                }
            ]
        }, name


@pytest.mark.parametrize("rendered", every("sidecar"))
def test_the_sidecar_listens_on_the_pod_address_with_the_platform_image(rendered: Rendered) -> None:
    for name in COMPONENTS:
        workload = next(w for w in rendered.workloads() if w["metadata"]["name"] == name)
        proxy = sidecar(workload)
        (port,) = proxy["ports"]
        assert port["name"] == "https-metrics"
        assert (
            f"--secure-listen-address=$(KUBE_RBAC_PROXY_LISTEN_ADDRESS):{port['containerPort']}"
            in (proxy["args"])
        )
        assert {"--v=2", "--logtostderr=true", "--stale-cache-interval=1h30m", "--livez-path=/livez"} <= set(
            proxy["args"]
        )
        assert env(proxy)["KUBE_RBAC_PROXY_LISTEN_ADDRESS"] == {"fieldRef": {"fieldPath": "status.podIP"}}
        for probe in ("livenessProbe", "readinessProbe"):
            assert proxy[probe]["httpGet"] == {"path": "/livez", "port": "https-metrics", "scheme": "HTTPS"}
        security = proxy["securityContext"]
        assert (security["runAsNonRoot"], security["runAsUser"], security["runAsGroup"]) == (
            True,
            64535,
            64535,
        )
        assert security["readOnlyRootFilesystem"] is True
        assert security["capabilities"] == {"drop": ["ALL"]}
        # The platform's image, by its digest in global.modulesImages.digests.common.
        assert proxy["image"] == f"{REGISTRY}@{digest('kubeRbacProxy')}"


def test_prometheus_scrapes_every_component_over_https_with_its_token() -> None:
    rendered = RENDERED["defaults"]
    endpoints: dict[str, dict[str, Any]] = {}
    for monitor in rendered.of_kind("PodMonitor"):
        (endpoints[monitor["spec"]["selector"]["matchLabels"]["app"]],) = monitor["spec"][
            "podMetricsEndpoints"
        ]
    for monitor in rendered.of_kind("ServiceMonitor"):
        app = monitor["spec"]["selector"]["matchLabels"]["app"]
        if app in COMPONENTS:
            (endpoints[app],) = monitor["spec"]["endpoints"]
            service = rendered.get("Service", app)
            (port,) = [p for p in service["spec"]["ports"] if p["name"] == endpoints[app]["port"]]
            assert port["targetPort"] == "https-metrics"
    assert set(endpoints) == set(COMPONENTS)
    for app, endpoint in endpoints.items():
        assert endpoint["port"] == "https-metrics", app
        assert (endpoint["scheme"], endpoint["path"]) == ("https", "/metrics"), app
        assert endpoint["bearerTokenSecret"] == {"name": "prometheus-token", "key": "token"}, app
        assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}, app  # the sidecar's own certificate
        assert endpoint["honorLabels"] is True, app


def test_only_deckhouse_s_prometheus_may_read_the_metrics() -> None:
    rendered = RENDERED["defaults"]
    role = rendered.get("Role", "access-to-gpu-prometheus-metrics")
    granted = {
        (resource, name, verb)
        for rule in role["rules"]
        for resource in rule["resources"]
        for name in rule["resourceNames"]
        for verb in rule["verbs"]
        if rule["apiGroups"] == ["apps"]
    }
    assert granted == {(f"{kind}/prometheus-metrics", name, "get") for name, kind in COMPONENTS.items()}
    binding = rendered.get("RoleBinding", "access-to-gpu-prometheus-metrics")
    assert binding["metadata"]["namespace"] == role["metadata"]["namespace"] == "d8-gpu"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert sorted(binding["subjects"], key=lambda s: s["kind"]) == [
        {"kind": "ServiceAccount", "name": "prometheus", "namespace": "d8-monitoring"},
        {"kind": "User", "name": "d8-monitoring:scraper"},
    ]
    readers = [
        b for b in [*rendered.of_kind("RoleBinding"), *rendered.of_kind("ClusterRoleBinding")]
        if b["roleRef"]["name"] == role["metadata"]["name"]
    ]  # fmt: skip
    assert readers == [binding]


def test_each_component_may_review_its_callers_through_the_platform_role() -> None:
    rendered = RENDERED["defaults"]
    for name in COMPONENTS:
        (binding,) = [
            b
            for b in rendered.of_kind("ClusterRoleBinding")
            if b["roleRef"]["name"] == "d8:rbac-proxy"
            and b["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": "d8-gpu"}]
        ]
        assert binding["metadata"]["name"] == f"d8:gpu:{name}:rbac-proxy"
        rights = {right for rule in service_account_rules(rendered, name) for right in rule.rights()}
        assert {
            ("create", "authentication.k8s.io", "tokenreviews"),
            ("create", "authorization.k8s.io", "subjectaccessreviews"),
        } <= rights


def _names(workload: dict[str, Any]) -> set[str]:
    return {c["name"] for c in pod_spec(workload)["containers"]}
