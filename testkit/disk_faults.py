# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The disk failing under gpu-handler's files: full (ENOSPC) or remounted read-only (EROFS).

Every change gpu-handler makes to its files is counted in one sequence: each whole-file write of
adapters/files/atomic_file.py (the checkpoint, a CDI spec, a device metadata file, a VFIO payload or
ledger entry), each delete of those adapters and each acquisition of the node lock
(adapters/files/node_lock.py). A fault armed at the n-th change stays, as a full or read-only disk does,
until ``clear()``:

- ENOSPC: a write gets half of its data into the temporary file and then fails, as ``write(2)``
  does when the blocks run out; the lock file's holder line cannot be written; deletes work (they
  free space);
- EROFS: no file can be created or opened for writing and nothing can be deleted.

``install`` patches the names the adapters look up (their ``os`` and ``tempfile`` modules, the
delete methods), so nothing outside those adapters sees a fault. For each failed write it keeps what
the target held before, so a test can check that the old content is intact.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

import pytest

from deckhouse_gpu.adapters.files import atomic_file, node_lock
from deckhouse_gpu.adapters.files.cdi_writer import CdiWriter
from deckhouse_gpu.adapters.files.device_metadata_files import FileDeviceMetadata
from deckhouse_gpu.adapters.files.vfio_files import FileVfioLedger, FileVfioPayloads

ENOSPC, EROFS = errno.ENOSPC, errno.EROFS


@dataclass
class DiskFaults:
    roots: tuple[Path, ...]  # gpu-handler's directories: the simulated GPU's state files stay fine
    changes: list[tuple[str, str]] = field(default_factory=list)  # (what, path) of every change
    at: int | None = None
    code: int = ENOSPC
    active: bool = False  # the disk is full or read-only now
    failed_writes: dict[str, bytes | None] = field(default_factory=dict)  # target -> content before

    def reset(self, roots: tuple[Path, ...]) -> None:
        """A new node: its directories, nothing counted, no fault."""
        self.roots, self.at, self.active = roots, None, False
        self.changes.clear()
        self.failed_writes.clear()

    def arm(self, at: int, code: int) -> None:
        self.at, self.code, self.active = at, code, False

    def clear(self) -> None:
        self.at, self.active = None, False

    def change(self, what: str, path: Path | str) -> int | None:
        """Counts a change; the errno it meets (None: it goes through)."""
        if not any(Path(path).is_relative_to(root) for root in self.roots):
            return None
        if len(self.changes) == self.at:
            self.active = True
        self.changes.append((what, str(path)))
        if not self.active:
            return None
        if self.code == ENOSPC and what in ("delete",):
            return None
        return self.code

    def error(self, code: int, path: Path | str) -> OSError:
        return OSError(code, os.strerror(code), str(path))

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(atomic_file, "tempfile", SimpleNamespace(mkstemp=self._mkstemp))
        monkeypatch.setattr(atomic_file, "os", _Os(self))
        monkeypatch.setattr(node_lock, "os", _LockOs(self))
        # Each delete method, and the file it removes (a missing one fails nowhere: lookup first).
        deletes: tuple[tuple[Any, str, Callable[[Any, str], Path]], ...] = (
            (CdiWriter, "_delete", lambda a, key: Path(a.root, key)),
            (FileDeviceMetadata, "delete_claim", lambda a, key: Path(a.root, key)),
            (FileVfioPayloads, "delete_claim", lambda a, key: Path(a.root, f"{key}.json")),
            (FileVfioLedger, "remove", lambda a, key: Path(a._path(key))),
        )
        for owner, name, target in deletes:
            monkeypatch.setattr(owner, name, self._deleting(getattr(owner, name), target))

    def _mkstemp(self, prefix: str, suffix: str, dir: Path) -> tuple[int, str]:
        target = Path(dir) / prefix[1:].rstrip(".")
        code = self.change("write", target)
        if code is not None:
            self.failed_writes[str(target)] = target.read_bytes() if target.exists() else None
            if code == EROFS:
                raise self.error(code, Path(dir) / f"{prefix}XXXXXXXX{suffix}")
        return tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=dir)

    def _deleting(
        self, original: Callable[..., Any], target: Callable[[Any, str], Path]
    ) -> Callable[..., Any]:
        def delete(adapter: Any, key: str) -> Any:
            path = target(adapter, key)
            if path.exists() and (code := self.change("delete", path)) is not None:
                raise self.error(code, path)
            return original(adapter, key)

        return delete


class _FullFile:
    """A temporary file on a full disk: half of the first write lands, then ENOSPC."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream

    def __enter__(self) -> _FullFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stream.close()

    def write(self, data: bytes) -> int:
        self.stream.write(data[: len(data) // 2])
        self.stream.flush()
        raise OSError(ENOSPC, os.strerror(ENOSPC))  # write(2) names no file

    def flush(self) -> None:
        self.stream.flush()

    def fileno(self) -> int:
        return self.stream.fileno()


class _Os:
    """``os`` as adapters/files/atomic_file.py sees it: a full disk breaks the temporary file's write."""

    def __init__(self, faults: DiskFaults) -> None:
        self.faults = faults

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def fdopen(self, descriptor: int, mode: str) -> Any:
        stream = os.fdopen(descriptor, mode)
        path = os.readlink(f"/proc/self/fd/{descriptor}")
        ours = any(Path(path).is_relative_to(root) for root in self.faults.roots)
        if ours and self.faults.active and self.faults.code == ENOSPC:
            return _FullFile(stream)
        return stream


class _LockOs:
    """``os`` as adapters/files/node_lock.py sees it: opening for writing fails on a read-only disk, the
    holder's line cannot be written on a full one."""

    def __init__(self, faults: DiskFaults) -> None:
        self.faults = faults

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def open(self, path: Any, flags: int, mode: int = 0o777) -> int:
        code = self.faults.change("lock", path)
        if code == EROFS:
            raise self.faults.error(code, path)
        return os.open(path, flags, mode)

    def pwrite(self, descriptor: int, data: bytes, offset: int) -> int:
        if self.faults.active:
            raise OSError(self.faults.code, os.strerror(self.faults.code))
        return os.pwrite(descriptor, data, offset)
