# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Publishes this node's offers as ResourceSlices (DESIGN.md D3, D6).

Nothing changed: no write at all. Only slice contents changed: just those slices are updated in
place, in an order that keeps every counter reference resolvable. Slices come or go: every slice
is written with a new generation, then stale ones are deleted; the scheduler uses only the
newest generation, and only once it is complete, so it never mixes two versions of the pool.
If the API server drops a DRA feature's fields, the publisher falls back once to what the
server keeps (exclusive Physical offers; unhealthy cards withdrawn instead of tainted), says so in
an Event and does not loop.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from deckhouse_gpu.domain.inventory.desired import node_selector
from deckhouse_gpu.domain.inventory.physicalgpu import GROUP
from deckhouse_gpu.domain.offers.card_offers import ActiveMode
from deckhouse_gpu.domain.offers.class_demand import ClassDemand
from deckhouse_gpu.domain.offers.device_taints import card_offers_with_health, keep_time_added
from deckhouse_gpu.domain.offers.dropped_fields import (
    CONSUMABLE,
    DEVICE_TAINTS,
    PARTITIONABLE,
    WITHOUT,
    dropped_features,
)
from deckhouse_gpu.domain.offers.mig_profile_policy import MigProfileRule, for_node, unknown_profiles
from deckhouse_gpu.domain.offers.model import DRIVER, OfferPolicy
from deckhouse_gpu.domain.offers.slice_compare import comparable
from deckhouse_gpu.domain.offers.slice_layout import layout, slice_manifest
from deckhouse_gpu.k8s_semantics.apimachinery.merge_patch import create_patch
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_pool
from deckhouse_gpu.ports.kube import RESOURCE_SLICES, KubeAPI, Object
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.own_writes import OwnWrites

log = logging.getLogger(__name__)

LABEL_SHARING = f"{GROUP}/sharing"
LABEL_MIG = f"{GROUP}/mig"
FeatureMode = Literal["auto", "on", "off"]
# Which nodes offer dynamic MIG (ModuleConfig dra.migOffers as decided by the derive_settings hook):
# every MIG-capable node unless labelled gpu.deckhouse.io/mig=false, or only nodes labelled
# gpu.deckhouse.io/mig=true. On 1.35/1.36 schedulers every node publishing counters costs every
# Pod of the cluster (docs/DRA.md, "What the kube-scheduler itself pays"), hence OptIn at scale.
MigOffers = Literal["AllNodes", "OptIn"]
MIG_OFFERS: tuple[MigOffers, ...] = ("AllNodes", "OptIn")
VERSION_TTL_SECONDS = 300.0


@dataclass(frozen=True)
class PublisherSettings:
    partitionable: FeatureMode = "auto"  # "auto": use it until the API server drops its fields
    consumable: FeatureMode = "auto"
    taints: FeatureMode = "auto"  # DRADeviceTaints: unhealthy cards tainted, or withdrawn
    mig_profiles: tuple[MigProfileRule, ...] = ()  # ModuleConfig dra.migProfiles
    mig_offers: MigOffers = "AllNodes"

    def mode(self, feature: str) -> FeatureMode:
        return {PARTITIONABLE: self.partitionable, CONSUMABLE: self.consumable}.get(feature, self.taints)


@dataclass
class PublishReport:
    slices: int = 0
    devices: int = 0
    generation: int = 0
    writes: int = 0
    fallback: list[str] = field(default_factory=list)  # features given up during this publish


def node_policy(
    node: Mapping[str, Any] | None,
    partitionable: bool,
    consumable: bool,
    mig_profiles: Sequence[MigProfileRule] = (),
    mig_offers: MigOffers = "AllNodes",
) -> OfferPolicy:
    labels = (node or {}).get("metadata", {}).get("labels") or {}
    mig = labels.get(LABEL_MIG) == "true" if mig_offers == "OptIn" else labels.get(LABEL_MIG) != "false"
    return OfferPolicy(
        mig=mig,
        sharing=labels.get(LABEL_SHARING) == "true",
        partitionable=partitionable,
        consumable=consumable,
        mig_profiles=for_node(mig_profiles, labels),
    )


class InvalidPool(ValueError):
    """The rendered slices break an API rule; nothing was written."""


