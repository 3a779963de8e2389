# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler as a kubelet plugin: the registration socket and the DRA socket, served by grpcio.

The kubelet's plugin watcher notices ``<driver>[-<pod uid>]-reg.sock`` in its registry directory,
asks it what it is (GetInfo), dials the DRA endpoint it names and reports the outcome
(NotifyRegistrationStatus). Removing the registration socket is how a plugin deregisters, so
``stop()`` removes it first, before the DRA server goes away. With a device health feed the DRA
socket also serves the kubelet's health stream, and registration lists it (KUBERNETES-FACTS.md F6.3).
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
from concurrent import futures

import grpc

from deckhouse_gpu.adapters.kubelet.kubelet_dra_handlers import (
    GuardedCalls,
    add_dra_services,
)
from deckhouse_gpu.adapters.kubelet.kubelet_health_grpc import (
    HEALTH_SERVICES,
    HealthStreams,
    add_health_services,
)
from deckhouse_gpu.adapters.kubelet_gen import pluginregistration_v1_pb2 as reg
from deckhouse_gpu.ports.device_health import DeviceHealthFeed
from deckhouse_gpu.ports.dra_plugin import DRAService, PluginPaths

log = logging.getLogger(__name__)

PLUGIN_TYPE = "DRAPlugin"
# The kubelet picks the first of its own preferences (v1, then v1beta1) that the plugin lists.
SUPPORTED_VERSIONS = ("v1.DRAPlugin", "v1beta1.DRAPlugin")
# sockaddr_un.sun_path is 108 bytes with the terminating NUL; a longer path cannot be bound at all.
MAX_SOCKET_PATH = 107
# Prepare and unprepare run one at a time anyway (the service's node lock); a few workers let a
# call that arrives meanwhile wait in line, and the kubelet sends few. A health stream holds a worker
# for as long as it is open (two at most, kubelet_health_grpc.MAX_STREAMS).
DRA_WORKERS = 6
REGISTRATION_WORKERS = 2
# The largest request taken: grpcio's and grpc-go's default, said explicitly (a prepare request of a
# few claims is a few KiB). A larger one gets RESOURCE_EXHAUSTED from grpcio, the connection goes on.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
# Calls open at once on one connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; grpc-go queues the
# rest): with the message limit it bounds what one connection can make the handler hold.
MAX_STREAMS_PER_CONNECTION = 32
SERVER_OPTIONS = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_concurrent_streams", MAX_STREAMS_PER_CONNECTION),
)


class RegistrationState:
    """What the kubelet last said about our registration; it may say it again after a kubelet restart."""

    def __init__(self) -> None:
        self.registered = threading.Event()
        self._lock = threading.Lock()
        self._error = ""

    @property
    def last_error(self) -> str:
        with self._lock:
            return self._error

    def record(self, registered: bool, error: str) -> None:
        with self._lock:
            self._error = "" if registered else error or "the kubelet rejected the plugin without a reason"
        if registered:
            self.registered.set()
            log.info("registered with the kubelet")
        else:
            self.registered.clear()
            log.error("the kubelet rejected the registration", extra={"error": self.last_error})


def _add_registration_service(
    server: grpc.Server, paths: PluginPaths, status: RegistrationState, versions: tuple[str, ...]
) -> None:
    info = reg.PluginInfo(
        type=PLUGIN_TYPE, name=paths.driver, endpoint=paths.dra_socket, supported_versions=versions
    )

    def get_info(_request: reg.InfoRequest, _context: grpc.ServicerContext) -> reg.PluginInfo:
        return info

    def notify(
        request: reg.RegistrationStatus, _context: grpc.ServicerContext
    ) -> reg.RegistrationStatusResponse:
        status.record(request.plugin_registered, request.error)
        return reg.RegistrationStatusResponse()

    server.add_registered_method_handlers(
        reg.DESCRIPTOR.services_by_name["Registration"].full_name,
        {
            "GetInfo": grpc.unary_unary_rpc_method_handler(
                get_info,
                request_deserializer=reg.InfoRequest.FromString,
                response_serializer=reg.PluginInfo.SerializeToString,
            ),
            "NotifyRegistrationStatus": grpc.unary_unary_rpc_method_handler(
                notify,
                request_deserializer=reg.RegistrationStatus.FromString,
                response_serializer=reg.RegistrationStatusResponse.SerializeToString,
            ),
        },
    )


