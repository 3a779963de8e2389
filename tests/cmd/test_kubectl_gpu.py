# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""kubectl gpu against a fake API server through the real client: every command in every output
format, its exit code, and that it only reads, one list per kind."""

from __future__ import annotations

import json
import re

import yaml

from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, RESOURCE_SLICES
from tests.cmd import kubectl_gpu_world
from tests.cmd.kubectl_gpu_world import World

world = kubectl_gpu_world.world  # the fixture, bound here so that pytest finds it

CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"


def _rows(table: str) -> list[list[str]]:
    """A table's rows split at the column gaps (three spaces or more)."""
    return [re.split(r"\s{3,}", line.strip()) for line in table.strip().splitlines()]


def test_status_table(world: World) -> None:
    code, out = world.run("status")
    assert code == 0
    header, *rows = _rows(out)
    assert header == ["NODE", "GPU", "MODEL", "MODE", "HEALTHY", "DRIVER", "FREE", "MIG", "CLAIMS"]
    by_card = {(r[0], r[1]): r for r in rows}
    assert by_card["h100", "0000:10:00.0"][3:] == [
        "MIG", "True", "True", "6/8 slices, 61591Mi", "2x 1g.10gb", "ml/small (pod ml/train)"
    ]  # fmt: skip
    assert by_card["h100", "0000:18:00.0"][3] == "whole"
    assert by_card["h100", "0000:20:00.0"][3:7] == ["idle", "True", "True", "8/8 slices, 81559Mi"]
    assert by_card["a100", "0000:10:00.0"][6:] == [
        "75% share",
        "-",
        "ml/notebook (pod ml/notebook, not prepared)",
    ]
    assert by_card["t4", "0000:10:00.0"][6] == "none"
    assert world.reads() == {
        "/apis/gpu.deckhouse.io/v1alpha1/physicalgpus": 1,
        "/version": 1,
        CLAIMS: 1,
        SLICES: 1,
    }


def test_status_wide_json_and_yaml(world: World) -> None:
    code, out = world.run("status", "h100", "-o", "wide")
    assert code == 0
    header, *rows = _rows(out)
    assert header[-1] == "NAME"
    assert [r[0] for r in rows] == ["h100"] * 3
    assert "1g.10gb@6 MIG-gpu-0000-10-00-0-mig-1g-10gb-6" in rows[0][7]  # packing order
    code, out = world.run("-o", "json", "status")  # flags before the command, as kubectl allows
    document = json.loads(out)
    assert (code, document["kind"], len(document["cards"])) == (0, "GPUStatus", 6)
    mig = next(c for c in document["cards"] if c["mode"] == "MIG")
    assert mig["memorySlices"] == {"free": [0, 1, 2, 3, 4, 7], "total": 8}
    assert mig["memory"] == {"left": "61591Mi", "total": "81559Mi"}
    assert mig["claims"] == [
        {"claim": "ml/small", "devices": ["gpu-0000-10-00-0-mig-1g-10gb-5", "gpu-0000-10-00-0-mig-1g-10gb-6"],
         "prepared": True, "shared": False, "pods": ["ml/train"]}
    ]  # fmt: skip
    assert [m["placementStart"] for m in mig["migInstances"]] == [6, 5]
    assert mig["conditions"]["HardwareHealthy"] == {"status": "True", "reason": "NVMLHealthy"}
    code, out = world.run("status", "t4", "-o", "yaml")
    (card,) = yaml.safe_load(out)["cards"]
    assert (code, card["node"], card["mode"], card["sharePercentLeft"]) == (0, "t4", "whole", None)


def test_status_says_no_when_a_card_is_not_healthy(world: World) -> None:
    broken = {
        "status": {
            "conditions": [{"type": "HardwareHealthy", "status": "Unknown", "reason": "NVMLQueryFailed"}]
        }
    }
    world.cluster.kube.patch(PHYSICAL_GPUS, "t4-0000-10-00-0", broken, subresource="status")
    code, out = world.run("status", "t4")
    assert code == 1
    assert _rows(out)[1][4:6] == ["Unknown", "?"]


