# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's capabilities pass against the in-memory API and the simulated NVML."""

from typing import Any

import pytest

from deckhouse_gpu.domain.inventory.health.hardware_health import HealthSettings
from deckhouse_gpu.ports.kube import EVENTS, PHYSICAL_GPUS, Unavailable
from deckhouse_gpu.services.publishing.capabilities import CapabilitiesPass
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.sim_nvml import Query, SimulatedNVML

A30, T4 = "0000:17:00.0", "0000:b1:00.0"


def make_card(api: MemoryKube, address: str, driver: str = "Nvidia", ready: bool = True) -> str:
    name = f"w1-{address.replace(':', '-').replace('.', '-')}"
    api.create(PHYSICAL_GPUS, {"metadata": {"name": name, "labels": {"gpu.deckhouse.io/node": "w1"}}})
    status: dict[str, Any] = {"pciInfo": {"address": address}, "currentState": {"driverType": driver}}
    if ready:
        status["conditions"] = [
            {
                "type": "DriverReady",
                "status": "True",
                "reason": "ValidatorReady",
                "message": "",
                "lastTransitionTime": "2026-11-21T00:00:00Z",
            }
        ]
    api.patch(PHYSICAL_GPUS, name, {"status": status}, subresource="status")
    return name


def status_of(api: MemoryKube, name: str) -> Any:
    return api.get(PHYSICAL_GPUS, name)["status"]


def health_of(api: MemoryKube, name: str) -> tuple[str, str] | None:
    for condition in status_of(api, name).get("conditions", []):
        if condition["type"] == "HardwareHealthy":
            return condition["status"], condition["reason"]
    return None


@pytest.fixture
def world(clock):
    api = MemoryKube()
    nvml = SimulatedNVML({A30: "a30", T4: "t4"}, node_name="w1")
    settings = HealthSettings(grace_seconds=30, backoff_seconds=(5, 10))
    capabilities = CapabilitiesPass(
        api, nvml, "w1", EventRecorder(api, "gpu-handler", "w1", clock), clock, settings
    )
    return api, nvml, capabilities, clock


def test_healthy_cards_get_capabilities_state_and_condition(world):
    api, _, capabilities, _ = world
    a30, t4 = make_card(api, A30), make_card(api, T4)
    report = capabilities.run()
    assert report.ok
    assert sorted(report.healthy) == [a30, t4]
    status = status_of(api, a30)
    assert status["capabilities"]["productName"] == "NVIDIA A30"
    assert status["capabilities"]["nvidia"]["mig"]["totalSlices"] == 4
    assert status["currentState"]["nvidia"]["driverVersion"] == "580.82.07"
    assert status["currentState"]["driverType"] == "Nvidia"  # the agent's field survives
    assert [c["type"] for c in status["conditions"]] == ["DriverReady", "HardwareHealthy"]
    assert health_of(api, a30) == ("True", "NVMLHealthy")
    assert "mig" not in status_of(api, t4)["capabilities"]["nvidia"]
    reasons = [e["reason"] for e in api.list(EVENTS, namespace="default").items]
    assert reasons == ["HardwareHealthyTrue", "HardwareHealthyTrue"]


def test_second_pass_writes_nothing(world):
    api, _, capabilities, _ = world
    make_card(api, A30)
    capabilities.run()
    api.calls.clear()
    report = capabilities.run()
    assert report.written == []
    assert api.writes == 0


@pytest.mark.parametrize(
    ("driver", "ready", "reason"),
    [("VFIO", True, "DriverTypeNotNvidia"), ("Nvidia", False, "DriverNotReady")],
)
def test_gated_cards_are_unknown_and_lose_their_current_state(world, driver, ready, reason):
    api, _, capabilities, _ = world
    name = make_card(api, A30)
    capabilities.run()
    api.patch(PHYSICAL_GPUS, name, {"status": {"currentState": {"driverType": driver}}}, subresource="status")
    if not ready:
        api.patch(PHYSICAL_GPUS, name, {"status": {"conditions": []}}, subresource="status")
    capabilities.run()
    status = status_of(api, name)
    assert health_of(api, name) == ("Unknown", reason)
    assert "nvidia" not in status["currentState"]
    assert status["capabilities"]["productName"] == "NVIDIA A30"  # hardware facts stay


