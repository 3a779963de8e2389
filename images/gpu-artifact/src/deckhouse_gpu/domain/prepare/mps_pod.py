# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The Pod that runs one MPS control daemon (domain/prepare/mps.py), and the daemon read back from it.

gpu-handler creates the Pod itself, pinned to its node by ``spec.nodeName`` (no scheduler: the
daemon must run where the card is, now), so it follows the chart's rules for node components by
hand: the module's labels, any taint tolerated, system-node-critical, the pull secret of the
module's registry, the handler's image by digest.

How the driver's ``nvidia-cuda-mps-control`` runs. The handler image is distroless (no shell, no
``chroot`` binary), so the container runs ``gpu-mps-daemon`` (``cmd/gpu_mps_daemon.py``) from the
image: it finds ``nvidia-cuda-mps-control``, ``nvidia-cuda-mps-server``, ``libcuda.so.1`` and
``libnvidia-ml.so.1`` under the mounted driver root with the same link-following lookup as
prestart (``adapters/host/driver_root.py``, ``driver_layout.py``), then replaces itself with
``nvidia-cuda-mps-control -f``: ``PATH`` names the server's directory (the control daemon starts
the server by name), ``LD_PRELOAD`` the driver's two libraries (as ``run_nvidia_smi`` runs
nvidia-smi). Not ``LD_LIBRARY_PATH`` at the driver's library directory: with the default root
``/`` that directory is the host's ``/usr/lib64``, whose ``libc.so.6`` would be loaded by the
image's ``ld.so``, and the two must come from one glibc. Not ``chroot``: the pipe, log and
shared-memory directories would have to be mounted inside the driver root, so the read-only root
(DESIGN.md S10.4) would have to be writable and the mount points created on the host's own
filesystem. The readiness probe and preStop hook reach the daemon the same way
(``gpu-mps-daemon ready`` / ``quit``), since ``echo ... | nvidia-cuda-mps-control`` needs a shell.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from deckhouse_gpu.domain.prepare.mps import (
    LABEL_APP,
    LABEL_NODE,
    LABEL_UNIT,
    LOG_IN_CONTAINER,
    PIPE_IN_CONTAINER,
    SHM_IN_CONTAINER,
    MpsDaemon,
)

ANNOTATION_CARD = "gpu.deckhouse.io/mps-card"  # a PCI address has colons: not a label value
CONTAINER = "mps-control"
LAUNCHER = "gpu-mps-daemon"  # console script of cmd/gpu_mps_daemon.py in the handler image
DRIVER_MOUNT = "/driver-root"  # as hooks/lib/settings.py mounts the driver root (DESIGN.md S10.4)
DRIVER_PARENT_MOUNT = "/driver-root-parent"
DRIVER_MOUNT_ENV = "NVIDIA_DRIVER_ROOT_MOUNT"
PRIORITY_CLASS = "system-node-critical"  # running Pods' CUDA calls go through it
SELECTOR_APP = f"app={LABEL_APP}"
_VOLUMES = {"mps-pipe": PIPE_IN_CONTAINER, "mps-shm": SHM_IN_CONTAINER, "mps-log": LOG_IN_CONTAINER}


def daemons_selector(node: str) -> str:
    """The label selector of one node's daemon Pods."""
    return f"{LABEL_NODE}={node},{SELECTOR_APP}"


