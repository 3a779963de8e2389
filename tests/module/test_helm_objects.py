# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The chart's images, Secrets, monitoring objects, webhook and admission policy as rendered by a
real Helm 3, and every rendered object checked against the OpenAPI schemas of Kubernetes 1.34 to
1.37. Whether a real API server accepts them is tests/real/test_module_install.py (1.34 to 1.36);
the schema check stays for 1.37, which has no server here, and as the fast check without one.
"""

from __future__ import annotations

import base64

import kubernetes_validate
import pytest

from tests.module.helm_render_sets import (
    RENDERED,
    SIDECAR,
    VALUE_SETS,
    containers,
    every,
    handler,
    own_containers,
    pod_spec,
)
from tests.support.helm_chart import MONITORING_APIS, HelmFailed, Rendered, render
from tests.support.k8s_versions import SCHEMA_VERSIONS
from tests.support.module_images import COMMON_IMAGES, RUNTIME_IMAGES
from tests.support.module_values import REGISTRY, digest, module_values


def test_images_come_from_the_module_registry_with_its_pull_secret() -> None:
    rendered = RENDERED["module-registry"]
    secret = rendered.get("Secret", "gpu-module-registry")
    assert secret["type"] == "kubernetes.io/dockerconfigjson"
    for workload in rendered.workloads():
        assert pod_spec(workload)["imagePullSecrets"] == [{"name": "gpu-module-registry"}]
        for container in containers(workload):
            if container["name"] == SIDECAR:  # the platform's image, from the platform's registry
                assert container["image"] == f"{REGISTRY}@{digest('kubeRbacProxy')}"
            else:
                assert container["image"].startswith("modules.example.com/gpu@sha256:")
    assert RENDERED["defaults"].find("Secret", "gpu-module-registry") is None
    (main,) = own_containers(handler(RENDERED["defaults"]))
    assert main["image"] == f"{REGISTRY}@{digest('gpuHandler')}"


def test_templates_use_exactly_the_images_werf_builds() -> None:
    # Every image is referenced by digest; a digest marks which built image it is.
    names = {image: digest(image) for image in RUNTIME_IMAGES | COMMON_IMAGES}
    used = {
        container["image"].rsplit("@", 1)[1]
        for rendered in RENDERED.values()
        for workload in rendered.workloads()
        for container in containers(workload)
    }
    assert used == set(names.values())


def test_a_missing_image_digest_fails_the_render_naming_it() -> None:
    values = module_values(images=("gpuNodeAgent", "gpuController", "nvidiaDcgm", "nvidiaDcgmExporter"))
    with pytest.raises(HelmFailed, match='no digest for image "gpuHandler"'):
        render(values)
    values = module_values()
    del values["global"]["modulesImages"]["digests"]["common"]
    with pytest.raises(HelmFailed, match='no digest for image "kubeRbacProxy"'):
        render(values)


def test_monitoring_objects_need_their_crds() -> None:
    bare = render(VALUE_SETS["defaults"], api_versions=())
    for kind in (
        "ServiceMonitor",
        "PodMonitor",
        "PrometheusRule",
        "GrafanaDashboardDefinition",
        "VerticalPodAutoscaler",
    ):
        assert bare.of_kind(kind) == [], kind
    monitors = RENDERED["defaults"].of_kind("ServiceMonitor")
    scraped = {tuple(sorted(m["spec"]["selector"]["matchLabels"].items())) for m in monitors}
    exposed = {
        tuple(sorted(s["spec"]["selector"].items()))
        for s in RENDERED["defaults"].of_kind("Service")
        if any(p["name"] in ("http-metrics", "https-metrics") for p in s["spec"]["ports"])
    }
    assert scraped == exposed  # every metrics Service is scraped, and nothing else
    assert len(monitors) == 3
    assert all(
        m["metadata"]["labels"]["prometheus"] == "main"
        for m in RENDERED["defaults"].of_kind("ServiceMonitor")
    )
    assert render(VALUE_SETS["defaults"], api_versions=MONITORING_APIS).of_kind("VerticalPodAutoscaler") == []


def test_the_node_components_are_scraped_by_pod_monitors_through_their_proxy() -> None:
    monitors = {m["metadata"]["name"]: m for m in RENDERED["defaults"].of_kind("PodMonitor")}
    assert set(monitors) == {"gpu-gpu-handler", "gpu-gpu-node-agent"}
    for app in ("gpu-handler", "gpu-node-agent"):
        monitor = monitors[f"gpu-{app}"]
        assert monitor["metadata"]["labels"]["prometheus"] == "main"
        assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["d8-gpu"]}
        daemonset = RENDERED["defaults"].get("DaemonSet", app)
        assert monitor["spec"]["selector"]["matchLabels"].items() <= (
            daemonset["spec"]["template"]["metadata"]["labels"].items()
        )
        (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
        (container,) = own_containers(daemonset)
        (proxy,) = [c for c in pod_spec(daemonset)["containers"] if c["name"] == SIDECAR]
        assert endpoint["port"] in {p["name"] for p in proxy["ports"]}, app
        assert endpoint["port"] not in {p["name"] for p in container["ports"]}, app  # the probes' port
        assert (endpoint["scheme"], endpoint["path"]) == ("https", "/metrics")
        node = {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}
        assert node in endpoint["relabelings"]
        assert monitor["spec"]["jobLabel"] == "app"


def test_the_webhook_secret_carries_the_hook_certificate() -> None:
    values = module_values()
    assert RENDERED["defaults"].find("Secret", "gpu-dra-controller-webhook-tls") is None
    values["gpu"]["internal"]["webhookCert"] = {"ca": "CA PEM", "crt": "CRT PEM", "key": "KEY PEM"}
    secret = render(values).get("Secret", "gpu-dra-controller-webhook-tls")
    decoded = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert decoded == {"ca.crt": "CA PEM", "tls.crt": "CRT PEM", "tls.key": "KEY PEM"}


def test_the_node_write_policy_is_rendered_with_its_binding() -> None:
    policy = RENDERED["defaults"].get("ValidatingAdmissionPolicy", "d8-gpu-node-writes")
    binding = RENDERED["defaults"].get("ValidatingAdmissionPolicyBinding", "d8-gpu-node-writes")
    # Deny, and Fail when the policy cannot be evaluated: what it says is judged by a real server
    # in tests/real/test_node_policies.py.
    assert binding["spec"] == {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}
    assert policy["spec"]["failurePolicy"] == "Fail"
    usernames = " ".join(policy["spec"]["matchConditions"][0]["expression"].split())
    for workload in ("gpu-node-agent", "gpu-handler"):
        account = pod_spec(RENDERED["defaults"].get("DaemonSet", workload))["serviceAccountName"]
        assert f"system:serviceaccount:d8-gpu:{account}" in usernames


def test_the_dra_controller_serves_the_webhook_only_with_a_certificate() -> None:
    (plain,) = own_containers(RENDERED["defaults"].get("Deployment", "gpu-dra-controller"))
    assert "--no-webhook" in plain["args"]
    assert RENDERED["defaults"].find("ValidatingWebhookConfiguration", "d8-gpu-opaque-config") is None
    values = module_values()
    values["gpu"]["internal"]["webhookCert"] = {"ca": "CA PEM", "crt": "CRT PEM", "key": "KEY PEM"}
    rendered = render(values)
    deployment = rendered.get("Deployment", "gpu-dra-controller")
    (container,) = own_containers(deployment)
    assert "--no-webhook" not in container["args"]
    volumes = {v["name"]: v for v in pod_spec(deployment)["volumes"]}
    assert volumes["webhook-tls"]["secret"]["secretName"] == "gpu-dra-controller-webhook-tls"
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    cert_arg = next(a for a in container["args"] if a.startswith("--tls-cert-file="))
    assert cert_arg == f"--tls-cert-file={mounts['webhook-tls']}/tls.crt"
    (hook,) = rendered.get("ValidatingWebhookConfiguration", "d8-gpu-opaque-config")["webhooks"]
    service = rendered.get("Service", hook["clientConfig"]["service"]["name"])
    port = next(p for p in service["spec"]["ports"] if p["port"] == hook["clientConfig"]["service"]["port"])
    assert port["targetPort"] in {p["name"] for p in container["ports"]}
    assert hook["failurePolicy"] == "Ignore"


# Kinds of CRDs the cluster gets from other modules; Kubernetes' own schemas do not have them.
CRD_KINDS = {
    "ServiceMonitor",
    "PodMonitor",
    "PrometheusRule",
    "GrafanaDashboardDefinition",
    "VerticalPodAutoscaler",
}


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
@pytest.mark.parametrize("rendered", every("schema"))
def test_every_builtin_object_is_valid_for_the_api_server(rendered: Rendered, version: str) -> None:
    # Strict: an unknown field (a typo, a field of another version) is an error, as with
    # kubectl's server-side field validation.
    for obj in rendered.objects:
        if obj["kind"] in CRD_KINDS:
            continue
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(
                f"{obj['kind']}/{obj['metadata']['name']} on {version}: {error.message} at {list(error.path)}"
            )
