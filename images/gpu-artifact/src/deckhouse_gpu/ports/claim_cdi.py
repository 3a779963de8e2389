# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The per-claim CDI specs prepare writes and unprepare deletes, as the prepare service sees them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from deckhouse_gpu.domain.prepare.mig_instance import MigRecord
from deckhouse_gpu.domain.prepare.plan import DevicePlan


class ClaimCDI(Protocol):
    def write_claim(
        self,
        claim_uid: str,
        devices: tuple[DevicePlan, ...],
        mig: tuple[MigRecord, ...],
        edits: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> dict[str, tuple[str, ...]]:
        """Writes the claim's transient spec; the fully qualified CDI ids per device name.

        ``edits``: device name -> container edits of that device alone (env, mounts), added to
        its nodes (an MPS client's pipe directory and limits)."""
        ...

    def delete_claim(self, claim_uid: str) -> None:
        """Removes the claim's spec; a missing one is fine."""
        ...

    def claims_with_specs(self) -> set[str]:
        """Claim UIDs that have a transient spec (to remove those no checkpoint entry owns)."""
        ...
