# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Where gpu-handler keeps its prepare checkpoint (DESIGN.md D9).

Callers hold the node lock (``pu.lock``) around a load and the saves that follow it: the store
itself does not serialise writers.
"""

from __future__ import annotations

from typing import Protocol

from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, Decoded


class CheckpointStore(Protocol):
    def load(self) -> Decoded:
        """The checkpoint of this boot: empty when there is none, or when it was corrupt (and then
        ``corrupt_reason`` says why); entries of an earlier boot in ``dropped_after_reboot``."""
        ...

    def corrupted_before(self) -> bool:
        """True while a corrupt checkpoint is kept aside: until someone has looked at it, the
        start-up cleanup must not destroy MIG instances that it may have owned."""
        ...

    def save(self, checkpoint: Checkpoint) -> None:
        """Replaces the stored checkpoint atomically: after a crash either the old or the new one is read."""
        ...
