# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""kubectl gpu capacity names a DeviceClass that accepts every device of the driver: offers follow
the classes (DESIGN.md D19), so for it every node publishes its whole MIG layout."""

from __future__ import annotations

import json

from deckhouse_gpu.ports.controller_resources import DEVICE_CLASSES
from tests.cmd.kubectl_gpu_world import World, world  # noqa: F401 - the fixture

WARNING = "warning: DeviceClass gpu-any accepts every gpu.deckhouse.io device, each MIG placement included"


def test_a_class_of_every_device_is_named_with_what_it_costs(world: World) -> None:  # noqa: F811
    code, out = world.run("capacity")
    assert code == 0
    assert "accepts every gpu.deckhouse.io device" not in out  # the example classes are narrow
    selectors = [{"cel": {"expression": 'device.driver == "gpu.deckhouse.io"'}}]
    world.cluster.kube.create(
        DEVICE_CLASSES, {"metadata": {"name": "gpu-any"}, "spec": {"selectors": selectors}}
    )
    code, out = world.run("capacity")
    assert code == 0
    assert WARNING in out
    code, out = world.run("capacity", "-o", "json")
    assert json.loads(out)["broadClasses"] == ["gpu-any"]
