# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The Kubernetes versions the module knows: 1.34 to 1.37 (DESIGN.md D3, KUBERNETES-FACTS.md F10).

Everything that depends on the API server's version (the ResourceSlice layout and rules, the
allocator's semantics, the command-line flags that name a version) takes it from here. A minor
newer than the newest known one is treated as the newest known one (1.38 as 1.37): its rules are
assumed unchanged until this table is extended. Older ones have no ``resource.k8s.io/v1`` and
are refused.

What differs between the known versions, for this driver: 1.34 keeps counter sets and the devices
that consume them in one slice; 1.35 and later keep them in separate slices, and 1.36 and 1.37
keep the 1.35 rules (F10). The feature gates the module uses are alpha in 1.34 and 1.35 and on by
default from 1.36 (docs/DRA.md, "Requirements").
"""

from __future__ import annotations

import re

OLDEST_MINOR = 34
NEWEST_MINOR = 37
KNOWN_MINORS = tuple(range(OLDEST_MINOR, NEWEST_MINOR + 1))
KNOWN_VERSIONS = tuple(f"1.{minor}" for minor in KNOWN_MINORS)
KNOWN_RANGE = f"{KNOWN_VERSIONS[0]} to {KNOWN_VERSIONS[-1]}"

_VERSION = re.compile(r"v?1\.(\d+)(?:\.\d+)?")


class UnknownVersion(ValueError):
    """Not a Kubernetes version, or older than the oldest the module supports."""


def known_minor(minor: int) -> int:
    """The known minor whose rules apply: ``minor`` itself, or the newest known one for a newer one."""
    if minor < OLDEST_MINOR:
        raise UnknownVersion(
            f"Kubernetes 1.{minor} has no resource.k8s.io/v1; the module needs {KNOWN_VERSIONS[0]} or newer"
        )
    return min(minor, NEWEST_MINOR)


def parse_minor(text: str) -> int:
    """``1.36``, ``1.36.2`` or ``v1.36.2`` -> 36; a newer minor than the newest known is its minor
    (``1.38`` -> 37)."""
    found = _VERSION.fullmatch(text.strip())
    if found is None:
        raise UnknownVersion(f"{text!r} is not a Kubernetes version such as {KNOWN_VERSIONS[-1]}")
    return known_minor(int(found[1]))


def version_of(minor: int) -> str:
    """``1.<minor>`` of the known minor that applies: 38 -> ``1.37``."""
    return f"1.{known_minor(minor)}"
