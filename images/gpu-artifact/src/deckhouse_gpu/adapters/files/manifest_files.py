# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Kubernetes objects from a YAML file, in every shape the module's commands and kubectl print.

One reader for every command that takes objects from a file, so that each reads what the others
write: several documents (``kubectl get -o yaml`` of one object each, ``gpu-node-agent --dry-run``,
``gpu-handler render-slices``), a ``kind: List`` or any ``*List`` with ``items`` (``kubectl get -o
yaml`` of many), and a bare YAML sequence of objects. Errors name the file and the document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class ManifestError(ValueError):
    """The file cannot be read, is not YAML, or holds something that is not the objects asked for."""


def _entries(document: Any) -> list[Any]:
    if isinstance(document, list):
        return document
    if isinstance(document, dict) and str(document.get("kind", "")).endswith("List") and "items" in document:
        items = document["items"]
        return items if isinstance(items, list) else [items]
    return [document]


def load_objects(path: str | Path, kind: str | None = None) -> list[dict[str, Any]]:
    """The objects in ``path``, in file order; only objects of ``kind`` when one is given."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise ManifestError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as error:
        raise ManifestError(f"{path} is not valid YAML: {error}") from None
    found: list[dict[str, Any]] = []
    for number, document in enumerate(documents, 1):
        if document is None:
            continue
        for entry in _entries(document):
            if not isinstance(entry, dict):
                raise ManifestError(
                    f"{path}: document {number} holds {str(entry)[:60]!r}, not a Kubernetes object"
                )
            if kind is not None and entry.get("kind") != kind:
                raise ManifestError(
                    f"{path}: document {number}: expected {kind} objects, found kind {entry.get('kind')!r}"
                )
            found.append(entry)
    return found
