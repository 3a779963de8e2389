# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The simulated kubelet of MPS daemon Pods: the real adapter's Pods, run as a kubelet would."""

from __future__ import annotations

import pytest

from deckhouse_gpu.adapters.kube.mps_daemon_pods import KubeMpsDaemons
from deckhouse_gpu.domain.prepare.mps import daemon_for
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.ports.kube import PODS, Unavailable
from deckhouse_gpu.ports.sharing import MpsDaemons, SharingError
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.sim_mps_kubelet import SimulatedKubeletMps

NS = "d8-gpu"
PLUGIN = "/var/lib/kubelet/plugins/gpu.deckhouse.io"
PLAN = DevicePlan("gpu", "w1", "gpu-0000-17-00-0", "0000:17:00.0", "Physical", share_id="s", uuid="GPU-1")
DAEMON = daemon_for(PLAN, "w1", PLUGIN, "GPU-1")


@pytest.fixture
def kube() -> MemoryKube:
    return MemoryKube()


def kubelet(kube: MemoryKube, host_root=None) -> SimulatedKubeletMps:
    return SimulatedKubeletMps(KubeMpsDaemons(kube, NS, "w1", "image@sha256:0", "/"), kube, host_root)


def test_a_started_daemon_runs_and_is_ready_through_the_real_adapter(kube, tmp_path):
    port: MpsDaemons = kubelet(kube, tmp_path)
    assert port.start(DAEMON) is True
    pod = kube.get(PODS, DAEMON.name, NS)
    assert pod["status"]["phase"] == "Running"
    assert pod["spec"]["nodeName"] == "w1"  # the Pod the real adapter created
    assert port.ready(DAEMON) is True
    assert port.running() == {DAEMON.name: DAEMON}
    for directory in (DAEMON.pipe_dir, DAEMON.shm_dir, DAEMON.log_dir):
        assert (tmp_path / directory.lstrip("/")).is_dir()  # as DirectoryOrCreate makes them
    port.stop(DAEMON.name)
    assert port.running() == {}
    assert port.ready(DAEMON) is False


def test_a_pod_left_unrun_by_a_killed_handler_is_run_by_the_next(kube):
    KubeMpsDaemons(kube, NS, "w1", "image@sha256:0", "/").start(DAEMON)  # created, then SIGKILL
    successor = kubelet(kube)
    assert successor.start(DAEMON) is False
    assert successor.ready(DAEMON) is True


def test_without_a_host_root_no_directory_is_made(kube, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    kubelet(kube).start(DAEMON)
    assert list(tmp_path.iterdir()) == []


def test_a_crashed_daemon_fails_its_readiness_with_the_reason(kube):
    port = kubelet(kube)
    port.start(DAEMON)
    port.crash(DAEMON.name, "cannot open /dev/nvidiactl")
    with pytest.raises(SharingError, match=r"CrashLoopBackOff.*cannot open /dev/nvidiactl"):
        port.ready(DAEMON)


def test_an_api_failure_while_running_it_is_a_sharing_error(kube):
    port = kubelet(kube)
    kube.fail_next("patch", Unavailable("etcd timeout"))
    with pytest.raises(SharingError, match=r"simulated kubelet.*etcd timeout"):
        port.start(DAEMON)
    assert port.ready(DAEMON) is True  # asked again, it runs the Pod
