# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What prepare needs to make sharing real on a node: the card settings, the MPS daemons and where
their directories live (docs/SHARING.md)."""

from __future__ import annotations

from dataclasses import dataclass

from deckhouse_gpu.ports.sharing import CardSettings, MpsDaemons


@dataclass(frozen=True)
class SharingHost:
    settings: CardSettings
    daemons: MpsDaemons
    plugin_dir: str  # the plugin directory as the host sees it: MPS directories go under it
    node: str
    ready_timeout: float = 60.0  # seconds prepare waits for a new MPS daemon to accept clients
    poll_interval: float = 0.5
