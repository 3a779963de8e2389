# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What the tests of the kubelet plugin over real Unix sockets (tests/adapters/test_kubelet_grpc*.py)
share: a scripted DRA service, the plugin's socket paths under a short temporary root, and the
fixtures ``root``, ``kubelet`` (a fake kubelet that uses protoc's stubs) and ``plugins`` (stopped
after the test).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deckhouse_gpu.adapters.kubelet.kubelet_grpc import RunningPlugin, start_plugin
from deckhouse_gpu.ports.dra_plugin import ClaimRef, PluginPaths, PreparedDevice, PrepareResult
from tests.support.fake_kubelet import FakeKubelet

DRIVER = "gpu.deckhouse.io"
OLD_POD = "0b5f3c2a-6d7e-4f80-9a1b-2c3d4e5f6a70"
NEW_POD = "7e1d9c8b-5a4f-4e3d-8c2b-1a0f9e8d7c61"
CLAIM_A = ClaimRef(namespace="team-a", uid="uid-a", name="claim-a")
CLAIM_B = ClaimRef(namespace="team-b", uid="uid-b", name="claim-b")


def prepared_device(name: str, share_id: str | None = None) -> PreparedDevice:
    return PreparedDevice(
        request_names=("gpu",),
        pool_name="node-a",
        device_name=name,
        cdi_device_ids=(f"{DRIVER}/gpu={name}",),
        share_id=share_id,
    )


class FakeDRAService:
    """Answers from ``results``; ``fail_times`` makes a claim fail that many calls first."""

    def __init__(self) -> None:
        self.results: dict[str, PrepareResult] = {}
        self.fail_times: dict[str, int] = {}
        self.raise_error: Exception | None = None
        self.omit: set[str] = set()
        self.delay = 0.0
        self.prepared: list[list[str]] = []
        self.unprepared: list[list[str]] = []

    def prepare(self, claims: list[ClaimRef]) -> dict[str, PrepareResult]:
        self.prepared.append([c.uid for c in claims])
        time.sleep(self.delay)
        if self.raise_error:
            raise self.raise_error
        answer = {}
        for claim in claims:
            if self.fail_times.get(claim.uid, 0) > 0:
                self.fail_times[claim.uid] -= 1
                answer[claim.uid] = PrepareResult(error="device busy")
            elif claim.uid not in self.omit:
                answer[claim.uid] = self.results.get(
                    claim.uid, PrepareResult(devices=(prepared_device("gpu-0"),))
                )
        answer["uid-not-asked-for"] = PrepareResult(devices=(prepared_device("gpu-9"),))
        return answer

    def unprepare(self, claims: list[ClaimRef]) -> dict[str, str]:
        self.unprepared.append([c.uid for c in claims])
        if self.raise_error:
            raise self.raise_error
        return {c.uid: "" for c in claims if c.uid not in self.omit}


@pytest.fixture
def root() -> Iterator[Path]:
    # Not tmp_path: a socket path must fit sun_path (107 bytes), and pytest's paths are long.
    path = Path(tempfile.mkdtemp(prefix="kgrpc", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def plugin_paths(root: Path, pod_uid: str | None = None) -> PluginPaths:
    return PluginPaths(
        registry_dir=str(root / "plugins_registry"),
        plugin_dir=str(root / "plugins" / DRIVER),
        driver=DRIVER,
        pod_uid=pod_uid,
    )


@pytest.fixture
def kubelet(root: Path) -> Iterator[FakeKubelet]:
    fake = FakeKubelet(str(root / "plugins_registry"), timeout=10.0)
    yield fake
    fake.close()


@pytest.fixture
def plugins() -> Iterator[list[RunningPlugin]]:
    started: list[RunningPlugin] = []
    yield started
    for plugin in started:
        plugin.stop(grace=0)


def start_tracked(plugins: list[RunningPlugin], service: Any, paths: PluginPaths) -> RunningPlugin:
    plugin = start_plugin(service, paths)
    plugins.append(plugin)
    return plugin


def is_socket(path: str) -> bool:
    return os.path.exists(path) and stat.S_ISSOCK(os.lstat(path).st_mode)
