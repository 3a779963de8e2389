# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Runs a component the way it runs in a pod: in-cluster config, https, a service-account token
(testkit/in_cluster.py); the client configuration code path is the production one, so the memory
figure is the pod's.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from deckhouse_gpu.ports.kube import Resource
from testkit import in_cluster
from testkit.fake_apiserver import FakeApiServer


def tls_context(workdir: Path) -> tuple[ssl.SSLContext, Path] | None:
    """A self-signed certificate for 127.0.0.1; None when no openssl binary is there."""
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    key, cert = workdir / "apiserver.key", workdir / "apiserver.crt"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context, cert


@contextmanager
def pod_api_server(
    workdir: Path, resources: Iterable[Resource] | None = None
) -> Iterator[tuple[FakeApiServer, Path, dict[str, str]] | None]:
    """An HTTPS fake API server, the CA a pod would trust and the environment a pod would see;
    None when there is no openssl to make the certificate."""
    tls = tls_context(workdir)
    if tls is None:
        print("  no openssl binary: the in-cluster (https) run is skipped")
        yield None
        return
    context, ca = tls
    fake = (
        FakeApiServer(tls=context) if resources is None else FakeApiServer(resources=resources, tls=context)
    )
    with fake as server:
        host, _, port = server.url.removeprefix("https://").rpartition(":")
        yield server, ca, {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}


def launcher_argv(module: str, workdir: Path, ca: Path, argv: list[str]) -> list[str]:
    account = in_cluster.service_account(workdir / "serviceaccount", ca.read_bytes(), "bench-token")
    return in_cluster.launcher_argv(module, account, argv)
