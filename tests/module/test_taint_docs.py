# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The claim docs/DRA.md (and its Russian twin) shows for a card with the health taint gets such a
card from the module's allocator, on every Kubernetes version, and the same claim without its
tolerations does not; the taint table names what the code publishes."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml

from deckhouse_gpu.domain.inventory.health.device_health import TAINT_KEY
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.services.allocation.allocation_preview import preview
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from testkit.gpu_objects import ready_card
from tests.module.deviceclass_examples import CLASSES, EXAMPLES
from tests.support.k8s_versions import MINORS

DOCS = [EXAMPLES.parent / "DRA.md", EXAMPLES.parent / "DRA.ru.md"]


def tolerating_claims() -> list[dict[str, Any]]:
    found = []
    for doc in DOCS:
        blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", doc.read_text(), re.DOTALL)]
        found.append(
            [
                b
                for b in blocks
                if isinstance(b, dict)
                and b.get("kind") == "ResourceClaim"
                and any(r.get("exactly", {}).get("tolerations") for r in b["spec"]["devices"]["requests"])
            ]
        )
    assert found[0] == found[1], "both languages show the same claim"
    (claim,) = found[0]
    return [claim]


def lost_a30() -> dict[str, Any]:
    card = ready_card("w1", "0000:17:00.0", "a30")
    (health,) = [c for c in card["status"]["conditions"] if c["type"] == "HardwareHealthy"]
    health.update(status="Unknown", reason="NVMLQueryFailed", message="0000:17:00.0: GPU is lost")
    return card


@pytest.mark.parametrize("minor", MINORS)
def test_the_doc_claim_tolerates_the_health_taint(minor: int) -> None:
    (claim,) = tolerating_claims()
    slices = render_nodes([lost_a30()], minor, {}, True, True)
    classes = [CLASSES[claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"]]]
    report = preview(slices, classes, [claim], [], Semantics(f"1.{minor}"), "w1")
    (placed,) = report["claims"]
    (result,) = placed["allocation"]["devices"]["results"]
    assert result["device"] == "gpu-0000-17-00-0"
    untolerant = copy.deepcopy(claim)
    del untolerant["spec"]["devices"]["requests"][0]["exactly"]["tolerations"]
    report = preview(slices, classes, [untolerant], [], Semantics(f"1.{minor}"), "w1")
    assert "claims" not in report, report


def test_the_docs_name_the_taints_the_code_publishes() -> None:
    for doc in DOCS:
        text = doc.read_text()
        for value, effect in (("GPULost", "NoExecute"), ("GPUResetRequired", "NoExecute")):
            assert f"`{TAINT_KEY}={value}:{effect}`" in text
        assert f"`{TAINT_KEY}=<" in text  # the condition's reason, NoSchedule
