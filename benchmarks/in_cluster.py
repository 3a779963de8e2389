# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Runs a component the way it runs in a pod: in-cluster config, https, a service-account token.

Only the service account directory is redirected (a pod has it under /var/run/secrets); the
client configuration code path is the production one, so the memory figure is the pod's.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from testkit.fake_apiserver import FakeApiServer

LAUNCHER = """
import sys
from pathlib import Path
from deckhouse_gpu.adapters import kube_transport
kube_transport.ACCOUNT_DIR = Path(sys.argv[1])
from deckhouse_gpu.cmd.{module} import main
sys.exit(main(sys.argv[2:]))
"""


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
def pod_api_server(workdir: Path) -> Iterator[tuple[FakeApiServer, Path, dict[str, str]] | None]:
    """An HTTPS fake API server, the CA a pod would trust and the environment a pod would see;
    None when there is no openssl to make the certificate."""
    tls = tls_context(workdir)
    if tls is None:
        print("  no openssl binary: the in-cluster (https) run is skipped")
        yield None
        return
    context, ca = tls
    with FakeApiServer(tls=context) as server:
        host, _, port = server.url.removeprefix("https://").rpartition(":")
        yield server, ca, {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}


def launcher_argv(module: str, workdir: Path, ca: Path, argv: list[str]) -> list[str]:
    account = workdir / "serviceaccount"
    account.mkdir(exist_ok=True)
    (account / "token").write_text("bench-token")
    shutil.copyfile(ca, account / "ca.crt")
    return ["-c", LAUNCHER.replace("{module}", module), str(account), *argv]
