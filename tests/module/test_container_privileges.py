# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Least privilege of every container the module runs, as rendered by Helm over every value set,
and of the MPS daemon Pods gpu-handler creates at run time (domain/prepare/mps_pod.py).

test_helm_conventions.py already holds every container to a read-only root filesystem, seccomp
RuntimeDefault and, unless privileged, no privilege escalation and every capability dropped. Here:
each exception (a privileged container, a container running as root, a capability added back) is
listed below with its reason, and the template or code that grants it says why in a comment
(the phrase listed must be in the comments of the rendered object); a non-privileged container of
a root Pod runs as non-root itself unless it is listed; a Pod that holds no RBAC mounts no token.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest

from deckhouse_gpu.domain.prepare import mps_pod
from tests.module.helm_render_sets import containers, every, pod_spec
from tests.support.helm_chart import Rendered
from tests.support.rbac_rules import comments, documents, service_account_rules

# (workload, container): the phrase of the template's comment that says why.
PRIVILEGED = {
    # MIG instances are created and destroyed, cards bound to vfio-pci: the device itself changes.
    ("gpu-handler", "gpu-handler"): "creating MIG instances",
    # No device plugin hands DCGM's host engine /dev/nvidia*: it opens them itself.
    ("nvidia-dcgm-exporter", "dcgm"): "opens /dev/nvidia*",
}
# Non-privileged containers that run as root, and why.
ROOT = {
    # The kubelet's pod-resources socket, which maps GPUs to Pods, is root-owned.
    ("nvidia-dcgm-exporter", "dcgm-exporter"): "root-owned pod-resources socket",
}
# Capabilities added back to a non-privileged container, by (workload, container): none so far.
CAPABILITIES: dict[tuple[str, str], dict[str, str]] = {}


def _explained(rendered: Rendered, workload: dict[str, Any], phrase: str) -> bool:
    return any(
        obj["kind"] == workload["kind"] and obj["metadata"]["name"] == workload["metadata"]["name"]
        and phrase in comments(text)
        for obj, text in documents(rendered.text)
    )  # fmt: skip


@pytest.mark.parametrize("rendered", every("privileges"))
def test_every_exception_to_least_privilege_is_listed_and_explained(rendered: Rendered) -> None:
    for workload in rendered.workloads():
        name = workload["metadata"]["name"]
        pod = pod_spec(workload)["securityContext"]
        for container in containers(workload):
            key, security = (name, container["name"]), container["securityContext"]
            privileged = bool(security.get("privileged"))
            as_root = not security.get("runAsNonRoot", pod.get("runAsNonRoot"))
            assert privileged == (key in PRIVILEGED), key
            if privileged:
                assert _explained(rendered, workload, PRIVILEGED[key]), f"{key}: say why it is privileged"
            elif as_root:
                assert key in ROOT, f"{key} runs as root without being privileged"
                assert _explained(rendered, workload, ROOT[key]), f"{key}: say why it runs as root"
            else:
                assert key not in ROOT, f"{key} no longer runs as root: drop it from ROOT"
            added = set((security.get("capabilities") or {}).get("add") or [])
            assert added == set(CAPABILITIES.get(key, {})), key
            for capability in added:
                assert _explained(rendered, workload, CAPABILITIES[key][capability]), (key, capability)


@pytest.mark.parametrize("rendered", every("tokens"))
def test_a_pod_without_rbac_mounts_no_token(rendered: Rendered) -> None:
    for workload in rendered.workloads():
        spec = pod_spec(workload)
        account = spec.get("serviceAccountName", "default")
        if not service_account_rules(rendered, account):
            assert spec.get("automountServiceAccountToken") is False, workload["metadata"]["name"]
            assert rendered.get("ServiceAccount", account).get("automountServiceAccountToken") is False


def test_the_mps_daemon_pod_says_why_it_is_privileged() -> None:
    source = inspect.getsource(mps_pod)
    lines = source.splitlines()
    (at,) = [i for i, line in enumerate(lines) if re.search(r'"privileged": True', line)]
    above = " ".join(line.strip() for line in lines[max(0, at - 6) : at] if line.strip().startswith("#"))
    assert "Privileged:" in above
    assert "/dev/nvidia" in above
    assert '"automountServiceAccountToken": False' in source  # it never calls the API
