# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Device metadata files (KEP-5304) through the real prepare pipeline on a simulated node: written
with the claim, mounted by its CDI spec, and gone with it at unprepare, rollback and start."""

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from deckhouse_gpu.adapters.files.claim_cdi_files import FileClaimCDI
from deckhouse_gpu.adapters.files.device_metadata_files import FileDeviceMetadata
from deckhouse_gpu.domain.prepare.container.cdi_spec import claim_spec_file
from deckhouse_gpu.k8s_semantics.cdi.cdi_rules import validate_spec
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import RESOURCE_CLAIMS
from deckhouse_gpu.services.prepare.service import PrepareService
from testkit.prepare_world import PLUGIN_DIR, PrepareWorld, allocate, build_world
from tests.services.prepare.sharing_world import MPS, SharingNode, share_claim

A30, A30B = "0000:17:00.0", "0000:31:00.0"
WHOLE = "gpu-0000-17-00-0"
MIG = "gpu-0000-17-00-0-mig-1g-6gb-0"
IN_CONTAINER = "/var/run/kubernetes.io/dra-device-attributes"


@pytest.fixture
def world(tmp_path) -> PrepareWorld:
    return build_world(tmp_path, {A30: "a30", A30B: "a30"})


def files(world: PrepareWorld) -> FileDeviceMetadata:
    """The metadata files of the world's plugin directory, the host naming it PLUGIN_DIR."""
    return FileDeviceMetadata(world.root / "plugin", PLUGIN_DIR)


def service(world: PrepareWorld, **extra: Any) -> PrepareService:
    return world.service(metadata=files(world), **extra)


def ref(claim: dict[str, Any]) -> ClaimRef:
    meta = claim["metadata"]
    return ClaimRef(meta["namespace"], meta["uid"], meta["name"])


def metadata_dir(world: PrepareWorld) -> Path:
    return world.root / "plugin" / "dra-device-metadata"


def read(world: PrepareWorld, uid: str, request: str = "gpu") -> list[dict[str, Any]]:
    """The objects of the request's file, a JSON stream read object after object."""
    text = (metadata_dir(world) / uid / request / "metadata.json").read_text()
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        obj, at = decoder.raw_decode(text, at)
        found.append(obj)
    return found


def spec(world: PrepareWorld, uid: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((world.cdi_root / claim_spec_file(uid)).read_text())
    return found


def mounts(device: dict[str, Any]) -> list[dict[str, Any]]:
    return list(device["containerEdits"].get("mounts", []))


def test_a_prepared_card_has_its_file_mounted_read_only_and_unprepare_removes_it(world):
    claim = allocate(world.api, "c1", WHOLE)
    uid = ref(claim).uid
    svc = service(world)
    assert svc.prepare([ref(claim)])[uid].error == ""

    beta, alpha = read(world, uid)
    assert (beta["apiVersion"], alpha["apiVersion"]) == (
        "metadata.resource.k8s.io/v1beta1",
        "metadata.resource.k8s.io/v1alpha1",
    )
    assert (alpha["metadata"]["name"], alpha["metadata"]["uid"]) == ("c1", uid)
    (device,) = alpha["requests"][0]["devices"]
    assert device["attributes"]["resource.kubernetes.io/pciBusID"] == {"string": A30}
    path = metadata_dir(world) / uid / "gpu" / "metadata.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # virt-launcher reads it as uid 107
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o755

    found = spec(world, uid)
    assert validate_spec(found) == []
    (cdi_device,) = found["devices"]
    assert mounts(cdi_device) == [
        {
            "hostPath": f"{PLUGIN_DIR}/dra-device-metadata/{uid}/gpu/metadata.json",
            "containerPath": f"{IN_CONTAINER}/resourceclaims/c1/gpu/gpu.deckhouse.io-metadata.json",
            "options": ["ro", "bind"],
        }
    ]
    assert cdi_device["containerEdits"]["deviceNodes"]  # the card is still there beside the mount

    assert svc.unprepare([ref(claim)]) == {uid: ""}
    assert not (metadata_dir(world) / uid).exists()


def test_a_mig_device_names_the_instance_prepare_created(world):
    claim = allocate(world.api, "c1", MIG)
    uid = ref(claim).uid
    assert service(world).prepare([ref(claim)])[uid].error == ""
    (instance,) = world.mig.instances(A30)
    attributes = read(world, uid)[1]["requests"][0]["devices"][0]["attributes"]
    assert attributes["migUUID"] == {"string": instance.uuid}
    assert attributes["migProfile"] == {"string": "1g.6gb"}


def test_a_claim_from_a_template_is_mounted_under_its_pod_claim_name(world):
    claim = allocate(world.api, "train-7xk2p-gpu-abcde", WHOLE)
    meta = {"annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"}}
    world.api.patch(RESOURCE_CLAIMS, "train-7xk2p-gpu-abcde", {"metadata": meta}, namespace="ns")
    uid = ref(claim).uid
    assert service(world).prepare([ref(claim)])[uid].error == ""
    assert read(world, uid)[1]["podClaimName"] == "gpu"
    (cdi_device,) = spec(world, uid)["devices"]
    expected = f"{IN_CONTAINER}/resourceclaimtemplates/gpu/gpu/gpu.deckhouse.io-metadata.json"
    assert [m["containerPath"] for m in mounts(cdi_device)] == [expected]


