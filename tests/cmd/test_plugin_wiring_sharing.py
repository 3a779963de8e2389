# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""How gpu-handler run wires sharing: the real card settings and daemon Pods on a real node; the
same Pods run by a simulated kubelet, and settings kept under the host root, on a simulated one."""

from __future__ import annotations

import pytest

from deckhouse_gpu.adapters.kube.mps_daemon_pods import KubeMpsDaemons
from deckhouse_gpu.adapters.nvml.card_settings_nvidia import NvidiaCardSettings
from deckhouse_gpu.adapters.nvml.nvml_real import RealNVML
from deckhouse_gpu.cmd.gpu_handler import main as handler
from deckhouse_gpu.cmd.gpu_handler import wiring as handler_wiring
from deckhouse_gpu.cmd.gpu_handler.plugin_wiring import build_prepare, sharing_host
from deckhouse_gpu.domain.config.mps_sharing import COMPUTE_MODE
from deckhouse_gpu.domain.prepare.mps import daemon_for
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.kube import PODS
from deckhouse_gpu.ports.sharing import ComputeMode
from deckhouse_gpu.simulator import gpu_handler as gpu_handler_sim
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.sim_card_settings import STATE_FILE, SimCardSettings
from deckhouse_gpu.simulator.host.sim_mps_kubelet import SimulatedKubeletMps
from tests.e2e.sim_node import CARD_A, CARD_B, NODE, build_host

PLUGIN_DIR = "/var/lib/kubelet/plugins/gpu.deckhouse.io"
IMAGE = "registry.example.com/gpu@sha256:" + "b" * 64


@pytest.fixture(autouse=True)
def deployed_env(monkeypatch):
    """The environment the chart gives gpu-handler (the namespace through the downward API)."""
    monkeypatch.setenv("POD_NAMESPACE", "d8-gpu-test")
    monkeypatch.setenv("MPS_IMAGE", IMAGE)
    monkeypatch.delenv("MPS_IMAGE_PULL_SECRET", raising=False)


def test_a_simulated_node_keeps_settings_under_its_host_root_and_runs_the_real_pods(tmp_path):
    root = tmp_path / "host"
    build_host(root)
    args = gpu_handler_sim.parse_args(
        ["run", "--node-name", NODE, "--nvml-sim", "a30,a30", "--host-root", str(root)]
    )
    kube = MemoryKube()
    nvml = handler_wiring.make_nvml(args, [CARD_A, CARD_B])
    host = sharing_host(args, kube, nvml)
    assert host.plugin_dir == PLUGIN_DIR  # as the host sees it, never under --host-root
    assert host.node == NODE
    assert isinstance(host.settings, SimCardSettings)
    host.settings.set_compute_mode(CARD_A, ComputeMode.EXCLUSIVE_PROCESS)
    assert (root / STATE_FILE).exists()
    again = sharing_host(args, kube, handler_wiring.make_nvml(args, [CARD_A, CARD_B]))
    assert again.settings.read(CARD_A, COMPUTE_MODE) == ComputeMode.EXCLUSIVE_PROCESS  # a successor sees it
    assert isinstance(host.daemons, SimulatedKubeletMps)
    plan = DevicePlan("gpu", NODE, "gpu-0000-17-00-0", CARD_A, "Physical", share_id="s", uuid="GPU-1")
    daemon = daemon_for(plan, NODE, host.plugin_dir, "GPU-1")
    assert host.daemons.start(daemon) is True
    assert host.daemons.ready(daemon) is True
    pod = kube.get(PODS, daemon.name, "d8-gpu-test")
    assert pod["spec"]["containers"][0]["image"] == IMAGE
    assert (root / daemon.pipe_dir.lstrip("/")).is_dir()


def test_a_simulated_node_without_a_host_root_keeps_settings_in_memory(tmp_path):
    args = gpu_handler_sim.parse_args(["run", "--node-name", NODE, "--nvml-sim", "a30"])
    host = sharing_host(args, MemoryKube(), handler_wiring.make_nvml(args, [CARD_A]))
    assert isinstance(host.settings, SimCardSettings)
    assert host.settings.path is None
    assert host.settings.compute_mode(CARD_A) == ComputeMode.DEFAULT
    assert isinstance(host.daemons, SimulatedKubeletMps)
    assert host.daemons.host_root is None


def test_a_real_node_sets_cards_through_nvml_and_nvidia_smi_under_its_driver_root(monkeypatch):
    monkeypatch.setenv("MPS_IMAGE_PULL_SECRET", "gpu-module-registry")
    monkeypatch.setenv("NVIDIA_DRIVER_ROOT_MOUNT", "/driver-root-parent/driver")
    monkeypatch.setenv("HOST_DRIVER_ROOT", "/run/nvidia/driver")
    args = handler.parse_args(["run", "--node-name", "w1"])
    host = sharing_host(args, MemoryKube(), RealNVML())  # nothing is asked of NVML yet
    assert isinstance(host.settings, NvidiaCardSettings)
    assert str(host.settings.driver_root.mount) == "/driver-root-parent/driver"
    assert isinstance(host.daemons, KubeMpsDaemons)
    daemons = host.daemons
    assert (daemons.namespace, daemons.node, daemons.image) == ("d8-gpu-test", "w1", IMAGE)
    assert (daemons.driver_root, daemons.pull_secret) == ("/run/nvidia/driver", "gpu-module-registry")
    assert host.plugin_dir == PLUGIN_DIR


def test_build_prepare_gives_the_service_its_sharing_host(tmp_path):
    root = tmp_path / "host"
    build_host(root)
    args = gpu_handler_sim.parse_args(
        [
            "run",
            "--node-name",
            NODE,
            "--nvml-sim",
            "a30,a30",
            "--host-root",
            str(root),
            "--cdi-root",
            "/etc/cdi",
        ]
    )
    nvml = handler_wiring.make_nvml(args, [CARD_A, CARD_B])
    service, _, _ = build_prepare(args, MemoryKube(), nvml, SystemClock(), offers=None)
    assert service.sharing is not None
    assert isinstance(service.sharing.settings, SimCardSettings)
    assert service.sharing.settings.path == root / STATE_FILE
    assert service.sharing.plugin_dir == PLUGIN_DIR
