# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The simulator's pods created straight on a node: gpu-dra-controller allocates their claims,
since the kube-scheduler never sees such pods (DESIGN.md D1)."""

from __future__ import annotations

import time
from typing import Any

from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES, PODS
from deckhouse_gpu.ports.kube import EVENTS, RESOURCE_CLAIMS, KubeAPI, NotFound
from deckhouse_gpu.simulator.prepare import CLAIM_NAMESPACE

ALLOCATION_TIMEOUT = 20.0  # the controller answers in milliseconds; a loaded CI machine is slower


def _ensure_class(api: KubeAPI, name: str, selector: str | None) -> None:
    try:
        api.get(DEVICE_CLASSES, name)
    except NotFound:
        expression = selector or 'device.driver == "gpu.deckhouse.io"'
        api.create(
            DEVICE_CLASSES,
            {"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression": expression}}]}},
        )


def failures(api: KubeAPI, claim: str) -> list[str]:
    return [
        str(e.get("message"))
        for e in api.list(EVENTS, namespace=CLAIM_NAMESPACE).items
        if e.get("reason") in ("AllocationFailed", "AllocationError")
        and (e.get("involvedObject") or e.get("regarding") or {}).get("name") == claim
    ]


def pod_on_node(api: KubeAPI, node: str, args: dict[str, Any]) -> list[str]:
    """Creates the claim and the pod (spec.nodeName set), then reports what gpu-dra-controller did."""
    name, device_class = str(args["name"]), str(args["deviceClass"])
    _ensure_class(api, device_class, args.get("selector"))
    request = {
        "name": "gpu",
        "exactly": {"deviceClassName": device_class, "count": int(args.get("count", 1))},
    }
    api.create(
        RESOURCE_CLAIMS,
        {
            "metadata": {"name": name, "namespace": CLAIM_NAMESPACE},
            "spec": {"devices": {"requests": [request]}},
        },
    )
    spec = {
        "nodeName": node,
        "containers": [{"name": "main", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
    }
    api.create(PODS, {"metadata": {"name": name, "namespace": CLAIM_NAMESPACE}, "spec": spec})
    deadline = time.monotonic() + ALLOCATION_TIMEOUT
    while time.monotonic() < deadline:
        allocation = (api.get(RESOURCE_CLAIMS, name, namespace=CLAIM_NAMESPACE).get("status") or {}).get(
            "allocation"
        )
        if allocation:
            devices = ", ".join(r["device"] for r in allocation["devices"]["results"])
            return [f"  gpu-dra-controller allocated claim {name} on {node}: {devices}"]
        failed = failures(api, name)
        if failed:
            return [f"  gpu-dra-controller could not allocate claim {name}: {failed[0]}"]
        time.sleep(0.01)
    return [f"  claim {name} was not allocated within {ALLOCATION_TIMEOUT:.0f} s"]
