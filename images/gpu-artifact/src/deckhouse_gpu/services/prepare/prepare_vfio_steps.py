# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The prepare steps that pass a whole card to a virtual machine (DESIGN.md D7, docs/VFIO.md).

``check-vfio`` decides which devices go to a VM (their config, or the annotation of the Pod the
claim is reserved for) and checks everything before a card is touched: bare metal, vfio-pci
loaded, the IOMMU on, no SR-IOV virtual functions, no process on the card, nothing foreign in its
IOMMU group. ``bind-vfio`` moves the card's functions to vfio-pci, each recorded in the claim's
``PrepareStarted`` entry and in the ledger before it moves (DESIGN.md D9), and undoes by giving
everything back (services/prepare/vfio_release.py). ``write-vfio-payload`` writes the QEMU hook payload.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from deckhouse_gpu.domain.prepare import vfio as rules
from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.domain.prepare.vfio import VFIO_DRIVER, CardGroup, PciFunction, VfioRecord
from deckhouse_gpu.domain.prepare.vfio_payload import (
    CONTROL_NODE,
    container_path,
    device_edits,
    encode,
    group_node_path,
    payload,
)
from deckhouse_gpu.ports.kube import PODS, KubeError, NotFound
from deckhouse_gpu.ports.vfio import VfioError
from deckhouse_gpu.services.prepare.host_release import FeatureRelease, HostPorts, Releasing
from deckhouse_gpu.services.prepare.prepare_context import (
    DeviceEdits,
    PrepareContext,
    PrepareError,
    PrepareFeature,
)
from deckhouse_gpu.services.prepare.prepare_mig_steps import release_entry
from deckhouse_gpu.services.prepare.vfio_release import VfioSide, clean_leftovers, give_back


def _status(ctx: PrepareContext, card: str) -> dict[str, Any]:
    for obj in ctx.cards:
        status = obj.get("status") or {}
        if (status.get("pciInfo") or {}).get("address") == card:
            return dict(status)
    return {}


def _reserving(ctx: PrepareContext, side: VfioSide) -> list[dict[str, Any]]:
    """The Pods the claim is reserved for, as they are now (a Pod replaced under its name is not)."""
    claim = ctx.claim_object or {}
    namespace = (claim.get("metadata") or {}).get("namespace") or ctx.claim.namespace
    pods = []
    for name, uid in rules.reserving_pods(claim):
        try:
            pod = side.api.get(PODS, name, namespace=namespace)
        except NotFound:
            continue
        except KubeError as error:
            raise PrepareError(
                f"cannot read Pod {namespace}/{name}, which the claim is reserved for, to see whether it "
                f"asks for VFIO ({rules.ANNOTATION}): {error}; gpu-handler needs get on pods"
            ) from error
        if not uid or (pod.get("metadata") or {}).get("uid") == uid:
            pods.append(pod)
    return pods


class CheckVfio:
    name = "check-vfio"

    def run(self, ctx: PrepareContext) -> None:
        side = ctx.vfio
        pods = _reserving(ctx, side) if side is not None else []
        asking = next((pod for pod in pods if rules.asks_for_vfio(pod)), None)
        ctx.vfio_pod = rules.pod_ref(asking or pods[0]) if pods else None
        plans = []
        for planned in ctx.plans:
            plan = planned
            if asking is not None and not plan.vfio:
                if (refused := rules.annotation_refusal(plan, rules.pod_ref(asking))) is not None:
                    raise PrepareError(refused)
                plan = replace(plan, vfio=True)
            if (refused := rules.sharing_refusal(plan)) is not None:
                raise PrepareError(refused)
            plans.append(plan)
        ctx.plans = tuple(plans)
        if side is None:
            if any(plan.vfio for plan in ctx.plans):
                raise PrepareError("the claim asks for VFIO, but this gpu-handler runs without VFIO support")
            return
        try:
            for plan in ctx.plans:
                if plan.vfio:
                    ctx.vfio_groups[plan.card] = self._checked(plan, _status(ctx, plan.card), side)
                elif self._on_vfio(plan.card, side):
                    raise PrepareError(rules.prebound_refusal(plan))
        except VfioError as error:
            raise PrepareError(f"cannot check the card for passthrough: {error}") from error

    @staticmethod
    def _on_vfio(card: str, side: VfioSide) -> bool:
        try:
            return side.host.function(card).driver == VFIO_DRIVER
        except VfioError:
            return False  # not in sysfs as expected: CDI discovery says what is wrong with the card

    @staticmethod
    def _checked(plan: DevicePlan, status: dict[str, Any], side: VfioSide) -> CardGroup:
        if (refused := rules.node_refusal(plan.card, status)) is not None:
            raise PrepareError(refused)
        if not side.host.vfio_available():
            raise PrepareError(rules.no_driver_refusal(plan.card))
        number = side.host.iommu_group(plan.card)
        if number is None:
            raise PrepareError(rules.no_group_refusal(plan.card))
        functions = tuple(side.host.function(address) for address in side.host.group_addresses(number))
        group = CardGroup(plan.card, number, functions)
        pids = () if group.prebound else side.gpus.processes(plan.card)
        found = rules.group_refusals(group, side.host.sriov_vfs(plan.card), pids)
        if found:
            raise PrepareError("; ".join(found))
        return group

    def undo(self, ctx: PrepareContext) -> None:
        pass


