# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A GPUClass's DeviceClass: the CEL selector, the opaque config and the extended resource.

The selector reads only what the driver publishes (docs/DRA.md): the attributes ``deviceType``,
``device``, ``migProfile``, ``ccMajor``/``ccMinor`` and ``uuid``, the capacities ``memory`` and
``sharePercent``. It starts with the driver, so that another driver's device is refused before an
attribute it lacks is read (a missing attribute is an evaluation error that fails the Pod's
scheduling), and guards every attribute not every offer has. It uses only functions a 1.34 API
server accepts (the quantity library, ``in``, ``has``).

A DeviceClass cannot see nodes: a node selector becomes the list of the UUIDs of the cards
published on the selected nodes (every offer of a card, MIG instances too, carries the card's
``uuid``), which the controller renders again when cards or node labels change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from deckhouse_gpu.domain.config import features
from deckhouse_gpu.domain.config.opaque_types import API_VERSION as CONFIG_API_VERSION
from deckhouse_gpu.domain.config.opaque_types import GPU_KIND, VFIO_KIND
from deckhouse_gpu.domain.gpuclass import API_VERSION, KIND
from deckhouse_gpu.domain.gpuclass.spec import DeviceKind, GpuClassSpec, Sharing

DRIVER = "gpu.deckhouse.io"
DEVICE_CLASS_API_VERSION = "resource.k8s.io/v1"
LABEL_GPU_CLASS = "gpu.deckhouse.io/gpuclass"  # on the DeviceClass: which GPUClass made it
MAX_EXPRESSION_BYTES = 10 * 1024  # the API server's limit on one selector expression

_A = f'device.attributes["{DRIVER}"]'
_C = f'device.capacity["{DRIVER}"]'

Object = dict[str, Any]


def _text(value: str) -> str:
    """A CEL string literal; the spec's values hold no quote or backslash (spec.py checks)."""
    return f'"{value}"'


def _one_of(field: str, values: Sequence[str]) -> str:
    if len(values) == 1:
        return f"{field} == {_text(values[0])}"
    return f"{field} in [{', '.join(_text(v) for v in values)}]"


def selector_expression(spec: GpuClassSpec, card_uuids: Sequence[str] | None = None) -> str:
    """The one CEL expression of the class; ``card_uuids``: the cards of the selected nodes,
    when the spec has a node selector (an empty list selects nothing)."""
    terms = [f'device.driver == "{DRIVER}"']
    match spec.kind:
        case DeviceKind.WHOLE if spec.vfio:
            # A share is never passed through; cards an administrator bound to vfio-pci are
            # published as deviceType VFIO and serve VM claims only (docs/VFIO.md).
            terms.append(f'!("sharePercent" in {_C})')
            terms.append(f'{_A}.deviceType in ["Physical", "VFIO"]')
        case DeviceKind.WHOLE:
            # On a sharing node a claim asking for no share takes the shared card whole.
            terms.append(f'{_A}.deviceType == "Physical"')
        case DeviceKind.MIG:
            terms.append(f'{_A}.deviceType == "MIG"')
            terms.append(f"{_A}.migProfile == {_text(spec.mig_profile or '')}")
        case DeviceKind.SHARE:
            # Not allowMultipleAllocations: that field exists only with DRAConsumableCapacity on.
            terms.append(f'"sharePercent" in {_C}')
            terms.append(f'{_A}.deviceType == "Physical"')
    cards = spec.cards
    if cards.models:
        terms.append(_one_of(f"{_A}.device", sorted(cards.models)))
    if cards.min_memory is not None:
        # A card bound to vfio-pci that never ran on nvidia has no memory published.
        terms.append(f'"memory" in {_C}')
        terms.append(f"{_C}.memory.compareTo(quantity({_text(str(cards.min_memory))})) >= 0")
    if cards.min_compute_capability is not None:
        major, minor = cards.min_compute_capability
        terms.append(f"has({_A}.ccMajor) && has({_A}.ccMinor)")
        terms.append(f"({_A}.ccMajor > {major} || ({_A}.ccMajor == {major} && {_A}.ccMinor >= {minor}))")
    if cards.node_selector is not None:
        uuids = sorted(set(card_uuids or ()))
        terms.append(f"has({_A}.uuid) && {_A}.uuid in [{', '.join(_text(u) for u in uuids)}]")
    return " &&\n".join(terms)


def opaque_config(spec: GpuClassSpec) -> list[Object]:
    """The driver's configuration every request of the class gets (docs/CLAIM_CONFIG.md)."""
    parameters: Object | None = None
    if spec.vfio:
        # What the virtualization module sends in its own claims, too (DESIGN.md D14).
        parameters = {"apiVersion": CONFIG_API_VERSION, "kind": VFIO_KIND}
    elif spec.sharing is not None:
        parameters = {"apiVersion": CONFIG_API_VERSION, "kind": GPU_KIND, "sharing": _sharing(spec.sharing)}
    if parameters is None:
        return []
    return [{"opaque": {"driver": DRIVER, "parameters": parameters}}]


