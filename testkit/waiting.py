# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Waiting for things in tests: a condition to hold, a free local port."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest


def wait_for(condition: Callable[[], object], timeout: float = 5.0, what: str = "condition") -> float:
    """Polls ``condition`` until it holds; returns the seconds it took, fails the test after ``timeout``."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if condition():
            return time.monotonic() - started
        time.sleep(0.005)
    pytest.fail(f"{what} not met within {timeout} s")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
