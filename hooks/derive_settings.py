#!/usr/bin/env python3
# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Fills internal.settings from the module's settings before every Helm render; see
lib/settings.py for the rules."""

from __future__ import annotations

from typing import Any

from deckhouse import hook
from lib.settings import derive

MODULE = "gpu"
CONFIG = """
configVersion: v1
beforeHelm: 10
"""


def main(ctx: Any) -> None:
    settings = ctx.values.get(MODULE) or {}
    settings.setdefault("internal", {})["settings"] = derive(settings, ctx.values.get("global") or {})
    ctx.values[MODULE] = settings


if __name__ == "__main__":
    hook.run(main, config=CONFIG)
