# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The module's components on a real API server, each with its own ServiceAccount's token.

The chart is rendered by the real Helm (tests/support/helm_chart.py) and what decides who may
write what is applied for real: the CRDs, the namespace, the ServiceAccounts, the RBAC and the
ValidatingAdmissionPolicies. A node component's token is a TokenRequest bound to a Pod on that
node, as the kubelet projects it into a DaemonSet's pod: on Kubernetes >= 1.32 it carries
``authentication.kubernetes.io/node-name``, the node the policies read. Such a Pod is an object
only (no kubelet runs it); the token stays valid while it exists.

The components run as processes (``python -m deckhouse_gpu.cmd....``) with a kubeconfig holding
that token, so every request goes through the client they use in a pod. A request made here
``as_token`` is a plain HTTPS call with the same token: the refusals are the server's own answers.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from testkit.node_components import whole_card_class
from testkit.real_cluster import (
    ApiError,
    Process,
    RealCluster,
    launch,
    object_path,
    wait_until,
)
from testkit.rotating_tokens import bound_reference, daemon_pod
from testkit.waiting import free_port
from tests.support.helm_chart import Rendered, render
from tests.support.module_values import module_values

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "d8-gpu"
# What decides the components' rights; the workloads themselves are another test's business.
ACCESS_KINDS = (
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
)
NODE_AGENT, HANDLER = "gpu-node-agent", "gpu-handler"
CONTROLLER, DRA_CONTROLLER = "gpu-controller", "gpu-dra-controller"
CARDS = ("0000:17:00.0", "0000:31:00.0")  # two A30s on every simulated node
PHYSICAL_GPUS = "/apis/gpu.deckhouse.io/v1alpha1/physicalgpus"
RESOURCE_SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def unique(prefix: str) -> str:
    """A name no other test of the shared cluster uses (DNS-1123, short enough for a node)."""
    return f"{prefix}-{secrets.token_hex(3)}"


def card_name(node: str, address: str) -> str:
    """gpu-node-agent's name of a card: <node>-<PCI address with - for : and .>."""
    return f"{node}-{address.replace(':', '-').replace('.', '-')}"


@functools.cache
def rendered() -> Rendered:
    return render(module_values())


# ---------------------------------------------------------------------------------------------
# The module's access objects on the server


NEEDED_CRDS = ("physicalgpus.gpu.deckhouse.io",)
_installed: set[str] = set()
_install_lock = threading.Lock()


def install_access(cluster: RealCluster) -> None:
    """The CRDs and the chart's RBAC and policies, once per cluster, in force when it returns."""
    with _install_lock:
        if cluster.server in _installed:
            return
        for path in sorted((REPO / "crds").glob("*.yaml")):
            if path.name.startswith(("doc-", "_")):
                continue
            crd = yaml.safe_load(path.read_text())
            name = crd["metadata"]["name"]
            try:
                cluster.apply(crd)
            except ApiError:
                # tests/real/test_module_install.py reports a refused CRD; the components here
                # need only PhysicalGPU (gpu-dra-controller runs without its GPUClasses).
                if name in NEEDED_CRDS:
                    raise
                continue
            cluster.wait_for(functools.partial(_established, cluster, name), 60, f"CRD {name} served")
        for obj in rendered().objects:
            if obj["kind"] in ACCESS_KINDS:
                cluster.apply(obj)
        # The ServiceAccount controller's part, which a cluster without kube-controller-manager
        # lacks: gpu-handler's MPS daemon Pods name no account, so they run as "default".
        cluster.ensure(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "default", "namespace": NAMESPACE},
            }
        )
        _wait_policies_in_force(cluster)
        _installed.add(cluster.server)


def _established(cluster: RealCluster, name: str) -> bool:
    crd = cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    return any(
        c["type"] == "Established" and c["status"] == "True"
        for c in (crd.get("status") or {}).get("conditions") or ()
    )