class SlicePublisher:
    def __init__(
        self,
        api: KubeAPI,
        node_name: str,
        events: EventRecorder,
        settings: PublisherSettings,
        cached: OwnWrites | None = None,
    ) -> None:
        self.api = api
        # This node's slices from the watch cache (with our own writes it does not show yet);
        # without one, each publish lists them.
        self.cached = cached
        # With the watch caches the version is read again only when they come back after losing
        # the server (``forget_version``): an upgrade restarts the API server. Without them, every
        # few minutes.
        self.version_expires = cached is None
        self.node_name = node_name
        self.events = events
        self.settings = settings
        self.features = {
            PARTITIONABLE: settings.partitionable != "off",
            CONSUMABLE: settings.consumable != "off",
            DEVICE_TAINTS: settings.taints != "off",
        }
        self._minor: int | None = None
        self._reported: set[str] = set()  # MIG profile problems already said
        self._minor_read_at = 0.0
        # The cluster's DeviceClasses (a watch of gpu-handler's, DESIGN.md D19): only what one of
        # them may select is published; None, or a source that answers None, publishes every offer.
        self.demand: Callable[[], ClassDemand | None] | None = None

    def minor(self) -> int:
        """The API server's minor version; re-read every few minutes so that after a control-plane
        upgrade (1.34 -> 1.35) the pool moves to the new layout without a restart."""
        now = time.monotonic()
        expired = self.version_expires and now - self._minor_read_at >= VERSION_TTL_SECONDS
        if self._minor is None or expired:
            self._minor = self.api.server_version()[1]
            self._minor_read_at = now
        return self._minor

    def forget_version(self) -> None:
        """The API server may have changed (it was lost and is back): read its version again."""
        self._minor = None

    def publish(
        self, cards: list[Object], node: Object | None, active: Mapping[str, ActiveMode] | None = None
    ) -> PublishReport:
        report = PublishReport()
        self._publish(cards, node, active or {}, report)
        if report.fallback:
            self._publish(cards, node, active or {}, report)  # once, with what the server keeps
        return report

    def _publish(
        self,
        cards: list[Object],
        node: Object | None,
        active: Mapping[str, ActiveMode],
        report: PublishReport,
    ) -> None:
        policy = node_policy(
            node,
            self.features[PARTITIONABLE],
            self.features[CONSUMABLE],
            self.settings.mig_profiles,
            self.settings.mig_offers,
        )
        if self.demand is not None:
            policy = dataclasses.replace(policy, demand=self.demand())
        self._check_profiles(cards, policy, node)
        # Cards NVML does not serve offer too while a VFIO claim holds them, or when an
        # administrator bound them to vfio-pci (domain/offers/vfio_offers.py, DESIGN.md D7).
        addresses = [((card.get("status") or {}).get("pciInfo") or {}).get("address") for card in cards]
        # An unhealthy card is offered tainted while the server keeps taints (device_taints.py).
        taints = self.features[DEVICE_TAINTS]
        found = [
            card_offers_with_health(card, policy, active.get(str(a)), taints)
            for card, a in zip(cards, addresses, strict=True)
        ]
        offers = [card_offers for card_offers in found if card_offers is not None]
        contents = layout(self.node_name, offers, self.minor())
        owner = _owner(node)
        if self.cached is not None:
            listed = self.cached.items()
        else:
            listed = self.api.list(RESOURCE_SLICES, label_selector=node_selector(self.node_name)).items
        stored = {
            obj["metadata"]["name"]: obj for obj in listed if (obj.get("spec") or {}).get("driver") == DRIVER
        }
        generations = {int((obj["spec"].get("pool") or {}).get("generation", 0)) for obj in stored.values()}
        desired = [
            slice_manifest(self.node_name, c, max(generations, default=0), len(contents), owner)
            for c in contents
        ]
        keep_time_added(desired, stored.values())  # else every pass would rewrite a tainted card
        report.slices, report.devices = len(desired), sum(len(c.devices) for c in contents)
        report.generation = max(generations, default=0)
        same_slices = (
            set(stored) == {d["metadata"]["name"] for d in desired}
            and len(generations) <= 1
            and not _devices_move(stored.values(), desired)
        )
        changed = [
            d
            for d in desired
            if not same_slices or comparable(stored[d["metadata"]["name"]]) != comparable(d)
        ]
        if same_slices and not changed:
            return
        if not same_slices:
            # Slices come or go: a new generation, so the scheduler ignores the old slices as soon
            # as the new ones appear and uses the pool again once all of them are there.
            report.generation += 1
            for manifest in desired:
                manifest["spec"]["pool"]["generation"] = report.generation
        # Checked only when something is about to be written: an invalid pool is never sent, so a
        # bug here cannot leave the node half-published or make the scheduler skip the pool.
        problems = validate_pool(desired, self.minor())
        if problems:
            raise InvalidPool("; ".join(map(str, problems[:5])))
        for manifest in _write_order(changed, stored):
            self._write(manifest, stored.get(manifest["metadata"]["name"]), report)
        for name in set(stored) - {d["metadata"]["name"] for d in desired}:
            self.api.delete(RESOURCE_SLICES, name, uid=stored[name]["metadata"].get("uid"))
            if self.cached is not None:
                self.cached.wrote(stored[name], None)
            report.writes += 1
        log.info(
            "ResourceSlices published",
            extra={"slices": report.slices, "devices": report.devices, "generation": report.generation},
        )

    def _write(self, manifest: Object, current: Object | None, report: PublishReport) -> None:
        if current is None:
            result = self.api.create(RESOURCE_SLICES, manifest)
        else:
            wanted = {
                "metadata": {
                    k: manifest["metadata"][k]
                    for k in ("labels", "ownerReferences")
                    if k in manifest["metadata"]
                },
                "spec": manifest["spec"],
            }
            have = {
                "metadata": {
                    k: current["metadata"][k]
                    for k in ("labels", "ownerReferences")
                    if k in current["metadata"]
                },
                "spec": current.get("spec") or {},
            }
            patch = create_patch(have, wanted)
            patch.setdefault("metadata", {})["resourceVersion"] = current["metadata"].get("resourceVersion")
            result = self.api.patch(RESOURCE_SLICES, manifest["metadata"]["name"], patch)
        if self.cached is not None:
            self.cached.wrote(current, result)
        report.writes += 1
        for feature in sorted(dropped_features(manifest, result)):
            self._give_up(feature, report)

    def _check_profiles(self, cards: list[Object], policy: OfferPolicy, node: Object | None) -> None:
        """A MIG profile rule that names profiles a card lacks: said once per process, on the Node."""
        for card in cards:
            problem = unknown_profiles(card, policy.mig_profiles)
            if problem is None or problem in self._reported:
                continue
            self._reported.add(problem)
            log.warning("MIG profile policy names unknown profiles", extra={"problem": problem})
            regarding = {"apiVersion": "v1", "kind": "Node", "metadata": (node or {}).get("metadata") or {}}
            self.events.record(regarding, "Warning", "MIGProfilesUnknown", problem)

    def _give_up(self, feature: str, report: PublishReport) -> None:
        if not self.features[feature]:
            return
        if self.settings.mode(feature) == "on":
            log.error("the API server drops the fields of a feature forced on", extra={"feature": feature})
            return
        self.features[feature] = False
        report.fallback.append(feature)
        message = (
            f"the API server dropped the {feature} fields of this node's ResourceSlices: enable the "
            f"{feature} feature gate and restart gpu-handler; until then this node {WITHOUT[feature]}"
        )
        log.warning("DRA feature unavailable; falling back", extra={"feature": feature})
        node_ref = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.node_name}}
        self.events.record(node_ref, "Warning", "DRAFeatureUnavailable", message)


