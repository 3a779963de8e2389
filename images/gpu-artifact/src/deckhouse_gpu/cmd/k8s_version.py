# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``--k8s-version`` of the commands that work without an API server.

DESIGN.md D3, KUBERNETES-FACTS.md F10.
"""

from __future__ import annotations

import argparse

from deckhouse_gpu.k8s_semantics.versions import KNOWN_RANGE, KNOWN_VERSIONS, UnknownVersion, parse_minor

HELP = f"the API server's version, {KNOWN_RANGE}; a newer one is treated as {KNOWN_VERSIONS[-1]}"


def minor_argument(text: str) -> int:
    """``1.36`` -> 36, ``1.38`` -> 37; an argparse error for anything older than 1.34 or not a version."""
    try:
        return parse_minor(text)
    except UnknownVersion as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def version_argument(text: str) -> str:
    """``1.36`` -> ``"1.36"``, ``1.38`` -> ``"1.37"``: the form the allocator's semantics take."""
    return f"1.{minor_argument(text)}"
