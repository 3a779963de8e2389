# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-dra-controller's cold start on 500 nodes x 8 H100: the ResourceSlice list's JSON decoded and
parsed into the allocator's inventory (target < 1.5 s), with and without the collector pause of
services/runtime/bulk_load.py. Each variant runs in a fresh process, as a controller starts."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from benchmarks.common import ROOT, line

VARIANT = """
import sys
from benchmarks.cold_parse import measure
print(measure(sys.argv[1] == "paused"))
"""


def body() -> bytes:
    """The list of every slice of the cluster, as the API server sends it."""
    from benchmarks.allocator import CARDS, NODES, TOKEN  # noqa: PLC0415
    from deckhouse_gpu.domain.offers.card_offers import card_offers  # noqa: PLC0415
    from deckhouse_gpu.domain.offers.model import OfferPolicy  # noqa: PLC0415
    from deckhouse_gpu.domain.offers.slice_layout import render  # noqa: PLC0415
    from testkit.gpu_objects import node_cards  # noqa: PLC0415

    cards = node_cards(TOKEN, "h100-80gb", CARDS)
    slices = render(TOKEN, [card_offers(card, OfferPolicy()) for card in cards], 35, 1, None)
    one = json.dumps(slices, separators=(",", ":"))  # compact, as the API server writes JSON
    items = ",".join(one[1:-1].replace(TOKEN, f"gpu-{index:03d}") for index in range(NODES))
    return ('{"kind":"ResourceSliceList","items":[' + items + "]}").encode()


def measure(paused: bool) -> str:
    """CPU seconds to decode and to parse, as JSON."""
    from deckhouse_gpu.adapters.kube.kube_json import decode  # noqa: PLC0415
    from deckhouse_gpu.k8s_semantics.resources.model import InventoryBuilder  # noqa: PLC0415
    from deckhouse_gpu.services.runtime.bulk_load import bulk_load  # noqa: PLC0415

    data = body()
    began = time.process_time()
    if paused:
        with bulk_load():
            items = decode(data)["items"]
        decoded = time.process_time()
        with bulk_load():
            inventory = InventoryBuilder().build(items)
    else:
        items = decode(data)["items"]
        decoded = time.process_time()
        inventory = InventoryBuilder().build(items)
    done = time.process_time()
    return json.dumps(
        {
            "mib": len(data) / 2**20,
            "decode": decoded - began,
            "parse": done - decoded,
            "slices": len(inventory.slices),
        }
    )


def run() -> None:
    print("gpu-dra-controller cold start: the slice list of 500 nodes x 8 H100 decoded and parsed (CPU time)")
    for variant, label in (("plain", "collector running"), ("paused", "collector paused (as it runs)")):
        done = subprocess.run(
            [sys.executable, "-c", VARIANT, variant], capture_output=True, text=True, check=True, cwd=ROOT
        )
        found = json.loads(done.stdout.strip().splitlines()[-1])
        what = f"s (decode {found['decode']:.2f} + parse {found['parse']:.2f}; {found['mib']:.0f} MiB JSON)"
        line(f"{label}", found["decode"] + found["parse"], what, 2)


if __name__ == "__main__":
    run()
