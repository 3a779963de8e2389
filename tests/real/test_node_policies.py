# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The module's ValidatingAdmissionPolicies evaluated by a real kube-apiserver of each version:
a node's components (gpu-node-agent, gpu-handler) write only their own node's PhysicalGPUs,
ResourceSlices and MPS daemon Pods (templates/node-write-policy.yaml, mps-daemon-policy.yaml).

The identities are real: service-account tokens bound to a Pod on a Node, which carry the node's
name (``authentication.kubernetes.io/node-name``) as the token projected into the DaemonSet's
pods does; the rendered RBAC lets them write, so a refusal is the policy's. Writes go through a
dry run where they would store anything; the objects a test needs stored (a Node, its Pods, a
PhysicalGPU and ResourceSlices of a driver no other test uses) are deleted at the end. The
policies, the RBAC and the service accounts stay: they are the module's own state, and constrain
only the module's accounts in d8-gpu.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from deckhouse_gpu.domain.naming import physical_gpu_name
from deckhouse_gpu.domain.prepare.mps import daemon_for
from deckhouse_gpu.domain.prepare.mps_pod import daemon_pod
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.k8s_semantics.apimachinery.codec import encode
from testkit.real_cluster import RealCluster, collection_path, object_path
from tests.module.helm_render_sets import RENDERED, own_containers
from tests.real.installed_module import NAMESPACE, apply_strict, install_module
from tests.support.physicalgpu_samples import a30_status

PGPU = "gpu.deckhouse.io/v1alpha1"
SLICE = "resource.k8s.io/v1"
# A driver of this test's own: the other tests of the run never see these slices.
DRIVER = "policy-check.deckhouse.io"
POLICIES = ("d8-gpu-node-writes", "d8-gpu-mps-pods")
PLUGIN_DIR = "/var/lib/kubelet/plugins/gpu.deckhouse.io"


@dataclass
class Answer:
    status: int
    body: dict[str, Any]

    @property
    def message(self) -> str:
        return str(self.body.get("message", ""))


def as_token(
    cluster: RealCluster,
    token: str,
    method: str,
    path: str,
    body: Mapping[str, Any] | None = None,
    content_type: str = "application/json",
) -> Answer:
    """One call with a bearer token; the answer whatever its status."""
    return Answer(*cluster.as_token(token, method, path, body, content_type))


@dataclass
class World:
    cluster: RealCluster
    node: str
    agent: str  # tokens: bound to a Pod on ``node``
    handler: str
    unbound_handler: str  # a token of gpu-handler that names no node
    own_gpu: str
    other_gpu: str
    own_slice: str
    other_slice: str
    own_daemon: dict[str, Any]
    stored: list[tuple[str, str, str, str | None]]

    def call(self, token: str, method: str, path: str, body: Mapping[str, Any] | None = None) -> Answer:
        content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
        return as_token(self.cluster, token, method, path, body, content_type)

    def create(self, token: str, obj: Mapping[str, Any]) -> Answer:
        return self.call(token, "POST", collection_path(obj) + "?dryRun=All", obj)

    def patch(self, token: str, obj: Mapping[str, Any], body: Mapping[str, Any], sub: str = "") -> Answer:
        return self.call(token, "PATCH", object_path(obj) + sub + "?dryRun=All", body)

    def delete(self, token: str, obj: Mapping[str, Any]) -> Answer:
        return self.call(token, "DELETE", object_path(obj) + "?dryRun=All")


def pgpu(name: str) -> dict[str, Any]:
    return {"apiVersion": PGPU, "kind": "PhysicalGPU", "metadata": {"name": name}}


