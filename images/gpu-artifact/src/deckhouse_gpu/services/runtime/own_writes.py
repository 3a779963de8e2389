# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A watch cache as its own writer sees it: what this process wrote, until the watch catches up.

A component that reads only from its watch caches would otherwise read its own write back stale
for the moment the watch event takes, and a pass in that moment would write again (a conflict,
a re-read, a duplicate create). client-go's controllers keep the same kind of "mutation cache".
Each write is remembered with the resourceVersion the cache held before it: while the cache
still holds that version, the written object stands in for it; once the cache holds anything
else (our write, or a later change by someone else), the cache is right again and the entry goes.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable

from deckhouse_gpu.ports.kube import Object
from deckhouse_gpu.services.runtime.informer import Key, OnChange, key_of


def _version(obj: Object | None) -> str | None:
    return None if obj is None else str((obj.get("metadata") or {}).get("resourceVersion") or "")


class OwnWrites:
    def __init__(self, cached: Callable[[], Iterable[Object]]) -> None:
        self._cached = cached
        self._lock = threading.Lock()
        # key -> (the cached version the write replaced, or None for a create; the object after
        # the write, or None for a delete)
        self._pending: dict[Key, tuple[str | None, Object | None]] = {}
        # The versions our writes produced, so that their watch events wake nobody.
        self.versions: deque[str] = deque(maxlen=256)

    def wrote(self, before: Object | None, after: Object | None, key: Key | None = None) -> None:
        """Records a create (``before`` None), an update, or a delete (``after`` None)."""
        chosen = key or key_of(after if after is not None else before or {})
        with self._lock:
            self._pending[chosen] = (_version(before), after)
            if after is not None:
                self.versions.append(str(_version(after)))

    def observing(self, on_change: OnChange) -> OnChange:
        """The cache's change callback, with the cache's news checked against our writes first:
        any change of a key we wrote (our write arriving, or a later one) ends our stand-in, so a
        created object that someone deletes at once is not kept alive by it."""

        def observe(old: Object | None, new: Object | None) -> None:
            key = key_of(new if new is not None else old or {})
            with self._lock:
                pending = self._pending.get(key)
                if pending is not None and (new is None or _version(new) != pending[0]):
                    del self._pending[key]
            on_change(old, new)

        return observe

    def own(self, obj: Object) -> bool:
        """Whether ``obj`` (a watch event's object) is the result of one of our writes."""
        return _version(obj) in self.versions

    def items(self) -> list[Object]:
        """The cache with our writes that it does not show yet; sorted by name."""
        seen = {key_of(obj): obj for obj in self._cached()}
        with self._lock:
            for key, (before, after) in list(self._pending.items()):
                current = seen.get(key)
                if current is None and before is None and after is not None:
                    seen[key] = after  # created; the ADDED event is still on its way
                elif current is not None and _version(current) == before:
                    if after is None:
                        del seen[key]  # deleted; the DELETED event is still on its way
                    else:
                        seen[key] = after
                else:
                    del self._pending[key]  # the cache caught up (or someone else wrote since)
        return [seen[key] for key in sorted(seen)]
