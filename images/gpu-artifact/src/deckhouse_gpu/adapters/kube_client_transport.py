# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The ``kubernetes`` client's ApiClient as a transport: for a kubeconfig (exec plugins, OIDC, client
certificates). Loaded only then: see ``kube_transport``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException

from deckhouse_gpu.ports.kube import Object, Unavailable


class ClientResponse:
    """A urllib3 response whose read errors are ``OSError``s, as ClientKube expects of any transport."""

    def __init__(self, response: urllib3.BaseHTTPResponse) -> None:
        self._response = response
        self.status = response.status
        self.headers = response.headers

    @property
    def data(self) -> bytes:
        try:
            return self._response.data
        except urllib3.exceptions.HTTPError as error:
            raise ConnectionError(str(error)) from error

    def read1(self, size: int) -> bytes:
        try:
            return self._response.read1(size)
        except urllib3.exceptions.HTTPError as error:
            raise ConnectionError(str(error)) from error

    def close(self) -> None:
        self._response.close()

    def release_conn(self) -> None:
        self._response.release_conn()


class ClientTransport:
    """The ``kubernetes`` client's ApiClient (kubeconfig: exec plugins, OIDC, client certificates)."""

    def __init__(self, api: Any) -> None:
        self._api = api

    def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        headers: Mapping[str, str],
        body: Object | None,
        timeout: tuple[float, float],
    ) -> ClientResponse:
        request = self._api.param_serialize(
            method=method,
            resource_path=path,
            query_params=list(query),
            header_params=dict(headers),
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            response: urllib3.BaseHTTPResponse = self._api.call_api(
                *request, _request_timeout=timeout
            ).response
        except (urllib3.exceptions.HTTPError, OSError) as error:  # refused, reset, timed out
            raise Unavailable(f"{method} {path}: {error}") from error
        except ApiException as error:  # how the client reports a failed TLS handshake
            raise Unavailable(f"{method} {path}: {error.reason}") from error
        return ClientResponse(response)

    def close(self) -> None:
        self._api.close()
