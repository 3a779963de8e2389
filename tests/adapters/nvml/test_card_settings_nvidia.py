# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A real card's sharing settings: the compute mode through the real nvidia-ml-py bindings over a
stand-in libnvidia-ml.so (tests/support/fake_pynvml.py), the time-slice interval through a stand-in
nvidia-smi in a driver root, run as a process."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot
from deckhouse_gpu.adapters.nvml.card_settings_nvidia import NvidiaCardSettings, nvidia_smi_bus_id
from deckhouse_gpu.domain.config.card_setting import CardSetting
from deckhouse_gpu.domain.config.features import CARD_SETTINGS
from deckhouse_gpu.domain.config.mps_sharing import COMPUTE_MODE
from deckhouse_gpu.domain.config.time_slicing import TIME_SLICE, TimeSliceInterval
from deckhouse_gpu.ports.sharing import CardSettings, ComputeMode, SharingError
from deckhouse_gpu.simulator.host.driver_tree import link, write
from tests.support import fake_pynvml
from tests.support.fake_pynvml import DRIVER_NOT_LOADED, NO_PERMISSION, Card, FakeLibrary, real_nvml

fresh_bindings = fake_pynvml.fresh_bindings  # autouse: clean bindings for every test
A30 = "0000:17:00.0"


