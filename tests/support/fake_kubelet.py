# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A stand-in for the kubelet's side of plugin registration and DRA calls, over real Unix sockets.

It does what the kubelet's plugin watcher and DRA manager do with a plugin: find ``*-reg.sock`` in
the registry directory, GetInfo, check type, name, endpoint and versions, dial the endpoint, pick
v1 before v1beta1, NotifyRegistrationStatus, and later call NodePrepareResources and
NodeUnprepareResources with a 45 s deadline, taking a claim missing from a response as an error.
It speaks through protoc's generated stubs, not through the plugin's own handler code.
"""

from __future__ import annotations

import itertools
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from deckhouse_gpu.adapters.kubelet_gen import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    pluginregistration_v1_pb2,
    pluginregistration_v1_pb2_grpc,
)
from deckhouse_gpu.ports.dra_plugin import ClaimRef, PreparedDevice, PrepareResult

KUBELET_CALL_TIMEOUT = 45.0
# The kubelet's own order of preference.
KUBELET_VERSIONS = ("v1.DRAPlugin", "v1beta1.DRAPlugin")
_MODULES: dict[str, tuple[Any, Any]] = {
    "v1.DRAPlugin": (dra_v1_pb2, dra_v1_pb2_grpc),
    "v1beta1.DRAPlugin": (dra_v1beta1_pb2, dra_v1beta1_pb2_grpc),
}


class RegistrationRejected(Exception):
    """The kubelet turned the plugin down (and told it so through NotifyRegistrationStatus)."""


@dataclass
class PluginConnection:
    """One registered plugin as the kubelet holds it: its info, the chosen version, a channel."""

    registration_socket: str
    name: str
    endpoint: str
    version: str
    channel: grpc.Channel
    timeout: float
    registered_at: int  # registration order; the kubelet calls the newest plugin of a driver
    calls: list[str] = field(default_factory=list)
    services: tuple[str, ...] = ()  # everything GetInfo listed: the health stream's versions too

    def _stub(self) -> Any:
        return _MODULES[self.version][1].DRAPluginStub(self.channel)

    def _claims(self, claims: list[ClaimRef]) -> list[Any]:
        pb = _MODULES[self.version][0]
        return [pb.Claim(namespace=c.namespace, uid=c.uid, name=c.name) for c in claims]

    def prepare(self, claims: list[ClaimRef]) -> dict[str, PrepareResult]:
        pb = _MODULES[self.version][0]
        self.calls.append("prepare")
        request = pb.NodePrepareResourcesRequest(claims=self._claims(claims))
        response = self._stub().NodePrepareResources(request, timeout=self.timeout)
        results: dict[str, PrepareResult] = {}
        for claim in claims:
            if claim.uid not in response.claims:
                results[claim.uid] = PrepareResult(error="claim missing from NodePrepareResources response")
                continue
            entry = response.claims[claim.uid]
            devices = tuple(
                PreparedDevice(
                    request_names=tuple(d.request_names),
                    pool_name=d.pool_name,
                    device_name=d.device_name,
                    cdi_device_ids=tuple(d.cdi_device_ids),
                    share_id=d.share_id
                    if "share_id" in d.DESCRIPTOR.fields_by_name and d.HasField("share_id")
                    else None,
                )
                for d in entry.devices
            )
            results[claim.uid] = PrepareResult(devices=() if entry.error else devices, error=entry.error)
        return results

    def unprepare(self, claims: list[ClaimRef]) -> dict[str, str]:
        pb = _MODULES[self.version][0]
        self.calls.append("unprepare")
        request = pb.NodeUnprepareResourcesRequest(claims=self._claims(claims))
        response = self._stub().NodeUnprepareResources(request, timeout=self.timeout)
        return {
            c.uid: response.claims[c.uid].error
            if c.uid in response.claims
            else "claim missing from NodeUnprepareResources response"
            for c in claims
        }


def _error_of(result: PrepareResult | str) -> str:
    return result.error if isinstance(result, PrepareResult) else result


def retry_until_ok[R: (PrepareResult, str)](
    call: Callable[[list[ClaimRef]], dict[str, R]],
    claims: list[ClaimRef],
    attempts: int = 5,
    delay: float = 0.0,
) -> dict[str, R]:
    """Repeats ``call`` for the claims that still fail, as the kubelet does while a Pod waits.

    Claims that succeeded are not sent again (the kubelet checkpoints them). After ``attempts``
    rounds the last answers are returned, errors included, for the test to inspect.
    """
    answers: dict[str, R] = {}
    pending = list(claims)
    for attempt in range(attempts):
        if attempt and delay:
            time.sleep(delay)
        answers.update(call(pending))
        pending = [c for c in pending if _error_of(answers[c.uid])]
        if not pending:
            break
    return answers


class FakeKubelet:
    """The kubelet's plugin watcher for one registry directory, and its per-driver plugin table."""

    def __init__(
        self,
        registry_dir: str,
        versions: tuple[str, ...] = KUBELET_VERSIONS,
        timeout: float = KUBELET_CALL_TIMEOUT,
    ) -> None:
        self.registry_dir = registry_dir
        self.versions = versions
        self.timeout = timeout
        self.plugins: dict[str, PluginConnection] = {}  # by registration socket
        self.rejections: dict[str, str] = {}
        self._order = itertools.count()

    def sync(self) -> None:
        """One pass of the watcher: register new sockets, drop plugins whose socket is gone."""
        present = set()
        if os.path.isdir(self.registry_dir):
            for name in sorted(os.listdir(self.registry_dir)):
                path = os.path.join(self.registry_dir, name)
                if name.endswith("-reg.sock") and stat.S_ISSOCK(os.lstat(path).st_mode):
                    present.add(path)
        for path in sorted(present - self.plugins.keys() - self.rejections.keys()):
            try:
                self.register(path)
            except RegistrationRejected as rejected:
                self.rejections[path] = str(rejected)
        for path in list(self.plugins.keys() - present):
            self.plugins.pop(path).channel.close()

    def wait_for_plugins(self, count: int, timeout: float = 5.0) -> list[PluginConnection]:
        """Polls the registry until ``count`` plugins are registered."""
        deadline = time.monotonic() + timeout
        while True:
            self.sync()
            if len(self.plugins) >= count or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        assert len(self.plugins) >= count, f"{len(self.plugins)} plugins registered, wanted {count}"
        return sorted(self.plugins.values(), key=lambda p: p.registered_at)

    def register(self, registration_socket: str) -> PluginConnection:
        channel = grpc.insecure_channel(f"unix:{registration_socket}")
        try:
            stub = pluginregistration_v1_pb2_grpc.RegistrationStub(channel)
            info = stub.GetInfo(pluginregistration_v1_pb2.InfoRequest(), timeout=self.timeout)
            try:
                connection = self._connect(registration_socket, info)
            except RegistrationRejected as rejected:
                status = pluginregistration_v1_pb2.RegistrationStatus(
                    plugin_registered=False, error=str(rejected)
                )
                stub.NotifyRegistrationStatus(status, timeout=self.timeout)
                raise
            status = pluginregistration_v1_pb2.RegistrationStatus(plugin_registered=True)
            stub.NotifyRegistrationStatus(status, timeout=self.timeout)
        finally:
            channel.close()
        self.plugins[registration_socket] = connection
        return connection

    def _connect(self, registration_socket: str, info: Any) -> PluginConnection:
        if info.type != "DRAPlugin":
            raise RegistrationRejected(f"plugin type {info.type!r} is not DRAPlugin")
        if not info.name:
            raise RegistrationRejected("empty driver name")
        if not os.path.isabs(info.endpoint):
            raise RegistrationRejected(f"endpoint {info.endpoint!r} is not an absolute path")
        chosen = next((v for v in self.versions if v in info.supported_versions), None)
        if chosen is None:
            raise RegistrationRejected(f"none of {list(info.supported_versions)} is supported")
        channel = grpc.insecure_channel(f"unix:{info.endpoint}")
        try:
            grpc.channel_ready_future(channel).result(timeout=min(self.timeout, 5.0))
        except grpc.FutureTimeoutError as timeout:
            channel.close()
            raise RegistrationRejected(f"cannot dial {info.endpoint}") from timeout
        return PluginConnection(
            registration_socket=registration_socket,
            name=info.name,
            endpoint=info.endpoint,
            version=chosen,
            channel=channel,
            timeout=self.timeout,
            registered_at=next(self._order),
            services=tuple(info.supported_versions),
        )

    def active(self, driver: str) -> PluginConnection:
        """The plugin the kubelet calls for ``driver``: the most recently registered one."""
        candidates = [p for p in self.plugins.values() if p.name == driver]
        assert candidates, f"no plugin registered for {driver}"
        return max(candidates, key=lambda p: p.registered_at)

    def close(self) -> None:
        for plugin in self.plugins.values():
            plugin.channel.close()
        self.plugins.clear()
