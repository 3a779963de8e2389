# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The components against a real API server, on the RBAC and ValidatingAdmissionPolicies the
chart renders, each with its own ServiceAccount's token (tests/real/component_world.py).

One test runs the four components in the order a node comes up: gpu-node-agent inventories a
simulated host, gpu-controller sets DriverReady from a validator Pod, gpu-handler (simulated
NVML) publishes the node's ResourceSlices, gpu-dra-controller allocates a claim marked for the
node on them and audits it. The other asks the server, with the same tokens, for what a node's
component must never do: write another node's PhysicalGPUs, ResourceSlices or Pods, or write
without a token naming its node; and for what RBAC gives no component.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from deckhouse_gpu.domain.allocation.audit import KINDS
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from testkit.real_cluster import ApiError, Clusters, RealCluster
from tests.e2e.sim_node import build_host
from tests.real.component_world import (
    CARDS,
    CONTROLLER,
    DRA_CONTROLLER,
    HANDLER,
    NAMESPACE,
    NODE_AGENT,
    PHYSICAL_GPUS,
    RESOURCE_SLICES,
    Component,
    account_credential,
    add_node,
    as_token,
    card_name,
    delete_node_objects,
    delete_quietly,
    install_access,
    mps_pod,
    node_credential,
    physical_gpu,
    ready_validator,
    resource_slice,
    start,
    unique,
    whole_gpu_class,
)
from tests.real.conftest import cluster_of
from tests.support.fake_kubelet import FakeKubelet

NODE_POLICY = (
    "ValidatingAdmissionPolicy 'd8-gpu-node-writes' with binding 'd8-gpu-node-writes' denied request"
)
MPS_POLICY = "ValidatingAdmissionPolicy 'd8-gpu-mps-pods' with binding 'd8-gpu-mps-pods' denied request"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
MERGE = "application/merge-patch+json"


def refused(answer: tuple[int, dict[str, Any]], *expected: str) -> None:
    """Refused with 403, the server's message holding each of ``expected``."""
    status, body = answer
    message = str(body.get("message", body))
    assert status == 403, f"expected 403, got {status}: {message}"
    for text in expected:
        assert text in message, f"{text!r} not in the server's message: {message}"


def accepted(answer: tuple[int, dict[str, Any]]) -> None:
    status, body = answer
    assert status in (200, 201), f"expected success, got {status}: {body.get('message', body)}"


def rbac_denial(account: str, verb: str, resource: str, group: str) -> str:
    return (
        f'User "system:serviceaccount:{NAMESPACE}:{account}" cannot {verb} resource "{resource}"'
        f' in API group "{group}" at the cluster scope'
    )


# ---------------------------------------------------------------------------------------------
# Refusals: every version

Ask = Callable[..., tuple[int, dict[str, Any]]]


