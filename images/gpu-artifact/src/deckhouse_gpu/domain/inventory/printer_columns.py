# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Renders objects the way ``kubectl get`` does from a CRD's printer columns.

Supports the JSONPath subset printer columns use here: ``.a.b.c`` and a filter on a list
``.list[?(@.key=="value")].field``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from deckhouse_gpu.domain.inventory.physicalgpu import PrinterColumn

_FILTER = re.compile(r'^(\w+)\[\?\(@\.(\w+)=="([^"]*)"\)\]$')


def resolve(obj: Any, json_path: str) -> Any:
    value: Any = obj
    for part in _split(json_path):
        match = _FILTER.match(part)
        if match:
            items = value.get(match.group(1)) if isinstance(value, dict) else None
            key, wanted = match.group(2), match.group(3)
            found = [item for item in items or [] if isinstance(item, dict) and item.get(key) == wanted]
            value = found[0] if found else None
        else:
            value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            return None
    return value


def _split(json_path: str) -> list[str]:
    """Splits on dots outside brackets and quotes."""
    parts: list[str] = []
    current = ""
    depth = 0
    for char in json_path.lstrip("."):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "." and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def age(created: str | None, now: datetime) -> str:
    if not created:
        return "<unknown>"
    seconds = int((now - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * 2 or (unit == "m" and seconds >= 60):
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def render_table(
    objects: Sequence[dict[str, Any]], columns: Sequence[PrinterColumn], now: datetime, wide: bool = False
) -> str:
    shown = [column for column in columns if wide or column.priority == 0]
    header = ["NAME", *(column.name.upper() for column in shown)]
    rows = [header]
    for obj in objects:
        row = [str(obj.get("metadata", {}).get("name", ""))]
        for column in shown:
            value = resolve(obj, column.json_path)
            if column.type == "date":
                row.append(age(value, now))
            else:
                row.append("<none>" if value is None else str(value))
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "   ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