def fake_smi(root: Path, record: Path, code: int = 0, say: str = "") -> Path:
    """nvidia-smi that records its argv and LD_PRELOAD, prints ``say`` and exits with ``code``;
    only shell builtins: it runs with LD_PRELOAD as its whole environment."""
    script = write(
        root / "usr/bin/nvidia-smi",
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$@\" > '{record}'\n"
        f"printf 'LD_PRELOAD=%s\\n' \"$LD_PRELOAD\" >> '{record}'\n"
        + (f"printf '%s\\n' '{say}'\n" if say else "")
        + ("printf '%s\\n' 'smi-stderr' >&2\n" if code else "")
        + f"exit {code}\n",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    write(root / "usr/lib64/libnvidia-ml.so.580.95.05")
    link(root / "usr/lib64/libnvidia-ml.so.1", "/usr/lib64/libnvidia-ml.so.580.95.05")
    return script


def settings(root: Path, card: Card | None = None, **options: object) -> tuple[Card, NvidiaCardSettings]:
    card = card or Card()
    library = FakeLibrary(card)
    return card, NvidiaCardSettings(real_nvml(library), MountedDriverRoot(root), **options)  # type: ignore[arg-type]


def test_the_bus_id_is_written_as_nvidia_smi_writes_it():
    assert nvidia_smi_bus_id("0000:17:00.0") == "00000000:17:00.0"
    assert nvidia_smi_bus_id("0000:b1:00.0") == "00000000:B1:00.0"
    assert nvidia_smi_bus_id("00000001:3a:00.1") == "00000001:3A:00.1"


def test_compute_mode_is_read_and_set_through_nvml(tmp_path):
    card, port = settings(tmp_path)
    checked: CardSettings = port
    assert checked.read(A30, COMPUTE_MODE) == ComputeMode.DEFAULT
    checked.apply(A30, COMPUTE_MODE, ComputeMode.EXCLUSIVE_PROCESS)
    assert card.compute_mode == 3
    port.set_compute_mode(A30, ComputeMode.DEFAULT)
    assert port.compute_mode(A30) == ComputeMode.DEFAULT
    port.set_compute_mode(A30, ComputeMode.EXCLUSIVE_PROCESS)
    assert card.compute_mode == 3
    assert port.compute_mode(A30) == ComputeMode.EXCLUSIVE_PROCESS
    port.set_compute_mode(A30, ComputeMode.PROHIBITED)
    assert card.compute_mode == 2
    port.set_compute_mode(A30, ComputeMode.DEFAULT)
    assert card.compute_mode == 0


def test_every_registered_card_setting_has_an_applier_and_an_unknown_one_is_refused(tmp_path):
    _, port = settings(tmp_path)
    for setting in CARD_SETTINGS:
        reader, maker = port.APPLIERS[setting.name]
        assert callable(getattr(port, reader)), setting.name
        assert callable(getattr(port, maker)), setting.name
    unknown = CardSetting("powerLimit", "power limit", "Default", ("Default", "Low"), frozenset({"Low"}))
    with pytest.raises(
        SharingError, match=r"card 0000:17:00\.0: gpu-handler cannot make the card setting powerLimit"
    ):
        port.apply(A30, unknown, "Low")
    assert port.read(A30, TIME_SLICE) is None  # not in NVML: always set


def test_nvml_refusals_and_unknown_cards_are_sharing_errors(tmp_path):
    _, port = settings(tmp_path, Card(fail={"nvmlDeviceSetComputeMode": NO_PERMISSION}))
    with pytest.raises(SharingError, match=r"card 0000:17:00\.0: nvmlDeviceSetComputeMode failed: .*code 4"):
        port.set_compute_mode(A30, ComputeMode.EXCLUSIVE_PROCESS)
    with pytest.raises(SharingError, match=r"card 0000:99:00\.0: nvmlDeviceGetComputeMode: .*no device"):
        port.compute_mode("0000:99:00.0")


def test_a_compute_mode_gpu_handler_does_not_know_is_an_error(tmp_path):
    # One settings per test: pynvml keeps the first library it opens for the rest of the process.
    _, unknown = settings(tmp_path, Card(compute_mode=1))  # EXCLUSIVE_THREAD, long gone
    with pytest.raises(SharingError, match="compute mode 1, unknown"):
        unknown.compute_mode(A30)


def test_a_library_wide_failure_says_so_and_initialises_again(tmp_path):
    card, port = settings(tmp_path, Card(fail={"nvmlDeviceGetComputeMode": DRIVER_NOT_LOADED}))
    with pytest.raises(SharingError, match="kernel module is not loaded"):
        port.compute_mode(A30)
    card.fail.clear()
    assert port.compute_mode(A30) == ComputeMode.DEFAULT


def test_the_interval_is_set_with_nvidia_smi_from_the_driver_root(tmp_path):
    record = tmp_path / "argv"
    smi = fake_smi(tmp_path / "root", record)
    _, port = settings(tmp_path / "root")
    assert port.time_slice(A30) is None  # never read: always set
    port.set_time_slice(A30, TimeSliceInterval.LONG)
    argv, preload = record.read_text().splitlines()[:-1], record.read_text().splitlines()[-1]
    assert argv == ["compute-policy", "-i", "00000000:17:00.0", "--set-timeslice", "3"]
    # The library as the root's link leads inside the mount, not the container's /usr/lib64.
    assert preload == f"LD_PRELOAD={tmp_path}/root/usr/lib64/libnvidia-ml.so.580.95.05"
    port.set_time_slice(A30, TimeSliceInterval.DEFAULT)
    assert record.read_text().splitlines()[4] == "0"
    port.apply(A30, TIME_SLICE, "Medium")  # the port's call, through the setting's applier
    assert record.read_text().splitlines()[4] == "2"
    assert smi.exists()


def test_a_failing_nvidia_smi_names_the_card_the_command_and_its_output(tmp_path):
    record = tmp_path / "argv"
    fake_smi(tmp_path / "root", record, code=6, say="Insufficient Permissions")
    _, port = settings(tmp_path / "root")
    with pytest.raises(SharingError) as raised:
        port.set_time_slice(A30, TimeSliceInterval.SHORT)
    message = str(raised.value)
    assert message.startswith("card 0000:17:00.0: ")
    assert (
        f"{tmp_path}/root/usr/bin/nvidia-smi compute-policy -i 00000000:17:00.0 --set-timeslice 1" in message
    )
    assert "exited with code 6" in message
    assert "Insufficient Permissions" in message
    assert "smi-stderr" in message


def test_no_nvidia_smi_under_the_driver_root_is_a_clear_error(tmp_path):
    write(tmp_path / "usr/lib64/libnvidia-ml.so.1")
    _, port = settings(tmp_path)
    with pytest.raises(SharingError, match=f"nvidia-smi not found under the driver root {tmp_path}"):
        port.set_time_slice(A30, TimeSliceInterval.SHORT)


def test_a_hanging_or_unstartable_nvidia_smi_is_a_sharing_error(tmp_path):
    fake_smi(tmp_path, tmp_path / "argv")

    def hangs(argv: list[str], **options: object) -> subprocess.CompletedProcess[str]:
        assert options["timeout"] == 7.5
        raise subprocess.TimeoutExpired(argv, 7.5)

    _, port = settings(tmp_path, run=hangs, timeout_s=7.5)
    with pytest.raises(SharingError, match=r"did not finish in 7\.5 s"):
        port.set_time_slice(A30, TimeSliceInterval.SHORT)

    def broken(argv: list[str], **options: object) -> subprocess.CompletedProcess[str]:
        raise PermissionError(13, "Permission denied")

    _, port = settings(tmp_path, run=broken)
    with pytest.raises(SharingError, match=r"cannot run .*nvidia-smi.*Permission denied"):
        port.set_time_slice(A30, TimeSliceInterval.SHORT)
