# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Checks a CDI spec (a plain JSON dict) the way a container runtime's CDI library would load it.

The rules are CDI v1.1.0 as summarized in KUBERNETES-FACTS.md F7, plus
the library's default validator: known ``cdiVersion`` no older than 0.3.0 and covering every
feature used, ``vendor/class`` kind, device names, at least one device, non-empty device edits,
no unknown fields (the library decodes strictly, so a typo makes the whole file unloadable),
hook names, ``K=V`` environment entries. Paths must be absolute here although the library only
checks that they are set: OCI wants absolute hook paths, and a relative device or mount path
means a bug on our side. Like the ResourceSlice rules, each check appends a Problem naming a JSON
path (``devices[0].containerEdits.mounts[2].hostPath``); an empty list means the spec loads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from deckhouse_gpu.k8s_semantics.problems import Problem
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules_format import as_list, as_map, show

KNOWN_VERSIONS = ("0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0")
OLDEST_LOADABLE = "0.3.0"  # the library refuses anything older
# The library's list: OCI's five plus the deprecated "prestart", which it still accepts.
HOOK_NAMES = frozenset(
    ["prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"]
)
MAX_VENDOR = 253  # the SPEC text's limits; the library itself checks only the characters
MAX_CLASS = 63

_SPEC_FIELDS = frozenset(["cdiVersion", "kind", "annotations", "devices", "containerEdits"])
_DEVICE_FIELDS = frozenset(["name", "annotations", "containerEdits"])
_EDIT_FIELDS = frozenset(
    ["env", "deviceNodes", "hooks", "mounts", "intelRdt", "additionalGids", "netDevices"]
)
_NODE_FIELDS = frozenset(
    ["path", "hostPath", "type", "major", "minor", "fileMode", "permissions", "uid", "gid"]
)
_MOUNT_FIELDS = frozenset(["hostPath", "containerPath", "options", "type"])
_HOOK_FIELDS = frozenset(["hookName", "path", "args", "env", "timeout"])
_RDT_FIELDS = frozenset(
    ["closID", "l3CacheSchema", "memBwSchema", "enableCMT", "enableMBM", "schemata", "enableMonitoring"]
)
_NET_FIELDS = frozenset(["hostInterfaceName", "name"])
_NODE_TYPES = frozenset("bcup")

_KIND_PART = re.compile(r"[A-Za-z](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?")
_DEVICE_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.:-]*[A-Za-z0-9])?")


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def is_device_name(name: str) -> bool:
    return _DEVICE_NAME.fullmatch(name) is not None


def split_kind(kind: str) -> tuple[str, str] | None:
    """``vendor/class`` -> (vendor, class) when both parts are valid names; None otherwise."""
    vendor, slash, klass = kind.partition("/")
    if not slash or not _KIND_PART.fullmatch(vendor) or not _KIND_PART.fullmatch(klass):
        return None
    if len(vendor) > MAX_VENDOR or len(klass) > MAX_CLASS:
        return None
    return vendor, klass


def split_qualified_id(text: str) -> tuple[str, str, str] | None:
    """``vendor/class=name`` (what DRA's cdi_device_ids carry) -> its parts; None when malformed."""
    kind, equals, name = text.partition("=")
    parts = split_kind(kind)
    if not equals or parts is None or not is_device_name(name):
        return None
    return parts[0], parts[1], name


