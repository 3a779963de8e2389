# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Shared fixtures: simulated hosts and a fixed clock."""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from deckhouse_gpu.simulator.host.host_builder import HostBuilder


class FixedClock:
    def __init__(self) -> None:
        self.moment = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
        self.ticks = 0.0

    def now(self) -> datetime:
        return self.moment

    def monotonic(self) -> float:
        return self.ticks


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def host(tmp_path: Path) -> HostBuilder:
    """A bare-metal Ubuntu node with pci.ids and a few non-GPU functions, no GPUs yet."""
    builder = HostBuilder(tmp_path / "host").standard_node()
    builder.add_other_devices(12)
    return builder


@pytest.fixture
def short_root() -> Iterator[Path]:
    """A directory with a short path: kubelet sockets go under it, and a Unix socket path has 107 bytes."""
    root = Path(tempfile.mkdtemp(prefix="gpu-"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(autouse=True)
def _root_logging() -> Iterator[None]:
    """A component's main() run in a test points the root logger at that test's captured stderr
    (adapters/json_logging.configure); put it back, so later tests' threads never log into a
    closed stream and keep the level they started with."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
