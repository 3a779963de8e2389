# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""MPS control daemons: which ones a node needs, and what a client container gets to reach one.

One daemon serves one unit: a whole card (every MPS share of it) or one MIG instance. It runs as
a Pod pinned to the node (not a child of gpu-handler, so it outlives a handler restart or
upgrade), with its pipe, log and shared-memory directories on a hostPath under the plugin
directory; clients get the same pipe and shared-memory directories through their CDI edits, plus
their own limits in ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`` and ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``.

Which daemons must run follows from the checkpoint alone (every entry, half-prepared ones too),
so a prepare, an unprepare, a rollback and the cleanup at start all converge on the same set.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from deckhouse_gpu.domain.config.mps_sharing import MpsPlan
from deckhouse_gpu.domain.prepare.checkpoint import ClaimEntry
from deckhouse_gpu.domain.prepare.plan import DevicePlan

PIPE_IN_CONTAINER = "/run/nvidia-mps"  # CUDA_MPS_PIPE_DIRECTORY of the daemon and of every client
SHM_IN_CONTAINER = "/dev/shm"  # noqa: S108 - a container path, not a temp file here; MPS clients and server exchange memory handles through it
LOG_IN_CONTAINER = "/var/log/nvidia-mps"
POD_PREFIX = "gpu-mps-"
LABEL_APP = "gpu-mps"
LABEL_NODE = "gpu.deckhouse.io/node"
LABEL_UNIT = "gpu.deckhouse.io/mps-unit"
_MAX_NAME = 253
_MAX_LABEL = 63


class MpsRefused(ValueError):
    """An MPS device that cannot get a daemon here; the message says why."""


@dataclass(frozen=True)
class MpsDaemon:
    """One control daemon: the Pod that runs it and the host directories it shares with clients."""

    name: str  # the Pod's name
    node: str
    card: str  # PCI address of the card
    unit: str  # the offer name it serves: a card's (gpu-0000-17-00-0) or a MIG instance's
    visible_device: str  # CUDA_VISIBLE_DEVICES of the daemon: GPU-<uuid> or MIG-<uuid>
    host_dir: str  # <plugin dir>/mps/<unit> on the host: pipe/, shm/ and log/ under it

    @property
    def pipe_dir(self) -> str:
        return str(PurePosixPath(self.host_dir) / "pipe")

    @property
    def shm_dir(self) -> str:
        return str(PurePosixPath(self.host_dir) / "shm")

    @property
    def log_dir(self) -> str:
        return str(PurePosixPath(self.host_dir) / "log")


def pod_name(node: str, unit: str) -> str:
    name = f"{POD_PREFIX}{node}-{unit}"
    if len(name) <= _MAX_NAME:
        return name
    return f"{POD_PREFIX}{hashlib.sha256(node.encode()).hexdigest()[:16]}-{unit}"


def unit_of(plan: DevicePlan) -> str:
    return plan.device


def daemon_for(plan: DevicePlan, node: str, plugin_dir: str, visible_device: str) -> MpsDaemon:
    if len(node) > _MAX_LABEL:
        raise MpsRefused(
            f"node name {node!r} is longer than {_MAX_LABEL} characters: the MPS daemon Pod is "
            f"labelled with it ({LABEL_NODE}), which Kubernetes does not allow; use TimeSlicing here"
        )
    unit = unit_of(plan)
    host_dir = str(PurePosixPath(plugin_dir) / "mps" / unit)
    return MpsDaemon(pod_name(node, unit), node, plan.card, unit, visible_device, host_dir)


def _visible_device(plan: DevicePlan, entry: ClaimEntry) -> str | None:
    if plan.kind == "Physical":
        return plan.uuid
    record = next(
        (r for r in entry.mig if (r.card, r.placement_start) == (plan.card, plan.placement_start)), None
    )
    return None if record is None else record.uuid  # not created yet: no daemon yet either


def wanted_daemons(entries: Iterable[ClaimEntry], node: str, plugin_dir: str) -> dict[str, MpsDaemon]:
    """Pod name -> daemon for every MPS device the entries hold whose device exists now."""
    wanted: dict[str, MpsDaemon] = {}
    for entry in entries:
        for plan in entry.devices:
            if not isinstance(plan.sharing, MpsPlan):
                continue
            visible = _visible_device(plan, entry)
            if visible is None:
                continue
            daemon = daemon_for(plan, node, plugin_dir, visible)
            wanted[daemon.name] = daemon
    return wanted


def client_edits(plan: DevicePlan, daemon: MpsDaemon) -> dict[str, Any]:
    """The CDI container edits that make a container an MPS client of ``daemon``, with its limits."""
    env = [f"CUDA_MPS_PIPE_DIRECTORY={PIPE_IN_CONTAINER}"]
    limits = plan.sharing if isinstance(plan.sharing, MpsPlan) else MpsPlan()
    if limits.thread_percentage is not None:
        env.append(f"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={limits.thread_percentage}")
    if limits.memory_limit_mib is not None:
        # <device>=<limit>: the UUID, so the limit holds whatever order CUDA enumerates devices in.
        env.append(f"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT={daemon.visible_device}={limits.memory_limit_mib}M")
    options = ["rw", "rbind", "nosuid", "nodev"]
    return {
        "env": env,
        "mounts": [
            {"hostPath": daemon.pipe_dir, "containerPath": PIPE_IN_CONTAINER, "options": options},
            {"hostPath": daemon.shm_dir, "containerPath": SHM_IN_CONTAINER, "options": options},
        ],
    }


def one_daemon_per_claim(plans: Iterable[DevicePlan]) -> str | None:
    """Why a claim's MPS devices cannot all be reached from one container (None: they can).

    A CUDA process talks to one MPS daemon, and CDI merges env by name, so two daemons' pipe
    directories in one container would silently hide one of them."""
    units = sorted({unit_of(plan) for plan in plans if isinstance(plan.sharing, MpsPlan)})
    if len(units) > 1:
        return (
            f"the claim asks for MPS on {', '.join(units)}: a container reaches one MPS daemon only; "
            "put each MPS device in a claim of its own"
        )
    return None
