# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-mps-daemon, the process of an MPS daemon Pod: run, the readiness probe and the preStop hook,
over a driver root with a stand-in nvidia-cuda-mps-control."""

from __future__ import annotations

import subprocess
import sys

import pytest

from deckhouse_gpu.cmd import gpu_mps_daemon as mps_daemon
from deckhouse_gpu.domain.prepare.mps_pod import LAUNCHER
from tests.support.imported_packages import heavy_packages_imported
from tests.support.mps_driver_root import driver_root, recorded


def test_the_pod_runs_the_console_script_the_package_installs():
    from tests.module.test_werf_python_images import _pyproject_scripts  # noqa: PLC0415

    assert _pyproject_scripts()[LAUNCHER] == "deckhouse_gpu.cmd.gpu_mps_daemon:main"


def test_run_execs_the_drivers_control_daemon_in_the_foreground(tmp_path):
    root = driver_root(tmp_path / "root")
    done = subprocess.run(
        [sys.executable, "-m", "deckhouse_gpu.cmd.gpu_mps_daemon", "run"],
        input="get_default_active_thread_percentage\n",
        env={
            "NVIDIA_DRIVER_ROOT_MOUNT": str(root),  # as the Pod sets it
            "CUDA_VISIBLE_DEVICES": "GPU-1",
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "100.0"  # the stand-in answered: the process became it
    seen = recorded(root)
    assert seen["argv"] == "-f"
    assert seen["CUDA_VISIBLE_DEVICES"] == "GPU-1"
    assert seen["PATH"] == f"{root}/usr/bin:/usr/bin:/bin"
    assert seen["LD_PRELOAD"].endswith("libnvidia-ml.so.580.95.05")
    assert f"starting {root}/usr/bin/nvidia-cuda-mps-control -f" in done.stderr


def test_ready_passes_once_the_daemon_answers_with_a_number(tmp_path):
    root = driver_root(tmp_path / "root", answer="100.0")
    assert mps_daemon.main(["--driver-root-mount", str(root), "ready"], environ={}) == 0
    assert recorded(root)["command"] == "get_default_active_thread_percentage"


@pytest.mark.parametrize(("answer", "code"), [("Cannot find MPS control daemon process", 0), ("", 1)])
def test_ready_fails_while_no_daemon_answers(tmp_path, capsys, answer, code):
    root = driver_root(tmp_path / "root", answer=answer, code=code)
    assert mps_daemon.main(["--driver-root-mount", str(root), "ready"], environ={}) == 1
    assert "gpu-mps-daemon ready:" in capsys.readouterr().err


def test_quit_asks_the_daemon_to_stop(tmp_path):
    root = driver_root(tmp_path / "root")
    assert mps_daemon.main(["--driver-root-mount", str(root), "quit"], environ={}) == 0
    assert recorded(root)["command"] == "quit"


def test_a_driver_root_without_mps_fails_saying_what_is_missing(tmp_path, capsys):
    assert mps_daemon.main(["--driver-root-mount", str(tmp_path), "run"], environ={}) == 1
    err = capsys.readouterr().err
    assert err.startswith("gpu-mps-daemon run: nvidia-cuda-mps-control, nvidia-cuda-mps-server, libcuda.so.1")
    assert "the driver's MPS part is not installed there" in err


def test_it_imports_neither_the_kubernetes_client_nor_grpc():
    # The probe runs every few seconds in the daemon's container, whose memory the MPS server shares.
    heavy = ("kubernetes", "grpc", "yaml", "pynvml")
    assert heavy_packages_imported("deckhouse_gpu.cmd.gpu_mps_daemon", heavy) == []
