# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The node-wide ``pu.lock``: one prepare or unprepare at a time on a node (DESIGN.md S9.2.2, D9).

``flock`` rather than ``fcntl`` record locks: record locks belong to the process, so two threads
would share one, and closing any descriptor of the file drops it; a flock belongs to the open file
description, so every acquisition opens the file anew and threads exclude each other like
processes do. The kernel drops it when the holder dies, however it dies (SIGKILL and OOM
included), so there is no stale lock to break. Two handler pods during a rolling update see the
same file through the same hostPath. The file is never deleted: unlinking a lock file lets a
waiter lock the old inode while a newcomer locks a new one.

Waiting polls ``LOCK_NB`` in small steps because a blocking flock cannot be given a timeout
without signals, and signals cannot be aimed at one thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import threading
import time
from pathlib import Path
from types import TracebackType

DEFAULT_PATH = "/var/lib/kubelet/plugins/gpu.deckhouse.io/pu.lock"
DEFAULT_TIMEOUT = 30.0
POLL_INTERVAL = 0.02


class LockTimeout(TimeoutError):
    """The lock stayed taken; the message names the file and who holds it."""

    def __init__(self, path: Path, waited: float, holder: str) -> None:
        self.path = path
        self.holder = holder  # "<pid> <hostname>" as the holder wrote it, "" when unknown
        self.holder_pid = _pid_of(holder)
        who = f"PID {self.holder_pid}" if self.holder_pid is not None else "an unknown process"
        where = holder.partition(" ")[2]
        if where:
            who += f" on {where}"
        super().__init__(f"node lock {path} is held by {who}; gave up after {waited:.1f} s")


class NodeLock:
    """Exclusive, not re-entrant; one instance may be shared by threads, or each may have its own."""

    def __init__(
        self, path: Path | str = DEFAULT_PATH, timeout: float = DEFAULT_TIMEOUT, poll: float = POLL_INTERVAL
    ) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.poll = poll
        # Held together with the flock: the descriptor below is per instance, so threads sharing
        # the instance must take turns before they reach it.
        self._mutex = threading.Lock()
        self._descriptor: int | None = None

    def acquire(self, timeout: float | None = None) -> None:
        """Waits up to ``timeout`` (the instance's default when None), then raises LockTimeout."""
        limit = self.timeout if timeout is None else timeout
        started = time.monotonic()
        if not self._mutex.acquire(timeout=max(limit, 0.0)):
            raise LockTimeout(self.path, time.monotonic() - started, self._holder())
        try:
            self._descriptor = self._lock_file(started, limit)
        except BaseException:
            self._mutex.release()
            raise

    def release(self) -> None:
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is None:
            raise RuntimeError(f"node lock {self.path} is not held")
        try:
            with contextlib.suppress(OSError):  # only cosmetic: the next holder overwrites it
                os.ftruncate(descriptor, 0)
            fcntl.flock(descriptor, fcntl.LOCK_UN)
        finally:
            os.close(descriptor)
            self._mutex.release()

    def __enter__(self) -> NodeLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.release()

    def _lock_file(self, started: float, limit: float) -> int:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:  # a read-only or full disk: the message names the lock file
            raise OSError(
                error.errno, f"cannot open the node lock: {error.strerror}", str(self.path)
            ) from error
        try:
            while True:
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    left = limit - (time.monotonic() - started)
                    if left <= 0:
                        raise LockTimeout(self.path, time.monotonic() - started, self._holder()) from None
                    time.sleep(min(self.poll, left))
            # Who holds it, for the next waiter's error message; inside a container the PID is
            # the pod's, so the hostname (the pod name) says which pod. Only a courtesy: on a full
            # disk the line cannot be written, and the lock, which is held, must not fail for it.
            with contextlib.suppress(OSError):
                os.ftruncate(descriptor, 0)
                os.pwrite(descriptor, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        except BaseException:
            os.close(descriptor)  # closing the last descriptor also drops a flock taken above
            raise
        return descriptor

    def _holder(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return ""


def _pid_of(holder: str) -> int | None:
    first = holder.partition(" ")[0]
    return int(first) if first.isdigit() else None
