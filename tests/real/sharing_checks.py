# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Sharing judged on the simulated host under the real kubelet (issue 38, item 2): what prepare set
on the cards (compute mode, time-slice interval, in the host's own state file), the claim's CDI
spec (the MPS client settings and limits of a share), and the MPS daemon Pods, which must be gone
after unprepare. A prepare that records success in its checkpoint and sets nothing fails these.
"""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.domain.config.time_slicing import TimeSliceInterval
from deckhouse_gpu.domain.prepare.mps import PIPE_IN_CONTAINER, SHM_IN_CONTAINER
from deckhouse_gpu.ports.sharing import ComputeMode
from tests.real.handler_world import CARD_A, CARD_B, WHOLE_A, HandlerNode

A30_MEMORY_MIB = 24576


def assert_mps_client(node: HandlerNode, claim: dict[str, Any], card_device: str, percent: int) -> None:
    """The claim's CDI spec makes its container a client of the card's MPS daemon, with its share
    as the limits: threads and pinned memory (an A30 has 24 GiB)."""
    edits = node.cdi_edits(claim)
    env = dict(item.split("=", 1) for item in edits.get("env") or [])
    assert env.get("CUDA_MPS_PIPE_DIRECTORY") == PIPE_IN_CONTAINER, edits
    assert env.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") == str(percent), edits
    uuid, limit = env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"].split("=")
    assert uuid.startswith("GPU-"), env
    assert limit == f"{A30_MEMORY_MIB * percent // 100}M", env
    # The pipe and shared memory are the daemon's directories, as the host (the runtime) sees them.
    mounts = {m["containerPath"]: m["hostPath"] for m in edits.get("mounts") or []}
    unit = node.plugin_dir / "mps" / card_device
    assert mounts.get(PIPE_IN_CONTAINER) == str(unit / "pipe"), mounts
    assert mounts.get(SHM_IN_CONTAINER) == str(unit / "shm"), mounts


def assert_shared_on_the_host(node: HandlerNode, mps: dict[str, Any], timesliced: dict[str, Any]) -> None:
    """What prepare set on the simulated host, not what the handler recorded: card A (MPS) in
    exclusive-process mode at the default interval, card B (time-sliced, Medium) in default mode;
    the MPS share's CDI spec with its limits, the time-sliced one's with none."""
    settings = node.card_settings()
    found = {card: (settings.compute_mode(card), settings.time_slice(card)) for card in (CARD_A, CARD_B)}
    assert found == {
        CARD_A: (ComputeMode.EXCLUSIVE_PROCESS, TimeSliceInterval.DEFAULT),
        CARD_B: (ComputeMode.DEFAULT, TimeSliceInterval.MEDIUM),
    }, f"the cards' settings on the host: {found}"
    assert_mps_client(node, mps, WHOLE_A, 50)
    sliced = node.cdi_edits(timesliced)
    assert not [e for e in sliced.get("env") or [] if e.startswith("CUDA_MPS_")], sliced
    assert not [m for m in sliced.get("mounts") or [] if m["containerPath"] == PIPE_IN_CONTAINER], sliced


def assert_unshared_on_the_host(node: HandlerNode, *claims: dict[str, Any]) -> None:
    """After unprepare: the MPS daemon Pod is gone, both cards back at their defaults, no spec left."""
    node.wait(lambda: node.mps_daemons() == [], 60, "the MPS daemon Pod gone")
    settings = node.card_settings()
    found = {card: (settings.compute_mode(card), settings.time_slice(card)) for card in (CARD_A, CARD_B)}
    defaults = (ComputeMode.DEFAULT, TimeSliceInterval.DEFAULT)
    assert found == dict.fromkeys((CARD_A, CARD_B), defaults), f"the cards' settings on the host: {found}"
    assert [c["metadata"]["name"] for c in claims if node.cdi_spec(c) is not None] == []
