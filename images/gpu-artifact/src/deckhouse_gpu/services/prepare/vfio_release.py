# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""VFIO at prepare, what it needs and how it is undone (DESIGN.md D7, D9; docs/VFIO.md).

``VfioSide`` is what prepare is given to pass cards through. ``give_back`` undoes a claim's moves
for unprepare, for the rollback of an interrupted prepare and for the start-up cleanup: every
function back on the driver it had, newest first, the checkpoint saved after each (so an
interrupted give-back resumes where it stopped), then a bounded wait until NVML sees the cards
that went back to nvidia. A card that does not come back is said in a Warning Event on its
PhysicalGPU; its HardwareHealthy condition says it too (NVML does not see it), and so it is not
offered. ``clean_leftovers`` gives back what the ledger says this driver moved but no entry owns.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from deckhouse_gpu.domain.inventory.desired import node_selector
from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, ClaimEntry
from deckhouse_gpu.domain.prepare.vfio import NVIDIA_DRIVER
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, KubeAPI, KubeError
from deckhouse_gpu.ports.vfio import GpuProcesses, VfioError, VfioHost, VfioLedger, VfioPayloads
from deckhouse_gpu.services.runtime.events import EventRecorder

log = logging.getLogger(__name__)

Save = Callable[[Checkpoint], None]
NOT_BACK = "VFIOCardNotBack"


@dataclass(frozen=True)
class VfioSide:
    host: VfioHost
    gpus: GpuProcesses
    payloads: VfioPayloads
    ledger: VfioLedger
    api: KubeAPI  # the Pods that reserve a claim (the annotation), the cards for Events
    node: str
    events: EventRecorder | None = None
    return_timeout: float = 10.0  # how long a give-back waits for NVML to see a card again
    poll_interval: float = 0.2
    sleep: Callable[[float], None] = field(default=time.sleep)
    monotonic: Callable[[], float] = field(default=time.monotonic)


def give_back(
    entry: ClaimEntry, checkpoint: Checkpoint, side: VfioSide, save: Save, strict: bool
) -> Checkpoint:
    """Every function ``entry`` moved, back on its driver; ``strict``: a failure raises (the entry
    keeps what is not back, and the kubelet's retry resumes), else it is logged and left to the
    ledger. Deletes the claim's payload."""
    current = entry
    for record in reversed(entry.vfio):
        try:
            side.host.restore(record.function, record.driver)
        except VfioError:
            if strict:
                raise
            log.exception("function not given back; the ledger keeps it", extra={"function": record.function})
            continue
        side.ledger.remove(record.function)
        current = current.without_vfio(record.function)
        checkpoint = checkpoint.with_entry(current)
        save(checkpoint)
    wait_back([r.card for r in entry.vfio if r.function == r.card and r.driver == NVIDIA_DRIVER], side)
    side.payloads.delete_claim(entry.uid)
    return checkpoint


def wait_back(cards: list[str], side: VfioSide) -> list[str]:
    """Waits until NVML sees every card given back to nvidia; the ones it does not see by the
    deadline are reported and returned."""
    waiting = sorted(set(cards))
    deadline = side.monotonic() + side.return_timeout
    while waiting:
        waiting = [card for card in waiting if not side.gpus.visible(card)]
        if not waiting or side.monotonic() >= deadline:
            break
        side.sleep(side.poll_interval)
    for card in waiting:
        _not_back(card, side)
    return waiting


def clean_leftovers(checkpoint: Checkpoint, side: VfioSide) -> None:
    """Gives back the functions the ledger has and no entry owns (a checkpoint set aside, an entry
    dropped while its give-back failed), and deletes payloads no entry owns."""
    owned = checkpoint.owned_vfio()
    back = []
    for function, driver in side.ledger.entries().items():
        if function in owned:
            continue
        log.warning(
            "giving back a function left on vfio-pci that no claim owns", extra={"function": function}
        )
        try:
            side.host.restore(function, driver)
        except VfioError:
            log.exception("leftover function not given back", extra={"function": function})
            continue
        side.ledger.remove(function)
        if driver == NVIDIA_DRIVER:
            back.append(function)
    wait_back(back, side)  # only a GPU function binds to nvidia
    for uid in side.payloads.claims_with_files() - set(checkpoint.claims):
        side.payloads.delete_claim(uid)


def _not_back(card: str, side: VfioSide) -> None:
    message = (
        f"card {card} was given back to the nvidia driver, but NVML does not see it after "
        f"{side.return_timeout:g} s: it is not offered until it does; check the kernel log (dmesg) "
        "for the nvidia driver's probe of the card, a GPU reset (nvidia-smi -r) or a reboot may be needed"
    )
    log.warning("card not back after VFIO", extra={"card": card, "seconds": side.return_timeout})
    if side.events is None:
        return
    with contextlib.suppress(KubeError):
        cards = side.api.list(PHYSICAL_GPUS, label_selector=node_selector(side.node)).items
        for obj in cards:
            if ((obj.get("status") or {}).get("pciInfo") or {}).get("address") == card:
                side.events.record(obj, "Warning", NOT_BACK, message)
