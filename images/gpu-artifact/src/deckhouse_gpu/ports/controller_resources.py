# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The extra kinds gpu-controller reads and writes, beside those in ``ports.kube``."""

from __future__ import annotations

from deckhouse_gpu.domain import gpuclass
from deckhouse_gpu.ports.kube import PODS, Resource

# PODS is in ports.kube (gpu-handler runs the MPS daemons as Pods); the controllers import it here.
__all__ = ["DEVICE_CLASSES", "GPU_CLASSES", "LEASES", "PODS", "RESOURCE_CLAIM_TEMPLATES"]

LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
# gpu-dra-controller: the classes its allocator reads, and those it keeps for the GPUClasses.
DEVICE_CLASSES = Resource("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", namespaced=False)
# kubectl gpu explain: the templates of a pending Pod's claims not generated yet.
RESOURCE_CLAIM_TEMPLATES = Resource(
    "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", namespaced=True
)
# gpu-dra-controller: the administrator's classes it turns into DeviceClasses (DESIGN.md D14).
GPU_CLASSES = Resource(
    gpuclass.GROUP, gpuclass.VERSION, gpuclass.PLURAL, gpuclass.KIND, namespaced=False, has_status=True
)
