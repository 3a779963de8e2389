# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A small device plugin on the kubelet's v1beta1 API (grpcio), standing in for NVIDIA's: it
registers a resource (``nvidia.com/gpu``) with a real kubelet, lists its devices, and answers
Allocate as NVIDIA's plugin does with the ``envvar`` strategy (``NVIDIA_VISIBLE_DEVICES``).

It registers through the kubelet's plugin watcher (a socket in ``<root-dir>/plugins_registry``
answering GetInfo with type ``DevicePlugin``), which the kubelet accepts beside the older
``Register`` call: the kubelet's own ``kubelet.sock`` is always ``/var/lib/kubelet/device-plugins``,
whatever its root-dir, so it would be shared by every test kubelet on the machine, while the
registry is each kubelet's own.

The proto (tests/support/deviceplugin/) is compiled when first used, into a temporary folder, the
way tools/gen-proto compiles the kubelet's DRA protos; nothing generated is committed.
"""

from __future__ import annotations

import contextlib
import importlib
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from concurrent import futures
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc

from deckhouse_gpu.adapters.kubelet_gen import pluginregistration_v1_pb2 as reg
from deckhouse_gpu.adapters.kubelet_gen import pluginregistration_v1_pb2_grpc as reg_grpc

PROTO = Path(__file__).parent / "deviceplugin" / "kubelet_deviceplugin_v1beta1.proto"
VERSION = "v1beta1"


@cache
def generated() -> tuple[ModuleType, ModuleType]:
    """The compiled messages and services (``_pb2``, ``_pb2_grpc``), compiled once per process."""
    out = Path(tempfile.mkdtemp(prefix="deviceplugin-gen-"))
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I", str(PROTO.parent),
         f"--python_out={out}", f"--grpc_python_out={out}", str(PROTO)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    # The _pb2_grpc module imports its _pb2 by the proto's flat name, so the folder goes on the path.
    sys.path.insert(0, str(out))
    stem = PROTO.stem
    return importlib.import_module(f"{stem}_pb2"), importlib.import_module(f"{stem}_pb2_grpc")


class DevicePlugin:
    """One resource of ``devices``: its service on ``socket``, its registration socket in the
    kubelet's ``registry`` directory."""

    def __init__(self, registry: Path, socket: Path, resource: str, devices: list[str]) -> None:
        self.resource, self.devices = resource, list(devices)
        self.socket = socket
        self.registration = registry / f"{socket.stem}-reg.sock"
        self.registered = threading.Event()  # the kubelet said it took the plugin
        self.registration_error = ""
        self.allocated: list[list[str]] = []  # the device IDs of each Allocate, per container
        self._stop = threading.Event()
        self._server: grpc.Server | None = None

    def start(self) -> DevicePlugin:
        pb2, pb2_grpc = generated()
        plugin = self

        class Servicer(pb2_grpc.DevicePluginServicer):  # type: ignore[name-defined,misc]
            def GetDevicePluginOptions(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's name
                return pb2.DevicePluginOptions()

            def ListAndWatch(self, request: Any, context: Any) -> Iterator[Any]:  # noqa: N802
                yield pb2.ListAndWatchResponse(
                    devices=[pb2.Device(ID=device, health="Healthy") for device in plugin.devices]
                )
                # The stream stays open while the plugin runs: its end tells the kubelet the plugin
                # is gone, which then reports the resource with 0 allocatable.
                while not plugin._stop.wait(0.2) and context.is_active():
                    pass

            def Allocate(self, request: Any, context: Any) -> Any:  # noqa: N802
                responses = []
                for container in request.container_requests:
                    ids = list(container.devices_ids)
                    plugin.allocated.append(ids)
                    responses.append(
                        pb2.ContainerAllocateResponse(envs={"NVIDIA_VISIBLE_DEVICES": ",".join(ids)})
                    )
                return pb2.AllocateResponse(container_responses=responses)

            def GetPreferredAllocation(self, request: Any, context: Any) -> Any:  # noqa: N802
                return pb2.PreferredAllocationResponse()

            def PreStartContainer(self, request: Any, context: Any) -> Any:  # noqa: N802
                return pb2.PreStartContainerResponse()

        class Registration(reg_grpc.RegistrationServicer):
            def GetInfo(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's name
                return reg.PluginInfo(
                    type="DevicePlugin",
                    name=plugin.resource,
                    endpoint=str(plugin.socket),
                    supported_versions=[VERSION],
                )

            def NotifyRegistrationStatus(self, request: Any, context: Any) -> Any:  # noqa: N802
                plugin.registration_error = request.error
                if request.plugin_registered:
                    plugin.registered.set()
                return reg.RegistrationStatusResponse()

        self._stop.clear()
        self.socket.parent.mkdir(parents=True, exist_ok=True)
        for path in (self.socket, self.registration):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb2_grpc.add_DevicePluginServicer_to_server(Servicer(), server)
        reg_grpc.add_RegistrationServicer_to_server(Registration(), server)
        # The service first: the kubelet dials it as soon as it has read the registration.
        server.add_insecure_port(f"unix://{self.socket}")
        server.add_insecure_port(f"unix://{self.registration}")
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        """As a plugin's Pod going away: its sockets go, its stream ends."""
        self._stop.set()
        for path in (self.registration, self.socket):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        if self._server is not None:
            self._server.stop(grace=1).wait(5)
            self._server = None
        self.registered.clear()
