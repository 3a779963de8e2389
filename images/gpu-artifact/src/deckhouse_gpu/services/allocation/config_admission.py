# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The validating admission of ``gpu.deckhouse.io`` opaque config in DeviceClasses and claims.

Takes the ``request`` of an AdmissionReview v1 and returns its ``response``. Only config entries
whose ``opaque.driver`` is ``gpu.deckhouse.io`` are judged; everything else, and every object
without such an entry, is allowed untouched: the webhook must never block what is not ours.
Denials name the object path of each problem (``spec.devices.config[1].opaque.parameters.sharing
.strategy: ...``). Objects are whatever a client sent, so every field is checked for its type
before use: an odd object gets a clear answer, never an exception.

In claims and templates an MPS config of whole cards may not give a client more of the card's
multiprocessors (``defaultActiveThreadPercentage``) than the share its requests ask for
(``capacity.requests.sharePercent``, default 100), as gpu-handler refuses at prepare; the memory
limit waits for prepare, which knows the card's memory.

On UPDATE only entries that are new or changed are judged; an unchanged entry that no longer
passes (rules tightened by an upgrade of the module) gets a warning, so that a label change of an
old DeviceClass is never refused. gpu-handler decodes the config again at prepare time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deckhouse_gpu.domain.config.opaque_config import ConfigError, decode
from deckhouse_gpu.domain.config.opaque_types import (
    API_VERSION,
    DRIVER,
    GPU_KIND,
    DeviceConfig,
    DeviceType,
    device_type,
)
from deckhouse_gpu.services.allocation.config_admission_shares import above_share, request_shares

GROUP, VERSION = "resource.k8s.io", "v1"
# Where each kind keeps its config list; claims and templates also name their requests there.
CONFIG_PLACES: dict[str, tuple[str, ...]] = {
    "DeviceClass": ("spec",),
    "ResourceClaim": ("spec", "devices"),
    "ResourceClaimTemplate": ("spec", "spec", "devices"),
}
_TYPE_WORDS: dict[DeviceType, str] = {"Physical": "whole cards", "MIG": "MIG devices"}


@dataclass(frozen=True)
class _Entry:
    index: int
    path: str  # e.g. spec.devices.config[1]
    value: Mapping[str, Any]


def review(request: Mapping[str, Any]) -> dict[str, Any]:
    """The AdmissionReview ``response`` for ``request``."""
    uid = request.get("uid")
    response: dict[str, Any] = {"uid": uid if isinstance(uid, str) else "", "allowed": True}
    problems, warnings = _judge(request)
    if problems:
        response["allowed"] = False
        response["status"] = {"code": 422, "reason": "Invalid", "message": "; ".join(problems)}
    if warnings:
        response["warnings"] = warnings
    return response


