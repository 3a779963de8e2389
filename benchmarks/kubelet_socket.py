# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The kubelet's socket: one DRA call's round trip through gpu-handler's plugin server (grpcio, as
``start_plugin`` builds it) from grpcio's client over a Unix socket: a prepare of three claims,
which is what the kubelet sends for a Pod with a few claims (the service answers at once)."""

from __future__ import annotations

import glob
import tempfile
from pathlib import Path
from typing import Any

import grpc

from benchmarks.common import report, timed
from deckhouse_gpu.adapters.kubelet.kubelet_grpc import start_plugin
from deckhouse_gpu.adapters.kubelet_gen import dra_health_v1_pb2 as health
from deckhouse_gpu.adapters.kubelet_gen import dra_health_v1_pb2_grpc as health_grpc
from deckhouse_gpu.adapters.kubelet_gen import dra_v1_pb2 as dra
from deckhouse_gpu.adapters.kubelet_gen import dra_v1_pb2_grpc as dra_grpc
from deckhouse_gpu.adapters.kubelet_gen import pluginregistration_v1_pb2 as registration
from deckhouse_gpu.adapters.kubelet_gen import pluginregistration_v1_pb2_grpc as registration_grpc
from deckhouse_gpu.ports.dra_plugin import ClaimRef, PluginPaths, PreparedDevice, PrepareResult

CALLS = 3000
CLAIMS = 3


class KubeletStandIn:
    """What a kubelet holds open to gpu-handler while it runs: the registration done and the
    health stream (v1) open, so a process's memory is measured as it is on a node."""

    def __init__(self, registry_dir: Path) -> None:
        self.registry_dir = registry_dir
        self.devices = 0
        self._channel: grpc.Channel | None = None
        self._stream: Any = None

    def attached(self) -> bool:
        """Registers and opens the stream once the plugin's socket is there; True once done."""
        if self._stream is not None:
            return True
        sockets = glob.glob(str(self.registry_dir / "*-reg.sock"))
        if not sockets:
            return False
        with grpc.insecure_channel(f"unix:{sockets[0]}") as channel:
            stub = registration_grpc.RegistrationStub(channel)  # type: ignore[no-untyped-call]
            info = stub.GetInfo(registration.InfoRequest(), timeout=5)
            stub.NotifyRegistrationStatus(registration.RegistrationStatus(plugin_registered=True), timeout=5)
        self._channel = grpc.insecure_channel(f"unix:{info.endpoint}")
        watch = health_grpc.DRAResourceHealthStub(self._channel).NodeWatchResources  # type: ignore[no-untyped-call]
        self._stream = watch(health.NodeWatchResourcesRequest(), timeout=120)
        self.devices = len(next(self._stream).devices)
        return True

    def close(self) -> None:
        if self._stream is not None:
            self._stream.cancel()
        if self._channel is not None:
            self._channel.close()


class _InstantService:
    """A DRA service that answers every claim with one device at once: the socket's cost alone."""

    def prepare(self, claims: list[ClaimRef]) -> dict[str, PrepareResult]:
        device = PreparedDevice(("gpu",), "bench", "gpu-0", ("gpu.deckhouse.io/gpu=gpu-0",))
        return {c.uid: PrepareResult(devices=(device,)) for c in claims}

    def unprepare(self, claims: list[ClaimRef]) -> dict[str, str]:
        return {c.uid: "" for c in claims}


def run() -> None:
    print("kubelet socket: one DRA call's round trip (grpcio server and client, Unix socket)")
    with tempfile.TemporaryDirectory(prefix="gpu-bench-sock-") as tmp:
        paths = PluginPaths(registry_dir=f"{tmp}/registry", plugin_dir=f"{tmp}/plugin")
        plugin = start_plugin(_InstantService(), paths)
        claims = [dra.Claim(namespace="bench", uid=f"uid-{i}", name=f"claim-{i}") for i in range(CLAIMS)]
        request = dra.NodePrepareResourcesRequest(claims=claims)
        try:
            with grpc.insecure_channel(f"unix:{paths.dra_socket}") as channel:
                prepare = dra_grpc.DRAPluginStub(channel).NodePrepareResources  # type: ignore[no-untyped-call]
                timed(lambda: prepare(request, timeout=5), 200)  # connection and warm-up
                report(
                    f"NodePrepareResources, {CLAIMS} claims",
                    timed(lambda: prepare(request, timeout=5), CALLS),
                )
        finally:
            plugin.stop(grace=0)
