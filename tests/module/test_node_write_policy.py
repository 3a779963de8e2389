# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The ValidatingAdmissionPolicy that keeps each node's components to their own node's objects,
evaluated on admission requests as the API server builds them (cel-python for the CEL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.admission_policy import NODE_KEY, user
from tests.support.admission_policy import admit as admit_with

ROOT = Path(__file__).resolve().parents[2]
POLICY, BINDING = yaml.safe_load_all((ROOT / "templates" / "node-write-policy.yaml").read_text())
HANDLER = "system:serviceaccount:d8-gpu:gpu-handler"
AGENT = "system:serviceaccount:d8-gpu:gpu-node-agent"


def pgpu(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"nodeInfo": {"nodeName": "ignored"}}}


def slice_of(node: str | None, name: str = "w1-gpu.deckhouse.io-abcde") -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": "gpu.deckhouse.io", "pool": {"name": node or "all"}}
    if node is not None:
        spec["nodeName"] = node
    else:
        spec["allNodes"] = True
    return {"metadata": {"name": name}, "spec": spec}


def request(
    who: dict[str, Any], operation: str, new: Any = None, old: Any = None, kind: str = "pgpu"
) -> dict[str, Any]:
    group, resource = (
        ("resource.k8s.io", "resourceslices") if kind == "slice" else ("gpu.deckhouse.io", "physicalgpus")
    )
    return {
        "request": {
            "userInfo": who,
            "operation": operation,
            "resource": {"group": group, "version": "v1", "resource": resource},
        },
        "object": new,
        "oldObject": old,
    }


def admit(review: dict[str, Any]) -> list[str]:
    return admit_with(POLICY, review)


def test_the_binding_denies_with_the_policy() -> None:
    assert BINDING["spec"] == {"policyName": POLICY["metadata"]["name"], "validationActions": ["Deny"]}
    assert POLICY["spec"]["failurePolicy"] == "Fail"


@pytest.mark.parametrize("who", [AGENT, HANDLER])
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_a_node_writes_its_own_physical_gpus(who: str, operation: str) -> None:
    card = pgpu("w1-0000-17-00-0")
    assert admit(request(user(who, "w1"), operation, card, card if operation == "UPDATE" else None)) == []


def test_a_node_deletes_its_own_physical_gpu() -> None:
    assert admit(request(user(AGENT, "w1"), "DELETE", None, pgpu("w1-0000-17-00-0"))) == []


@pytest.mark.parametrize(
    "name",
    [
        "w2-0000-17-00-0",  # another node
        "w1-x-0000-17-00-0",  # the node w1-x, whose name starts like ours
        "w1-0000-17-00-0-extra",
        "w1-0000-17-00-9",  # not a PCI function
        "w10000-17-00-0",
    ],
)
def test_a_node_cannot_write_another_nodes_physical_gpu(name: str) -> None:
    denied = admit(request(user(AGENT, "w1"), "CREATE", pgpu(name)))
    assert denied == [f"node w1 may only write its own PhysicalGPUs (w1-<pci address>), not {name}"]


def test_a_node_with_dots_in_its_name_is_matched_literally() -> None:
    who = user(HANDLER, "gpu.w1")
    assert admit(request(who, "UPDATE", pgpu("gpu.w1-0000-17-00-0"), pgpu("gpu.w1-0000-17-00-0"))) == []
    assert admit(request(who, "CREATE", pgpu("gpuaw1-0000-17-00-0"))) != []


def test_a_delete_is_judged_by_the_object_being_deleted() -> None:
    assert admit(request(user(AGENT, "w1"), "DELETE", None, pgpu("w2-0000-17-00-0"))) != []


@pytest.mark.parametrize("extra", [{}, {NODE_KEY: []}, {NODE_KEY: ["w1", "w2"]}])
def test_a_token_without_exactly_one_node_name_is_refused(extra: dict[str, Any]) -> None:
    who = {"username": HANDLER, "extra": extra}
    denied = admit(request(who, "CREATE", pgpu("w1-0000-17-00-0")))
    assert denied[0].startswith("the request's token names no node")


def test_other_users_are_not_matched() -> None:
    for name in (
        "system:serviceaccount:d8-gpu:gpu-controller",
        "admin",
        "system:serviceaccount:x:gpu-handler",
    ):
        assert admit(request(user(name, None), "CREATE", pgpu("w2-0000-17-00-0"))) == ["<not matched>"]


def test_the_handler_writes_and_deletes_its_own_node_slices() -> None:
    who = user(HANDLER, "w1")
    assert admit(request(who, "CREATE", slice_of("w1"), kind="slice")) == []
    assert admit(request(who, "UPDATE", slice_of("w1"), slice_of("w1"), kind="slice")) == []
    assert admit(request(who, "DELETE", None, slice_of("w1"), kind="slice")) == []


def test_the_handler_cannot_write_another_nodes_slices() -> None:
    who = user(HANDLER, "w1")
    message = "node w1 may only write the ResourceSlices of its own node, not w1-gpu.deckhouse.io-abcde"
    assert admit(request(who, "CREATE", slice_of("w2"), kind="slice")) == [message]
    assert admit(request(who, "CREATE", slice_of(None), kind="slice")) == [message]  # allNodes
    assert admit(request(who, "DELETE", None, slice_of("w2"), kind="slice")) == [message]


def test_the_handler_cannot_take_over_another_nodes_slice() -> None:
    denied = admit(request(user(HANDLER, "w1"), "UPDATE", slice_of("w1"), slice_of("w2"), kind="slice"))
    assert denied == ["node w1 may not take over the ResourceSlice w1-gpu.deckhouse.io-abcde of another node"]


def test_the_pci_slug_length_in_the_policy_matches_the_naming_rule() -> None:
    from deckhouse_gpu.domain.naming import physical_gpu_name  # noqa: PLC0415

    name = physical_gpu_name("w1", "0000:17:00.0")
    assert admit(request(user(AGENT, "w1"), "CREATE", pgpu(name))) == []
