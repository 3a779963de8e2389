# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The module_status hook: the module's own health as metrics, from PhysicalGPUs, the GPU nodes'
labels and the values."""

from __future__ import annotations

import datetime
import json
import subprocess
from typing import Any

from deckhouse import hook

from tests.hooks.conftest import hook_config, load_hook

HOOK = load_hook("module_status")
GROUP = "d8_gpu_module_status"


def gpu(node: Any, ready: Any = "True", healthy: Any = "True", vendor: Any = "nvidia") -> dict[str, Any]:
    return {
        "filterResult": {"node": node, "vendor": vendor, "driverReady": ready, "hardwareHealthy": healthy}
    }


VALIDATOR = "gpu.deckhouse.io/nvidia"
HANDLER = "gpu.deckhouse.io/driver-ready"


def node(name: Any, *roles: str) -> dict[str, Any]:
    return {"filterResult": {"name": name, "labels": dict.fromkeys(roles, "true")}}


def run(
    gpus: list[Any], internal: dict[str, Any] | None = None, nodes: list[Any] | None = None
) -> list[dict[str, Any]]:
    snapshots = {"physical_gpus": gpus, "nodes": nodes or []}
    context = [{"binding": "main", "type": "Group", "snapshots": snapshots}]
    values = {"global": {}, "gpu": {"internal": internal or {}}}
    out = hook.testrun(HOOK.main, binding_context=context, initial_values=values)
    data: list[dict[str, Any]] = out.metrics.data
    return data


def series(data: list[dict[str, Any]], name: str) -> dict[tuple[tuple[str, str], ...], Any]:
    return {tuple(sorted(m["labels"].items())): m["value"] for m in data if m.get("name") == name}


def test_cards_are_counted_by_vendor_readiness_and_health() -> None:
    data = run(
        [
            gpu("w1"),
            gpu("w1"),
            gpu("w2", healthy="Unknown"),
            gpu("w3", ready="False", healthy=None),
            gpu("w4", vendor="amd", ready="Unknown", healthy="Unknown"),
        ]
    )
    assert series(data, "d8_gpu_module_physicalgpus") == {
        (("driver_ready", "True"), ("hardware_healthy", "True"), ("vendor", "nvidia")): 2,
        (("driver_ready", "True"), ("hardware_healthy", "Unknown"), ("vendor", "nvidia")): 1,
        (("driver_ready", "False"), ("hardware_healthy", "Unknown"), ("vendor", "nvidia")): 1,
        (("driver_ready", "Unknown"), ("hardware_healthy", "Unknown"), ("vendor", "amd")): 1,
    }


def test_every_run_expires_the_group_first_and_groups_every_series() -> None:
    data = run([gpu("w1")])
    assert data[0] == {"action": "expire", "group": GROUP}
    assert all(m["group"] == GROUP for m in data[1:])
    assert run([])[0] == {"action": "expire", "group": GROUP}


def test_gpu_nodes_without_a_handler_are_named() -> None:
    nodes = [node("w1", VALIDATOR, HANDLER), node("w2", VALIDATOR), node("w3", VALIDATOR)]
    data = run([gpu("w1"), gpu("w2", ready="False"), gpu("w3", ready="Unknown")], nodes=nodes)
    assert series(data, "d8_gpu_module_nodes") == {
        (("role", "gpu"),): 3,
        (("role", "validator"),): 3,
        (("role", "handler"),): 1,
    }
    assert series(data, "d8_gpu_module_node_without_handler") == {(("node", "w2"),): 1, (("node", "w3"),): 1}


def test_malformed_entries_and_values_are_skipped() -> None:
    data = run(
        [
            gpu("w1"),
            {"filterResult": None},
            {},
            "junk",
            gpu(None),
            gpu(""),
            gpu(["w2"]),
            gpu("w3", ready=True),
        ],
        {"webhookCert": {"crt": "not a certificate"}},
        [node("w3", VALIDATOR), node(None, VALIDATOR), {"filterResult": {"name": "w4", "labels": 5}}, "junk"],
    )
    assert sum(series(data, "d8_gpu_module_physicalgpus").values()) == 2
    states = {labels[0][1] for labels in series(data, "d8_gpu_module_physicalgpus")}
    assert states == {"True", "Unknown"}  # a non-string status counts as Unknown
    assert series(data, "d8_gpu_module_node_without_handler") == {(("node", "w3"),): 1}
    assert series(data, "d8_gpu_module_webhook_certificate_expiry_timestamp_seconds") == {}


def test_the_webhook_certificate_expiry_is_reported() -> None:
    from lib.webhook_cert import generate  # noqa: PLC0415

    now = datetime.datetime(2026, 11, 21, 12, 0, tzinfo=datetime.UTC)
    cert = generate(now)
    data = run([], {"webhookCert": cert.as_values()})
    (expiry,) = series(data, "d8_gpu_module_webhook_certificate_expiry_timestamp_seconds").values()
    assert datetime.datetime.fromtimestamp(expiry, datetime.UTC) == now.replace(
        microsecond=0
    ) + datetime.timedelta(days=365)


def test_the_hook_config_binds_physicalgpus_gpu_nodes_and_a_schedule() -> None:
    config = hook_config("module_status")
    gpus, nodes = config["kubernetes"]
    assert (gpus["kind"], gpus["group"], nodes["kind"], nodes["group"]) == (
        "PhysicalGPU",
        "main",
        "Node",
        "main",
    )
    assert nodes["labelSelector"] == {"matchExpressions": [{"key": VALIDATOR, "operator": "Exists"}]}
    assert config["schedule"][0]["group"] == "main"


def test_the_jq_filter_extracts_what_the_hook_reads() -> None:
    from lib.module_status import PHYSICAL_GPU_FILTER  # noqa: PLC0415

    card = {
        "metadata": {"name": "w1-0000-17-00-0", "labels": {"gpu.deckhouse.io/vendor": "nvidia"}},
        "status": {
            "nodeInfo": {"nodeName": "w1"},
            "conditions": [
                {"type": "DriverReady", "status": "True"},
                {"type": "HardwareHealthy", "status": "False"},
                {"type": "OtherOwner", "status": "True", "reason": "DevicePlugin"},
            ],
        },
    }
    done = subprocess.run(
        ["jq", "-c", PHYSICAL_GPU_FILTER], input=json.dumps(card), capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == {
        "node": "w1",
        "vendor": "nvidia",
        "driverReady": "True",
        "hardwareHealthy": "False",
        "otherOwner": "DevicePlugin",
    }
    done = subprocess.run(
        ["jq", "-c", PHYSICAL_GPU_FILTER],
        input='{"metadata": {}}',
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == {
        "node": None,
        "vendor": "unknown",
        "driverReady": "Unknown",
        "hardwareHealthy": "Unknown",
        "otherOwner": "",
    }


def test_cards_another_owner_holds_are_counted_per_node_and_reason() -> None:
    held = gpu("w1")
    held["filterResult"]["otherOwner"] = "DevicePlugin"
    operator = gpu("w2")
    operator["filterResult"]["otherOwner"] = "GPUOperator"
    free = gpu("w3")
    free["filterResult"]["otherOwner"] = ""
    data = run([held, dict(held), operator, free, gpu("w4")])
    assert series(data, "d8_gpu_module_cards_held_by_other_owner") == {
        (("node", "w1"), ("reason", "DevicePlugin")): 2,
        (("node", "w2"), ("reason", "GPUOperator")): 1,
    }
