# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The module's own health as Prometheus metrics: pure logic of the module_status hook.

Deckhouse shows a module's phase; what the module is doing for the cluster it reports itself.
These series say how many cards are usable and why the others are not, which managed GPU nodes
have no gpu-handler (their driver is not ready), and when the webhook certificate expires, so
alerts can name the problem instead of a symptom. Malformed snapshot entries are skipped.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from cryptography import x509

from lib.gpu_node_labels import HANDLER_LABEL, VALIDATOR_LABEL, labelled

GROUP = "d8_gpu_module_status"
# What the hook's PhysicalGPU binding keeps of each object (jq, run by shell-operator).
_CONDITION = '([.status.conditions[]? | select(.type == "{0}") | .status][0] // "Unknown")'
PHYSICAL_GPU_FILTER = (
    "{node: .status.nodeInfo.nodeName, "
    'vendor: (.metadata.labels["gpu.deckhouse.io/vendor"] // "unknown"), '
    f"driverReady: {_CONDITION.format('DriverReady')}, "
    f"hardwareHealthy: {_CONDITION.format('HardwareHealthy')}, "
    # The reason another owner (a device plugin, the GPU operator) holds the card; "" when none does.
    'otherOwner: ([.status.conditions[]? | select(.type == "OtherOwner" and .status == "True") '
    '| .reason][0] // "")}'
)
_STATUSES = ("True", "False", "Unknown")


def _gpus(snapshot: Iterable[Any]) -> list[Mapping[str, Any]]:
    found = []
    for entry in snapshot or ():
        result = entry.get("filterResult") if isinstance(entry, Mapping) else None
        if isinstance(result, Mapping) and isinstance(result.get("node"), str) and result["node"]:
            found.append(result)
    return found


def _status(value: Any) -> str:
    return value if value in _STATUSES else "Unknown"


def certificate_expiry(internal: Mapping[str, Any]) -> float | None:
    """notAfter of the webhook certificate in the values, as a Unix time; None if there is none."""
    cert = internal.get("webhookCert") if isinstance(internal, Mapping) else None
    pem = cert.get("crt") if isinstance(cert, Mapping) else None
    if not isinstance(pem, str) or not pem:
        return None
    try:
        loaded = x509.load_pem_x509_certificate(pem.encode())
    except ValueError:
        return None
    return loaded.not_valid_after_utc.replace(tzinfo=datetime.UTC).timestamp()


def metrics(gpus: Iterable[Any], nodes: Iterable[Any], internal: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The series of one run; the node roles are the labels that place the node runtime, as they are
    on the Nodes now (what the DaemonSets actually select), not as the labelling hook wants them."""
    cards = _gpus(gpus)
    by_state = Counter(
        (
            str(card.get("vendor") or "unknown"),
            _status(card.get("driverReady")),
            _status(card.get("hardwareHealthy")),
        )
        for card in cards
    )
    series: list[dict[str, Any]] = [
        {
            "name": "d8_gpu_module_physicalgpus",
            "group": GROUP,
            "action": "set",
            "value": count,
            "labels": {"vendor": vendor, "driver_ready": ready, "hardware_healthy": healthy},
        }
        for (vendor, ready, healthy), count in sorted(by_state.items())
    ]
    nodes = list(nodes or ())
    handler, validator = labelled(nodes, HANDLER_LABEL), labelled(nodes, VALIDATOR_LABEL)
    for role, nodes in (
        ("gpu", {card["node"] for card in cards}),
        ("validator", validator),
        ("handler", handler),
    ):
        series.append(
            {
                "name": "d8_gpu_module_nodes",
                "group": GROUP,
                "action": "set",
                "value": len(nodes),
                "labels": {"role": role},
            }
        )
    # A managed node with an NVIDIA card but no gpu-handler offers none of its GPUs.
    for node in sorted(validator - handler):
        series.append(
            {
                "name": "d8_gpu_module_node_without_handler",
                "group": GROUP,
                "action": "set",
                "value": 1,
                "labels": {"node": node},
            }
        )
    # Cards gpu-handler offers nothing of, because another owner holds them (DESIGN.md D16).
    held = Counter(
        (str(card["node"]), str(card.get("otherOwner")))
        for card in cards
        if isinstance(card.get("otherOwner"), str) and card["otherOwner"]
    )
    for (node, reason), count in sorted(held.items()):
        series.append(
            {
                "name": "d8_gpu_module_cards_held_by_other_owner",
                "group": GROUP,
                "action": "set",
                "value": count,
                "labels": {"node": node, "reason": reason},
            }
        )
    expiry = certificate_expiry(internal)
    if expiry is not None:
        series.append(
            {
                "name": "d8_gpu_module_webhook_certificate_expiry_timestamp_seconds",
                "group": GROUP,
                "action": "set",
                "value": expiry,
                "labels": {},
            }
        )
    return series
