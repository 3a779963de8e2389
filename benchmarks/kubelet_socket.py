# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The kubelet's socket: one gRPC call's round trip through gpu-handler's server (adapters/unix_grpc,
on h2) and, for comparison, through grpcio's server, both called by grpcio's client over a Unix
socket with a 2 KiB message (a prepare request of a few claims is smaller)."""

from __future__ import annotations

import glob
import tempfile
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

from benchmarks.common import report, timed
from deckhouse_gpu.adapters.kubelet_gen import dra_health_v1_pb2 as health
from deckhouse_gpu.adapters.kubelet_gen import dra_health_v1_pb2_grpc as health_grpc
from deckhouse_gpu.adapters.kubelet_gen import pluginregistration_v1_pb2 as registration
from deckhouse_gpu.adapters.kubelet_gen import pluginregistration_v1_pb2_grpc as registration_grpc
from deckhouse_gpu.adapters.unix_grpc.call import unary
from deckhouse_gpu.adapters.unix_grpc.server import UnixGrpcServer

CALLS = 3000
PAYLOAD = b"x" * 2048


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


def _echo(request: bytes, _context: object) -> bytes:
    return request


def _round_trips(path: str) -> list[float]:
    with grpc.insecure_channel(f"unix:{path}") as channel:
        stub: Any = channel.unary_unary("/bench.Echo/Echo")
        timed(lambda: stub(PAYLOAD, timeout=5), 200)  # connection and warm-up
        return timed(lambda: stub(PAYLOAD, timeout=5), CALLS)


def run() -> None:
    print("kubelet socket: one unary call's round trip (grpcio client, Unix socket)")
    with tempfile.TemporaryDirectory(prefix="gpu-bench-sock-") as tmp:
        ours = UnixGrpcServer(str(Path(tmp) / "ours.sock"), 6, "bench")
        ours.add_service("bench.Echo", {"Echo": unary(_echo, bytes, bytes)})
        ours.start()
        try:
            report("gpu-handler's server (h2)", _round_trips(ours.path))
        finally:
            ours.stop(0)
        theirs = grpc.server(futures.ThreadPoolExecutor(max_workers=6))
        methods: dict[str, Any] = {"Echo": grpc.unary_unary_rpc_method_handler(_echo)}
        theirs.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("bench.Echo", methods),))
        theirs.add_insecure_port(f"unix:{Path(tmp) / 'grpcio.sock'}")
        theirs.start()
        try:
            report("grpcio's server, for comparison", _round_trips(str(Path(tmp) / "grpcio.sock")))
        finally:
            theirs.stop(0)
