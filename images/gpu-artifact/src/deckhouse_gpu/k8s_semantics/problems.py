# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""One broken rule in an object the module builds (a ResourceSlice, a CDI spec): the rule checkers of
every feature report these, so callers print and test them the same way."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One broken rule: where (a JSON path like ``spec.devices[3].name``) and what."""

    path: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}: {self.rule}"
