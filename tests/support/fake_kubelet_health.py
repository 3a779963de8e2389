# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The kubelet's side of the device health stream (KEP-4680) over a plugin's DRA socket.

A 1.34-1.36 kubelet with the ResourceHealthStatus gate on opens
``/v1alpha1.DRAResourceHealth/NodeWatchResources`` on every registered DRA plugin; a newer one opens
the newest version the plugin listed at registration (v1, then v1alpha1), or nothing. Each response
is read as the kubelet reads it: a complete list, device by (pool, device name). It speaks through
protoc's generated stubs, not through the plugin's own code.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from deckhouse_gpu.adapters.kubelet_gen import (
    dra_health_v1_pb2,
    dra_health_v1_pb2_grpc,
    dra_health_v1alpha1_pb2,
    dra_health_v1alpha1_pb2_grpc,
)
from tests.support.fake_kubelet import PluginConnection

V1, V1ALPHA1 = "v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"
# Newer kubelets' order of preference among the versions a plugin lists.
KUBELET_HEALTH_VERSIONS = (V1, V1ALPHA1)
_MODULES: dict[str, tuple[Any, Any]] = {
    V1: (dra_health_v1_pb2, dra_health_v1_pb2_grpc),
    V1ALPHA1: (dra_health_v1alpha1_pb2, dra_health_v1alpha1_pb2_grpc),
}


def negotiated(plugin: PluginConnection) -> str | None:
    """The version a kubelet that negotiates picks for this plugin; None: it watches nothing."""
    return next((v for v in KUBELET_HEALTH_VERSIONS if v in plugin.services), None)


@dataclass(frozen=True)
class SeenHealth:
    health: str  # "Healthy", "Unhealthy" or "Unknown", as the Pod shows it
    message: str
    last_updated: int
    timeout_seconds: int


type Report = dict[tuple[str, str], SeenHealth]  # (pool, device) -> health


class HealthWatch:
    """One open stream; its responses are queued by a reader thread as the kubelet's would be."""

    def __init__(self, plugin: PluginConnection, version: str) -> None:
        pb, grpc_module = _MODULES[version]
        self.version = version
        self._names = {value: name.capitalize() for name, value in pb.HealthStatus.items()}
        stub = grpc_module.DRAResourceHealthStub(plugin.channel)
        self._call = stub.NodeWatchResources(pb.NodeWatchResourcesRequest())
        self._reports: queue.Queue[Report] = queue.Queue()
        self.error: grpc.RpcError | None = None
        self.ended = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True, name=f"health-{version}")
        self._reader.start()

    def _read(self) -> None:
        try:
            for response in self._call:
                self._reports.put(
                    {
                        (d.device.pool_name, d.device.device_name): SeenHealth(
                            self._names[d.health],
                            d.message,
                            d.last_updated_time,
                            d.health_check_timeout_seconds,
                        )
                        for d in response.devices
                    }
                )
        except grpc.RpcError as error:
            self.error = error
        finally:
            self.ended.set()

    def next(self, timeout: float = 5.0) -> Report:
        try:
            return self._reports.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no health report within {timeout} s (error: {self.error})") from None

    def until(self, wanted: Callable[[Report], bool], timeout: float = 10.0) -> Report:
        """Reads reports until one satisfies ``wanted``; returns it."""
        deadline = time.monotonic() + timeout
        last: Report | None = None
        while (left := deadline - time.monotonic()) > 0:
            try:
                last = self._reports.get(timeout=left)
            except queue.Empty:
                break
            if wanted(last):
                return last
        raise AssertionError(f"no wanted health report within {timeout} s; last: {last}")

    def close(self) -> None:
        self._call.cancel()
        self._reader.join(5)


def watch_health(plugin: PluginConnection, version: str | None = None) -> HealthWatch:
    """Opens the stream as a kubelet would: ``version`` as given (1.34-1.36 always call v1alpha1),
    else the negotiated one."""
    chosen = version or negotiated(plugin)
    assert chosen is not None, f"the plugin lists no health service: {plugin.services}"
    return HealthWatch(plugin, chosen)
