# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A fatal Xid in Pod status, end to end in one process: the driver reports Xid 79 on a card whose
MIG device a Pod holds; gpu-handler's Xid watcher (as ``gpu-handler run`` wires it) wakes the loop
and the kubelet's health stream turns the card's devices Unhealthy, naming the Xid, long before a
heartbeat would; the other card stays Healthy. Wired by tests/e2e/health_node.py."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from deckhouse_gpu.domain.inventory.health.hardware_health import HealthSettings
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.services.publishing.handler import HandlerSettings
from deckhouse_gpu.services.publishing.xid_watcher import XidWatcher
from deckhouse_gpu.services.runtime.trigger_loop import LoopTiming
from testkit.prepare_world import NODE, allocate, build_world
from tests.e2e.health_node import health_node
from tests.support.fake_kubelet_health import watch_health

A30, T4 = "0000:17:00.0", "0000:b1:00.0"
POOL = f"gpus/{NODE}"
MIG_DEVICE, WHOLE_T4 = "gpu-0000-17-00-0-mig-1g-6gb-0", "gpu-0000-b1-00-0"
# A heartbeat of an hour: only the Xid watcher can make the change show within the test's time.
SETTINGS = HandlerSettings(
    heartbeat_seconds=3600,
    health=HealthSettings(grace_seconds=30, backoff_seconds=(60,)),
    timing=LoopTiming(debounce_seconds=0.01, backoff_initial_seconds=0.1, backoff_max_seconds=0.5),
)


def test_a_fatal_xid_turns_a_pods_mig_device_unhealthy_in_the_kubelets_health_stream():
    short = Path(tempfile.mkdtemp(prefix="gpux", dir="/tmp"))  # socket paths must fit 107 bytes
    world = build_world(short, {A30: "a30", T4: "t4"})
    watcher = XidWatcher(world.nvml, wait_seconds=0.05)
    try:
        with health_node(world, short, SETTINGS, watcher) as served:
            watching = watcher.start(served.stop)
            watch = watch_health(served.connection)
            try:
                first = watch.until(lambda r: (POOL, MIG_DEVICE) in r)
                assert {seen.health for seen in first.values()} == {"Healthy"}
                claim = allocate(world.api, "c1", MIG_DEVICE)
                ref = ClaimRef("ns", claim["metadata"]["uid"], "c1")
                assert served.connection.prepare([ref])[ref.uid].error == ""

                deadline = time.monotonic() + 10  # until the pass has told the watcher its cards
                while not world.nvml.inject_xid(A30, 79):  # an Xid nobody watches is lost, as in NVML
                    assert time.monotonic() < deadline
                    time.sleep(0.01)
                broken = watch.until(lambda r: r[(POOL, MIG_DEVICE)].health == "Unhealthy", timeout=10)
                message = broken[(POOL, MIG_DEVICE)].message
                assert message.startswith(
                    f"card {A30}: HardwareHealthy=False (XidError): Xid 79 (GPU has fallen"
                )
                assert broken[(POOL, WHOLE_T4)].health == "Healthy"
            finally:
                watch.close()
        watching.join(5)
        assert not watching.is_alive()
    finally:
        shutil.rmtree(short, ignore_errors=True)
