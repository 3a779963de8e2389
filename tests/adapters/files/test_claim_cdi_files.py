# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import json
import shutil

from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.k8s_semantics.cdi.cdi_rules import validate_spec
from deckhouse_gpu.simulator.host import driver_tree
from testkit.prepare_world import build_world

A30 = "0000:17:00.0"
PHYSICAL = DevicePlan("gpu", "gpus/w1", "gpu-0000-17-00-0", A30, "Physical")


def mounts(world, uid):
    spec = json.loads((world.cdi_root / f"gpu.deckhouse.io-gpu_{uid}.json").read_text())
    assert validate_spec(spec) == []
    return [m["hostPath"] for m in spec["containerEdits"]["mounts"]]


def test_driver_files_are_rediscovered_when_the_driver_changes(tmp_path):
    world = build_world(tmp_path, {A30: "a30"})
    cdi = world.service().cdi
    ids = cdi.write_claim("claim-1", (PHYSICAL,), ())
    assert ids == {"gpu-0000-17-00-0": ("gpu.deckhouse.io/gpu=claim-1-gpu-0000-17-00-0",)}
    assert any("580.82.07" in path for path in mounts(world, "claim-1"))
    shutil.rmtree(tmp_path / "driver-root")  # the driver is upgraded: the old files go
    driver_tree.build_driver_root(tmp_path / "driver-root", "590.10.01")
    cdi.write_claim("claim-2", (PHYSICAL,), ())
    upgraded = mounts(world, "claim-2")
    assert any("590.10.01" in path for path in upgraded)
    assert not any("580.82.07" in path for path in upgraded)
    cdi.delete_claim("claim-1")
    assert cdi.claims_with_specs() == {"claim-2"}
