# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The kubelet side of the simulator: claims allocated as the scheduler writes them, prepared and
unprepared by the node's real PrepareService on its simulated host (MIG, CDI files, checkpoint)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from deckhouse_gpu.adapters.files.cdi_discovery import CdiDiscovery
from deckhouse_gpu.adapters.files.cdi_writer import CdiWriter
from deckhouse_gpu.adapters.files.checkpoint_file import FileCheckpointStore
from deckhouse_gpu.adapters.files.claim_cdi_files import FileClaimCDI
from deckhouse_gpu.adapters.files.device_metadata_files import FileDeviceMetadata
from deckhouse_gpu.adapters.files.node_lock import NodeLock
from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot
from deckhouse_gpu.adapters.metrics.handler_metrics import HandlerMetrics
from deckhouse_gpu.adapters.metrics.metered_ports import MeteredCheckpointStore, MeteredMig
from deckhouse_gpu.domain.config.opaque_types import API_VERSION, GPU_KIND, api_version_of
from deckhouse_gpu.domain.offers.model import DRIVER
from deckhouse_gpu.domain.offers.slice_layout import pool_name
from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.ports.dra_plugin import ClaimRef, PrepareResult
from deckhouse_gpu.ports.kube import PODS, RESOURCE_CLAIMS, KubeAPI
from deckhouse_gpu.services.prepare.prepare_observer import PrepareObserver
from deckhouse_gpu.services.prepare.service import OfferFollower, PrepareService
from deckhouse_gpu.services.prepare.sharing_host import SharingHost
from deckhouse_gpu.services.prepare.vfio_release import VfioSide
from deckhouse_gpu.simulator.host.sim_host_mig import HostTreeMig
from deckhouse_gpu.simulator.host.sim_mig import SimulatedMig
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML

CLAIM_NAMESPACE = "demo"
HOOK = "/usr/bin/nvidia-cdi-hook"
REQUEST = "gpu"
DEVICE_CLASS = "gpu.deckhouse.io"  # the scheduler has allocated already: the class is never read
SHARE_IDS = uuid.uuid5(uuid.NAMESPACE_URL, "https://deckhouse.io/modules/gpu/simulator/shares")


def prepare_service(
    api: KubeAPI, node: str, root: Path, nvml: SimulatedNVML, clock: Clock,
    offers: OfferFollower, sharing: SharingHost, vfio: VfioSide | None = None,
    metrics: HandlerMetrics | None = None,
) -> PrepareService:  # fmt: skip
    """With ``metrics``, measured as cmd/gpu_handler/plugin_wiring.py measures gpu-handler's service."""
    plugin_dir = root / "var/lib/kubelet/plugins" / DRIVER
    discovery = CdiDiscovery(MountedDriverRoot(root), root, "/")
    store = FileCheckpointStore(plugin_dir / "checkpoint.json", host_root=root)
    mig = HostTreeMig(SimulatedMig(nvml), root)
    return PrepareService(
        api,
        node,
        store if metrics is None else MeteredCheckpointStore(store, metrics),
        lambda: NodeLock(plugin_dir / "pu.lock"),
        mig if metrics is None else MeteredMig(mig, metrics),
        FileClaimCDI(discovery, CdiWriter(root / "etc/cdi"), HOOK),
        clock,
        offers=offers,
        sharing=sharing,
        # KEP-5304 files under the simulated plugin directory, mounted from the host's path.
        metadata=FileDeviceMetadata(plugin_dir, f"/var/lib/kubelet/plugins/{DRIVER}"),
        vfio=vfio,
        observer=None if metrics is None else PrepareObserver(metrics),
    )


