# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The lean import of the kubernetes client: little is loaded, everything is still reachable."""

import subprocess
import sys

PROBE = """
import sys
from deckhouse_gpu.adapters import kube_import
kube_import.install()  # what a kubeconfig transport does before it imports the client
from kubernetes.client.api_client import ApiClient
loaded = sorted(m for m in sys.modules if m.startswith("kubernetes.client.models."))
print("models", len(loaded))
print("apis", len([m for m in sys.modules if m.startswith("kubernetes.client.api.")]))
import kubernetes.client.api_response as response
print("response", response.ApiResponse.__module__)
from kubernetes.config import ConfigException  # a name of the real package initialiser
print("config", ConfigException.__name__)
from kubernetes.client.models import V1Node  # one model, loaded on demand
print("model", V1Node.__name__, len([m for m in sys.modules if m.startswith("kubernetes.client.models.")]))
import kubernetes.client
print("api_class", kubernetes.client.CoreV1Api.__name__)  # the full package, still reachable
"""


def test_only_what_the_adapter_needs_is_loaded_and_the_rest_stays_reachable():
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert lines["models"] == "0"
    assert lines["apis"] == "0"
    assert lines["response"] == "deckhouse_gpu.adapters.kube_import"
    assert lines["config"] == "ConfigException"
    assert lines["model"].startswith("V1Node ")
    assert int(lines["model"].split()[1]) < 60  # the model and its field types, not all ~800
    assert lines["api_class"] == "CoreV1Api"


def test_nothing_changes_when_the_full_package_was_imported_first():
    probe = "import kubernetes; from deckhouse_gpu.adapters import kube_import; kube_import.install(); " \
            "import kubernetes.client.api_response as r; print(r.ApiResponse.__module__)"  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "kubernetes.client.api_response"
