# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Which offers some DeviceClass of the cluster can select (DESIGN.md D19).

Every request of a claim names a DeviceClass, and the scheduler gives it only a device that all of
the class's selectors accept, so a device no class selects can never be allocated: publishing it
only costs the scheduler work on every GPU Pod. A node therefore publishes an offer only when at
least one class may select it, judged with the module's CEL (k8s_semantics/cel) on the offer as it would
be published. The judgement errs towards publishing: a selector that does not compile, or that
fails on the device, counts as "may select" (the scheduler would fail such a claim or a newer
CEL could accept it; either way leaving the device out must never be what refuses it).
A class without selectors selects every device of every driver (DRA.md, "A very broad class").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.offers.model import DRIVER, Offer
from deckhouse_gpu.k8s_semantics.cel import DeviceView, SelectorEngine, SelectorError, device_view

_ENGINE = SelectorEngine()  # compiled expressions are cached per text, shared by every publish


@dataclass(frozen=True)
class ClassSelectors:
    name: str
    expressions: tuple[str, ...]  # all must accept a device; none: every device

    @property
    def selects_everything(self) -> bool:
        return not self.expressions


@dataclass(frozen=True)
class ClassDemand:
    """The selectors of every DeviceClass in the cluster."""

    classes: tuple[ClassSelectors, ...]

    def may_select(self, offer: Offer) -> bool:
        """True when at least one class may select the offer (an error counts as may)."""
        from deckhouse_gpu.domain.offers.slice_layout import device_json  # noqa: PLC0415 - cycle

        view = None
        for selectors in self.classes:
            if selectors.selects_everything:
                return True
            if view is None:
                view = device_view(DRIVER, device_json(offer))
            if all(self._accepts(expression, view) for expression in selectors.expressions):
                return True
        return False

    @staticmethod
    def _accepts(expression: str, view: DeviceView) -> bool:
        try:
            return _ENGINE.compile(expression).matches(view)
        except SelectorError:
            return True

    def broad(self) -> list[str]:
        """The classes that select every device of this driver (no selector, or none that narrows)."""
        return [c.name for c in self.classes if c.selects_everything]


def demand_of(classes: Iterable[Mapping[str, Any]]) -> ClassDemand:
    """The demand of DeviceClass objects as the API server returns them (resource.k8s.io/v1)."""
    found = []
    for obj in classes:
        name = str((obj.get("metadata") or {}).get("name") or "")
        selectors = (obj.get("spec") or {}).get("selectors") or []
        expressions = tuple(
            str((entry.get("cel") or {}).get("expression") or "")
            for entry in selectors
            if isinstance(entry, Mapping)
        )
        found.append(ClassSelectors(name, expressions))
    return ClassDemand(tuple(sorted(found, key=lambda c: c.name)))


def selectors_only(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What a DeviceClass cache keeps: its name and selectors, so that a change of anything else
    (labels, config, resourceVersion) republishes nothing."""
    return {
        "metadata": {"name": (obj.get("metadata") or {}).get("name")},
        "spec": {"selectors": (obj.get("spec") or {}).get("selectors") or []},
    }
