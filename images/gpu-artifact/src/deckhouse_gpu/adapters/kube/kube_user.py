# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A client for a person at a terminal: kubectl's kubeconfig, context and namespace (kubectl gpu,
DESIGN.md D12).

The components run in the cluster on their service account (``kube_client.load_kube``); a
kubectl plugin runs as the user, so it reads the kubeconfig kubectl would (the caller resolves
``--kubeconfig``, ``KUBECONFIG`` and ``~/.kube/config``) and its context's namespace.
"""

from __future__ import annotations

from deckhouse_gpu.adapters.kube.kube_client import ClientKube, load_kube
from deckhouse_gpu.ports.kube import KubeError


class KubeconfigError(KubeError):
    """The kubeconfig cannot be used: missing, malformed, or without the context asked for."""


def load_user_kube(
    kubeconfig: str, context: str | None = None, connect_timeout: float = 5.0, read_timeout: float = 30.0
) -> tuple[ClientKube, str]:
    """A client as kubectl makes one for a user, and the namespace its context names ("default"
    when none): what a command uses without ``-n``."""
    from kubernetes.config import ConfigException  # noqa: PLC0415
    from kubernetes.config.kube_config import list_kube_config_contexts  # noqa: PLC0415

    try:
        contexts, current = list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]
        chosen = current if context is None else next((c for c in contexts if c.get("name") == context), None)
        if chosen is None:
            raise KubeconfigError(f'context "{context}" not found in kubeconfig {kubeconfig}')
        namespace = str((chosen.get("context") or {}).get("namespace") or "default")
        client = load_kube(
            kubeconfig, context=context, connect_timeout=connect_timeout, read_timeout=read_timeout
        )
        return client, namespace
    except (ConfigException, OSError, ValueError, KeyError, TypeError) as error:
        raise KubeconfigError(f"kubeconfig {kubeconfig}: {error}") from error
