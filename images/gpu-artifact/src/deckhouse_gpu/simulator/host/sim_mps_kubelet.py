# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A kubelet for the MPS daemon Pods of a simulated node, where no kubelet runs them.

Everything goes through the real ``KubeMpsDaemons`` (the same Pods, labels, selector and status
reading); this only plays the kubelet's part: a Pod of this node that was never run gets status
Running and condition Ready, and, as ``DirectoryOrCreate`` volumes do, its pipe, shared-memory
and log directories appear under the simulated host root. A Pod is run when it is started and
again when its readiness is asked, so one created by a process killed before it could run it is
run by the next one, as the kubelet would. ``crash`` makes a daemon fail as a real one would show
it (a restart loop), for tests of the error path.
"""

from __future__ import annotations

from pathlib import Path

from deckhouse_gpu.adapters.kube.mps_daemon_pods import KubeMpsDaemons
from deckhouse_gpu.domain.prepare.mps import MpsDaemon
from deckhouse_gpu.domain.prepare.mps_pod import CONTAINER
from deckhouse_gpu.ports.kube import PODS, KubeAPI, KubeError, NotFound, Object
from deckhouse_gpu.ports.sharing import SharingError


class SimulatedKubeletMps:
    """Implements ``ports.sharing.MpsDaemons`` over ``inner``, running its Pods as a kubelet would."""

    def __init__(self, inner: KubeMpsDaemons, api: KubeAPI, host_root: Path | None = None) -> None:
        self.inner, self.api, self.host_root = inner, api, host_root

    def running(self) -> dict[str, MpsDaemon]:
        return self.inner.running()

    def start(self, daemon: MpsDaemon) -> bool:
        created = self.inner.start(daemon)
        self._run(daemon)
        return created

    def ready(self, daemon: MpsDaemon) -> bool:
        self._run(daemon)
        return self.inner.ready(daemon)

    def stop(self, name: str) -> None:
        self.inner.stop(name)

    def crash(self, name: str, message: str = "nvidia-cuda-mps-control exited") -> None:
        """Shows the daemon's container in a restart loop, as the kubelet reports one."""
        status = {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
            "containerStatuses": [
                {
                    "name": CONTAINER,
                    "ready": False,
                    "restartCount": 3,
                    "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off restarting"}},
                    "lastState": {"terminated": {"reason": "Error", "exitCode": 1, "message": message}},
                }
            ],
        }
        self.api.patch(PODS, name, {"status": status}, subresource="status", namespace=self.inner.namespace)

    def _run(self, daemon: MpsDaemon) -> None:
        namespace = self.inner.namespace
        try:
            pod = self.api.get(PODS, daemon.name, namespace)
            if not _never_run(pod):
                return
            self._make_directories(daemon)
            status = {"status": _running()}
            self.api.patch(PODS, daemon.name, status, subresource="status", namespace=namespace)
        except NotFound:
            return  # nothing to run: ready() says so
        except (KubeError, OSError) as error:
            raise SharingError(
                f"simulated kubelet: cannot run MPS daemon Pod {daemon.name}: {error}"
            ) from error

    def _make_directories(self, daemon: MpsDaemon) -> None:
        if self.host_root is None:
            return
        for directory in (daemon.pipe_dir, daemon.shm_dir, daemon.log_dir):
            (self.host_root / directory.lstrip("/")).mkdir(parents=True, exist_ok=True)


def _never_run(pod: Object) -> bool:
    # The API server leaves a new Pod Pending without container statuses; the kubelet adds them.
    metadata = pod.get("metadata") or {}
    return not metadata.get("deletionTimestamp") and not (pod.get("status") or {}).get("containerStatuses")


def _running() -> Object:
    return {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [
            {"name": CONTAINER, "ready": True, "restartCount": 0, "state": {"running": {}}},
        ],
    }
