# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The CEL and YAML examples of docs/DRA.md and docs/DRA.ru.md: the CEL of the attribute and capacity
tables is safe and selects something, and the DeviceClasses shown are the examples themselves."""

from __future__ import annotations

import re
from typing import Any

import yaml

from deckhouse_gpu.domain.cel import device_view
from tests.module import deviceclass_examples
from tests.module.deviceclass_examples import (
    ALLOWED_FUNCTIONS,
    CLASSES,
    DEVICE_FIELDS,
    DRIVER,
    ENGINE,
    EXAMPLES,
    VARIANTS,
    rendered_devices,
)

# The shared fixture, bound here so that pytest finds it for this module's tests.
cards = deviceclass_examples.cards

DOCS = [EXAMPLES.parent / "DRA.md", EXAMPLES.parent / "DRA.ru.md"]
_TABLE_CEL = re.compile(r"^\|.*\| `((?:device\.|has\().*)` \|$")


def doc_cel_examples() -> list[str]:
    """The CEL example of every table row that ends with one (the attribute and capacity tables)."""
    return [m[1] for doc in DOCS for line in doc.read_text().splitlines() if (m := _TABLE_CEL.match(line))]


def test_doc_cel_examples_are_safe_and_select_something(cards: list[dict[str, Any]]) -> None:
    examples = doc_cel_examples()
    assert len(examples) >= 2 * 19, "the attribute and capacity tables of both languages"
    devices = [d for v in VARIANTS[:2] for _, d in rendered_devices(cards, 35, v)]
    views = [device_view(DRIVER, device) for device in devices]
    for expression in sorted(set(examples)):
        selector = ENGINE.compile(expression)
        assert selector.functions <= ALLOWED_FUNCTIONS, expression
        assert selector.device_fields <= DEVICE_FIELDS, expression
        # A list, not a generator: every device is evaluated, so an unguarded example fails.
        assert any([selector.matches(view) for view in views]), f"selects nothing: {expression}"


def test_doc_yaml_objects_are_the_examples() -> None:
    shown = 0
    for doc in DOCS:
        for block in re.findall(r"```yaml\n(.*?)```", doc.read_text(), re.DOTALL):
            obj = yaml.safe_load(block)
            if isinstance(obj, dict) and obj.get("kind") == "DeviceClass":
                assert obj == CLASSES[obj["metadata"]["name"]], f"{doc.name}: differs from the example"
                shown += 1
    assert shown == 2