def asking(cluster: RealCluster, token: str) -> Ask:
    def ask(method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        return as_token(cluster, token, method, path, body)

    return ask


def test_a_nodes_tokens_are_refused_outside_its_node(real_cluster: RealCluster) -> None:
    cluster = real_cluster
    install_access(cluster)
    own, other = unique("rc-own"), unique("rc-other")
    try:
        for node in (own, other):
            add_node(cluster, node)
        # The other node's objects, as its own components would have written them.
        theirs = card_name(other, CARDS[0])
        cluster.create(physical_gpu(other, CARDS[0]))
        their_slice = cluster.create(resource_slice(other))["metadata"]["name"]
        agent = asking(cluster, node_credential(cluster, NODE_AGENT, own).token)
        handler = asking(cluster, node_credential(cluster, HANDLER, own).token)
        not_own_card = f"node {own} may only write its own PhysicalGPUs ({own}-<pci address>), not "
        label = {"metadata": {"labels": {"stolen": "yes"}}}
        status = {"status": {"nodeInfo": {"nodeName": own}}}

        # gpu-node-agent: its own node's cards, never another node's, whatever the verb.
        accepted(agent("POST", f"{PHYSICAL_GPUS}?dryRun=All", physical_gpu(own, CARDS[0])))
        forged = card_name(other, CARDS[1])
        refused(
            agent("POST", PHYSICAL_GPUS, physical_gpu(other, CARDS[1])), NODE_POLICY, not_own_card + forged
        )
        refused(agent("PATCH", f"{PHYSICAL_GPUS}/{theirs}", label), NODE_POLICY, not_own_card + theirs)
        refused(
            agent("PATCH", f"{PHYSICAL_GPUS}/{theirs}/status", status), NODE_POLICY, not_own_card + theirs
        )
        refused(agent("DELETE", f"{PHYSICAL_GPUS}/{theirs}"), NODE_POLICY, not_own_card + theirs)
        # A name of its own node that is no card's is refused too: the PCI slug is part of the rule.
        greedy = {**physical_gpu(own, CARDS[0]), "metadata": {"name": f"{own}-everything"}}
        refused(agent("POST", PHYSICAL_GPUS, greedy), NODE_POLICY, not_own_card + f"{own}-everything")
        # RBAC gives it no ResourceSlice at all.
        refused(
            agent("POST", RESOURCE_SLICES, resource_slice(own)),
            rbac_denial(NODE_AGENT, "create", "resourceslices", "resource.k8s.io"),
        )

        # gpu-handler: its own node's slices, never another node's, in any of the three ways.
        not_own_slice = f"node {own} may only write the ResourceSlices of its own node, not "
        accepted(handler("POST", f"{RESOURCE_SLICES}?dryRun=All", resource_slice(own)))
        forged = unique("rc-forged")
        refused(
            handler("POST", RESOURCE_SLICES, resource_slice(other, forged)),
            NODE_POLICY,
            not_own_slice + forged,
        )
        refused(
            handler("PATCH", f"{RESOURCE_SLICES}/{their_slice}", label),
            NODE_POLICY,
            not_own_slice + their_slice,
        )
        refused(
            handler("DELETE", f"{RESOURCE_SLICES}/{their_slice}"), NODE_POLICY, not_own_slice + their_slice
        )
        refused(
            handler("PATCH", f"{PHYSICAL_GPUS}/{theirs}/status", status), NODE_POLICY, not_own_card + theirs
        )
        # Pods of d8-gpu only as its own node's MPS daemons.
        not_mps = "gpu-handler may only create and delete MPS daemon Pods (label app=gpu-mps), not "
        accepted(handler("POST", f"{PODS}?dryRun=All", mps_pod(own, unique("rc-mps"))))
        refused(
            handler("POST", PODS, mps_pod(other, "rc-mps-theirs")),
            MPS_POLICY,
            f"node {own} may only create and delete the MPS daemon Pods of its own node",
        )
        refused(
            handler("POST", PODS, mps_pod(own, "rc-miner", {"app": "miner"})),
            MPS_POLICY,
            not_mps + "rc-miner",
        )
        neighbour = f"{NODE_AGENT}-{own}"  # gpu-node-agent's pod on the same node
        refused(handler("DELETE", f"{PODS}/{neighbour}?dryRun=All"), MPS_POLICY, not_mps + neighbour)

        # A token not bound to a pod on a node (a copied secret, a TokenRequest) writes nothing.
        unbound = asking(cluster, account_credential(cluster, HANDLER, f"{HANDLER}-unbound-{own}").token)
        refused(
            unbound("POST", f"{RESOURCE_SLICES}?dryRun=All", resource_slice(own)),
            NODE_POLICY,
            "the request's token names no node (authentication.kubernetes.io/node-name)",
        )

        # The controllers: RBAC alone keeps them to what they do.
        controller = asking(cluster, account_credential(cluster, CONTROLLER, f"{CONTROLLER}-{own}").token)
        accepted(controller("PATCH", f"{PHYSICAL_GPUS}/{theirs}/status?dryRun=All", status))
        refused(
            controller("PATCH", f"{PHYSICAL_GPUS}/{theirs}", label),
            rbac_denial(CONTROLLER, "patch", "physicalgpus", "gpu.deckhouse.io"),
        )
        dra = asking(cluster, account_credential(cluster, DRA_CONTROLLER, f"{DRA_CONTROLLER}-{own}").token)
        refused(
            dra("POST", RESOURCE_SLICES, resource_slice(own)),
            rbac_denial(DRA_CONTROLLER, "create", "resourceslices", "resource.k8s.io"),
        )
        refused(
            dra("PATCH", f"{PHYSICAL_GPUS}/{theirs}/status", status),
            rbac_denial(DRA_CONTROLLER, "patch", "physicalgpus/status", "gpu.deckhouse.io"),
        )
        # Nothing above went through: the other node's objects are as they were.
        assert "stolen" not in cluster.request("GET", f"{PHYSICAL_GPUS}/{theirs}")["metadata"].get(
            "labels", {}
        )
        assert "stolen" not in cluster.request("GET", f"{RESOURCE_SLICES}/{their_slice}")["metadata"].get(
            "labels", {}
        )
    finally:
        for node in (own, other):
            delete_node_objects(cluster, node)


# ---------------------------------------------------------------------------------------------
# The four components, in the order a node comes up


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """gpu-handler's kubelet sockets go under the host root: a Unix socket path has 107 bytes."""
    directory = Path(tempfile.mkdtemp(prefix="g"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def own_cards(cluster: RealCluster, node: str) -> dict[str, Any]:
    listed = cluster.request("GET", f"{PHYSICAL_GPUS}?labelSelector=gpu.deckhouse.io/node={node}")
    return {item["metadata"]["name"]: item for item in listed["items"]}


def driver_ready(card: dict[str, Any]) -> dict[str, Any]:
    conditions = (card.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "DriverReady"), {})


def metric(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return None


def test_the_components_run_on_their_own_tokens(real_cluster: RealCluster, short_dir: Path) -> None:
    cluster = real_cluster
    install_access(cluster)
    node, claims, device_class = unique("rc-node"), unique("rc-claims"), unique("rc-a30")
    validator = f"nvidia-driver-validator-{node}"
    logs = short_dir / "logs"
    running: list[Component] = []
    try:
        node_uid = add_node(cluster, node)["metadata"]["uid"]
        root = build_host(short_dir / "h").root

        # gpu-node-agent: the node's cards, their status, owned by the Node.
        agent_token = node_credential(cluster, NODE_AGENT, node)
        agent_args = [
            "--node-name",
            node,
            "--host-root",
            str(root),
            "--kubeconfig",
            str(agent_token.kubeconfig),
        ]
        running.append(agent := start(NODE_AGENT, "deckhouse_gpu.cmd.gpu_node_agent", agent_args, logs))
        agent.wait_ready()
        names = {card_name(node, address) for address in CARDS}
        cards = agent.wait_for(
            lambda: own_cards(cluster, node) if set(own_cards(cluster, node)) == names else None,
            30,
            "the node's PhysicalGPUs",
        )
        for card in cards.values():
            assert card["metadata"]["ownerReferences"][0]["uid"] == node_uid
            assert card["status"]["pciInfo"]["device"]["name"] == "GA100GL [A30 PCIe]"

        # gpu-controller: DriverReady from the node's validator Pod.
        assert ready_validator(cluster, node) == validator
        controller_token = account_credential(cluster, CONTROLLER, f"{CONTROLLER}-{node}")
        controller_args = [
            "--kubeconfig",
            str(controller_token.kubeconfig),
            "--namespace",
            NAMESPACE,
            "--validator-selector=app=nvidia-driver-validator",
        ]
        controller_pod = f"{CONTROLLER}-{node}"
        running.append(
            controller := start(
                CONTROLLER,
                "deckhouse_gpu.cmd.gpu_controller",
                controller_args,
                logs,
                {"POD_NAME": controller_pod},
                "--listen-address",
            )
        )
        controller.wait_ready()
        controller.wait_for(
            lambda: all(driver_ready(c).get("status") == "True" for c in own_cards(cluster, node).values()),
            30,
            "DriverReady True",
        )
        assert {driver_ready(c)["reason"] for c in own_cards(cluster, node).values()} == {"ValidatorReady"}
        lease = cluster.request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{CONTROLLER}"
        )
        assert lease["spec"]["holderIdentity"] == controller_pod

        # gpu-handler: the node's ResourceSlices, from simulated NVML; it publishes what the
        # cluster's DeviceClasses may select (docs/DRA.md, "Offers follow the DeviceClasses").
        whole_gpu_class(cluster, device_class)
        handler_token = node_credential(cluster, HANDLER, node)
        handler_args = [
            "run",
            "--node-name",
            node,
            "--kubeconfig",
            str(handler_token.kubeconfig),
            "--nvml-sim",
            "a30,a30",
            "--host-root",
            str(root),
            "--cdi-root",
            "/etc/cdi",
            "--mps-image",
            "registry.example/gpu-handler:test",
        ]
        # No POD_UID: a socket name with the pod's UID under a temporary host root passes 107 bytes.
        running.append(handler := start(HANDLER, "deckhouse_gpu.simulator.gpu_handler", handler_args, logs))

        def published() -> list[dict[str, Any]] | None:
            """The node's pool once all its slices are there."""
            items: list[dict[str, Any]] = cluster.request(
                "GET", f"{RESOURCE_SLICES}?fieldSelector=spec.nodeName={node}"
            )["items"]
            complete = items and len(items) == items[0]["spec"]["pool"]["resourceSliceCount"]
            return items if complete else None

        slices = handler.wait_for(published, 60, "the node's ResourceSlices")
        assert {s["spec"]["driver"] for s in slices} == {"gpu.deckhouse.io"}
        assert {s["spec"]["pool"]["name"] for s in slices} == {f"gpus/{node}"}
        devices = {d["name"] for s in slices for d in s["spec"].get("devices", [])}
        assert {"gpu-0000-17-00-0", "gpu-0000-31-00-0"} <= devices

        # gpu-dra-controller: a claim marked for the node, allocated on its slices, audited.
        cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": claims}})
        cluster.create(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {
                    "name": "whole",
                    "namespace": claims,
                    "annotations": {"gpu.deckhouse.io/allocate-on-node": node},
                },
                "spec": {
                    "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]}
                },
            }
        )
        dra_token = account_credential(cluster, DRA_CONTROLLER, f"{DRA_CONTROLLER}-{node}")
        dra_args = [
            "run",
            "--kubeconfig",
            str(dra_token.kubeconfig),
            "--namespace",
            NAMESPACE,
            "--no-webhook",
        ]
        running.append(
            dra := start(
                DRA_CONTROLLER,
                "deckhouse_gpu.cmd.gpu_dra_controller.main",
                dra_args,
                logs,
                {"POD_NAME": f"{DRA_CONTROLLER}-{node}"},
                "--listen-address",
            )
        )
        dra.wait_ready()
        claim_path = f"/apis/resource.k8s.io/v1/namespaces/{claims}/resourceclaims/whole"
        claim = dra.wait_for(
            lambda: (c := cluster.request("GET", claim_path)).get("status", {}).get("allocation") and c,
            60,
            "the claim allocated",
        )
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["pool"]) == ("gpu.deckhouse.io", f"gpus/{node}")
        assert result["device"] in devices
        assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]

        # gpu-handler prepares it when a kubelet asks (the fake kubelet of tests/support, over the
        # plugin's socket) and reports the device in the claim's status.devices: on 1.36 a write
        # the server authorizes per driver and node (resourceclaims/driver, associated-node:patch).
        kubelet = FakeKubelet(str(root / "var/lib/kubelet/plugins_registry"))
        try:
            (plugin,) = kubelet.wait_for_plugins(1, timeout=30)
            ref = ClaimRef(claims, claim["metadata"]["uid"], "whole")
            assert plugin.prepare([ref])[ref.uid].error == ""
            reported = handler.wait_for(
                lambda: cluster.request("GET", claim_path).get("status", {}).get("devices"),
                30,
                "status.devices",
            )
            assert [(d["driver"], d["pool"], d["device"]) for d in reported] == [
                ("gpu.deckhouse.io", f"gpus/{node}", result["device"])
            ]
            assert plugin.unprepare([ref]) == {ref.uid: ""}
        finally:
            kubelet.close()

        # The audit over real claims: none overcommitted, until a second claim is given the same
        # device (an allocation written by hand, which the server takes as it is).
        def audit(allocated: float, **violations: float) -> bool:
            text = dra.get("/metrics", metrics=True)[1]
            found = {
                kind: metric(text, "d8_gpu_allocation_invariant_violations", kind=kind) for kind in KINDS
            }
            devices = metric(text, "d8_gpu_allocated_devices", device_class=device_class, node=node)
            return devices == allocated and found == {kind: violations.get(kind, 0.0) for kind in KINDS}

        dra.wait_for(lambda: audit(1.0), 30, "the audit finding nothing")
        twin_path = f"/apis/resource.k8s.io/v1/namespaces/{claims}/resourceclaims"
        twin = {**claim, "metadata": {"name": "twin", "namespace": claims}, "status": {}}
        cluster.request("POST", twin_path, twin)
        allocation = {"status": {"allocation": claim["status"]["allocation"]}}
        cluster.request("PATCH", f"{twin_path}/twin/status", allocation, content_type=MERGE)
        dra.wait_for(
            lambda: audit(2.0, DoubleAllocation=1.0), 30, "the audit finding the device allocated twice"
        )

        # Each stops cleanly on SIGTERM, as in a pod.
        for component in reversed(running):
            assert component.stop() == 0, f"{component.name}:\n{component.process.tail()}"
    except BaseException:
        for component in running:
            print(f"--- {component.name}\n{component.process.tail(40)}")
        raise
    finally:
        for component in running:
            component.stop()
        claim_path = f"/apis/resource.k8s.io/v1/namespaces/{claims}/resourceclaims/whole"
        with contextlib.suppress(ApiError):
            cluster.request(
                "PATCH",
                claim_path,
                {"metadata": {"finalizers": None}},
                content_type=MERGE,
            )
        delete_quietly(cluster, f"/api/v1/namespaces/{claims}")
        delete_quietly(cluster, f"/apis/resource.k8s.io/v1/deviceclasses/{device_class}")
        delete_quietly(cluster, f"{PODS}/{validator}?gracePeriodSeconds=0")
        delete_node_objects(cluster, node)


