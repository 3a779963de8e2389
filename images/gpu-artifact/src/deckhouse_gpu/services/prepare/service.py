# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's DRA service: NodePrepareResources and NodeUnprepareResources (DESIGN.md S9.2.2, D9).

Every call holds the node-wide lock, so prepares and unprepares never interleave, even across
two handler pods during a rolling update. Each claim gets its own result: one claim's failure
does not fail the others of the same call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from deckhouse_gpu.domain.inventory.desired import node_selector
from deckhouse_gpu.domain.offers.card_offers import ActiveMode
from deckhouse_gpu.domain.offers.slice_layout import pool_name
from deckhouse_gpu.domain.prepare.active_modes import active_modes
from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, ClaimEntry
from deckhouse_gpu.ports.checkpoint import CheckpointStore
from deckhouse_gpu.ports.claim_cdi import ClaimCDI
from deckhouse_gpu.ports.clock import Clock, rfc3339
from deckhouse_gpu.ports.device_metadata import DeviceMetadataFiles
from deckhouse_gpu.ports.dra_plugin import ClaimRef, PrepareResult
from deckhouse_gpu.ports.host_change import HostChangeError
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, RESOURCE_CLAIMS, KubeAPI, KubeError, NotFound
from deckhouse_gpu.ports.mig import MigControl
from deckhouse_gpu.services.prepare.claim_status import (
    claim_object,
    clear_devices,
    prepared_devices,
    publish_devices,
)
from deckhouse_gpu.services.prepare.host_release import (
    FeatureRelease,
    HostPorts,
    clean_unowned,
    forget,
    release,
)
from deckhouse_gpu.services.prepare.prepare_observer import PrepareObserver
from deckhouse_gpu.services.prepare.prepare_steps import (
    FEATURES,
    PREPARE_STEPS,
    PrepareContext,
    PrepareError,
    run_steps,
)
from deckhouse_gpu.services.prepare.sharing_host import SharingHost
from deckhouse_gpu.services.prepare.sharing_settle import settle_node, start_wanted
from deckhouse_gpu.services.prepare.vfio_release import VfioSide
from deckhouse_gpu.services.runtime.events import EventRecorder

log = logging.getLogger(__name__)

# What each registered feature gives back (DESIGN.md D20), in the order of FEATURES.
RELEASES: tuple[FeatureRelease, ...] = tuple(feature.release for feature in FEATURES)


class OfferFollower(Protocol):
    """Who republishes the node's offers when what is prepared changes (the handler loop): offers
    that conflict with a card's active mode are withdrawn, and come back when it is free (DESIGN.md D2 b)."""

    def follow_modes(self, modes: Mapping[str, ActiveMode]) -> None: ...


