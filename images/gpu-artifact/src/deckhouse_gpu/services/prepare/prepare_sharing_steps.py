# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The prepare steps that make sharing real (docs/SHARING.md): each device's sharing resolved from
its config and share, the card's time-slice interval and compute mode, the MPS daemon.

The sharing of every device is stored in the checkpoint (mark-started) before any of it is
applied, and what a card must be set to is derived from the checkpoint (services/prepare/sharing_settle.py),
so an undo is the same settle with this claim left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from deckhouse_gpu.domain.allocation.claim_config import ConfigRefused, device_config, unknown_requests
from deckhouse_gpu.domain.config.mps_sharing import MpsPlan
from deckhouse_gpu.domain.config.opaque_types import VFIOConfig
from deckhouse_gpu.domain.prepare.mps import MpsRefused, client_edits, pod_name, unit_of
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.domain.prepare.sharing import (
    SharingRefused,
    asked_memory_mib,
    device_sharing,
    share_percent,
)
from deckhouse_gpu.ports.sharing import SharingError
from deckhouse_gpu.services.prepare.host_release import FeatureRelease, Releasing
from deckhouse_gpu.services.prepare.prepare_context import (
    DeviceEdits,
    PrepareContext,
    PrepareError,
    PrepareFeature,
)
from deckhouse_gpu.services.prepare.sharing_settle import (
    card_settings_of,
    settle_cards,
    start_wanted,
    stop_unwanted,
    wait_ready,
    wanted,
)


def _result(plan: DevicePlan, results: list[Mapping[str, Any]]) -> Mapping[str, Any]:
    return next(
        (
            r
            for r in results
            if r.get("device") == plan.device
            and r.get("pool") == plan.pool
            and (r.get("shareID") or None) == plan.share_id
        ),
        {},
    )


def _memory_mib(plan: DevicePlan, cards: list[dict[str, Any]]) -> int | None:
    """The memory of the device: the card's, or the MIG profile's."""
    for card in cards:
        status = card.get("status") or {}
        if (status.get("pciInfo") or {}).get("address") != plan.card:
            continue
        capabilities = status.get("capabilities") or {}
        if plan.kind == "Physical":
            return _mebibytes(capabilities.get("memoryMiB"))
        mig = (capabilities.get("nvidia") or {}).get("mig") or {}
        for profile in mig.get("profiles") or []:
            if profile.get("profileID") == plan.profile_id:
                return _mebibytes(profile.get("memoryMiB"))
    return None


def _mebibytes(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _with_sharing(plan: DevicePlan, result: Mapping[str, Any], config: Any, memory: int | None) -> DevicePlan:
    sharing = device_sharing(config, share_percent(result), memory, asked_memory_mib(result))
    if sharing is None:
        return plan
    return replace(plan, sharing=sharing)


class CheckConfig:
    """Decodes the driver's opaque config of every device before anything on a card changes (a
    config that slipped past the webhook, which may be skipped, fails here with the same message)
    and resolves each device's sharing into its plan, limits included; a VFIOConfig marks the
    device for passthrough (services/prepare/prepare_vfio_steps.py checks the rest)."""

    name = "check-config"

    def run(self, ctx: PrepareContext) -> None:
        claim = ctx.claim_object or {}
        allocation = (claim.get("status") or {}).get("allocation") or {}
        results = (allocation.get("devices") or {}).get("results") or []
        if unknown := unknown_requests(allocation, (claim.get("spec") or {}).get("devices") or {}):
            raise PrepareError("; ".join(unknown))
        resolved = []
        for plan in ctx.plans:
            result = _result(plan, results)
            try:
                config = device_config(result, allocation, plan.kind)
                if isinstance(config, VFIOConfig):  # a whole card for a virtual machine (DESIGN.md D7)
                    resolved.append(replace(plan, vfio=True))
                    continue
                resolved.append(_with_sharing(plan, result, config, _memory_mib(plan, ctx.cards)))
            except (ConfigRefused, SharingRefused) as error:
                raise PrepareError(f"device {plan.device}: {error}") from error
        if any(plan.sharing is not None for plan in resolved) and ctx.sharing is None:
            raise PrepareError(
                "the claim's config asks for sharing, but this gpu-handler runs without sharing support"
            )
        ctx.plans = tuple(resolved)

    def undo(self, ctx: PrepareContext) -> None:
        pass


class SetCardSharing:
    """The time-slice interval and, for MPS, EXCLUSIVE_PROCESS compute mode of the claim's cards."""

    name = "set-card-sharing"

    def run(self, ctx: PrepareContext) -> None:
        if ctx.sharing is None:
            return
        try:
            settle_cards(card_settings_of(ctx.plans), ctx.checkpoint, ctx.sharing, strict=True)
        except SharingError as error:
            raise PrepareError(str(error)) from error

    def undo(self, ctx: PrepareContext) -> None:
        if ctx.sharing is not None:
            # Strict: a setting that cannot be given back keeps the entry (run_steps), which the
            # next call's rollback settles again; dropped, nothing would ever restore the card.
            others = ctx.checkpoint.without(ctx.claim.uid)
            settle_cards(card_settings_of(ctx.plans), others, ctx.sharing, strict=True)


class StartMps:
    """Starts the claim's MPS daemons that are not running yet and waits until they take clients."""

    name = "start-mps"

    def run(self, ctx: PrepareContext) -> None:
        host = ctx.sharing
        units = {unit_of(plan) for plan in ctx.plans if isinstance(plan.sharing, MpsPlan)}
        if host is None or not units:
            return
        try:
            names = {pod_name(host.node, unit) for unit in units}
            start_wanted(ctx.checkpoint, host, only=names)
            wait_ready([d for name, d in wanted(ctx.checkpoint, host).items() if name in names], host)
        except (SharingError, MpsRefused, TimeoutError) as error:
            raise PrepareError(str(error)) from error

    def undo(self, ctx: PrepareContext) -> None:
        if ctx.sharing is not None:
            stop_unwanted(ctx.checkpoint.without(ctx.claim.uid), ctx.sharing)


def mps_edits(ctx: PrepareContext) -> DeviceEdits:
    """Device name -> the CDI edits that make its containers clients of their MPS daemon."""
    if ctx.sharing is None:
        return {}
    daemons = wanted(ctx.checkpoint, ctx.sharing)
    edits = {}
    for plan in ctx.plans:
        if isinstance(plan.sharing, MpsPlan):
            daemon = daemons[pod_name(ctx.sharing.node, unit_of(plan))]
            edits[plan.device] = client_edits(plan, daemon)
    return edits


def stop_daemons(state: Releasing) -> None:
    """First in a release: an MPS server holds its MIG instance and its card's compute mode."""
    if state.ports.sharing is not None:
        stop_unwanted(state.checkpoint.without(state.entry.uid), state.ports.sharing)


def settle_released_cards(state: Releasing) -> None:
    """The claim's cards get the sharing settings the other claims need."""
    if state.ports.sharing is not None:
        others = state.checkpoint.without(state.entry.uid)
        settle_cards(card_settings_of(state.entry.devices), others, state.ports.sharing, state.strict)


# The claim's config is decoded by the pipeline itself (check-config, for every device).
SHARING_FEATURE = PrepareFeature(
    "sharing",
    settings=(SetCardSharing(), StartMps()),
    device_edits=mps_edits,
    release=FeatureRelease(holders=stop_daemons, settings=settle_released_cards),
)
