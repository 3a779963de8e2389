# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's parts as ``gpu-handler run`` wires them for the device health stream, in one
process: the handler loop with its capabilities pass on the world's simulated NVML, the device
health board, the real prepare service and the kubelet plugin on real Unix sockets, and a fake
kubelet that has registered it. Shared by the e2e tests of device health."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from deckhouse_gpu.adapters.kubelet.kubelet_grpc import RunningPlugin, start_plugin
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.dra_plugin import PluginPaths
from deckhouse_gpu.services.publishing.capabilities import CapabilitiesPass
from deckhouse_gpu.services.publishing.device_health import DeviceHealthBoard
from deckhouse_gpu.services.publishing.handler import HandlerLoop, HandlerSettings
from deckhouse_gpu.services.publishing.xid_watcher import XidWatcher
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.health import HealthState
from testkit.prepare_world import NODE, PrepareWorld
from tests.support.fake_kubelet import FakeKubelet, PluginConnection


@dataclass
class HealthNode:
    plugin: RunningPlugin
    kubelet: FakeKubelet
    connection: PluginConnection
    stop: threading.Event  # set when the node is torn down: what the test starts stops with it


@contextmanager
def health_node(
    world: PrepareWorld, short: Path, settings: HandlerSettings, xids: XidWatcher | None = None
) -> Iterator[HealthNode]:
    """``short``: a directory short enough for socket paths (107 bytes)."""
    clock = SystemClock()
    events = EventRecorder(world.api, "gpu-handler", NODE, clock)
    board = xids.board if xids is not None else None
    capabilities = CapabilitiesPass(world.api, world.nvml, NODE, events, clock, settings.health, board)
    health = DeviceHealthBoard(NODE)
    loop = HandlerLoop(capabilities, HealthState(), clock, settings, device_health=health, xid_watcher=xids)
    stop = threading.Event()
    runner = threading.Thread(target=loop.run, args=(stop,), daemon=True, name="handler-loop")
    runner.start()
    paths = PluginPaths(
        registry_dir=str(short / "registry"), plugin_dir=str(short / "plugin"), driver="gpu.deckhouse.io"
    )
    plugin = start_plugin(world.service(offers=loop), paths, health=health)
    kubelet = FakeKubelet(paths.registry_dir, timeout=10.0)
    try:
        (connection,) = kubelet.wait_for_plugins(1)
        yield HealthNode(plugin, kubelet, connection, stop)
    finally:
        kubelet.close()
        plugin.stop(grace=0)
        stop.set()
        loop.wake()
        runner.join(5)