def slice_of(node: str | None, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "driver": DRIVER,
        "pool": {"name": node or "all", "generation": 1, "resourceSliceCount": 1},
    }
    if node is None:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    return {"apiVersion": SLICE, "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def mps_pod(node: str) -> dict[str, Any]:
    """The MPS daemon Pod gpu-handler builds for a shared card of ``node``, with its own image."""
    (main,) = own_containers(RENDERED["defaults"].get("DaemonSet", "gpu-handler"))
    plan = DevicePlan(
        "gpu", node, "gpu-0000-17-00-0", "0000:17:00.0", "Physical", share_id="s1", uuid="GPU-1"
    )
    return daemon_pod(daemon_for(plan, node, PLUGIN_DIR, "GPU-1"), NAMESPACE, main["image"], "/", None)


def _enforced(world: World) -> bool:
    """VAPs reach admission through an informer: wait until both deny a foreign write."""
    gpu = world.create(world.agent, pgpu(physical_gpu_name("someone-else", "0000:17:00.0")))
    pod = world.create(world.handler, mps_pod("someone-else"))
    return gpu.status == 403 and pod.status == 403


def _build(cluster: RealCluster) -> World:
    rendered = RENDERED["defaults"]
    install_module(cluster, rendered.get("Namespace", NAMESPACE))
    for kind, name in (
        ("ServiceAccount", "gpu-handler"),
        ("ServiceAccount", "gpu-node-agent"),
        ("ClusterRole", "d8:gpu:gpu-handler"),
        ("ClusterRole", "d8:gpu:gpu-node-agent"),
        ("ClusterRoleBinding", "d8:gpu:gpu-handler"),
        ("ClusterRoleBinding", "d8:gpu:gpu-node-agent"),
        ("Role", "gpu-handler:mps-daemons"),
        ("RoleBinding", "gpu-handler:mps-daemons"),
        *(("ValidatingAdmissionPolicy", policy) for policy in POLICIES),
        *(("ValidatingAdmissionPolicyBinding", policy) for policy in POLICIES),
    ):
        apply_strict(cluster, rendered.get(kind, name))
    # Pods name a service account; an MPS daemon Pod takes the namespace's default one.
    cluster.ensure(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": NAMESPACE},
        }
    )
    suffix = secrets.token_hex(3)
    node = f"gpu.p{suffix}"  # a dot: the policies must match the node's name literally
    stored: list[tuple[str, str, str, str | None]] = []
    # Never a place for another test's Pods: unschedulable and tainted (no kubelet runs it).
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node},
            "spec": {
                "unschedulable": True,
                "taints": [{"key": "gpu.deckhouse.io/policy-test", "effect": "NoSchedule"}],
            },
        }
    )
    stored.append(("v1", "Node", node, None))
    tokens = {}
    for account in ("gpu-node-agent", "gpu-handler"):
        pod = cluster.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{account}-{suffix}", "namespace": NAMESPACE},
                "spec": {
                    "nodeName": node,
                    "serviceAccountName": account,
                    "automountServiceAccountToken": False,
                    "containers": [{"name": "c", "image": "registry.example.com/pause:3.10"}],
                },
            }
        )
        stored.append(("v1", "Pod", pod["metadata"]["name"], NAMESPACE))
        bound = {
            "kind": "Pod",
            "apiVersion": "v1",
            "name": pod["metadata"]["name"],
            "uid": pod["metadata"]["uid"],
        }
        tokens[account] = cluster.service_account_token(NAMESPACE, account, bound_to=bound)
    world = World(
        cluster=cluster,
        node=node,
        agent=tokens["gpu-node-agent"],
        handler=tokens["gpu-handler"],
        unbound_handler=cluster.service_account_token(NAMESPACE, "gpu-handler"),
        own_gpu=physical_gpu_name(node, "0000:17:00.0"),
        other_gpu=physical_gpu_name(f"other{suffix}", "0000:17:00.0"),
        own_slice=f"{node}-{DRIVER}",
        other_slice=f"other{suffix}-{DRIVER}",
        own_daemon=mps_pod(node),
        stored=stored,
    )
    for obj in (
        pgpu(world.own_gpu),
        pgpu(world.other_gpu),
        slice_of(node, world.own_slice),
        slice_of(f"other{suffix}", world.other_slice),
        world.own_daemon,
    ):
        cluster.create(obj)
        stored.append(
            (obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))
        )
    cluster.wait_for(lambda: _enforced(world), 60, "the policies enforced")
    return world


@pytest.fixture(scope="module")
def worlds() -> Iterator[dict[str, World]]:
    built: dict[str, World] = {}
    yield built
    for world in built.values():
        for api_version, kind, name, namespace in reversed(world.stored):
            if kind == "Pod":  # no kubelet confirms a graceful delete: remove it at once
                world.cluster.request(
                    "DELETE",
                    object_path(
                        {
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "metadata": {"name": name, "namespace": namespace},
                        }
                    )
                    + "?gracePeriodSeconds=0",
                )
            else:
                world.cluster.delete(api_version, kind, name, namespace)


@pytest.fixture
def world(real_cluster: RealCluster, worlds: dict[str, World]) -> World:
    if real_cluster.version not in worlds:
        worlds[real_cluster.version] = _build(real_cluster)
    return worlds[real_cluster.version]


def refused(answer: Answer, message: str) -> None:
    assert answer.status == 403, (answer.status, answer.message)
    assert message in " ".join(answer.message.split()), answer.message


def allowed(answer: Answer) -> None:
    assert answer.status in (200, 201), (answer.status, answer.message)


