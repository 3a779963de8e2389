# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Fuzzing of the opaque config decoder: whatever JSON the parameters hold, ``decode`` returns a
config that encodes back to itself, or raises ``ConfigError`` naming at least one problem; no other
exception escapes (the webhook and prepare both decode with it)."""

from __future__ import annotations

from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from deckhouse_gpu.domain.config.opaque_config import ConfigError, decode, encode
from deckhouse_gpu.domain.config.opaque_types import LEGACY_API_VERSION
from tests.support.fuzzing import JSON_SCALARS, fuzz, json_values, mostly, round_trip

# A value where the decoder expects one: mostly plausible, sometimes anything at all.
_ANY = json_values(8)


def _mostly(plausible: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return mostly(plausible, _ANY)


_PERCENT = _mostly(st.integers(-5, 105))
_LIMIT = st.one_of(
    st.sampled_from(["1Mi", "8Gi", "512Mi", "1536Ki", "1", "0", "-1Mi", "1.5Mi", "1E", "1e3", "Mi", ""]),
    st.integers(-(2**20), 2**40),
    st.from_regex(r"\A[0-9]{1,6}(\.[0-9]{0,3})?([KMGT]i?|[eE][0-9])?\Z"),
    _ANY,
)


def _maybe(
    fields: dict[str, st.SearchStrategy[Any]], required: tuple[str, ...] = ()
) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with the required fields and any subset of the others; now and then a null among
    them or an unknown field."""
    extra = st.dictionaries(st.sampled_from(["extra", "Strategy", "mps ", ""]), JSON_SCALARS, max_size=1)
    return st.builds(
        lambda chosen, more: {**chosen, **more},
        st.fixed_dictionaries(
            {key: fields[key] for key in required},
            optional={key: value | st.none() for key, value in fields.items() if key not in required},
        ),
        mostly(st.just({}), extra),
    )


_MPS = _maybe({"defaultActiveThreadPercentage": _PERCENT, "defaultPinnedDeviceMemoryLimit": _LIMIT})
_TIME_SLICING = _maybe({"interval": _mostly(st.sampled_from(["Default", "Short", "Medium", "Long", "long"]))})
_SHARING = _maybe(
    {
        "strategy": _mostly(st.sampled_from(["MPS", "TimeSlicing", "mps", "None", ""])),
        "mps": _mostly(_MPS),
        "timeSlicing": _mostly(_TIME_SLICING),
    },
    ("strategy",),
)
PARAMETERS = _mostly(
    _maybe(
        {
            "apiVersion": _mostly(st.sampled_from([LEGACY_API_VERSION] * 6 + ["gpu.deckhouse.io/v1", "v1"])),
            "kind": _mostly(st.sampled_from(["GPUConfig", "MIGConfig", "VFIOConfig", "gpuconfig"])),
            "sharing": _mostly(_SHARING),
        },
        ("apiVersion", "kind"),
    )
)


@given(PARAMETERS.map(round_trip))
@fuzz(600)
def test_decode_returns_a_config_or_a_config_error(parameters: Any) -> None:
    try:
        config = decode(parameters)
    except ConfigError as error:
        problems = error.problems
        assert problems, parameters
        assert all(str(problem) for problem in problems)
        event("refused")
        return
    event(f"decoded: {type(config).__name__}")
    assert decode(encode(config)) == config
