# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The device metadata files of prepared claims (KEP-5304), as the prepare service sees them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class DeviceMetadataFiles(Protocol):
    def write_claim(self, claim_uid: str, files: Mapping[str, bytes]) -> None:
        """Writes the claim's files, one per request (request -> content), each atomically and
        readable by every user; files of an earlier attempt for the claim go first."""
        ...

    def host_path(self, claim_uid: str, request: str) -> str:
        """The file of ``request`` as the host (and so a CDI mount) names it."""
        ...

    def delete_claim(self, claim_uid: str) -> None:
        """Removes the claim's files; none is fine."""
        ...

    def claims_with_files(self) -> set[str]:
        """Claim UIDs that have files (to remove those no checkpoint entry owns)."""
        ...
