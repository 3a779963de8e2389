# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's ports wrapped so that its metrics see what passes through them: NVML errors of
the capabilities pass, MIG changes and their failures, and what the checkpoint holds.

Each wrapper implements its port and passes everything on unchanged (anything else the wrapped
object has too), so the services never know they are measured.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from deckhouse_gpu.domain.inventory.nvml_snapshot import DeviceSnapshot, DriverInfo
from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, Decoded
from deckhouse_gpu.domain.prepare.mig_instance import MigInstance
from deckhouse_gpu.ports.checkpoint import CheckpointStore
from deckhouse_gpu.ports.mig import MigControl, MigError
from deckhouse_gpu.ports.nvml import NVML, NVMLError

T = TypeVar("T")


class NvmlErrorObserver(Protocol):
    def observe_nvml_error(self, query: str, error: str) -> None: ...


class MigObserver(Protocol):
    def observe_mig(self, operation: str, ok: bool) -> None: ...


class CheckpointObserver(Protocol):
    def observe_checkpoint(self, checkpoint: Checkpoint) -> None: ...


class MeteredNVML:
    def __init__(self, inner: NVML, observer: NvmlErrorObserver) -> None:
        self.inner, self.observer = inner, observer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _call(self, query: str, call: Callable[[], T]) -> T:
        try:
            return call()
        except NVMLError as error:
            self.observer.observe_nvml_error(query, type(error).__name__)
            raise

    def driver(self) -> DriverInfo:
        return self._call("driver", self.inner.driver)

    def device_addresses(self) -> list[str]:
        return self._call("device_addresses", self.inner.device_addresses)

    def snapshot(self, pci_address: str) -> DeviceSnapshot:
        return self._call("snapshot", lambda: self.inner.snapshot(pci_address))


class MeteredMig:
    def __init__(self, inner: MigControl, observer: MigObserver) -> None:
        self.inner, self.observer = inner, observer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _call(self, operation: str, call: Callable[[], T]) -> T:
        try:
            result = call()
        except MigError:
            self.observer.observe_mig(operation, False)
            raise
        self.observer.observe_mig(operation, True)
        return result

    def mig_enabled(self, card: str) -> bool:
        return self._call("mig_enabled", lambda: self.inner.mig_enabled(card))

    def set_mig_mode(self, card: str, enabled: bool) -> None:
        self._call("set_mig_mode", lambda: self.inner.set_mig_mode(card, enabled))

    def card_busy(self, card: str) -> bool:
        return self._call("card_busy", lambda: self.inner.card_busy(card))

    def instances(self, card: str) -> list[MigInstance]:
        return self._call("instances", lambda: self.inner.instances(card))

    def create_instance(self, card: str, profile_id: int, placement_start: int) -> MigInstance:
        return self._call(
            "create_instance", lambda: self.inner.create_instance(card, profile_id, placement_start)
        )

    def destroy_instance(self, card: str, gpu_instance_id: int, compute_instance_id: int) -> None:
        self._call(
            "destroy_instance",
            lambda: self.inner.destroy_instance(card, gpu_instance_id, compute_instance_id),
        )


class MeteredCheckpointStore:
    """Tells the observer the checkpoint at every load and save: prepared claims by offer type."""

    def __init__(self, inner: CheckpointStore, observer: CheckpointObserver) -> None:
        self.inner, self.observer = inner, observer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def load(self) -> Decoded:
        decoded = self.inner.load()
        self.observer.observe_checkpoint(decoded.checkpoint)
        return decoded

    def corrupted_before(self) -> bool:
        return self.inner.corrupted_before()

    def save(self, checkpoint: Checkpoint) -> None:
        self.inner.save(checkpoint)
        self.observer.observe_checkpoint(checkpoint)
