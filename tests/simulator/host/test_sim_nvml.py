# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The simulated NVML: snapshots from the model data, every failure mode, MIG mode changes."""

import re
import threading

import pytest

from deckhouse_gpu.ports.nvml import (
    NVML,
    NVMLDeviceNotFound,
    NVMLQueryFailed,
    NVMLUnavailable,
)
from deckhouse_gpu.simulator.host.nvml_data import load_model
from deckhouse_gpu.simulator.host.sim_nvml import (
    OPTIONAL_QUERIES,
    REQUIRED_QUERIES,
    Query,
    SimCard,
    SimNVMLConfigError,
    SimulatedNVML,
    from_model_list,
    simulated_uuid,
)

A30 = "0000:17:00.0"
H100 = "0000:65:00.0"
T4 = "0000:b3:00.0"
UUID = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


@pytest.fixture
def nvml() -> SimulatedNVML:
    return SimulatedNVML({A30: "a30", H100: "h100-80gb", T4: "t4"}, node_name="node-1")


def test_it_is_the_nvml_port(nvml):
    port: NVML = nvml
    assert port.driver().driver_version == "580.82.07"
    assert port.driver().cuda_version == "13.0"


def test_device_addresses_are_sorted_and_lowercase():
    nvml = SimulatedNVML({"0000:B3:00.0": "t4", A30: "a30"})
    assert nvml.device_addresses() == [A30, T4]
    assert nvml.snapshot("0000:B3:00.0").pci_address == T4


def test_snapshot_of_a_mig_card_is_the_model_data(nvml):
    snapshot = nvml.snapshot(H100)
    model = load_model("h100-80gb")
    assert snapshot.name == "NVIDIA H100 80GB HBM3"
    assert snapshot.memory_total_mib == model.memory_total_mib
    assert snapshot.compute_capability == (9, 0)
    assert snapshot.architecture == "Hopper"
    assert snapshot.board_part_number == model.board_part_number
    assert (snapshot.power_limit_min_w, snapshot.power_limit_max_w) == (200, 700)
    assert snapshot.power_limit_current_w == snapshot.power_limit_enforced_w == 700
    assert snapshot.mig_supported
    assert (snapshot.mig_current_enabled, snapshot.mig_pending_enabled) == (False, False)
    assert model.mig is not None
    assert snapshot.mig_profiles == model.mig.profiles


def test_snapshot_of_a_card_without_mig(nvml):
    snapshot = nvml.snapshot(T4)
    assert snapshot.name == "Tesla T4"
    assert not snapshot.mig_supported
    assert snapshot.mig_current_enabled is None
    assert snapshot.mig_pending_enabled is None
    assert snapshot.mig_profiles == ()


def test_uuids_are_stable_per_node_and_slot(nvml):
    first = nvml.snapshot(A30).uuid
    assert UUID.match(first)
    assert first == SimulatedNVML({A30: "a30"}, node_name="node-1").snapshot(A30).uuid
    assert first == simulated_uuid("node-1", A30)
    assert first != SimulatedNVML({A30: "a30"}, node_name="node-2").snapshot(A30).uuid
    assert first != nvml.snapshot(H100).uuid


def test_per_card_overrides():
    nvml = SimulatedNVML({A30: SimCard("a30", uuid="GPU-fixed", mig_current=True)})
    snapshot = nvml.snapshot(A30)
    assert snapshot.uuid == "GPU-fixed"
    assert (snapshot.mig_current_enabled, snapshot.mig_pending_enabled) == (True, True)
    pending_only = SimulatedNVML({A30: SimCard("a30", mig_pending=True)}).snapshot(A30)
    assert (pending_only.mig_current_enabled, pending_only.mig_pending_enabled) == (False, True)


def test_driver_is_settable():
    nvml = SimulatedNVML({}, driver_version="570.172.08", cuda_version="12.8")
    assert (nvml.driver().driver_version, nvml.driver().cuda_version) == ("570.172.08", "12.8")
    nvml.set_driver("580.82.07", None)
    assert nvml.driver().cuda_version is None


def test_an_unknown_address_is_not_found(nvml):
    with pytest.raises(NVMLDeviceNotFound, match=r"0000:99:00\.0"):
        nvml.snapshot("0000:99:00.0")


def test_missing_library_breaks_every_call(nvml):
    nvml.fail_library()
    for call in (nvml.driver, nvml.device_addresses, lambda: nvml.snapshot(A30)):
        with pytest.raises(NVMLUnavailable, match=r"libnvidia-ml\.so\.1: cannot open shared object file"):
            call()


def test_init_failure_breaks_every_call(nvml):
    nvml.fail_init()
    for call in (nvml.driver, nvml.device_addresses, lambda: nvml.snapshot(A30)):
        with pytest.raises(NVMLUnavailable, match="Driver Not Loaded"):
            call()


def test_a_lost_gpu_fails_alone(nvml):
    nvml.fail_device(H100)
    assert H100 in nvml.device_addresses()
    with pytest.raises(NVMLQueryFailed, match="GPU is lost") as caught:
        nvml.snapshot(H100)
    assert (caught.value.pci_address, caught.value.query) == (H100, "nvmlDeviceGetHandleByPciBusId")
    assert nvml.snapshot(A30).name == "NVIDIA A30"


