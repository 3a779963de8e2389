# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Fuzzing of the checkpoint decoder: whatever bytes are in the file, ``decode`` returns a checkpoint
or raises ``CorruptCheckpoint`` (the store then moves the file aside and starts afresh); nothing
else escapes, which would put gpu-handler in a crash loop that blocks every Pod of the node
(DESIGN.md D9).

Three kinds of input: any bytes; a valid file with bytes flipped (the checksum must catch it); and a
valid file whose JSON is changed structurally and checksummed again, as a buggy or newer writer
would leave it, so that the field checks behind the checksum are reached. What decodes encodes to
a file that decodes to the same checkpoint.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, CorruptCheckpoint, checksum, decode, encode
from tests.domain.prepare.test_checkpoint import BOOT, OTHER_BOOT, full_checkpoint
from tests.support.fuzzing import fuzz, json_values

VALID = encode(full_checkpoint())
DOCUMENT = json.loads(VALID)


def _decoded(data: bytes, boot_id: str) -> Checkpoint | None:
    try:
        decoded = decode(data, boot_id)
    except CorruptCheckpoint as error:
        reason = error.reason
        assert reason
        event("corrupt")
        return None
    event("decoded")
    assert decoded.checkpoint.boot_id == boot_id
    return decoded.checkpoint


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in the document: object keys and list indexes, the root excluded."""
    found: list[tuple[Any, ...]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found += [(*prefix, key), *_paths(item, (*prefix, key))]
    return found


PATHS = [path for path in _paths(DOCUMENT) if path != ("checksum",)]


@st.composite
def rewritten(draw: st.DrawFn) -> bytes:
    """The valid document with a few places replaced, removed or given a sibling, checksummed again."""
    document = json.loads(VALID)
    for path in draw(st.lists(st.sampled_from(PATHS), min_size=1, max_size=3)):
        parent: Any = document
        for key in path[:-1]:  # an earlier change may have replaced what the path goes through
            parent = _child(parent, key)
        if _child(parent, path[-1]) is not _MISSING:
            _change(draw, parent, path[-1])
    document["checksum"] = checksum(document)
    return json.dumps(document).encode()


_MISSING = object()


def _child(parent: Any, key: Any) -> Any:
    if isinstance(parent, dict) and isinstance(key, str):
        return parent.get(key, _MISSING)
    if isinstance(parent, list) and isinstance(key, int) and key < len(parent):
        return parent[key]
    return _MISSING


def _change(draw: st.DrawFn, parent: Any, key: Any) -> None:
    if isinstance(parent, dict):
        action = draw(st.sampled_from(["replace", "remove", "add"]))
        if action == "remove":
            parent.pop(key, None)
        elif action == "add":
            parent[draw(st.text(max_size=8))] = draw(json_values(6))
        else:
            parent[key] = draw(json_values(6))
    else:
        parent[key] = draw(json_values(6))


@st.composite
def flipped(draw: st.DrawFn) -> bytes:
    data = bytearray(VALID)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data) - 1))
        data[at] = draw(st.integers(0, 255))
    return bytes(data)


@given(st.one_of(rewritten(), flipped(), st.binary(max_size=200)), st.sampled_from([BOOT, OTHER_BOOT]))
@fuzz(400)
def test_decode_returns_a_checkpoint_or_says_it_is_corrupt(data: bytes, boot_id: str) -> None:
    checkpoint = _decoded(data, boot_id)
    if checkpoint is not None:
        assert decode(encode(checkpoint), boot_id).checkpoint == checkpoint
