# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""JSON merge patch (RFC 7386): the diff the writers send and the rule the fake server applies."""

from __future__ import annotations

import copy
from typing import Any


def create_patch(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The smallest merge patch that turns ``old`` into ``new`` (removed keys become null)."""
    patch: dict[str, Any] = {}
    for key in old.keys() - new.keys():
        patch[key] = None
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, dict) and isinstance(before, dict):
            nested = create_patch(before, value)
            if nested:
                patch[key] = nested
        elif key not in old or before != value:
            patch[key] = copy.deepcopy(value)
    return patch


def apply_patch(target: Any, patch: Any) -> Any:
    """Applies a merge patch to a copy of ``target``; lists are replaced whole, as RFC 7386 says."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_patch(result.get(key), value)
    return result
