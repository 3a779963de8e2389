# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The MPS daemon Pods gpu-handler creates, as the chart sets it up: the Pod it builds from the
rendered DaemonSet's environment mounts the driver root as the chart does, runs the handler's own
image with the module's pull secret, and its Role and the ValidatingAdmissionPolicy d8-gpu-mps-pods
are rendered for it. What the policy allows and refuses, and that the server accepts the Pod, is
judged by a real kube-apiserver: tests/real/test_node_policies.py, test_written_objects.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from deckhouse_gpu.adapters.kube.mps_daemon_pods import KubeMpsDaemons
from deckhouse_gpu.adapters.nvml.nvml_real import RealNVML
from deckhouse_gpu.cmd.gpu_handler import main as handler
from deckhouse_gpu.cmd.gpu_handler.plugin_wiring import sharing_host
from deckhouse_gpu.domain.prepare.mps import MpsDaemon, daemon_for
from deckhouse_gpu.domain.prepare.mps_pod import daemon_of
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from tests.module.helm_render_sets import RENDERED, env, own_containers, pod_spec
from tests.support.helm_chart import Rendered

ROOT = Path(__file__).resolve().parents[2]
_POLICY, BINDING = yaml.safe_load_all((ROOT / "templates" / "mps-daemon-policy.yaml").read_text())
PLUGIN_DIR = "/var/lib/kubelet/plugins/gpu.deckhouse.io"
PLAN = DevicePlan("gpu", "w1", "gpu-0000-17-00-0", "0000:17:00.0", "Physical", share_id="s1", uuid="GPU-1")


def handler_container(rendered: Rendered) -> dict[str, Any]:
    (main,) = own_containers(rendered.get("DaemonSet", "gpu-handler"))
    found: dict[str, Any] = main
    return found


def daemons_as_deployed(rendered: Rendered, monkeypatch: pytest.MonkeyPatch, node: str) -> KubeMpsDaemons:
    """What gpu-handler run builds from the rendered environment (downward API: d8-gpu, the node)."""
    for name, value in env(handler_container(rendered)).items():
        if isinstance(value, str):
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("POD_NAMESPACE", "d8-gpu")
    args = handler.parse_args(["run", "--node-name", node])
    host = sharing_host(args, MemoryKube(), RealNVML())  # real node: no NVML call is made here
    assert host.plugin_dir == PLUGIN_DIR
    assert isinstance(host.daemons, KubeMpsDaemons)
    return host.daemons


def daemon(node: str = "w1") -> MpsDaemon:
    return daemon_for(PLAN, node, PLUGIN_DIR, "GPU-1")


@pytest.mark.parametrize("values", ["defaults", "containerised-driver", "module-registry"])
def test_the_pod_the_handler_builds_mounts_the_driver_root_as_the_chart(
    values: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered = RENDERED[values]
    pod = daemons_as_deployed(rendered, monkeypatch, "w1").pod(daemon())
    main = handler_container(rendered)
    (container,) = pod["spec"]["containers"]
    assert container["image"] == main["image"]
    assert daemon_of(pod) == daemon()
    # The driver root: the same volume and mount as the handler's, found at the same place inside.
    handler_volume = next(
        v for v in pod_spec(rendered.get("DaemonSet", "gpu-handler"))["volumes"] if v["name"] == "driver-root"
    )
    pod_volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "driver-root")
    assert pod_volume["hostPath"]["path"] == handler_volume["hostPath"]["path"]
    handler_mount = next(m for m in main["volumeMounts"] if m["name"] == "driver-root")
    pod_mount = next(m for m in container["volumeMounts"] if m["name"] == "driver-root")
    assert pod_mount == handler_mount
    pod_env = {e["name"]: e["value"] for e in container["env"]}
    assert pod_env["NVIDIA_DRIVER_ROOT_MOUNT"] == env(main)["NVIDIA_DRIVER_ROOT_MOUNT"]


def test_the_pull_secret_is_the_modules_own_and_only_when_it_has_one(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = daemons_as_deployed(RENDERED["defaults"], monkeypatch, "w1").pod(daemon())
    assert "imagePullSecrets" not in plain["spec"]
    registry = RENDERED["module-registry"]
    monkeypatch.delenv("MPS_IMAGE_PULL_SECRET", raising=False)
    pod = daemons_as_deployed(registry, monkeypatch, "w1").pod(daemon())
    (secret,) = pod["spec"]["imagePullSecrets"]
    assert registry.get("Secret", secret["name"])["type"] == "kubernetes.io/dockerconfigjson"
    for workload in registry.workloads():
        assert pod_spec(workload)["imagePullSecrets"] == [secret]


def test_the_pod_follows_the_charts_security_rules_for_a_privileged_node_component(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pod = daemons_as_deployed(RENDERED["defaults"], monkeypatch, "w1").pod(daemon())
    spec = pod["spec"]
    handler_spec = pod_spec(RENDERED["defaults"].get("DaemonSet", "gpu-handler"))
    assert spec["priorityClassName"] == handler_spec["priorityClassName"]
    assert spec["tolerations"] == handler_spec["tolerations"]
    assert spec["securityContext"] == handler_spec["securityContext"]
    assert spec["automountServiceAccountToken"] is False
    (container,) = spec["containers"]
    handler_security = handler_container(RENDERED["defaults"])["securityContext"]
    assert container["securityContext"] == handler_security
    resources = container["resources"]
    assert resources["requests"]["ephemeral-storage"]
    assert resources["requests"]["memory"]
    assert resources["limits"]["memory"]
    assert container["readinessProbe"]["exec"]["command"][0] == "gpu-mps-daemon"
    assert {"heritage", "module", "app"} <= set(pod["metadata"]["labels"])
    assert pod["metadata"]["namespace"] == "d8-gpu"


def test_the_role_lets_the_handler_create_and_delete_pods_in_its_namespace_only() -> None:
    rendered = RENDERED["defaults"]
    role = rendered.get("Role", "gpu-handler:mps-daemons")
    assert role["metadata"]["namespace"] == "d8-gpu"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "create", "delete"]}
    ]
    binding = rendered.get("RoleBinding", "gpu-handler:mps-daemons")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    account = pod_spec(rendered.get("DaemonSet", "gpu-handler"))["serviceAccountName"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": "d8-gpu"}]
    # Across the cluster Pods are only read (gpu-handler gets a claim's Pod for its VFIO annotation).
    for cluster_role in rendered.of_kind("ClusterRole"):
        assert all(
            "pods" not in rule["resources"] or set(rule["verbs"]) <= {"get", "list", "watch"}
            for rule in cluster_role["rules"]
        ), cluster_role["metadata"]["name"]
    handler = rendered.get("ClusterRole", "d8:gpu:gpu-handler")
    assert {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]} in handler["rules"]


def test_the_policy_is_rendered_with_its_binding_for_the_handlers_account() -> None:
    rendered = RENDERED["defaults"]
    policy = rendered.get("ValidatingAdmissionPolicy", "d8-gpu-mps-pods")
    binding = rendered.get("ValidatingAdmissionPolicyBinding", "d8-gpu-mps-pods")
    assert binding["spec"] == {"policyName": "d8-gpu-mps-pods", "validationActions": ["Deny"]}
    assert policy["spec"]["failurePolicy"] == "Fail"
    account = pod_spec(rendered.get("DaemonSet", "gpu-handler"))["serviceAccountName"]
    assert f"system:serviceaccount:d8-gpu:{account}" in policy["spec"]["matchConditions"][0]["expression"]
    assert BINDING["spec"] == binding["spec"]
