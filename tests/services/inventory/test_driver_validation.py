# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The module's own driver validator: the verdict behind DriverReady, and the process around it."""

import logging
import threading
import urllib.error
import urllib.request
from pathlib import Path, PurePath

import pytest

from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot, ProcNvidia
from deckhouse_gpu.adapters.process.health_server import serve_health
from deckhouse_gpu.cmd.driver_validator import check_forever
from deckhouse_gpu.cmd.gpu_handler import main as handler
from deckhouse_gpu.ports.driver_files import KernelDriver
from deckhouse_gpu.services.inventory.driver_validation import (
    Verdict,
    kernel_version,
    library_version,
    validate,
)
from deckhouse_gpu.services.runtime.health import HealthState
from tests.conftest import FixedClock

PROPRIETARY = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue Sep 23 09:54:48 UTC 2025\n"
OPEN = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder)\n"
GPUS = ("0000:3b:00.0", "0000:86:00.0")


def install_driver(root: Path, version: str = "580.95.05") -> None:
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/bin/nvidia-smi").write_text("")
    lib = root / "usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / f"libnvidia-ml.so.{version}").write_text("")
    (lib / "libnvidia-ml.so.1").symlink_to(f"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.{version}")


def loaded(text: str = PROPRIETARY, gpus: tuple[str, ...] = GPUS) -> KernelDriver:
    return KernelDriver(text, gpus)


@pytest.mark.parametrize("text", [PROPRIETARY, OPEN])
def test_kernel_version_of_both_module_flavours(text: str) -> None:
    assert kernel_version(text) == "580.95.05"


def test_kernel_version_of_unknown_text_is_none() -> None:
    assert kernel_version("something else entirely") is None


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("libnvidia-ml.so.580.95.05", "580.95.05"),
        ("libnvidia-ml.so.535.129", "535.129"),
        ("libnvidia-ml.so.1", None),  # a link left unresolved, or a build without a versioned name
        ("libcuda.so.580.95.05", None),
    ],
)
def test_library_version_from_the_real_file_name(name: str, version: str | None) -> None:
    assert library_version(PurePath("/driver-root/usr/lib", name)) == version


def test_a_complete_matching_driver_is_ready(tmp_path: Path) -> None:
    install_driver(tmp_path)
    verdict = validate(MountedDriverRoot(tmp_path), "/", loaded())
    assert verdict == Verdict(True, "driver 580.95.05 ready under /, 2 GPUs")


def test_open_kernel_modules_are_ready_too(tmp_path: Path) -> None:
    install_driver(tmp_path)
    verdict = validate(MountedDriverRoot(tmp_path), "/run/nvidia/driver", loaded(OPEN, GPUS[:1]))
    assert verdict.ready
    assert verdict.summary == "driver 580.95.05 ready under /run/nvidia/driver, 1 GPU"


def test_missing_files_give_the_prestart_hints(tmp_path: Path) -> None:
    verdict = validate(MountedDriverRoot(tmp_path), "/", loaded())
    assert not verdict.ready
    assert verdict.summary == "driver root /: driver files missing"
    assert "nvidia-smi and libnvidia-ml.so.1 not found" in verdict.problems[0]


def test_an_unloaded_kernel_module_is_not_ready(tmp_path: Path) -> None:
    install_driver(tmp_path)
    verdict = validate(MountedDriverRoot(tmp_path), "/", KernelDriver(None, ()))
    assert not verdict.ready
    assert verdict.summary == "the nvidia kernel module is not loaded"
    assert "modprobe nvidia" in verdict.problems[0]


def test_a_library_of_another_version_than_the_module_is_a_mismatch(tmp_path: Path) -> None:
    install_driver(tmp_path, version="580.105.08")
    verdict = validate(MountedDriverRoot(tmp_path), "/", loaded())
    assert not verdict.ready
    assert verdict.summary == "kernel module 580.95.05 but libnvidia-ml.so.1 580.105.08"
    assert "Driver/library version mismatch" in verdict.problems[0]
    assert "Reboot the node" in verdict.problems[0]


