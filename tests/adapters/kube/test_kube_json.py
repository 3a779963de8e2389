# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The client decodes responses with orjson: the same objects as ``json`` for what the API server
writes, and malformed (a ValueError, as the client expects) for what it never writes."""

from __future__ import annotations

import json

import pytest

from deckhouse_gpu.adapters.kube.kube_json import decode
from tests.support.allocation import device, resource_slice


def test_a_list_decodes_as_the_standard_library_decodes_it() -> None:
    items = [
        resource_slice(
            "s", [device("d", attributes={"index": 3, "model": "A30", "on": True}, capacity={"m": "1"})]
        ),
        {"metadata": {"name": "x", "labels": {"ü": "ß ✓"}}, "spec": {"n": -(2**63), "f": 0.5, "none": None}},
    ]
    body = json.dumps({"kind": "List", "items": items}).encode()
    assert decode(body) == json.loads(body)
    assert type(decode(body)["items"][1]["spec"]["n"]) is int


@pytest.mark.parametrize("body", [b"", b"{", b'{"a": NaN}', b'{"a": "\\ud800"}', b"\xff"])
def test_what_the_api_server_never_writes_is_malformed(body: bytes) -> None:
    with pytest.raises(json.JSONDecodeError):  # a ValueError, which the client catches
        decode(body)