def test_an_mps_share_keeps_its_mps_edits_beside_the_metadata_mount(world):
    node = SharingNode(world)
    share = share_claim(world.api, "small", "s1", "25", MPS)
    assert node.service(metadata=files(world)).prepare([share])[share.uid].error == ""
    found = spec(world, share.uid)
    assert validate_spec(found) == []
    (cdi_device,) = found["devices"]
    paths = [m["containerPath"] for m in mounts(cdi_device)]
    assert paths[-1] == f"{IN_CONTAINER}/resourceclaims/small/gpu/gpu.deckhouse.io-metadata.json"
    assert len(paths) == 3  # the MPS pipe and shared-memory directories first, then the file
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25" in cdi_device["containerEdits"]["env"]


def test_without_metadata_files_nothing_is_written_or_mounted(world):
    claim = allocate(world.api, "c1", WHOLE)
    uid = ref(claim).uid
    assert world.service().prepare([ref(claim)])[uid].error == ""
    assert not metadata_dir(world).exists()
    assert mounts(spec(world, uid)["devices"][0]) == []


def test_a_failure_after_the_files_removes_them(world, monkeypatch):
    claim = allocate(world.api, "c1", WHOLE)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(FileClaimCDI, "write_claim", broken)
    assert "No space left" in service(world).prepare([ref(claim)])[ref(claim).uid].error
    assert not (metadata_dir(world) / ref(claim).uid).exists()


class Crash(Exception):
    """gpu-handler dies right after a step: no undo runs."""


def test_files_of_an_interrupted_prepare_go_with_its_rollback_and_its_unprepare(world):
    claim = allocate(world.api, "c1", WHOLE)
    uid = ref(claim).uid

    def die_after(step: str) -> None:
        if step == "write-device-metadata":
            raise Crash(step)

    assert service(world, after_step=die_after).prepare([ref(claim)])[uid].error
    assert (metadata_dir(world) / uid / "gpu" / "metadata.json").exists()  # the crash left it
    assert service(world).unprepare([ref(claim)]) == {uid: ""}
    assert not (metadata_dir(world) / uid).exists()

    assert service(world, after_step=die_after).prepare([ref(claim)])[uid].error
    assert service(world).prepare([ref(claim)])[uid].error == ""  # rolled back, prepared afresh
    assert read(world, uid)[1]["metadata"]["uid"] == uid


def test_start_removes_files_no_entry_owns_and_unprepare_of_an_unknown_claim_too(world):
    kept = allocate(world.api, "kept", WHOLE)
    svc = service(world)
    assert svc.prepare([ref(kept)])[ref(kept).uid].error == ""
    metadata = files(world)
    metadata.write_claim("0f0f0f0f-dead-4000-8000-000000000001", {"gpu": b"{}\n"})
    metadata.write_claim("0f0f0f0f-dead-4000-8000-000000000002", {"gpu": b"{}\n"})
    service(world).start()
    assert metadata.claims_with_files() == {ref(kept).uid}
    metadata.write_claim("0f0f0f0f-dead-4000-8000-000000000003", {"gpu": b"{}\n"})
    gone = ClaimRef("ns", "0f0f0f0f-dead-4000-8000-000000000003", "gone")
    assert service(world).unprepare([gone]) == {gone.uid: ""}
    assert metadata.claims_with_files() == {ref(kept).uid}


def test_a_corrupt_checkpoint_keeps_every_file(world):
    claim = allocate(world.api, "c1", WHOLE)
    assert service(world).prepare([ref(claim)])[ref(claim).uid].error == ""
    world.checkpoint_path.write_text("{garbage")
    service(world).start()
    assert files(world).claims_with_files() == {ref(claim).uid}  # its Pod may restart a container
