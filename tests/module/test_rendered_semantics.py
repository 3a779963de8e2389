# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The chart whatever the number of GPU nodes: what no API server says about it.

The cluster state (0, 1, 2 and 500 GPU nodes among CPU nodes) goes through the gpu_node_labels
hook and whatever it writes into the values goes into the render. Whether the server accepts every
rendered object is tests/real/test_module_install.py (a real kube-apiserver of each version); what
stays here are our own budgets and rules: a GPU node coming or going must change no pod template
(DESIGN.md D11), each object must fit etcd's request limit (a server-side dry run never reaches
etcd, so the real tier cannot see it) and the release must fit Helm's release Secret (Helm's
limit, not the API server's).
"""

from __future__ import annotations

import gzip
import json

import pytest

from tests.module.helm_render_sets import GPU_NODE_COUNTS, node_labels_hook_run, render_for_gpu_nodes
from tests.support.helm_chart import Rendered

NODE_RUNTIME = ("gpu-handler", "nvidia-driver-validator", "nvidia-dcgm-exporter")
# Helm keeps each release in a Secret (gzip + base64 of the manifest); a Secret holds at most 1 MiB.
HELM_RELEASE_LIMIT = 1024 * 1024
# What etcd accepts in one request by default (--max-request-bytes 1.5 MiB); the API server refuses
# larger objects with "etcdserver: request is too large" only when it stores them.
MAX_OBJECT_BYTES = 1536 * 1024


@pytest.fixture(scope="module")
def rendered_by_count() -> dict[int, Rendered]:
    return {count: render_for_gpu_nodes(count) for count in GPU_NODE_COUNTS}


@pytest.mark.parametrize("count", GPU_NODE_COUNTS)
def test_the_hook_labels_every_gpu_node_and_writes_no_values(count: int) -> None:
    out = node_labels_hook_run(count)
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
def test_every_object_fits_etcds_request_limit(rendered_by_count: dict[int, Rendered], count: int) -> None:
    for obj in rendered_by_count[count].objects:
        # Sized as the API server stores it (compact JSON).
        size = len(json.dumps(obj, separators=(",", ":")).encode())
        assert size <= MAX_OBJECT_BYTES, (obj["kind"], obj["metadata"]["name"], size)


@pytest.mark.parametrize("count", GPU_NODE_COUNTS)
def test_the_release_fits_helms_release_secret(rendered_by_count: dict[int, Rendered], count: int) -> None:
    manifest = "\n---\n".join(json.dumps(obj) for obj in rendered_by_count[count].objects).encode()
    # base64 adds a third; the Secret must stay under 1 MiB.
    assert len(gzip.compress(manifest)) * 4 / 3 < HELM_RELEASE_LIMIT