def test_lost_card_keeps_its_condition_through_the_grace_then_turns_unknown(world):
    api, nvml, capabilities, clock = world
    a30, t4 = make_card(api, A30), make_card(api, T4)
    capabilities.run()
    nvml.fail_device(A30, "GPU is lost")
    clock.ticks = 100.0
    report = capabilities.run()
    assert report.failing == {a30: "NVMLQueryFailed"}
    assert health_of(api, a30) == ("True", "NVMLHealthy")  # inside the grace
    assert report.retry_in == 5
    clock.ticks = 102.0
    assert capabilities.run().failing == {a30: "waiting for retry"}  # backoff respected
    clock.ticks = 131.0
    capabilities.run()
    assert health_of(api, a30) == ("Unknown", "NVMLQueryFailed")
    assert (
        "GPU is lost"
        in next(c for c in status_of(api, a30)["conditions"] if c["type"] == "HardwareHealthy")["message"]
    )
    assert health_of(api, t4) == ("True", "NVMLHealthy")  # the other card is untouched
    nvml.clear_failures()
    clock.ticks = 200.0
    capabilities.run()
    assert health_of(api, a30) == ("True", "NVMLHealthy")
    reasons = [e["reason"] for e in api.list(EVENTS, namespace="default").items]
    assert "HardwareHealthyUnknown" in reasons


def test_missing_library_is_nvml_unavailable_for_every_card(world):
    api, nvml, capabilities, _ = world
    capabilities.settings = HealthSettings(grace_seconds=0, backoff_seconds=(5,))
    a30, t4 = make_card(api, A30), make_card(api, T4)
    nvml.fail_library()
    capabilities.run()
    assert health_of(api, a30) == ("Unknown", "NVMLUnavailable")
    assert health_of(api, t4) == ("Unknown", "NVMLUnavailable")
    assert "capabilities" not in status_of(api, a30)


def test_unsupported_optional_query_is_left_out_not_an_error(world):
    api, nvml, capabilities, _ = world
    name = make_card(api, A30)
    nvml.fail_query(A30, Query.POWER_LIMIT, not_supported=True)
    capabilities.run()
    assert health_of(api, name) == ("True", "NVMLHealthy")
    assert "powerLimitCurrentW" not in status_of(api, name)["currentState"]["nvidia"]


def test_api_failure_of_one_card_does_not_block_another(world):
    api, _, capabilities, _ = world
    make_card(api, A30)
    t4 = make_card(api, T4)
    api.fail_next("patch", Unavailable("etcd timeout"))
    report = capabilities.run()
    assert not report.ok
    assert health_of(api, t4) == ("True", "NVMLHealthy")
    assert capabilities.run().ok


def test_mig_mode_change_is_reported(world):
    api, nvml, capabilities, _ = world
    name = make_card(api, A30)
    capabilities.run()
    nvml.set_mig_mode(A30, pending=True)
    capabilities.run()
    assert status_of(api, name)["currentState"]["nvidia"]["mig"] == {
        "mode": "Disabled",
        "pendingMode": "Enabled",
    }
    nvml.reset(A30)
    capabilities.run()
    assert status_of(api, name)["currentState"]["nvidia"]["mig"] == {"mode": "Enabled"}


def test_report_carries_the_cards_as_stored_after_the_pass(world):
    api, _, capabilities, _ = world
    name = make_card(api, A30)
    report = capabilities.run()
    (card,) = report.cards
    assert card["metadata"]["name"] == name
    assert card == api.get(PHYSICAL_GPUS, name)  # what was written, not what was listed