def allocate(
    api: KubeAPI,
    node: str,
    name: str,
    devices: list[str],
    share_percent: float | None = None,
    config: dict[str, Any] | None = None,
    pod: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ResourceClaim with the allocation the kube-scheduler would write for these devices.

    ``share_percent``: each device is a share of its card that consumed this much (a shareID and
    ``consumedCapacity.sharePercent`` in its result); ``config``: the claim's opaque parameters
    (a GpuConfig, or another kind it names), which the scheduler copies into the allocation for the
    driver; ``pod``: the Pod (name, annotations) the scheduler reserved the claim for."""
    exactly: dict[str, Any] = {"deviceClassName": DEVICE_CLASS, "count": len(devices)}
    if share_percent is not None:
        exactly["capacity"] = {"requests": {"sharePercent": f"{share_percent:g}"}}
    spec: dict[str, Any] = {"requests": [{"name": REQUEST, "exactly": exactly}]}
    if config is not None:
        spec["config"] = [{"requests": [REQUEST], "opaque": _opaque(config)}]
    api.create(
        RESOURCE_CLAIMS, {"metadata": {"name": name, "namespace": CLAIM_NAMESPACE}, "spec": {"devices": spec}}
    )
    results = [_result(node, name, device, share_percent) for device in devices]
    selector = {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
    }
    allocated: dict[str, Any] = {"results": results}
    if config is not None:
        allocated["config"] = [{"source": "FromClaim", "requests": [REQUEST], "opaque": _opaque(config)}]
    status: dict[str, Any] = {"allocation": {"devices": allocated, "nodeSelector": selector}}
    if pod is not None:
        status["reservedFor"] = [_reserving_pod(api, node, pod)]
    return api.patch(
        RESOURCE_CLAIMS, name, {"status": status}, subresource="status", namespace=CLAIM_NAMESPACE
    )


def _result(node: str, claim: str, device: str, share_percent: float | None) -> dict[str, Any]:
    result: dict[str, Any] = {"request": REQUEST, "driver": DRIVER, "pool": pool_name(node), "device": device}
    if share_percent is not None:
        # The scheduler picks a fresh UUID per share; derived here, so a demo's output repeats.
        result["shareID"] = str(uuid.uuid5(SHARE_IDS, f"{CLAIM_NAMESPACE}/{claim}/{device}"))
        result["consumedCapacity"] = {"sharePercent": f"{share_percent:g}"}
    return result


def _reserving_pod(api: KubeAPI, node: str, pod: dict[str, Any]) -> dict[str, Any]:
    """The Pod created as the user (or KubeVirt, for a VM) made it, bound to the node."""
    meta = {
        "name": pod["name"],
        "namespace": CLAIM_NAMESPACE,
        "annotations": dict(pod.get("annotations") or {}),
    }
    created = api.create(PODS, {"metadata": meta, "spec": {"nodeName": node}})
    return {"resource": "pods", "name": pod["name"], "uid": created["metadata"]["uid"]}


def _opaque(parameters: dict[str, Any]) -> dict[str, Any]:
    """The scenario's parameters completed in the canonical spelling (a GpuConfig unless it names
    another kind); a kind of the legacy spelling gets its own apiVersion, both being accepted."""
    kind = parameters.get("kind", GPU_KIND)
    version = api_version_of(kind) if isinstance(kind, str) else None
    full = {"apiVersion": version or API_VERSION, "kind": GPU_KIND, **parameters}
    return {"driver": DRIVER, "parameters": full}


def claim_ref(api: KubeAPI, name: str) -> ClaimRef:
    claim = api.get(RESOURCE_CLAIMS, name, namespace=CLAIM_NAMESPACE)
    return ClaimRef(CLAIM_NAMESPACE, claim["metadata"]["uid"], name)


def describe_prepare(result: PrepareResult, cdi_root: Path, uid: str) -> list[str]:
    """What the kubelet got back, and what the container runtime will read from the CDI spec."""
    if result.error:
        return [f"  prepare failed: {result.error}"]
    lines = [f"  prepared {d.device_name}: CDI {', '.join(d.cdi_device_ids)}" for d in result.devices]
    spec_file = cdi_root / f"{DRIVER}-gpu_{uid}.json"
    if spec_file.exists():
        spec = json.loads(spec_file.read_text())
        for device in spec["devices"]:
            edits = device["containerEdits"]
            nodes = [node["path"] for node in edits.get("deviceNodes", [])]
            lines.append(f"  CDI device {device['name']}: device nodes {', '.join(nodes)}")
            # An MPS client's own edits: its limits and the daemon's directories.
            if edits.get("env"):
                lines.append(f"  CDI device {device['name']}: env {', '.join(edits['env'])}")
            for mount in edits.get("mounts", []):
                lines.append(
                    f"  CDI device {device['name']}: mount {mount['hostPath']} -> {mount['containerPath']}"
                )
        common = spec.get("containerEdits")
        if common is None:  # every device goes to a virtual machine: nothing of the nvidia driver
            lines.append("  CDI common edits: none (no driver mounts, hooks or env)")
            return lines
        lines.append(
            f"  CDI common edits: {len(common.get('mounts', []))} driver mounts, "
            f"{len(common.get('hooks', []))} hooks, env {', '.join(common.get('env', []))}"
        )
    return lines
