# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-simulator: runs the module's components against simulated nodes and shows the result.

gpu-simulator                         # the default scenario, mixed-cluster
gpu-simulator --scenario single-a30   # another built-in scenario
gpu-simulator --scenario my.yaml -o wide
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

import yaml

from deckhouse_gpu.adapters.process import json_logging
from deckhouse_gpu.cmd.kubectl_gpu import main as kubectl_gpu
from deckhouse_gpu.domain.inventory.physicalgpu import PRINTER_COLUMNS
from deckhouse_gpu.domain.inventory.printer_columns import render_table
from deckhouse_gpu.domain.offers.model import STANDARD_DOMAIN
from deckhouse_gpu.simulator.attribution import MetricsEndpoints, show_who_uses, step_lines
from deckhouse_gpu.simulator.scenario import ScenarioError, builtin_names, load_scenario
from deckhouse_gpu.simulator.simulation import SimulatedCluster
from deckhouse_gpu.simulator.taints import TaintWatch

# Steps whose point is what the scheduler sees: the simulator prints the slices after them too.
SLICE_STEPS = ("labelNode", "setValidator", "addGpu", "prepareClaim", "unprepareClaim")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="gpu-simulator", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--scenario", default="mixed-cluster", help=f"built-in ({', '.join(builtin_names())}) or a file"
    )
    parser.add_argument(
        "-o", "--output", choices=("table", "wide"), default="table", help="like kubectl get -o wide"
    )
    parser.add_argument("--log-level", default="error", help="component logs on stderr (JSON), default error")
    return parser.parse_args(argv)


def show(cluster: SimulatedCluster, out: TextIO, wide: bool) -> None:
    objects = sorted(cluster.physical_gpus(), key=lambda o: str(o["metadata"]["name"]))
    print("$ kubectl get pgpu" + (" -o wide" if wide else ""), file=out)
    if objects:
        print(render_table(objects, PRINTER_COLUMNS, datetime.now(UTC), wide=wide), file=out)
    else:
        print("No resources found", file=out)


def _device_kind(device: dict[str, Any]) -> str:
    kind = str(device["attributes"]["deviceType"]["string"])
    return f"{kind}/shared" if device.get("allowMultipleAllocations") else kind


STANDARD_NUMA = f"{STANDARD_DOMAIN}/numaNode"


def _numa_nodes(devices: list[dict[str, Any]]) -> str:
    """The standard ``resource.kubernetes.io/numaNode`` values of the devices; "-" where unknown."""
    found = {
        device["attributes"][STANDARD_NUMA]["int"]
        for device in devices
        if STANDARD_NUMA in (device.get("attributes") or {})
    }
    return ",".join(map(str, sorted(found))) or "-"


def show_slices(cluster: SimulatedCluster, out: TextIO) -> None:
    """Like `kubectl get resourceslices` with the columns an operator looks at for a DRA driver."""
    rows = [["NAME", "NODE", "POOL", "GENERATION", "DEVICES", "COUNTERSETS", "NUMA", "KINDS"]]
    for item in sorted(cluster.resource_slices(), key=lambda s: str(s["metadata"]["name"])):
        spec = item["spec"]
        devices = spec.get("devices", [])
        kinds = sorted({_device_kind(device) for device in devices})
        pool = spec["pool"]
        counter_sets = str(len(spec.get("sharedCounters", [])))
        name = item["metadata"]["name"]
        row = [name, spec["nodeName"], pool["name"], str(pool["generation"]), str(len(devices)), counter_sets]
        rows.append([*row, _numa_nodes(devices), ",".join(kinds) or "-"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    print("$ kubectl get resourceslices  # the columns that matter, from the objects", file=out)
    for row in rows:
        print(
            "   ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip(), file=out
        )


def new_events(cluster: SimulatedCluster, seen: set[str]) -> list[dict[str, Any]]:
    """Events not shown yet, in the order the API server stored them."""
    fresh = [event for event in cluster.events() if event["metadata"]["name"] not in seen]
    seen.update(event["metadata"]["name"] for event in fresh)
    return sorted(fresh, key=lambda event: int(event["metadata"]["resourceVersion"]))


def show_events(events: list[dict[str, Any]], out: TextIO) -> None:
    for event in events:
        print(f"  event {event['type']} {event['reason']}: {event['message']}", file=out)


def show_object(cluster: SimulatedCluster, out: TextIO) -> None:
    objects = sorted(cluster.physical_gpus(), key=lambda o: str(o["metadata"]["name"]))
    if objects:
        name = objects[0]["metadata"]["name"]
        print(f"\n$ kubectl get pgpu {name} -o yaml", file=out)
        out.write(yaml.safe_dump(objects[0], sort_keys=False))


def show_kubectl_gpu(cluster: SimulatedCluster, out: TextIO) -> None:
    """The plugin's answers on the simulated cluster, computed over its in-memory API."""
    for argv in (["status"], ["capacity"]):
        print(f"\n$ kubectl gpu {' '.join(argv)}", file=out)
        kubectl_gpu.report(cluster.api, argv, out)


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout  # looked up per call: tests and callers may have replaced it
    args = parse_args(argv)
    json_logging.configure("gpu-simulator", args.log_level)
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as error:
        print(f"gpu-simulator: {error}", file=sys.stderr)
        return 2
    wide = args.output == "wide"
    cluster = SimulatedCluster(scenario)
    endpoints = MetricsEndpoints()  # each simulated gpu-handler's /metrics
    try:
        print(f"Scenario {scenario.name}: {scenario.description}", file=out)
        print(
            f"{len(scenario.nodes)} nodes, each with gpu-node-agent and gpu-handler (simulated NVML);"
            " one gpu-controller; one in-memory API server.\n",
            file=out,
        )
        cluster.start()
        cluster.health_changes()  # the start's health is in the table; steps show what changes
        taints = TaintWatch()
        taints.changes(cluster.resource_slices())
        seen: set[str] = set()
        new_events(cluster, seen)
        show(cluster, out, wide)
        print(file=out)
        show_slices(cluster, out)
        for number, step in enumerate(scenario.steps, start=1):
            print(f"\nStep {number}: {step.title}", file=out)
            cluster.apply(step)
            seconds = cluster.settle()
            for line in cluster.report:
                print(line, file=out)
            kubelet_steps = ("prepareClaim", "unprepareClaim", "vmPod", "deletePod")
            if step.kind in kubelet_steps and step.args.get("node") in cluster.nodes:
                for line in step_lines(endpoints, cluster.nodes[str(step.args["node"])]):
                    print(line, file=out)
            show_events(new_events(cluster, seen), out)
            for line in cluster.health_changes():
                print(f"  device health sent to the kubelet (Pods show it): {line}", file=out)
            for line in taints.changes(cluster.resource_slices()):
                print(f"  ResourceSlices: {line}", file=out)
            print(f"  the API reflected it within {seconds * 1000:.0f} ms", file=out)
            show(cluster, out, wide)
            if step.kind in SLICE_STEPS:
                show_slices(cluster, out)
        show_object(cluster, out)
        show_kubectl_gpu(cluster, out)
        show_who_uses(cluster, endpoints, out)
    except ScenarioError as error:
        print(f"gpu-simulator: {error}", file=sys.stderr)
        return 2
    finally:
        endpoints.close()
        cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
