# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A component's production entry point run as in a pod: the in-cluster configuration of the
``kubernetes`` client (KUBERNETES_SERVICE_HOST/PORT, the service account's token and CA), over HTTPS.

Only the service account directory is redirected (a pod has it under /var/run/secrets, the
library's fixed default): ``kube_transport.ACCOUNT_DIR`` is set before the entry point runs, and
everything after it is the code a pod runs.
"""

from __future__ import annotations

from pathlib import Path

LAUNCHER = """
import sys
from pathlib import Path
# The image installs requirements.txt alone; kubernetes_validate, a test dependency here, is not in
# it, and kubernetes.dynamic imports it when it is there (about 8 MiB that no pod has).
sys.modules["kubernetes_validate"] = None
from deckhouse_gpu.adapters.kube import kube_transport
kube_transport.ACCOUNT_DIR = Path(sys.argv[1])
from deckhouse_gpu.cmd.{module} import main
sys.exit(main(sys.argv[2:]))
"""


def service_account(directory: Path, ca_pem: bytes, token: str) -> Path:
    """The files the kubelet mounts into a pod: ``token`` and ``ca.crt``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(token)  # the kubelet writes it without a newline
    (directory / "ca.crt").write_bytes(ca_pem)
    return directory


def launcher_argv(module: str, account: Path, argv: list[str]) -> list[str]:
    """``python`` arguments that run ``deckhouse_gpu.cmd.<module>``'s main with ``argv`` as in a pod
    whose service account is in ``account``; the environment must carry KUBERNETES_SERVICE_*."""
    return ["-c", LAUNCHER.replace("{module}", module), str(account), *argv]