def test_an_unversioned_library_is_not_compared(tmp_path: Path) -> None:
    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "usr/bin/nvidia-smi").write_text("")
    (tmp_path / "usr/lib64").mkdir(parents=True)
    (tmp_path / "usr/lib64/libnvidia-ml.so.1").write_text("")  # a plain file, no version in its name
    verdict = validate(MountedDriverRoot(tmp_path), "/", loaded())
    assert verdict.ready
    assert verdict.summary == "driver 580.95.05 ready under /, 2 GPUs"


def test_a_module_that_drives_no_gpu_is_not_ready(tmp_path: Path) -> None:
    install_driver(tmp_path)
    verdict = validate(MountedDriverRoot(tmp_path), "/", loaded(gpus=()))
    assert not verdict.ready
    assert "vfio-pci" in verdict.problems[0]


def test_proc_nvidia_reads_the_version_and_the_gpus(tmp_path: Path) -> None:
    base = tmp_path / "driver/nvidia"
    (base / "gpus" / GPUS[1]).mkdir(parents=True)
    (base / "gpus" / GPUS[0]).mkdir()
    (base / "version").write_text(PROPRIETARY)
    assert ProcNvidia(tmp_path).nvidia_module() == KernelDriver(PROPRIETARY, GPUS)


def test_proc_nvidia_without_the_module(tmp_path: Path) -> None:
    assert ProcNvidia(tmp_path).nvidia_module() == KernelDriver(None, ())


class SteppedKernel:
    """Answers the given states in turn and stops the loop after the last one."""

    def __init__(self, states: list[KernelDriver], stop: threading.Event) -> None:
        self.states = states
        self.stop = stop

    def nvidia_module(self) -> KernelDriver:
        state = self.states.pop(0)
        if not self.states:
            self.stop.set()
        return state


def test_the_loop_records_readiness_and_logs_only_changes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    install_driver(tmp_path)
    stop = threading.Event()
    kernel = SteppedKernel([loaded(), loaded(), KernelDriver(None, ()), loaded()], stop)
    health = HealthState()
    seen: list[bool] = []
    caplog.set_level(logging.INFO, logger="gpu-handler")
    check_forever(
        MountedDriverRoot(tmp_path),
        kernel,
        "/",
        health,
        clock=FixedClock(),
        stop=stop,
        interval_s=0,
        on_verdict=lambda verdict: seen.append(verdict.ready),
    )
    assert seen == [True, True, False, True]
    messages = [record.getMessage() for record in caplog.records if record.name == "gpu-handler"]
    assert messages == [
        "driver ready: driver 580.95.05 ready under /, 2 GPUs",
        "driver not ready: the nvidia kernel module is not loaded",
        messages[2],  # the hint
        "driver ready: driver 580.95.05 ready under /, 2 GPUs",
    ]
    assert messages[2].startswith("hint: /proc/driver/nvidia/version does not exist")
    assert health.snapshot().ok


def test_readiness_follows_the_verdict_and_liveness_never_fails(tmp_path: Path) -> None:
    health = HealthState()
    clock = FixedClock()
    server = serve_health(health, ("127.0.0.1", 0), clock.monotonic, unhealthy_after=float("inf"))
    port = server.server_address[1]

    def status(path: str) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return error.code

    try:
        health.record(False, "the nvidia kernel module is not loaded", clock.monotonic())
        clock.ticks += 10_000
        assert (status("/readyz"), status("/healthz")) == (503, 200)
        health.record(True, None, clock.monotonic())
        assert (status("/readyz"), status("/healthz")) == (200, 200)
    finally:
        server.shutdown()


def test_validate_driver_once_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, proc = tmp_path / "root", tmp_path / "proc"
    install_driver(root)
    args = ["validate-driver", "--once", "--driver-root-mount", str(root), "--proc", str(proc)]
    assert handler.main(args) == 1
    out = capsys.readouterr().out
    assert out.startswith("the nvidia kernel module is not loaded\nhint: ")
    (proc / "driver/nvidia/gpus" / GPUS[0]).mkdir(parents=True)
    (proc / "driver/nvidia/version").write_text(OPEN)
    assert handler.main(args) == 0
    assert capsys.readouterr().out == "driver 580.95.05 ready under /, 1 GPU\n"