def _device_homes(slices: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    return {
        device["name"]: obj["metadata"]["name"]
        for obj in slices
        for device in (obj.get("spec") or {}).get("devices") or []
    }


def _devices_move(stored: Iterable[Mapping[str, Any]], desired: Iterable[Mapping[str, Any]]) -> bool:
    """A device changing slices would appear twice (or not at all) between two in-place updates,
    which makes the allocator drop the whole pool: such a change goes through a new generation."""
    before, after = _device_homes(stored), _device_homes(desired)
    return any(after[name] != home for name, home in before.items() if name in after)


def _counter_sets(slices: Iterable[Mapping[str, Any]]) -> set[str]:
    return {entry["name"] for obj in slices for entry in (obj.get("spec") or {}).get("sharedCounters") or []}


def _write_order(changed: list[Object], stored: Mapping[str, Object]) -> list[Object]:
    """Slices updated in place go so that devices never point at a missing counter set:
    counter sets first when sets are added, devices first when sets are removed."""
    adding = not _counter_sets(changed) <= _counter_sets(stored.values())
    return sorted(changed, key=lambda obj: ("sharedCounters" in obj["spec"]) != adding)


def _owner(node: Object | None) -> dict[str, Any] | None:
    if not node or not node.get("metadata", {}).get("uid"):
        return None
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "name": node["metadata"]["name"],
        "uid": node["metadata"]["uid"],
    }
