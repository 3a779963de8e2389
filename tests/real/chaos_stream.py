# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The workload of ``make chaos-real``: Pods with claims of every kind the module serves, coming and
going on the real kubelet's node while the faults happen (tests/real/chaos_real.py).

Each step starts one Pod and, once two run, deletes the oldest (the
node has two A30s, so one card is always free for the next): a whole card or a MIG 1g.6gb instance
from a ResourceClaimTemplate (kube-controller-manager makes the claim), a card passed to a virtual
machine (the VFIO DeviceClass of docs/VFIO.md), or a 50 % share by MPS (card A) or time-slicing
(card B; every share of one card must use one strategy), in an order drawn from the run's seed
that gives every kind once in five steps. Shares need the node's sharing label,
which takes MIG away: a step of the other mode first drains the node, flips the label and waits for
the offers. The real scheduler allocates, the real kubelet calls gpu-handler's NodePrepareResources
and NodeUnprepareResources; the step is done when the new Pod is Running and the old one is gone
with its claim unprepared.

What the node must then show (``check``): the handler's checkpoint holds exactly the running Pods'
claims, each prepared; one CDI spec per such claim and none other; a MIG instance on the simulated
card per running MIG claim and none other; a card (and its audio function) on vfio-pci exactly
while a VFIO claim holds it; an MPS daemon exactly while an MPS share runs; no exclusive device
allocated twice, a card never given whole and in parts at once, no share over 100 %; every
allocation for this node. ``offers_match`` judges what its ResourceSlices publish then: the offers
of the idle node less those that conflict with each card's prepared mode (DESIGN.md D2 b).
"""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.prepare.container.cdi_spec import claim_spec_file
from testkit.real_cluster import ApiError, RealCluster
from tests.real.chaos_node import ChaosGpuNode
from tests.real.handler_world import CARD_A, CARD_B, DRIVER, RESOURCE, VFIO_CLASS, WHOLE_A, WHOLE_B

SHARING_LABEL = "gpu.deckhouse.io/sharing"
WHOLE_CLASS, MIG_CLASS = "gpu-a30", "gpu-a30-mig-1g.6gb"
CARD_OF = {WHOLE_A: CARD_A, WHOLE_B: CARD_B}
GPU_CONFIG = {"apiVersion": "resource.gpu.deckhouse.io/v1alpha1", "kind": "GpuConfig"}
SHARE_PERCENT = 50
IMAGE = "registry.example/cuda:12"


@dataclass(frozen=True)
class Kind:
    name: str
    sharing: bool  # needs the node's sharing label (and so no MIG offers)
    mode: str  # the card's prepared mode: what its offers follow (DESIGN.md D2 b)
    template: bool  # the Pod's claim comes from a ResourceClaimTemplate


KINDS = (
    Kind("whole", False, "Physical", True),
    Kind("mig", False, "MIG", True),
    Kind("vfio", False, "VFIO", False),
    Kind("mps", True, "Physical", False),
    Kind("time-slicing", True, "Physical", False),
)


@dataclass
class Workload:
    pod: str
    kind: Kind
    claim: str | None = None  # known once the Pod names it (a template's claim) or at once
    uid: str | None = None
    card: str | None = None  # PCI address, once allocated
    claim_deleted: bool = False


def _card(device: str) -> str:
    return next(card for whole, card in CARD_OF.items() if device == whole or device.startswith(whole + "-"))


class PodStream:
    """Pods and claims coming and going on ``node``; see the module doc."""

    def __init__(self, node: ChaosGpuNode, draw: random.Random, fail: Callable[[str], Exception]) -> None:
        self.node, self.draw, self.fail = node, draw, fail
        self.cluster: RealCluster = node.cluster
        self.live: list[Workload] = []  # running or starting, oldest first
        self.leaving: list[Workload] = []  # deleted, not yet gone and unprepared
        self.sharing = False
        self.plan: list[Kind] = []
        self.steps: list[str] = []  # for the replay line
        self.started = 0
        self.numbered = 0

    # -- set-up ----------------------------------------------------------------------------------

    def install(self) -> None:
        """The workload namespace and the claim templates (the DeviceClasses are the run's)."""
        cluster, namespace = self.cluster, self.node.namespace
        cluster.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        # Pods are admitted only once the namespace's default ServiceAccount exists.
        account = ("v1", "ServiceAccount", "default", namespace)
        cluster.wait_for(lambda: cluster.get(*account), 60, "ServiceAccount")
        for name, device_class in (("whole", WHOLE_CLASS), ("mig", MIG_CLASS)):
            request = {"name": "gpu", "exactly": {"deviceClassName": device_class}}
            cluster.create(
                {
                    "apiVersion": RESOURCE,
                    "kind": "ResourceClaimTemplate",
                    "metadata": {"name": name, "namespace": namespace},
                    "spec": {"spec": {"devices": {"requests": [request]}}},
                }
            )

    # -- steps -----------------------------------------------------------------------------------

    def draw_kind(self) -> Kind:
        """The next kind of a plan drawn from the seed: the kinds of the node's present mode in a
        random order, then those of the other (one drain and flip per round, every kind in five
        steps)."""
        if not self.plan:
            first = [k for k in KINDS if k.sharing == self.sharing]
            second = [k for k in KINDS if k.sharing != self.sharing]
            self.draw.shuffle(first)
            self.draw.shuffle(second)
            self.plan = first + second
        return self.plan.pop(0)

    def needs_flip(self, kind: Kind) -> bool:
        return kind.sharing != self.sharing

    def flip(self, wait: Callable[[Callable[[], Any], str], Any]) -> None:
        """Every Pod drained (unprepared, its claim gone), then the sharing label flipped."""
        self.leave(list(self.live))
        wait(self.settled, "the node drained")
        self.sharing = not self.sharing
        self.steps.append("sharing" if self.sharing else "unsharing")
        self.node.label(SHARING_LABEL, "true" if self.sharing else None)

    def begin(self, kind: Kind) -> Workload:
        """The oldest Pod deleted once two run, and a new one of ``kind`` created; nothing waited for."""
        if len(self.live) >= 2:
            self.leave([self.live[0]])
        self.numbered += 1
        workload = Workload(f"{kind.name}-{self.numbered}", kind)
        self.steps.append(f"+{workload.pod}")
        claim: dict[str, Any] = {"name": "gpu"}
        if kind.template:
            claim["resourceClaimTemplateName"] = kind.name
        else:
            workload.claim = workload.pod
            created = self._claim(workload.pod, kind)
            workload.uid = created["metadata"]["uid"]
            claim["resourceClaimName"] = workload.pod
        self.cluster.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": workload.pod, "namespace": self.node.namespace},
                "spec": {
                    "nodeSelector": {"kubernetes.io/hostname": self.node.node},
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "terminationGracePeriodSeconds": 1,
                    "resourceClaims": [claim],
                    "containers": [
                        {"name": "cuda", "image": IMAGE, "resources": {"claims": [{"name": "gpu"}]}}
                    ],
                },
            }
        )
        self.live.append(workload)
        self.started += 1
        return workload

    def _claim(self, name: str, kind: Kind) -> dict[str, Any]:
        if kind.name == "vfio":
            return self.node.claim(name, VFIO_CLASS)
        strategy: dict[str, Any] = {"strategy": "MPS"}
        card = CARD_A
        if kind.name == "time-slicing":
            strategy = {"strategy": "TimeSlicing", "timeSlicing": {"interval": "Medium"}}
            card = CARD_B
        selector = f'device.attributes["{DRIVER}"].pciAddress == "{card}"'
        config = {**GPU_CONFIG, "sharing": strategy}
        return self.node.claim(name, WHOLE_CLASS, selector=selector, share=SHARE_PERCENT, config=config)

    def leave(self, workloads: list[Workload]) -> None:
        for workload in workloads:
            self.live.remove(workload)
            self.leaving.append(workload)
            self.steps.append(f"-{workload.pod}")
            with contextlib.suppress(ApiError):
                self.cluster.delete("v1", "Pod", workload.pod, self.node.namespace)

    # -- progress --------------------------------------------------------------------------------

    def settled(self) -> bool:
        """Every leaving Pod gone with its claim unprepared and deleted, every live one Running."""
        checkpoint = self.node.checkpoint()
        for workload in list(self.leaving):
            if self._exists("v1", "Pod", workload.pod):
                return False
            if workload.claim is not None and not workload.kind.template and not workload.claim_deleted:
                with contextlib.suppress(ApiError):
                    self.cluster.delete(RESOURCE, "ResourceClaim", workload.claim, self.node.namespace)
                workload.claim_deleted = True
            if workload.uid in checkpoint:
                return False
            if workload.claim is not None and self._exists(RESOURCE, "ResourceClaim", workload.claim):
                return False  # a template's claim goes with its Pod (kube-controller-manager)
            self.leaving.remove(workload)
        return all(self._running(workload) for workload in self.live)

    def _running(self, workload: Workload) -> bool:
        pod = self.cluster.get("v1", "Pod", workload.pod, self.node.namespace)
        if workload.claim is None:
            statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
            if not statuses or not statuses[0].get("resourceClaimName"):
                return False
            workload.claim = str(statuses[0]["resourceClaimName"])
        if workload.uid is None or workload.card is None:
            claim = self.cluster.get(RESOURCE, "ResourceClaim", workload.claim, self.node.namespace)
            workload.uid = claim["metadata"]["uid"]
            results = _results(claim)
            if results:
                workload.card = _card(results[0]["device"])
        return bool((pod.get("status") or {}).get("phase") == "Running")

    def _exists(self, api_version: str, kind: str, name: str) -> bool:
        try:
            self.cluster.get(api_version, kind, name, self.node.namespace)
        except ApiError as error:
            if error.status == 404:
                return False
            raise
        return True

    def describe(self) -> str:
        """Each live and leaving Pod's phase, node, conditions and its claim's allocation: what a
        failure message needs to tell a Pod the scheduler left Pending from one the kubelet holds."""
        lines = []
        for workload in [*self.live, *self.leaving]:
            try:
                pod = self.cluster.get("v1", "Pod", workload.pod, self.node.namespace)
            except ApiError as error:
                lines.append(f"{workload.pod}: {error.status}")
                continue
            status = pod.get("status") or {}
            conditions = [
                f"{c.get('type')}={c.get('status')}({c.get('reason', '')}: {c.get('message', '')})"
                for c in status.get("conditions") or ()
            ]
            claims = status.get("resourceClaimStatuses") or []
            lines.append(
                f"{workload.pod}: phase={status.get('phase')} node={pod['spec'].get('nodeName')} "
                f"conditions={conditions} claims={claims}"
            )
            name = workload.claim or (claims[0].get("resourceClaimName") if claims else None)
            if name:
                with contextlib.suppress(ApiError):
                    claim = self.cluster.get(RESOURCE, "ResourceClaim", name, self.node.namespace)
                    reserved = (claim.get("status") or {}).get("reservedFor") or []
                    lines.append(f"  claim {name}: results={_results(claim)} reservedFor={reserved}")
        return "\n".join(lines)

    # -- what the node must show -------------------------------------------------------------------

    def modes(self) -> dict[str, str]:
        """PCI address -> the mode the running Pods' claims hold the card in."""
        return {w.card: w.kind.mode for w in self.live if w.card is not None}

    def vfio_cards(self) -> set[str]:
        return {card for card, mode in self.modes().items() if mode == "VFIO"}

    def offers_match(self, offers: dict[str, Any], idle: dict[str, Any]) -> bool:
        """Whether the node's offers (``{"devices": {name: spec}, "counters": {name: spec}}``) are
        those of the idle node less the ones conflicting with each card's prepared mode. A card
        on vfio-pci is out of NVML's sight: offered whole with what it consumed (its counters stay,
        so the scheduler keeps counting it taken, DESIGN.md D7), its attributes read anew; unless
        its PhysicalGPU was made anew meanwhile (``offers["undescribed"]``): then nothing knows its
        MIG capabilities, and it is offered without counters until it is back on nvidia."""
        modes = self.modes()
        vfio = {whole for whole, card in CARD_OF.items() if modes.get(card) == "VFIO"}
        bare = {whole for whole, card in CARD_OF.items() if card in offers.get("undescribed", ())}
        devices: dict[str, Any] = {}
        for name, device in idle["devices"].items():
            mode = modes.get(_card(name))
            mig = "-mig-" in name
            if (mode == "MIG" and not mig) or (mode in ("Physical", "VFIO") and mig):
                continue
            devices[name] = (
                (None if name in bare else device.get("consumesCounters")) if name in vfio else device
            )
        found = {n: d.get("consumesCounters") if n in vfio else d for n, d in offers["devices"].items()}
        counters = {name: c for name, c in idle["counters"].items() if name not in vfio & bare}
        return found == devices and offers["counters"] == counters

    def check(self) -> None:
        """The node's host state and the claims' allocations against the running Pods; see the
        module doc. Raises ``fail(message)``."""
        live = {w.uid: w for w in self.live if w.uid is not None}
        if len(live) != len(self.live):
            raise self.fail(f"Pods without a claim: {[w.pod for w in self.live if w.uid is None]}")
        checkpoint = self.node.checkpoint()
        states = {uid: entry.get("state") for uid, entry in checkpoint.items()}
        if states != dict.fromkeys(live, "PrepareCompleted"):
            names = {uid: w.pod for uid, w in live.items()}
            raise self.fail(f"checkpoint {states}, running Pods' claims {names}")
        specs = self.node.cdi_specs()
        if specs != sorted(claim_spec_file(uid) for uid in live):
            raise self.fail(f"CDI specs {specs} for the claims of {sorted(w.pod for w in live.values())}")
        for card in (CARD_A, CARD_B):
            holders = [w for w in live.values() if w.card == card]
            instances = len(self.node.mig_instances(card))
            wanted = sum(1 for w in holders if w.kind.name == "mig")
            if instances != wanted:
                raise self.fail(f"{card}: {instances} MIG instances, {wanted} MIG claims prepared")
            vfio = any(w.kind.name == "vfio" for w in holders)
            drivers = (self.node.driver_of(card), self.node.driver_of(card[:-1] + "1"))
            if drivers != (("vfio-pci", "vfio-pci") if vfio else ("nvidia", "snd_hda_intel")):
                raise self.fail(f"{card} and its audio function on {drivers}, a VFIO claim holds it: {vfio}")
        daemons = len(self.node.mps_daemons())
        if daemons != (1 if any(w.kind.name == "mps" for w in live.values()) else 0):
            raise self.fail(f"{daemons} MPS daemon Pods for {[w.pod for w in live.values()]}")
        self.check_allocations()

    def check_allocations(self) -> None:
        """No exclusive device allocated twice, no card whole and in parts at once, no share over
        100 %, every allocation for this node."""
        path = f"/apis/{RESOURCE}/namespaces/{self.node.namespace}/resourceclaims"
        listed = self.cluster.request("GET", path)
        exclusive: dict[str, str] = {}
        shares: dict[str, int] = {}
        users: dict[str, set[str]] = {}
        for claim in listed["items"]:
            name = claim["metadata"]["name"]
            allocation = (claim.get("status") or {}).get("allocation") or {}
            if allocation and self.node.node not in json.dumps(allocation.get("nodeSelector")):
                raise self.fail(f"{name} allocated for another node: {allocation.get('nodeSelector')}")
            for result in _results(claim):
                device = str(result["device"])
                users.setdefault(_card(device), set()).add(device)
                consumed = (result.get("consumedCapacity") or {}).get("sharePercent")
                if consumed is not None:
                    shares[device] = shares.get(device, 0) + int(str(consumed))
                    if shares[device] > 100:
                        raise self.fail(f"{device} shared {shares[device]} %")
                elif device in exclusive:
                    raise self.fail(f"{device} allocated to {exclusive[device]} and {name}")
                else:
                    exclusive[device] = name
        for card, devices in users.items():
            whole = {d for d in devices if "-mig-" not in d}
            if whole & set(exclusive) and len(devices) > 1:
                raise self.fail(f"{card} given whole and in parts at once: {sorted(devices)}")


def _results(claim: dict[str, Any]) -> list[dict[str, Any]]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return list((allocation.get("devices") or {}).get("results") or [])
