"""The chart rendered by a real Helm 3 over several sets of values, every object checked against
the security and layout rules of the Deckhouse conventions, and each setting checked for its effect.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import kubernetes_validate
import pytest

from tests.support.helm_chart import MONITORING_APIS, HelmFailed, Rendered, render
from tests.support.k8s_semantics import iter_errors
from tests.support.module_images import RUNTIME_IMAGES
from tests.support.module_values import REGISTRY, digest, module_values

VALUE_SETS: dict[str, dict[str, Any]] = {
    "defaults": module_values(),
    "ha": module_values({"highAvailability": True}),
    "cluster-ha": module_values(cluster_ha=True),
    "containerised-driver": module_values(
        {"nvidiaDriverRoot": "/run/nvidia/driver", "cdiRoot": "/var/run/cdi"}
    ),
    "monitoring-off": module_values({"monitoring": {"dcgm": {"enabled": False}}}),
    "module-registry": module_values(
        {"logLevel": "Debug", "managedNodes": {"nodeSelector": {"node.deckhouse.io/group": "gpu"}}},
        registry={"base": "modules.example.com/gpu", "dockercfg": base64.b64encode(b"{}").decode()},
    ),
}
RENDERED = {name: render(values) for name, values in VALUE_SETS.items()}

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
CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "GrafanaDashboardDefinition",
}


def every(check_name: str) -> list[Any]:
    return [pytest.param(rendered, id=f"{check_name}-{name}") for name, rendered in RENDERED.items()]


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def containers(workload: dict[str, Any], init: bool = True) -> list[dict[str, Any]]:
    spec = pod_spec(workload)
    found: list[dict[str, Any]] = list(spec["containers"])
    return found + list(spec.get("initContainers") or []) if init else found


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
        kind = binding["roleRef"]["kind"]
        assert rendered.find(kind, binding["roleRef"]["name"]) is not None, binding["metadata"]["name"]
        for subject in binding["subjects"]:
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
        assert set(policies) == {c["name"] for c in containers(workload)}, workload["metadata"]["name"]
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


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def handler(rendered: Rendered) -> dict[str, Any]:
    return rendered.get("DaemonSet", "gpu-handler")


def test_the_node_runtime_selects_the_labels_the_hook_keeps() -> None:
    from lib.gpu_node_labels import HANDLER_LABEL, LABEL_VALUE, VALIDATOR_LABEL  # noqa: PLC0415

    rendered = RENDERED["defaults"]
    wanted = {
        "gpu-handler": HANDLER_LABEL,
        "nvidia-dcgm-exporter": HANDLER_LABEL,
        "nvidia-driver-validator": VALIDATOR_LABEL,
    }
    for name, label in wanted.items():
        spec = pod_spec(rendered.get("DaemonSet", name))
        assert spec["nodeSelector"] == {label: LABEL_VALUE}, name
        assert "affinity" not in spec, name  # nothing per node in the template


def test_the_handler_surges_on_update_and_knows_its_pod_uid() -> None:
    daemonset = handler(RENDERED["defaults"])
    assert daemonset["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }
    (main,) = pod_spec(daemonset)["containers"]
    variables = env(main)
    assert variables["POD_UID"] == {"fieldRef": {"fieldPath": "metadata.uid"}}
    assert variables["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert main["command"] == ["gpu-handler", "run"]
    (prestart,) = pod_spec(daemonset)["initContainers"]
    assert prestart["command"] == ["gpu-handler", "prestart"]
    assert prestart["securityContext"]["runAsNonRoot"] is True  # only the main container is privileged
    mounts = {m["mountPath"] for m in main["volumeMounts"]}
    assert {"/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry", "/etc/cdi"} <= mounts


def driver_mounts(workload: dict[str, Any]) -> list[tuple[str, str, str | None, str]]:
    volumes = {v["name"]: v for v in pod_spec(workload)["volumes"]}
    found = []
    for container in containers(workload):
        for mount in container.get("volumeMounts", []):
            if mount["name"] == "driver-root":
                host = volumes["driver-root"]["hostPath"]["path"]
                found.append((container["name"], host, mount.get("mountPropagation"), mount["mountPath"]))
    return found


@pytest.mark.parametrize("workload", ["gpu-handler", "nvidia-driver-validator", "nvidia-dcgm-exporter"])
def test_the_driver_root_is_mounted_as_section_10_4_says(workload: str) -> None:
    host_root = RENDERED["defaults"].get("DaemonSet", workload)
    for _, host, propagation, path in driver_mounts(host_root):
        assert (host, propagation, path) == ("/", None, "/driver-root")
    container = RENDERED["containerised-driver"].get("DaemonSet", workload)
    mounts = driver_mounts(container)
    assert mounts
    for _, host, propagation, path in mounts:
        assert (host, propagation, path) == ("/run/nvidia", "HostToContainer", "/driver-root-parent")
    for item in containers(container):
        variables = env(item)
        if "NVIDIA_DRIVER_ROOT" in variables:
            assert variables["NVIDIA_DRIVER_ROOT"] == "/run/nvidia/driver"
            assert variables["NVIDIA_DRIVER_ROOT_MOUNT"] == "/driver-root-parent/driver"


def test_the_handler_gets_the_cdi_root_dra_modes_and_grace_period() -> None:
    (main,) = pod_spec(handler(RENDERED["containerised-driver"]))["containers"]
    variables = env(main)
    assert variables["CDI_ROOT"] == "/var/run/cdi"
    assert variables["HOST_DRIVER_ROOT"] == "/run/nvidia/driver"
    assert {m["mountPath"] for m in main["volumeMounts"]} >= {"/var/run/cdi"}
    custom = render(
        module_values(
            {
                "dra": {"partitionableDevices": "Disabled", "consumableCapacity": "Enabled"},
                "health": {"gracePeriodSeconds": 90},
            }
        )
    )
    (main,) = pod_spec(handler(custom))["containers"]
    variables = env(main)
    assert (variables["DRA_PARTITIONABLE"], variables["DRA_CONSUMABLE_CAPACITY"]) == ("off", "on")
    assert "--health-grace-seconds=90" in main["args"]
    (default,) = pod_spec(handler(RENDERED["defaults"]))["containers"]
    assert (env(default)["DRA_PARTITIONABLE"], env(default)["DRA_CONSUMABLE_CAPACITY"]) == ("auto", "auto")
    assert "--health-grace-seconds=30" in default["args"]


@pytest.mark.parametrize(("name", "replicas"), [("defaults", 1), ("ha", 2), ("cluster-ha", 2)])
def test_high_availability_gives_two_spread_replicas(name: str, replicas: int) -> None:
    deployment = RENDERED[name].get("Deployment", "gpu-controller")
    assert deployment["spec"]["replicas"] == replicas
    anti = (pod_spec(deployment).get("affinity") or {}).get("podAntiAffinity")
    assert (anti is not None) == (replicas == 2)


def test_ha_can_be_turned_off_on_an_ha_cluster() -> None:
    rendered = render(module_values({"highAvailability": False}, cluster_ha=True))
    assert rendered.get("Deployment", "gpu-controller")["spec"]["replicas"] == 1


def test_the_controller_reads_the_validator_pods_by_their_label() -> None:
    controller = RENDERED["defaults"].get("Deployment", "gpu-controller")
    (container,) = pod_spec(controller)["containers"]
    selector = next(a.split("=", 1)[1] for a in container["args"] if a.startswith("--validator-selector="))
    key, value = selector.split("=")
    validator = RENDERED["defaults"].get("DaemonSet", "nvidia-driver-validator")
    assert validator["spec"]["template"]["metadata"]["labels"][key] == value
    assert validator["spec"]["template"]["spec"]["containers"][0]["command"] == [
        "gpu-handler",
        "validate-driver",
    ]


def test_monitoring_off_removes_dcgm_and_its_scrape() -> None:
    rendered = RENDERED["monitoring-off"]
    assert rendered.find("DaemonSet", "nvidia-dcgm-exporter") is None
    assert rendered.find("ServiceMonitor", "gpu-nvidia-dcgm-exporter") is None
    assert rendered.find("ServiceMonitor", "gpu-gpu-controller") is not None
    assert RENDERED["defaults"].find("DaemonSet", "nvidia-dcgm-exporter") is not None


def test_the_node_agent_skips_the_control_plane_and_opted_out_and_unselected_nodes() -> None:
    agent = RENDERED["module-registry"].get("DaemonSet", "gpu-node-agent")
    spec = pod_spec(agent)
    assert spec["nodeSelector"] == {"node.deckhouse.io/group": "gpu"}
    (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    keys = {(e["key"], e["operator"]) for e in term["matchExpressions"]}
    assert keys == {
        ("node-role.kubernetes.io/control-plane", "DoesNotExist"),
        ("gpu.deckhouse.io/disabled", "DoesNotExist"),
    }
    custom = render(module_values({"managedNodes": {"optOutLabel": "example.com/no-gpu"}}))
    (term,) = pod_spec(custom.get("DaemonSet", "gpu-node-agent"))["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert ("example.com/no-gpu", "DoesNotExist") in {
        (e["key"], e["operator"]) for e in term["matchExpressions"]
    }


def test_log_level_reaches_every_component() -> None:
    for workload in RENDERED["module-registry"].workloads():
        for container in containers(workload, init=False):
            if "LOG_LEVEL" in env(container):
                assert env(container)["LOG_LEVEL"] == "debug"


def test_images_come_from_the_module_registry_with_its_pull_secret() -> None:
    rendered = RENDERED["module-registry"]
    secret = rendered.get("Secret", "gpu-module-registry")
    assert secret["type"] == "kubernetes.io/dockerconfigjson"
    for workload in rendered.workloads():
        assert pod_spec(workload)["imagePullSecrets"] == [{"name": "gpu-module-registry"}]
        for container in containers(workload):
            assert container["image"].startswith("modules.example.com/gpu@sha256:")
    assert RENDERED["defaults"].find("Secret", "gpu-module-registry") is None
    (main,) = pod_spec(handler(RENDERED["defaults"]))["containers"]
    assert main["image"] == f"{REGISTRY}@{digest('gpuHandler')}"


def test_templates_use_exactly_the_images_werf_builds() -> None:
    # Every image is referenced by digest; a digest marks which built image it is.
    names = {image: digest(image) for image in RUNTIME_IMAGES}
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


def test_monitoring_objects_need_their_crds() -> None:
    bare = render(VALUE_SETS["defaults"], api_versions=())
    for kind in ("ServiceMonitor", "PrometheusRule", "GrafanaDashboardDefinition", "VerticalPodAutoscaler"):
        assert bare.of_kind(kind) == [], kind
    monitors = RENDERED["defaults"].of_kind("ServiceMonitor")
    scraped = {tuple(sorted(m["spec"]["selector"]["matchLabels"].items())) for m in monitors}
    exposed = {
        tuple(sorted(s["spec"]["selector"].items()))
        for s in RENDERED["defaults"].of_kind("Service")
        if any(p["name"] == "http-metrics" for p in s["spec"]["ports"])
    }
    assert scraped == exposed  # every metrics Service is scraped, and nothing else
    assert len(monitors) == 3
    assert all(
        m["metadata"]["labels"]["prometheus"] == "main"
        for m in RENDERED["defaults"].of_kind("ServiceMonitor")
    )
    assert render(VALUE_SETS["defaults"], api_versions=MONITORING_APIS).of_kind("VerticalPodAutoscaler") == []


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
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    usernames = " ".join(policy["spec"]["matchConditions"][0]["expression"].split())
    for workload in ("gpu-node-agent", "gpu-handler"):
        account = pod_spec(RENDERED["defaults"].get("DaemonSet", workload))["serviceAccountName"]
        assert f"system:serviceaccount:d8-gpu:{account}" in usernames


# Kinds of CRDs the cluster gets from other modules; Kubernetes' own schemas do not have them.
CRD_KINDS = {"ServiceMonitor", "PrometheusRule", "GrafanaDashboardDefinition", "VerticalPodAutoscaler"}


@pytest.mark.parametrize("version", ["1.34.0", "1.35.0"])
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


def test_the_dra_controller_serves_the_webhook_only_with_a_certificate() -> None:
    (plain,) = pod_spec(RENDERED["defaults"].get("Deployment", "gpu-dra-controller"))["containers"]
    assert "--no-webhook" in plain["args"]
    assert RENDERED["defaults"].find("ValidatingWebhookConfiguration", "d8-gpu-opaque-config") is None
    values = module_values()
    values["gpu"]["internal"]["webhookCert"] = {"ca": "CA PEM", "crt": "CRT PEM", "key": "KEY PEM"}
    rendered = render(values)
    deployment = rendered.get("Deployment", "gpu-dra-controller")
    (container,) = pod_spec(deployment)["containers"]
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


@pytest.mark.parametrize("rendered", every("semantics"))
def test_every_object_passes_the_api_servers_semantic_rules(rendered: Rendered) -> None:
    sizes = [len(str(obj)) for obj in rendered.objects]
    assert list(iter_errors(rendered.objects, sizes)) == []
