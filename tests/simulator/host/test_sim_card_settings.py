# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Simulated cards' sharing settings: kept per card, kept on disk across processes, reset by a reboot;
every registered card setting by its name, so a new one needs no change of the simulated card."""

from __future__ import annotations

import json

import pytest

from deckhouse_gpu.domain.config import features
from deckhouse_gpu.domain.config.card_setting import CardSetting
from deckhouse_gpu.domain.config.mps_sharing import COMPUTE_MODE
from deckhouse_gpu.domain.config.time_slicing import TIME_SLICE, TimeSliceInterval
from deckhouse_gpu.ports.sharing import CardSettings, ComputeMode, SharingError
from deckhouse_gpu.simulator.host.driver_tree import write
from deckhouse_gpu.simulator.host.sim_card_settings import BOOT_ID_FILE, STATE_FILE, SimCardSettings

A30, T4 = "0000:17:00.0", "0000:b3:00.0"


@pytest.fixture
def root(tmp_path):
    write(tmp_path / BOOT_ID_FILE, "boot-1\n")
    return tmp_path


def process(root) -> SimCardSettings:
    """What one handler process has over the same host root."""
    return SimCardSettings.under(root, [A30, T4])


def test_cards_start_at_the_defaults_and_keep_what_is_set_each():
    settings: CardSettings = SimCardSettings([A30, T4])
    assert settings.read(A30, TIME_SLICE) == TimeSliceInterval.DEFAULT
    assert settings.read(A30, COMPUTE_MODE) == ComputeMode.DEFAULT
    settings.apply(A30, TIME_SLICE, TimeSliceInterval.LONG)
    settings.apply(T4, COMPUTE_MODE, ComputeMode.EXCLUSIVE_PROCESS)
    assert (settings.read(A30, TIME_SLICE), settings.read(A30, COMPUTE_MODE)) == (
        TimeSliceInterval.LONG,
        ComputeMode.DEFAULT,
    )
    assert (settings.read(T4, TIME_SLICE), settings.read(T4, COMPUTE_MODE)) == (
        TimeSliceInterval.DEFAULT,
        ComputeMode.EXCLUSIVE_PROCESS,
    )
    with pytest.raises(SharingError, match="'Sometimes' is not a value of timeSlice"):
        settings.apply(A30, TIME_SLICE, "Sometimes")


def test_a_setting_registered_later_is_kept_by_its_name_and_an_older_file_is_at_its_default(
    root, monkeypatch
):
    process(root).apply(A30, TIME_SLICE, TimeSliceInterval.LONG)  # a file of the settings before
    fan = CardSetting("fanMode", "fan", "Auto", ("Auto", "Max"), frozenset({"Max"}))
    monkeypatch.setattr(features, "CARD_SETTINGS", (*features.CARD_SETTINGS, fan))
    later = process(root)
    assert (later.read(A30, TIME_SLICE), later.read(A30, fan)) == ("Long", "Auto")
    later.apply(T4, fan, "Max")
    assert process(root).read(T4, fan) == "Max"
    assert json.loads((root / STATE_FILE).read_text())["cards"][T4]["fanMode"] == "Max"


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.time_slice("0000:ff:00.0"),
        lambda s: s.set_time_slice("0000:ff:00.0", TimeSliceInterval.SHORT),
        lambda s: s.compute_mode("0000:ff:00.0"),
        lambda s: s.set_compute_mode("0000:ff:00.0", ComputeMode.DEFAULT),
    ],
)
def test_an_unknown_card_is_refused(call):
    with pytest.raises(
        SharingError, match=r"card 0000:ff:00\.0: no such simulated card \(known: 0000:17:00\.0"
    ):
        call(SimCardSettings([A30, T4]))


def test_an_injected_failure_fails_every_call_about_that_card_until_healed():
    settings = SimCardSettings([A30, T4])
    settings.fail(A30, "nvidia-smi: Insufficient Permissions")
    with pytest.raises(SharingError, match=r"card 0000:17:00\.0: nvidia-smi: Insufficient Permissions"):
        settings.set_time_slice(A30, TimeSliceInterval.SHORT)
    with pytest.raises(SharingError):
        settings.compute_mode(A30)
    settings.set_compute_mode(T4, ComputeMode.EXCLUSIVE_PROCESS)  # the other card works
    settings.fail(A30, None)
    settings.set_time_slice(A30, TimeSliceInterval.SHORT)
    assert settings.time_slice(A30) == TimeSliceInterval.SHORT
    assert settings.calls == [
        ("computeMode", T4, "ExclusiveProcess"),
        ("timeSlice", A30, "Short"),
    ]


def test_what_one_process_set_the_next_one_finds(root):
    first = process(root)
    assert not (root / STATE_FILE).exists()  # nothing set, nothing written
    first.set_compute_mode(A30, ComputeMode.EXCLUSIVE_PROCESS)
    first.set_time_slice(T4, TimeSliceInterval.MEDIUM)
    second = process(root)
    assert second.compute_mode(A30) == ComputeMode.EXCLUSIVE_PROCESS
    assert second.time_slice(T4) == TimeSliceInterval.MEDIUM
    second.set_compute_mode(A30, ComputeMode.DEFAULT)
    assert first.compute_mode(A30) == ComputeMode.DEFAULT  # every call reads the file again
    saved = json.loads((root / STATE_FILE).read_text())
    assert saved["bootID"] == "boot-1"
    assert saved["cards"][T4] == {"computeMode": "Default", "timeSlice": "Medium"}


def test_a_reboot_brings_every_card_back_to_the_defaults(root):
    process(root).set_compute_mode(A30, ComputeMode.EXCLUSIVE_PROCESS)
    process(root).set_time_slice(A30, TimeSliceInterval.LONG)
    write(root / BOOT_ID_FILE, "boot-2\n")
    after = process(root)
    assert after.compute_mode(A30) == ComputeMode.DEFAULT
    assert after.time_slice(A30) == TimeSliceInterval.DEFAULT


def test_a_broken_file_is_a_sharing_error_saying_what_to_do(root):
    write(root / STATE_FILE, "{not json")
    with pytest.raises(SharingError, match="remove it to start with the cards at their defaults"):
        process(root).compute_mode(A30)
    write(
        root / STATE_FILE,
        json.dumps({"version": 1, "bootID": "boot-1", "cards": {A30: {"computeMode": "x"}}}),
    )
    with pytest.raises(SharingError, match="bad content"):
        process(root).compute_mode(A30)
