# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Resolves the JSONPath of a printer column to the CRD schema node it reads."""

from __future__ import annotations

import re

from tests.support.crd_schema import Schema

TOKEN = re.compile(r'\.(?P<name>\w+)|\[\?\(@\.(?P<field>\w+)=="(?P<value>[^"]*)"\)\]')
METADATA_FIELDS = {"name", "creationTimestamp", "labels", "annotations", "deletionTimestamp"}


def resolve(root: Schema, json_path: str) -> Schema | None:
    """The schema node a printer column's JSONPath reads; None for standard metadata fields.

    Supports the forms printer columns use: ``.a.b`` and ``.list[?(@.key=="value")].field``.
    """
    tokens = list(TOKEN.finditer(json_path))
    covered = "".join(match.group(0) for match in tokens)
    assert covered == json_path, f"{json_path}: unsupported JSONPath syntax"
    if tokens[0].group("name") == "metadata":
        assert len(tokens) == 2, json_path
        assert tokens[1].group("name") in METADATA_FIELDS, json_path
        return None
    node = root
    for token in tokens:
        if token.group("name"):
            properties = node.get("properties", {})
            assert token.group("name") in properties, f"{json_path}: no property {token.group('name')!r}"
            node = properties[token.group("name")]
        else:
            assert node.get("type") == "array", f"{json_path}: a filter on a non-list"
            node = node["items"]
            assert token.group("field") in node.get("properties", {}), f"{json_path}: filter field"
    return node