def _sharing(sharing: Sharing) -> Object:
    """The config's ``sharing``: the strategy by name, and its settings' object only when the
    class set some (a strategy's defaults are the strategy's to apply, not the class's)."""
    rendered: Object = {"strategy": sharing.strategy}
    if sharing.settings is not None:
        strategy = features.strategy_of(sharing.settings)
        rendered[strategy.field] = strategy.write(sharing.settings)
    return rendered


def owner_reference(gpu_class: Object) -> Object:
    meta = gpu_class["metadata"]
    # No blockOwnerDeletion: setting it needs the update right on gpuclasses/finalizers, and
    # nothing waits for the DeviceClass to go before the GPUClass does.
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
    }


def device_class_spec(spec: GpuClassSpec, card_uuids: Sequence[str] | None = None) -> Object:
    rendered: Object = {"selectors": [{"cel": {"expression": selector_expression(spec, card_uuids)}}]}
    config = opaque_config(spec)
    if config:
        rendered["config"] = config
    if spec.extended_resource_name:
        rendered["extendedResourceName"] = spec.extended_resource_name
    return rendered


def device_class(gpu_class: Object, spec: GpuClassSpec, card_uuids: Sequence[str] | None = None) -> Object:
    """The whole DeviceClass of the same name, owned by the GPUClass."""
    name = gpu_class["metadata"]["name"]
    return {
        "apiVersion": DEVICE_CLASS_API_VERSION,
        "kind": "DeviceClass",
        "metadata": {
            "name": name,
            "labels": {LABEL_GPU_CLASS: name},
            "ownerReferences": [owner_reference(gpu_class)],
        },
        "spec": device_class_spec(spec, card_uuids),
    }


def owned_by_a_gpu_class(device_class_obj: Object, name: str) -> bool:
    """The DeviceClass is a GPUClass's of this name (whatever its uid: a GPUClass deleted and
    created again takes over the DeviceClass its predecessor left for the garbage collector)."""
    for ref in (device_class_obj.get("metadata") or {}).get("ownerReferences") or ():
        group = str(ref.get("apiVersion", "")).partition("/")[0]
        if ref.get("kind") == KIND and group == API_VERSION.partition("/")[0] and ref.get("name") == name:
            return bool(ref.get("controller"))
    return False


def update_patch(existing: Object, desired: Object) -> Object | None:
    """A merge patch that makes ``existing`` (owned) what ``desired`` says; None when it is."""
    meta, want = existing.get("metadata") or {}, desired["metadata"]
    current_spec, spec = existing.get("spec") or {}, desired["spec"]
    patch: Object = {}
    spec_patch = {
        field: spec.get(field)  # None removes a field the class no longer asks for
        for field in ("selectors", "config", "extendedResourceName")
        if current_spec.get(field) != spec.get(field)
    }
    if spec_patch:
        patch["spec"] = spec_patch
    labels = meta.get("labels") or {}
    if any(labels.get(k) != v for k, v in want["labels"].items()):
        patch.setdefault("metadata", {})["labels"] = want["labels"]
    if (meta.get("ownerReferences") or []) != want["ownerReferences"]:
        patch.setdefault("metadata", {})["ownerReferences"] = want["ownerReferences"]
    if not patch:
        return None
    # Guarded by the version it was computed from: a concurrent edit makes it fail, not be lost.
    patch.setdefault("metadata", {})["resourceVersion"] = meta.get("resourceVersion")
    return patch


def summary(spec: GpuClassSpec) -> str:
    """What the class selects, in a few words, for the SELECTS column of kubectl get gpuc."""
    match spec.kind:
        case DeviceKind.MIG:
            words = [f"MIG {spec.mig_profile}"]
        case DeviceKind.SHARE if spec.sharing is not None:
            strategy = features.named(spec.sharing.strategy)
            words = [strategy.class_words(spec.sharing.settings) if strategy else spec.sharing.strategy]
        case _:
            words = ["whole card" + (" for VMs" if spec.vfio else "")]
    cards = spec.cards
    words.append("of " + ", ".join(sorted(cards.models)) if cards.models else "of any model")
    if cards.min_memory is not None:
        words.append(f">= {cards.min_memory}")
    if cards.min_compute_capability is not None:
        words.append("cc >= {}.{}".format(*cards.min_compute_capability))
    if cards.node_selector is not None:
        words.append("on selected nodes")
    return ", ".join(words)
