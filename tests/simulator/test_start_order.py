# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's watches in the simulator list before its first pass reads the cards: a change
between that read and a later first list was reported by no event, so the handler heard of it only
at its next heartbeat, after the settle had taken the node for quiet (a card's DriverReady set by
gpu-controller then, and the node published nothing: tests/simulator/test_numa_scenario.py failed
about once in 40 runs)."""

from __future__ import annotations

import threading
from typing import Any

from deckhouse_gpu.ports.kube import PHYSICAL_GPUS
from deckhouse_gpu.simulator.scenario import parse_scenario
from deckhouse_gpu.simulator.simulation import SimulatedCluster

SCENARIO = """
settings: {heartbeatSeconds: 30}
nodes:
  - name: n1
    gpus:
      - {model: a30, address: "0000:17:00.0"}
"""


def test_the_handlers_first_read_of_the_cards_comes_after_its_watch_listed_them() -> None:
    cluster = SimulatedCluster(parse_scenario("order", SCENARIO))
    readers: list[str] = []  # the thread of each list of PhysicalGPUs, in order
    plain_list = cluster.api.list

    def recording_list(resource: Any, *args: Any, **kwargs: Any) -> Any:
        if resource == PHYSICAL_GPUS:
            readers.append(threading.current_thread().name)
        return plain_list(resource, *args, **kwargs)

    cluster.api.list = recording_list  # type: ignore[method-assign]
    with cluster:
        handler_reads = [i for i, name in enumerate(readers) if name == "HandlerLoop-n1"]
        watch_lists = [i for i, name in enumerate(readers) if name == "watch-physicalgpus"]
        assert handler_reads, readers
        assert len(watch_lists) >= 2, readers  # the handler's watch and the agent's deletion watch
        assert watch_lists[0] < handler_reads[0], readers
        # and with a heartbeat far away, the node is published by the settle all the same
        published = [s for s in cluster.resource_slices() if s["spec"]["nodeName"] == "n1"]
        assert any(s["spec"].get("devices") for s in published)
