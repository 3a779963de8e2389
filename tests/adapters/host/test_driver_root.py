# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import os
from pathlib import Path, PurePosixPath

import pytest

from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot, run_nvidia_smi
from deckhouse_gpu.simulator.host.driver_tree import link, write

LIBRARY = "libnvidia-ml.so.580.95.05"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "driver-root"


def test_a_plain_file_is_found_at_its_container_path(root: Path):
    smi = write(root / "usr/bin/nvidia-smi")
    assert MountedDriverRoot(root).find_file("usr/bin/nvidia-smi") == smi


def test_a_relative_link_is_followed(root: Path):
    real = write(root / "usr/lib/x86_64-linux-gnu" / LIBRARY)
    link(root / "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", LIBRARY)
    assert MountedDriverRoot(root).find_file("usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1") == real


def test_an_absolute_link_target_is_read_inside_the_root(root: Path):
    real = write(root / "usr/lib64" / LIBRARY)
    link(root / "usr/lib64/libnvidia-ml.so.1", f"/usr/lib64/{LIBRARY}")
    assert MountedDriverRoot(root).find_file("/usr/lib64/libnvidia-ml.so.1") == real


def test_an_absolute_link_never_reaches_the_containers_own_files(root: Path):
    assert Path("/bin/sh").exists()  # present in the container, absent from the driver root
    link(root / "usr/bin/nvidia-smi", "/bin/sh")
    assert MountedDriverRoot(root).find_file("usr/bin/nvidia-smi") is None


def test_directory_links_with_absolute_targets_are_followed_inside_the_root(root: Path):
    real = write(root / "usr/lib64" / LIBRARY)
    link(root / "usr/lib64/libnvidia-ml.so.1", LIBRARY)
    link(root / "lib64", "/usr/lib64")  # usrmerge layouts
    assert MountedDriverRoot(root).find_file("lib64/libnvidia-ml.so.1") == real


def test_dot_dot_stops_at_the_root(root: Path):
    real = write(root / "bin/nvidia-smi")
    link(root / "usr/bin/nvidia-smi", "../../../../../../bin/nvidia-smi")
    tree = MountedDriverRoot(root)
    assert tree.resolve("usr/bin/nvidia-smi") == PurePosixPath("/bin/nvidia-smi")
    assert tree.find_file("usr/bin/nvidia-smi") == real


@pytest.mark.parametrize(
    "layout",
    ["broken link", "loop", "directory", "missing", "file as directory"],
)
def test_what_is_not_a_reachable_regular_file_is_not_found(root: Path, layout: str):
    target = root / "usr/bin/nvidia-smi"
    if layout == "broken link":
        link(target, "nvidia-smi.580")
    elif layout == "loop":
        link(target, "/usr/bin/other")
        link(root / "usr/bin/other", "nvidia-smi")
    elif layout == "directory":
        target.mkdir(parents=True)
    elif layout == "file as directory":
        write(root / "usr/bin")
    assert MountedDriverRoot(root).find_file("usr/bin/nvidia-smi") is None


def test_entries_are_sorted_names_or_none(root: Path, tmp_path: Path):
    write(root / "usr/bin/nvidia-smi")
    write(root / "bin/x")
    link(root / "lib", "usr/lib")
    assert MountedDriverRoot(root).entries() == ["bin", "lib", "usr"]
    assert MountedDriverRoot(tmp_path / "absent").entries() is None


def executable(path: Path, script: str) -> Path:
    write(path, "#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path


def test_nvidia_smi_success_and_its_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FROM_THE_POD", "leaked")
    seen = tmp_path / "seen"
    smi = executable(tmp_path / "nvidia-smi", f'echo "$LD_PRELOAD|$FROM_THE_POD" > {seen}\n')
    library = write(tmp_path / "libnvidia-ml.so.1")
    assert run_nvidia_smi(smi, library) is None
    assert seen.read_text().strip() == f"{library}|"  # only LD_PRELOAD, nothing inherited


def test_nvidia_smi_failure_says_why(tmp_path: Path):
    message = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    smi = executable(tmp_path / "nvidia-smi", f'echo "{message}"\nexit 9\n')
    assert run_nvidia_smi(smi, tmp_path / "lib.so") == f"nvidia-smi exited with code 9: {message}"


def test_nvidia_smi_that_cannot_start_or_hangs(tmp_path: Path):
    not_executable = write(tmp_path / "nvidia-smi")
    assert (run_nvidia_smi(not_executable, tmp_path / "lib.so") or "").startswith("cannot run")
    slow = executable(tmp_path / "slow-smi", "exec sleep 5\n")
    assert run_nvidia_smi(slow, tmp_path / "lib.so", timeout_s=0.2) == "nvidia-smi did not finish in 0.2 s"
    assert os.access(slow, os.X_OK)
