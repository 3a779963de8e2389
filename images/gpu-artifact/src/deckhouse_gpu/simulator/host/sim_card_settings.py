# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Sharing settings of simulated cards (``ports.sharing.CardSettings``): compute mode and interval.

In memory by default. ``SimCardSettings.under(host_root, cards)`` keeps them in a JSON file under
the simulated host root instead, as a card keeps them across a crashed plugin: every call loads
the file (another process may have changed it) and every change is written back atomically,
under an flock, as ``sim_mig_state`` does for MIG. The file records the host's boot ID: after a
reboot a card is back at Default for both, as the driver starts it. The cards are given as PCI
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
from deckhouse_gpu.domain.config.time_slicing import TimeSliceInterval
from deckhouse_gpu.ports.sharing import ComputeMode, SharingError
from deckhouse_gpu.simulator.host.state_files import file_lock, read_boot_id

STATE_FILE = "var/lib/gpu-sim/sharing-state.json"
BOOT_ID_FILE = "proc/sys/kernel/random/boot_id"
VERSION = 1


class SimCardSettings:
    def __init__(
        self, cards: Iterable[str], path: Path | None = None, boot_id_path: Path | None = None
    ) -> None:
        self.modes = dict.fromkeys(cards, ComputeMode.DEFAULT)
        self.intervals = dict.fromkeys(self.modes, TimeSliceInterval.DEFAULT)
        self.path, self.boot_id_path = path, boot_id_path
        self.failures: dict[str, str] = {}
        self.calls: list[tuple[str, str, str]] = []  # (operation, card, value) of every change

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

    def time_slice(self, card: str) -> TimeSliceInterval | None:
        with self._synced(card, save=False):
            return self.intervals[card]

    def set_time_slice(self, card: str, interval: TimeSliceInterval) -> None:
        with self._synced(card, save=True):
            self.intervals[card] = interval
            self.calls.append(("set_time_slice", card, str(interval)))

    def compute_mode(self, card: str) -> ComputeMode:
        with self._synced(card, save=False):
            return self.modes[card]

    def set_compute_mode(self, card: str, mode: ComputeMode) -> None:
        with self._synced(card, save=True):
            self.modes[card] = mode
            self.calls.append(("set_compute_mode", card, str(mode)))

    @contextlib.contextmanager
    def _synced(self, card: str, save: bool) -> Iterator[None]:
        if card not in self.modes:
            known = ", ".join(sorted(self.modes)) or "none"
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
                self.modes = dict.fromkeys(self.modes, ComputeMode.DEFAULT)
                self.intervals = dict.fromkeys(self.modes, TimeSliceInterval.DEFAULT)
                return
            for card, saved in document["cards"].items():
                if card in self.modes:
                    self.modes[card] = ComputeMode(saved["computeMode"])
                    self.intervals[card] = TimeSliceInterval(saved["timeSlice"])
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise self._unreadable(f"bad content: {error!r}") from None

    def _save(self) -> None:
        assert self.path is not None
        cards = {
            card: {"computeMode": str(self.modes[card]), "timeSlice": str(self.intervals[card])}
            for card in sorted(self.modes)
        }
        document = {"version": VERSION, "bootID": self._boot_id(), "cards": cards}
        replace_file(self.path, (json.dumps(document, indent=2, sort_keys=True) + "\n").encode())

    def _unreadable(self, why: str) -> SharingError:
        return SharingError(
            f"simulated sharing state {self.path} is unreadable ({why}); remove it to start with the "
            "cards at their defaults"
        )