def test_capacity_table_wide_json_and_yaml(world: World) -> None:
    code, out = world.run("capacity")
    assert code == 0
    lines = out.rstrip().split("\n")
    rows = {r[0]: r[2:] for r in _rows("\n".join(lines[:-2]))[1:]}  # GPUCLASS: "-" (none here)
    assert _rows(lines[0])[0] == ["CLASS", "GPUCLASS", "DEVICES", "FITS", "NODES", "MOST ROOM"]
    assert rows["gpu-h100-80gb"] == ["3", "1", "1", "h100 (1)"]
    assert rows["gpu-h100-80gb-mig-1g.10gb"] == [
        "21",
        "12",
        "1",
        "h100 (12)",
    ]  # 5 beside the instances, 7 on the free card
    assert rows["gpu-mig"] == ["88", "16", "2", "h100 (12), a30 (4)"]
    assert rows["gpu-a100-40gb-shared"][:2] == ["1", "0"]  # a claim asking for no share takes the card whole
    assert rows["gpu-t4"] == ["1", "0", "0", "-"]  # a T4 there is, in use
    assert len(rows) == 20  # the classes of models the cluster has; the rest in one line:
    assert lines[-2] == (
        "21 more classes select no device in the cluster: gpu-a100-40gb-mig-1g.10gb, "
        "gpu-a100-40gb-mig-1g.5gb, gpu-a100-40gb-mig-1g.5gb-me and 18 more (--all lists them)."
    )
    # The H100 and A30 nodes offer dynamic MIG; few enough that no scheduler warning is due.
    assert lines[-1] == "2 nodes publish counters (dynamic MIG)."
    assert world.reads() == {"/version": 1, CLASSES: 1, "/api/v1/nodes": 1, SLICES: 1, CLAIMS: 1}
    code, out = world.run("capacity", "--class", "gpu-mig", "-o", "wide")
    assert (code, _rows(out)[1:]) == (
        0,
        [["gpu-mig", "-", n, f] for n, f in (("a100", "0"), ("a30", "4"), ("h100", "12"), ("t4", "0"))]
        + [["2 nodes publish counters (dynamic MIG)."]],
    )
    code, out = world.run("capacity", "--node", "a30", "-o", "json")
    document = json.loads(out)
    assert (code, document["kind"], document["kubernetesVersion"], document["nodes"]) == (
        0,
        "GPUCapacity",
        "1.35",
        ["a30"],
    )
    a30 = {c["class"]: c for c in document["classes"]}
    assert a30["gpu-a30-mig-1g.6gb"] == {
        "class": "gpu-a30-mig-1g.6gb",
        "gpuClass": None,
        "devices": 4,
        "fits": 4,
        "perNode": {"a30": 4},
        "unlimitedOn": [],
        "errors": {},
    }
    code, out = world.run("capacity", "--class", "gpu-t4", "-o", "yaml")
    assert code == 1  # nothing fits: scripts can test for room
    assert yaml.safe_load(out)["classes"] == [
        {
            "class": "gpu-t4",
            "gpuClass": None,
            "devices": 1,
            "fits": 0,
            "perNode": {},
            "unlimitedOn": [],
            "errors": {},
        }
    ]


def test_explain_where_it_fits_and_why_not_elsewhere(world: World) -> None:
    code, out = world.run("explain", "wants-a30")  # the namespace comes from the kubeconfig's context
    assert code == 0
    assert "Pod ml/wants-a30 is Pending. Its claims:" in out
    assert _rows(out.split("\n\n")[0])[2] == [
        "gpu",
        "ml/wants-a30-gpu",
        "template one-a30",
        "not created",
        "gpu-a30",
    ]
    assert "The claims fit on 1 node(s): a30." in out
    code, out = world.run("explain", "wants-two", "-n", "ml")
    assert code == 1
    why = {r[0]: r for r in _rows(out.split("\n\n")[1])[1:]}
    assert why["h100"][1] == "no"
    assert why["h100"][2] == (
        "ml/two gpu wants 2: 1 of 78 devices fit; 75 not of DeviceClass gpu-h100-80gb; "
        "1 counter memory-slice-5 exhausted (held by ml/small); 1 in use (held by ml/big)"
    )
    assert out.rstrip().endswith("The claims fit on no node.")
    assert world.reads()["/api/v1/namespaces/ml/pods/wants-two"] == 1
    code, out = world.run("explain", "wants-t4", "-o", "yaml")
    document = yaml.safe_load(out)
    t4 = next(n for n in document["nodes"] if n["node"] == "t4")
    assert (code, document["placeable"], document["fitsOn"]) == (1, False, [])
    assert t4["requests"][0]["reasons"] == [
        {
            "reason": "in use",
            "rule": "in use",
            "devices": 1,
            "heldBy": ["ml/t4"],
            "example": "gpu-0000-10-00-0: in use",
        }
    ]
    code, out = world.run("explain", "wants-a30", "-o", "json")
    assert (code, json.loads(out)["fitsOn"]) == (0, ["a30"])
    reads = world.reads()  # every request of every command above was a GET
    assert reads["/apis/resource.k8s.io/v1/namespaces/ml/resourceclaimtemplates/one-a30"] == 2  # once a run


def test_status_names_the_other_owner_of_a_card_it_does_not_offer(world: World) -> None:
    # DESIGN.md D16: gpu-handler withdrew the node's offers and says why in OtherOwner.
    held = {
        "status": {
            "conditions": [
                {"type": "DriverReady", "status": "True", "reason": "ValidatorReady"},
                {"type": "HardwareHealthy", "status": "True", "reason": "NVMLHealthy"},
                {"type": "OtherOwner", "status": "True", "reason": "DevicePlugin", "message": "..."},
            ]
        }
    }
    world.cluster.kube.patch(PHYSICAL_GPUS, "t4-0000-10-00-0", held, subresource="status")
    for item in world.cluster.kube.list(RESOURCE_SLICES).items:
        if item["spec"].get("nodeName") == "t4":
            world.cluster.kube.delete(RESOURCE_SLICES, item["metadata"]["name"])
    _, out = world.run("status", "t4")
    assert "held by DevicePlugin" in _rows(out)[1]
