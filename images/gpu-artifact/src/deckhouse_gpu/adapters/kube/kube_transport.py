# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""How requests reach the API server: the ``kubernetes`` client's configuration and REST layer
(urllib3), the same in a pod and with a kubeconfig.

The library loads the configuration: in a pod the service account's token and CA and
KUBERNETES_SERVICE_HOST/PORT (its in-cluster loader re-reads the rotated token once a minute), with
a kubeconfig its contexts, client certificates, exec credential plugins and OIDC (and a user's
``tokenFile``, which ``TokenFile`` reads again once a minute as client-go does). One code path
means the process tests, the chaos run and a local run send their requests exactly as a pod does.
``ClientKube`` puts its own raw-JSON requests, merge patches, Retry-After handling and watch decoding
on top of it: only ``ApiClient``'s request building and ``rest_client`` are used, never the generated
API methods or models.

The package costs about 20 MiB per process over a transport on the standard library (its
``__init__`` loads the kubeconfig, OAuth, dynamic-client and websocket code and pydantic whatever
is used; ``make bench``, docs/RELIABILITY.md). The home-made transport that saved it was the one
path no test ran; the library's in-cluster and kubeconfig handling is what millions of clients run.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import urllib3
from kubernetes.client.api_client import ApiClient
from kubernetes.client.configuration import Configuration
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import InClusterConfigLoader
from kubernetes.config.kube_config import KubeConfigMerger, load_kube_config

from deckhouse_gpu.ports.kube import Object, Unavailable

if TYPE_CHECKING:
    from urllib3 import BaseHTTPResponse

# Where the kubelet mounts the pod's service account (the library's in-cluster default). A module
# attribute, read at each call, so that the tests and benchmarks can run a component's production
# entry point with their own directory (testkit/in_cluster.py) and nothing else changed.
ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class InClusterConfigError(ValueError):
    """This process is not in a pod, or the pod's service account files are missing."""


class Headers(Protocol):
    def get(self, name: str, /) -> str | None:
        """A header's value by its name in any case."""
        ...


class Response(Protocol):
    """What ClientKube reads of a response; reading a torn body raises an ``OSError``, a read that
    got nothing for the read timeout a ``TimeoutError``."""

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


class ClientResponse:
    """A urllib3 response whose read errors are ``OSError``s, as ClientKube expects of any transport."""

    def __init__(self, response: BaseHTTPResponse) -> None:
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
        except urllib3.exceptions.ReadTimeoutError as error:
            raise TimeoutError(str(error)) from error  # nothing arrived for the read timeout
        except urllib3.exceptions.HTTPError as error:
            raise ConnectionError(str(error)) from error

    def close(self) -> None:
        self._response.close()

    def release_conn(self) -> None:
        self._response.release_conn()


class ClientTransport:
    """The ``kubernetes`` client's ApiClient: its authentication (with the configuration's token
    refresh hook) on each request, its urllib3 pool for the connection."""

    def __init__(self, api: ApiClient, on_unauthorized: Callable[[], None] | None = None) -> None:
        self._api = api
        self._on_unauthorized = on_unauthorized

    def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        headers: Mapping[str, str],
        body: Object | None,
        timeout: tuple[float, float],
    ) -> ClientResponse:
        try:
            # The credentials are refreshed here (the configuration's hook): the token file re-read,
            # an exec plugin run again.
            request = self._api.param_serialize(
                method=method,
                resource_path=path,
                query_params=list(query),
                header_params=dict(headers),
                body=body,
                auth_settings=["BearerToken"],
            )
        except (ConfigException, OSError) as error:
            raise Unavailable(f"{method} {path}: cannot load the credentials: {error}") from error
        try:
            response: BaseHTTPResponse = self._api.call_api(*request, _request_timeout=timeout).response
        except (urllib3.exceptions.HTTPError, OSError) as error:  # refused, reset, timed out
            raise Unavailable(f"{method} {path}: {error}") from error
        except ApiException as error:  # how the client reports a failed TLS handshake
            raise Unavailable(f"{method} {path}: {error.reason}") from error
        if response.status == 401 and self._on_unauthorized is not None:
            self._on_unauthorized()
        return ClientResponse(response)

    @property
    def server(self) -> str:
        return str(self._api.configuration.host)

    def close(self) -> None:
        self._api.close()  # type: ignore[no-untyped-call]  # unannotated upstream


