# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Sharing on a simulated node: the card settings NVML would hold, MPS daemon Pods a simulated
kubelet runs, and what ``nvidia-smi`` with ``kubectl get pods`` would show of them.

The daemons go through the real ``KubeMpsDaemons`` on the cluster's in-memory API, in the
module's namespace, so the Pods the demo shows are the ones gpu-handler creates on a cluster.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from deckhouse_gpu.adapters.kube.mps_daemon_pods import KubeMpsDaemons, pod_ready
from deckhouse_gpu.domain.config import features
from deckhouse_gpu.domain.naming import physical_name
from deckhouse_gpu.domain.offers.model import DRIVER
from deckhouse_gpu.domain.prepare.mps_pod import daemon_of, daemons_selector
from deckhouse_gpu.ports.kube import PODS, KubeAPI
from deckhouse_gpu.services.prepare.sharing_host import SharingHost
from deckhouse_gpu.simulator.host.sim_card_settings import SimCardSettings
from deckhouse_gpu.simulator.host.sim_mps_kubelet import SimulatedKubeletMps

MPS_NAMESPACE = "d8-gpu"
# The chart gives gpu-handler its own image by digest; no simulated kubelet pulls it.
MPS_IMAGE = "registry.deckhouse.io/deckhouse/ce/modules/gpu/gpu-handler@sha256:" + "0" * 64
PLUGIN_DIR = f"/var/lib/kubelet/plugins/{DRIVER}"  # the handler's default, as the host sees it
DRIVER_ROOT = "/"
READY_TIMEOUT = 10.0  # the simulated kubelet runs a Pod at once; only a broken world waits
POLL_INTERVAL = 0.01


def sharing_host(api: KubeAPI, node: str, root: Path, settings: SimCardSettings) -> SharingHost:
    """What gpu-handler is given on a node: ``root`` is the simulated host root, where the daemon
    directories appear as the kubelet would make the Pod's hostPath volumes."""
    daemons = KubeMpsDaemons(api, MPS_NAMESPACE, node, MPS_IMAGE, DRIVER_ROOT)
    return SharingHost(
        settings,
        SimulatedKubeletMps(daemons, api, host_root=root),
        PLUGIN_DIR,
        node,
        ready_timeout=READY_TIMEOUT,
        poll_interval=POLL_INTERVAL,
    )


def card_appeared(settings: SimCardSettings, card: str) -> None:
    """A card the driver binds (hot-plug or rebind) starts at the driver's defaults, as on a host."""
    settings.appeared(card)


def cards_of_claim(claim: dict[str, Any], cards: Iterable[str]) -> list[str]:
    """The cards (PCI addresses) the claim's allocated devices are on: a whole card's offer or one
    of its MIG instances, whose names extend the card's."""
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
    devices = {str(result.get("device", "")) for result in results or []}
    return sorted(
        card
        for card in cards
        if any(d == physical_name(card) or d.startswith(physical_name(card) + "-") for d in devices)
    )


def describe_cards(api: KubeAPI, node: str, settings: SimCardSettings, cards: Iterable[str]) -> list[str]:
    """Each card's sharing settings (what ``nvidia-smi -q`` shows: the time-slice interval, the
    compute mode) and the MPS daemon Pod serving it, if any (what ``kubectl -n d8-gpu get pods``
    shows)."""
    pods = api.list(PODS, label_selector=daemons_selector(node), namespace=MPS_NAMESPACE).items
    lines = []
    for card in cards:
        serving = [pod for pod in pods if daemon_of(pod).card == card]
        daemons = ", ".join(
            f"MPS daemon {pod['metadata']['name']} {'Ready' if pod_ready(pod) else 'not ready'}"
            for pod in serving
        )
        lines.append(
            f"  {card} "
            + "".join(
                f"{setting.label} {settings.read(card, setting)}, " for setting in features.CARD_SETTINGS
            )
            + (daemons or "no MPS daemon")
        )
    return lines
