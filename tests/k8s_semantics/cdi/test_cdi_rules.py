# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import copy

import pytest

from deckhouse_gpu.k8s_semantics.cdi.cdi_rules import (
    KNOWN_VERSIONS,
    is_device_name,
    required_version,
    split_kind,
    split_qualified_id,
    validate_spec,
)

E = "containerEdits"
D0 = "devices[0]"


def valid_spec():
    return {
        "cdiVersion": "0.3.0",
        "kind": "gpu.deckhouse.io/gpu",
        "devices": [
            {"name": "gpu-0000-17-00-0", E: {"deviceNodes": [{"path": "/dev/nvidia0"}]}},
            {
                "name": "gpu-0000-b1-00-0",
                E: {"deviceNodes": [{"path": "/dev/nvidia1", "type": "c", "major": 195}]},
            },
        ],
        E: {
            "env": ["NVIDIA_VISIBLE_DEVICES=void"],
            "deviceNodes": [{"path": "/dev/nvidiactl", "permissions": "rw"}],
            "mounts": [
                {
                    "hostPath": "/run/nvidia/driver/usr/bin/nvidia-smi",
                    "containerPath": "/usr/bin/nvidia-smi",
                    "options": ["ro", "nosuid", "nodev", "rbind", "rprivate"],
                }
            ],
            "hooks": [
                {
                    "hookName": "createContainer",
                    "path": "/var/lib/kubelet/plugins/gpu.deckhouse.io/nvidia-cdi-hook",
                    "args": ["nvidia-cdi-hook", "update-ldcache", "--folder", "/usr/lib/x86_64-linux-gnu"],
                    "env": ["NVIDIA_CTK_DEBUG=false"],
                    "timeout": 10,
                }
            ],
        },
    }


def test_a_valid_spec_has_no_problems():
    assert validate_spec(valid_spec()) == []


def _set(path, value):
    def apply(spec):
        *parents, last = path
        target = spec
        for key in parents:
            target = target[key]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value

    return apply


_DELETE = object()
NODE = (E, "deviceNodes", 0)
MOUNT = (E, "mounts", 0)
HOOK = (E, "hooks", 0)

BROKEN = [
    # versions
    (_set(("cdiVersion",), _DELETE), "cdiVersion", "required"),
    (_set(("cdiVersion",), "0.9.0"), "cdiVersion", "not a known version"),
    (_set(("cdiVersion",), "0.2.0"), "cdiVersion", "older than 0.3.0"),
    (_set(("cdiVersion",), 5), "cdiVersion", "not a string"),
    (_set(("devices", 0, "name"), "0gpu"), f"{D0}.name", "needs cdiVersion 0.5.0"),
    (_set((*NODE, "hostPath"), "/dev/nvidiactl"), f"{E}.deviceNodes[0].hostPath", "needs cdiVersion 0.5.0"),
    (_set((*MOUNT, "type"), "bind"), f"{E}.mounts[0].type", "mount type needs cdiVersion 0.4.0"),
    (_set(("annotations",), {"a": "b"}), "annotations", "needs cdiVersion 0.6.0"),
    (_set(("kind",), "gpu.deckhouse.io/gpu.v1"), "kind", "needs cdiVersion 0.6.0"),
    (_set((E, "additionalGids"), [44]), f"{E}.additionalGids", "needs cdiVersion 0.7.0"),
    (_set((E, "netDevices"), [{"hostInterfaceName": "eth1", "name": "net1"}]), f"{E}.netDevices", "1.1.0"),
    # kind
    (_set(("kind",), _DELETE), "kind", "required"),
    (_set(("kind",), "gpu.deckhouse.io"), "kind", "is not vendor/class"),
    (_set(("kind",), "gpu.deckhouse.io/-gpu"), "kind", "is not vendor/class"),
    (_set(("kind",), "1vendor/gpu"), "kind", "is not vendor/class"),
    (_set(("kind",), "gpu.deckhouse.io/" + "g" * 64), "kind", "is not vendor/class"),
    # devices
    (_set(("devices",), []), "devices", "at least one device"),
    (_set(("devices",), _DELETE), "devices", "at least one device"),
    (_set(("devices",), {"name": "x"}), "devices", "not a JSON array"),
    (_set(("devices", 0, "name"), _DELETE), f"{D0}.name", "required"),
    (_set(("devices", 0, "name"), "gpu-"), f"{D0}.name", "is not a device name"),
    (_set(("devices", 0, "name"), "gpu/0"), f"{D0}.name", "is not a device name"),
    (_set(("devices", 1, "name"), "gpu-0000-17-00-0"), "devices[1].name", "duplicates devices[0].name"),
    (_set(("devices", 0, E), {}), f"{D0}.{E}", "at least one container edit"),
    (_set(("devices", 0, E), _DELETE), f"{D0}.{E}", "at least one container edit"),
    (_set(("devices", 0, "edits"), {}), f"{D0}.edits", "unknown field"),
    # unknown fields
    (_set(("version",), "0.3.0"), "version", "unknown field"),
    (_set((E, "devices"), []), f"{E}.devices", "unknown field"),
    (_set((*NODE, "name"), "ctl"), f"{E}.deviceNodes[0].name", "unknown field"),
    (_set((*MOUNT, "readOnly"), True), f"{E}.mounts[0].readOnly", "unknown field"),
    (_set((*HOOK, "name"), "x"), f"{E}.hooks[0].name", "unknown field"),
    # env
    (_set((E, "env"), ["NVIDIA_VISIBLE_DEVICES"]), f"{E}.env[0]", "not KEY=VALUE"),
    (_set((E, "env"), ["=void"]), f"{E}.env[0]", "not KEY=VALUE"),
    (_set((E, "env"), "A=B"), f"{E}.env", "not a JSON array"),
    (_set((*HOOK, "env"), ["DEBUG"]), f"{E}.hooks[0].env[0]", "not KEY=VALUE"),
    # device nodes
    (_set((*NODE, "path"), _DELETE), f"{E}.deviceNodes[0].path", "required"),
    (_set((*NODE, "path"), "dev/nvidiactl"), f"{E}.deviceNodes[0].path", "not an absolute path"),
    (_set((*NODE, "type"), "x"), f"{E}.deviceNodes[0].type", "not one of b, c, u, p"),
    (_set((*NODE, "major"), -1), f"{E}.deviceNodes[0].major", "not an integer >= 0"),
    (_set((*NODE, "minor"), "0"), f"{E}.deviceNodes[0].minor", "not an integer >= 0"),
    (_set((*NODE, "permissions"), "rwx"), f"{E}.deviceNodes[0].permissions", "not made of r, w, m"),
    # mounts
    (_set((*MOUNT, "hostPath"), _DELETE), f"{E}.mounts[0].hostPath", "required"),
    (_set((*MOUNT, "containerPath"), "usr/bin/nvidia-smi"), f"{E}.mounts[0].containerPath", "absolute"),
    (_set((*MOUNT, "options"), ["ro", 1]), f"{E}.mounts[0].options[1]", "not a string"),
    # hooks
    (_set((*HOOK, "hookName"), "preStart"), f"{E}.hooks[0].hookName", "not an OCI hook name"),
    (_set((*HOOK, "hookName"), _DELETE), f"{E}.hooks[0].hookName", "not an OCI hook name"),
    (_set((*HOOK, "path"), "nvidia-cdi-hook"), f"{E}.hooks[0].path", "not an absolute path"),
    (_set((*HOOK, "path"), _DELETE), f"{E}.hooks[0].path", "required"),
    (_set((*HOOK, "timeout"), 0), f"{E}.hooks[0].timeout", "not an integer >= 1"),
    (_set((*HOOK, "args"), "update-ldcache"), f"{E}.hooks[0].args", "not a JSON array"),
]


