# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""How requests reach the API server: the standard library for a pod's service account, or the
``kubernetes`` client's transport for a kubeconfig.

In a pod every component talks to one server with one bearer token and one CA: ``http.client`` does
that with nothing else loaded (``kube_http``). The ``kubernetes`` package (its configuration,
ApiClient, pydantic, dateutil) and urllib3 cost about 15 MiB per process on every GPU node (``make
bench`` prints the figures), so they are imported only for a kubeconfig, where exec plugins, OIDC
and client certificates are worth it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from deckhouse_gpu.adapters.kube_http import StdlibTransport
from deckhouse_gpu.ports.kube import Object, Unavailable

ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
# The projected token is rotated by the kubelet well before it expires; re-reading it once a minute
# is what client-go and the kubernetes client do.
TOKEN_REREAD_SECONDS = 60.0


class InClusterConfigError(ValueError):
    """This process is not in a pod, or the pod's service account files are missing."""


class Headers(Protocol):
    def get(self, name: str, /) -> str | None:
        """A header's value by its name in any case (both urllib3's and http.client's do that)."""
        ...


class Response(Protocol):
    """What ClientKube reads of a response; reading a torn body raises an ``OSError``."""

    status: int

    @property
    def headers(self) -> Headers: ...

    @property
    def data(self) -> bytes: ...

    def read1(self, size: int) -> bytes: ...

    def close(self) -> None: ...

    def release_conn(self) -> None: ...


class Transport(Protocol):
    def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        headers: Mapping[str, str],
        body: Object | None,
        timeout: tuple[float, float],
    ) -> Response:
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


def in_cluster_transport(
    environ: Mapping[str, str] | None = None, account_dir: Path | None = None
) -> StdlibTransport:
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
    return StdlibTransport(server, ServiceAccountToken(token), str(ca))


def kubeconfig_transport(kubeconfig: str, context: str | None) -> Transport:
    """That file (several joined with ``:``, as in KUBECONFIG) with ``context`` or its current one."""
    from deckhouse_gpu.adapters import kube_import  # noqa: PLC0415 - see the module docstring

    kube_import.install()  # before the first kubernetes import: see kube_import for why
    from kubernetes.client.api_client import ApiClient  # noqa: PLC0415
    from kubernetes.client.configuration import Configuration  # noqa: PLC0415
    from kubernetes.config.kube_config import load_kube_config  # noqa: PLC0415 - oauthlib & co

    from deckhouse_gpu.adapters.kube_client_transport import ClientTransport  # noqa: PLC0415

    configuration = Configuration()
    load_kube_config(  # type: ignore[no-untyped-call]
        config_file=kubeconfig, context=context, client_configuration=configuration, persist_config=False
    )
    # One retry covers a pooled keep-alive connection the server had closed; more would multiply
    # the timeout when the server is down, and the services back off and retry themselves.
    configuration.retries = 1
    configuration.keep_alive = True
    return ClientTransport(ApiClient(configuration))
