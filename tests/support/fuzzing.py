# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Settings of the fuzz tests (tests/**/test_*_fuzz.py, docs/RELIABILITY.md).

Each fuzz test names the number of examples that keeps it at a few seconds in ``make test``;
``GPU_FUZZ_SCALE`` multiplies them for a longer local run, and Hypothesis' own options still apply
(``--hypothesis-seed``, ``--hypothesis-show-statistics``)::

    GPU_FUZZ_SCALE=50 .venv/bin/python -m pytest -k fuzz
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

SCALE = float(os.environ.get("GPU_FUZZ_SCALE", "1"))


def fuzz(examples: int) -> settings:
    """Hypothesis settings for a fuzz test of ``examples`` examples (times GPU_FUZZ_SCALE)."""
    return settings(
        max_examples=max(1, round(examples * SCALE)),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


# What JSON text can carry once parsed: no NaN, no integers beyond what json.loads converts.
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)


def json_values(max_leaves: int = 20) -> st.SearchStrategy[Any]:
    """Any parsed JSON value: scalars, lists and objects nested a few levels."""
    return st.recursive(
        JSON_SCALARS,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
        max_leaves=max_leaves,
    )


def round_trip(value: Any) -> Any:
    """The value as the API server would hand it over: serialised and parsed again."""
    return json.loads(json.dumps(value))


def mostly(plausible: st.SearchStrategy[Any], noise: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Nine times in ten a draw of ``plausible``, else one of ``noise``: a decoder's deep paths
    are reached while every field still sees garbage now and then."""
    return st.integers(0, 9).flatmap(lambda n: plausible if n else noise)
