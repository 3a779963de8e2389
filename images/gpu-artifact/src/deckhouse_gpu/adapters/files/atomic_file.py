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
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

TEMP_SUFFIX = ".tmp"
# A claim UID or a request name that becomes a path segment: nothing that climbs or hides.
SAFE_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def path_segment(value: str, what: str, names: str) -> str:
    """``value`` when it is safe as one path segment; else a ValueError: "<what> ... cannot name <names>"."""
    if not SAFE_SEGMENT.fullmatch(value):
        raise ValueError(f"{what} {value!r} cannot name {names}")
    return value


def replace_file(path: Path, data: bytes, mode: int | None = None) -> None:
    """Writes ``data`` as ``path`` atomically; ``mode`` sets its permissions (else mkstemp's 0600).

    An OSError names ``path``: ``write(2)`` on a full disk says only "No space left on device",
    which would reach the kubelet (and the Pod's events) without saying which file."""
    directory = path.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=directory)
    except OSError as error:
        raise _naming(error, path) from error
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise _naming(error, path) from error
        raise
    sync_directory(directory)


def _naming(error: OSError, path: Path) -> OSError:
    """The same error (its type follows the errno) naming the file that was being written."""
    if error.errno is None:
        return OSError(f"{error}: {path}")
    return OSError(error.errno, error.strerror, str(path))


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
