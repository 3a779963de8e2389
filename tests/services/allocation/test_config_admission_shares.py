# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The admission review of an MPS config against the shares a claim asks for: a thread limit above
a request's sharePercent is denied as prepare would refuse it; and the other inputs a shared card
can get wrong (time-slicing on MIG, another driver's config) get the answer Kubernetes semantics
ask for."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from deckhouse_gpu.domain.config.opaque_types import LEGACY_API_VERSION
from deckhouse_gpu.services.allocation.config_admission import review
from tests.services.allocation.config_admission_objects import (
    MAKERS,
    MIG_MPS,
    PREFIX,
    UID,
    claim,
    denial,
    device_class,
    ours,
    request,
    template,
    theirs,
)


def mps(threads: int | None = None, memory: str | None = None, kind: str = "GPUConfig") -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if threads is not None:
        settings["defaultActiveThreadPercentage"] = threads
    if memory is not None:
        settings["defaultPinnedDeviceMemoryLimit"] = memory
    return {"apiVersion": LEGACY_API_VERSION, "kind": kind, "sharing": {"strategy": "MPS", "mps": settings}}


def with_shares(obj: dict[str, Any], gpu: Any = None, a30: Any = None) -> dict[str, Any]:
    """``obj`` (a claim or template of config_admission_objects) whose request gpu, and subrequest
    any/a30, ask for these shares (None: no sharePercent)."""
    obj = copy.deepcopy(obj)
    devices = obj["spec"]["devices"] if obj["kind"] == "ResourceClaim" else obj["spec"]["spec"]["devices"]
    if gpu is not None:
        devices["requests"][0]["exactly"]["capacity"] = {"requests": {"sharePercent": gpu}}
    if a30 is not None:
        devices["requests"][1]["firstAvailable"][1]["capacity"] = {"requests": {"sharePercent": a30}}
    return obj


def message(threads: int, share: str, where: str, index: int = 0, prefix: str = "spec.devices") -> str:
    return (
        f"{prefix}.config[{index}].opaque.parameters.sharing.mps.defaultActiveThreadPercentage: {threads} "
        f"is above the claim's share of the card ({share} % at {prefix}.{where}.capacity.requests"
        ".sharePercent): lower it, or ask for a larger sharePercent"
    )


@pytest.mark.parametrize("kind", ["ResourceClaim", "ResourceClaimTemplate"])
def test_a_thread_limit_above_the_share_is_denied_with_both_paths(kind: str) -> None:
    obj = with_shares(MAKERS[kind](ours(mps(50))), gpu="25")
    prefix = PREFIX[kind].removesuffix(".config")
    assert denial(review(request(obj))) == message(50, "25", "requests[0].exactly", prefix=prefix)


@pytest.mark.parametrize(
    ("threads", "share", "allowed"),
    [
        (25, "25", True),
        (26, "25", False),
        (13, "12.5", True),  # the scheduler rounds the share up to 13 %
        (14, "12.5", False),
        (1, "500m", True),  # below the smallest share: the scheduler gives 1 %
        (100, "100", True),
        (30, 30, True),  # a number where a quantity string belongs: read as the API server reads it
        (31, 30, False),
    ],
)
def test_the_bound_is_the_share_the_scheduler_gives(threads: int, share: Any, allowed: bool) -> None:
    assert review(request(with_shares(claim(ours(mps(threads))), gpu=share)))["allowed"] is allowed


def test_a_request_without_a_share_asks_for_the_whole_card() -> None:
    assert review(request(claim(ours(mps(100)))))["allowed"] is True


def test_only_the_requests_a_config_applies_to_are_compared() -> None:
    obj = with_shares(claim(ours(mps(50), ["gpu"]), ours(mps(40), ["any/a30"])), gpu="50", a30="25")
    assert denial(review(request(obj))) == message(40, "25", "requests[1].firstAvailable[1]", index=1)
    # A config of every request is compared with each share; a request name covers its subrequests.
    everything = with_shares(claim(ours(mps(60))), gpu="50", a30="25")
    assert denial(review(request(everything))).split("; ") == [
        message(60, "25", "requests[1].firstAvailable[1]"),
        message(60, "50", "requests[0].exactly"),
    ]
    by_name = with_shares(claim(ours(mps(30), ["any"])), gpu="10", a30="25")
    assert denial(review(request(by_name))) == message(30, "25", "requests[1].firstAvailable[1]")
    assert review(request(with_shares(claim(ours(mps(30), ["any/a100"])), a30="25")))["allowed"] is True


def test_what_admission_cannot_know_is_left_to_prepare() -> None:
    # The memory limit needs the card's memory, known only once a device is allocated.
    assert review(request(with_shares(claim(ours(mps(memory="1000Gi"))), gpu="1")))["allowed"] is True
    # A class's config meets its claims' shares only in an allocation.
    assert review(request(device_class(ours(mps(100)))))["allowed"] is True
    # A MIG instance is never a share of a card; time-slicing sets no limit.
    assert review(request(with_shares(claim(ours(mps(90, kind="MIGConfig"))), gpu="10")))["allowed"] is True
    time_sliced = {
        "apiVersion": LEGACY_API_VERSION,
        "kind": "GPUConfig",
        "sharing": {"strategy": "TimeSlicing"},
    }
    assert review(request(with_shares(claim(ours(time_sliced)), gpu="10")))["allowed"] is True


@pytest.mark.parametrize("share", ["a lot", "", True, None, {"value": 5}, [25]])
def test_a_share_that_is_no_quantity_is_left_to_the_api_server(share: Any) -> None:
    obj = claim(ours(mps(50)))
    obj["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {"requests": {"sharePercent": share}}
    assert review(request(obj)) == {"uid": UID, "allowed": True}


def test_a_limit_above_the_share_and_an_invalid_config_are_both_named() -> None:
    odd = {**mps(50), "replicas": 2}
    answer = denial(review(request(with_shares(template(ours(odd), ours(mps(50), ["gpu"])), gpu="25"))))
    assert answer.split("; ") == [
        "spec.spec.devices.config[0].opaque.parameters.replicas: unknown field (GPUConfig has apiVersion, "
        "kind, sharing)",
        message(50, "25", "requests[0].exactly", index=1, prefix="spec.spec.devices"),
    ]


# --- the other inputs a shared card can get wrong


@pytest.mark.parametrize("kind", MAKERS)
def test_time_slicing_in_a_mig_config_is_denied(kind: str) -> None:
    time_sliced_mig = {**MIG_MPS, "sharing": {"strategy": "TimeSlicing"}}
    answer = denial(review(request(MAKERS[kind](ours(time_sliced_mig)))))
    assert answer.startswith(
        f"{PREFIX[kind]}[0].opaque.parameters.sharing.strategy: TimeSlicing is not available for MIG "
        "devices: the time-slice interval is a setting of the whole"
    )
    assert answer.endswith("; use MPS")


@pytest.mark.parametrize("kind", MAKERS)
def test_another_drivers_config_is_not_ours_to_judge(kind: str) -> None:
    # Kubernetes hands each driver its own entries: ours may not judge (nor deny) another's, even
    # one that would be invalid as ours, nor hold it against a share.
    nvidia_mps = {**mps(90), "apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"}
    obj = MAKERS[kind](theirs(nvidia_mps), theirs({"sharing": {"strategy": "TimeSlicing"}}))
    if kind != "DeviceClass":
        obj = with_shares(obj, gpu="10")
    assert review(request(obj)) == {"uid": UID, "allowed": True}
