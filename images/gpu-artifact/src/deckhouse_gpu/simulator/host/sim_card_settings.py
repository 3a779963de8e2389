# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Sharing settings of simulated cards (``ports.sharing.CardSettings``): every card setting the
strategies register (``features.CARD_SETTINGS``), kept by its name, so a new setting needs no
change here.

In memory by default. ``SimCardSettings.under(host_root, cards)`` keeps them in a JSON file under
the simulated host root instead, as a card keeps them across a crashed plugin: every call loads
the file (another process may have changed it) and every change is written back atomically,
under an flock, as ``sim_mig_state`` does for MIG. The file records the host's boot ID: after a
reboot a card is back at every setting's default, as the driver starts it. The cards are given as PCI
addresses (the simulated NVML's ``device_addresses()``), so nothing here depends on how the cards
are simulated.

Unlike the real card, whose interval nvidia-smi only prints as text, the simulated one answers
``time_slice``, so tests can see what prepare set.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from deckhouse_gpu.adapters.files.atomic_file import replace_file
from deckhouse_gpu.domain.config import features
from deckhouse_gpu.domain.config.card_setting import CardSetting
from deckhouse_gpu.domain.config.mps_sharing import COMPUTE_MODE, ComputeMode
from deckhouse_gpu.domain.config.time_slicing import TIME_SLICE, TimeSliceInterval
from deckhouse_gpu.ports.sharing import SharingError
from deckhouse_gpu.simulator.host.state_files import file_lock, read_boot_id

STATE_FILE = "var/lib/gpu-sim/sharing-state.json"
BOOT_ID_FILE = "proc/sys/kernel/random/boot_id"
VERSION = 1


def _defaults() -> dict[str, str]:
    return {setting.name: setting.default for setting in features.CARD_SETTINGS}


class SimCardSettings:
    def __init__(
        self, cards: Iterable[str], path: Path | None = None, boot_id_path: Path | None = None
    ) -> None:
        self.values = {card: _defaults() for card in cards}  # card -> setting name -> value
        self.path, self.boot_id_path = path, boot_id_path
        self.failures: dict[str, str] = {}
        self.calls: list[tuple[str, str, str]] = []  # (setting, card, value) of every change

    @classmethod
    def under(cls, host_root: Path, cards: Iterable[str]) -> SimCardSettings:
        """The settings at ``<host-root>/var/lib/gpu-sim/sharing-state.json``, keyed to the boot ID."""
        return cls(cards, host_root / STATE_FILE, host_root / BOOT_ID_FILE)

    def fail(self, card: str, message: str | None = "injected failure") -> None:
        """Makes every call about ``card`` fail with ``message``, as a broken card would; None heals it."""
        if message is None:
            self.failures.pop(card, None)
        else:
            self.failures[card] = message

    def appeared(self, card: str) -> None:
        """A card the driver binds (hot-plug or rebind) starts at the driver's defaults."""
        self.values[card] = _defaults()

    def read(self, card: str, setting: CardSetting) -> str | None:
        return self._value(card, setting)  # a simulated card always tells

    def apply(self, card: str, setting: CardSetting, value: str) -> None:
        if value not in setting.values:
            raise SharingError(f"card {card}: {value!r} is not a value of {setting.name}")
        with self._synced(card, save=True):
            self.values[card][setting.name] = value
            self.calls.append((setting.name, card, value))

    # By name, for tests: the two settings the strategies need today (the port is read and apply).
    def time_slice(self, card: str) -> TimeSliceInterval:
        return TimeSliceInterval(self._value(card, TIME_SLICE))

    def set_time_slice(self, card: str, interval: str) -> None:
        self.apply(card, TIME_SLICE, interval)

    def compute_mode(self, card: str) -> ComputeMode:
        return ComputeMode(self._value(card, COMPUTE_MODE))

    def set_compute_mode(self, card: str, mode: str) -> None:
        self.apply(card, COMPUTE_MODE, mode)

    def _value(self, card: str, setting: CardSetting) -> str:
        with self._synced(card, save=False):
            return self.values[card].get(setting.name, setting.default)

    @contextlib.contextmanager
    def _synced(self, card: str, save: bool) -> Iterator[None]:
        if card not in self.values:
            known = ", ".join(sorted(self.values)) or "none"
            raise SharingError(f"card {card}: no such simulated card (known: {known})")
        if card in self.failures:
            raise SharingError(f"card {card}: {self.failures[card]}")
        if self.path is None:
            yield
            return
        with self._file_lock():
            self._load()
            yield
            if save:
                self._save()

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        assert self.path is not None
        with file_lock(self.path):
            yield

    def _boot_id(self) -> str:
        return read_boot_id(self.boot_id_path)

    def _load(self) -> None:
        assert self.path is not None
        try:
            document = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return
        except (OSError, ValueError) as error:
            raise self._unreadable(str(error)) from None
        try:
            if not isinstance(document, dict) or document.get("version") != VERSION:
                raise ValueError(f"expected an object of version {VERSION}")
            if document.get("bootID", "") != self._boot_id():
                # A reboot: the driver starts every card at the defaults.
                self.values = {card: _defaults() for card in self.values}
                return
            for card, saved in document["cards"].items():
                if card in self.values:
                    self.values[card] = {
                        setting.name: _saved(saved, setting) for setting in features.CARD_SETTINGS
                    }
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise self._unreadable(f"bad content: {error!r}") from None

    def _save(self) -> None:
        assert self.path is not None
        cards = {card: dict(self.values[card]) for card in sorted(self.values)}
        document = {"version": VERSION, "bootID": self._boot_id(), "cards": cards}
        replace_file(self.path, (json.dumps(document, indent=2, sort_keys=True) + "\n").encode())

    def _unreadable(self, why: str) -> SharingError:
        return SharingError(
            f"simulated sharing state {self.path} is unreadable ({why}); remove it to start with the "
            "cards at their defaults"
        )


def _saved(saved: dict[str, str], setting: CardSetting) -> str:
    # A setting the file has no line for (written before it was registered) is at its default.
    value = saved.get(setting.name, setting.default)
    if value not in setting.values:
        raise ValueError(f"{setting.name} {value!r} is not one of {', '.join(setting.values)}")
    return value
