# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The MPS daemon's Pod: what it runs, where it runs, what it mounts, and the daemon read back."""

import copy
from typing import Any

import pytest

from deckhouse_gpu.domain.prepare.mps import (
    LOG_IN_CONTAINER,
    PIPE_IN_CONTAINER,
    SHM_IN_CONTAINER,
    MpsDaemon,
    daemon_for,
)
from deckhouse_gpu.domain.prepare.mps_pod import (
    ANNOTATION_CARD,
    daemon_of,
    daemon_pod,
    daemons_selector,
    driver_root_mount,
)
from deckhouse_gpu.domain.prepare.plan import DevicePlan

CARD = "0000:17:00.0"
PLUGIN = "/var/lib/kubelet/plugins/gpu.deckhouse.io"
IMAGE = "registry.example.com/gpu@sha256:" + "a" * 64
WHOLE = DevicePlan("gpu", "w1", "gpu-0000-17-00-0", CARD, "Physical", share_id="s1", uuid="GPU-1")
MIG = DevicePlan("gpu", "w1", "gpu-0000-17-00-0-mig-1g-6gb-2", CARD, "MIG", None, 14, 2, 1)
DAEMON = daemon_for(WHOLE, "w1", PLUGIN, "GPU-1")


def pod(daemon: MpsDaemon = DAEMON, root: str = "/", pull: str | None = None) -> dict[str, Any]:
    return daemon_pod(daemon, "d8-gpu", IMAGE, root, pull)


def container(manifest: dict[str, Any]) -> dict[str, Any]:
    (only,) = manifest["spec"]["containers"]
    found: dict[str, Any] = only
    return found


def test_it_is_a_pod_pinned_to_the_node_without_the_scheduler():
    # That the server accepts it: tests/real/test_written_objects.py.
    manifest = pod()
    assert manifest["metadata"]["name"] == DAEMON.name
    assert manifest["metadata"]["namespace"] == "d8-gpu"
    assert manifest["spec"]["nodeName"] == "w1"
    assert "schedulerName" not in manifest["spec"]
    assert "affinity" not in manifest["spec"]
    assert manifest["spec"]["tolerations"] == [{"operator": "Exists"}]
    assert manifest["spec"]["restartPolicy"] == "Always"
    assert manifest["spec"]["automountServiceAccountToken"] is False


def test_labels_say_whose_it_is_and_the_card_is_annotated():
    metadata = pod()["metadata"]
    assert metadata["labels"] == {
        "app": "gpu-mps",
        "heritage": "deckhouse",
        "module": "gpu",
        "gpu.deckhouse.io/node": "w1",
        "gpu.deckhouse.io/mps-unit": "gpu-0000-17-00-0",
    }
    assert metadata["annotations"] == {ANNOTATION_CARD: CARD}
    assert daemons_selector("w1") == "gpu.deckhouse.io/node=w1,app=gpu-mps"


def test_the_container_runs_the_launcher_with_the_daemons_environment():
    main = container(pod())
    assert main["image"] == IMAGE
    assert main["command"] == ["gpu-mps-daemon", "run"]
    assert {e["name"]: e["value"] for e in main["env"]} == {
        "CUDA_VISIBLE_DEVICES": "GPU-1",
        "CUDA_MPS_PIPE_DIRECTORY": PIPE_IN_CONTAINER,
        "CUDA_MPS_LOG_DIRECTORY": LOG_IN_CONTAINER,
        "NVIDIA_DRIVER_ROOT_MOUNT": "/driver-root",
    }
    assert main["readinessProbe"]["exec"]["command"] == ["gpu-mps-daemon", "ready"]
    assert main["lifecycle"]["preStop"]["exec"]["command"] == ["gpu-mps-daemon", "quit"]
    assert "livenessProbe" not in main  # a restart would take every client down
    assert main["securityContext"]["privileged"] is True
    assert main["securityContext"]["readOnlyRootFilesystem"] is True


def test_the_mps_directories_are_host_paths_at_the_client_paths():
    manifest = pod()
    volumes = {v["name"]: v for v in manifest["spec"]["volumes"]}
    mounts = {m["name"]: m for m in container(manifest)["volumeMounts"]}
    for name, host, inside in (
        ("mps-pipe", DAEMON.pipe_dir, PIPE_IN_CONTAINER),
        ("mps-shm", DAEMON.shm_dir, SHM_IN_CONTAINER),
        ("mps-log", DAEMON.log_dir, LOG_IN_CONTAINER),
    ):
        assert volumes[name]["hostPath"] == {"path": host, "type": "DirectoryOrCreate"}
        assert mounts[name]["mountPath"] == inside
        assert not mounts[name].get("readOnly")
    assert set(volumes) == set(mounts) == {"driver-root", "mps-pipe", "mps-shm", "mps-log"}


@pytest.mark.parametrize(
    ("root", "host", "mounted", "propagation", "inside"),
    [
        ("/", "/", "/driver-root", None, "/driver-root"),
        ("", "/", "/driver-root", None, "/driver-root"),
        (
            "/run/nvidia/driver",
            "/run/nvidia",
            "/driver-root-parent",
            "HostToContainer",
            "/driver-root-parent/driver",
        ),
        (
            "/run/nvidia/driver/",
            "/run/nvidia",
            "/driver-root-parent",
            "HostToContainer",
            "/driver-root-parent/driver",
        ),
    ],
)
def test_the_driver_root_is_mounted_read_only_as_section_10_4_says(root, host, mounted, propagation, inside):
    volume, mount, path = driver_root_mount(root)
    assert volume["hostPath"]["path"] == host
    assert (mount["mountPath"], mount.get("mountPropagation"), mount["readOnly"]) == (
        mounted,
        propagation,
        True,
    )
    assert path == inside
    env = {e["name"]: e["value"] for e in container(pod(root=root))["env"]}
    assert env["NVIDIA_DRIVER_ROOT_MOUNT"] == inside


def test_a_pull_secret_only_when_given():
    assert "imagePullSecrets" not in pod()["spec"]
    assert pod(pull="gpu-module-registry")["spec"]["imagePullSecrets"] == [{"name": "gpu-module-registry"}]


def test_a_mig_instance_daemon_sees_only_its_instance():
    daemon = daemon_for(MIG, "w1", PLUGIN, "MIG-5")
    manifest = pod(daemon)
    env = {e["name"]: e["value"] for e in container(manifest)["env"]}
    assert env["CUDA_VISIBLE_DEVICES"] == "MIG-5"
    assert manifest["metadata"]["labels"]["gpu.deckhouse.io/mps-unit"] == MIG.device
    assert daemon_of(manifest) == daemon


def test_the_daemon_reads_back_from_its_pod():
    assert daemon_of(pod()) == DAEMON
    assert daemon_of(pod(root="/run/nvidia/driver", pull="s")) == DAEMON


@pytest.mark.parametrize(
    "change",
    [
        lambda p: p["metadata"].pop("annotations"),
        lambda p: p["metadata"]["labels"].pop("gpu.deckhouse.io/mps-unit"),
        lambda p: p["spec"]["containers"][0].pop("env"),
        lambda p: p["spec"]["volumes"].pop(1),
        lambda p: p["spec"]["containers"][0].update(name="renamed"),
    ],
)
def test_a_pod_changed_by_hand_never_reads_as_the_wanted_daemon(change):
    changed = copy.deepcopy(pod())
    change(changed)
    found = daemon_of(changed)
    assert found.name == DAEMON.name  # still found by name, so it can be stopped and replaced
    assert found != DAEMON
