# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``kubectl gpu -o json|yaml``: the reports as plain data, with stable field names (docs/KUBECTL.md)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from deckhouse_gpu.domain.report.cards import CardRow
from deckhouse_gpu.domain.report.pending import PodExplanation
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity
from deckhouse_gpu.services.report.gpu_report import CapacityReport, StatusReport

API_VERSION = "gpu.deckhouse.io/v1alpha1"  # of these documents only: they are never stored


def quantity(value: Fraction | None) -> str | None:
    return None if value is None else Quantity.exact(value, binary=True).text


def percent(value: Fraction | None) -> int | float | None:
    if value is None:
        return None
    return int(value) if value.denominator == 1 else float(value)


def card_data(row: CardRow) -> dict[str, Any]:
    return {
        "node": row.node,
        "name": row.name,
        "address": row.address,
        "model": row.model,
        "mode": row.mode,
        "offered": row.offered,
        "otherOwner": row.other_owner or None,  # DESIGN.md D16
        "taints": row.taints,
        "conditions": {
            "HardwareHealthy": {"status": row.healthy, "reason": row.healthy_reason},
            "DriverReady": {"status": row.driver_ready, "reason": row.driver_ready_reason},
        },
        "claims": [
            {
                "claim": h.claim,
                "devices": h.devices,
                "prepared": h.prepared,
                "shared": h.shared,
                "pods": h.pods,
            }
            for h in row.holds
        ],
        "migInstances": [
            {
                "device": m.device,
                "profile": m.profile,
                "placementStart": m.start,
                "claim": m.claim,
                "uuid": m.uuid,
            }
            for m in row.mig
        ],
        "memorySlices": None
        if row.slices_total is None
        else {"free": row.slices_free, "total": row.slices_total},
        "memory": None
        if row.memory_total is None
        else {"left": quantity(row.memory_left), "total": quantity(row.memory_total)},
        "sharePercentLeft": percent(row.share_left),
    }


def status_data(report: StatusReport) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "GPUStatus",
        "cards": [card_data(row) for row in report.cards],
        "problems": report.problems,
    }


def capacity_data(report: CapacityReport) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "GPUCapacity",
        "kubernetesVersion": report.kubernetes,
        "nodes": report.nodes,
        "classes": [
            {
                "class": c.device_class,
                "gpuClass": c.gpu_class,
                "devices": c.devices,
                "fits": c.total,
                "perNode": dict(c.nodes),
                "unlimitedOn": list(c.unlimited),
                "errors": dict(c.errors),
            }
            for c in report.classes
        ],
        "problems": report.problems,
        "counterNodes": report.scheduler.counter_nodes if report.scheduler else 0,
        "schedulerWarning": report.scheduler.warning if report.scheduler else None,
        "broadClasses": report.broad,
    }


def explanation_data(explanation: PodExplanation) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "GPUExplanation",
        "pod": explanation.pod,
        "phase": explanation.phase,
        "nodeName": explanation.node,
        "placeable": explanation.placeable,
        "fitsOn": explanation.fits_on,
        "claims": [
            {"name": c.entry, "claim": c.claim, "source": c.source, "state": c.state, "problem": c.problem}
            for c in explanation.claims
        ],
        "extendedResources": [
            {
                "container": r.container,
                "resource": r.resource,
                "count": r.count,
                "deviceClass": r.device_class,
                "gpuClass": explanation.gpu_classes.get(r.device_class or ""),
                "request": r.request if r.device_class else None,
            }
            for r in explanation.extended
        ],
        "classes": [
            {
                "class": c.device_class,
                "gpuClass": c.gpu_class,
                "devices": c.total,
                "perNode": dict(c.per_node),
                "heldBy": {device: list(claims) for device, claims in c.held.items()},
                "error": c.error,
            }
            for c in explanation.classes
        ],
        "problems": explanation.problems,
        "nodes": [
            {
                "node": n.node,
                "fits": n.fits,
                "devicePlugin": n.device_plugin,
                "error": n.error,
                "pools": n.pools,
                "requests": [
                    {
                        "claim": r.claim,
                        "request": r.request,
                        "wants": r.wants,
                        "devices": r.devices,
                        "fitAlone": r.fit_alone,
                        "failsOnlyTogether": r.together,
                        "reasons": [
                            {
                                "reason": t.reason,
                                "rule": t.rule,
                                "devices": t.devices,
                                "heldBy": sorted(t.held_by),
                                "example": t.example,
                            }
                            for t in r.reasons
                        ],
                    }
                    for r in n.requests
                ],
            }
            for n in explanation.nodes
        ],
    }
