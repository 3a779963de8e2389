# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The device metadata files (KEP-5304) under the plugin directory, one directory per claim.

``<plugin dir>/dra-device-metadata/<claim UID>/<request>/metadata.json``: the plugin directory is
the driver's own (no directory shared with other drivers), and the claim's UID, not its name,
keys the directory, so a claim deleted and created again under the same name never meets the old
one's files, and the cleanup at start finds what no checkpoint entry owns by UID as it does for
CDI specs. Containers never see this path: a CDI bind mount shows each file at the protocol's
path (domain/prepare/container/device_metadata.py). Files are 0644 and directories 0755 because the reader
may be any user (KubeVirt's virt-launcher runs as uid 107).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from deckhouse_gpu.adapters.files.atomic_file import SAFE_SEGMENT, path_segment, replace_file, sync_directory

log = logging.getLogger(__name__)

SUBDIR = "dra-device-metadata"
FILE_NAME = "metadata.json"
FILE_MODE = 0o644
DIR_MODE = 0o755


def _segment(value: str, what: str) -> str:
    return path_segment(value, what, "a device metadata directory")


class FileDeviceMetadata:
    """Implements the DeviceMetadataFiles port. ``plugin_dir``: the plugin directory as this
    process reaches it; ``host_plugin_dir``: the same directory as the host names it."""

    def __init__(self, plugin_dir: Path | str, host_plugin_dir: str) -> None:
        self.root = Path(plugin_dir) / SUBDIR
        self.host_root = PurePosixPath(host_plugin_dir) / SUBDIR

    def write_claim(self, claim_uid: str, files: Mapping[str, bytes]) -> None:
        self.delete_claim(claim_uid)
        claim_dir = self.root / _segment(claim_uid, "claim UID")
        for request, content in files.items():
            request_dir = claim_dir / _segment(request, "request")
            for directory in (self.root, claim_dir, request_dir):
                directory.mkdir(parents=True, exist_ok=True)
                os.chmod(directory, DIR_MODE)  # whatever the umask
            replace_file(request_dir / FILE_NAME, content, FILE_MODE)
        log.info("device metadata written", extra={"claim": claim_uid, "requests": sorted(files)})

    def host_path(self, claim_uid: str, request: str) -> str:
        return str(
            self.host_root / _segment(claim_uid, "claim UID") / _segment(request, "request") / FILE_NAME
        )

    def delete_claim(self, claim_uid: str) -> None:
        if not SAFE_SEGMENT.fullmatch(claim_uid):
            return  # no file was ever written for it
        claim_dir = self.root / claim_uid
        if not claim_dir.exists():
            return
        shutil.rmtree(claim_dir)
        with contextlib.suppress(FileNotFoundError):
            sync_directory(self.root)

    def claims_with_files(self) -> set[str]:
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return set()
        return {name for name in names if SAFE_SEGMENT.fullmatch(name) and (self.root / name).is_dir()}