def _edits(spec: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    found = []
    if isinstance(spec.get("containerEdits"), Mapping):
        found.append(("containerEdits", spec["containerEdits"]))
    devices = spec.get("devices")
    for index, device in enumerate(devices if isinstance(devices, list) else []):
        if isinstance(device, Mapping) and isinstance(device.get("containerEdits"), Mapping):
            found.append((f"devices[{index}].containerEdits", device["containerEdits"]))
    return found


def features(spec: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(minimum version, JSON path, feature) for every versioned feature the spec uses."""
    found: list[tuple[str, str, str]] = []
    if spec.get("annotations"):
        found.append(("0.6.0", "annotations", "spec annotations"))
    kind = spec.get("kind")
    if isinstance(kind, str) and "." in kind.partition("/")[2]:
        found.append(("0.6.0", "kind", "a '.' in the class name"))
    devices = spec.get("devices")
    for index, device in enumerate(devices if isinstance(devices, list) else []):
        if not isinstance(device, Mapping):
            continue
        name = device.get("name")
        if isinstance(name, str) and name and not name[0].isalpha():
            found.append(("0.5.0", f"devices[{index}].name", "a device name not starting with a letter"))
        if device.get("annotations"):
            found.append(("0.6.0", f"devices[{index}].annotations", "device annotations"))
    for path, edits in _edits(spec):
        for kind_key, field, version, feature in (
            ("deviceNodes", "hostPath", "0.5.0", "deviceNode hostPath"),
            ("mounts", "type", "0.4.0", "mount type"),
        ):
            items = edits.get(kind_key)
            for index, item in enumerate(items if isinstance(items, list) else []):
                if isinstance(item, Mapping) and item.get(field):
                    found.append((version, f"{path}.{kind_key}[{index}].{field}", feature))
        rdt = edits.get("intelRdt")
        if rdt is not None:
            found.append(("0.7.0", f"{path}.intelRdt", "intelRdt"))
            if isinstance(rdt, Mapping) and ("schemata" in rdt or "enableMonitoring" in rdt):
                found.append(("1.1.0", f"{path}.intelRdt", "intelRdt schemata/enableMonitoring"))
        if edits.get("additionalGids"):
            found.append(("0.7.0", f"{path}.additionalGids", "additionalGids"))
        if edits.get("netDevices"):
            found.append(("1.1.0", f"{path}.netDevices", "netDevices"))
    return found


def required_version(spec: Mapping[str, Any]) -> str:
    """The lowest cdiVersion that loads this spec: runtimes refuse versions newer than they know."""
    return max((version for version, _, _ in features(spec)), key=version_key, default=OLDEST_LOADABLE)


def validate_spec(spec: Any) -> list[Problem]:
    """Everything that would stop a runtime from loading ``spec``; empty when it loads."""
    out: list[Problem] = []
    if not isinstance(spec, Mapping):
        return [Problem("", f"{show(spec)} is not a JSON object")]
    _unknown(spec, _SPEC_FIELDS, "", out)
    _check_version(spec, out)
    kind = spec.get("kind")
    if not isinstance(kind, str):
        out.append(Problem("kind", "required" if kind is None else f"{show(kind)} is not a string"))
    elif split_kind(kind) is None:
        out.append(Problem("kind", f"{show(kind)} is not vendor/class (letters first, alphanumeric ends)"))
    _check_annotations(spec.get("annotations"), "annotations", out)
    devices = as_list(spec.get("devices"), "devices", out)
    if not devices:
        out.append(Problem("devices", "at least one device is required"))
    seen: dict[str, int] = {}
    for index, device in enumerate(devices):
        path = f"devices[{index}]"
        entry = as_map(device, path, out)
        _unknown(entry, _DEVICE_FIELDS, path, out)
        name = entry.get("name")
        if not isinstance(name, str) or not is_device_name(name):
            rule = "required" if name is None else f"{show(name)} is not a device name"
            out.append(Problem(f"{path}.name", rule + " (alphanumeric ends; '_', '-', '.', ':' inside)"))
        elif name in seen:
            out.append(Problem(f"{path}.name", f"duplicates devices[{seen[name]}].name"))
        else:
            seen[name] = index
        _check_annotations(entry.get("annotations"), f"{path}.annotations", out)
        edits = entry.get("containerEdits")
        if not _has_edits(edits):
            out.append(Problem(f"{path}.containerEdits", "a device needs at least one container edit"))
        _check_edits(edits, f"{path}.containerEdits", out)
    _check_edits(spec.get("containerEdits"), "containerEdits", out)
    return out


def _check_version(spec: Mapping[str, Any], out: list[Problem]) -> None:
    declared = spec.get("cdiVersion")
    if not isinstance(declared, str):
        out.append(
            Problem("cdiVersion", "required" if declared is None else f"{show(declared)} is not a string")
        )
    elif declared not in KNOWN_VERSIONS:
        out.append(
            Problem("cdiVersion", f"{show(declared)} is not a known version ({', '.join(KNOWN_VERSIONS)})")
        )
    elif version_key(declared) < version_key(OLDEST_LOADABLE):
        out.append(Problem("cdiVersion", f"{declared} is older than {OLDEST_LOADABLE}, the oldest loaded"))
    else:
        for version, path, feature in features(spec):
            if version_key(version) > version_key(declared):
                out.append(
                    Problem(path, f"{feature} needs cdiVersion {version}, the spec declares {declared}")
                )


def _unknown(value: Mapping[str, Any], known: frozenset[str], path: str, out: list[Problem]) -> None:
    for key in value:
        if key not in known:
            out.append(
                Problem(f"{path}.{key}" if path else str(key), "unknown field (the file would not load)")
            )


def _has_edits(edits: Any) -> bool:
    return isinstance(edits, Mapping) and any(edits.get(key) for key in _EDIT_FIELDS)


def _check_annotations(value: Any, path: str, out: list[Problem]) -> None:
    for key, text in as_map(value, path, out).items():
        if not isinstance(text, str):
            out.append(Problem(f"{path}.{key}", f"{show(text)} is not a string"))


def _check_env(value: Any, path: str, out: list[Problem]) -> None:
    for index, entry in enumerate(as_list(value, path, out)):
        if not isinstance(entry, str) or entry.find("=") <= 0:
            out.append(Problem(f"{path}[{index}]", f"{show(entry)} is not KEY=VALUE with a non-empty key"))


def _check_path(value: Any, path: str, out: list[Problem], required: bool = True) -> None:
    if value is None and not required:
        return
    if not isinstance(value, str) or not value.startswith("/"):
        out.append(Problem(path, "required" if value is None else f"{show(value)} is not an absolute path"))


def _check_count(value: Any, path: str, out: list[Problem], least: int = 0) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < least):
        out.append(Problem(path, f"{show(value)} is not an integer >= {least}"))


def _check_strings(value: Any, path: str, out: list[Problem]) -> None:
    for index, entry in enumerate(as_list(value, path, out)):
        if not isinstance(entry, str):
            out.append(Problem(f"{path}[{index}]", f"{show(entry)} is not a string"))


def _check_edits(value: Any, path: str, out: list[Problem]) -> None:
    edits = as_map(value, path, out)
    _unknown(edits, _EDIT_FIELDS, path, out)
    _check_env(edits.get("env"), f"{path}.env", out)
    for index, node in enumerate(as_list(edits.get("deviceNodes"), f"{path}.deviceNodes", out)):
        where = f"{path}.deviceNodes[{index}]"
        entry = as_map(node, where, out)
        _unknown(entry, _NODE_FIELDS, where, out)
        _check_path(entry.get("path"), f"{where}.path", out)
        _check_path(entry.get("hostPath"), f"{where}.hostPath", out, required=False)
        if entry.get("type") is not None and entry["type"] not in _NODE_TYPES:
            out.append(Problem(f"{where}.type", f"{show(entry['type'])} is not one of b, c, u, p"))
        for field in ("major", "minor", "fileMode", "uid", "gid"):
            _check_count(entry.get(field), f"{where}.{field}", out)
        permissions = entry.get("permissions")
        if permissions is not None and (not isinstance(permissions, str) or permissions.strip("rwm")):
            out.append(Problem(f"{where}.permissions", f"{show(permissions)} is not made of r, w, m"))
    for index, mount in enumerate(as_list(edits.get("mounts"), f"{path}.mounts", out)):
        where = f"{path}.mounts[{index}]"
        entry = as_map(mount, where, out)
        _unknown(entry, _MOUNT_FIELDS, where, out)
        _check_path(entry.get("hostPath"), f"{where}.hostPath", out)
        _check_path(entry.get("containerPath"), f"{where}.containerPath", out)
        _check_strings(entry.get("options"), f"{where}.options", out)
    for index, hook in enumerate(as_list(edits.get("hooks"), f"{path}.hooks", out)):
        where = f"{path}.hooks[{index}]"
        entry = as_map(hook, where, out)
        _unknown(entry, _HOOK_FIELDS, where, out)
        if entry.get("hookName") not in HOOK_NAMES:
            out.append(Problem(f"{where}.hookName", f"{show(entry.get('hookName'))} is not an OCI hook name"))
        _check_path(entry.get("path"), f"{where}.path", out)
        _check_strings(entry.get("args"), f"{where}.args", out)
        _check_env(entry.get("env"), f"{where}.env", out)
        _check_count(entry.get("timeout"), f"{where}.timeout", out, least=1)
    if edits.get("intelRdt") is not None:
        _unknown(as_map(edits["intelRdt"], f"{path}.intelRdt", out), _RDT_FIELDS, f"{path}.intelRdt", out)
    for index, gid in enumerate(as_list(edits.get("additionalGids"), f"{path}.additionalGids", out)):
        _check_count(gid, f"{path}.additionalGids[{index}]", out)
    for index, device in enumerate(as_list(edits.get("netDevices"), f"{path}.netDevices", out)):
        where = f"{path}.netDevices[{index}]"
        entry = as_map(device, where, out)
        _unknown(entry, _NET_FIELDS, where, out)
        for field in ("hostInterfaceName", "name"):
            if not isinstance(entry.get(field), str) or not entry[field]:
                out.append(Problem(f"{where}.{field}", "required (a non-empty string)"))