@pytest.mark.parametrize(("mutate", "path", "text"), BROKEN)
def test_each_broken_rule_is_reported_at_its_path(mutate, path, text):
    spec = copy.deepcopy(valid_spec())
    mutate(spec)
    problems = validate_spec(spec)
    assert any(problem.path == path and text in problem.rule for problem in problems), problems


def test_a_non_object_is_one_problem():
    assert [str(problem) for problem in validate_spec(["spec"])] == [': ["spec"] is not a JSON object']


def test_problems_are_all_reported_in_one_pass():
    spec = valid_spec()
    spec["kind"] = "nope"
    spec["devices"][1]["name"] = "gpu-0000-17-00-0"
    spec[E]["env"] = ["X"]
    assert {problem.path for problem in validate_spec(spec)} == {"kind", "devices[1].name", f"{E}.env[0]"}


def test_prestart_is_still_a_hook_name_the_library_accepts():
    spec = valid_spec()
    spec[E]["hooks"][0]["hookName"] = "prestart"
    assert validate_spec(spec) == []


def test_newer_features_validate_when_declared():
    spec = valid_spec()
    spec["cdiVersion"] = "1.1.0"
    spec[E]["netDevices"] = [{"hostInterfaceName": "eth1", "name": "net1"}]
    spec[E]["intelRdt"] = {"closID": "gpu", "schemata": ["L3:0=ff"]}
    spec["devices"][0]["annotations"] = {"gpu.deckhouse.io/card": "0"}
    assert validate_spec(spec) == []
    assert required_version(spec) == "1.1.0"


@pytest.mark.parametrize(
    ("change", "version"),
    [
        (lambda s: None, "0.3.0"),
        (lambda s: s[E]["mounts"][0].update(type="bind"), "0.4.0"),
        (lambda s: s["devices"][0].update(name="7-gpu"), "0.5.0"),
        (lambda s: s[E]["deviceNodes"][0].update(hostPath="/dev/nvidiactl"), "0.5.0"),
        (lambda s: s["devices"][0].update(annotations={"a": "b"}), "0.6.0"),
        (lambda s: s[E].update(intelRdt={"closID": "x"}), "0.7.0"),
        (lambda s: s[E].update(intelRdt={"enableMonitoring": True}), "1.1.0"),
    ],
)
def test_the_required_version_is_the_highest_feature_used(change, version):
    spec = valid_spec()
    change(spec)
    assert required_version(spec) == version
    spec["cdiVersion"] = version
    assert validate_spec(spec) == []


def test_every_known_version_is_ordered():
    assert list(KNOWN_VERSIONS) == sorted(KNOWN_VERSIONS, key=lambda v: tuple(map(int, v.split("."))))


def test_names_and_qualified_ids():
    assert is_device_name("0f6c3f55-3c2e-4a53-9a53-2b0b1a6c9f10-gpu-0")
    assert is_device_name("a:b_c.d")
    assert not is_device_name("-a")
    assert not is_device_name("")
    assert split_kind("gpu.deckhouse.io/gpu") == ("gpu.deckhouse.io", "gpu")
    assert split_kind("gpu.deckhouse.io/") is None
    assert split_qualified_id("gpu.deckhouse.io/gpu=uid-gpu-0") == ("gpu.deckhouse.io", "gpu", "uid-gpu-0")
    assert split_qualified_id("gpu.deckhouse.io/gpu") is None
    assert split_qualified_id("gpu.deckhouse.io/gpu=") is None
