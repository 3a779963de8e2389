# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A GPUClass's spec, read into a typed value, with every rule the CRD states checked again.

The CRD's schema and CEL rules refuse a wrong spec before it is stored; the controller checks
the same rules here because not every API server in front of it evaluates them (the in-memory
one of the tests and the simulator does not), and a class it cannot render must say why in its
status instead of producing a DeviceClass nobody asked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from deckhouse_gpu.domain.config import features
from deckhouse_gpu.domain.config.sharing_strategy import SharingConfig
from deckhouse_gpu.k8s_semantics.apimachinery.label_selector import Selector, parse_selector
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity


class DeviceKind(StrEnum):
    WHOLE = "Whole"  # a whole card, exclusively
    MIG = "MIG"  # one MIG instance of a given profile
    SHARE = "Share"  # a share of a card on a sharing node, under a strategy of the registry


MAX_MODELS = 32
# The driver's attribute values are at most 64 bytes (docs/DRA.md, "Attributes").
_ATTRIBUTE_TEXT = re.compile(r"[A-Za-z0-9][-A-Za-z0-9_.+ ]{0,63}")
_CAPABILITY = re.compile(r"([0-9]{1,2})\.([0-9]{1,2})")
_MIG_PROFILE = re.compile(r"[0-9]+g\.[0-9]+gb(\+[a-z.]+)?")
# An extended resource name: a qualified name with a domain, outside kubernetes.io
# (k8s.io/apimachinery validation IsExtendedResourceName), and no "+" anywhere.
_DOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_EXTENDED = re.compile(rf"(?P<domain>{_DOMAIN})/(?P<name>[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)")


