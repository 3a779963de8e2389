# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The chart's settings checked for their effect on the rendered workloads: the nodes each DaemonSet
selects, the handler's rollout, environment and driver-root mounts, high availability, the
controller's view of the validator, monitoring on and off, and the log level.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.module.helm_render_sets import RENDERED, containers, env, handler, own_containers, pod_spec
from tests.support.helm_chart import render
from tests.support.module_values import module_values


def test_the_node_runtime_selects_the_labels_the_hook_keeps() -> None:
    from lib.gpu_node_labels import HANDLER_LABEL, LABEL_VALUE, VALIDATOR_LABEL  # noqa: PLC0415

    rendered = RENDERED["defaults"]
    wanted = {
        "gpu-handler": HANDLER_LABEL,
        "nvidia-dcgm-exporter": HANDLER_LABEL,
        "nvidia-driver-validator": VALIDATOR_LABEL,
    }
    for name, label in wanted.items():
        spec = pod_spec(rendered.get("DaemonSet", name))
        assert spec["nodeSelector"] == {label: LABEL_VALUE}, name
        assert "affinity" not in spec, name  # nothing per node in the template


def test_the_handler_surges_on_update_and_knows_its_pod_uid() -> None:
    daemonset = handler(RENDERED["defaults"])
    assert daemonset["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }
    (main,) = own_containers(daemonset)
    variables = env(main)
    assert variables["POD_UID"] == {"fieldRef": {"fieldPath": "metadata.uid"}}
    assert variables["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert main["command"] == ["gpu-handler", "run"]
    (prestart,) = pod_spec(daemonset)["initContainers"]
    assert prestart["command"] == ["gpu-handler", "prestart"]
    assert prestart["securityContext"]["runAsNonRoot"] is True  # only the main container is privileged
    mounts = {m["mountPath"] for m in main["volumeMounts"]}
    assert {"/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry", "/etc/cdi"} <= mounts


def driver_mounts(workload: dict[str, Any]) -> list[tuple[str, str, str | None, str]]:
    volumes = {v["name"]: v for v in pod_spec(workload)["volumes"]}
    found = []
    for container in containers(workload):
        for mount in container.get("volumeMounts", []):
            if mount["name"] == "driver-root":
                host = volumes["driver-root"]["hostPath"]["path"]
                found.append((container["name"], host, mount.get("mountPropagation"), mount["mountPath"]))
    return found


@pytest.mark.parametrize("workload", ["gpu-handler", "nvidia-driver-validator", "nvidia-dcgm-exporter"])
def test_the_driver_root_is_mounted_as_section_10_4_says(workload: str) -> None:
    host_root = RENDERED["defaults"].get("DaemonSet", workload)
    for _, host, propagation, path in driver_mounts(host_root):
        assert (host, propagation, path) == ("/", None, "/driver-root")
    container = RENDERED["containerised-driver"].get("DaemonSet", workload)
    mounts = driver_mounts(container)
    assert mounts
    for _, host, propagation, path in mounts:
        assert (host, propagation, path) == ("/run/nvidia", "HostToContainer", "/driver-root-parent")
    for item in containers(container):
        variables = env(item)
        if "NVIDIA_DRIVER_ROOT" in variables:
            assert variables["NVIDIA_DRIVER_ROOT"] == "/run/nvidia/driver"
            assert variables["NVIDIA_DRIVER_ROOT_MOUNT"] == "/driver-root-parent/driver"


def test_the_handler_gets_the_cdi_root_dra_modes_and_grace_period() -> None:
    (main,) = own_containers(handler(RENDERED["containerised-driver"]))
    variables = env(main)
    assert variables["CDI_ROOT"] == "/var/run/cdi"
    assert variables["HOST_DRIVER_ROOT"] == "/run/nvidia/driver"
    assert {m["mountPath"] for m in main["volumeMounts"]} >= {"/var/run/cdi"}
    custom = render(
        module_values(
            {
                "dra": {
                    "partitionableDevices": "Disabled",
                    "consumableCapacity": "Enabled",
                    "deviceTaints": "Disabled",
                },
                "health": {"gracePeriodSeconds": 90},
            }
        )
    )
    (main,) = own_containers(handler(custom))
    variables = env(main)
    assert (variables["DRA_PARTITIONABLE"], variables["DRA_CONSUMABLE_CAPACITY"]) == ("off", "on")
    assert variables["DRA_DEVICE_TAINTS"] == "off"
    assert "--health-grace-seconds=90" in main["args"]
    (default,) = own_containers(handler(RENDERED["defaults"]))
    assert (env(default)["DRA_PARTITIONABLE"], env(default)["DRA_CONSUMABLE_CAPACITY"]) == ("auto", "auto")
    assert env(default)["DRA_DEVICE_TAINTS"] == "auto"
    assert "--health-grace-seconds=30" in default["args"]


@pytest.mark.parametrize(("name", "replicas"), [("defaults", 1), ("ha", 2), ("cluster-ha", 2)])
def test_high_availability_gives_two_spread_replicas(name: str, replicas: int) -> None:
    deployment = RENDERED[name].get("Deployment", "gpu-controller")
    assert deployment["spec"]["replicas"] == replicas
    anti = (pod_spec(deployment).get("affinity") or {}).get("podAntiAffinity")
    assert (anti is not None) == (replicas == 2)


def test_ha_can_be_turned_off_on_an_ha_cluster() -> None:
    rendered = render(module_values({"highAvailability": False}, cluster_ha=True))
    assert rendered.get("Deployment", "gpu-controller")["spec"]["replicas"] == 1


def test_the_controller_reads_the_validator_pods_by_their_label() -> None:
    controller = RENDERED["defaults"].get("Deployment", "gpu-controller")
    (container,) = own_containers(controller)
    selector = next(a.split("=", 1)[1] for a in container["args"] if a.startswith("--validator-selector="))
    key, value = selector.split("=")
    validator = RENDERED["defaults"].get("DaemonSet", "nvidia-driver-validator")
    assert validator["spec"]["template"]["metadata"]["labels"][key] == value
    assert validator["spec"]["template"]["spec"]["containers"][0]["command"] == [
        "gpu-handler",
        "validate-driver",
    ]


def test_monitoring_off_removes_dcgm_and_its_scrape() -> None:
    rendered = RENDERED["monitoring-off"]
    assert rendered.find("DaemonSet", "nvidia-dcgm-exporter") is None
    assert rendered.find("ServiceMonitor", "gpu-nvidia-dcgm-exporter") is None
    assert rendered.find("ServiceMonitor", "gpu-gpu-controller") is not None
    assert RENDERED["defaults"].find("DaemonSet", "nvidia-dcgm-exporter") is not None


def test_the_node_agent_skips_the_control_plane_and_opted_out_and_unselected_nodes() -> None:
    agent = RENDERED["module-registry"].get("DaemonSet", "gpu-node-agent")
    spec = pod_spec(agent)
    assert spec["nodeSelector"] == {"node.deckhouse.io/group": "gpu"}
    (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    keys = {(e["key"], e["operator"]) for e in term["matchExpressions"]}
    assert keys == {
        ("node-role.kubernetes.io/control-plane", "DoesNotExist"),
        ("gpu.deckhouse.io/disabled", "DoesNotExist"),
    }
    custom = render(module_values({"managedNodes": {"optOutLabel": "example.com/no-gpu"}}))
    (term,) = pod_spec(custom.get("DaemonSet", "gpu-node-agent"))["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert ("example.com/no-gpu", "DoesNotExist") in {
        (e["key"], e["operator"]) for e in term["matchExpressions"]
    }


def test_log_level_reaches_every_component() -> None:
    for workload in RENDERED["module-registry"].workloads():
        for container in containers(workload, init=False):
            if "LOG_LEVEL" in env(container):
                assert env(container)["LOG_LEVEL"] == "debug"
