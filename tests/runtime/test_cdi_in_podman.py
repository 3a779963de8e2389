# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The CDI specs gpu-handler writes, loaded by a real container runtime (issue 38, item 1).

gpu-handler prepares a whole card, a MIG instance, an MPS share, a time-sliced share and a VFIO
card on a simulated host (tests/runtime/cdi_world.py); podman with runc (testkit/podman_cdi.py)
then starts one container per claim with the claim's CDI device IDs, exactly as containerd or
CRI-O would be given them by the kubelet. Each container must see exactly what its claim should
have: its device nodes (with the host's numbers) and no other, the environment (``void`` visible
devices for the nvidia ones, the MPS client settings for the MPS share only) and the mounts (the
driver's files, the MPS pipe and shared memory, the VFIO payload), and nothing of another claim.
A spec the CDI library refuses fails the test with the library's message.

Podman needs root, runc, a static busybox (``tools/install-podman``, called by ``make unit``):
where it cannot run the module skips with one line, and under ``CI=true`` fails instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from deckhouse_gpu.domain.prepare.container.device_metadata import CONTAINER_DIR as METADATA_DIR
from deckhouse_gpu.domain.prepare.mps import PIPE_IN_CONTAINER, SHM_IN_CONTAINER
from deckhouse_gpu.domain.prepare.vfio_payload import CONTAINER_DIR
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.simulator.host import driver_tree
from testkit.podman_cdi import Container, Podman, RuntimeUnavailable, check_available
from tests.runtime.cdi_world import CARDS, CdiNode, allocate_claims, build_node, offer

CONTROL = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
LIBCUDA = f"/{driver_tree.LIB_DIR}/libcuda.so.{driver_tree.DRIVER_VERSION}"
NVIDIA_SMI = "/usr/bin/nvidia-smi"
GPU_NODES = ("/dev/nvidia", "/dev/vfio/")
# Mount points a claim may have of its own: the MPS directories, the VFIO payload, device metadata.
CLAIM_MOUNTS = (PIPE_IN_CONTAINER, SHM_IN_CONTAINER, CONTAINER_DIR, METADATA_DIR)


@dataclass
class Started:
    node: CdiNode
    claims: dict[str, ClaimRef]
    containers: dict[str, Container]


def _required() -> bool:
    return os.environ.get("CI") == "true"


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Started]:
    try:
        check_available()
    except RuntimeUnavailable as missing:
        if _required():
            pytest.fail(f"podman tier: {missing}")
        pytest.skip(f"podman tier: {missing}")
    root = tmp_path_factory.mktemp("cdi")
    patch = pytest.MonkeyPatch()
    patch.setenv(driver_tree.NODES_ENV, "mknod")
    try:
        node = build_node(root)
        claims: dict[str, ClaimRef] = {}
        ids: dict[str, tuple[str, ...]] = {}
        for kind, allocated in allocate_claims(node.api).items():
            claims[kind], ids[kind] = node.prepare(allocated)
        podman = Podman(root / "podman", node.cdi_dir)
        podman.import_image()
        containers = {kind: podman.run(kind, *ids[kind]) for kind in claims}
        yield Started(node, claims, containers)
        for ref in claims.values():  # what the kubelet does when the Pods go
            assert node.service.unprepare([ref])[ref.uid] == ""
    finally:
        patch.undo()


def gpu_nodes(container: Container) -> dict[str, tuple[int, int]]:
    return {path: numbers for path, numbers in container.nodes.items() if path.startswith(GPU_NODES)}


def host_nodes(node: CdiNode, *paths: str) -> dict[str, tuple[int, int]]:
    """The host's own numbers of the nodes: what the container must have."""
    return {path: node.device_numbers(path) for path in paths}


def card_node(card: str) -> str:
    return f"/dev/nvidia{CARDS.index(card)}"  # the simulated driver numbers cards in bus order


def assert_driver_files(node: CdiNode, container: Container) -> None:
    """The driver's libraries and tools, bind-mounted from the driver root as the host sees it."""
    for inside in (LIBCUDA, NVIDIA_SMI):
        assert inside in container.mounts, f"{inside} not mounted: {sorted(container.mounts)}"
        assert str(node.host / inside.lstrip("/")).endswith(container.mounts[inside])
    assert container.env.get("NVIDIA_VISIBLE_DEVICES") == "void"


def assert_no_sharing(container: Container) -> None:
    assert not [key for key in container.env if key.startswith("CUDA_MPS_")]
    assert PIPE_IN_CONTAINER not in container.mounts


