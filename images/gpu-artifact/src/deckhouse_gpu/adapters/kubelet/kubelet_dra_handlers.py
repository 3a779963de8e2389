# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The kubelet's DRA gRPC service, v1 and v1beta1, in front of the ``DRAService`` port.

The kubelet takes a failed RPC as a failure of every claim in it and a claim missing from the
response as an error of its own, so neither happens here by accident: every claim of a request gets
an entry, and an exception in the service becomes the error text of the claims it was handling (the
kubelet retries those and shows the text on the Pod). ``share_id`` exists only in v1.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, Protocol

import grpc

from deckhouse_gpu.adapters.kubelet_gen import dra_v1_pb2 as v1
from deckhouse_gpu.adapters.kubelet_gen import dra_v1beta1_pb2 as v1beta1
from deckhouse_gpu.ports.dra_plugin import ClaimRef, DRAService, PreparedDevice, PrepareResult

log = logging.getLogger(__name__)


class _WireClaim(Protocol):
    @property
    def namespace(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def name(self) -> str: ...


def claim_refs(claims: Iterable[_WireClaim]) -> list[ClaimRef]:
    return [ClaimRef(namespace=c.namespace, uid=c.uid, name=c.name) for c in claims]


def _failure(operation: str, error: Exception) -> str:
    return f"{operation} failed: {type(error).__name__}: {error}"


class GuardedCalls:
    """The port's calls with an answer for every requested claim whatever happens.

    No lock here: the service takes the node-wide ``pu.lock`` (with a timeout) for every call,
    which already keeps calls apart within this pod and across the two pods of a rolling update.
    A second lock on this path could only wait without a limit in front of the one that has one.
    """

    def __init__(self, service: DRAService) -> None:
        self._service = service

    def prepare(self, claims: list[ClaimRef]) -> dict[str, PrepareResult]:
        results: dict[str, PrepareResult] = {}
        fallback = "the driver returned no result for this claim"
        try:
            results = self._service.prepare(claims)
        except Exception as error:
            log.exception("prepare failed", extra={"claims": [c.uid for c in claims]})
            fallback = _failure("prepare", error)
        answer = {c.uid: results.get(c.uid, PrepareResult(error=fallback)) for c in claims}
        for claim in claims:
            if answer[claim.uid].error:
                log.warning("claim not prepared", extra=_claim_extra(claim, answer[claim.uid].error))
        return answer

    def unprepare(self, claims: list[ClaimRef]) -> dict[str, str]:
        errors: dict[str, str] = {}
        fallback = "the driver returned no result for this claim"
        try:
            errors = self._service.unprepare(claims)
        except Exception as error:
            log.exception("unprepare failed", extra={"claims": [c.uid for c in claims]})
            fallback = _failure("unprepare", error)
        answer = {c.uid: errors.get(c.uid, fallback) for c in claims}
        for claim in claims:
            if answer[claim.uid]:
                log.warning("claim not unprepared", extra=_claim_extra(claim, answer[claim.uid]))
        return answer


def _claim_extra(claim: ClaimRef, error: str) -> dict[str, object]:
    return {"claim": f"{claim.namespace}/{claim.name}", "claimUID": claim.uid, "error": error}


def _v1_device(d: PreparedDevice) -> v1.Device:
    return v1.Device(
        request_names=d.request_names,
        pool_name=d.pool_name,
        device_name=d.device_name,
        cdi_device_ids=d.cdi_device_ids,
        share_id=d.share_id,  # None leaves the optional field unset
    )


def _v1beta1_device(d: PreparedDevice) -> v1beta1.Device:
    return v1beta1.Device(
        request_names=d.request_names,
        pool_name=d.pool_name,
        device_name=d.device_name,
        cdi_device_ids=d.cdi_device_ids,
    )


def _devices_or_error[M](
    result: PrepareResult, convert: Callable[[PreparedDevice], M]
) -> tuple[list[M], str]:
    if result.error:
        return [], result.error  # the kubelet ignores devices next to an error
    try:
        return [convert(d) for d in result.devices], ""
    except (TypeError, ValueError) as error:
        # A malformed result from the service must fail its claim, not the whole call.
        log.exception("prepared devices not encodable")
        return [], _failure("encoding the prepared devices", error)


def _add_dra_service(
    server: grpc.Server,
    api: ModuleType,
    calls: GuardedCalls,
    to_device: Callable[[PreparedDevice], Any],
) -> None:
    """One DRAPlugin service for one API version: the versions differ only in their message
    classes and in the device fields they carry (``to_device``)."""

    def prepare(request: Any, _context: grpc.ServicerContext) -> Any:
        response = api.NodePrepareResourcesResponse()
        for uid, result in calls.prepare(claim_refs(request.claims)).items():
            devices, error = _devices_or_error(result, to_device)
            entry = response.claims[uid]  # a map of messages creates the entry on access
            entry.devices.extend(devices)
            entry.error = error
        return response

    def unprepare(request: Any, _context: grpc.ServicerContext) -> Any:
        response = api.NodeUnprepareResourcesResponse()
        for uid, error in calls.unprepare(claim_refs(request.claims)).items():
            response.claims[uid].error = error
        return response

    server.add_registered_method_handlers(
        api.DESCRIPTOR.services_by_name["DRAPlugin"].full_name,
        {
            "NodePrepareResources": grpc.unary_unary_rpc_method_handler(
                prepare,
                request_deserializer=api.NodePrepareResourcesRequest.FromString,
                response_serializer=api.NodePrepareResourcesResponse.SerializeToString,
            ),
            "NodeUnprepareResources": grpc.unary_unary_rpc_method_handler(
                unprepare,
                request_deserializer=api.NodeUnprepareResourcesRequest.FromString,
                response_serializer=api.NodeUnprepareResourcesResponse.SerializeToString,
            ),
        },
    )


def add_dra_services(server: grpc.Server, calls: GuardedCalls) -> None:
    """Registers both DRAPlugin services; the names come from the compiled protos, as the kubelet's do."""
    _add_dra_service(server, v1, calls, _v1_device)
    _add_dra_service(server, v1beta1, calls, _v1beta1_device)
