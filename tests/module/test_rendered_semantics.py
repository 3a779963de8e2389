# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The chart as a real API server would take it, whatever the number of GPU nodes.

The cluster state (0, 1, 2 and 500 GPU nodes among CPU nodes) goes through the gpu_node_labels
hook, whatever it writes into the values goes into the render, and every rendered object is
checked against the semantic rules the API server enforces beyond the OpenAPI schema
(tests/support/k8s_semantics.py) and against the size limits of etcd and of Helm's release
Secret. A GPU node coming or going must change no pod template (DESIGN.md D11).
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from deckhouse import hook

from tests.hooks.conftest import load_hook
from tests.support.helm_chart import Rendered, render
from tests.support.k8s_semantics import iter_errors, node_field_requirement_errors, object_errors
from tests.support.module_values import module_values

HOOK = load_hook("gpu_node_labels")
GPU_NODE_COUNTS = (0, 1, 2, 500)
NODE_RUNTIME = ("gpu-handler", "nvidia-driver-validator", "nvidia-dcgm-exporter")
# Helm keeps each release in a Secret (gzip + base64 of the manifest); a Secret holds at most 1 MiB.
HELM_RELEASE_LIMIT = 1024 * 1024


def cluster(gpu_nodes: int) -> dict[str, list[Any]]:
    """Snapshots as shell-operator hands them to the hook: GPU nodes with ready cards, CPU nodes."""
    gpus = [
        {"filterResult": {"node": f"gpu-{index}", "driverReady": "True"}}
        for index in range(gpu_nodes)
        for _card in range(2)
    ]
    nodes = [{"filterResult": {"name": f"gpu-{index}", "labels": {}}} for index in range(gpu_nodes)]
    nodes += [{"filterResult": {"name": f"cpu-{index}", "labels": {}}} for index in range(3)]
    return {"physical_gpus": gpus, "nodes": nodes}


def hook_run(gpu_nodes: int) -> Any:
    context = [{"binding": "main", "type": "Group", "snapshots": cluster(gpu_nodes)}]
    return hook.testrun(HOOK.main, binding_context=context, initial_values=module_values())


