# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Every GPUClass renders the DeviceClass it rendered before the strategies rendered their own
class settings (DESIGN.md D20), and a bad spec is told the same problems.

classes_as_rendered.json was captured from the GPUClass spec and render as they were when each
strategy was a branch of their own (an enum of the spec, a branch of the render): whole cards,
VFIO, MIG, every strategy with and without its fields, with the cards' filters and node
selector. Key order is compared too (json.dumps without sorting), so the objects are
byte-identical, not only equal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deckhouse_gpu.domain.config import features
from deckhouse_gpu.domain.gpuclass.render import device_class_spec, summary
from deckhouse_gpu.domain.gpuclass.spec import InvalidSpec, parse_spec

BEFORE = json.loads((Path(__file__).parent / "classes_as_rendered.json").read_text())


@pytest.mark.parametrize("case", BEFORE["rendered"], ids=lambda case: summary(parse_spec(case["spec"])))
def test_a_class_renders_the_device_class_it_rendered_before(case: dict[str, Any]) -> None:
    spec = parse_spec(case["spec"])
    uuids = ["GPU-b", "GPU-a"] if "cards" in case["spec"] else None
    rendered = device_class_spec(spec, uuids)
    assert rendered == case["deviceClass"]
    assert json.dumps(rendered) == json.dumps(case["deviceClass"])  # the keys in the same order too
    assert summary(spec) == case["summary"]


def test_the_cases_cover_every_strategy_with_and_without_its_class_fields() -> None:
    shares = [case["spec"]["sharing"] for case in BEFORE["rendered"] if "sharing" in case["spec"]]
    for strategy in features.STRATEGIES:
        mine = [sharing for sharing in shares if sharing["strategy"] == strategy.name]
        assert any(set(sharing) == {"strategy"} for sharing in mine), strategy.name
        for field in strategy.class_fields:
            assert any(field in sharing for sharing in mine), (strategy.name, field)


@pytest.mark.parametrize("case", BEFORE["refused"], ids=lambda case: json.dumps(case["spec"]))
def test_a_bad_class_is_told_the_problems_it_was_told_before(case: dict[str, Any]) -> None:
    with pytest.raises(InvalidSpec) as caught:
        parse_spec(case["spec"])
    # The same problems; their order follows the registry now, not the spec's former branches.
    assert sorted(caught.value.problems) == sorted(case["problems"])