def test_from_1_36_a_handler_writes_only_the_device_status_of_claims_on_its_node(clusters: Clusters) -> None:
    """Kubernetes 1.36 authorizes a claim's status by field (resourceclaims/driver for
    status.devices, with the node the token names; resourceclaims/binding for the allocation).
    Older servers check resourceclaims/status alone, which RBAC cannot narrow to a node."""
    cluster = cluster_of(clusters, "1.36")
    install_access(cluster)
    own, other, namespace = unique("rc-own"), unique("rc-other"), unique("rc-claims")
    try:
        for node in (own, other):
            add_node(cluster, node)
        cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        claims = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"
        request = {"name": "gpu", "exactly": {"deviceClassName": "gpu-a30"}}
        cluster.request(
            "POST",
            claims,
            {"metadata": {"name": "theirs"}, "spec": {"devices": {"requests": [request]}}},
        )
        device = {"driver": "gpu.deckhouse.io", "pool": f"gpus/{other}", "device": "gpu-0000-17-00-0"}
        on_other = {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [other]}]}
            ]
        }
        allocation = {"devices": {"results": [{"request": "gpu", **device}]}, "nodeSelector": on_other}
        cluster.request(
            "PATCH", f"{claims}/theirs/status", {"status": {"allocation": allocation}}, content_type=MERGE
        )
        report = {"status": {"devices": [{**device, "conditions": []}]}}

        mine = asking(cluster, node_credential(cluster, HANDLER, own).token)
        answer = mine("PATCH", f"{claims}/theirs/status", report)
        assert answer[0] == 422, answer
        message = str(answer[1]["message"])
        assert 'changing status.devices requires resource="resourceclaims/driver"' in message, message
        # Not its node, so the server asks for the control plane's verb, which it lacks.
        denied = f'User "system:serviceaccount:{NAMESPACE}:{HANDLER}" cannot arbitrary-node:patch resource'
        assert denied + ' "resourceclaims/driver"' in message, message
        answer = mine("PATCH", f"{claims}/theirs/status", {"status": {"allocation": None}})
        assert answer[0] == 422, answer
        assert 'requires resource="resourceclaims/binding"' in str(answer[1]["message"]), answer
        # The handler of the claim's node may: the node its token names is the claim's.
        accepted(
            asking(cluster, node_credential(cluster, HANDLER, other).token)(
                "PATCH", f"{claims}/theirs/status", report
            )
        )
    finally:
        with contextlib.suppress(ApiError):
            cluster.request("DELETE", f"/api/v1/namespaces/{namespace}")
        for node in (own, other):
            delete_node_objects(cluster, node)
