# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Whole-file replacement that a crash or power loss never leaves half written.

The data goes to a temporary file in the same directory (``.<name>.<random>.tmp``), is fsynced and
renamed over the target, and the directory is fsynced so the rename itself is durable. A reader
sees the old file or the new one, never a mix. What a crash between the temporary file and the
rename leaves behind matches ``temporaries(path)``; its owner removes them under its own lock.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

TEMP_SUFFIX = ".tmp"


def replace_file(path: Path, data: bytes, mode: int | None = None) -> None:
    """Writes ``data`` as ``path`` atomically; ``mode`` sets its permissions (else mkstemp's 0600)."""
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    sync_directory(directory)


def sync_directory(directory: Path) -> None:
    """Makes a rename or unlink in ``directory`` durable."""
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with contextlib.suppress(OSError):  # some filesystems refuse fsync on directories
            os.fsync(descriptor)
    finally:
        os.close(descriptor)


def temporaries(path: Path) -> Iterator[Path]:
    """Temporary files of ``replace_file(path, ...)`` that a crash left behind."""
    return path.parent.glob(f".{path.name}.*{TEMP_SUFFIX}")
