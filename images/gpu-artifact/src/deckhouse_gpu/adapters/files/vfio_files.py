# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""VFIO's files under the plugin directory (DESIGN.md D7, D9): the claims' QEMU hook payloads and
the ledger of functions moved to vfio-pci.

``<plugin dir>/vfio-payload/<claim UID>.json``: one payload per claim, 0644 in 0755 directories
because the reader in the container may be any user (virt-launcher runs as uid 107); containers see
it through a CDI bind mount. ``<plugin dir>/vfio-ledger/<PCI address>.json``: the driver a function
had before this driver moved it, and the boot it was moved in. The checkpoint records the same, but
the checkpoint may be set aside (corrupt, or by a person resetting the node); the ledger is what lets
the start-up cleanup give back a function no entry owns. Both are written atomically.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path, PurePosixPath

from deckhouse_gpu.adapters.files.atomic_file import SAFE_SEGMENT, path_segment, replace_file, sync_directory
from deckhouse_gpu.domain.inventory.pci import is_pci_address

log = logging.getLogger(__name__)

PAYLOAD_DIR = "vfio-payload"
LEDGER_DIR = "vfio-ledger"
FILE_MODE = 0o644
DIR_MODE = 0o755


def _uid(value: str) -> str:
    return path_segment(value, "claim UID", "a VFIO payload file")


class FileVfioPayloads:
    """Implements VfioPayloads. ``plugin_dir``: as this process reaches it; ``host_plugin_dir``: as
    the host names it (CDI mounts name host paths)."""

    def __init__(self, plugin_dir: Path | str, host_plugin_dir: str) -> None:
        self.root = Path(plugin_dir) / PAYLOAD_DIR
        self.host_root = PurePosixPath(host_plugin_dir) / PAYLOAD_DIR

    def write_claim(self, claim_uid: str, data: bytes) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, DIR_MODE)  # whatever the umask
        replace_file(self.root / f"{_uid(claim_uid)}.json", data, FILE_MODE)

    def host_path(self, claim_uid: str) -> str:
        return str(self.host_root / f"{_uid(claim_uid)}.json")

    def delete_claim(self, claim_uid: str) -> None:
        if not SAFE_SEGMENT.fullmatch(claim_uid):
            return
        path = self.root / f"{claim_uid}.json"
        if path.exists():
            path.unlink()
            sync_directory(self.root)

    def claims_with_files(self) -> set[str]:
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return set()
        return {
            name[: -len(".json")] for name in names if name.endswith(".json") and SAFE_SEGMENT.fullmatch(name)
        }


class FileVfioLedger:
    """Implements VfioLedger; ``boot_id_path``: the node's boot ID (not namespaced: the container's
    own /proc has it)."""

    def __init__(self, plugin_dir: Path | str, boot_id_path: Path | str) -> None:
        self.root = Path(plugin_dir) / LEDGER_DIR
        self.boot_id_path = Path(boot_id_path)

    def add(self, function: str, driver: str | None) -> None:
        document = {"function": function, "originalDriver": driver, "bootID": self._boot_id()}
        replace_file(self._path(function), (json.dumps(document) + "\n").encode(), FILE_MODE)

    def remove(self, function: str) -> None:
        path = self._path(function)
        if path.exists():
            path.unlink()
            sync_directory(self.root)

    def entries(self) -> dict[str, str | None]:
        """This boot's moves; a file of an earlier boot is dropped (the reboot gave the function back),
        an unreadable one is reported and kept for a person to look at."""
        try:
            names = sorted(os.listdir(self.root))
        except FileNotFoundError:
            return {}
        boot = self._boot_id()
        found: dict[str, str | None] = {}
        for name in names:
            function = name.removesuffix(".json")
            if not (name.endswith(".json") and is_pci_address(function)):
                continue
            try:
                document = json.loads((self.root / name).read_bytes())
                driver, written = document["originalDriver"], document["bootID"]
                if driver is not None and not isinstance(driver, str):
                    raise TypeError(f"originalDriver is {type(driver).__name__}")
            except (OSError, ValueError, KeyError, TypeError) as error:
                log.error("VFIO ledger file unreadable; kept", extra={"file": name, "error": str(error)})
                continue
            if written != boot:
                with contextlib.suppress(FileNotFoundError):
                    (self.root / name).unlink()
                continue
            found[function] = driver
        return found

    def _path(self, function: str) -> Path:
        if not is_pci_address(function):
            raise ValueError(f"{function!r} is not a PCI address")
        return self.root / f"{function}.json"

    def _boot_id(self) -> str:
        try:
            return self.boot_id_path.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            return ""  # no boot ID (a bare test host): reboots are not told apart
