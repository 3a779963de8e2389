# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Candidate layouts on the real kube-scheduler (issue 32, item 2): what each costs per Pod.

Each candidate is a node's slices (8 H100) as benchmarks/real_scheduler.py publishes them, one
run of ``measure()`` each (fresh scheduler, nodes of its own), CPU milliseconds of the scheduler
process per bound Pod and the ratio to plain whole cards. Candidates:

- plain, default: as in real_scheduler.py;
- minimal: ``OfferPolicy(counters="minimal")``, the default's counters without the memory slices
  another slice dominates (slice 7 of an A100/H100: every placement covering it covers 6); the
  same sets fit (tests/domain/offers/test_counter_equivalence.py);
- pool per card: each card its own pool (a counters slice and a devices slice), as the API allows;
- controls that are not layouts the module may publish, to tell what the cost is made of: the
  default's devices with only ``deviceType`` as attribute, and without the ``+me`` profiles;
- issue 37, a typical class set (whole cards, 1g.10gb, 3g.40gb): its layout with the memory
  slices one by one ("typical") and with runs of slices counted as one ("typ-grouped", what is
  published), and as controls the same devices without counters or with only ``deviceType``.

``python -m benchmarks.layout_search [--nodes 40] [--pods 20] [--scheduler 1.35] [--only a,b]
[--repeat N]`` (``--scheduler 1.36+#138917`` for the fixed one). The figures and what they mean:
docs/DRA.md, "Layouts tried".
"""

from __future__ import annotations

import argparse
import copy
import json
from collections.abc import Callable
from typing import Any

from benchmarks.real_scheduler import (
    LAYOUTS,
    SCHEDULERS,
    TYPICAL,
    Run,
    bench_cluster,
    node_slices,
    report,
)
from benchmarks.real_scheduler import measure as measure_run
from deckhouse_gpu.domain.offers.model import OfferPolicy
from testkit.real_cluster import ApiError

Slices = list[dict[str, Any]]
NO_ME = frozenset(("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"))


def rendered(policy: OfferPolicy) -> Slices:
    result: Slices = json.loads(node_slices(policy, 35))
    return result


def _devices(slices: Slices) -> list[dict[str, Any]]:
    return [device for item in slices for device in item["spec"].get("devices", [])]


def pool_per_card(slices: Slices) -> Slices:
    """Each card its own pool: its counter set in one slice, its devices in another."""
    template = slices[0]
    sets = [s for item in slices for s in item["spec"].get("sharedCounters", [])]
    devices = _devices(slices)
    result: Slices = []
    for counter_set in sets:
        own = [d for d in devices if d["consumesCounters"][0]["counterSet"] == counter_set["name"]]
        for suffix, spec in (("c", {"sharedCounters": [counter_set]}), ("d", {"devices": own})):
            item = copy.deepcopy(template)
            item["metadata"]["name"] = f"{template['spec']['nodeName']}-{counter_set['name']}-{suffix}"
            pool = {"name": f"{template['spec']['pool']['name']}-{counter_set['name']}"}
            item["spec"] = {
                "driver": template["spec"]["driver"],
                "nodeName": template["spec"]["nodeName"],
                "pool": {**pool, "generation": 1, "resourceSliceCount": 2},
                **spec,
            }
            result.append(item)
    return result


def bare_attributes(slices: Slices) -> Slices:
    slices = copy.deepcopy(slices)
    for device in _devices(slices):
        device["attributes"] = {"deviceType": device["attributes"]["deviceType"]}
    return slices


def without_counters(slices: Slices) -> Slices:
    """The devices alone: no counters slice, no counter references (not exact: a control)."""
    kept = [copy.deepcopy(item) for item in slices if not item["spec"].get("sharedCounters")]
    for item in kept:
        item["spec"]["pool"]["resourceSliceCount"] = len(kept)
        for device in item["spec"]["devices"]:
            device.pop("consumesCounters", None)
    return kept


CANDIDATES: dict[str, Callable[[], Slices]] = {
    "plain": lambda: rendered(LAYOUTS["plain"]),
    "default": lambda: rendered(LAYOUTS["default"]),
    "minimal": lambda: rendered(OfferPolicy(counters="minimal")),
    "pool/card": lambda: pool_per_card(rendered(LAYOUTS["default"])),
    "ctl:attrs": lambda: bare_attributes(rendered(LAYOUTS["default"])),
    "ctl:no+me": lambda: rendered(OfferPolicy(mig_profiles=(("h100-sxm5-80gb", NO_ME),))),
    # Issue 37: what the typical class set's layout is made of.
    "typical": lambda: rendered(OfferPolicy(demand=TYPICAL, counters="reduced")),
    "typ-grouped": lambda: rendered(LAYOUTS["typical"]),
    "ctl:typ-attrs": lambda: bare_attributes(rendered(OfferPolicy(demand=TYPICAL, counters="reduced"))),
    "ctl:typ-nocnt": lambda: without_counters(rendered(LAYOUTS["typical"])),
}


def summary(slices: Slices) -> str:
    devices = _devices(slices)
    refs = sum(len(u["counters"]) for d in devices for u in d.get("consumesCounters", []))
    pools = {item["spec"]["pool"]["name"] for item in slices}
    return f"{len(slices)} slices, {len(pools)} pools, {len(devices)} devices, {refs} counter refs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=40)
    parser.add_argument("--pods", type=int, default=20)
    parser.add_argument("--scheduler", default="1.35", help="a label of real_scheduler.SCHEDULERS")
    parser.add_argument("--only", default="", help="comma-separated candidates (default: all)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds over the candidates, interleaved")
    args = parser.parse_args()
    version, binary, label = next(s for s in SCHEDULERS if s[2] == args.scheduler)
    chosen = args.only.split(",") if args.only else list(CANDIDATES)
    runs: list[Run] = []
    with bench_cluster(version) as cluster:
        for serial, name in enumerate(chosen * args.repeat, start=1):
            slices = CANDIDATES[name]()
            print(f"  {name}: {summary(slices)}", flush=True)
            template = json.dumps(slices)
            try:
                result = measure_run(
                    cluster, binary, label, args.nodes, name, "claim template", serial, template, args.pods
                )
            except (ApiError, TimeoutError, RuntimeError) as error:
                print(f"  {name}: failed: {error}", flush=True)
                continue
            runs.append(result)
            report(runs[-1:])
    print()
    report(runs)


if __name__ == "__main__":
    main()