@pytest.mark.parametrize(("kind", "card"), [("whole", CARDS[0]), ("time-sliced", CARDS[3])])
def test_a_whole_card_or_a_time_sliced_share_gets_its_node_and_the_driver(
    started: Started, kind: str, card: str
) -> None:
    """Its card's node, the control nodes and the driver's files; a time-sliced share no MPS
    settings (its interval is a setting of the card, not of the container)."""
    node, container = started.node, started.containers[kind]
    assert gpu_nodes(container) == host_nodes(node, card_node(card), *CONTROL)
    assert_driver_files(node, container)
    assert_no_sharing(container)


def test_a_mig_instance_gets_its_parent_and_its_two_capability_nodes(started: Started) -> None:
    node, container = started.node, started.containers["mig"]
    spec = node.spec(started.claims["mig"])
    (device,) = spec["devices"]
    caps = [n["path"] for n in device["containerEdits"]["deviceNodes"] if "nvidia-caps" in n["path"]]
    assert len(caps) == 2, device  # the GPU instance's and the compute instance's
    assert gpu_nodes(container) == host_nodes(node, card_node(CARDS[1]), *caps, *CONTROL)
    assert_driver_files(node, container)
    assert_no_sharing(container)


def test_an_mps_share_is_a_client_of_its_cards_daemon_with_its_limits(started: Started) -> None:
    node, container = started.node, started.containers["mps"]
    card = CARDS[2]
    assert gpu_nodes(container) == host_nodes(node, card_node(card), *CONTROL)
    assert_driver_files(node, container)
    env = container.env
    assert env["CUDA_MPS_PIPE_DIRECTORY"] == PIPE_IN_CONTAINER
    assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "50"
    # Half of the A30's 24 GiB, pinned to the card's own UUID (the simulated NVML's).
    device, limit = env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"].split("=")
    assert device.startswith("GPU-")
    assert limit == f"{24576 // 2}M"
    unit = node.plugin_dir / "mps" / offer(card)  # the daemon of the card's unit
    for inside, host in ((PIPE_IN_CONTAINER, unit / "pipe"), (SHM_IN_CONTAINER, unit / "shm")):
        assert str(host).endswith(container.mounts[inside]), (inside, container.mounts.get(inside))


def test_a_vfio_card_gets_its_vfio_nodes_and_payload_and_nothing_of_the_driver(started: Started) -> None:
    node, container = started.node, started.containers["vfio"]
    group = 40 + CARDS.index(CARDS[4])
    assert gpu_nodes(container) == host_nodes(node, "/dev/vfio/vfio", f"/dev/vfio/{group}")
    assert "NVIDIA_VISIBLE_DEVICES" not in container.env
    assert LIBCUDA not in container.mounts
    assert NVIDIA_SMI not in container.mounts
    payload = f"{CONTAINER_DIR}/vfio.json"
    assert payload in container.mounts, sorted(container.mounts)
    assert_no_sharing(container)


def test_no_container_sees_a_node_or_a_mount_of_another_claim(started: Started) -> None:
    """The nodes and mounts each claim's container has beyond what every GPU container shares
    (the control nodes, the driver's files) are its own: no two containers share one."""
    shared_nodes = set(CONTROL)
    shared_mounts = set.intersection(*(set(c.mounts) for c in started.containers.values()))
    own = {
        kind: (
            set(gpu_nodes(c)) - shared_nodes,
            {m for m in c.mounts if m.startswith(CLAIM_MOUNTS)} - shared_mounts,
        )
        for kind, c in started.containers.items()
    }
    for kind, (nodes, mounts) in own.items():
        assert nodes, f"{kind}: no device node of its own"
        for other, (other_nodes, other_mounts) in own.items():
            if other != kind:
                assert not nodes & other_nodes, (kind, other, nodes & other_nodes)
                assert not mounts & other_mounts, (kind, other, mounts & other_mounts)
    assert [k for k, c in started.containers.items() if "CUDA_MPS_PIPE_DIRECTORY" in c.env] == ["mps"]


def test_the_hooks_of_the_specs_ran_for_every_nvidia_container(started: Started) -> None:
    """The runtime ran the specs' createContainer hooks: symlinks and the loader cache, once each
    per container that got the driver (not the VFIO one)."""
    calls = started.node.hook_calls()
    assert sum(" update-ldcache " in f" {line} " for line in calls) == 4, calls
    assert sum(" create-symlinks " in f" {line} " for line in calls) == 4, calls
