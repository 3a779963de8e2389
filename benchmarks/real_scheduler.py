# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What the real kube-scheduler pays for our offers (issue 32): real kube-apiserver and
kube-scheduler binaries (testkit/real_cluster.py), N fake GPU nodes of 8 H100 each publishing the
slices gpu-handler renders for them, P Pods each with one whole-card claim from a
ResourceClaimTemplate (variants: through the class's extended resource; a 1g.10gb MIG claim), per
layout:

- plain: whole cards, no MIG, no counters (what nodes labelled ``gpu.deckhouse.io/mig=false``
  publish: "MIG off" renders exactly this),
- default: every MIG profile and placement, with counters (the module's default),
- 3 profiles: the layout under ``dra.migProfiles`` restricted to 1g.10gb, 3g.40gb and 7g.80gb,
- typical classes: what a node publishes when the cluster's DeviceClasses are a typical set, whole
  cards plus 1g.10gb and 3g.40gb (offers follow the classes, DESIGN.md D19),

on 1.35, 1.36 and 1.36 with upstream PR #138917 (the change of 1.37). Figures: Pods bound per
second of wall time and the scheduler process's CPU milliseconds per bound Pod, read from
``/proc/<pid>/stat`` (user + system) between the first Pod's creation and the last binding, so
other work on the machine does not count. Each run uses a fresh scheduler process and nodes of
its own; the slices of the previous run are deleted first, so only this run's nodes publish.
Ratios are to plain of the same scheduler and size.

``python -m benchmarks.real_scheduler [--nodes 40,200] [--mig]``; ``make bench`` runs it at 40
nodes with whole-card and 1g.10gb Pods on plain, default and typical (``make bench
SCHEDULER_NODES=40,200`` adds 200 nodes: tens of minutes, most of them 1.35 and 1.36 on the
default layout) and prints the table of docs/DRA.md, "Scale" (``table``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.class_demand import demand_of
from deckhouse_gpu.domain.offers.model import OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import render
from testkit.gpu_objects import node_cards
from testkit.real_cluster import ApiError, AssetsMissing, RealCluster, binaries, real_cluster

CARDS = 8
TOKEN = "nodetemplatex"
NAMESPACE = "bench"
CLASS = "bench-h100"
EXTENDED = "gpu.deckhouse.io/bench-h100"
MIG_CLASS = "bench-h100-1g"
RESTRICTED = frozenset(("1g.10gb", "3g.40gb", "7g.80gb"))
OURS = 'device.driver == "gpu.deckhouse.io"'
# A whole card has no migProfile: without the deviceType term the selector would fail on it.
MIG = f'{OURS} && device.attributes["gpu.deckhouse.io"].deviceType == "MIG"'
# The typical class set: whole cards, and two MIG profiles (the MIG Pods ask for the first).
TYPICAL_CLASSES = {
    CLASS: f'{OURS} && device.attributes["gpu.deckhouse.io"].deviceType == "Physical"',
    MIG_CLASS: f'{MIG} && device.attributes["gpu.deckhouse.io"].migProfile == "1g.10gb"',
    "bench-h100-3g": f'{MIG} && device.attributes["gpu.deckhouse.io"].migProfile == "3g.40gb"',
}
TYPICAL = demand_of(
    [{"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression": expression}}]}}
     for name, expression in TYPICAL_CLASSES.items()]
)  # fmt: skip
LAYOUTS = {
    "plain": OfferPolicy(mig=False),
    "default": OfferPolicy(),
    "3 profiles": OfferPolicy(mig_profiles=(("h100-sxm5-80gb", RESTRICTED),)),
    "typical": OfferPolicy(demand=TYPICAL),
}
VARIANTS = ("claim template", "extended resource", "MIG 1g.10gb")
# dra.migOffers OptIn in a big cluster: this many nodes (labelled gpu.deckhouse.io/mig=true)
# publish the default layout, every other node whole cards only.
OPT_IN = {"16 opt-in": 16}
# (version, scheduler binary, label)
SCHEDULERS = (
    ("1.35", "kube-scheduler", "1.35"),
    ("1.36", "kube-scheduler", "1.36"),
    ("1.36", "kube-scheduler-138917", "1.36+#138917"),
)
# Pods per run by node count: enough for a stable per-Pod figure, few enough that 1.35 at 200
# nodes (seconds per Pod) finishes; a run also stops at LIMIT seconds and reports what was bound.
PODS = {40: 40, 100: 20, 200: 12}
LIMIT = 180.0
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Run:
    scheduler: str
    nodes: int
    layout: str
    variant: str
    pods: int
    bound: int
    wall_s: float
    cpu_ms: float

    @property
    def cpu_per_pod(self) -> float:
        return self.cpu_ms / self.bound if self.bound else float("inf")

    @property
    def pods_per_s(self) -> float:
        return self.bound / self.wall_s if self.wall_s else 0.0


def cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICKS  # utime, stime


def node_slices(policy: OfferPolicy, minor: int) -> str:
    cards = node_cards(TOKEN, "h100-80gb", CARDS)
    return json.dumps(render(TOKEN, [card_offers(card, policy) for card in cards], minor, 1, None))


def add_nodes(cluster: RealCluster, names: list[str], run: str) -> None:
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda name: cluster.add_node(name, {"bench-run": run}), names))


def publish(cluster: RealCluster, template: str, names: list[str], run: str) -> int:
    objects: list[dict[str, Any]] = []
    for name in names:
        for item in json.loads(template.replace(TOKEN, name)):
            item["metadata"].setdefault("labels", {})["bench-run"] = run
            item["metadata"].pop("ownerReferences", None)
            objects.append(item)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(cluster.create, objects))
    return len(objects)


def clear(cluster: RealCluster) -> None:
    """The previous run's slices and Nodes go, so only this run's nodes publish counters."""
    # A thousand slices take a while to delete on a busy machine: past the API server's own
    # minute it answers 504 while the deletion goes on, so ask again until the list is done.
    for path in ("/apis/resource.k8s.io/v1/resourceslices", "/api/v1/nodes"):
        for attempt in range(5):
            try:
                cluster.request("DELETE", f"{path}?labelSelector=bench-run", timeout=300)
                break
            except ApiError as error:
                if error.status != 504 or attempt == 4:
                    raise


def setup_classes(cluster: RealCluster) -> None:
    cluster.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    # Pods wait for their namespace's default ServiceAccount, which the controller-manager makes.
    cluster.wait_for(
        lambda: cluster.get("v1", "ServiceAccount", "default", NAMESPACE), 60, "default ServiceAccount"
    )
    for name, selector in TYPICAL_CLASSES.items():
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": selector}}]}
        if name == CLASS:
            spec["extendedResourceName"] = EXTENDED
        cluster.ensure(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": name},
                "spec": spec,
            }
        )
    for template, device_class in (("whole", CLASS), ("mig", MIG_CLASS)):
        request = {"name": "gpu", "exactly": {"deviceClassName": device_class}}
        cluster.ensure(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": template, "namespace": NAMESPACE},
                "spec": {"spec": {"devices": {"requests": [request]}}},
            }
        )


def pod(name: str, run: str, variant: str) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "bench"}
    spec: dict[str, Any] = {"containers": [container], "nodeSelector": {"bench-run": run}}
    if variant == "extended resource":
        container["resources"] = {"limits": {EXTENDED: "1"}}
    else:
        container["resources"] = {"claims": [{"name": "gpu"}]}
        template = "mig" if variant.startswith("MIG") else "whole"
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def bound(cluster: RealCluster, run: str) -> int:
    pods = cluster.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=bench-run%3D{run}")
    return sum(1 for item in pods["items"] if item["spec"].get("nodeName"))


def measure(
    cluster: RealCluster,
    binary: str,
    label: str,
    nodes: int,
    layout: str,
    variant: str,
    serial: int,
    template: str | None = None,
    pods: int | None = None,
) -> Run:
    """One run; ``template`` (a node's slices as JSON, node name TOKEN) replaces the layout's
    rendering, for candidate layouts (benchmarks/layout_search.py)."""
    run = f"r{serial}"
    clear(cluster)
    names = [f"{run}-gpu-{index:04d}" for index in range(nodes)]
    add_nodes(cluster, names, run)
    if layout in OPT_IN:
        mig = OPT_IN[layout]
        publish(cluster, node_slices(LAYOUTS["default"], 35), names[:mig], run)
        publish(cluster, node_slices(LAYOUTS["plain"], 35), names[mig:], run)
    else:
        publish(cluster, template or node_slices(LAYOUTS[layout], 35), names, run)
    scheduler = cluster.start_scheduler(binary, name=f"scheduler-{run}")
    try:
        time.sleep(3)  # the informers' first lists, not counted
        pods = pods or PODS.get(nodes, 10)
        objects = [pod(f"{run}-p{index:03d}", run, variant) for index in range(pods)]
        for item in objects:
            item["metadata"]["labels"] = {"bench-run": run}
        before, started = cpu_ms(scheduler.popen.pid), time.monotonic()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(cluster.create, objects))
        done = 0
        while time.monotonic() - started < LIMIT:
            done = bound(cluster, run)
            if done == pods:
                break
            time.sleep(0.2)
        wall, spent = time.monotonic() - started, cpu_ms(scheduler.popen.pid) - before
    finally:
        scheduler.stop()
        cluster.processes.pop(f"scheduler-{run}", None)
    return Run(label, nodes, layout, variant, pods, done, wall, spent)


def proxy_ms(layout: str, nodes: int, claims: int = 40) -> float:
    """Our allocator's CPU milliseconds per whole-card claim on the same layout and node count:
    the proxy of benchmarks/allocator.py, shown beside the real scheduler's figure."""
    import yaml  # noqa: PLC0415

    from benchmarks.allocator import claim, cluster, place  # noqa: PLC0415 - heavy, only here
    from benchmarks.common import ROOT  # noqa: PLC0415
    from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher  # noqa: PLC0415
    from deckhouse_gpu.k8s_semantics.allocator.search import Allocator  # noqa: PLC0415
    from deckhouse_gpu.k8s_semantics.resources.claims import parse_claim, parse_classes  # noqa: PLC0415
    from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics  # noqa: PLC0415
    from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState  # noqa: PLC0415

    classes = parse_classes(
        [c for c in yaml.safe_load_all((ROOT / "docs/examples/deviceclasses.yaml").read_text()) if c]
    )
    semantics = Semantics("1.35")
    inventory, names, _ = cluster(LAYOUTS[layout], count=nodes)
    parsed = [parse_claim(claim("gpu-h100-80gb", False), classes, semantics) for _ in range(claims)]
    allocator = Allocator(inventory, semantics, CelMatcher())
    place(allocator, parsed[:1], names, AllocatedState())  # the selector cache, warm as in a controller
    began = time.process_time()
    place(allocator, parsed, names, AllocatedState())
    return (time.process_time() - began) * 1000 / claims


def report(runs: list[Run], proxy: dict[tuple[str, int], float] | None = None) -> None:
    print(
        f"  {'scheduler':<14}{'nodes':>6}  {'layout':<11}{'variant':<19}{'bound':>7}"
        f"{'pods/s':>9}{'CPU ms/pod':>12}{'x plain':>9}"
    )
    plain = {(r.scheduler, r.nodes, r.variant): r.cpu_per_pod for r in runs if r.layout == "plain"}
    for r in runs:
        # MIG Pods beside plain whole cards: what a GPU Pod cost before there was MIG at all.
        base = plain.get(
            (r.scheduler, r.nodes, "claim template" if r.variant.startswith("MIG") else r.variant)
        )
        ratio = f"{r.cpu_per_pod / base:8.1f}x" if base else "       -"
        ours, plain_ours = (proxy or {}).get((r.layout, r.nodes)), (proxy or {}).get(("plain", r.nodes))
        beside = f"{ours / plain_ours:14.1f}x" if ours and plain_ours else ""
        print(
            f"  {r.scheduler:<14}{r.nodes:>6}  {r.layout:<11}{r.variant:<19}{r.bound:>3}/{r.pods:<3}"
            f"{r.pods_per_s:>9.2f}{r.cpu_per_pod:>12.1f}{ratio}{beside}"
        )


# The table of docs/DRA.md ("Scale", typical classes): (layout, variant) per column.
COLUMNS = (
    ("plain", "claim template"),
    ("default", "claim template"),
    ("default", "MIG 1g.10gb"),
    ("typical", "claim template"),
    ("typical", "MIG 1g.10gb"),
)


