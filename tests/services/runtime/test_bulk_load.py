# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The collector pause around whole-cluster loads (services/runtime/bulk_load.py), and where it applies."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import pytest

from deckhouse_gpu.ports.kube import NODES, ObjectList
from deckhouse_gpu.services.runtime.bulk_load import bulk_load
from deckhouse_gpu.services.runtime.informer import Informer
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube


@pytest.fixture(autouse=True)
def collector() -> Iterator[None]:
    """Each test starts with the collector on and nothing frozen, and leaves it so."""
    gc.unfreeze()
    gc.enable()
    yield
    gc.unfreeze()
    gc.enable()


def test_the_collector_is_paused_inside_and_what_was_made_is_frozen_after() -> None:
    with bulk_load():
        assert not gc.isenabled()
        made = [{"n": index} for index in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made)


def test_nested_and_concurrent_loads_resume_the_collector_after_the_last() -> None:
    inner_done, outer_may_end = threading.Event(), threading.Event()

    def other() -> None:
        with bulk_load():
            inner_done.set()
            outer_may_end.wait(5)

    with bulk_load():
        with bulk_load():
            pass
        assert not gc.isenabled()  # the nested one ended; this one still runs
        thread = threading.Thread(target=other)
        thread.start()
        assert inner_done.wait(5)
    assert not gc.isenabled()  # the other thread's load is still running
    outer_may_end.set()
    thread.join(5)
    assert gc.isenabled()


def test_a_failed_load_freezes_nothing_and_resumes_the_collector() -> None:
    gc.collect()  # CPython keeps some of its own objects in the permanent generation: count from here
    before = gc.get_freeze_count()

    def failing_load() -> None:
        with bulk_load():
            made = [{"n": index} for index in range(1000)]
            raise RuntimeError(f"the list failed after {len(made)}")

    with pytest.raises(RuntimeError):
        failing_load()
    assert gc.isenabled()
    assert gc.get_freeze_count() == before  # the exception's frames must stay collectable


def test_a_collector_turned_off_before_stays_off() -> None:
    gc.disable()
    with bulk_load():
        pass
    assert not gc.isenabled()


class WatchingKube(MemoryKube):
    """Records whether the collector ran while a list was decoded."""

    def __init__(self) -> None:
        super().__init__()
        self.collector_during_list: list[bool] = []

    def list(self, *args, **kwargs) -> ObjectList:
        self.collector_during_list.append(gc.isenabled())
        return super().list(*args, **kwargs)


def test_an_informer_lists_with_the_collector_paused() -> None:
    api = WatchingKube()
    api.create(NODES, {"metadata": {"name": "n1"}})
    informer = Informer(api, NODES, lambda *changes: None)
    informer.list_once()
    assert api.collector_during_list == [False]
    assert gc.isenabled()
    assert informer.get("n1") is not None


class Node:
    """A cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_garbage_waiting_for_the_collector_is_freed_not_frozen() -> None:
    gc.disable()  # as if the collector had not come round yet
    cycle = Node()
    gone = weakref.ref(cycle)
    del cycle
    assert gone() is not None
    gc.enable()
    with bulk_load():
        pass
    assert gone() is None
