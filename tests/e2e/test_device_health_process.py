# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The device health stream of a real ``gpu-handler run`` process, over its DRA socket.

The same simulated node and fake API server as test_prepare_e2e.py (its ``cluster`` fixture, a
handler process of this module's own): the fake kubelet registers the plugin, sees it list the
health stream, opens it and gets every device of the node; a card whose driver stops being ready
turns Unknown with the reason, and comes back Healthy.
"""

from __future__ import annotations

from deckhouse_gpu.domain.inventory.physicalgpu import DRIVER_READY
from deckhouse_gpu.domain.naming import physical_gpu_name
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS
from tests.e2e.sim_node import CARD_B, NODE
from tests.e2e.test_prepare_e2e import MIG_PROFILES, T0, WHOLE_A, WHOLE_B, Cluster, cluster
from tests.support.fake_kubelet_health import V1, V1ALPHA1, Report, watch_health

__all__ = ["cluster"]  # the fixture, imported for this module

POOL = f"gpus/{NODE}"


def _driver_ready(cluster: Cluster, address: str, status: str) -> None:
    condition = {"type": DRIVER_READY, "status": status, "reason": "ValidatorReady" if status == "True" else
                 "ValidatorNotReady", "message": "", "lastTransitionTime": T0}  # fmt: skip
    cluster.server.kube.patch(
        PHYSICAL_GPUS,
        physical_gpu_name(NODE, address),
        {"status": {"conditions": [condition]}},
        subresource="status",
    )


def _health(report: Report, device: str) -> str:
    return report[(POOL, device)].health


def test_the_handler_process_lists_and_serves_the_health_stream(cluster):
    assert cluster.plugin.services[-2:] == (V1, V1ALPHA1)
    watch = watch_health(cluster.plugin)
    try:
        first = watch.next(10)
        devices = {device for pool, device in first if pool == POOL}
        assert {WHOLE_A, WHOLE_B, *MIG_PROFILES} <= devices
        assert len(devices) == 2 * 14  # two A30s: the whole card and 13 MIG placements each
        assert {seen.health for seen in first.values()} == {"Healthy"}

        _driver_ready(cluster, CARD_B, "False")
        gated = watch.until(lambda r: _health(r, WHOLE_B) == "Unknown", timeout=15)
        assert gated[(POOL, WHOLE_B)].message == (
            f"card {CARD_B}: HardwareHealthy=Unknown (DriverNotReady): waiting for DriverReady=True"
        )
        assert _health(gated, WHOLE_A) == "Healthy"
    finally:
        _driver_ready(cluster, CARD_B, "True")
        cluster.wait_for_offers({WHOLE_B}, set())
    healthy = watch.until(lambda r: _health(r, WHOLE_B) == "Healthy", timeout=15)
    assert {seen.health for seen in healthy.values()} == {"Healthy"}
    watch.close()