def test_the_tokens_name_the_node_and_the_policies_type_check(world: World) -> None:
    review = world.call(
        world.handler,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
    )
    user = review.body["status"]["userInfo"]
    assert user["username"] == "system:serviceaccount:d8-gpu:gpu-handler"
    assert user["extra"]["authentication.kubernetes.io/node-name"] == [world.node]
    for policy in POLICIES:
        stored = world.cluster.get("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", policy)
        # The server's type checking of every expression against the matched kinds' schemas.
        assert not stored.get("status", {}).get("typeChecking", {}).get("expressionWarnings"), stored[
            "status"
        ]


def test_a_node_agent_writes_its_own_physical_gpus(world: World) -> None:
    allowed(world.create(world.agent, pgpu(physical_gpu_name(world.node, "0000:31:00.0"))))
    allowed(world.patch(world.agent, pgpu(world.own_gpu), {"metadata": {"labels": {"checked": "yes"}}}))
    allowed(world.delete(world.agent, pgpu(world.own_gpu)))


@pytest.mark.parametrize(
    "name",
    [
        "{other}",  # another node
        "{node}-x-0000-17-00-0",  # the node <node>-x, whose name starts like ours
        "{node}-0000-17-00-0-extra",
        "{node}-0000-17-00-9",  # not a PCI function
        "{dotless}-0000-17-00-0",  # the node's dot read as any character
    ],
)
def test_a_node_agent_cannot_write_another_nodes_physical_gpu(world: World, name: str) -> None:
    target = name.format(other=world.other_gpu, node=world.node, dotless=world.node.replace(".", "a"))
    refused(
        world.create(world.agent, pgpu(target)),
        f"node {world.node} may only write its own PhysicalGPUs ({world.node}-<pci address>), not {target}",
    )


def test_a_delete_is_judged_by_the_object_being_deleted(world: World) -> None:
    refused(world.delete(world.agent, pgpu(world.other_gpu)), f"not {world.other_gpu}")
    refused(
        world.patch(world.agent, pgpu(world.other_gpu), {"metadata": {"labels": {"x": "y"}}}),
        f"not {world.other_gpu}",
    )


def test_the_handler_writes_the_status_of_its_own_node_physical_gpus_only(world: World) -> None:
    status = {"status": encode(a30_status())}
    allowed(world.patch(world.handler, pgpu(world.own_gpu), status, "/status"))
    refused(world.patch(world.handler, pgpu(world.other_gpu), status, "/status"), f"not {world.other_gpu}")


def test_a_token_without_a_node_is_refused(world: World) -> None:
    message = "the request's token names no node (authentication.kubernetes.io/node-name)"
    refused(world.create(world.unbound_handler, slice_of(world.node, f"{world.own_slice}-new")), message)
    refused(
        world.create(
            world.unbound_handler,
            world.own_daemon | {"metadata": {**world.own_daemon["metadata"], "name": "unbound"}},
        ),
        message,
    )


def test_the_handler_writes_and_deletes_its_own_node_slices(world: World) -> None:
    allowed(world.create(world.handler, slice_of(world.node, f"{world.own_slice}-new")))
    allowed(
        world.patch(
            world.handler, slice_of(world.node, world.own_slice), {"metadata": {"labels": {"a": "b"}}}
        )
    )
    allowed(world.delete(world.handler, slice_of(world.node, world.own_slice)))


def test_the_handler_cannot_write_another_nodes_slices(world: World) -> None:
    message = f"node {world.node} may only write the ResourceSlices of its own node, not "
    other = world.other_slice.split("-", 1)[0]
    refused(world.create(world.handler, slice_of(other, f"{world.other_slice}-new")), message)
    refused(world.create(world.handler, slice_of(None, f"{world.own_slice}-all")), message)  # allNodes
    refused(world.delete(world.handler, slice_of(other, world.other_slice)), message)
    refused(
        world.patch(world.handler, slice_of(other, world.other_slice), {"metadata": {"labels": {"a": "b"}}}),
        message,
    )


def test_the_handler_cannot_take_over_another_nodes_slice(world: World) -> None:
    # The server refuses it twice: spec.nodeName is immutable (validation, before admission), and
    # the policy's own rule would refuse it if that ever changed.
    answer = world.patch(world.handler, slice_of(None, world.other_slice), {"spec": {"nodeName": world.node}})
    assert answer.status in (403, 422), answer
    assert "immutable" in answer.message or "may not take over" in answer.message, answer.message


def test_the_handler_creates_and_deletes_its_own_nodes_mps_daemons(world: World) -> None:
    fresh = mps_pod(world.node)
    fresh["metadata"]["name"] += "-new"
    allowed(world.create(world.handler, fresh))
    allowed(world.delete(world.handler, world.own_daemon))


