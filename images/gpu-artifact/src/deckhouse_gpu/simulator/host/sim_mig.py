# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Simulated MIG control: the ``MigControl`` port over the cards of a ``SimulatedNVML``.

The refusals are the driver's, so that prepare and unprepare meet on the simulator what they meet on
hardware: instances only in MIG mode, only at one of the profile's placements, never over another
instance's memory slices, never past the card's compute slices, a profile's instance count or the
card's media engines (so one +me instance at most: the card has a single OFA engine). The state is
the SimulatedNVML card's own, under its lock, so ``snapshot()`` reports the mode set here.

Two behaviours are the simulator's choice. Switching MIG mode on an idle card takes effect at once:
on hardware the driver resets an idle card itself, and only some platforms still ask for a reset.
On a busy card the new mode stays pending (MigModePending) until ``SimulatedNVML.reset()``. And the
ids are deterministic: the lowest free GPU instance id from 1, compute instance 0 inside it, and a
``MIG-<uuid5>`` of the parent, the ids and a per-card creation count, so a re-created instance at the
same ids gets a new UUID, as it does on hardware.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from deckhouse_gpu.domain.inventory.nvml_snapshot import GpuInstanceProfile
from deckhouse_gpu.domain.prepare.mig_instance import MigInstance
from deckhouse_gpu.ports.mig import MigError, MigModePending
from deckhouse_gpu.ports.nvml import NVMLError
from deckhouse_gpu.simulator.host.nvml_data import MigGeometry
from deckhouse_gpu.simulator.host.sim_nvml import CardState, SimNVMLConfigError, SimulatedNVML


class MigOp:
    """The NVML calls a failure can be injected into, named as the real adapter reports them."""

    SET_MODE = "nvmlDeviceSetMigMode"
    CREATE = "nvmlDeviceCreateGpuInstanceWithPlacement"
    DESTROY = "nvmlGpuInstanceDestroy"


ALL_OPS: tuple[str, ...] = (MigOp.SET_MODE, MigOp.CREATE, MigOp.DESTROY)
# nvmlErrorString's texts for the codes the simulator answers with.
_TEXTS = {
    "NOT_SUPPORTED": "Not Supported",
    "INVALID_ARGUMENT": "Invalid Argument",
    "INSUFFICIENT_RESOURCES": "Insufficient Resources",
    "IN_USE": "In use by another client",
}
# Engines a GPU instance takes for itself; the card has as many as its largest profile.
_ENGINES = {"decoders": "decoder", "encoders": "encoder", "jpeg_engines": "JPEG", "ofa_engines": "OFA"}
_MIG_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://deckhouse.io/modules/gpu/simulated-mig")


def refusal(card: str, operation: str, code: str, why: str) -> MigError:
    """A MigError worded as the real adapter words NVML's refusals."""
    return MigError(f"{card}: {operation} failed: {_TEXTS[code]} (NVML_ERROR_{code}): {why}")


