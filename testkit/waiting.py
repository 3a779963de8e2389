# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Waiting for things in tests: a condition to hold, a free local port."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest


def wait_for(condition: Callable[[], object], timeout: float = 5.0, what: str = "condition") -> float:
    """Polls ``condition`` until it holds; returns the seconds it took, fails the test after ``timeout``."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if condition():
            return time.monotonic() - started
        time.sleep(0.005)
    pytest.fail(f"{what} not met within {timeout} s")


_HANDED_OUT: set[int] = set()
_DRAW = random.Random()  # noqa: S311 - a port, not a secret


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A local port nothing listens on, for a process the test starts later. Drawn below the
    kernel's ephemeral range: a port from that range (what binding port 0 gives) may become some
    outgoing connection's local port before the process binds it, and a gpu-handler once failed
    to start with "Address already in use". Never the same port twice in one test process."""
    top = _ephemeral_start()
    for _ in range(500):
        port = _DRAW.randrange(max(1024, top - 12000), top)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    with socket.socket() as sock:  # the range below is full: the kernel's choice after all
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
