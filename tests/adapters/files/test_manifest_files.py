# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""One reader for the objects every command takes from a file, in every shape they are printed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from deckhouse_gpu.adapters.files.manifest_files import ManifestError, load_objects

A = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
B = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}


def written(tmp_path: Path, text: str, name: str = "objects.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text",
    [
        yaml.safe_dump_all([A, B], explicit_start=True),  # documents (render-slices, --dry-run)
        yaml.safe_dump([A, B]),  # a bare list (render-slices before it printed documents)
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [A, B]}),  # kubectl get -o yaml
        yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMapList", "items": [A, B]}),
        "---\n" + yaml.safe_dump(A) + "---\n---\n" + yaml.safe_dump([B]),  # empty documents, mixed
    ],
    ids=["documents", "bare-list", "list", "typed-list", "mixed"],
)
def test_every_shape_gives_the_objects_in_order(tmp_path: Path, text: str) -> None:
    assert load_objects(written(tmp_path, text)) == [A, B]


def test_an_empty_file_holds_no_objects(tmp_path: Path) -> None:
    assert load_objects(written(tmp_path, "")) == []


def test_a_kind_filter_refuses_other_objects_naming_the_document(tmp_path: Path) -> None:
    path = written(tmp_path, yaml.safe_dump_all([A, {"kind": "Pod"}]))
    assert load_objects(written(tmp_path, yaml.safe_dump(A), "one.yaml"), "ConfigMap") == [A]
    with pytest.raises(
        ManifestError, match=r"objects.yaml: document 2: expected ConfigMap objects, found kind 'Pod'"
    ):
        load_objects(path, "ConfigMap")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- 1\n- 2\n", r"document 1 holds '1', not a Kubernetes object"),
        ("just text\n", r"document 1 holds 'just text', not a Kubernetes object"),
        ("a: [", r"is not valid YAML"),
    ],
)
def test_bad_content_names_the_file(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ManifestError, match=message) as caught:
        load_objects(written(tmp_path, text))
    assert str(tmp_path / "objects.yaml") in str(caught.value)


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"cannot read .*missing.yaml: No such file or directory"):
        load_objects(tmp_path / "missing.yaml")
