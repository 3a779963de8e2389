# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""How the opaque config's messages name a JSON value and a field path (``sharing.mps.x``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def join(path: str, key: str) -> str:
    """``path.key``; either may be empty ("" is the parameters themselves)."""
    return f"{path}.{key}" if path and key else path or key


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list | tuple) else "an object"


def shown(value: Any) -> str:
    """A string quoted as in JSON, anything else by its type."""
    return json.dumps(value) if isinstance(value, str) else json_type(value)


def one_of(names: Iterable[str]) -> str:
    return ", ".join(names)