def driver_root_mount(root: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """(volume, volume mount, the root's path in the container), as the chart mounts it: ``/``
    read-only as it is; another root through its parent with HostToContainer propagation, so a
    driver container that mounts the root again is seen without a new Pod."""
    root = "/" + root.strip("/") if root.strip("/") else "/"
    if root == "/":
        volume = {"name": "driver-root", "hostPath": {"path": "/", "type": "Directory"}}
        return volume, {"name": "driver-root", "mountPath": DRIVER_MOUNT, "readOnly": True}, DRIVER_MOUNT
    parent = PurePosixPath(root)
    volume = {"name": "driver-root", "hostPath": {"path": str(parent.parent), "type": "Directory"}}
    mount = {
        "name": "driver-root",
        "mountPath": DRIVER_PARENT_MOUNT,
        "readOnly": True,
        "mountPropagation": "HostToContainer",
    }
    return volume, mount, f"{DRIVER_PARENT_MOUNT}/{parent.name}"


def _launcher(*args: str) -> list[str]:
    return [LAUNCHER, *args]


def _container(daemon: MpsDaemon, image: str, driver_mount: dict[str, Any], inside: str) -> dict[str, Any]:
    env = [
        {"name": "CUDA_VISIBLE_DEVICES", "value": daemon.visible_device},
        {"name": "CUDA_MPS_PIPE_DIRECTORY", "value": PIPE_IN_CONTAINER},
        {"name": "CUDA_MPS_LOG_DIRECTORY", "value": LOG_IN_CONTAINER},
        {"name": DRIVER_MOUNT_ENV, "value": inside},
    ]
    return {
        "name": CONTAINER,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": _launcher("run"),
        "env": env,
        # The exec probe and hook get the container's env, so they reach this daemon's pipe.
        # No liveness probe: a restart would take the MPS server, and every client, down with
        # it; only the process dying restarts the container.
        "readinessProbe": {
            "exec": {"command": _launcher("ready")},
            "periodSeconds": 5,
            "timeoutSeconds": 10,  # a Python start and one round trip to the daemon
            "failureThreshold": 3,
        },
        "lifecycle": {"preStop": {"exec": {"command": _launcher("quit")}}},
        # Privileged: the daemon and the server it starts open /dev/nvidiactl, /dev/nvidia-uvm,
        # the card's /dev/nvidiaN (and a MIG instance's nvidia-caps) themselves; no device plugin
        # or CDI spec hands them to this Pod.
        "securityContext": {
            "privileged": True,
            "allowPrivilegeEscalation": True,  # the API server requires it with privileged
            "readOnlyRootFilesystem": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        # The MPS server the control daemon starts runs in this container: its host memory
        # grows with the clients' contexts, so the limit leaves it room.
        "resources": {
            "requests": {"cpu": "10m", "memory": "64Mi", "ephemeral-storage": "50Mi"},
            "limits": {"memory": "1Gi"},
        },
        "volumeMounts": [
            driver_mount,
            *({"name": name, "mountPath": path} for name, path in _VOLUMES.items()),
        ],
    }


def daemon_pod(
    daemon: MpsDaemon,
    namespace: str,
    image: str,
    driver_root: str,
    pull_secret: str | None = None,
) -> dict[str, Any]:
    """The daemon's Pod. ``driver_root``: the host's driver root (``/``, ``/run/nvidia/driver``)."""
    volume, mount, inside = driver_root_mount(driver_root)
    host_dirs = {"mps-pipe": daemon.pipe_dir, "mps-shm": daemon.shm_dir, "mps-log": daemon.log_dir}
    spec: dict[str, Any] = {
        "nodeName": daemon.node,
        "tolerations": [{"operator": "Exists"}],  # wherever the card is, tainted or not
        "priorityClassName": PRIORITY_CLASS,
        "restartPolicy": "Always",
        "automountServiceAccountToken": False,  # it never calls the API
        "enableServiceLinks": False,
        "securityContext": {
            "runAsNonRoot": False,
            "runAsUser": 0,
            "runAsGroup": 0,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [_container(daemon, image, mount, inside)],
        "volumes": [
            volume,
            *(
                {"name": name, "hostPath": {"path": path, "type": "DirectoryOrCreate"}}
                for name, path in host_dirs.items()
            ),
        ],
    }
    if pull_secret:
        spec["imagePullSecrets"] = [{"name": pull_secret}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": daemon.name,
            "namespace": namespace,
            "labels": {
                "app": LABEL_APP,
                "heritage": "deckhouse",
                "module": "gpu",
                LABEL_NODE: daemon.node,
                LABEL_UNIT: daemon.unit,
            },
            "annotations": {ANNOTATION_CARD: daemon.card},
        },
        "spec": spec,
    }


def daemon_of(pod: dict[str, Any]) -> MpsDaemon:
    """The daemon a Pod runs, read from what it was created with; a part it lacks reads as "", so
    a Pod changed by hand never equals a wanted daemon and is replaced."""
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    spec = pod.get("spec") or {}
    container: dict[str, Any] = next(
        (c for c in spec.get("containers") or [] if c.get("name") == CONTAINER), {}
    )
    env = {e.get("name"): e.get("value") for e in container.get("env") or []}
    pipe = next(
        (
            (v.get("hostPath") or {}).get("path")
            for v in spec.get("volumes") or []
            if v.get("name") == "mps-pipe"
        ),
        None,
    )
    return MpsDaemon(
        name=str(metadata.get("name") or ""),
        node=str(labels.get(LABEL_NODE) or ""),
        card=str((metadata.get("annotations") or {}).get(ANNOTATION_CARD) or ""),
        unit=str(labels.get(LABEL_UNIT) or ""),
        visible_device=str(env.get("CUDA_VISIBLE_DEVICES") or ""),
        host_dir=str(PurePosixPath(pipe).parent) if pipe else "",
    )
