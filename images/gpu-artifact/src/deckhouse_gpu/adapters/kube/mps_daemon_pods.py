# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The MPS daemons of one node as Pods in the module's namespace (``ports.sharing.MpsDaemons``).

The Pods are the record: which daemons run is read back from them (``mps_pod.daemon_of``), so a
restarted gpu-handler finds its predecessor's daemons without a file of its own. Whether a
daemon works is read from its Pod's status as the kubelet reports it: Ready means the daemon
answered the readiness probe; a crashed container, a failed image pull or a rejected Pod is an
error at once, with the kubelet's reason, rather than a wait until prepare's timeout.
"""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.domain.prepare.mps import MpsDaemon
from deckhouse_gpu.domain.prepare.mps_pod import daemon_of, daemon_pod, daemons_selector
from deckhouse_gpu.ports.kube import (
    PODS,
    AlreadyExists,
    Conflict,
    Forbidden,
    KubeAPI,
    KubeError,
    NotFound,
    Object,
)
from deckhouse_gpu.ports.sharing import SharingError

# Waiting reasons after which the container will not start by itself (a restart loop, an image
# that cannot be pulled, a spec the runtime refuses).
FAILED_WAITING = frozenset(
    {
        "CrashLoopBackOff",
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)


class KubeMpsDaemons:
    def __init__(
        self,
        api: KubeAPI,
        namespace: str,
        node: str,
        image: str,
        driver_root: str,
        pull_secret: str | None = None,
    ) -> None:
        self.api, self.namespace, self.node = api, namespace, node
        self.image, self.driver_root, self.pull_secret = image, driver_root, pull_secret

    def pod(self, daemon: MpsDaemon) -> Object:
        return daemon_pod(daemon, self.namespace, self.image, self.driver_root, self.pull_secret)

    def running(self) -> dict[str, MpsDaemon]:
        try:
            # spec.nodeName is what the API server's Pod cache indexes; the labels narrow it further.
            pods = self.api.list(
                PODS,
                label_selector=daemons_selector(self.node),
                namespace=self.namespace,
                field_selector=f"spec.nodeName={self.node}",
            )
        except KubeError as error:
            raise SharingError(
                f"cannot list the MPS daemon Pods of node {self.node}: {_why(error)}"
            ) from error
        found = {}
        for pod in pods.items:
            if (pod.get("metadata") or {}).get("deletionTimestamp"):
                continue  # going: a new one may be started under the same name once it is gone
            daemon = daemon_of(pod)
            found[daemon.name] = daemon
        return found

    def start(self, daemon: MpsDaemon) -> bool:
        if not self.image:
            raise SharingError(
                f"cannot start the MPS daemon for {daemon.unit}: gpu-handler was given no image for it "
                "(--mps-image / MPS_IMAGE)"
            )
        try:
            self.api.create(PODS, self.pod(daemon))
        except (AlreadyExists, Conflict):
            return False
        except KubeError as error:
            raise SharingError(
                f"cannot create the MPS daemon Pod {self.namespace}/{daemon.name} for {daemon.unit}: "
                f"{_why(error)}"
            ) from error
        return True

    def ready(self, daemon: MpsDaemon) -> bool:
        try:
            pod = self.api.get(PODS, daemon.name, self.namespace)
        except NotFound:
            return False
        except KubeError as error:
            raise SharingError(
                f"cannot read the MPS daemon Pod {self.namespace}/{daemon.name}: {_why(error)}"
            ) from error
        where = f"MPS daemon Pod {self.namespace}/{daemon.name} (for {daemon.unit} on card {daemon.card})"
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            raise SharingError(f"{where} is being deleted; the kubelet retries once it is gone")
        failure = pod_failure(pod)
        if failure is not None:
            raise SharingError(
                f"{where} failed: {failure}; see kubectl -n {self.namespace} logs {daemon.name} "
                f"and the daemon's log in {daemon.log_dir} on the node"
            )
        return pod_ready(pod)

    def stop(self, name: str) -> None:
        try:
            self.api.delete(PODS, name, self.namespace)
        except NotFound:
            return
        except KubeError as error:
            raise SharingError(
                f"cannot delete the MPS daemon Pod {self.namespace}/{name}: {_why(error)}"
            ) from error


def pod_ready(pod: Object) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pod_failure(pod: Object) -> str | None:
    """Why the Pod cannot become ready by itself; None while it still may."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Failed", "Succeeded"):
        detail = ": ".join(str(p) for p in (status.get("reason"), status.get("message")) if p)
        return f"the Pod is {status['phase']}" + (f" ({detail})" if detail else "")
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        waiting: dict[str, Any] = state.get("waiting") or {}
        if waiting.get("reason") in FAILED_WAITING:
            last = ((container.get("lastState") or {}).get("terminated")) or {}
            return _described(waiting, last)
        terminated: dict[str, Any] = state.get("terminated") or {}
        if terminated and terminated.get("exitCode", 0) != 0:
            return _described(terminated, {})
    return None


def _described(state: dict[str, Any], last: dict[str, Any]) -> str:
    text = str(state.get("reason") or "failed")
    if state.get("exitCode") is not None:
        text += f" (exit code {state['exitCode']})"
    if state.get("message"):
        text += f": {str(state['message']).strip()}"
    if last:
        code = last.get("exitCode")
        text += f"; last run: {last.get('reason') or 'terminated'} (exit code {code})"
        if last.get("message"):
            text += f": {str(last['message']).strip()}"
    return text


def _why(error: KubeError) -> str:
    if isinstance(error, Forbidden):
        return (
            f"{error} (gpu-handler may create and delete only its own node's Pods labelled app=gpu-mps "
            "in its namespace: Role gpu-handler:mps-daemons and the admission policy d8-gpu-mps-pods)"
        )
    return str(error)
