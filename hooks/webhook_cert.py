#!/usr/bin/env python3
# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Fills internal.webhookCert with the gpu-dra-controller webhook certificate: kept from its
Secret while usable, generated when missing or broken, renewed 30 days before it expires (the
daily schedule notices that); see lib/webhook_cert.py."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from typing import Any

from deckhouse import hook
from lib.webhook_cert import NAMESPACE, SECRET, SECRET_FILTER, choose, from_secret_data, from_values

MODULE = "gpu"
CONFIG = f"""
configVersion: v1
kubernetes:
  - name: webhook_secret
    group: main
    queue: /modules/{MODULE}/webhook-cert
    apiVersion: v1
    kind: Secret
    namespace:
      nameSelector:
        matchNames: [{NAMESPACE}]
    nameSelector:
      matchNames: [{SECRET}]
    jqFilter: '{SECRET_FILTER}'
    keepFullObjectsInMemory: false
schedule:
  - name: renew
    group: main
    queue: /modules/{MODULE}/webhook-cert
    crontab: "17 3 * * *"
"""

log = logging.getLogger(__name__)
clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC)  # noqa: E731


def main(ctx: Any) -> None:
    secrets = [
        entry.get("filterResult")
        for entry in ctx.snapshots.get("webhook_secret", [])
        if isinstance(entry, dict)
    ]
    in_secret = from_secret_data(secrets[0]) if secrets else None
    settings = ctx.values.setdefault(MODULE, {})
    internal = settings.setdefault("internal", {})
    cert, renewed_because = choose(in_secret, from_values(internal.get("webhookCert")), clock())
    if renewed_because:
        log.warning("webhook certificate generated: %s", renewed_because)
    internal["webhookCert"] = cert.as_values()


if __name__ == "__main__":
    hook.run(main, config=CONFIG)