class SimulatedMig:
    def __init__(self, nvml: SimulatedNVML) -> None:
        self.nvml = nvml
        self._failures_lock = threading.Lock()
        self._failures: dict[tuple[str, str], list[str]] = {}  # (card, operation) -> NVML texts, in order

    def mig_enabled(self, card: str) -> bool:
        with self._card(card, "nvmlDeviceGetMigMode") as state:
            return state.model.mig is not None and state.mig_current

    def set_mig_mode(self, card: str, enabled: bool) -> None:
        with self._card(card, MigOp.SET_MODE) as state:
            self._inject(card, MigOp.SET_MODE)
            if state.model.mig is None:
                raise refusal(card, MigOp.SET_MODE, "NOT_SUPPORTED", f"{state.model.name} has no MIG")
            if enabled == state.mig_current:
                state.mig_pending = enabled  # cancels an earlier switch still pending
                return
            if not enabled and state.mig_instances:
                raise refusal(
                    card,
                    MigOp.SET_MODE,
                    "IN_USE",
                    f"{len(state.mig_instances)} MIG instance(s) exist; destroy them before disabling MIG",
                )
            state.mig_pending = enabled
            if state.busy:
                raise MigModePending(
                    f"{card}: MIG mode {'enable' if enabled else 'disable'} is pending: processes run on "
                    "the card; stop them, then reset the GPU for the new mode to take effect"
                )
            state.mig_current = enabled

    def card_busy(self, card: str) -> bool:
        with self._card(card, "nvmlDeviceGetComputeRunningProcesses") as state:
            return state.busy

    def instances(self, card: str) -> list[MigInstance]:
        with self._card(card, "nvmlDeviceGetGpuInstances") as state:
            return sorted(state.mig_instances, key=lambda instance: instance.gpu_instance_id)

    def create_instance(self, card: str, profile_id: int, placement_start: int) -> MigInstance:
        with self._card(card, MigOp.CREATE) as state:
            self._inject(card, MigOp.CREATE)
            mig = state.model.mig
            if mig is None or not state.mig_current:
                raise refusal(card, MigOp.CREATE, "NOT_SUPPORTED", "MIG mode is not enabled on the card")
            profile = next((p for p in mig.profiles if p.profile_id == profile_id), None)
            if profile is None:
                known = ", ".join(f"{p.profile_id} ({p.name})" for p in mig.profiles)
                why = f"no GPU instance profile {profile_id} on {state.model.name}; it has {known}"
                raise refusal(card, MigOp.CREATE, "INVALID_ARGUMENT", why)
            placement = next((p for p in profile.placements if p.start == placement_start), None)
            if placement is None:
                starts = ", ".join(str(p.start) for p in profile.placements)
                why = f"{placement_start} is not a placement of {profile.name}; its starts are {starts}"
                raise refusal(card, MigOp.CREATE, "INVALID_ARGUMENT", why)
            if (full := _no_room(state, mig, profile, placement_start, placement.size)) is not None:
                raise refusal(card, MigOp.CREATE, "INSUFFICIENT_RESOURCES", full)
            taken = {instance.gpu_instance_id for instance in state.mig_instances}
            gpu_instance = min(set(range(1, len(taken) + 2)) - taken)
            state.mig_created += 1
            serial = f"{state.uuid}/{gpu_instance}/0/{state.mig_created}"
            instance = MigInstance(
                card=card.lower(),
                gpu_instance_id=gpu_instance,
                compute_instance_id=0,
                profile_id=profile_id,
                placement_start=placement_start,
                placement_size=placement.size,
                uuid=f"MIG-{uuid.uuid5(_MIG_NAMESPACE, serial)}",
            )
            state.mig_instances.append(instance)
            return instance

    def destroy_instance(self, card: str, gpu_instance_id: int, compute_instance_id: int) -> None:
        with self._card(card, MigOp.DESTROY) as state:
            self._inject(card, MigOp.DESTROY)
            found = next((i for i in state.mig_instances if i.gpu_instance_id == gpu_instance_id), None)
            if found is None:
                return  # already gone: unprepare may run again after a crash
            if found.compute_instance_id != compute_instance_id:
                # Its own compute instance was not the one destroyed, and still holds the GPU instance.
                why = (
                    f"GPU instance {gpu_instance_id} still holds compute instance {found.compute_instance_id}"
                )
                raise refusal(card, MigOp.DESTROY, "IN_USE", why)
            state.mig_instances.remove(found)

    def fail_next(self, card: str, operation: str, detail: str = "Unknown Error", *, times: int = 1) -> None:
        """The next ``times`` calls of ``operation`` (a MigOp) on the card fail, changing nothing."""
        if operation not in ALL_OPS:
            raise SimNVMLConfigError(f"unknown MIG operation {operation!r}; known: {', '.join(ALL_OPS)}")
        with self._failures_lock:
            self._failures.setdefault((card.lower(), operation), []).extend([detail] * times)

    def clear_failures(self) -> None:
        with self._failures_lock:
            self._failures.clear()

    @contextmanager
    def _card(self, card: str, operation: str) -> Iterator[CardState]:
        try:
            with self.nvml.card_state(card) as state:
                yield state
        except NVMLError as error:  # no library, no such card, or a lost one
            raise MigError(f"{card}: {operation}: {error}") from error

    def _inject(self, card: str, operation: str) -> None:
        with self._failures_lock:
            queued = self._failures.get((card.lower(), operation))
            if not queued:
                return
            detail = queued.pop(0)
        raise MigError(f"{card}: {operation} failed: {detail}")


def _no_room(
    state: CardState, mig: MigGeometry, profile: GpuInstanceProfile, start: int, size: int
) -> str | None:
    """Why the card cannot take this instance now, or None when it can."""
    profiles = {p.profile_id: p for p in mig.profiles}
    existing = [(instance, profiles[instance.profile_id]) for instance in state.mig_instances]
    for instance, other in existing:
        if (
            start < instance.placement_start + instance.placement_size
            and instance.placement_start < start + size
        ):
            return (
                f"memory slices {start}-{start + size - 1} overlap GPU instance {instance.gpu_instance_id} "
                f"({other.name} at {instance.placement_start}:{instance.placement_size})"
            )
    if sum(1 for _, other in existing if other.profile_id == profile.profile_id) >= profile.instance_count:
        return f"the card holds at most {profile.instance_count} {profile.name} instance(s)"
    used = sum(other.slice_count for _, other in existing)
    if used + profile.slice_count > mig.compute_slices:
        return (
            f"{profile.name} needs {profile.slice_count} compute slices, {mig.compute_slices - used} are free"
        )
    for field, engine in _ENGINES.items():
        total = max(getattr(p, field) for p in mig.profiles)
        free = total - sum(getattr(other, field) for _, other in existing)
        if getattr(profile, field) > free:
            return f"{profile.name} needs {getattr(profile, field)} {engine} engine(s), {free} are free"
    return None
