# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The selectors of the example DeviceClasses and claims use only the functions and device fields that
a 1.34 API server accepts in new expressions (KUBERNETES-FACTS.md F3.2), and the CEL glue they rely on follows
the Kubernetes semantics."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deckhouse_gpu.k8s_semantics.cel import CompiledSelector, SelectorError, device_view
from tests.module.deviceclass_examples import (
    ALLOWED_FUNCTIONS,
    DEVICE_FIELDS,
    DRIVER,
    ENGINE,
    SELECTORS,
    selectors_of,
    templates,
)


def _all_selectors() -> Iterator[CompiledSelector]:
    for selectors in SELECTORS.values():
        yield from selectors
    for template in templates().values():
        for request in template["spec"]["spec"]["devices"]["requests"]:
            yield from selectors_of(request["exactly"])


def test_selectors_use_only_what_a_1_34_api_server_accepts() -> None:
    for selector in _all_selectors():
        assert selector.functions <= ALLOWED_FUNCTIONS, selector.expression
        assert selector.device_fields <= DEVICE_FIELDS, selector.expression


def test_cel_glue_follows_kubernetes_semantics() -> None:
    device = {
        "attributes": {"model": {"string": "x"}, "resource.kubernetes.io/pcieRoot": {"string": "pci0000:3b"}},
        "capacity": {"memory": {"value": "40960Mi"}},
    }
    view = device_view(DRIVER, device)
    holds = {
        'device.attributes["gpu.deckhouse.io"].model == "x"': True,  # unqualified: the driver's domain
        'device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:3b"': True,
        'has(device.attributes["example.com"].model)': False,  # unknown domain: an empty map
        'device.capacity["gpu.deckhouse.io"].memory == quantity("40Gi")': True,  # by value
        "device.allowMultipleAllocations": False,
    }
    for expression, expected in holds.items():
        assert ENGINE.compile(expression).matches(view) is expected, expression
    for wrong in (
        'device.attributes["gpu.deckhouse.io/model"] == "x"',  # DESIGN.md S7.2's form: a map is not a string
        'device.attributes["gpu.deckhouse.io"].missing == "x"',  # unknown name: an error
        'device.capacity["gpu.deckhouse.io"].memory >= quantity("1Gi")',  # quantities use compareTo
        'device.attributes["gpu.deckhouse.io"].model',  # not a bool
    ):
        with pytest.raises(SelectorError):
            ENGINE.compile(wrong).matches(view)
