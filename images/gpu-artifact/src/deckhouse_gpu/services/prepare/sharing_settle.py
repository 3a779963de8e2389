# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Bringing a node's sharing in line with its checkpoint: the card settings the strategies need
(``features.CARD_SETTINGS``: the time-slice interval, MPS's compute mode) and MPS daemons
(docs/SHARING.md).

What must be set follows from the checkpoint alone (every entry, half-prepared ones included,
records its devices' sharing before the host is touched, DESIGN.md D9), so prepare, its undo,
unprepare, the rollback of a leftover and the cleanup at start all call the same functions with
the checkpoint as it is (or will be) and converge on the same host state, whatever crashed where.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from deckhouse_gpu.domain.config import features
from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint
from deckhouse_gpu.domain.prepare.mps import MpsDaemon, wanted_daemons
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.domain.prepare.sharing import card_settings
from deckhouse_gpu.ports.sharing import SharingError
from deckhouse_gpu.services.prepare.sharing_host import SharingHost

log = logging.getLogger(__name__)


def wanted(checkpoint: Checkpoint, host: SharingHost) -> dict[str, MpsDaemon]:
    return wanted_daemons(checkpoint.claims.values(), host.node, host.plugin_dir)


def stop_unwanted(
    checkpoint: Checkpoint, host: SharingHost, sleep: Callable[[float], None] = time.sleep
) -> None:
    """Stops the daemons no entry needs any more and waits (bounded) until they are gone, so a MIG
    instance or a compute mode they held can be changed next; a daemon still going after the wait
    makes that next change fail with its own clear error, and the kubelet retries."""
    keep = wanted(checkpoint, host)
    going = [name for name in host.daemons.running() if name not in keep]
    for name in going:
        log.info("stopping an MPS daemon no claim needs any more", extra={"pod": name})
        host.daemons.stop(name)
    deadline = time.monotonic() + host.ready_timeout
    while going and time.monotonic() < deadline:
        running = host.daemons.running()
        going = [name for name in going if name in running]
        if going:
            sleep(host.poll_interval)


def start_wanted(
    checkpoint: Checkpoint, host: SharingHost, only: Iterable[str] | None = None
) -> list[MpsDaemon]:
    """Starts the wanted daemons that are not running (those named in ``only``, when given); the
    ones it had to create."""
    names = None if only is None else set(only)
    wanted_now = wanted(checkpoint, host)
    if not wanted_now:
        return []  # no shares on this node: nothing to ask the API server (the keeper's usual round)
    running = host.daemons.running()
    started = []
    for name, daemon in sorted(wanted_now.items()):
        if (names is None or name in names) and name not in running and host.daemons.start(daemon):
            started.append(daemon)
    return started


def wait_ready(
    daemons: Iterable[MpsDaemon], host: SharingHost, sleep: Callable[[float], None] = time.sleep
) -> None:
    """Waits until every daemon accepts clients; TimeoutError naming the late ones."""
    pending = list(daemons)
    deadline = time.monotonic() + host.ready_timeout
    while True:
        pending = [daemon for daemon in pending if not host.daemons.ready(daemon)]
        if not pending:
            return
        if time.monotonic() >= deadline:
            names = ", ".join(f"Pod {d.name} (for {d.unit})" for d in pending)
            raise TimeoutError(
                f"MPS daemon {names} not ready after {host.ready_timeout:g}s: see the Pod's events and "
                "logs (kubectl -n d8-gpu describe pod / logs); the kubelet retries the prepare"
            )
        sleep(host.poll_interval)


def card_settings_of(plans: Iterable[DevicePlan]) -> set[str]:
    """The cards whose settings a claim's devices change: whole cards with a sharing config (MIG
    MPS needs no card setting; a card without config keeps what the cleanup at start left)."""
    return {plan.card for plan in plans if plan.kind == "Physical" and plan.sharing is not None}


def settle_cards(cards: Iterable[str], checkpoint: Checkpoint, host: SharingHost, strict: bool) -> None:
    """Gives each card the settings the checkpoint's shares need, setting by setting in the
    registry's order; a setting no share asks for goes back to its default where a strategy had
    set it. ``strict``: a failure raises (prepare); else it is logged (cleanup)."""
    wanted = card_settings(checkpoint.claims.values())
    for card in sorted(set(cards)):
        try:
            _settle_card(card, wanted.get(card, {}), host)
        except SharingError as error:
            if strict:
                raise
            log.warning("card sharing settings not restored", extra={"card": card, "error": str(error)})


def _settle_card(card: str, wanted: dict[str, str], host: SharingHost) -> None:
    for setting in features.CARD_SETTINGS:
        value = setting.target(wanted.get(setting.name), host.settings.read(card, setting))
        if value is not None:
            host.settings.apply(card, setting, value)
            log.info("card setting applied", extra={"card": card, "setting": setting.name, "value": value})


def settle_node(checkpoint: Checkpoint, host: SharingHost, cards: Iterable[str]) -> None:
    """The cleanup at start: daemons and card settings no checkpoint entry owns are undone, the
    daemons entries need are started again (not waited for), every card gets what its entries
    need. Failures are logged: one broken card must not stop the handler from serving the rest."""
    try:
        stop_unwanted(checkpoint, host)
        start_wanted(checkpoint, host)
    except SharingError as error:
        log.warning("MPS daemons not settled at start", extra={"error": str(error)})
    settle_cards(cards, checkpoint, host, strict=False)
