# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The one base of what a feature's port raises when a change of the node fails (DESIGN.md D20).

Prepare and unprepare report such a failure to the kubelet (which retries) by this type alone,
so a feature whose port raises an error of its own subclasses it and needs no edit of
services/prepare/service.py.
"""

from __future__ import annotations


class HostChangeError(Exception):
    """A change of the node's cards or of their settings failed; the message says which, what and why."""
