# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The API server's rules for what the components write at run time (not rendered by Helm): Events
(``pkg/apis/core/validation/events.go``, the legacy path our events without ``eventTime`` take) and
``ResourceClaim.status.devices`` (``pkg/apis/resource/validation``: validateDeviceStatus and
metav1's condition rules). Messages name the field as the server does."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from tests.support.k8s_semantics import DNS1123_SUBDOMAIN, qualified_name_errors

CONDITION_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
DEVICE_DATA_LIMIT = 10 * 1024
MAX_CONDITIONS = 8


def event_errors(event: Mapping[str, Any]) -> list[str]:
    errors = []
    metadata = event.get("metadata") or {}
    name, namespace = metadata.get("name", ""), metadata.get("namespace", "")
    if len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        errors.append(
            f"metadata.name: Invalid value: {name!r}: must be a DNS-1123 subdomain of at most 253 characters"
        )
    involved = event.get("involvedObject") or {}
    if involved.get("namespace"):
        if namespace != involved["namespace"]:
            errors.append("involvedObject.namespace: Invalid value: does not match event.namespace")
    elif namespace not in ("", "default"):
        errors.append("involvedObject.namespace: Invalid value: does not match event.namespace")
    if not DNS1123_SUBDOMAIN.match(namespace):
        errors.append(f"namespace: Invalid value: {namespace!r}")
    if event.get("type") not in ("Normal", "Warning"):
        errors.append(f"type: Invalid value: has invalid value: {event.get('type')}")
    reason = event.get("reason", "")
    if not reason or len(reason) > 128:
        errors.append("reason: Invalid value: must be 1 to 128 characters")
    if len(event.get("message", "")) > 1024:
        errors.append("message: Invalid value: can have at most 1024 characters")
    for field in ("firstTimestamp", "lastTimestamp"):
        if field in event and not RFC3339.match(str(event[field])):
            errors.append(f"{field}: Invalid value: not an RFC 3339 time")
    return errors


def _allocated(claim: Mapping[str, Any]) -> set[tuple[str, str, str, str | None]]:
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get(
        "results"
    ) or []
    return {(r["driver"], r["pool"], r["device"], r.get("shareID")) for r in results}


def condition_errors(conditions: list[Mapping[str, Any]], path: str) -> list[str]:
    errors = []
    if len(conditions) > MAX_CONDITIONS:
        errors.append(f"{path}: Too many: {len(conditions)}: must have at most {MAX_CONDITIONS} items")
    seen: set[str] = set()
    for index, condition in enumerate(conditions):
        at = f"{path}[{index}]"
        kind = condition.get("type", "")
        errors += qualified_name_errors(kind, f"{at}.type")
        if kind in seen:
            errors.append(f"{at}.type: Duplicate value: {kind!r}")
        seen.add(kind)
        if condition.get("status") not in ("True", "False", "Unknown"):
            errors.append(f"{at}.status: Unsupported value: {condition.get('status')!r}")
        reason = condition.get("reason", "")
        if not reason or len(reason) > 1024 or not CONDITION_REASON.match(reason):
            errors.append(
                f"{at}.reason: Invalid value: {reason!r}: a condition reason must start with a letter and hold letters, digits, '_', ',' and ':'"
            )
        if len(condition.get("message", "")) > 32768:
            errors.append(f"{at}.message: Too long: may not be more than 32768 bytes")
        if not RFC3339.match(str(condition.get("lastTransitionTime", ""))):
            errors.append(f"{at}.lastTransitionTime: Required value: must be set")
        if int(condition.get("observedGeneration", 0)) < 0:
            errors.append(f"{at}.observedGeneration: Invalid value: must be greater than or equal to zero")
    return errors


def device_status_errors(claim: Mapping[str, Any]) -> list[str]:
    errors = []
    allocated = _allocated(claim)
    seen: set[tuple[str, str, str, str | None]] = set()
    for index, device in enumerate((claim.get("status") or {}).get("devices") or []):
        at = f"status.devices[{index}]"
        key = (
            device.get("driver", ""),
            device.get("pool", ""),
            device.get("device", ""),
            device.get("shareID"),
        )
        if key not in allocated:
            errors.append(f"{at}: Invalid value: {key}: must be an allocated device in the claim")
        if key in seen:
            errors.append(f"{at}: Duplicate value: {key}")
        seen.add(key)
        share = device.get("shareID")
        if share is not None and not UUID.match(share):
            errors.append(f"{at}.shareID: Invalid value: {share!r}: must be a lowercase UUID")
        errors += condition_errors(device.get("conditions") or [], f"{at}.conditions")
        if "data" in device:
            encoded = json.dumps(device["data"], separators=(",", ":"))
            if not isinstance(device["data"], dict):
                errors.append(f"{at}.data: Invalid value: must be a JSON object")
            if len(encoded) > DEVICE_DATA_LIMIT:
                errors.append(f"{at}.data: Too long: may not be more than {DEVICE_DATA_LIMIT} bytes")
    return errors