def table(runs: list[Run]) -> None:
    """CPU ms per bound Pod by scheduler and node count, in the columns of docs/DRA.md; "x" is
    against plain whole cards of the same scheduler and size, "(b/p)" marks a run that bound only
    b of p Pods within LIMIT."""
    print(
        "\n  Scheduler CPU per bound Pod, ms (x plain): plain | default whole | default 1g.10gb"
        " | typical whole | typical 1g.10gb"
    )
    for label in dict.fromkeys(r.scheduler for r in runs):
        for nodes in sorted({r.nodes for r in runs if r.scheduler == label}):
            found = {(r.layout, r.variant): r for r in runs if (r.scheduler, r.nodes) == (label, nodes)}
            plain = found.get(COLUMNS[0])
            cells = []
            for column in COLUMNS:
                r = found.get(column)
                if r is None or not r.bound:
                    cells.append("-")
                    continue
                cell = f"{r.cpu_per_pod:.1f}"
                if plain is not None and plain.bound and column != COLUMNS[0]:
                    cell += f" ({r.cpu_per_pod / plain.cpu_per_pod:.1f}x)"
                if r.bound < r.pods:
                    cell += f" ({r.bound}/{r.pods})"
                cells.append(cell)
            print(f"  {label:<14}{nodes:>5} nodes  " + " | ".join(cells))


@contextlib.contextmanager
def bench_cluster(version: str) -> Iterator[RealCluster]:
    """A cluster of ``version`` ready for measure(): the controller-manager for claim templates,
    the class and the template the Pods use."""
    with real_cluster(version) as cluster:
        # Without the node lifecycle controller fake Nodes stay Ready without a kubelet.
        cluster.start_controller_manager("*,-nodelifecycle")
        setup_classes(cluster)
        yield cluster


def run(
    sizes: tuple[int, ...] = (40, 200),
    variants: tuple[str, ...] = ("claim template",),
    layouts: tuple[str, ...] = (*LAYOUTS, *OPT_IN),
    labels: tuple[str, ...] = (),
) -> list[Run]:
    print(f"Real kube-scheduler: {CARDS} H100 per node, one whole card per Pod, CPU of the scheduler process")
    runs: list[Run] = []
    serial = 0
    for version in sorted({version for version, _, label in SCHEDULERS if not labels or label in labels}):
        try:
            binaries(version, "kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler")
        except AssetsMissing as missing:
            print(f"  skipped: {missing}")
            continue
        with bench_cluster(version) as cluster:
            for wanted, binary, label in SCHEDULERS:
                if wanted != version or (labels and label not in labels):
                    continue
                for nodes in sizes:
                    for layout in layouts:
                        for variant in variants:
                            if variant.startswith("MIG") and layout == "plain":
                                continue  # no MIG offers: its ratio is to plain whole cards
                            serial += 1
                            try:
                                result = measure(cluster, binary, label, nodes, layout, variant, serial)
                            except (ApiError, TimeoutError, RuntimeError) as error:
                                print(f"  {label} {nodes} {layout} {variant}: failed: {error}")
                                continue
                            runs.append(result)
                            report([r for r in runs if r.scheduler == label and r.nodes == nodes][-1:])
    rendered = {*layouts, "plain"} & set(LAYOUTS)
    proxy = {(layout, nodes): proxy_ms(layout, nodes) for layout in rendered for nodes in sizes}
    print("\n  All runs; 'proxy': our allocator (benchmarks/allocator.py) on the same layout and nodes")
    report(runs, proxy)
    table(runs)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="40,200", help="comma-separated node counts")
    parser.add_argument(
        "--extended", action="store_true", help="also Pods asking through the extended resource"
    )
    parser.add_argument("--mig", action="store_true", help="also Pods asking for a 1g.10gb MIG device")
    parser.add_argument(
        "--schedulers", default="", help="comma-separated labels of SCHEDULERS (default: all)"
    )
    parser.add_argument(
        "--layouts", default=",".join(LAYOUTS), help="comma-separated, of: " + ", ".join([*LAYOUTS, *OPT_IN])
    )
    args = parser.parse_args()
    variants = tuple(v for v, on in zip(VARIANTS, (True, args.extended, args.mig), strict=True) if on)
    layouts = tuple(name for name in args.layouts.split(",") if name in LAYOUTS or name in OPT_IN)
    labels = tuple(args.schedulers.split(",")) if args.schedulers else ()
    run(tuple(int(n) for n in args.nodes.split(",")), variants, layouts, labels)


if __name__ == "__main__":
    main()