def _judge(request: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    kind = request.get("kind")
    operation = request.get("operation")
    if operation not in ("CREATE", "UPDATE") or not isinstance(kind, Mapping):
        return [], []
    if kind.get("group") != GROUP or kind.get("version") != VERSION:
        return [], []
    name = kind.get("kind")
    place = CONFIG_PLACES.get(name) if isinstance(name, str) else None
    found = _dig(request.get("object"), place) if place else None
    if place is None or found is None:
        return [], []
    prefix = ".".join(place) + ".config"
    ours = _ours(found.get("config"), prefix)
    if not ours:
        return [], []
    old = _dig(request.get("oldObject"), place) if operation == "UPDATE" else None
    old_ours = [entry.value for entry in _ours(old.get("config"), prefix)] if old is not None else []
    if operation == "UPDATE" and [entry.value for entry in ours] == old_ours:
        return [], []  # nothing of ours changed
    problems: list[str] = []
    warnings: list[str] = []
    requests = _request_names(found) if name != "DeviceClass" else None
    shares = request_shares(found, ".".join(place)) if requests is not None else {}
    targets: dict[int, set[str] | None] = {}
    configs: dict[int, DeviceConfig] = {}
    for entry in ours:
        found_here = _check_entry(entry, configs)
        named: list[str] = []  # requests the entry names that the claim does not have
        if requests is not None:
            targets[entry.index] = _targets(entry, requests, named)
            found_here += above_share(entry.path, configs.get(entry.index), targets[entry.index], shares)
        if entry.value in old_ours:
            warnings += [
                f"{p}; kept because this entry did not change, but gpu-handler refuses it at prepare"
                for p in found_here
            ]
        else:
            problems += found_here
        problems += named
    types = {index: device_type(config) for index, config in configs.items()}
    problems += _overlaps(ours, types, targets, is_class=requests is None)
    return problems, warnings


def _dig(obj: Any, place: tuple[str, ...] | None) -> Mapping[str, Any] | None:
    """The mapping at ``place`` in ``obj``, or None when any step is missing or not an object."""
    for key in place or ():
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj if isinstance(obj, Mapping) else None


def _ours(config: Any, prefix: str) -> list[_Entry]:
    if not isinstance(config, list):
        return []
    found = []
    for index, entry in enumerate(config):
        opaque = entry.get("opaque") if isinstance(entry, Mapping) else None
        if isinstance(opaque, Mapping) and opaque.get("driver") == DRIVER:
            found.append(_Entry(index, f"{prefix}[{index}]", entry))
    return found


def _check_entry(entry: _Entry, configs: dict[int, DeviceConfig]) -> list[str]:
    opaque = entry.value["opaque"]
    where = f"{entry.path}.opaque.parameters"
    if opaque.get("parameters") is None:
        return [f"{where}: required, a {DRIVER} config such as apiVersion: {API_VERSION}, kind: {GPU_KIND}"]
    try:
        configs[entry.index] = decode(opaque["parameters"])
    except ConfigError as error:
        return [str(problem) for problem in error.under(where).problems]
    return []


def _request_names(devices: Mapping[str, Any]) -> dict[str, set[str]]:
    """Request name -> names of its subrequests (``firstAvailable``), from the claim's spec."""
    names: dict[str, set[str]] = {}
    requests = devices.get("requests")
    for request in requests if isinstance(requests, list) else []:
        if isinstance(request, Mapping) and isinstance(request.get("name"), str):
            subrequests = request.get("firstAvailable")
            names[request["name"]] = {
                sub["name"]
                for sub in (subrequests if isinstance(subrequests, list) else [])
                if isinstance(sub, Mapping) and isinstance(sub.get("name"), str)
            }
    return names


def _targets(entry: _Entry, requests: dict[str, set[str]], problems: list[str]) -> set[str] | None:
    """What the entry configures as ``req`` or ``req/sub`` leaves; None: every request."""
    refs = entry.value.get("requests")
    if refs is None or refs == []:
        return None
    if not isinstance(refs, list):
        problems.append(f"{entry.path}.requests: must be an array of request names")
        return set()
    known = ", ".join(sorted(requests)) or "none"
    leaves: set[str] = set()
    for position, ref in enumerate(refs):
        name, slash, sub = ref.partition("/") if isinstance(ref, str) else ("", "", "")
        if not isinstance(ref, str):
            problems.append(f"{entry.path}.requests[{position}]: must be a request name")
        elif name not in requests or (slash and sub not in requests[name]):
            problems.append(
                f'{entry.path}.requests[{position}]: "{ref}" is not a request of this claim '
                f"(its requests: {known})"
            )
        elif slash or not requests[name]:
            leaves.add(ref)
        else:
            leaves |= {f"{name}/{s}" for s in requests[name]}
    return leaves


def _overlaps(
    ours: Sequence[_Entry], types: dict[int, DeviceType], targets: dict[int, set[str] | None], is_class: bool
) -> list[str]:
    """Two configs of one device type for one request leave prepare to guess which one is meant
    (GpuConfig and VfioDeviceConfig both configure whole cards); one object may give each request one."""
    problems = []
    for later_position, later in enumerate(ours):
        for earlier in ours[:later_position]:
            kind = types.get(later.index)
            if kind is None or types.get(earlier.index) != kind:
                continue
            if is_class:
                problems.append(
                    f"{later.path}: the class already configures {_TYPE_WORDS[kind]} "
                    f"at {earlier.path}; give it one such config"
                )
                break
            shared = _shared(targets.get(earlier.index), targets.get(later.index))
            if shared:
                what = "every request" if shared == ["*"] else "request " + ", ".join(shared)
                problems.append(
                    f"{later.path}: {what} already has a config for {_TYPE_WORDS[kind]} "
                    f"at {earlier.path}; give each request one"
                )
                break
    return problems


def _shared(a: set[str] | None, b: set[str] | None) -> list[str]:
    """The requests both configure; ["*"] when both configure every request."""
    if a is None:
        return ["*"] if b is None else sorted(b)
    return sorted(a if b is None else a & b)
