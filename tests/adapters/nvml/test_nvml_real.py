# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""RealNVML itself: loading the library, initialising once, device addresses and library-wide failures.

The cards are a stand-in libnvidia-ml.so under the real nvidia-ml-py bindings (tests/support/fake_pynvml.py).
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import pynvml
import pytest

from deckhouse_gpu.adapters.nvml.nvml_real import RealNVML, cuda_version_text, normalize_pci_address
from deckhouse_gpu.ports.nvml import NVMLDeviceNotFound, NVMLUnavailable
from tests.support import fake_pynvml
from tests.support.fake_pynvml import (
    DRIVER_NOT_LOADED,
    GPU_IS_LOST,
    RM_MISMATCH,
    Card,
    FakeLibrary,
    real_nvml,
)

# Autouse: every test here starts from clean bindings (bound here so that pytest applies it).
fresh_bindings = fake_pynvml.fresh_bindings


@pytest.mark.parametrize(
    ("bus_id", "address"),
    [
        ("00000000:17:00.0", "0000:17:00.0"),
        (b"00000000:B1:00.0\x00", "0000:b1:00.0"),
        ("0000:CA:00.0", "0000:ca:00.0"),
        ("0000:17:00.0", "0000:17:00.0"),
        ("0:3:0.1", "0000:03:00.1"),
    ],
)
def test_pci_addresses_are_normalised_to_sysfs_form(bus_id, address):
    assert normalize_pci_address(bus_id) == address


def test_garbage_is_not_an_address():
    with pytest.raises(ValueError, match="not a PCI address"):
        normalize_pci_address("GPU-17")


def test_cuda_versions_are_major_dot_minor():
    assert (cuda_version_text(12040), cuda_version_text(13000), cuda_version_text(0)) == (
        "12.4",
        "13.0",
        None,
    )


def test_device_addresses_are_normalised_and_sorted():
    nvml = real_nvml(FakeLibrary(Card("00000000:CA:00.0"), Card("00000000:17:00.0")))
    assert nvml.device_addresses() == ["0000:17:00.0", "0000:ca:00.0"]


def test_a_card_nvml_cannot_reach_is_left_out_of_the_addresses():
    library = FakeLibrary(Card(fail={"handle": GPU_IS_LOST}), Card("00000000:31:00.0"))
    assert real_nvml(library).device_addresses() == ["0000:31:00.0"]


def test_an_unknown_address_is_not_found():
    nvml = real_nvml(FakeLibrary(Card()))
    with pytest.raises(NVMLDeviceNotFound, match=r"0000:99:00\.0"):
        nvml.snapshot("0000:99:00.0")
    with pytest.raises(NVMLDeviceNotFound):
        nvml.snapshot("not-an-address")


def test_a_library_that_cannot_be_opened_makes_nvml_unavailable():
    def load(path: str) -> Any:
        raise OSError(f"{path}: cannot open shared object file: No such file or directory")

    nvml = RealNVML("/driver-root/usr/lib64/libnvidia-ml.so.1", bindings=pynvml, load_library=load)
    with pytest.raises(NVMLUnavailable, match="cannot load the NVML library /driver-root/usr/lib64"):
        nvml.device_addresses()


def test_without_a_path_a_missing_library_makes_nvml_unavailable(monkeypatch):
    def no_library(name: str) -> Any:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(pynvml, "CDLL", no_library)  # what pynvml's own loader calls
    with pytest.raises(
        NVMLUnavailable, match=r"nvmlInit failed: NVML Shared Library Not Found.*libnvidia-ml"
    ):
        RealNVML(bindings=pynvml).driver()


def test_bindings_are_imported_from_sys_modules_on_first_use(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", pynvml)
    nvml = RealNVML(load_library=lambda path: FakeLibrary(Card()), library_path="/lib/libnvidia-ml.so.1")
    assert nvml.device_addresses() == ["0000:17:00.0"]


def test_an_unloaded_kernel_module_makes_nvml_unavailable():
    with pytest.raises(NVMLUnavailable, match="kernel module is not loaded"):
        real_nvml(FakeLibrary(Card(), init_code=DRIVER_NOT_LOADED)).driver()


def test_nvml_is_initialised_once_across_threads():
    library = FakeLibrary(Card(), Card("00000000:31:00.0"))
    nvml = real_nvml(library)
    threads = [threading.Thread(target=nvml.snapshot, args=("0000:31:00.0",)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    nvml.device_addresses()
    nvml.driver()
    assert library.calls["nvmlInitWithFlags"] == 1
    assert library.calls["nvmlSystemGetDriverVersion"] == 1


def test_a_library_wide_failure_initialises_again_next_time():
    card = Card(fail={"nvmlDeviceGetMemoryInfo": RM_MISMATCH})
    library = FakeLibrary(card)
    nvml = real_nvml(library)
    with pytest.raises(NVMLUnavailable, match="reboot the node"):
        nvml.snapshot("0000:17:00.0")
    card.fail.clear()
    assert nvml.snapshot("0000:17:00.0").memory_total_mib == 24576
    assert library.calls["nvmlInitWithFlags"] == 2