class BindVfio:
    name = "bind-vfio"

    def run(self, ctx: PrepareContext) -> None:
        side = ctx.vfio
        if side is None:
            return
        for plan in ctx.plans:
            if not plan.vfio:
                continue
            group = ctx.vfio_groups[plan.card]
            try:
                if (
                    changed := rules.changed_refusal(group, side.host.group_addresses(group.group))
                ) is not None:
                    raise PrepareError(changed)
                for function in rules.to_bind(group):
                    self._bind(ctx, side, group, function)
            except VfioError as error:
                raise PrepareError(f"cannot pass card {plan.card} through: {error}") from error

    @staticmethod
    def _bind(ctx: PrepareContext, side: VfioSide, group: CardGroup, function: PciFunction) -> None:
        assert ctx.entry is not None
        now = side.host.function(function.address)
        if now.driver == VFIO_DRIVER:
            return  # an administrator's: nothing to move, nothing to give back
        if function.address == group.card and now.driver == rules.NVIDIA_DRIVER:
            # A process that started since the check would hold the driver's unbind.
            if pids := side.gpus.processes(group.card):
                raise PrepareError("; ".join(rules.group_refusals(group, 0, pids)))
            side.gpus.let_go(group.card)
        # The intent first, in the checkpoint and the ledger: a crash right after the move knows it.
        ctx.store(ctx.entry.with_vfio(VfioRecord(group.card, function.address, now.driver, group.group)))
        side.ledger.add(function.address, now.driver)
        side.host.bind_vfio(function.address)

    def undo(self, ctx: PrepareContext) -> None:
        release_entry(ctx)  # every function back on its driver, as the rollback after a crash does


class WriteVfioPayload:
    name = "write-vfio-payload"

    def run(self, ctx: PrepareContext) -> None:
        side = ctx.vfio
        if side is None or not any(plan.vfio for plan in ctx.plans):
            return
        document = payload(
            ctx.claim_object or {}, ctx.vfio_pod, side.node, ctx.plans, ctx.vfio_groups, ctx.cards
        )
        side.payloads.write_claim(ctx.claim.uid, encode(document))

    def undo(self, ctx: PrepareContext) -> None:
        if ctx.vfio is not None:
            ctx.vfio.payloads.delete_claim(ctx.claim.uid)


def vfio_edits(ctx: PrepareContext) -> DeviceEdits:
    """Device name -> its VFIO nodes and the mount of the claim's payload."""
    side = ctx.vfio
    if side is None:
        return {}
    edits = {}
    for plan in ctx.plans:
        if plan.vfio:
            group = ctx.vfio_groups[plan.card].group
            edits[plan.device] = device_edits(
                side.host.device_node(CONTROL_NODE),
                side.host.device_node(group_node_path(group)),
                side.payloads.host_path(ctx.claim.uid),
                container_path(ctx.claim_object or {}),
            )
    return edits


def give_back_functions(state: Releasing) -> None:
    """Before the rest of a release: the functions the claim moved, back on their drivers, so that
    NVML sees their cards again for what follows."""
    if state.ports.vfio is not None:
        state.checkpoint = give_back(
            state.entry, state.checkpoint, state.ports.vfio, state.save, state.strict
        )
        state.entry = state.checkpoint.get(state.entry.uid) or state.entry


def give_back_leftovers(checkpoint: Checkpoint, ports: HostPorts, cards: list[str]) -> None:
    """At start, first: a card on vfio-pci has no MIG mode NVML can read."""
    if ports.vfio is not None:
        clean_leftovers(checkpoint, ports.vfio)


def forget_payload(uid: str, ports: HostPorts) -> None:
    if ports.vfio is not None:
        ports.vfio.payloads.delete_claim(uid)


VFIO_FEATURE = PrepareFeature(
    "vfio",
    checks=(CheckVfio(),),
    devices=(BindVfio(),),
    files=(WriteVfioPayload(),),
    device_edits=vfio_edits,
    release=FeatureRelease(
        holders=give_back_functions,
        unowned_holders=give_back_leftovers,
        forget=forget_payload,
        survives_reboot=False,  # the ledger's cleanup at start gives back what the ledger kept
    ),
)