def _prepare_socket(path: str) -> None:
    if not os.path.isabs(path):
        raise ValueError(f"socket path {path!r} is not absolute; the kubelet dials absolute paths")
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise ValueError(f"socket path {path!r} is longer than {MAX_SOCKET_PATH} bytes")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        raise ValueError(f"socket path {path!r} is a directory")
    # Left behind by a previous run that did not stop cleanly; binding over it would fail.
    log.info("removing stale socket", extra={"socket": path})
    os.unlink(path)


def _remove_socket(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _bind(path: str, workers: int, name: str) -> grpc.Server:
    """A grpcio server bound to ``path`` (the socket file exists from here on), not yet started."""
    _prepare_socket(path)
    # A sync server: each call (and each open health stream) holds one of ``workers`` threads.
    pool = futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
    server = grpc.server(pool, options=SERVER_OPTIONS)
    try:
        # "unix://" and an absolute path: grpcio's form of a Unix socket address.
        port = server.add_insecure_port("unix://" + path)
    except RuntimeError as error:  # grpcio's way of saying the bind failed
        server.stop(None)
        raise OSError(f"cannot listen on {path}: {error}") from error
    if port == 0:  # older grpcio said so by returning 0
        server.stop(None)
        raise OSError(f"cannot listen on {path}")
    return server


class RunningPlugin:
    """Both servers of one plugin instance; ``stop()`` deregisters and removes the sockets."""

    def __init__(self, paths: PluginPaths, status: RegistrationState) -> None:
        self.paths = paths
        self.status = status
        self.registered = status.registered
        self._servers: list[tuple[grpc.Server, str]] = []
        self._stopped = False
        self.health_streams: HealthStreams | None = None

    @property
    def last_error(self) -> str:
        """The kubelet's reason for the last rejection; "" once accepted (or before it said anything)."""
        return self.status.last_error

    def _bound(self, path: str, workers: int, name: str) -> grpc.Server:
        server = _bind(path, workers, name)
        # Tracked before it starts: binding already created the socket file, which stop() removes.
        self._servers.append((server, path))
        return server

    def stop(self, grace: float = 1.0) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self.health_streams is not None:
            self.health_streams.stop()  # a stream waits for the next change; end it, or stop() waits
        # Registration first (it was bound last): the kubelet deregisters the plugin when that
        # socket goes, so no new call comes to the DRA socket after it.
        for server, path in reversed(self._servers):
            # grpcio refuses new calls at once, lets running ones finish for ``grace`` seconds,
            # then cancels them and says GOAWAY; the event is set once it is all done.
            server.stop(grace).wait()
            _remove_socket(path)  # grpcio removes it only for a server that was started
        self.registered.clear()
        log.info("kubelet plugin stopped", extra={"driver": self.paths.driver})


def start_plugin(
    service: DRAService, paths: PluginPaths, health: DeviceHealthFeed | None = None
) -> RunningPlugin:
    """Serves the DRA socket, then the registration socket, so the kubelet finds a ready endpoint.

    ``health``: the node's device health, for the kubelet's health stream; without it the stream is
    neither served nor listed."""
    status = RegistrationState()
    plugin = RunningPlugin(paths, status)
    versions = SUPPORTED_VERSIONS + (HEALTH_SERVICES if health is not None else ())
    try:
        dra = plugin._bound(paths.dra_socket, DRA_WORKERS, "kubelet-dra")
        add_dra_services(dra, GuardedCalls(service))
        if health is not None:
            plugin.health_streams = add_health_services(dra, health)
        dra.start()
        registration = plugin._bound(paths.registration_socket, REGISTRATION_WORKERS, "kubelet-registration")
        _add_registration_service(registration, paths, status, versions)
        registration.start()
    except BaseException:
        plugin.stop(grace=0)
        raise
    log.info(
        "kubelet plugin serving",
        extra={"registrationSocket": paths.registration_socket, "draSocket": paths.dra_socket},
    )
    return plugin
