# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Every NVML function the real adapters call, failing with GPU_IS_LOST, UNKNOWN and TIMEOUT.

The fault tests of prepare and of the capabilities pass (tests/e2e/test_nvml_faults*.py) fail the
ports, not libnvidia-ml.so (testkit/nvml_faults.py). This is what makes that honest: under the
real nvidia-ml-py bindings and the stand-in library (tests/support/fake_pynvml.py), each C function
a port method calls is made to return each of the three codes in turn, and the method must raise
its port's error type (never pynvml's own), naming the card and NVML's words, as the wrappers do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pynvml
import pytest

from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot
from deckhouse_gpu.adapters.nvml.card_settings_nvidia import NvidiaCardSettings
from deckhouse_gpu.adapters.nvml.nvml_mig import RealMig
from deckhouse_gpu.adapters.nvml.nvml_vfio import RealGpuProcesses
from deckhouse_gpu.ports.mig import MigError
from deckhouse_gpu.ports.sharing import ComputeMode, SharingError
from deckhouse_gpu.ports.vfio import VfioError
from testkit.nvml_faults import CODES, FaultKind, nvml_text
from tests.support import fake_pynvml
from tests.support.fake_pynvml import Card, FakeLibrary, real_nvml

fresh_bindings = fake_pynvml.fresh_bindings  # autouse: clean bindings for every test
A30 = "0000:17:00.0"
ONE_G = 14


class FailingLibrary(FakeLibrary):
    """The stand-in library whose ``failing`` C function answers ``code`` instead of working."""

    failing: tuple[str, int] | None = None

    def __getattribute__(self, name: str) -> Any:
        found = super().__getattribute__(name)
        if not name.startswith("nvml"):
            return found

        def call(*args: Any) -> int:
            failing = object.__getattribute__(self, "failing")
            if failing is not None and failing[0] == name:
                return int(failing[1])
            return int(found(*args))

        return call


def _mig(library: FakeLibrary, _: Any) -> RealMig:
    return RealMig(real_nvml(library))


def _settings(library: FakeLibrary, root: Any) -> NvidiaCardSettings:
    return NvidiaCardSettings(real_nvml(library), MountedDriverRoot(root))


def _created(port: RealMig) -> Any:
    return port.create_instance(A30, ONE_G, 0)


# Port method -> (the card it starts from, the adapter, the setup done before the fault, the call).
Operation = tuple[Callable[[], Card], Callable[..., Any], Callable[[Any], Any], Callable[[Any, Any], Any]]
OPERATIONS: dict[str, Operation] = {
    "mig.mig_enabled": (lambda: Card(mig=(1, 1)), _mig, lambda p: None, lambda p, _: p.mig_enabled(A30)),
    "mig.set_mig_mode": (
        lambda: Card(mig=(0, 0)), _mig, lambda p: None, lambda p, _: p.set_mig_mode(A30, True),
    ),
    "mig.card_busy": (lambda: Card(mig=(0, 0)), _mig, lambda p: None, lambda p, _: p.card_busy(A30)),
    "mig.instances": (lambda: Card(mig=(1, 1)), _mig, _created, lambda p, _: p.instances(A30)),
    "mig.create_instance": (lambda: Card(mig=(1, 1)), _mig, lambda p: None, lambda p, _: _created(p)),
    "mig.destroy_instance": (
        lambda: Card(mig=(1, 1)), _mig, _created,
        lambda p, made: p.destroy_instance(A30, made.gpu_instance_id, made.compute_instance_id),
    ),
    "settings.compute_mode": (Card, _settings, lambda p: None, lambda p, _: p.compute_mode(A30)),
    "settings.set_compute_mode": (
        Card, _settings, lambda p: None, lambda p, _: p.set_compute_mode(A30, ComputeMode.EXCLUSIVE_PROCESS),
    ),
    "gpus.processes": (Card, lambda library, root: RealGpuProcesses(real_nvml(library), root), lambda p: None,
                       lambda p, _: p.processes(A30)),
}  # fmt: skip
ERRORS = {"mig": MigError, "settings": SharingError, "gpus": VfioError}


def _fresh(library: FailingLibrary, card: Card) -> None:
    # pynvml keeps the library and its function pointers per process: every run starts clean.
    pynvml.nvmlLib, pynvml._nvmlGetFunctionPointer_cache, pynvml._nvmlLib_refcount = None, {}, 0
    library.cards[:] = [card]
    library.failing = None


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_every_nvml_function_a_port_method_calls_fails_as_the_port_error(operation, tmp_path):
    make_card, adapter, setup, call = OPERATIONS[operation]
    library = FailingLibrary(make_card())
    _fresh(library, make_card())
    port = adapter(library, tmp_path)
    made = setup(port)
    library.calls.clear()
    call(port, made)
    functions = sorted(library.calls)
    assert functions, "the operation calls no NVML function"
    problems = []
    for function in functions:
        for kind in FaultKind:
            _fresh(library, make_card())
            port = adapter(library, tmp_path)
            made = setup(port)
            library.failing = (function, CODES[kind])
            try:
                call(port, made)
            except ERRORS[operation.partition(".")[0]] as error:
                words = nvml_text(kind).split(" (")[0]
                if A30 not in str(error) or words not in str(error):
                    problems.append(
                        f"{function} {kind}: the error does not name the card and NVML's words: {error}"
                    )
                continue
            except Exception as error:
                problems.append(f"{function} {kind}: {type(error).__name__} escaped: {error}")
                continue
            problems.append(f"{function} {kind}: the failure was swallowed")
    assert not problems, "\n".join(problems)
