# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""How requests reach the API server: a urllib3 pool for a pod's service account, or the
``kubernetes`` client's transport for a kubeconfig.

In a pod every component talks to one server with one bearer token and one CA: a urllib3 pool does
that with nothing else loaded. The ``kubernetes`` package (its configuration, ApiClient, pydantic and
dateutil) costs about 10 MiB per process on every GPU node (``make bench`` prints the figures), so it
is imported only for a kubeconfig, where its exec plugins, OIDC and client certificates are worth it.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlencode

import urllib3

from deckhouse_gpu.ports.kube import Object, Unavailable

ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
# The projected token is rotated by the kubelet well before it expires; re-reading it once a minute
# is what client-go and the kubernetes client do.
TOKEN_REREAD_SECONDS = 60.0


class InClusterConfigError(ValueError):
    """This process is not in a pod, or the pod's service account files are missing."""


class Transport(Protocol):
    def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        headers: Mapping[str, str],
        body: Object | None,
        timeout: tuple[float, float],
    ) -> urllib3.BaseHTTPResponse:
        """Sends one request; the response's body is not read yet. Connection failures raise
        ``Unavailable``; HTTP error statuses come back as responses."""
        ...

    def close(self) -> None: ...


class ServiceAccountToken:
    """The pod's token file, re-read once a minute (and at once when it was unreadable)."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._value = ""
        self._read_at: float | None = None

    def __call__(self) -> str:
        with self._lock:
            now = self._clock()
            if self._read_at is None or not self._value or now - self._read_at >= TOKEN_REREAD_SECONDS:
                try:
                    self._value = self.path.read_text().strip()
                except OSError as error:
                    if not self._value:  # keep a token that worked rather than send none
                        raise Unavailable(
                            f"cannot read the service account token {self.path}: {error}"
                        ) from error
                self._read_at = now
            return self._value


def _keepalive_options() -> list[tuple[int, int, int]]:
    """TCP keepalive probes, as client-go sends: a long watch notices a vanished server."""
    options = list(urllib3.connection.HTTPConnection.default_socket_options)
    options.append((socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1))
    for name, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 30), ("TCP_KEEPCNT", 6)):
        if hasattr(socket, name):
            options.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    return options


class PoolTransport:
    """One server, a bearer token and a CA bundle over a urllib3 connection pool."""

    def __init__(self, server: str, token: Callable[[], str], ca_file: str | None) -> None:
        self.server = server.rstrip("/")
        self._token = token
        # One retry covers a pooled keep-alive connection the server had closed; more would multiply
        # the timeout when the server is down, and the services back off and retry themselves.
        self._pool = urllib3.PoolManager(
            num_pools=2,
            maxsize=4,
            retries=urllib3.Retry(total=1, redirect=0, raise_on_status=False),
            cert_reqs="CERT_REQUIRED" if ca_file else "CERT_NONE",
            ca_certs=ca_file,
            socket_options=_keepalive_options(),
        )

    def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        headers: Mapping[str, str],
        body: Object | None,
        timeout: tuple[float, float],
    ) -> urllib3.BaseHTTPResponse:
        url = self.server + path + (f"?{urlencode(list(query))}" if query else "")
        sent = {**headers, "Authorization": f"Bearer {self._token()}"}
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        try:
            return self._pool.request(
                method,
                url,
                body=data,
                headers=sent,
                timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]),
                preload_content=False,
            )
        except (urllib3.exceptions.HTTPError, OSError) as error:  # refused, reset, TLS, timed out
            raise Unavailable(f"{method} {path}: {error}") from error

    def close(self) -> None:
        self._pool.clear()


def in_cluster_transport(
    environ: Mapping[str, str] | None = None, account_dir: Path | None = None
) -> PoolTransport:
    """The pod's API server (KUBERNETES_SERVICE_HOST/PORT), its token and its CA, as a pod sees them."""
    env = os.environ if environ is None else environ
    account_dir = ACCOUNT_DIR if account_dir is None else account_dir
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise InClusterConfigError(
            "not in a pod: KUBERNETES_SERVICE_HOST/PORT are not set;"
            " give --kubeconfig to run outside a cluster"
        )
    token, ca = account_dir / "token", account_dir / "ca.crt"
    for path in (token, ca):
        if not path.is_file():
            raise InClusterConfigError(f"the pod's service account file {path} is missing (automount off?)")
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    return PoolTransport(server, ServiceAccountToken(token), str(ca))


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
    ) -> urllib3.BaseHTTPResponse:
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415 - loaded with the client

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
        return response

    def close(self) -> None:
        self._api.close()


def kubeconfig_transport(kubeconfig: str, context: str | None) -> ClientTransport:
    """That file (several joined with ``:``, as in KUBECONFIG) with ``context`` or its current one."""
    from deckhouse_gpu.adapters import kube_import  # noqa: PLC0415 - see the module docstring

    kube_import.install()  # before the first kubernetes import: see kube_import for why
    from kubernetes.client.api_client import ApiClient  # noqa: PLC0415
    from kubernetes.client.configuration import Configuration  # noqa: PLC0415
    from kubernetes.config.kube_config import load_kube_config  # noqa: PLC0415 - oauthlib & co

    configuration = Configuration()
    load_kube_config(  # type: ignore[no-untyped-call]
        config_file=kubeconfig, context=context, client_configuration=configuration, persist_config=False
    )
    configuration.retries = 1  # as PoolTransport, for the same reason
    configuration.keep_alive = True
    return ClientTransport(ApiClient(configuration))