class InvalidSpec(ValueError):
    """The spec breaks a rule; ``problems`` lists every one, each naming its field."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Cards:
    models: tuple[str, ...] = ()  # values of the attribute `device`; empty: any model
    min_memory: Quantity | None = None
    min_compute_capability: tuple[int, int] | None = None
    node_selector: Selector | None = None  # None: every node


@dataclass(frozen=True)
class Sharing:
    """A class's strategy (a name of domain/config/features.py) and the settings the strategy
    made of its fields (``SharingStrategy.class_settings``); None: none set."""

    strategy: str
    settings: SharingConfig | None = None


@dataclass(frozen=True)
class GpuClassSpec:
    kind: DeviceKind
    cards: Cards = Cards()
    mig_profile: str | None = None
    sharing: Sharing | None = None
    vfio: bool = False
    extended_resource_name: str | None = None


def parse_spec(raw: Any) -> GpuClassSpec:
    """Reads ``spec``; raises ``InvalidSpec`` listing every broken rule."""
    problems: list[str] = []
    spec = raw if isinstance(raw, dict) else {}
    kind = _kind(spec.get("deviceKind"), problems)
    cards = _cards(spec.get("cards"), problems)
    profile = _mig_profile(spec.get("migProfile"), kind, problems)
    sharing = _sharing(spec.get("sharing"), kind, problems)
    vfio = spec.get("vfio", False)
    if not isinstance(vfio, bool):
        problems.append("spec.vfio: must be true or false")
        vfio = False
    if vfio and kind is not DeviceKind.WHOLE:
        problems.append("spec.vfio: a virtual machine gets a whole card: only with deviceKind Whole")
    extended = _extended_resource_name(spec.get("extendedResourceName"), kind, problems)
    if extended is not None:
        _device_plugin_name(extended, kind, profile, problems)
    if problems or kind is None:
        raise InvalidSpec(problems or ["spec.deviceKind: required"])
    return GpuClassSpec(kind, cards, profile, sharing, vfio, extended)


def _kind(value: Any, problems: list[str]) -> DeviceKind | None:
    try:
        return DeviceKind(value)
    except ValueError:
        wanted = ", ".join(k.value for k in DeviceKind)
        problems.append(f"spec.deviceKind: {value!r} is not one of {wanted}")
        return None


def _cards(raw: Any, problems: list[str]) -> Cards:
    if raw is None:
        return Cards()
    if not isinstance(raw, dict):
        problems.append("spec.cards: must be an object")
        return Cards()
    models = raw.get("models") or []
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        problems.append("spec.cards.models: must be a list of strings")
        models = []
    for model in models:
        if not _ATTRIBUTE_TEXT.fullmatch(model):
            problems.append(
                f"spec.cards.models: {model!r} is not a model value "
                "(see kubectl get pgpu -L gpu.deckhouse.io/device)"
            )
    if len(models) > MAX_MODELS:
        problems.append(f"spec.cards.models: at most {MAX_MODELS} models")
    if len(set(models)) != len(models):
        problems.append("spec.cards.models: a model is listed twice")
    memory = None
    if raw.get("minMemory") is not None:
        try:
            memory = Quantity.parse(str(raw["minMemory"]))
        except ValueError:
            problems.append(
                f"spec.cards.minMemory: {raw['minMemory']!r} is not a quantity (for example 40Gi)"
            )
        else:
            if memory.sign() <= 0:
                problems.append("spec.cards.minMemory: must be more than zero")
    capability = None
    if raw.get("minComputeCapability") is not None:
        found = _CAPABILITY.fullmatch(str(raw["minComputeCapability"]))
        if found is None or not isinstance(raw["minComputeCapability"], str):
            problems.append(
                f"spec.cards.minComputeCapability: {raw['minComputeCapability']!r} is not "
                'major.minor (for example "8.0")'
            )
        else:
            capability = (int(found.group(1)), int(found.group(2)))
    selector = _node_selector(raw.get("nodeSelector"), problems)
    return Cards(tuple(models), memory, capability, selector)


# metav1.LabelSelector operators, spelled as the selector strings the label parser reads.
_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "", "DoesNotExist": "!"}


def _node_selector(raw: Any, problems: list[str]) -> Selector | None:
    """metav1.LabelSelector, as in every Kubernetes API: matchLabels and matchExpressions (ANDed).

    Written as a selector string and read by the label parser, which checks keys and values as
    the API server does."""
    if raw is None:
        return None
    where = "spec.cards.nodeSelector"
    if not isinstance(raw, dict):
        problems.append(f"{where}: must be an object")
        return None
    terms: list[str] = []
    try:
        for key, value in sorted((raw.get("matchLabels") or {}).items()):
            terms.append(f"{key}={value}")
        for expression in raw.get("matchExpressions") or []:
            operator = _OPERATORS.get(expression.get("operator"))
            key, values = str(expression.get("key")), [str(v) for v in expression.get("values") or []]
            if operator is None:
                raise ValueError(
                    f"operator {expression.get('operator')!r} is not In, NotIn, Exists or DoesNotExist"
                )
            if (operator in ("in", "notin")) != bool(values):
                raise ValueError(f"{key}: In and NotIn need values, Exists and DoesNotExist take none")
            terms.append(f"{key} {operator} ({','.join(values)})" if values else f"{operator}{key}")
        return parse_selector(",".join(terms)) if terms else Selector()
    except (ValueError, AttributeError) as error:
        problems.append(f"{where}: {error}")
        return None


def _mig_profile(value: Any, kind: DeviceKind | None, problems: list[str]) -> str | None:
    if kind is DeviceKind.MIG and value is None:
        problems.append("spec.migProfile: required with deviceKind MIG (for example 1g.10gb)")
    if value is None:
        return None
    if kind is not DeviceKind.MIG:
        problems.append("spec.migProfile: only with deviceKind MIG")
    if not isinstance(value, str) or not _MIG_PROFILE.fullmatch(value):
        problems.append(
            f"spec.migProfile: {value!r} is not a MIG profile name (for example 1g.10gb or 1g.6gb+me)"
        )
        return None
    return value


def _sharing(raw: Any, kind: DeviceKind | None, problems: list[str]) -> Sharing | None:
    if kind is DeviceKind.SHARE and raw is None:
        problems.append("spec.sharing: required with deviceKind Share")
    if raw is None:
        return None
    if kind is not DeviceKind.SHARE:
        problems.append("spec.sharing: only with deviceKind Share")
    if not isinstance(raw, dict):
        problems.append("spec.sharing: must be an object")
        return None
    strategy = features.named(raw.get("strategy"))
    if strategy is None:
        names = " or ".join(features.names())
        problems.append(f"spec.sharing.strategy: {raw.get('strategy')!r} is not {names}")
        return None
    settings = None
    # Every strategy's fields in the registry's order: the chosen one's make its settings, another's
    # is refused naming its strategy, and still checked so that every problem is told at once.
    for owner in features.STRATEGIES:
        fields = {field: raw[field] for field in owner.class_fields if raw.get(field) is not None}
        for field in fields if owner is not strategy else ():
            why = owner.class_fields[field]
            problems.append(
                f"spec.sharing.{field}: only with strategy {owner.name}" + (f" ({why})" if why else "")
            )
        made = owner.class_settings(fields, "spec.sharing", problems)
        if owner is strategy:
            settings = made
    return Sharing(strategy.name, settings)


def _extended_resource_name(value: Any, kind: DeviceKind | None, problems: list[str]) -> str | None:
    if value is None:
        return None
    where = "spec.extendedResourceName"
    found = _EXTENDED.fullmatch(value) if isinstance(value, str) else None
    if found is None or len(found["name"]) > 63 or len(found["domain"]) > 253:
        problems.append(f"{where}: {value!r} is not <domain>/<name> (for example gpu.deckhouse.io/a30)")
        return None
    domain = found["domain"]
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io") or value.startswith("requests."):
        problems.append(f"{where}: {value!r}: the kubernetes.io domain is reserved")
    if kind is DeviceKind.SHARE:
        problems.append(
            f"{where}: a Pod asking through an extended resource cannot ask for a share and would "
            "take the whole card: use a ResourceClaimTemplate with capacity.requests.sharePercent"
        )
    return str(value)


MIG_PLUGIN_PREFIX = "nvidia.com/mig-"  # the NVIDIA device plugin's MIG resources (mixed strategy)


def _device_plugin_name(name: str, kind: DeviceKind | None, profile: str | None, problems: list[str]) -> None:
    """``nvidia.com/mig-<profile>`` is what the device plugin's mixed strategy calls a MIG instance of
    that profile (``+`` spelled ``.``): a class of another kind or profile under that name would hand
    Pods written for the plugin something else than they ask for (docs/MIGRATION.md)."""
    if not name.startswith(MIG_PLUGIN_PREFIX):
        return
    wanted = MIG_PLUGIN_PREFIX + profile.replace("+", ".") if kind is DeviceKind.MIG and profile else None
    if name != wanted:
        hint = f"use {wanted}" if wanted else "only with deviceKind MIG"
        problems.append(
            f"spec.extendedResourceName: {name} is the device plugin's name of a MIG instance of profile "
            f"{name.removeprefix(MIG_PLUGIN_PREFIX)}: {hint}"
        )
