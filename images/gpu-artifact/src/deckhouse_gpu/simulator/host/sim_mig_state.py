# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Simulated MIG state that outlives the process, as a real GPU's outlives a crashed plugin.

``SimulatedMig`` keeps each card's MIG mode and instances in memory: a killed gpu-handler would
take them along and its successor would find clean cards, so a crash test could never see a
leaked instance. ``PersistentSimMig`` keeps them in one JSON file under the host root instead.
Every call first loads the file into the ``SimulatedNVML`` cards (another process may have changed
them), and every change is written back atomically (temporary file, fsync, rename), so a SIGKILL
leaves the state of before or after the call, never a mix, as the driver applies a change whole.
The rules stay ``SimulatedMig``'s; this class only adds the storage. Change the cards through it:
what is set on the ``SimulatedNVML`` directly is overwritten by the next load.

Load, change and save run under an flock on a file next to the state, so two processes (two
handler pods in a rolling update, the crash tests' launchers) never lose each other's change; on
hardware the driver serialises them. Loading into the shared ``SimulatedNVML`` also makes its
``snapshot()`` (the capabilities side) report the mode in the file.

The file records the host's boot ID: after a reboot no instance is left and a pending MIG mode has
taken effect (the reset applied it), while the mode itself persists, as on A100/A30/H100.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from deckhouse_gpu.adapters.files.atomic_file import replace_file
from deckhouse_gpu.domain.prepare.mig_instance import MigInstance
from deckhouse_gpu.ports.mig import MigError
from deckhouse_gpu.simulator.host.sim_mig import SimulatedMig
from deckhouse_gpu.simulator.host.sim_nvml import CardState, SimulatedNVML
from deckhouse_gpu.simulator.host.state_files import file_lock, read_boot_id

STATE_FILE = "var/lib/gpu-sim/mig-state.json"
BOOT_ID_FILE = "proc/sys/kernel/random/boot_id"
VERSION = 1
# Python field of MigInstance -> its key in the file.
_INSTANCE_KEYS = {
    "gpu_instance_id": "gpuInstanceID",
    "compute_instance_id": "computeInstanceID",
    "profile_id": "profileID",
    "placement_start": "placementStart",
    "placement_size": "placementSize",
}


class PersistentSimMig(SimulatedMig):
    """Implements MigControl: SimulatedMig's rules, with the cards' MIG part kept in ``path``."""

    def __init__(self, nvml: SimulatedNVML, path: Path, boot_id_path: Path | None = None) -> None:
        super().__init__(nvml)
        self.path = path
        self.boot_id_path = boot_id_path

    @classmethod
    def under(cls, nvml: SimulatedNVML, host_root: Path) -> PersistentSimMig:
        """The state at ``<host-root>/var/lib/gpu-sim/mig-state.json``, keyed to the host's boot ID."""
        return cls(nvml, host_root / STATE_FILE, host_root / BOOT_ID_FILE)

    def load(self) -> None:
        """Restores the cards as the file has them (no file: they stay as configured); MigError when
        the file cannot be read or trusted."""
        with self._file_lock():
            self._load()

    def mig_enabled(self, card: str) -> bool:
        with self._synced(save=False):
            return super().mig_enabled(card)

    def set_mig_mode(self, card: str, enabled: bool) -> None:
        with self._synced(save=True):  # saved on MigModePending too: the pending mode changed
            super().set_mig_mode(card, enabled)

    def card_busy(self, card: str) -> bool:
        with self._synced(save=False):
            return super().card_busy(card)

    def instances(self, card: str) -> list[MigInstance]:
        with self._synced(save=False):
            return super().instances(card)

    def create_instance(self, card: str, profile_id: int, placement_start: int) -> MigInstance:
        with self._synced(save=True):
            return super().create_instance(card, profile_id, placement_start)

    def destroy_instance(self, card: str, gpu_instance_id: int, compute_instance_id: int) -> None:
        with self._synced(save=True):
            super().destroy_instance(card, gpu_instance_id, compute_instance_id)

    @contextlib.contextmanager
    def _synced(self, save: bool) -> Iterator[None]:
        with self._file_lock():
            self._load()
            try:
                yield
            finally:
                if save:  # a refused call changed nothing, and saving it again is harmless
                    self._save()

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        with file_lock(self.path):
            yield

    def _boot_id(self) -> str:
        return read_boot_id(self.boot_id_path)

    def _load(self) -> None:
        try:
            document = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return
        except (OSError, ValueError) as error:
            raise self._unreadable(str(error)) from None
        try:
            cards = _cards_of(document)
            rebooted = document.get("bootID", "") != self._boot_id()
            with self.nvml.all_card_states() as states:
                for address, saved in cards.items():
                    state = states.get(address)
                    # Another model or UUID in the slot is another card: it starts afresh.
                    if state is not None and (saved["model"], saved["uuid"]) == (state.model.key, state.uuid):
                        _restore(address, state, saved, rebooted)
        except (KeyError, TypeError, ValueError) as error:
            raise self._unreadable(f"bad content: {error!r}") from None

    def _save(self) -> None:
        with self.nvml.all_card_states() as states:
            cards = {
                address: _card_json(state) for address, state in sorted(states.items()) if state.model.mig
            }
        document = {"version": VERSION, "bootID": self._boot_id(), "cards": cards}
        data = (json.dumps(document, indent=2, sort_keys=True) + "\n").encode()
        replace_file(self.path, data)

    def _unreadable(self, why: str) -> MigError:
        return MigError(
            f"simulated MIG state {self.path} is unreadable ({why}); remove it to start with the "
            "cards as configured"
        )


def _cards_of(document: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(document, dict) or document.get("version") != VERSION:
        raise ValueError(f"expected an object of version {VERSION}")
    cards = document["cards"]
    if not isinstance(cards, dict):
        raise TypeError("cards: expected an object")
    return cards


def _card_json(state: CardState) -> dict[str, Any]:
    return {
        "model": state.model.key,
        "uuid": state.uuid,
        "migCurrent": state.mig_current,
        "migPending": state.mig_pending,
        "created": state.mig_created,
        "instances": [
            {"uuid": instance.uuid, **{key: getattr(instance, name) for name, key in _INSTANCE_KEYS.items()}}
            for instance in state.mig_instances
        ],
    }


def _restore(address: str, state: CardState, saved: dict[str, Any], rebooted: bool) -> None:
    state.mig_current, state.mig_pending = bool(saved["migCurrent"]), bool(saved["migPending"])
    state.mig_created = int(saved["created"])
    state.mig_instances = [
        MigInstance(
            card=address,
            uuid=str(item["uuid"]),
            **{name: int(item[key]) for name, key in _INSTANCE_KEYS.items()},
        )
        for item in saved["instances"]
    ]
    if rebooted:  # instances go with the driver; the reset a reboot is applies the pending mode
        state.mig_instances = []
        state.mig_current = state.mig_pending
