# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Writes gpu.deckhouse.io CDI spec files into the CDI root the container runtime watches.

Runtimes rescan the directory when it changes and read any ``*.json`` there, so a spec must
never be seen half-written: it goes to a dot-named temporary file (not ``*.json``, so never
read), is fsynced, renamed over the old one, and the directory is fsynced so that the rename
survives a crash. Every spec is checked with ``domain.cdi_rules`` first: the CDI library drops
a whole file it cannot load, which would take every device in it away from new containers.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deckhouse_gpu.adapters.files.atomic_file import replace_file, sync_directory
from deckhouse_gpu.domain.prepare.container.cdi_spec import (
    BASE_SPEC_FILE,
    KIND,
    claim_spec_file,
    claim_uid_of,
)
from deckhouse_gpu.k8s_semantics.cdi.cdi_rules import validate_spec

log = logging.getLogger(__name__)

DEFAULT_CDI_ROOT = "/etc/cdi"  # static specs; /var/run/cdi (dynamic, higher priority) works too
_FILE_MODE = 0o644  # runtimes read it as root, but tools like nvidia-ctk cdi list run as users


class CdiSpecError(Exception):
    """The spec breaks a CDI rule and was not written; the message lists every problem."""


class CdiWriter:
    def __init__(self, cdi_root: Path | str = DEFAULT_CDI_ROOT) -> None:
        self.root = Path(cdi_root)

    def write_base(self, spec: Mapping[str, Any]) -> Path:
        return self.write(BASE_SPEC_FILE, spec)

    def write_claim(self, claim_uid: str, spec: Mapping[str, Any]) -> Path:
        return self.write(claim_spec_file(claim_uid), spec)

    def delete_base(self) -> bool:
        return self._delete(BASE_SPEC_FILE)

    def delete_claim(self, claim_uid: str) -> bool:
        """Removes the claim's spec; False when there was none (Unprepare may run twice)."""
        return self._delete(claim_spec_file(claim_uid))

    def claim_uids(self) -> list[str]:
        """Claims with a transient spec here, to remove those the checkpoint no longer knows."""
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        return sorted(uid for name in names if (uid := claim_uid_of(name)) is not None)

    def write(self, file_name: str, spec: Mapping[str, Any]) -> Path:
        if spec.get("kind") != KIND:
            raise CdiSpecError(f"{file_name}: kind {spec.get('kind')!r} is not {KIND}")
        problems = validate_spec(spec)
        if problems:
            raise CdiSpecError(f"{file_name}: " + "; ".join(str(problem) for problem in problems))
        target = self.root / file_name
        replace_file(target, (json.dumps(spec, indent=2) + "\n").encode(), _FILE_MODE)
        log.info("CDI spec written", extra={"path": str(target), "devices": len(spec.get("devices", ()))})
        return target

    def _delete(self, file_name: str) -> bool:
        try:
            (self.root / file_name).unlink()
        except FileNotFoundError:
            return False
        sync_directory(self.root)
        log.info("CDI spec removed", extra={"path": str(self.root / file_name)})
        return True