def in_cluster_transport(
    environ: Mapping[str, str] | None = None, account_dir: Path | None = None
) -> ClientTransport:
    """The pod's API server (KUBERNETES_SERVICE_HOST/PORT), its token and its CA, loaded by the
    library's in-cluster loader."""
    env = os.environ if environ is None else environ
    account_dir = ACCOUNT_DIR if account_dir is None else account_dir
    if not env.get("KUBERNETES_SERVICE_HOST") or not env.get("KUBERNETES_SERVICE_PORT"):
        raise InClusterConfigError(
            "not in a pod: KUBERNETES_SERVICE_HOST/PORT are not set;"
            " give --kubeconfig to run outside a cluster"
        )

    def load(configuration: Configuration) -> None:
        loader = InClusterConfigLoader(  # type: ignore[no-untyped-call]
            token_filename=str(account_dir / "token"),
            cert_filename=str(account_dir / "ca.crt"),
            environ=env,
        )
        loader.load_and_set(configuration)  # type: ignore[no-untyped-call]

    configuration = Configuration()
    try:
        load(configuration)
    except ConfigException as error:
        raise InClusterConfigError(
            f"the pod's service account in {account_dir}: {error} (automount off?)"
        ) from error

    def reload() -> None:
        # A 401 means the token this process holds is no longer accepted (a rotated one that
        # expired, a recreated service account): read the file again now rather than wait out the
        # minute, as client-go resets its cached token on a 401. The request is not repeated: the
        # caller's backoff sends the next one. A file caught between the kubelet's remove and write
        # keeps the token held.
        with contextlib.suppress(ConfigException, OSError):
            load(configuration)

    return ClientTransport(_api_client(configuration), on_unauthorized=reload)


def kubeconfig_transport(kubeconfig: str, context: str | None) -> ClientTransport:
    """That file (several joined with ``:``, as in KUBECONFIG) with ``context`` or its current one."""
    configuration = Configuration()
    load_kube_config(  # type: ignore[no-untyped-call]
        config_file=kubeconfig, context=context, client_configuration=configuration, persist_config=False
    )
    path = _token_file(kubeconfig, context)
    if path is None:
        return ClientTransport(_api_client(configuration))
    token = TokenFile(path)
    configuration.refresh_api_key_hook = token.apply  # type: ignore[assignment]  # typed None upstream
    return ClientTransport(_api_client(configuration), on_unauthorized=token.expire)


# How long a token read from a kubeconfig's ``tokenFile`` is sent before the file is read again:
# client-go's period for BearerTokenFile (and the in-cluster loader's for the pod's token).
TOKEN_FILE_PERIOD_SECONDS = 60.0


class TokenFile:
    """A kubeconfig user's ``tokenFile``, read again once a minute and after a 401, as client-go
    reads BearerTokenFile (and, as there, in preference to an inline ``token``). The library's
    kubeconfig loader reads it once at start: a token that something rotates in that file (a
    projected ServiceAccount token, a sidecar's) would be sent after it expired or its bound
    object went. A file that cannot be read keeps the token held, as client-go's cached source."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._token: str | None = None
        self._read_at = float("-inf")

    def apply(self, configuration: Configuration) -> None:
        """The configuration's refresh hook: called as each request is built."""
        now = time.monotonic()
        if now - self._read_at >= TOKEN_FILE_PERIOD_SECONDS:
            with contextlib.suppress(OSError, UnicodeDecodeError):
                token = self.path.read_text().strip()
                if token:
                    self._token, self._read_at = token, now
        if self._token is not None:
            configuration.api_key["BearerToken"] = f"Bearer {self._token}"

    def expire(self) -> None:
        """A 401: the token held is no longer accepted; the next request reads the file."""
        self._read_at = float("-inf")


def _token_file(kubeconfig: str, context: str | None) -> Path | None:
    """The ``tokenFile`` of the user ``context`` (or the current one) names, relative to the
    kubeconfig that user is in; None when the user has none."""
    config = KubeConfigMerger(kubeconfig).config  # type: ignore[no-untyped-call]
    name = context or config["current-context"]
    user_name = config["contexts"].get_with_name(name)["context"].safe_get("user")
    if not user_name:
        return None
    user = config["users"].get_with_name(user_name, safe=True)
    if user is None or not user["user"].safe_get("tokenFile"):
        return None
    base = Path(user.path).resolve().parent if user.path else Path()
    return base / str(user["user"]["tokenFile"])


def _api_client(configuration: Configuration) -> ApiClient:
    # One retry covers a pooled keep-alive connection the server had closed; more would multiply
    # the timeout when the server is down, and the services back off and retry themselves.
    configuration.retries = 1
    # TCP keepalive probes, as client-go sends: a long watch notices a vanished server.
    configuration.keep_alive = True
    return ApiClient(configuration)