def _wait_policies_in_force(cluster: RealCluster) -> None:
    """A new policy reaches the server's admission through an informer, a moment after its
    creation: until a token naming no node is refused by both, a refusal test would race it."""
    for account, path, body in (
        (NODE_AGENT, PHYSICAL_GPUS, physical_gpu("probe", CARDS[0])),
        (HANDLER, f"/api/v1/namespaces/{NAMESPACE}/pods", mps_pod("probe", "probe")),
    ):
        token = cluster.service_account_token(NAMESPACE, account, 600)

        def refused(token: str = token, path: str = path, body: Any = body) -> bool:
            status, answer = as_token(cluster, token, "POST", path + "?dryRun=All", body)
            return status == 403 and "names no node" in str(answer.get("message"))

        cluster.wait_for(refused, 60, f"the policies refusing {account} without a node")


# ---------------------------------------------------------------------------------------------
# Identities


@dataclass(frozen=True)
class Credential:
    """A ServiceAccount's token as one of its pods holds it, and a kubeconfig carrying it."""

    account: str
    token: str
    kubeconfig: Path
    node: str | None = None


def add_node(cluster: RealCluster, node: str) -> dict[str, Any]:
    """A Node object (no kubelet behind it): what the components and the bound tokens refer to."""
    return cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})


def node_credential(cluster: RealCluster, account: str, node: str) -> Credential:
    """The token a DaemonSet pod of ``account`` on ``node`` gets: bound to such a Pod, so the
    server adds the node's name to the identity the policies see."""
    # A shared cluster may run the node lifecycle controller: the pod tolerates every taint of a
    # node without a kubelet, so none evicts it and the token bound to it.
    pod = cluster.create(daemon_pod(NAMESPACE, f"{account}-{node}", account, node))
    bound = bound_reference(pod)
    token = cluster.service_account_token(NAMESPACE, account, 3600, bound_to=bound)
    kubeconfig = cluster.token_kubeconfig(f"{account}-{node}", token)
    return Credential(account, token, kubeconfig, node)


def account_credential(cluster: RealCluster, account: str, name: str) -> Credential:
    """A Deployment's token: the policies match no controller, so no Pod need hold it."""
    token = cluster.service_account_token(NAMESPACE, account, 3600)
    return Credential(account, token, cluster.token_kubeconfig(name, token))


def as_token(
    cluster: RealCluster,
    token: str,
    method: str,
    path: str,
    body: Mapping[str, Any] | None = None,
) -> tuple[int, dict[str, Any]]:
    """One request with ``token`` (a PATCH is a JSON merge patch, as the components send): the
    HTTP status and the answer (a Status when refused)."""
    content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
    return cluster.as_token(token, method, path, body, content_type)


# ---------------------------------------------------------------------------------------------
# Objects


def physical_gpu(node: str, address: str) -> dict[str, Any]:
    return {
        "apiVersion": "gpu.deckhouse.io/v1alpha1",
        "kind": "PhysicalGPU",
        "metadata": {"name": card_name(node, address), "labels": {"gpu.deckhouse.io/node": node}},
        "spec": {},
    }


def resource_slice(node: str, name: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node}-gpu.deckhouse.io-test"},
        "spec": {
            "driver": "gpu.deckhouse.io",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0000-17-00-0"}],
        },
    }


def mps_pod(node: str, name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A Pod as gpu-handler's MPS daemon is (app=gpu-mps, the node's label and spec.nodeName)."""
    own = {"app": "gpu-mps", "gpu.deckhouse.io/node": node} if labels is None else dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": own},
        "spec": {
            "nodeName": node,
            "automountServiceAccountToken": False,
            "containers": [{"name": "mps", "image": "registry.example/gpu:test"}],
        },
    }


def ready_validator(cluster: RealCluster, node: str) -> str:
    """The node's driver validator Pod, Running and Ready (no kubelet runs it): what gpu-controller
    reads to set DriverReady. Its name."""
    name = f"nvidia-driver-validator-{node}"
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "nvidia-driver-validator"}},
            "spec": {
                "nodeName": node,
                "serviceAccountName": "driver-validator",
                "automountServiceAccountToken": False,
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "validator", "image": "registry.example/gpu:test"}],
            },
        }
    )
    ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    path = f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/status"
    cluster.request("PATCH", path, {"status": ready}, content_type="application/merge-patch+json")
    return name


def whole_gpu_class(cluster: RealCluster, name: str) -> None:
    """A DeviceClass of the module's whole cards (deviceType Physical), new."""
    whole_card_class(cluster, name, exist_ok=False)