def test_the_handler_cannot_touch_another_nodes_mps_daemon(world: World) -> None:
    other = mps_pod(f"w{secrets.token_hex(2)}")
    refused(
        world.create(world.handler, other),
        f"node {world.node} may only create and delete the MPS daemon Pods of its own node "
        f"(spec.nodeName and label gpu.deckhouse.io/node), not {other['metadata']['name']}",
    )
    # Its own node's name in one place is not enough: both the binding and the label.
    for field in ("nodeName", "label"):
        half = mps_pod(world.node)
        half["metadata"]["name"] += f"-{field.lower()}"
        if field == "nodeName":
            half["spec"]["nodeName"] = "elsewhere"
        else:
            half["metadata"]["labels"]["gpu.deckhouse.io/node"] = "elsewhere"
        refused(
            world.create(world.handler, half),
            "may only create and delete the MPS daemon Pods of its own node",
        )


def test_any_other_pod_is_refused_even_on_its_own_node(world: World) -> None:
    shell = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "shell",
            "namespace": NAMESPACE,
            "labels": {"gpu.deckhouse.io/node": world.node},
        },
        "spec": {
            "nodeName": world.node,
            "containers": [{"name": "c", "image": "registry.example.com/shell"}],
        },
    }
    refused(
        world.create(world.handler, shell),
        "gpu-handler may only create and delete MPS daemon Pods (label app=gpu-mps), not shell",
    )


CLAIMS_NAMESPACE = "gpu-policy-claims"
OUR_DRIVER = "gpu.deckhouse.io"


def allocated_claim(world: World, name: str, node: str) -> dict[str, Any]:
    """A ResourceClaim allocated on ``node`` (written by the admin, as the scheduler would)."""
    cluster = world.cluster
    cluster.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CLAIMS_NAMESPACE}})
    claim = {
        "apiVersion": SLICE,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": CLAIMS_NAMESPACE},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "any"}}]}},
    }
    cluster.delete(SLICE, "ResourceClaim", name, CLAIMS_NAMESPACE)
    cluster.wait_for(lambda: cluster.create(claim), 30, f"claim {name} created")
    world.stored.append((SLICE, "ResourceClaim", name, CLAIMS_NAMESPACE))
    selector = {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
    }
    result = {"request": "gpu", "driver": OUR_DRIVER, "pool": node, "device": "gpu-0000-17-00-0"}
    status = {"allocation": {"devices": {"results": [result]}, "nodeSelector": selector}}
    current = cluster.get(SLICE, "ResourceClaim", name, CLAIMS_NAMESPACE)
    current["status"] = status
    return dict(cluster.request("PUT", object_path(claim) + "/status", current))


def devices_of(claim: Mapping[str, Any]) -> dict[str, Any]:
    result = claim["status"]["allocation"]["devices"]["results"][0]
    device = {key: result[key] for key in ("driver", "pool", "device")}
    return {
        "status": {
            "devices": [
                device
                | {
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "Prepared",
                            "message": "",
                            "lastTransitionTime": "2026-12-02T00:00:00Z",
                        }
                    ]
                }
            ]
        }
    }


def test_the_handler_writes_the_devices_of_claims_allocated_on_its_node_only(world: World) -> None:
    """1.36 checks it itself (resourceclaims/driver, associated-node); on 1.34 and 1.35 only the
    policy stands between a stolen gpu-handler token and every node's claims."""
    own = allocated_claim(world, f"own-{world.node.replace('.', '-')}", world.node)
    other = allocated_claim(world, f"other-{world.node.replace('.', '-')}", f"other-{world.node}")
    allowed(world.patch(world.handler, own, devices_of(own), "/status"))
    answer = world.patch(world.handler, other, devices_of(other), "/status")
    if world.cluster.version == "1.36":  # its own authorization refuses it, as a 422 on the field
        assert answer.status == 422, (answer.status, answer.message)
        assert "resourceclaims/driver" in answer.message, answer.message
    else:
        refused(answer, f"node {world.node} may only write the status of ResourceClaims allocated on it")
    # Never its reservations, not even on its own node (the allocation itself is immutable).
    reserved = {"resource": "pods", "name": "someone", "uid": "5f1c9a2e-0000-4000-8000-000000000001"}
    answer = world.patch(world.handler, own, {"status": {"reservedFor": [reserved]}}, "/status")
    assert answer.status in (403, 422), (answer.status, answer.message)
    if world.cluster.version != "1.36":
        refused(answer, "may write only status.devices of ResourceClaim")
