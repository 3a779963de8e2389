# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

from pathlib import Path

import pytest

from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot
from deckhouse_gpu.services.publishing.prestart import (
    DriverFiles,
    DriverNotFound,
    PrestartSettings,
    normalise_root,
    probe,
    status_line,
    wait_for_driver,
)
from tests.conftest import FixedClock

LIBRARY = "libnvidia-ml.so.580.95.05"


def install(root: Path, smi_dir: str = "usr/bin", lib_dir: str = "usr/lib/x86_64-linux-gnu") -> None:
    """A driver as distributions and driver containers lay it out: the .so.1 name is a link."""
    if smi_dir:
        (root / smi_dir).mkdir(parents=True, exist_ok=True)
        (root / smi_dir / "nvidia-smi").write_text("")
    if lib_dir:
        (root / lib_dir).mkdir(parents=True, exist_ok=True)
        (root / lib_dir / LIBRARY).write_text("")
        (root / lib_dir / "libnvidia-ml.so.1").symlink_to(f"/{lib_dir}/{LIBRARY}")


class Run:
    """wait_for_driver with a fake clock: sleeping advances time and may change the tree."""

    def __init__(self, clock: FixedClock) -> None:
        self.clock = clock
        self.lines: list[str] = []
        self.sleeps: list[float] = []
        self.on_sleep: dict[int, object] = {}

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.clock.ticks += seconds
        action = self.on_sleep.get(len(self.sleeps))
        if callable(action):
            action()

    def __call__(self, mount: Path, host_root: str, **settings: object) -> DriverFiles:
        return wait_for_driver(
            MountedDriverRoot(mount),
            host_root,
            PrestartSettings(**settings),  # type: ignore[arg-type]
            clock=self.clock,
            sleep=self.sleep,
            emit=self.lines.append,
        )

    def hints(self) -> list[str]:
        return [line for line in self.lines if line.startswith("hint: ")]


@pytest.fixture
def run(clock: FixedClock) -> Run:
    return Run(clock)


def test_a_host_installed_driver_is_found_at_once(tmp_path: Path, run: Run):
    install(tmp_path)
    files = run(tmp_path, "/")
    assert files == DriverFiles(
        tmp_path / "usr/bin/nvidia-smi", tmp_path / "usr/lib/x86_64-linux-gnu" / LIBRARY
    )
    assert run.sleeps == []
    assert run.hints() == []
    assert run.lines[-1] == f"NVIDIA driver found: libnvidia-ml.so.1 at {files.nvml_library}"


def test_a_containerised_driver_is_found_in_its_own_root(tmp_path: Path, run: Run):
    install(tmp_path, smi_dir="usr/local/nvidia/bin", lib_dir="usr/local/nvidia/lib64")
    files = run(tmp_path, "/run/nvidia/driver/")
    assert files.nvml_library == tmp_path / "usr/local/nvidia/lib64" / LIBRARY
    assert run.lines[0].startswith("attempt 1: driver root /run/nvidia/driver: nvidia-smi ")


def test_only_the_standard_directories_are_searched(tmp_path: Path, run: Run):
    install(tmp_path, smi_dir="opt/nvidia/bin", lib_dir="opt/nvidia/lib")
    with pytest.raises(DriverNotFound) as failure:
        run(tmp_path, "/", max_attempts=1)
    assert failure.value.probe.files is None
    assert failure.value.attempts == 1


def test_a_driver_container_under_a_host_root_is_pointed_out(tmp_path: Path, run: Run):
    install(tmp_path / "run/nvidia/driver")
    with pytest.raises(DriverNotFound):
        run(tmp_path, "/", max_attempts=1)
    hints = run.hints()
    assert hints[0].startswith("hint: The NVIDIA driver is not installed under the driver root / on the host")
    assert "Set the module's driver root (nvidiaDriverRoot) to /run/nvidia/driver" in hints[1]
    assert run.lines[0].endswith("the root contains: run")


def test_nothing_installed_on_the_host(tmp_path: Path, run: Run):
    (tmp_path / "etc").mkdir()
    with pytest.raises(DriverNotFound):
        run(tmp_path, "/", max_attempts=1)
    assert "No driver is installed in the host's standard directories" in run.hints()[-1]