@pytest.mark.parametrize("query", OPTIONAL_QUERIES)
def test_a_query_nvml_does_not_support_leaves_its_field_empty(nvml, query):
    nvml.fail_query(H100, query, not_supported=True)
    snapshot = nvml.snapshot(H100)
    fields = {
        Query.ARCHITECTURE: [snapshot.architecture],
        Query.BOARD_PART: [snapshot.board_part_number],
        Query.POWER_RANGE: [snapshot.power_limit_min_w, snapshot.power_limit_max_w],
        Query.POWER_LIMIT: [snapshot.power_limit_current_w],
        Query.ENFORCED_POWER: [snapshot.power_limit_enforced_w],
        Query.MIG_MODE: [snapshot.mig_current_enabled, snapshot.mig_pending_enabled],
    }
    if query == Query.MIG_PROFILES:
        assert snapshot.mig_profiles == ()
        assert snapshot.mig_supported
    else:
        assert fields.pop(query) == [None] * (2 if query in (Query.POWER_RANGE, Query.MIG_MODE) else 1)
        assert all(value is not None for values in fields.values() for value in values)
    if query == Query.MIG_MODE:
        assert not snapshot.mig_supported
        assert snapshot.mig_profiles == ()
    assert nvml.snapshot(A30).architecture == "Ampere"


@pytest.mark.parametrize("query", REQUIRED_QUERIES + OPTIONAL_QUERIES)
def test_a_failing_query_raises_for_that_card_only(nvml, query):
    nvml.fail_query(H100, query, "Unknown Error")
    with pytest.raises(NVMLQueryFailed) as caught:
        nvml.snapshot(H100)
    assert (caught.value.pci_address, caught.value.query, caught.value.detail) == (
        H100,
        query,
        "Unknown Error",
    )
    assert nvml.snapshot(A30).mig_supported


def test_bad_failure_injection_is_refused(nvml):
    with pytest.raises(SimNVMLConfigError, match="unknown query 'clocks'"):
        nvml.fail_query(A30, "clocks")
    with pytest.raises(SimNVMLConfigError, match="every card"):
        nvml.fail_query(A30, Query.NAME, not_supported=True)
    with pytest.raises(SimNVMLConfigError, match="no simulated card"):
        nvml.fail_device("0000:99:00.0")


def test_clearing_failures_restores_every_card(nvml):
    nvml.fail_device(A30)
    nvml.fail_query(H100, Query.POWER_LIMIT, not_supported=True)
    nvml.fail_init()
    nvml.fail_library()
    nvml.clear_failures()
    assert nvml.driver().driver_version == "580.82.07"
    assert nvml.snapshot(A30).name == "NVIDIA A30"
    assert nvml.snapshot(H100).power_limit_current_w == 700


def test_mig_mode_pending_then_reset(nvml):
    nvml.set_mig_mode(A30, pending=True)
    snapshot = nvml.snapshot(A30)
    assert (snapshot.mig_current_enabled, snapshot.mig_pending_enabled) == (False, True)
    nvml.reset(A30)
    assert nvml.snapshot(A30).mig_current_enabled is True
    nvml.set_mig_mode(A30, current=False, pending=False)
    snapshot = nvml.snapshot(A30)
    assert (snapshot.mig_current_enabled, snapshot.mig_pending_enabled) == (False, False)
    assert nvml.snapshot(H100).mig_current_enabled is False


def test_mig_mode_on_a_card_without_mig(nvml):
    with pytest.raises(NVMLQueryFailed, match="Not Supported"):
        nvml.set_mig_mode(T4, pending=True)
    with pytest.raises(SimNVMLConfigError, match="has no MIG"):
        SimulatedNVML({T4: SimCard("t4", mig_current=True)})


def test_cards_come_and_go(nvml):
    nvml.remove_card(H100)
    assert nvml.device_addresses() == [A30, T4]
    nvml.add_card(H100, "l40s")
    assert nvml.snapshot(H100).name == "NVIDIA L40S"
    with pytest.raises(SimNVMLConfigError, match="not a PCI address"):
        nvml.add_card("17:00", "a30")
    with pytest.raises(SimNVMLConfigError, match="unknown model 'v100'"):
        nvml.add_card("0000:18:00.0", "v100")


def test_from_model_list_matches_models_to_addresses_in_order():
    nvml = from_model_list(" a30, h100-80gb ,t4", [A30, H100, T4], node_name="n", cuda_version=None)
    assert [nvml.snapshot(address).name for address in nvml.device_addresses()] == [
        "NVIDIA A30",
        "NVIDIA H100 80GB HBM3",
        "Tesla T4",
    ]
    assert nvml.driver().cuda_version is None
    assert nvml.snapshot(A30).uuid == simulated_uuid("n", A30)


@pytest.mark.parametrize(
    ("models", "addresses", "message"),
    [
        ("a30,a30", [A30], r"2 models \('a30,a30'\) for 1 PCI addresses"),
        ("", [A30], "0 models"),
        (
            "a30,v100",
            [A30, H100],
            "unknown model 'v100'; known: a100-40gb, a100-80gb, a30, h100-80gb, h200-141gb, l40s, t4",
        ),
        ("a30", ["bad"], "not a PCI address"),
    ],
)
def test_from_model_list_errors(models, addresses, message):
    with pytest.raises(SimNVMLConfigError, match=message):
        from_model_list(models, addresses)


def test_concurrent_readers_and_writers_see_consistent_results(nvml):
    errors: list[BaseException] = []

    def read() -> None:
        for _ in range(300):
            try:
                snapshot = nvml.snapshot(A30)
                assert snapshot.mig_current_enabled in (True, False)
            except (NVMLQueryFailed, NVMLUnavailable):
                pass
            except BaseException as error:  # anything else is a bug in the simulator
                errors.append(error)

    def write() -> None:
        for index in range(300):
            nvml.set_mig_mode(A30, pending=index % 2 == 0)
            nvml.reset(A30)
            nvml.fail_device(A30) if index % 3 == 0 else nvml.clear_failures()

    threads = [threading.Thread(target=read) for _ in range(4)] + [threading.Thread(target=write)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors
