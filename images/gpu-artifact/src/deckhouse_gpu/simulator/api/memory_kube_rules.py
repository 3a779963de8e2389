# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The API server rules the in-memory store applies, as functions of the objects alone.

``MemoryKube`` keeps the state (the objects, the global revision, the change history) and the
locking; what the real API server checks or fills in on each request lives here, stateless:
namespace scope, label selectors, the defaults and generateName of a create, a device taint's
``timeAdded``, the preconditions of a patch, the fields the server owns, the status subresource,
generation, and what a watch sees of a change.
"""

from __future__ import annotations

import copy
import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from deckhouse_gpu.k8s_semantics.apimachinery.label_selector import Selector, parse_selector
from deckhouse_gpu.k8s_semantics.apimachinery.merge_patch import apply_patch
from deckhouse_gpu.ports.kube import Conflict, Invalid, NotFound, Object, Resource, WatchEvent

Kind = tuple[str, str]  # (group, plural): the same objects whatever the version
Key = tuple[str | None, str]  # (namespace, name)
EventType = Literal["ADDED", "MODIFIED", "DELETED"]
# Kubernetes leaves vowels out of generated names so that they never spell words.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
# Metadata the server sets and a patch of the main resource cannot change.
_SERVER_OWNED = ("name", "namespace", "uid", "creationTimestamp", "generation", "resourceVersion")


@dataclass(frozen=True)
class Change:
    revision: int
    kind: Kind
    type: EventType
    object: Object
    previous: Object | None  # lets a watch see an object enter or leave its label selector


def kind_of(resource: Resource) -> Kind:
    return (resource.group, resource.plural)


def key_of(resource: Resource, namespace: str | None, name: str) -> Key:
    check_scope(resource, namespace, required=True)
    return (namespace, name)


def check_scope(resource: Resource, namespace: str | None, *, required: bool) -> None:
    if resource.namespaced and required and not namespace:
        raise Invalid(f"{resource.plural} are namespaced: a namespace is required")
    if not resource.namespaced and namespace:
        raise Invalid(f"{resource.plural} are cluster-scoped: no namespace may be given")


# The fields the API server lets the module select by (Pods: spec.nodeName, status.phase;
# ResourceSlices: spec.nodeName, spec.driver; every kind: metadata.name, metadata.namespace).
SELECTABLE_FIELDS = frozenset(
    {"metadata.name", "metadata.namespace", "spec.nodeName", "spec.driver", "status.phase"}
)


@dataclass(frozen=True)
class FieldTerm:
    path: tuple[str, ...]
    value: str
    equal: bool

    def matches(self, obj: Object) -> bool:
        found: Any = obj
        for key in self.path:
            found = found.get(key) if isinstance(found, dict) else None
        return (str(found or "") == self.value) == self.equal


@dataclass(frozen=True)
class ObjectSelector:
    """A label selector and the field selector terms (``path=value``, ``path!=value``)."""

    labels: Selector
    fields: tuple[FieldTerm, ...] = ()

    def matches(self, obj: Object) -> bool:
        return all(term.matches(obj) for term in self.fields) and self.labels.matches(labels(obj))


def selector(text: str | None, field_selector: str | None = None) -> ObjectSelector:
    try:
        chosen = parse_selector(text)
    except ValueError as error:
        raise Invalid(str(error)) from error
    return ObjectSelector(chosen, field_terms(field_selector or ""))


def field_terms(text: str) -> tuple[FieldTerm, ...]:
    terms = []
    for term in filter(None, text.split(",")):
        if "=" not in term:
            raise Invalid(f"field selector {text!r}: {term!r} has no operator (=, == or !=)")
        equal = "!=" not in term
        key, _, value = term.partition("=" if equal else "!=")
        value = value.removeprefix("=") if equal else value  # "==" is "=" too
        if key not in SELECTABLE_FIELDS:
            raise Invalid(f'field selector {text!r}: "{key}" is not a known field selector')
        terms.append(FieldTerm(tuple(key.split(".")), value, equal))
    return tuple(terms)


def metadata_view(resource: Resource, obj: Object) -> Object:
    """What a metadata-only read returns of an object (PartialObjectMetadata)."""
    if not resource.metadata_only:
        return obj
    return {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": obj.get("metadata")}


def labels(obj: Object) -> dict[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def matching(bucket: dict[Key, Object], namespace: str | None, chosen: ObjectSelector) -> Iterator[Object]:
    """The objects a list returns, in the server's order: by namespace, then name."""
    for (ns, _), obj in sorted(bucket.items(), key=_sort_key):
        if namespace in (None, ns) and chosen.matches(obj):
            yield obj


def watch_start(resource_version: str) -> int:
    """The revision a watch follows from; 0 ("0" or "") means from the current state."""
    if resource_version not in ("", "0") and not resource_version.isdigit():
        raise Invalid(f"invalid resourceVersion {resource_version!r}")
    return int(resource_version or 0)


