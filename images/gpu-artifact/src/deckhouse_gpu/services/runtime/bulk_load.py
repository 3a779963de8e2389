# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Loading a whole cluster's objects at once without the cyclic garbage collector in the way.

Listing 500 GPU nodes' ResourceSlices and parsing them makes millions of small dicts and lists in
a few seconds. CPython's collector runs on allocation counts, so it walks the young objects again
and again while they are being made, and then the whole growing heap: measured on that cluster, it
took 2.3 of 3.9 CPU seconds of gpu-dra-controller's cold start (``make bench``, "cold parse").
These objects are trees, freed by reference counting when they are dropped, never cycles: pausing
the collector while they are made and moving them out of its sight afterwards (``gc.freeze``)
loses nothing, and the collector no longer walks them afterwards (without the freeze, the next
collections of each generation walk all of them once more: 1.7 s, measured).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Pause:
    """Nested or concurrent loads: the collector comes back after the last one, as it was."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.was_enabled = True


_PAUSE = _Pause()


@contextmanager
def bulk_load() -> Iterator[None]:
    """Runs the block with the cyclic collector paused; what a block that succeeded made stays out
    of the collector's sight. A block that failed freezes nothing: the exception on its way out
    holds frames in a cycle, which must stay collectable."""
    with _PAUSE.lock:
        if _PAUSE.depth == 0:
            _PAUSE.was_enabled = gc.isenabled()
            # Garbage cycles still waiting for the collector would be frozen with the load and never
            # freed: collect them first. Cheap: what earlier loads froze is not walked again.
            gc.collect()
            gc.disable()
        _PAUSE.depth += 1
    succeeded = False
    try:
        yield
        succeeded = True
    finally:
        with _PAUSE.lock:
            _PAUSE.depth -= 1
            if _PAUSE.depth == 0:
                if succeeded:
                    gc.freeze()  # what survived is long-lived (the caches): no collection walks it
                if _PAUSE.was_enabled:
                    gc.enable()
