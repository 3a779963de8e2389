# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The prepare checkpoint as one JSON file in the plugin directory, replaced atomically.

A save writes a temporary file in the same directory, fsyncs it, renames it over the old one and
fsyncs the directory, so a crash or power loss at any point leaves either the old or the new
checkpoint, never a mix. A file that still fails to decode (a disk fault, a hand edit) is moved
aside for people to look at and the handler starts from an empty checkpoint, never a crash loop
that would block every Pod on the node. What the lost file owned is then unknown, so
``Decoded.corrupt_reason`` tells the caller, which must not treat every MIG instance it finds as
unowned garbage while Pods may still use them.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from deckhouse_gpu.adapters.files.atomic_file import replace_file, sync_directory, temporaries
from deckhouse_gpu.domain.prepare.checkpoint import (
    Checkpoint,
    CorruptCheckpoint,
    Decoded,
    decode,
    encode,
)
from deckhouse_gpu.ports.clock import Clock, SystemClock

log = logging.getLogger(__name__)

DEFAULT_PATH = "/var/lib/kubelet/plugins/gpu.deckhouse.io/checkpoint.json"
BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"
KEEP_CORRUPT = 3  # enough to see a pattern, bounded so a flapping disk cannot fill the directory
_CORRUPT_MARK = ".corrupt-"


class BootIdUnreadable(OSError):
    """Without the boot ID a reboot cannot be told from a restart; the message names the path."""


class FileCheckpointStore:
    """Implements ``ports.checkpoint.CheckpointStore``; callers hold the node lock around it."""

    def __init__(
        self,
        path: Path | str = DEFAULT_PATH,
        *,
        host_root: Path | str | None = None,
        boot_id_path: str = BOOT_ID_PATH,
        clock: Clock | None = None,
    ) -> None:
        self.path = Path(path)
        # boot_id is not namespaced, so the container's own /proc is right; a host root is for tests
        # and simulated nodes.
        self.boot_id_path = Path(host_root, boot_id_path.lstrip("/")) if host_root else Path(boot_id_path)
        self.clock = clock or SystemClock()
        self._boot_id: str | None = None

    def boot_id(self) -> str:
        if self._boot_id is None:  # fixed for the life of the process
            try:
                value = self.boot_id_path.read_text(encoding="ascii").strip()
            except (OSError, UnicodeDecodeError) as error:
                raise BootIdUnreadable(f"cannot read the boot ID from {self.boot_id_path}: {error}") from None
            if not value:
                raise BootIdUnreadable(f"the boot ID in {self.boot_id_path} is empty")
            self._boot_id = value
        return self._boot_id

    def load(self) -> Decoded:
        boot_id = self.boot_id()
        self._remove_temporaries()
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return Decoded(Checkpoint(boot_id))
        try:
            return decode(data, boot_id)
        except CorruptCheckpoint as error:
            aside = self._move_aside()
            log.error(
                "checkpoint %s is corrupt (%s); moved aside to %s, starting from an empty checkpoint",
                self.path,
                error.reason,
                aside,
            )
            return Decoded(Checkpoint(boot_id), corrupt_reason=error.reason)

    def save(self, checkpoint: Checkpoint) -> None:
        replace_file(self.path, encode(checkpoint))

    def corrupted_before(self) -> bool:
        return bool(self.corrupt_copies())

    def corrupt_copies(self) -> list[Path]:
        """Files moved aside, oldest first."""
        return sorted(self.path.parent.glob(f"{self.path.name}{_CORRUPT_MARK}*"), key=_corrupt_order)

    def _move_aside(self) -> Path:
        stamp = self.clock.now().strftime("%Y%m%dT%H%M%S.%fZ")
        aside = self.path.with_name(f"{self.path.name}{_CORRUPT_MARK}{stamp}")
        serial = 0
        while aside.exists():  # two corruptions within one clock tick (a coarse or frozen clock)
            serial += 1
            aside = self.path.with_name(f"{self.path.name}{_CORRUPT_MARK}{stamp}-{serial}")
        os.replace(self.path, aside)
        for old in self.corrupt_copies()[:-KEEP_CORRUPT]:
            with contextlib.suppress(OSError):
                old.unlink()
        sync_directory(self.path.parent)
        return aside

    def _remove_temporaries(self) -> None:
        # What a crash between mkstemp and rename left behind; the caller holds the node lock, so
        # no other writer is halfway through its own save.
        for leftover in temporaries(self.path):
            with contextlib.suppress(OSError):
                leftover.unlink()


def _corrupt_order(path: Path) -> tuple[str, int]:
    stamp, _, serial = path.name.rpartition(_CORRUPT_MARK)[2].partition("-")
    return (stamp, int(serial) if serial.isdigit() else 0)
