# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The chart rendered by a real Helm 3 over every value set (tests/module/helm_render_sets.py), every
object checked against the security and layout rules of the Deckhouse conventions: module labels and
namespaces, pod security, probes, host paths, RBAC, disruption budgets and autoscalers, Services.
"""

from __future__ import annotations

import re

import pytest

from tests.module.helm_render_sets import RENDERED, containers, every, pod_spec
from tests.support.helm_chart import Rendered
from tests.support.rbac_rules import PLATFORM_CLUSTER_ROLES

PRIORITY_CLASSES = {
    "system-node-critical",
    "system-cluster-critical",
    "cluster-critical",
    "cluster-medium",
    "cluster-low",
    "production-high",
    "production-medium",
    "production-low",
    "staging",
    "develop",
    "standby",
}
# The only containers allowed to be privileged, and why (templates say it in comments too).
PRIVILEGED = {
    ("gpu-handler", "gpu-handler"),  # MIG instances and vfio-pci binding change the card
    ("nvidia-dcgm-exporter", "dcgm"),  # DCGM opens /dev/nvidia* without a device plugin
}
# Host paths each workload may mount; anything else is a review finding.
HOST_PATHS = {
    "gpu-node-agent": {"/sys", "/etc/os-release", "/proc/sys/kernel", "/usr/share"},
    "gpu-handler": {
        "/var/lib/kubelet/plugins",
        "/var/lib/kubelet/plugins_registry",
        "/etc/cdi",
        "/var/run/cdi",
        "/",
        "/run/nvidia",
        "/dev",
    },
    "nvidia-driver-validator": {"/", "/run/nvidia"},
    "nvidia-dcgm-exporter": {"/", "/run/nvidia", "/var/lib/kubelet/pod-resources"},
    "gpu-controller": set(),
    "gpu-dra-controller": set(),
}
# Subjects outside the module that its bindings may name: Deckhouse's Prometheus, which scrapes the
# components' /metrics through their kube-rbac-proxy (templates/rbac-to-us.yaml; dmt's
# binding-subject rule accepts d8-monitoring/prometheus too).
SCRAPERS = {("ServiceAccount", "d8-monitoring", "prometheus"), ("User", "", "d8-monitoring:scraper")}
CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "GrafanaDashboardDefinition",
}


@pytest.mark.parametrize("rendered", every("labels"))
def test_every_object_has_the_module_labels_and_its_namespace(rendered: Rendered) -> None:
    for obj in rendered.objects:
        where = f"{obj['kind']}/{obj['metadata']['name']}"
        labels = obj["metadata"].get("labels") or {}
        assert labels.get("heritage") == "deckhouse", where
        assert labels.get("module") == "gpu", where
        namespace = obj["metadata"].get("namespace")
        if obj["kind"] in CLUSTER_SCOPED:
            assert namespace is None, where
        elif obj["kind"] in ("ServiceMonitor", "PodMonitor", "PrometheusRule"):
            assert namespace == "d8-monitoring", where
        else:
            assert namespace == "d8-gpu", where


@pytest.mark.parametrize("rendered", every("pods"))
def test_every_pod_follows_the_security_rules(rendered: Rendered) -> None:
    for workload in rendered.workloads():
        name = workload["metadata"]["name"]
        spec = pod_spec(workload)
        template_labels = workload["spec"]["template"]["metadata"]["labels"]
        assert {"heritage", "module", "app"} <= set(template_labels), name
        assert workload["spec"]["selector"]["matchLabels"].items() <= template_labels.items(), name
        assert workload["spec"].get("revisionHistoryLimit", 10) <= 2, name
        assert spec["priorityClassName"] in PRIORITY_CLASSES, name
        pod = spec["securityContext"]
        user = (pod["runAsUser"], pod["runAsGroup"])
        if pod["runAsNonRoot"]:
            assert user in ((64535, 64535), (65534, 65534)), name
        else:
            assert user == (0, 0), name
        names = [c["name"] for c in containers(workload)]
        assert len(names) == len(set(names)), f"{name}: duplicate container names"
        for container in containers(workload):
            where = f"{name}/{container['name']}"
            security = container["securityContext"]
            assert security["readOnlyRootFilesystem"] is True, where
            if (name, container["name"]) in PRIVILEGED:
                assert security["privileged"] is True, where
            else:
                assert "privileged" not in security, where
                assert security["allowPrivilegeEscalation"] is False, where
                assert security.get("capabilities") == {"drop": ["ALL"]}, where
            seccomp = security.get("seccompProfile") or pod.get("seccompProfile")
            assert seccomp == {"type": "RuntimeDefault"}, where
            assert container["image"].startswith(("registry.example.com/", "modules.example.com/")), where
            assert re.search(r"@sha256:[0-9a-f]{64}$", container["image"]), where
            assert container.get("imagePullPolicy", "IfNotPresent") == "IfNotPresent", where
            resources = container["resources"]
            assert resources["requests"]["ephemeral-storage"], where
            assert resources["requests"]["memory"], where
            assert resources["limits"]["memory"], where
            for port in container.get("ports", []):
                assert port["containerPort"] > 1024, where
            env_names = [e["name"] for e in container.get("env", [])]
            assert len(env_names) == len(set(env_names)), f"{where}: duplicate env {env_names}"


@pytest.mark.parametrize("rendered", every("probes"))
def test_every_long_running_container_has_liveness_and_readiness_probes(rendered: Rendered) -> None:
    handlers = {"httpGet", "tcpSocket", "exec", "grpc"}
    for workload in rendered.workloads():
        for container in containers(workload, init=False):
            where = f"{workload['metadata']['name']}/{container['name']}"
            ports = {p["name"] for p in container.get("ports", [])}
            for probe in ("livenessProbe", "readinessProbe"):
                assert probe in container, f"{where}: no {probe}"
                used = handlers & set(container[probe])
                assert len(used) == 1, f"{where}: {probe} has {used}"
                handler = used.pop()
                if handler != "exec":
                    port = container[probe][handler].get("port")
                    assert port in ports, f"{where}: {probe} port {port} is not a named port of it"


@pytest.mark.parametrize("rendered", every("hostpaths"))
def test_host_paths_are_only_those_each_component_needs(rendered: Rendered) -> None:
    for workload in rendered.workloads():
        name = workload["metadata"]["name"]
        volumes = pod_spec(workload).get("volumes") or []
        paths = {v["hostPath"]["path"] for v in volumes if "hostPath" in v}
        assert paths <= HOST_PATHS[name], f"{name}: {paths - HOST_PATHS[name]}"
        mounted = {m["name"] for c in containers(workload) for m in c.get("volumeMounts", [])}
        assert mounted == {v["name"] for v in volumes}, f"{name}: volumes and mounts differ"
        for container in containers(workload):
            if (name, container["name"]) in PRIVILEGED:
                continue
            for mount in container.get("volumeMounts", []):
                volume = next(v for v in volumes if v["name"] == mount["name"])
                if "hostPath" in volume and mount["name"] not in ("tmp",):
                    assert mount.get("readOnly") is True, (
                        f"{name}/{container['name']}: {mount['name']} writable"
                    )


@pytest.mark.parametrize("rendered", every("rbac"))
def test_rbac_is_named_by_convention_without_wildcards_and_binds_existing_accounts(
    rendered: Rendered,
) -> None:
    accounts = {
        (o["metadata"]["namespace"], o["metadata"]["name"]) for o in rendered.of_kind("ServiceAccount")
    }
    for role in rendered.of_kind("ClusterRole"):
        assert role["metadata"]["name"].startswith("d8:gpu:"), role["metadata"]["name"]
    for role in [*rendered.of_kind("ClusterRole"), *rendered.of_kind("Role")]:
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[field], f"{role['metadata']['name']}: wildcard in {field}"
    for binding in [*rendered.of_kind("ClusterRoleBinding"), *rendered.of_kind("RoleBinding")]:
        kind, role = binding["roleRef"]["kind"], binding["roleRef"]["name"]
        platform = kind == "ClusterRole" and role in PLATFORM_CLUSTER_ROLES  # Deckhouse's own
        assert platform or rendered.find(kind, role) is not None, binding["metadata"]["name"]
        for subject in binding["subjects"]:
            where = (subject["kind"], subject.get("namespace", ""), subject["name"])
            if where in SCRAPERS:
                assert binding["metadata"]["name"] == "access-to-gpu-prometheus-metrics", where
                continue
            assert subject["kind"] == "ServiceAccount", where
            assert (subject["namespace"], subject["name"]) in accounts, binding["metadata"]["name"]
    for workload in rendered.workloads():
        account = pod_spec(workload)["serviceAccountName"]
        assert ("d8-gpu", account) in accounts, workload["metadata"]["name"]


@pytest.mark.parametrize("rendered", every("availability"))
def test_deployments_have_a_matching_pdb_and_every_workload_a_vpa(rendered: Rendered) -> None:
    budgets = rendered.of_kind("PodDisruptionBudget")
    for deployment in rendered.of_kind("Deployment"):
        selector = deployment["spec"]["selector"]["matchLabels"]
        assert any(b["spec"]["selector"]["matchLabels"] == selector for b in budgets)
        assert not any("helm.sh/hook" in (b["metadata"].get("annotations") or {}) for b in budgets)
    scaled = {
        (v["spec"]["targetRef"]["kind"], v["spec"]["targetRef"]["name"]): v
        for v in rendered.of_kind("VerticalPodAutoscaler")
    }
    for workload in rendered.workloads():
        vpa = scaled[(workload["kind"], workload["metadata"]["name"])]
        assert vpa["spec"]["updatePolicy"]["updateMode"] in (
            "Off",
            "Initial",
            "Recreate",
            "InPlaceOrRecreate",
        )
        policies = {p["containerName"]: p for p in vpa["spec"]["resourcePolicy"]["containerPolicies"]}
        # Regular containers only: dmt compares policies with them, and the init container runs once.
        assert set(policies) == {c["name"] for c in containers(workload, init=False)}, workload["metadata"][
            "name"
        ]
    assert len(scaled) == len(rendered.workloads())


@pytest.mark.parametrize("rendered", every("services"))
def test_services_target_named_ports_of_their_pods(rendered: Rendered) -> None:
    for service in rendered.of_kind("Service"):
        selector = service["spec"]["selector"]
        pods = [
            w
            for w in rendered.workloads()
            if selector.items() <= w["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert pods, service["metadata"]["name"]
        named = {p["name"] for w in pods for c in containers(w, init=False) for p in c.get("ports", [])}
        for port in service["spec"]["ports"]:
            assert isinstance(port["targetPort"], str)
            assert port["targetPort"] in named


def test_the_namespace_allows_the_privileged_handler_and_watches_rules() -> None:
    namespace = RENDERED["defaults"].get("Namespace", "d8-gpu")
    labels = namespace["metadata"]["labels"]
    assert labels["prometheus.deckhouse.io/rules-watcher-enabled"] == "true"
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
