# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Runs a component the way it runs in a pod: in-cluster config, https, a service-account token.

Only the token and CA file paths are redirected (a pod has them under /var/run/secrets); the
client configuration code path is the production one, so the memory figure is the pod's.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

LAUNCHER = """
import sys
from deckhouse_gpu.adapters import kube_import
kube_import.install()
from kubernetes.config import incluster_config
incluster_config.SERVICE_TOKEN_FILENAME = sys.argv[1]
incluster_config.SERVICE_CERT_FILENAME = sys.argv[2]
from deckhouse_gpu.cmd.{module} import main
sys.exit(main(sys.argv[3:]))
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


def launcher_argv(module: str, workdir: Path, ca: Path, argv: list[str]) -> list[str]:
    token = workdir / "token"
    token.write_text("bench-token")
    return ["-c", LAUNCHER.replace("{module}", module), str(token), str(ca), *argv]