@pytest.mark.parametrize(("present", "wording"), [(True, "is empty"), (False, "is not there yet")])
def test_an_empty_containerised_root_means_the_driver_is_not_installed_yet(
    tmp_path: Path, run: Run, present: bool, wording: str
):
    mount = tmp_path / "driver"
    if present:
        mount.mkdir()
    with pytest.raises(DriverNotFound):
        run(mount, "/run/nvidia/driver", max_attempts=1)
    assert f"/run/nvidia/driver {wording}: the containerised driver is not installed yet" in run.hints()[-1]
    assert run.lines[0].endswith("the root " + ("is empty" if present else "is missing or unreadable"))


def test_a_custom_root_with_something_else_in_it(tmp_path: Path, run: Run):
    (tmp_path / "drivers/580").mkdir(parents=True)
    with pytest.raises(DriverNotFound):
        run(tmp_path, "/opt/nvidia", max_attempts=1)
    assert "/opt/nvidia is not empty but holds no complete driver" in run.hints()[-1]


def test_a_partial_installation_names_what_is_missing(tmp_path: Path, run: Run):
    install(tmp_path, lib_dir="")
    with pytest.raises(DriverNotFound) as failure:
        run(tmp_path, "/", max_attempts=1)
    assert failure.value.probe.nvidia_smi == tmp_path / "usr/bin/nvidia-smi"
    assert run.hints()[1].startswith("hint: Only libnvidia-ml.so.1 is missing")


def test_the_driver_appearing_later_is_picked_up(tmp_path: Path, run: Run):
    run.on_sleep[3] = lambda: install(tmp_path)
    files = run(tmp_path, "/", interval_s=10.0)
    assert files.nvidia_smi == tmp_path / "usr/bin/nvidia-smi"
    assert run.sleeps == [10.0, 10.0, 10.0]
    assert [line.split(":")[0] for line in run.lines if line.startswith("attempt")] == [
        "attempt 1",
        "attempt 2",
        "attempt 3",
        "attempt 4",
    ]
    assert len([h for h in run.hints() if h.startswith("hint: The NVIDIA driver")]) == 1  # attempt 1 only


def test_hints_repeat_every_few_attempts_and_on_the_last_one(tmp_path: Path, run: Run):
    with pytest.raises(DriverNotFound) as failure:
        run(tmp_path, "/run/nvidia/driver", max_attempts=14, hint_every=6)
    first_hints = [h for h in run.hints() if h.startswith("hint: The NVIDIA driver")]
    assert len(first_hints) == 4  # attempts 1, 7, 13 and the last one, 14
    assert failure.value.attempts == 14


def test_a_timeout_stops_before_an_attempt_past_the_deadline(tmp_path: Path, run: Run, clock: FixedClock):
    with pytest.raises(DriverNotFound) as failure:
        run(tmp_path, "/", interval_s=10.0, timeout_s=25.0)
    assert failure.value.attempts == 3  # at 0 s, 10 s and 20 s; a fourth would start at 30 s
    assert clock.ticks == 20.0


def test_a_driver_that_does_not_work_keeps_prestart_waiting(tmp_path: Path, run: Run):
    install(tmp_path)
    answers = iter(["nvidia-smi exited with code 9: NVIDIA-SMI has failed", None])
    files = wait_for_driver(
        MountedDriverRoot(tmp_path),
        "/",
        PrestartSettings(interval_s=1.0),
        clock=run.clock,
        sleep=run.sleep,
        emit=run.lines.append,
        verify=lambda found: next(answers),
    )
    assert files.nvidia_smi == tmp_path / "usr/bin/nvidia-smi"
    assert run.lines[0].endswith("; nvidia-smi exited with code 9: NVIDIA-SMI has failed")
    assert "the nvidia kernel module is not loaded yet" in run.hints()[0]


def test_long_root_listings_are_cut(tmp_path: Path):
    for index in range(45):
        (tmp_path / f"dir{index:02d}").mkdir()
    line = status_line(probe(MountedDriverRoot(tmp_path), "/"), "/")
    assert line.endswith("dir39 ... (5 more)")


@pytest.mark.parametrize(
    ("given", "root"),
    [("", "/"), ("/", "/"), ("/run/nvidia/driver/", "/run/nvidia/driver"), ("opt/x", "/opt/x")],
)
def test_roots_are_normalised(given: str, root: str):
    assert normalise_root(given) == root
