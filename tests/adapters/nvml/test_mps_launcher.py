# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Running the driver's MPS control daemon from a mounted driver root, with a stand-in
nvidia-cuda-mps-control (a shell script of builtins) in a driver tree laid out as a host's."""

from __future__ import annotations

import subprocess
from typing import NoReturn

import pytest

from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot
from deckhouse_gpu.adapters.nvml.mps_launcher import (
    LaunchError,
    answers,
    exec_daemon,
    find_binaries,
    send,
)
from deckhouse_gpu.simulator.host.driver_tree import link
from tests.support.mps_driver_root import LIB, driver_root, recorded


def test_the_binaries_and_libraries_are_found_as_links_lead_in_the_root(tmp_path):
    root = driver_root(tmp_path / "root")
    found = find_binaries(MountedDriverRoot(root))
    assert found.control == root / "usr/bin/nvidia-cuda-mps-control"
    assert found.server == root / "usr/bin/nvidia-cuda-mps-server"
    assert found.libraries == (root / LIB / "libcuda.so.580.95.05", root / LIB / "libnvidia-ml.so.580.95.05")
    env = found.environment({"PATH": "/opt/deckhouse-gpu/bin", "CUDA_VISIBLE_DEVICES": "GPU-1"})
    assert env["PATH"] == f"{root}/usr/bin:/opt/deckhouse-gpu/bin"  # where the control finds the server
    assert env["LD_PRELOAD"] == ":".join(map(str, found.libraries))
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-1"
    assert "LD_LIBRARY_PATH" not in env  # never the host's whole library directory


def test_what_is_missing_is_named(tmp_path):
    root = driver_root(tmp_path / "root")
    (root / "usr/bin/nvidia-cuda-mps-server").unlink()
    (root / LIB / "libcuda.so.1").unlink()
    with pytest.raises(LaunchError) as raised:
        find_binaries(MountedDriverRoot(root))
    assert str(raised.value).startswith(
        f"nvidia-cuda-mps-server, libcuda.so.1 not found under the driver root {root}"
    )


def test_a_server_reached_only_through_a_versioned_name_is_refused(tmp_path):
    root = driver_root(tmp_path / "root")
    (root / "usr/bin/nvidia-cuda-mps-server").rename(root / "usr/bin/nvidia-cuda-mps-server.580")
    link(root / "usr/bin/nvidia-cuda-mps-server", "nvidia-cuda-mps-server.580")
    with pytest.raises(LaunchError, match="PATH cannot find by name"):
        find_binaries(MountedDriverRoot(root))


def test_a_command_goes_to_the_daemon_on_stdin_with_the_pods_environment(tmp_path):
    root = driver_root(tmp_path / "root", answer="25.0")
    found = find_binaries(MountedDriverRoot(root))
    output = send(found, {"CUDA_VISIBLE_DEVICES": "MIG-5"}, "get_default_active_thread_percentage")
    assert output == "25.0"
    seen = recorded(root)
    assert seen["command"] == "get_default_active_thread_percentage"
    assert seen["argv"] == ""
    assert seen["CUDA_VISIBLE_DEVICES"] == "MIG-5"
    assert seen["PATH"] == f"{root}/usr/bin"
    assert seen["LD_PRELOAD"] == ":".join(map(str, found.libraries))


def test_a_failing_or_silent_control_is_a_launch_error(tmp_path):
    failing = find_binaries(MountedDriverRoot(driver_root(tmp_path / "a" / "root", answer="oops", code=3)))
    with pytest.raises(LaunchError, match="exited with code 3 on 'quit': oops"):
        send(failing, {}, "quit")

    def hangs(argv: list[str], **options: object) -> subprocess.CompletedProcess[str]:
        raise subprocess.TimeoutExpired(argv, 8.0)

    with pytest.raises(LaunchError, match="did not answer 'quit' in 8 s"):
        send(failing, {}, "quit", run=hangs)


@pytest.mark.parametrize(
    ("output", "expected"),
    [("100.0", True), ("25", True), ("Cannot find MPS control daemon process", False), ("", False)],
)
def test_only_a_number_is_an_answer(output, expected):
    assert answers(output) is expected


def test_exec_becomes_the_control_daemon_in_the_foreground(tmp_path):
    found = find_binaries(MountedDriverRoot(driver_root(tmp_path / "root")))
    calls = []

    def execve(path: str, argv: list[str], env: dict[str, str]) -> NoReturn:
        calls.append((path, argv, env))
        raise SystemExit(0)

    with pytest.raises(SystemExit):
        exec_daemon(found, {"CUDA_MPS_PIPE_DIRECTORY": "/run/nvidia-mps"}, execve)
    ((path, argv, env),) = calls
    assert path == str(found.control)
    assert argv == ["nvidia-cuda-mps-control", "-f"]
    assert env["CUDA_MPS_PIPE_DIRECTORY"] == "/run/nvidia-mps"
    assert env["LD_PRELOAD"] == ":".join(map(str, found.libraries))
