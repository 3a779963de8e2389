# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The uevent adapter with a stand-in pyudev: which events it forwards and how it fails."""

import queue
import sys
import threading
import types
from typing import ClassVar

import pytest

from deckhouse_gpu.adapters.host.udev_events import UdevUnavailable, watch_pci_events


class FakeDevice:
    def __init__(self, action: str | None, sys_name: str) -> None:
        self.action = action
        self.sys_name = sys_name


class FakeMonitor:
    instances: ClassVar[list["FakeMonitor"]] = []

    def __init__(self, source: str) -> None:
        self.source = source
        self.subsystems: list[str] = []
        self.started = False
        self.events: queue.Queue[object] = queue.Queue()
        FakeMonitor.instances.append(self)

    @classmethod
    def from_netlink(cls, context: object, source: str = "udev") -> "FakeMonitor":
        return cls(source)

    def filter_by(self, subsystem: str) -> None:
        self.subsystems.append(subsystem)

    def start(self) -> None:
        self.started = True

    def poll(self, timeout: float) -> FakeDevice | None:
        try:
            item = self.events.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(item, Exception):
            raise item
        assert isinstance(item, FakeDevice)
        return item


@pytest.fixture
def fake_pyudev(monkeypatch):
    FakeMonitor.instances.clear()
    module = types.SimpleNamespace(Monitor=FakeMonitor, Context=object)
    monkeypatch.setitem(sys.modules, "pyudev", module)
    return module


def test_forwards_pci_events_from_the_kernel_source(fake_pyudev):
    received: queue.Queue[tuple[str, str]] = queue.Queue()
    stop = threading.Event()
    thread = watch_pci_events(lambda action, address: received.put((action, address)), stop)
    (monitor,) = FakeMonitor.instances
    assert monitor.source == "kernel"  # works without udevd on the host
    assert monitor.subsystems == ["pci"]
    assert monitor.started
    monitor.events.put(FakeDevice("add", "0000:17:00.0"))
    monitor.events.put(FakeDevice(None, "0000:17:00.0"))
    monitor.events.put(OSError(105, "No buffer space available"))
    assert received.get(timeout=2) == ("add", "0000:17:00.0")
    assert received.get(timeout=2) == ("change", "0000:17:00.0")
    assert received.get(timeout=2) == ("overflow", "")  # lost events: force a full pass
    stop.set()
    thread.join(timeout=3)
    assert not thread.is_alive()


def test_socket_failure_is_reported_as_unavailable(fake_pyudev, monkeypatch):
    def refuse(cls, context, source="udev"):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(FakeMonitor, "from_netlink", classmethod(refuse))
    with pytest.raises(UdevUnavailable, match="Operation not permitted"):
        watch_pci_events(lambda action, address: None, threading.Event())


def test_missing_pyudev_is_reported_as_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyudev", None)
    with pytest.raises(UdevUnavailable, match="pyudev"):
        watch_pci_events(lambda action, address: None, threading.Event())
