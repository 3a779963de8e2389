# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A real Prometheus server on loopback for the tests: the binary tools/fetch-promtool puts in
.tools/ (the distribution's prometheus package), a scrape configuration of static targets, the
module's rule files, and its HTTP API."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from testkit.waiting import free_port
from tests.support.prometheus_rules import ROOT

INTERVAL = "1s"


def prometheus() -> Path:
    path = Path(os.environ.get("PROMETHEUS") or ROOT / ".tools" / "prometheus")
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run tools/fetch-promtool (make test does)")
    return path


@dataclass(frozen=True)
class Target:
    job: str
    address: str  # host:port
    labels: dict[str, str] = field(default_factory=dict)


class ApiError(Exception):
    pass


class PrometheusServer:
    """Scrapes ``targets`` and evaluates ``rules`` every second; a context manager."""

    def __init__(self, workdir: Path, targets: list[Target], rules: dict[str, str]) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        (workdir / "rules").mkdir(parents=True, exist_ok=True)
        for name, text in rules.items():
            (workdir / "rules" / name).write_text(text)
        jobs: dict[str, list[dict[str, Any]]] = {}
        for target in targets:
            jobs.setdefault(target.job, []).append({"targets": [target.address], "labels": target.labels})
        config = {
            "global": {
                "scrape_interval": INTERVAL,
                "scrape_timeout": INTERVAL,
                "evaluation_interval": INTERVAL,
            },
            "rule_files": [str(workdir / "rules" / "*.yaml")],
            # honor_labels as the module's ServiceMonitors and PodMonitors set it: gpu-handler's
            # prepared-device info keeps the workload's namespace and pod.
            "scrape_configs": [
                {"job_name": job, "honor_labels": True, "static_configs": static}
                for job, static in jobs.items()
            ],
        }
        (workdir / "prometheus.yaml").write_text(yaml.safe_dump(config))
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> PrometheusServer:
        log = (self.workdir / "prometheus.log").open("wb")
        self.process = subprocess.Popen(
            [
                str(prometheus()),
                f"--config.file={self.workdir / 'prometheus.yaml'}",
                f"--storage.tsdb.path={self.workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 30
        while not self._ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prometheus did not start: {self.log()}")
            time.sleep(0.05)
        return self

    def __exit__(self, *_: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log(self) -> str:
        return (self.workdir / "prometheus.log").read_text(errors="replace")[-4000:]

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as response:  # noqa: S310 - loopback
                return bool(response.status == 200)
        except OSError:
            return False

    def api(self, path: str, **params: str | list[str]) -> Any:
        """The ``data`` of a successful API answer; ApiError with Prometheus' message otherwise."""
        query = urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as response:  # noqa: S310
                answer = json.loads(response.read())
        except urllib.error.HTTPError as error:
            answer = json.loads(error.read() or b"{}")
        if answer.get("status") != "success":
            raise ApiError(f"{answer.get('errorType')}: {answer.get('error')}")
        return answer["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        data = self.api("query", query=expr)
        return (
            list(data["result"])
            if data["resultType"] in ("vector", "matrix")
            else [{"value": data["result"]}]
        )

    def names(self) -> set[str]:
        return set(self.api("label/__name__/values"))

    def label_values(self, label: str, metric: str) -> list[str]:
        return list(self.api(f"label/{label}/values", **{"match[]": [metric]}))
