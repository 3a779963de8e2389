# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""replace_file: the old or the new content, never a half-written file or a stray temporary."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deckhouse_gpu.adapters.files.atomic_file import replace_file, temporaries


def test_replaces_the_whole_file_with_the_given_mode(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "spec.json"
    replace_file(target, b"old")
    replace_file(target, b"new", 0o644)
    assert target.read_bytes() == b"new"
    assert os.stat(target).st_mode & 0o777 == 0o644
    assert list(temporaries(target)) == []


def test_without_a_mode_the_file_is_private(tmp_path: Path) -> None:
    target = tmp_path / "checkpoint.json"
    replace_file(target, b"{}")
    assert os.stat(target).st_mode & 0o777 == 0o600


def test_a_failed_rename_keeps_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "checkpoint.json"
    replace_file(target, b"old")

    def refuse(source: str, destination: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        replace_file(target, b"new")
    assert target.read_bytes() == b"old"
    assert list(temporaries(target)) == []


def test_temporaries_lists_what_a_crash_before_the_rename_left(tmp_path: Path) -> None:
    target = tmp_path / "checkpoint.json"
    left = tmp_path / ".checkpoint.json.abc123.tmp"
    left.write_bytes(b"half")
    (tmp_path / ".other.json.abc123.tmp").write_bytes(b"not ours")
    assert list(temporaries(target)) == [left]
