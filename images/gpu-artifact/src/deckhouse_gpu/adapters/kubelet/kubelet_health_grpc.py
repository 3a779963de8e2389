# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The kubelet's device health stream (KEP-4680) on the DRA socket, v1alpha1 and v1
(KUBERNETES-FACTS.md F6.3).

A kubelet with the ResourceHealthStatus gate on (beta and on by default from 1.36) calls
``NodeWatchResources`` on the DRA socket of the plugin it registered: 1.34 to 1.36 call v1alpha1
on every DRA plugin, whatever it lists at registration; newer kubelets call only a service the
plugin lists, v1 before v1alpha1. Both are served from one feed: the whole list at once, again on
every change, and again unchanged every ``RESEND_SECONDS``, because the kubelet shows a device
Unknown once its last report is older than the device's timeout. The kubelet clears the driver's
health when the stream ends, so a stopped plugin leaves no stale Healthy behind.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import grpc

from deckhouse_gpu.adapters.kubelet_gen import dra_health_v1_pb2 as v1
from deckhouse_gpu.adapters.kubelet_gen import dra_health_v1alpha1_pb2 as v1alpha1
from deckhouse_gpu.domain.inventory.health.device_health import HealthReport
from deckhouse_gpu.ports.device_health import DeviceHealthFeed, HealthSubscription

log = logging.getLogger(__name__)

SERVICE = "DRAResourceHealth"
# What registration lists for a plugin that serves the stream, "<proto package>.<service>".
HEALTH_SERVICES = tuple(api.DESCRIPTOR.services_by_name[SERVICE].full_name for api in (v1, v1alpha1))
RESEND_SECONDS = 10.0
# The kubelet's own default, said explicitly: three resends may be lost before a device goes Unknown.
HEALTH_CHECK_TIMEOUT_SECONDS = 30
# A kubelet keeps one stream per plugin; more at once means stale ones, and each holds a worker.
MAX_STREAMS = 2


class HealthStreams:
    """The open streams of one plugin: capped, and all ended at once when the plugin stops."""

    def __init__(self, feed: DeviceHealthFeed) -> None:
        self._feed = feed
        self._lock = threading.Lock()
        self._open: set[HealthSubscription] = set()
        self.stopped = False

    def open(self) -> HealthSubscription | None:
        with self._lock:
            if self.stopped or len(self._open) >= MAX_STREAMS:
                return None
            subscription = self._feed.subscribe()
            self._open.add(subscription)
            return subscription

    def release(self, subscription: HealthSubscription) -> None:
        subscription.close()
        with self._lock:
            self._open.discard(subscription)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._open)

    def stop(self) -> None:
        with self._lock:
            self.stopped = True
            ending = list(self._open)
        for subscription in ending:
            subscription.close()


def _response(api: ModuleType, report: HealthReport) -> Any:
    levels = {"Healthy": api.HEALTHY, "Unhealthy": api.UNHEALTHY, "Unknown": api.UNKNOWN}
    return api.NodeWatchResourcesResponse(
        devices=[
            api.DeviceHealth(
                device=api.DeviceIdentifier(pool_name=report.pool, device_name=entry.device),
                health=levels[entry.health],
                last_updated_time=report.checked_at,
                health_check_timeout_seconds=HEALTH_CHECK_TIMEOUT_SECONDS,
                message=entry.message,
            )
            for entry in report.devices
        ]
    )


def _add_health_service(server: grpc.Server, api: ModuleType, streams: HealthStreams) -> None:
    def watch(_request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        subscription = streams.open()
        if subscription is None:
            reason = "the plugin is stopping" if streams.stopped else f"{MAX_STREAMS} health streams are open"
            context.abort(grpc.StatusCode.UNAVAILABLE, reason)
        # The kubelet hung up, its deadline passed or the server stops: grpcio runs the callback,
        # which ends the wait at once, not after a resend.
        context.add_callback(subscription.close)
        log.info("kubelet health stream opened", extra={"service": api.DESCRIPTOR.package})
        try:
            while context.is_active() and not streams.stopped:
                report = subscription.next(RESEND_SECONDS)
                if report is not None:
                    yield _response(api, report)
        finally:
            streams.release(subscription)
            log.info("kubelet health stream closed", extra={"service": api.DESCRIPTOR.package})

    server.add_registered_method_handlers(
        api.DESCRIPTOR.services_by_name[SERVICE].full_name,
        {
            "NodeWatchResources": grpc.unary_stream_rpc_method_handler(
                watch,
                request_deserializer=api.NodeWatchResourcesRequest.FromString,
                response_serializer=api.NodeWatchResourcesResponse.SerializeToString,
            )
        },
    )


def add_health_services(server: grpc.Server, feed: DeviceHealthFeed) -> HealthStreams:
    """Serves both versions on the DRA server; ``stop()`` the result before stopping the server."""
    streams = HealthStreams(feed)
    for api in (v1, v1alpha1):
        _add_health_service(server, api, streams)
    return streams
