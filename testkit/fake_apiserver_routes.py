# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What the fake API server needs besides HTTP: REST paths, query and body checks, Status objects.

``route`` turns a request path into the resource, namespace, name and subresource it names, as
the real server's routing does; ``status`` and ``error_status`` build the ``Status`` bodies of
its error responses; the other helpers check what the client sent before it reaches the store
and shape what goes back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from deckhouse_gpu.k8s_semantics.apimachinery.label_selector import parse_selector
from deckhouse_gpu.ports.kube import (
    AlreadyExists,
    Conflict,
    Forbidden,
    Invalid,
    KubeError,
    NotFound,
    ObjectList,
    Resource,
    Unavailable,
    WatchExpired,
)

MERGE_PATCH = "application/merge-patch+json"
# The status code and reason the real server answers each error with; the first match wins.
_ERRORS: tuple[tuple[type[KubeError], int, str], ...] = (
    (NotFound, 404, "NotFound"),
    (AlreadyExists, 409, "AlreadyExists"),
    (Conflict, 409, "Conflict"),
    (Invalid, 422, "Invalid"),
    (WatchExpired, 410, "Expired"),
    (Forbidden, 403, "Forbidden"),
    (Unavailable, 503, "ServiceUnavailable"),
    (KubeError, 500, "InternalError"),
)


@dataclass(frozen=True)
class Route:
    resource: Resource
    namespace: str | None
    name: str | None
    subresource: str | None


class HttpError(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason = code, reason


NOT_FOUND = HttpError(404, "NotFound", "the server could not find the requested resource")


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    """A Kubernetes ``Status`` object, the body of every error response."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def error_status(error: KubeError) -> tuple[int, str]:
    """The status code and reason of the response to a store error."""
    return next((code, reason) for kind, code, reason in _ERRORS if isinstance(error, kind))


def route(path: str, resources: Mapping[tuple[str, str, str], Resource]) -> Route:
    """Parses a REST path; ``resources`` are keyed by (group, version, plural)."""
    parts = [unquote(part) for part in path.strip("/").split("/")]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif parts[0] == "apis" and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise NOT_FOUND
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    resource = resources.get((group, version, rest[0] if rest else ""))
    if resource is None or not 1 <= len(rest) <= 3:
        raise NOT_FOUND
    name = rest[1] if len(rest) > 1 else None
    # A namespaced kind is listed across namespaces at its cluster path, nothing more.
    if (namespace is not None and not resource.namespaced) or (
        namespace is None and resource.namespaced and name is not None
    ):
        raise NOT_FOUND
    return Route(resource, namespace, name, rest[2] if len(rest) > 2 else None)


def label_selector(query: Mapping[str, str]) -> str | None:
    """The ``labelSelector`` parameter, refused with 400 when it does not parse."""
    text = query.get("labelSelector")
    try:
        parse_selector(text)
    except ValueError as error:
        raise HttpError(400, "BadRequest", f"unable to parse requirement: {error}") from error
    return text


def with_namespace(body: Any, namespace: str | None) -> Any:
    """The body of a create, given the namespace of its path (which must match its own)."""
    if not isinstance(body, dict):
        raise HttpError(400, "BadRequest", "the object must be a JSON object")
    meta = body.setdefault("metadata", {})
    if namespace is not None and meta.setdefault("namespace", namespace) != namespace:
        raise HttpError(400, "BadRequest", "the namespace of the object does not match the request")
    return body


def merge_patch(content_type: str | None, body: Any) -> dict[str, Any]:
    """The body of a PATCH, which must be a JSON merge patch."""
    media = (content_type or "").split(";")[0].strip()
    if media != MERGE_PATCH:
        raise HttpError(
            415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {media}"
        )
    if not isinstance(body, dict):
        raise HttpError(400, "BadRequest", "a merge patch must be a JSON object")
    return body


def precondition_uid(body: Any) -> str | None:
    """The uid precondition of a DELETE's DeleteOptions, if it has one."""
    options = body if isinstance(body, dict) else {}
    uid: str | None = (options.get("preconditions") or {}).get("uid")
    return uid


def watch_params(query: Mapping[str, str]) -> tuple[str, int]:
    """A watch's resourceVersion and timeoutSeconds, refused with 400 when malformed."""
    version = query.get("resourceVersion", "")
    timeout = query.get("timeoutSeconds", "300")
    if not (version == "" or version.isdigit()) or not timeout.isdigit():
        raise HttpError(400, "BadRequest", "invalid resourceVersion or timeoutSeconds")
    return version, int(timeout)


def decode_body(raw: str) -> tuple[Any, bool]:
    """A request body as JSON (None when empty) and True, or as the raw text and False."""
    try:
        return (json.loads(raw) if raw else None), True
    except ValueError:
        return raw, False


def event_line(type_: str, obj: dict[str, Any]) -> bytes:
    """One event of a watch stream: a JSON object on a line of its own."""
    return json.dumps({"type": type_, "object": obj}).encode() + b"\n"


def list_body(resource: Resource, listed: ObjectList) -> dict[str, Any]:
    """The response to a list: the real server leaves apiVersion and kind out of built-in items."""
    items = [_strip_type(item) for item in listed.items] if not resource.group else listed.items
    return {
        "apiVersion": resource.api_version,
        "kind": f"{resource.kind}List",
        "metadata": {"resourceVersion": listed.resource_version},
        "items": items,
    }


def _strip_type(item: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in item.items() if key not in ("apiVersion", "kind")}
