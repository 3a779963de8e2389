# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Which MPS daemons a node needs, and what an MPS client container gets."""

from dataclasses import replace

import pytest

from deckhouse_gpu.domain.config.mps_sharing import MpsPlan
from deckhouse_gpu.domain.config.time_slicing import TimeSlicePlan
from deckhouse_gpu.domain.prepare.checkpoint import ClaimEntry
from deckhouse_gpu.domain.prepare.mig_instance import MigRecord
from deckhouse_gpu.domain.prepare.mps import (
    MpsRefused,
    client_edits,
    daemon_for,
    one_daemon_per_claim,
    pod_name,
    wanted_daemons,
)
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.domain.prepare.sharing import card_settings

CARD = "0000:17:00.0"
PLUGIN = "/var/lib/kubelet/plugins/gpu.deckhouse.io"
WHOLE = DevicePlan("gpu", "gpus/w1", "gpu-0000-17-00-0", CARD, "Physical", share_id="s1", uuid="GPU-1")
MIG = DevicePlan("gpu", "gpus/w1", "gpu-0000-17-00-0-mig-1g-6gb-2", CARD, "MIG", None, 14, 2, 1)
RECORD = MigRecord(CARD, 5, 0, 14, 2, 1, "MIG-5")


def entry(uid: str, *devices: DevicePlan, mig: tuple[MigRecord, ...] = ()) -> ClaimEntry:
    return ClaimEntry(uid, "ns", uid, "PrepareStarted", devices, mig=mig)


def test_one_daemon_per_card_for_every_mps_share_of_it():
    shares = [
        entry("u1", replace(WHOLE, sharing=MpsPlan())),
        entry("u2", replace(WHOLE, share_id="s2", sharing=MpsPlan())),
    ]
    daemons = wanted_daemons(shares, "w1", PLUGIN)
    assert list(daemons) == ["gpu-mps-w1-gpu-0000-17-00-0"]
    daemon = daemons["gpu-mps-w1-gpu-0000-17-00-0"]
    assert (daemon.node, daemon.card, daemon.unit, daemon.visible_device) == (
        "w1",
        CARD,
        WHOLE.device,
        "GPU-1",
    )
    assert daemon.pipe_dir == f"{PLUGIN}/mps/gpu-0000-17-00-0/pipe"
    assert daemon.shm_dir.endswith("/shm")
    assert daemon.log_dir.endswith("/log")
    assert card_settings(shares) == {CARD: {"computeMode": "ExclusiveProcess"}}


def test_a_mig_instance_gets_its_daemon_once_it_exists_and_needs_no_card_mode():
    before = entry("u1", replace(MIG, sharing=MpsPlan()))
    assert wanted_daemons([before], "w1", PLUGIN) == {}
    after = entry("u1", replace(MIG, sharing=MpsPlan()), mig=(RECORD,))
    daemon = wanted_daemons([after], "w1", PLUGIN)["gpu-mps-w1-gpu-0000-17-00-0-mig-1g-6gb-2"]
    assert daemon.visible_device == "MIG-5"
    assert card_settings([after]) == {}  # compute mode is a setting of the whole card


def test_devices_without_mps_need_no_daemon():
    assert wanted_daemons([entry("u1", WHOLE, replace(WHOLE, sharing=TimeSlicePlan()))], "w1", PLUGIN) == {}


def test_pod_names_stay_within_the_api_limit_and_distinct_per_node():
    long_node = "n" * 250
    name = pod_name(long_node, WHOLE.device)
    assert len(name) <= 253
    assert name != pod_name("m" * 250, WHOLE.device)
    with pytest.raises(MpsRefused, match="longer than 63 characters"):
        daemon_for(WHOLE, "n" * 64, PLUGIN, "GPU-1")


def test_a_client_gets_the_pipe_the_shared_memory_and_its_own_limits():
    plan = replace(WHOLE, sharing=MpsPlan(25, 6144))
    daemon = daemon_for(plan, "w1", PLUGIN, "GPU-1")
    edits = client_edits(plan, daemon)
    assert edits["env"] == [
        "CUDA_MPS_PIPE_DIRECTORY=/run/nvidia-mps",
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25",
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=GPU-1=6144M",
    ]
    mounts = {m["containerPath"]: m["hostPath"] for m in edits["mounts"]}
    assert mounts == {"/run/nvidia-mps": daemon.pipe_dir, "/dev/shm": daemon.shm_dir}
    unlimited = client_edits(replace(plan, sharing=MpsPlan()), daemon)
    assert unlimited["env"] == ["CUDA_MPS_PIPE_DIRECTORY=/run/nvidia-mps"]


def test_a_claim_reaches_one_daemon_only():
    other = replace(WHOLE, device="gpu-0000-31-00-0", card="0000:31:00.0", sharing=MpsPlan())
    assert one_daemon_per_claim([replace(WHOLE, sharing=MpsPlan()), other]) is not None
    assert one_daemon_per_claim([replace(WHOLE, sharing=MpsPlan()), replace(WHOLE, request="b")]) is None
    assert one_daemon_per_claim([replace(WHOLE, sharing=MpsPlan()), replace(other, sharing=None)]) is None
