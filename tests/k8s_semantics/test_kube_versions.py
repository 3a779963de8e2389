# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The known Kubernetes versions, 1.34 to 1.37, and a newer minor treated as 1.37.

DESIGN.md D3, KUBERNETES-FACTS.md F10.
"""

from __future__ import annotations

import pytest

from deckhouse_gpu.k8s_semantics.resources.semantics import VERSIONS, Semantics, version_for
from deckhouse_gpu.k8s_semantics.versions import (
    KNOWN_VERSIONS,
    UnknownVersion,
    known_minor,
    parse_minor,
    version_of,
)


def test_the_known_versions() -> None:
    assert KNOWN_VERSIONS == ("1.34", "1.35", "1.36", "1.37")
    assert VERSIONS == KNOWN_VERSIONS  # the allocator has semantics for each


@pytest.mark.parametrize(
    ("text", "minor"),
    [
        ("1.34", 34),
        ("1.35", 35),
        ("1.36.2", 36),
        ("v1.37.0", 37),
        (" 1.37 ", 37),
        ("1.38", 37),
        ("1.40.1", 37),
    ],
)
def test_parse_minor_treats_a_newer_minor_as_the_newest_known(text: str, minor: int) -> None:
    assert parse_minor(text) == minor


@pytest.mark.parametrize("text", ["1.33", "1.0", "2.0", "1", "1.x", "", "latest", "1.35.0.1"])
def test_parse_minor_refuses_older_versions_and_other_text(text: str) -> None:
    with pytest.raises(UnknownVersion):
        parse_minor(text)


def test_known_minor_and_version_of() -> None:
    assert [known_minor(m) for m in (34, 35, 36, 37, 38, 99)] == [34, 35, 36, 37, 37, 37]
    assert version_of(38) == "1.37"
    with pytest.raises(ValueError, match=r"1\.33"):
        known_minor(33)


def test_the_allocator_semantics_of_a_server_version() -> None:
    assert [version_for(m) for m in (33, 34, 35, 36, 37, 38)] == [
        "1.34",
        "1.34",
        "1.35",
        "1.36",
        "1.37",
        "1.37",
    ]
    # 1.36 and 1.37 allocate as 1.35: counters per pool, not per slice.
    assert [Semantics(v).pool_counters for v in VERSIONS] == [False, True, True, True]
    with pytest.raises(ValueError, match=r"1\.38"):
        Semantics("1.38")  # semantics name a known version; version_for maps a newer one first