def apply_values_patches(values: dict[str, Any], patches: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON patches a hook returns, applied as addon-operator does (add/replace/remove)."""
    for patch in patches:
        *parents, last = [part for part in patch["path"].split("/") if part]
        target = values
        for part in parents:
            target = target.setdefault(part, {})
        if patch["op"] == "remove":
            target.pop(last, None)
        else:
            target[last] = patch["value"]
    return values


@pytest.fixture(scope="module")
def rendered_by_count() -> dict[int, Rendered]:
    found = {}
    for count in GPU_NODE_COUNTS:
        out = hook_run(count)
        found[count] = render(apply_values_patches(module_values(), out.values_patches.data))
    return found


@pytest.mark.parametrize("count", GPU_NODE_COUNTS)
def test_the_hook_labels_every_gpu_node_and_writes_no_values(count: int) -> None:
    out = hook_run(count)
    assert out.values_patches.data == []
    labelled = sorted(operation["name"] for operation in out.kube_operations.data)
    assert labelled == sorted(f"gpu-{index}" for index in range(count))


def test_a_gpu_node_coming_or_going_changes_no_pod_template(rendered_by_count: dict[int, Rendered]) -> None:
    first = rendered_by_count[GPU_NODE_COUNTS[0]]
    for count, rendered in rendered_by_count.items():
        for name in NODE_RUNTIME:
            assert rendered.get("DaemonSet", name)["spec"] == first.get("DaemonSet", name)["spec"], (
                count,
                name,
            )


@pytest.mark.parametrize("count", GPU_NODE_COUNTS)
def test_every_rendered_object_passes_the_api_servers_semantic_rules(
    rendered_by_count: dict[int, Rendered], count: int
) -> None:
    assert list(iter_errors(rendered_by_count[count].objects)) == []


@pytest.mark.parametrize("count", GPU_NODE_COUNTS)
def test_the_release_fits_helms_release_secret(rendered_by_count: dict[int, Rendered], count: int) -> None:
    manifest = "\n---\n".join(json.dumps(obj) for obj in rendered_by_count[count].objects).encode()
    # base64 adds a third; the Secret must stay under 1 MiB.
    assert len(gzip.compress(manifest)) * 4 / 3 < HELM_RELEASE_LIMIT


def test_the_node_list_affinity_the_server_refused_is_caught() -> None:
    # What the chart rendered before gpu_node_labels, for two GPU nodes.
    requirement = {"key": "metadata.name", "operator": "In", "values": ["gpu-1", "gpu-2"]}
    assert node_field_requirement_errors(requirement, "matchFields[0]") == [
        "matchFields[0].values: Required value: must be only one value when `operator` is 'In' or "
        "'NotIn' for node field selector"
    ]
    daemonset = {
        "kind": "DaemonSet",
        "metadata": {"name": "gpu-handler"},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {
                    "containers": [{"name": "c", "image": "i"}],
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [{"matchFields": [requirement]}]
                            }
                        }
                    },
                },
            },
        },
    }
    (error,) = object_errors(daemonset)
    assert error.startswith(
        "DaemonSet/gpu-handler: spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchFields[0].values: Required value: must be only one value"
    )


BROKEN_PODS: dict[str, tuple[dict[str, Any], str]] = {
    "toleration value with Exists": (
        {"tolerations": [{"key": "a", "operator": "Exists", "value": "x"}]},
        "tolerations[0].operator",
    ),
    "tolerationSeconds without NoExecute": (
        {"tolerations": [{"operator": "Exists", "tolerationSeconds": 5}]},
        "tolerations[0].effect",
    ),
    "a probe on a port the container lacks": (
        {
            "containers": [
                {"name": "c", "image": "i", "livenessProbe": {"httpGet": {"path": "/", "port": "http"}}}
            ]
        },
        "livenessProbe.httpGet.port",
    ),
    "two probe handlers": (
        {
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "readinessProbe": {"exec": {"command": ["x"]}, "tcpSocket": {"port": 1}},
                }
            ]
        },
        "readinessProbe: Required value",
    ),
    "a mount of a missing volume": (
        {"containers": [{"name": "c", "image": "i", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]},
        "volumeMounts[0].name: Not found",
    ),
    "Bidirectional propagation unprivileged": (
        {
            "volumes": [{"name": "v", "emptyDir": {}}],
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "volumeMounts": [{"name": "v", "mountPath": "/v", "mountPropagation": "Bidirectional"}],
                }
            ],
        },
        "mountPropagation: Forbidden",
    ),
    "a request above its limit": (
        {
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "resources": {"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}},
                }
            ]
        },
        "requests[memory]: Invalid value",
    ),
    "an unqualified resource name": (
        {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"gpu": "1"}}}]},
        "limits[gpu]: Invalid value",
    ),
    "a port name longer than 15": (
        {
            "containers": [
                {"name": "c", "image": "i", "ports": [{"name": "http-metrics-long", "containerPort": 1}]}
            ]
        },
        "ports[0].name: Invalid value",
    ),
    "In without values": (
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "In"}]}]
                    }
                }
            }
        },
        "matchExpressions[0].values: Required value",
    ),
}


@pytest.mark.parametrize("case", BROKEN_PODS)
def test_the_rules_catch_what_the_server_refuses(case: str) -> None:
    broken, expected = BROKEN_PODS[case]
    spec = {"containers": [{"name": "c", "image": "i"}], **broken}
    daemonset = {
        "kind": "DaemonSet",
        "metadata": {"name": "ds"},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": spec},
        },
    }
    errors = object_errors(daemonset)
    assert len(errors) == 1, errors
    assert expected in errors[0]


def test_a_daemonset_that_can_never_roll_is_refused() -> None:
    daemonset = {
        "kind": "DaemonSet",
        "metadata": {"name": "ds"},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "updateStrategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": "y"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    errors = object_errors(daemonset)
    assert any("`selector` does not match template `labels`" in e for e in errors)
    assert any("may not be 0 when `maxSurge` is 0" in e for e in errors)


def test_webhook_names_need_three_segments() -> None:
    webhook = {
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "w"},
        "webhooks": [
            {
                "name": "gpu.deckhouse",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/x"}},
            }
        ],
    }
    (error,) = object_errors(webhook)
    assert "webhooks[0].name: Invalid value: 'gpu.deckhouse'" in error
