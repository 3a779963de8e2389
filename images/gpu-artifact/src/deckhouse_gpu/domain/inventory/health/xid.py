# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What an Xid error means for the card that reported it (DESIGN.md S4.2.3).

The NVIDIA kernel driver numbers its errors (Xid) and NVML hands the critical ones to whoever
registered for ``nvmlEventTypeXidCriticalError``. Many are the application's own fault (a bad
kernel, a page fault) and say nothing about the card; a few mean the card is gone or must be
reset. The table below is ours: each known Xid, what it means and what it does to the card:

- ``APPLICATION``: the application failed, the card is fine: logged, nothing else;
- ``CARD_LOST``: the card has fallen off the bus: ``HardwareHealthy=False``, taint ``NoExecute``;
- ``RESET_REQUIRED``: nothing should run on the card until it is reset: ``False``, ``NoExecute``;
- ``DEGRADED``: the card still runs what it runs but should be reset once that is done (a memory
  row waits for its remap, correctable errors pile up): ``False``, ``NoSchedule``;
- ``UNCLASSIFIED``: any Xid not in the table: logged and an Event on the card, no health change,
  since we cannot tell what it does to the card.

A fatal Xid (the last three but one) is sticky: the card stays unhealthy until gpu-handler
restarts on the node or the card's PhysicalGPU goes and comes back (udev remove and add); NVML
never says that a card has recovered from an Xid. The condition's message begins with
``Xid <number>`` (``verdict``), which is how the device taint reads the number back
(``xid_of_message``): format and parser live here together.

Pure: no NVML, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from deckhouse_gpu.domain.inventory.health.hardware_health import REASON_XID, Verdict
from deckhouse_gpu.domain.inventory.physicalgpu import ConditionStatus


class XidClass(StrEnum):
    APPLICATION = "Application"
    CARD_LOST = "CardLost"
    RESET_REQUIRED = "ResetRequired"
    DEGRADED = "Degraded"
    UNCLASSIFIED = "Unclassified"


@dataclass(frozen=True)
class XidInfo:
    xid: int
    meaning: str
    kind: XidClass


def _table(kind: XidClass, entries: dict[int, str]) -> dict[int, XidInfo]:
    return {xid: XidInfo(xid, meaning, kind) for xid, meaning in entries.items()}


# NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors) names the errors; the classes are our
# reading of its recommended actions: "restart the application" is APPLICATION, "reset the GPU" or
# "reboot" now is RESET_REQUIRED (CARD_LOST for the card that left the bus), a reset "at a
# convenient time" is DEGRADED.
XID_TABLE: dict[int, XidInfo] = {
    **_table(
        XidClass.APPLICATION,
        {
            13: "graphics engine exception",
            31: "GPU memory page fault",
            43: "GPU stopped processing",
            45: "preemptive cleanup, due to previous errors",
            68: "video processor exception",
            109: "context switch timeout",
        },
    ),
    **_table(XidClass.CARD_LOST, {79: "GPU has fallen off the bus"}),
    **_table(
        XidClass.RESET_REQUIRED,
        {
            48: "double-bit ECC error",
            61: "internal micro-controller breakpoint or warning",
            62: "internal micro-controller halt",
            64: "ECC page retirement or row remapping failure",
            74: "NVLink error",
            95: "uncontained ECC error",
            119: "GSP RPC timeout",
            120: "GSP error",
            140: "unrecovered ECC error",
        },
    ),
    **_table(
        XidClass.DEGRADED,
        {
            63: "ECC page retirement or row remapping event",
            92: "high single-bit ECC error rate",
            94: "contained ECC error",
        },
    ),
}
FATAL = (XidClass.CARD_LOST, XidClass.RESET_REQUIRED, XidClass.DEGRADED)
# Fatal classes whose card must not keep its Pods either (the taint's NoExecute).
EVICTING = (XidClass.CARD_LOST, XidClass.RESET_REQUIRED)
_SEVERITY = {kind: rank for rank, kind in enumerate(FATAL)}  # lower: worse
_WHAT_TO_DO = {
    XidClass.CARD_LOST: "the card is lost: reboot the node (a card off the bus rarely survives "
    "nvidia-smi -r)",
    XidClass.RESET_REQUIRED: "nothing should run on the card until it is reset: reset the GPU "
    "(nvidia-smi -r -i {address}) or reboot the node, then restart gpu-handler on it",
    XidClass.DEGRADED: "the card still runs its Pods but takes no new ones: once they are done, reset "
    "the GPU (nvidia-smi -r -i {address}) or reboot the node, then restart gpu-handler on it",
}
_STICKY = "it stays unhealthy until gpu-handler restarts on the node or the card is removed and added"
_MESSAGE_XID = re.compile(r"^Xid (\d+)\b")


def classify(xid: int) -> XidInfo:
    return XID_TABLE.get(xid) or XidInfo(xid, "not in the module's Xid table", XidClass.UNCLASSIFIED)


def is_fatal(xid: int) -> bool:
    return classify(xid).kind in FATAL


def worst(xids: Iterable[int]) -> XidInfo | None:
    """The most severe fatal Xid of ``xids`` (the first of equals); None when none is fatal."""
    fatal = [classify(xid) for xid in xids if is_fatal(xid)]
    return min(fatal, key=lambda info: _SEVERITY[info.kind]) if fatal else None


def verdict(address: str, xids: Sequence[int]) -> Verdict | None:
    """``HardwareHealthy=False`` for the card's fatal Xids (in the order they came); None if none."""
    info = worst(xids)
    if info is None:
        return None
    others = sorted({xid for xid in xids if xid != info.xid and is_fatal(xid)})
    also = f" (also Xid {', '.join(map(str, others))})" if others else ""
    action = _WHAT_TO_DO[info.kind].format(address=address)
    message = f"Xid {info.xid} ({info.meaning}){also}: {action}; {_STICKY}"
    return Verdict(ConditionStatus.FALSE, REASON_XID, message)


def xid_of_message(message: str) -> int | None:
    """The Xid number ``verdict`` put at the start of the message; None for any other text."""
    match = _MESSAGE_XID.match(message)
    return int(match.group(1)) if match else None


def notice(address: str, xid: int) -> str:
    """What an Event says of an Xid that changes nothing (UNCLASSIFIED)."""
    return (
        f"Xid {xid} on GPU {address}: {classify(xid).meaning}; the card's health is unchanged. "
        "Look it up in NVIDIA's Xid catalog and read the node's kernel log (dmesg | grep -i xid)"
    )
