# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The JSON of the API server's responses, decoded by orjson rather than the standard library.

The list of a large cluster's ResourceSlices is 100 MiB of JSON (kubectl gpu, DESIGN.md D12):
orjson decodes it a quarter to a third faster than ``json`` (most of what is left is making the
Python objects). It gives the same objects for what the API server writes; what the server never
writes it refuses as malformed (NaN, a lone surrogate) or reads otherwise (an integer beyond 64
bits, as a float: the integers of Kubernetes objects are int64).
"""

from __future__ import annotations

from typing import Any

import orjson


def decode(data: bytes) -> Any:
    """The document in ``data``; ``ValueError`` (``orjson.JSONDecodeError``) when it is not JSON."""
    return orjson.loads(data)