class PrepareService:
    def __init__(
        self,
        api: KubeAPI,
        node_name: str,
        store: CheckpointStore,
        lock: Callable[[], AbstractContextManager[Any]],
        mig: MigControl,
        cdi: ClaimCDI,
        clock: Clock,
        offers: OfferFollower | None = None,
        after_step: Callable[[str], None] | None = None,
        sharing: SharingHost | None = None,
        events: EventRecorder | None = None,
        metadata: DeviceMetadataFiles | None = None,
        observer: PrepareObserver | None = None,
        vfio: VfioSide | None = None,
    ) -> None:
        self.api, self.node_name, self.store, self.lock = api, node_name, store, lock
        self.mig, self.cdi, self.clock = mig, cdi, clock
        self.offers = offers
        self.after_step = after_step
        self.sharing, self.events = sharing, events
        self.metadata = metadata  # None: containers get no device metadata files
        self.observer = observer  # the metrics: durations, offer types, failure reasons
        self.vfio = vfio  # None: no passthrough to virtual machines (DESIGN.md D7)
        # What offers must respect: refreshed at each checkpoint write of a prepare and after each call.
        self.modes: dict[str, ActiveMode] = {}
        # Cards another owner holds (PCI address -> why), from the handler loop: no new claim is
        # prepared on them (DESIGN.md D16). Claims prepared on this node, for its reports.
        self.holds: Callable[[], Mapping[str, str]] | None = None
        self.claim_names: list[str] = []

    def prepare(self, claims: list[ClaimRef]) -> dict[str, PrepareResult]:
        results: dict[str, PrepareResult] = {}
        try:
            with self.lock():
                checkpoint = self._load()
                cards = self._cards()
                for claim in claims:
                    checkpoint, results[claim.uid] = self._prepare_one(claim, checkpoint, cards)
                self._modes_changed(checkpoint)
        except (TimeoutError, KubeError, OSError) as error:
            # The lock, the checkpoint file or the card list: nothing was started for the claims
            # without a result, and the kubelet retries them.
            log.warning("prepare call failed", extra={"error": str(error)})
            if self.observer is not None:
                self.observer.call_failed("prepare", error, sum(c.uid not in results for c in claims))
            for claim in claims:
                results.setdefault(claim.uid, PrepareResult(error=f"{type(error).__name__}: {error}"))
        return results

    def _prepare_one(
        self, claim: ClaimRef, checkpoint: Checkpoint, cards: list[Any]
    ) -> tuple[Checkpoint, PrepareResult]:
        now = rfc3339(self.clock.now())
        ctx = PrepareContext(
            claim,
            checkpoint,
            self._save_and_follow,
            self.mig,
            self.cdi,
            now,
            cards=cards,
            pool=pool_name(self.node_name),
            sharing=self.sharing,
            metadata=self.metadata,
            vfio=self.vfio,
            held=dict(self.holds()) if self.holds is not None else {},
            features=FEATURES,
        )
        started = self.clock.monotonic()
        checkpoint, result = self._run_one(claim, ctx)
        if self.observer is not None:
            devices = ctx.entry.devices if ctx.entry is not None else ctx.plans
            self.observer.prepared(devices, result.error, self.clock.monotonic() - started)
        return checkpoint, result

    def _run_one(self, claim: ClaimRef, ctx: PrepareContext) -> tuple[Checkpoint, PrepareResult]:
        try:
            entry = ctx.checkpoint.get(claim.uid)
            if entry is None or entry.state != "PrepareCompleted":  # a finished claim needs no read
                ctx.claim_object = self.api.get(RESOURCE_CLAIMS, claim.name, namespace=claim.namespace)
            hook = self.observer.step_hook(self.after_step) if self.observer else self.after_step
            run_steps(PREPARE_STEPS, ctx, hook)
        except NotFound:
            return ctx.checkpoint, PrepareResult(
                error=f"ResourceClaim {claim.namespace}/{claim.name} not found"
            )
        except (PrepareError, HostChangeError, KubeError, OSError) as error:
            log.warning("prepare failed", extra={"claim": claim.uid, "error": str(error)})
            return ctx.checkpoint, PrepareResult(error=str(error))
        except Exception as error:  # e.g. CDI discovery: this claim fails, the others go on
            log.exception("prepare failed unexpectedly", extra={"claim": claim.uid})
            return ctx.checkpoint, PrepareResult(error=f"{type(error).__name__}: {error}")
        assert ctx.entry is not None
        if not ctx.done:
            self._device_status(publish_devices(self.api, ctx.entry, ctx.now, prepared=True))
            log.info(
                "claim prepared", extra={"claim": claim.uid, "devices": [d.device for d in ctx.entry.devices]}
            )
        return ctx.checkpoint, PrepareResult(devices=prepared_devices(ctx.entry))

    def unprepare(self, claims: list[ClaimRef]) -> dict[str, str]:
        errors: dict[str, str] = {}
        try:
            self._unprepare(claims, errors)
        except (TimeoutError, OSError) as error:
            log.warning("unprepare call failed", extra={"error": str(error)})
            if self.observer is not None:
                self.observer.call_failed("unprepare", error, sum(c.uid not in errors for c in claims))
            for claim in claims:
                errors.setdefault(claim.uid, f"{type(error).__name__}: {error}")
        return errors

    def _unprepare(self, claims: list[ClaimRef], errors: dict[str, str]) -> None:
        with self.lock():
            checkpoint = self._load()
            for claim in claims:
                started = self.clock.monotonic()
                entry = checkpoint.get(claim.uid)
                checkpoint, failure = self._unprepare_one(claim, entry, checkpoint)
                errors[claim.uid] = f"unprepare failed, the kubelet retries: {failure}" if failure else ""
                if self.observer is not None:
                    self.observer.unprepared(entry, failure, self.clock.monotonic() - started)
            self._modes_changed(checkpoint)

    def _unprepare_one(
        self, claim: ClaimRef, entry: ClaimEntry | None, checkpoint: Checkpoint
    ) -> tuple[Checkpoint, Exception | None]:
        if entry is None:
            # Unknown: nothing was prepared here, or it is undone already, or the checkpoint
            # was lost; a spec left behind by the latter still goes.
            forget(claim.uid, self._ports(), RELEASES)
            clear_devices(self.api, claim.namespace, claim.name, claim.uid)
            return checkpoint, None
        try:
            checkpoint = release(entry, checkpoint, self._ports(), self.store.save, RELEASES)
        except (HostChangeError, OSError) as error:
            return checkpoint, error
        publish_devices(self.api, entry, rfc3339(self.clock.now()), prepared=False)
        log.info("claim unprepared", extra={"claim": claim.uid})
        return checkpoint, None

    def start(self) -> None:
        """Cleans up after a crash or a reboot: entries of an earlier boot, MIG instances, CDI
        specs, device metadata files and functions left on vfio-pci no checkpoint entry owns."""
        with self.lock():
            decoded = self.store.load()
            checkpoint = decoded.checkpoint
            for entry in decoded.dropped_after_reboot:
                # Nothing of it survived the reboot on the GPU; its spec and MIG mode may have.
                survived = [part for part in RELEASES if part.survives_reboot]
                ports, save = self._ports(), self.store.save
                checkpoint = release(entry, checkpoint.with_entry(entry), ports, save, survived, strict=False)
            if decoded.corrupt_reason or self.store.corrupted_before():
                # Without a checkpoint nobody knows which instances running Pods still use: keep
                # them (also on later restarts, until the corrupt copy is removed by a person).
                log.error(
                    "a checkpoint was corrupt: MIG instances and CDI specs are kept, not cleaned up; "
                    "remove the checkpoint.json.corrupt-* files once the node's Pods are checked",
                    extra={"reason": decoded.corrupt_reason or "an earlier corrupt checkpoint is kept aside"},
                )
                self.store.save(checkpoint)
                return
            # Another owner's cards keep their MIG instances and settings (DESIGN.md D16).
            held = self.holds() if self.holds is not None else {}
            cards = [address for address in self._card_addresses() if address not in held]
            clean_unowned(checkpoint, self._ports(), cards, RELEASES)
            if self.sharing is not None:
                settle_node(checkpoint, self.sharing, cards)
            self.store.save(checkpoint)
            self._modes_changed(checkpoint)
        # A crash after PrepareCompleted but before the status write leaves the claim without it;
        # the kubelet's retry short-circuits, so it is written here (no write when it is right).
        now = rfc3339(self.clock.now())
        for entry in checkpoint.entries_in("PrepareCompleted"):
            self._device_status(publish_devices(self.api, entry, now, prepared=True))

    def _ports(self) -> HostPorts:
        return HostPorts(self.mig, self.cdi, self.sharing, self.metadata, self.vfio)

    def _device_status(self, kept: bool | None) -> None:
        if self.observer is not None:
            self.observer.device_status(kept)

    def _load(self) -> Checkpoint:
        decoded = self.store.load()
        if decoded.corrupt_reason:
            log.error("checkpoint was corrupt and was set aside", extra={"reason": decoded.corrupt_reason})
        return decoded.checkpoint

    def _cards(self) -> list[Any]:
        return self.api.list(PHYSICAL_GPUS, label_selector=node_selector(self.node_name)).items

    def keep_daemons(self) -> list[str]:
        """Starts again the MPS daemons that claims use but that are gone (a Pod deleted by hand,
        evicted, lost with its node's restart); an Event on each claim says so. Called periodically."""
        if self.sharing is None:
            return []
        with self.lock():
            checkpoint = self._load()
            started = start_wanted(checkpoint, self.sharing)
        for daemon in started:
            log.warning("MPS daemon was gone and is started again", extra={"pod": daemon.name})
            for entry in checkpoint.claims.values():
                if self.events is not None and any(plan.device == daemon.unit for plan in entry.devices):
                    self.events.record(
                        claim_object(entry),
                        "Warning",
                        "MPSDaemonRecreated",
                        f"MPS daemon Pod {daemon.name} for {daemon.unit} was gone while this claim uses it "
                        "and was created again; restart the claim's Pods if their CUDA calls failed",
                    )
        return [daemon.name for daemon in started]

    def _card_addresses(self) -> list[str]:
        try:
            cards = self._cards()
        except KubeError:
            return []
        addresses = [((c.get("status") or {}).get("pciInfo") or {}).get("address") for c in cards]
        return [a for a in addresses if a]

    def _save_and_follow(self, checkpoint: Checkpoint) -> None:
        """A prepare's checkpoint writes: the offers follow each at once, so a card leaves nvidia
        (for vfio-pci) only once the loop knows a VFIO claim holds it. Learnt at the end of the
        call, a pass in between saw NVML lose the card and tainted it GPULost NoExecute, and the
        device taint controller evicted the virtual machine's Pod it was just given to."""
        self.store.save(checkpoint)
        self._modes_changed(checkpoint)

    def _modes_changed(self, checkpoint: Checkpoint) -> None:
        self.claim_names = sorted(f"{e.namespace}/{e.name}" for e in checkpoint.claims.values())
        modes = active_modes(checkpoint)
        if modes != self.modes:
            self.modes = modes
            if self.offers is not None:
                self.offers.follow_modes(modes)