def to_create(resource: Resource, obj: Object) -> tuple[Object, str | None]:
    """A checked copy of ``obj`` with the server's defaults, and the namespace it goes to."""
    new = copy.deepcopy(obj)
    meta = _metadata(new)
    for field, expected in (("apiVersion", resource.api_version), ("kind", resource.kind)):
        if new.setdefault(field, expected) != expected:
            raise Invalid(f"{field} {new[field]!r} does not match {expected!r}")
    if meta.get("resourceVersion"):
        raise Invalid("resourceVersion should not be set on objects to be created")
    # The real server drops a namespace given to a cluster-scoped object.
    namespace = meta.get("namespace") if resource.namespaced else None
    if not resource.namespaced:
        meta.pop("namespace", None)
    check_scope(resource, namespace, required=True)
    if resource.has_status:
        new.pop("status", None)
    if resource.group == "" and resource.plural == "pods":
        new["status"] = {"phase": "Pending"}  # the server's default for a new Pod
    return new, namespace


def generate_name(prefix: object, namespace: str | None, taken: dict[Key, Object]) -> str:
    if not prefix or not isinstance(prefix, str):
        raise Invalid("metadata.name or metadata.generateName is required")
    while True:
        name = prefix + "".join(secrets.choice(_NAME_ALPHABET) for _ in range(5))
        if (namespace, name) not in taken:
            return name


def stamp_created(obj: Object, name: str, now: datetime) -> None:
    created = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    obj["metadata"].update(name=name, uid=str(uuid.uuid4()), creationTimestamp=created, generation=1)


def default_taint_times(resource: Resource, obj: Object, now: datetime) -> None:
    """The server's defaulting on every write of a ResourceSlice: a device taint without
    ``timeAdded`` gets the time of the request, in seconds (KUBERNETES-FACTS.md F1.7)."""
    if resource.plural != "resourceslices" or resource.group != "resource.k8s.io":
        return
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for device in (obj.get("spec") or {}).get("devices") or []:
        for taint in (device.get("taints") if isinstance(device, dict) else None) or []:
            if isinstance(taint, dict) and not taint.get("timeAdded"):
                taint["timeAdded"] = stamp


def check_patch(resource: Resource, patch: object, subresource: str | None) -> None:
    """What the server rejects before it reads the object."""
    if subresource not in (None, "status") or (subresource and not resource.has_status):
        raise NotFound(f"{resource.plural} has no subresource {subresource!r}")
    if not isinstance(patch, dict):
        raise Invalid("a merge patch must be a JSON object")


def patched(resource: Resource, current: Object, patch: Object, subresource: str | None) -> Object:
    """``current`` after the merge patch: equal to it when the patch changes nothing."""
    _check_preconditions(current, patch.get("metadata"))
    merged = apply_patch(current, patch)
    if subresource == "status":
        # Only status moves; everything else in the patch is ignored, as the server does.
        new = _with_status(copy.deepcopy(current), merged.get("status"))
    else:
        new = _keep_server_owned(current, merged)
        if resource.has_status:
            new = _with_status(new, current.get("status"))
    if _spec(new) != _spec(current):
        new["metadata"]["generation"] = current["metadata"].get("generation", 0) + 1
    return new


def check_uid(current: Object, uid: str | None) -> None:
    actual = current["metadata"].get("uid")
    if uid is not None and actual != uid:
        raise Conflict(f"precondition failed: UID in precondition: {uid}, UID in object: {actual}")


def visible(change: Change, kind: Kind, chosen: ObjectSelector, namespace: str | None) -> WatchEvent | None:
    """What a watch on ``kind`` in ``namespace`` with ``chosen`` sees of ``change``, if anything."""
    if change.kind != kind or namespace not in (None, change.object["metadata"].get("namespace")):
        return None
    matches = chosen.matches(change.object)
    matched = change.previous is not None and chosen.matches(change.previous)
    type_ = change.type
    # As the watch cache does: a change that moves an object across the selector's boundary is
    # seen as its arrival or departure.
    if type_ == "MODIFIED" and matches != matched:
        type_ = "ADDED" if matches else "DELETED"
    elif not matches:
        return None
    return WatchEvent(type_, copy.deepcopy(change.object))


def _sort_key(item: tuple[Key, Object]) -> tuple[str, str]:
    return (item[0][0] or "", item[0][1])


def _metadata(obj: Object) -> dict[str, Any]:
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise Invalid("metadata must be an object")
    return meta


def _check_preconditions(current: Object, meta: object) -> None:
    if not isinstance(meta, dict):
        return
    for field in ("resourceVersion", "uid"):
        wanted = meta.get(field)
        if wanted is not None and str(wanted) != current["metadata"].get(field):
            raise Conflict(
                f"the object has been modified: {field} {wanted} in the patch, "
                f"{current['metadata'].get(field)} in the object"
            )


def _keep_server_owned(current: Object, merged: Object) -> Object:
    meta = merged.get("metadata")
    if meta is None:
        meta = merged["metadata"] = {}
    if not isinstance(meta, dict):
        raise Invalid("metadata must be an object")
    for field in ("name", "namespace"):
        if field in meta and meta[field] != current["metadata"].get(field):
            raise Invalid(f"metadata.{field} cannot be changed")
    for field in _SERVER_OWNED:
        if field in current["metadata"]:
            meta[field] = current["metadata"][field]
    merged["apiVersion"], merged["kind"] = current["apiVersion"], current["kind"]
    return merged


def _with_status(obj: Object, status: object) -> Object:
    if status is None:
        obj.pop("status", None)
    else:
        obj["status"] = status
    return obj


def _spec(obj: Object) -> Object:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}