def delete_quietly(cluster: RealCluster, path: str) -> None:
    with contextlib.suppress(ApiError):
        cluster.request("DELETE", path)


def delete_node_objects(cluster: RealCluster, node: str) -> None:
    """What a test made for ``node``: its cards, slices, token pods and the Node."""
    for item in cluster.request("GET", f"{PHYSICAL_GPUS}?labelSelector=gpu.deckhouse.io/node={node}")[
        "items"
    ]:
        delete_quietly(cluster, f"{PHYSICAL_GPUS}/{item['metadata']['name']}")
    for item in cluster.request("GET", f"{RESOURCE_SLICES}?fieldSelector=spec.nodeName={node}")["items"]:
        delete_quietly(cluster, f"{RESOURCE_SLICES}/{item['metadata']['name']}")
    for account in (NODE_AGENT, HANDLER):
        delete_quietly(cluster, f"/api/v1/namespaces/{NAMESPACE}/pods/{account}-{node}?gracePeriodSeconds=0")
    delete_quietly(cluster, object_path({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}))


# ---------------------------------------------------------------------------------------------
# Component processes


@dataclass
class Component:
    """One component process (testkit's Process: its own session, its log kept for the failure
    message) and the loopback ports of its probes and metrics."""

    process: Process
    probes: int
    metrics: int

    @property
    def name(self) -> str:
        return self.process.name

    def stop(self) -> int:
        """SIGTERM, as the kubelet stops a pod; the exit status."""
        self.process.stop(grace=20)
        return int(self.process.popen.returncode)

    def get(self, path: str, metrics: bool = False) -> tuple[int, str]:
        url = f"http://127.0.0.1:{self.metrics if metrics else self.probes}{path}"
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                return int(answer.status), answer.read().decode()
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode(errors="replace")
        except OSError:
            return 0, ""

    def wait_ready(self, timeout: float = 60) -> None:
        wait_until(lambda: self.get("/readyz")[0] == 200, timeout, f"{self.name} ready", self.process)

    def wait_for(self, check: Callable[[], T | None], timeout: float, what: str) -> T:
        """``check``'s first truthy answer (an ApiError counts as none), while this component
        runs: one that exited fails at once, with its log."""
        found: list[T] = []

        def probe() -> bool:
            with contextlib.suppress(ApiError):
                answer = check()
                if answer:
                    found.append(answer)
            return bool(found)

        wait_until(probe, timeout, what, self.process)
        return found[0]


def start(
    name: str,
    module: str,
    args: list[str],
    logs: Path,
    env: Mapping[str, str] | None = None,
    probes_flag: str = "--health-address",
) -> Component:
    """``python -m <module> <args>`` with its probe and metrics addresses on
    free loopback ports, logging to ``logs/<name>.log``."""
    probes, metrics = free_port(), free_port()
    argv = [sys.executable, "-m", module, *args]
    argv += [f"{probes_flag}=127.0.0.1:{probes}", f"--metrics-address=127.0.0.1:{metrics}"]
    environment = {**os.environ, "LOG_LEVEL": "info", "POD_NAMESPACE": NAMESPACE, **(env or {})}
    environment.pop("KUBERNETES_SERVICE_HOST", None)  # the kubeconfig, never an in-cluster guess
    return Component(launch(name, argv, logs, REPO, environment), probes, metrics)
