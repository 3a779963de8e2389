# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The GPU node of ``make chaos-real`` (tests/real/chaos_real.py): a real kubelet of the cluster's
version on Kubernetes' fake container runtime, and the simulated host gpu-node-agent and gpu-handler
run on (two A30s, each in an IOMMU group of its own with its audio function, vfio-pci loaded).

The kubelet registers the Node itself and runs every Pod bound to it: the workload stream's Pods,
gpu-handler's MPS daemon Pods, the driver validator and the Pods the components' tokens are bound
to. Unlike tests/real/handler_world.py's node, nothing here is installed with the admin's rights and
no gpu-handler is started: chaos_real starts the module's components on their own ServiceAccount
tokens, through their proxies; this node gives gpu-handler the kubelet's directories to serve.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.sim_node import claim_specs
from tests.real import component_world as world
from tests.real.handler_world import HandlerNode


class ChaosGpuNode(HandlerNode):
    """A real kubelet and a simulated host; HandlerNode's views of both (checkpoint, MIG instances,
    the cards' drivers, the kubelet's log) without its admin-installed handler."""

    def start(self) -> ChaosGpuNode:
        self.kubelet = self.cluster.start_kubelet(self.node)
        self._build_host("ch-")  # gpu-handler reaches the kubelet's directories through its link
        self._give_ephemeral_storage()
        return self

    @property
    def namespace(self) -> str:
        return "chaos-pods"

    def handler_args(self) -> list[str]:
        """gpu-handler's node arguments, as its DaemonSet passes them on this host."""
        return ["--node-name", self.node, "--nvml-sim", "a30,a30",
                "--host-root", str(self.host_root), "--cdi-root", "/etc/cdi",
                "--plugin-dir", str(self.plugin_dir), "--registry-dir", str(self.kubelet.registry_dir),
                "--namespace", world.NAMESPACE,
                "--mps-image", "registry.example/gpu-handler:test"]  # fmt: skip

    def cdi_specs(self) -> list[str]:
        return claim_specs(self.host_root)

    def mps_daemons(self) -> list[dict[str, Any]]:
        """The MPS daemon Pods of this node, in the module's namespace (gpu-handler's --namespace)."""
        daemons = self.cluster.request(
            "GET", f"/api/v1/namespaces/{world.NAMESPACE}/pods?labelSelector=app%3Dgpu-mps"
        )["items"]
        return [d for d in daemons if d["spec"].get("nodeName") == self.node]
