# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The example claims and Pods (docs/examples/claims.yaml) against the example DeviceClasses and the
rendered pools: extended resources that name a class, a share the devices allow, the MIG instances
a claim's own selector picks."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity
from deckhouse_gpu.k8s_semantics.cel import device_view
from tests.module import deviceclass_examples
from tests.module.deviceclass_examples import (
    CLAIMS,
    CLASSES,
    DRIVER,
    SELECTORS,
    VARIANTS,
    Variant,
    intended_offers,
    rendered_devices,
    selected,
    selectors_of,
    templates,
)

# The shared fixture, bound here so that pytest finds it for this module's tests.
cards = deviceclass_examples.cards


def test_pod_extended_resources_name_one_class() -> None:
    resources = {c["spec"].get("extendedResourceName"): n for n, c in CLASSES.items()}
    for pod in (c for c in CLAIMS if c["kind"] == "Pod"):
        for container in pod["spec"]["containers"]:
            for resource in container["resources"].get("limits") or {}:
                assert resource in resources, f"{pod['metadata']['name']}: {resource} maps to no class"
            for claim in container["resources"].get("claims") or []:
                names = {c["name"]: c for c in pod["spec"]["resourceClaims"]}
                assert names[claim["name"]]["resourceClaimTemplateName"] in templates()


def test_shared_claim_asks_for_a_share_the_devices_allow(cards: list[dict[str, Any]]) -> None:
    request = templates()["a30-half"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    share = Quantity.parse(request["capacity"]["requests"]["sharePercent"])
    devices = [(n, DRIVER, d) for n, d in rendered_devices(cards, 35, VARIANTS[1])]
    chosen = selected(request["deviceClassName"], devices)[0]
    assert {n for n, _ in chosen} == {"node-a30"}
    assert len(chosen) == 2
    for node, _, device in devices:
        if (node, device["name"]) in chosen:
            policy = device["capacity"]["sharePercent"]["requestPolicy"]["validRange"]
            low, high, step = (Quantity.parse(policy[k]).value for k in ("min", "max", "step"))
            assert low <= share.value <= high
            assert (share.value - low) % step == 0


@pytest.mark.parametrize("variant", VARIANTS[:2], ids=lambda v: v.name)
def test_mig_claim_selects_the_a30_2g_instances(cards: list[dict[str, Any]], variant: Variant) -> None:
    request = templates()["a30-mig-2g"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    selectors = SELECTORS[request["deviceClassName"]] + selectors_of(request)
    chosen = {
        (node, device["name"])
        for node, device in rendered_devices(cards, 34, variant)
        if all(s.matches(device_view(DRIVER, device)) for s in selectors)
    }
    wanted = {(o.node, o.name) for o in intended_offers(cards, variant) if o.profile == "2g.12gb"}
    assert chosen == wanted
    assert len(wanted) == (4 if variant.mig else 0)
