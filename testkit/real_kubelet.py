# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A real kubelet on Kubernetes' fake container runtime, joined to a RealCluster.

With the fake runtime containers are never started (they report Running at once), but the kubelet
is the real one: it registers its Node, runs Pods, talks to DRA plugins over their sockets exactly
as in production and calls NodePrepareResources / NodeUnprepareResources. It must run as root, and
it rewrites a few kernel tunables at start, which are put back.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from testkit.real_cluster import (
    KUBELET_VERSIONS,
    ApiError,
    AssetsMissing,
    Process,
    binaries,
    gates,
    kubeconfig_text,
    launch,
    wait_until,
)
from testkit.waiting import free_port

if TYPE_CHECKING:
    from testkit.real_cluster import RealCluster

# The kubelet rewrites these at start; a test machine gets its own values back.
_KUBELET_SYSCTLS = (
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
)


@dataclass
class Kubelet:
    """A real kubelet on the fake container runtime; plugins register under ``root``."""

    cluster: RealCluster
    node: str
    directory: Path = field(init=False)
    processes: list[Process] = field(default_factory=list)
    _sysctls: dict[str, str] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.directory / "root"

    @property
    def registry_dir(self) -> Path:
        return self.root / "plugins_registry"

    @property
    def plugins_dir(self) -> Path:
        return self.root / "plugins"

    @property
    def log(self) -> Path:
        return self.directory / "logs" / "kubelet.log"

    def alive(self) -> bool:
        return bool(self.processes) and all(process.alive() for process in self.processes)

    def start(self) -> Kubelet:
        cluster = self.cluster
        if cluster.version not in KUBELET_VERSIONS:
            raise AssetsMissing(f"no kubelet of {cluster.version} among the shared binaries")
        binaries(cluster.version, "kubelet", "lab-fakecri")
        if os.geteuid() != 0:
            raise AssetsMissing("a kubelet must run as root")
        # Unix socket paths have 107 bytes: the node's files live under a short temp directory.
        self.directory = Path(tempfile.mkdtemp(prefix=f"kl-{self.node[:12]}-"))
        for sub in ("root/plugins_registry", "root/plugins", "pod-logs", "cwd", "logs"):
            (self.directory / sub).mkdir(parents=True, exist_ok=True)
        credential = cluster.pki.issue(f"node-{self.node}", f"system:node:{self.node}", ("system:nodes",))
        kubeconfig = self.directory / "kubeconfig"
        user = {"client-certificate": str(credential.crt), "client-key": str(credential.key)}
        kubeconfig.write_text(kubeconfig_text(cluster.server, cluster.pki.ca, user))
        port = free_port()
        socket_path = self.directory / "cri.sock"
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": "127.0.0.1",
            "port": port,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": free_port(),
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(cluster.pki.ca)},
            },
            "authorization": {"mode": "Webhook"},
            "containerRuntimeEndpoint": f"unix://{socket_path}",
            "imageServiceEndpoint": f"unix://{socket_path}",
            # These machines: cgroup v1 and no systemd, so no QoS cgroups and no enforcement.
            "cgroupDriver": "cgroupfs",
            "cgroupsPerQOS": False,
            "enforceNodeAllocatable": [],
            "failSwapOn": False,
            "failCgroupV1": False,
            "hairpinMode": "none",
            "makeIPTablesUtilChains": False,
            "protectKernelDefaults": False,
            "localStorageCapacityIsolation": False,
            "podLogsDir": str(self.directory / "pod-logs"),
            "resolvConf": "",
            "evictionHard": {
                "memory.available": "1Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
            },
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "syncFrequency": "2s",
            "featureGates": gates(cluster.version),
        }
        config_path = self.directory / "config.json"
        config_path.write_text(json.dumps(config))
        self._save_sysctls()
        # Both start in an empty directory: with the fake runtime the kubelet's log cleanup
        # deletes the files of its working directory when a Pod goes.
        cwd = self.directory / "cwd"
        runtime = launch(
            "fakecri",
            [
                cluster.bin / "lab-fakecri",
                f"--endpoint=unix://{socket_path}",
                "--cgroup-driver=cgroupfs",
            ],
            self.directory / "logs",
            cwd,
        )
        self.processes.append(runtime)
        wait_until(socket_path.exists, 20, "fake runtime socket", runtime)
        kubelet = launch(
            "kubelet",
            [
                cluster.bin / "kubelet",
                f"--config={config_path}",
                f"--kubeconfig={kubeconfig}",
                f"--root-dir={self.root}",
                f"--cert-dir={self.root / 'pki'}",
                f"--hostname-override={self.node}",
                "--v=4",
            ],
            self.directory / "logs",
            cwd,
        )
        self.processes.append(kubelet)
        try:
            wait_until(self._ready, 150, f"node {self.node} Ready", kubelet)
        finally:
            self._restore_sysctls()
        self.untaint_not_ready()
        return self

    def registered_again(self, timeout: float = 60) -> None:
        """The Node created anew under this kubelet: wait for the kubelet's status (Ready, its
        allocatable) and then do the lifecycle controller's part, which these clusters leave off."""
        wait_until(self._ready, timeout, f"node {self.node} Ready again", self.processes[-1])
        self.untaint_not_ready()

    def _ready(self) -> bool:
        try:
            node = self.cluster.request("GET", f"/api/v1/nodes/{self.node}")
        except ApiError:
            return False
        conditions = node.get("status", {}).get("conditions", [])
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    def untaint_not_ready(self) -> None:
        """1.36's admission gives a new Node not-ready:NoSchedule, which only the node lifecycle
        controller takes off once the kubelet reports Ready; the clusters here run without it."""
        node = self.cluster.request("GET", f"/api/v1/nodes/{self.node}")
        taints = node.get("spec", {}).get("taints") or []
        kept = [t for t in taints if not t.get("key", "").startswith("node.kubernetes.io/not-ready")]
        if len(kept) != len(taints):
            self.cluster.request(
                "PATCH",
                f"/api/v1/nodes/{self.node}",
                {"spec": {"taints": kept}},
                content_type="application/merge-patch+json",
            )

    def _save_sysctls(self) -> None:
        for tunable in _KUBELET_SYSCTLS:
            with contextlib.suppress(OSError):
                self._sysctls[tunable] = Path("/proc/sys", tunable).read_text().strip()

    def _restore_sysctls(self) -> None:
        for tunable, value in self._sysctls.items():
            with contextlib.suppress(OSError):
                Path("/proc/sys", tunable).write_text(value)

    def log_text(self) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")
        return ""

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop(grace=15)
        self.processes.clear()
        self._restore_sysctls()
        _unmount_under(self.root)
        with contextlib.suppress(ApiError, OSError):
            self.cluster.request("DELETE", f"/api/v1/nodes/{self.node}")
        shutil.rmtree(self.directory, ignore_errors=True)


def _unmount_under(root: Path) -> None:
    """The kubelet mounts projected volumes under its root; they must go before the folder does."""
    with contextlib.suppress(OSError):
        mounts = [
            line.split()[1]
            for line in Path("/proc/mounts").read_text().splitlines()
            if line.split()[1].startswith(str(root))
        ]
        for mount in sorted(mounts, reverse=True):
            subprocess.run(["umount", "-l", mount], check=False, capture_output=True)
